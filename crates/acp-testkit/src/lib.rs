//! Scripted fake ACP agent and test helpers.
//!
//! The crate's binary, `acp-fake-agent`, is an Agent Client Protocol agent
//! that plays a JSON *scenario*: what it advertises in `initialize`, which
//! sessions it has stored, and what each prompt turn sends (streamed text,
//! tool calls, permission requests, fs and terminal calls with checked
//! answers) and how it misbehaves (crashes, garbage lines, hangs, floods).
//! The scenario format is documented in the crate's `README.md`.
//!
//! It does not depend on `acp-client`: it speaks raw newline-delimited
//! JSON-RPC with `serde_json`, so it tests the client instead of agreeing
//! with it. Set `ACP_FAKE_LOG=debug` to see every message it sends on its
//! stderr.
//!
//! This library only helps tests find and feed the binary:
//!
//! ```no_run
//! use std::process::{Command, Stdio};
//!
//! let dir = std::env::temp_dir();
//! let scenario = acp_testkit::write_scenario(
//!     &dir,
//!     &serde_json::json!({ "turns": [{ "steps": [{ "type": "text", "text": "hi" }] }] }),
//! );
//! let agent = Command::new(acp_testkit::fake_agent_bin())
//!     .arg("--scenario")
//!     .arg(&scenario)
//!     .stdin(Stdio::piped())
//!     .stdout(Stdio::piped())
//!     .spawn()
//!     .unwrap();
//! # drop(agent);
//! ```

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::SystemTime;

/// The environment variable the fake agent reads its scenario path from when
/// no `--scenario` flag is given.
pub const SCENARIO_ENV: &str = "ACP_FAKE_SCENARIO";

/// The environment variable that sets the fake agent's log level
/// (`tracing` filter syntax, e.g. `debug`); logs go to its stderr.
pub const LOG_ENV: &str = "ACP_FAKE_LOG";

const BIN_NAME: &str = "acp-fake-agent";

/// Path of the fake agent binary; builds it with `cargo build -p acp-testkit
/// --bin acp-fake-agent` (using env `CARGO` and the workspace root) the first
/// time in a process if it is missing or older than this crate's sources, so
/// tests in other crates can spawn it (`CARGO_BIN_EXE_*` is only set inside
/// this package).
///
/// The binary is looked for in the target directory and profile of the
/// running test executable.
///
/// # Panics
///
/// When the build fails; the message holds cargo's output.
pub fn fake_agent_bin() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(locate_or_build).clone()
}

/// Path of a bundled scenario by name (`"demo"` -> `scenarios/demo.json`).
///
/// # Panics
///
/// When there is no such scenario; the message lists the bundled ones.
pub fn scenario(name: &str) -> PathBuf {
    let dir = scenarios_dir();
    let path = dir.join(format!("{name}.json"));
    if !path.is_file() {
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.strip_suffix(".json").map(str::to_owned)
            })
            .collect();
        names.sort();
        panic!(
            "no bundled scenario `{name}` in {}; bundled: {}",
            dir.display(),
            names.join(", ")
        );
    }
    path
}

/// Write a scenario given as `serde_json::Value` to a new file in `dir` (tests
/// build scenarios inline) and return its path. The file name is unique
/// within the machine, so parallel tests can share a directory.
///
/// # Panics
///
/// When the file cannot be written.
pub fn write_scenario(dir: &Path, scenario: &serde_json::Value) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let path = dir.join(format!(
        "acp-fake-scenario-{}-{n}-{nanos}.json",
        std::process::id()
    ));
    let text = serde_json::to_string_pretty(scenario)
        .unwrap_or_else(|e| panic!("cannot serialize the scenario: {e}"));
    if let Err(err) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, text)) {
        panic!("cannot write scenario {}: {err}", path.display());
    }
    path
}

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn scenarios_dir() -> PathBuf {
    crate_dir().join("scenarios")
}

fn workspace_root() -> PathBuf {
    crate_dir()
        .parent()
        .and_then(Path::parent)
        .map_or_else(|| crate_dir().to_owned(), Path::to_owned)
}

/// The profile directory (`target/debug`, ...) the running executable was
/// built into: test executables live in `<profile dir>/deps`.
fn profile_dir() -> PathBuf {
    let from_exe = std::env::current_exe().ok().and_then(|exe| {
        let dir = exe.parent()?;
        let dir = if dir.file_name()? == "deps" {
            dir.parent()?
        } else {
            dir
        };
        Some(dir.to_owned())
    });
    from_exe.unwrap_or_else(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR")
            .map_or_else(|| workspace_root().join("target"), PathBuf::from);
        target.join("debug")
    })
}

fn locate_or_build() -> PathBuf {
    let dir = profile_dir();
    let bin = dir.join(format!("{BIN_NAME}{}", std::env::consts::EXE_SUFFIX));
    if is_fresh(&bin) {
        return bin;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build.current_dir(workspace_root()).args([
        "build",
        "--quiet",
        "-p",
        "acp-testkit",
        "--bin",
        BIN_NAME,
    ]);
    if let Some(target) = dir.parent() {
        build.arg("--target-dir").arg(target);
    }
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            build.arg("--release");
        }
        Some(profile) => {
            build.args(["--profile", profile]);
        }
    }
    let output = build
        .output()
        .unwrap_or_else(|e| panic!("cannot run cargo to build {BIN_NAME}: {e}"));
    if !output.status.success() || !bin.is_file() {
        panic!(
            "building {BIN_NAME} failed ({}); run `cargo build -p acp-testkit --bin {BIN_NAME}` to see why:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    bin
}

/// Whether the binary exists and is newer than every source it is built
/// from (the demo scenario is compiled into it).
fn is_fresh(bin: &Path) -> bool {
    let Some(built) = modified(bin) else {
        return false;
    };
    let mut sources = vec![
        crate_dir().join("Cargo.toml"),
        scenarios_dir().join("demo.json"),
    ];
    collect_files(&crate_dir().join("src"), &mut sources);
    sources
        .iter()
        .all(|source| modified(source).is_none_or(|changed| changed <= built))
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn collect_files(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, into);
        } else {
            into.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn bundled_scenarios_are_found_by_name() {
        assert!(scenario("demo").ends_with("scenarios/demo.json"));
        let err = std::panic::catch_unwind(|| scenario("no-such-thing")).unwrap_err();
        let message = err.downcast_ref::<String>().unwrap();
        assert!(message.contains("demo"), "{message}");
    }

    #[test]
    fn written_scenarios_round_trip_and_never_collide() {
        let dir = std::env::temp_dir().join(format!("acp-testkit-lib-{}", std::process::id()));
        let value = serde_json::json!({ "turns": [] });
        let a = write_scenario(&dir, &value);
        let b = write_scenario(&dir, &value);
        assert_ne!(a, b);
        let read: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&a).unwrap()).unwrap();
        assert_eq!(read, value);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_binary_is_not_fresh() {
        assert!(!is_fresh(Path::new("/nonexistent/acp-fake-agent")));
    }
}
