//! Installing an agent each way the registry packages one (a binary
//! archive, an npm package, a Python wheel into a virtualenv, with uv
//! when it is there), then running a turn with it.

use std::path::{Path, PathBuf};
use std::process::Command;

use acp_client::agents::registry::install::{CancelToken, InstalledAgent};
use acp_client::Error;

use super::support::*;
use super::{npm_package, run_turn, tool_available, wheel, works, Fixture};

#[test]
fn binary_agent_installs_runs_updates_and_is_removed() {
    let f = Fixture::new();
    let installer = f.installer();
    let v1 = f.registry("1.0.0");
    assert!(v1.skipped.len() == 1, "the entry without id is skipped");
    let installed = f.install(&v1, "fake-bin").unwrap();
    assert_eq!(installed.version, "1.0.0");
    assert_eq!(installed.kind.as_str(), "binary");
    assert!(installed.cmd[0].ends_with("fake-bin/1.0.0/bin/acp-fake-agent"));
    assert_eq!(
        installer.installed_agent("fake-bin").unwrap().as_ref(),
        Some(&installed),
        "installed.json records it"
    );
    f.assert_clean("fake-bin", Some("1.0.0"));
    let said = run_turn(&installed, &f.scenario, f.dir.path());
    assert!(said.contains("hello from the fake agent"), "{said}");

    // Update: the registry moves on, the new version replaces the old.
    let v2 = f.registry("1.1.0");
    let updated = f.install(&v2, "fake-bin").unwrap();
    assert_eq!(updated.version, "1.1.0");
    f.assert_clean("fake-bin", Some("1.1.0"));
    let said = run_turn(&updated, &f.scenario, f.dir.path());
    assert!(said.contains("hello from the fake agent"), "{said}");
    assert_eq!(installer.installed().unwrap().len(), 1);

    assert!(installer.remove("fake-bin").unwrap());
    assert!(installer.installed_agent("fake-bin").unwrap().is_none());
    assert!(!f.dir.path().join("agents/fake-bin").exists());
    assert!(!installer.remove("fake-bin").unwrap(), "already removed");
}

#[test]
fn npm_agent_installs_from_a_packed_tarball_offline_and_runs() {
    if !tool_available("npm", works("npm", &["--version"])) {
        return;
    }
    let f = Fixture::new();
    npm_package(f.dir.path());
    let reg = f.registry("1.0.0");
    let installed = f.install(&reg, "fake-npm").unwrap();
    assert_eq!(installed.kind.as_str(), "npx");
    assert!(
        installed.cmd[0].ends_with("fake-npm/1.0.0/node_modules/.bin/tiny-acp-agent"),
        "the package's own executable, found from its package.json: {:?}",
        installed.cmd
    );
    f.assert_clean("fake-npm", Some("1.0.0"));
    let said = run_turn(&installed, &f.scenario, f.dir.path());
    assert!(said.contains("hello from the fake agent"), "{said}");
}

#[test]
fn npm_failure_names_the_command_and_its_output_and_keeps_nothing() {
    if !tool_available("npm", works("npm", &["--version"])) {
        return;
    }
    let f = Fixture::new();
    let reg = f.registry("1.0.0");
    let e = f.install(&reg, "npm-missing-package").unwrap_err();
    let Error::InstallCommand {
        command,
        output_tail,
        ..
    } = &e
    else {
        panic!("unexpected {e:?}");
    };
    assert!(command.contains("npm install --prefix "), "{command}");
    assert!(command.ends_with("missing-1.0.0.tgz"), "{command}");
    assert!(!output_tail.trim().is_empty(), "npm's output is kept");
    let message = e.to_string();
    assert!(message.contains("npm install --prefix"), "{message}");
    assert!(message.contains("its last output was"), "{message}");
    f.assert_clean("npm-missing-package", None);
}

/// The real interpreter behind `python3` (not a pyenv shim, which needs
/// more of PATH), when there is one with venv and ensurepip.
fn real_python3() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import venv, ensurepip, sys; print(sys.executable)"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A PATH of one directory holding only `name` -> `target`.
fn path_with(dir: &Path, name: &str, target: &Path) -> std::ffi::OsString {
    std::fs::create_dir_all(dir).unwrap();
    std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
    dir.as_os_str().to_owned()
}

fn check_python_install(f: &Fixture, installed: &InstalledAgent) {
    assert_eq!(installed.kind.as_str(), "uvx");
    assert!(installed.cmd[1].ends_with("fake-uvx/1.0.0/venv/bin/tiny-acp-agent"));
    f.assert_clean("fake-uvx", Some("1.0.0"));
    // The virtualenv was made in a temporary directory and renamed: the
    // agent still starts from its final place.
    let said = run_turn(installed, &f.scenario, f.dir.path());
    assert!(said.contains("hello from the fake agent"), "{said}");
}

#[test]
fn python_agent_installs_a_wheel_into_a_venv_and_runs() {
    let python = real_python3();
    if !tool_available("python3 -m venv (with ensurepip)", python.is_some()) {
        return;
    }
    let f = Fixture::new();
    wheel(f.dir.path());
    // Only python3 on PATH: the `python3 -m venv` + pip path even where uv
    // is installed.
    let path = path_with(&f.dir.path().join("py-only"), "python3", &python.unwrap());
    let installer = f.installer_on(Some(path));
    let installed = f
        .install_with(&installer, &f.registry("1.0.0"), "fake-uvx")
        .unwrap();
    check_python_install(&f, &installed);
}

#[test]
fn python_agent_installs_with_uv_when_uv_is_there() {
    let uv = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|d| d.join("uv"))
        .find(|p| p.is_file());
    let (Some(uv), Some(python)) = (uv, real_python3()) else {
        // uv is optional (the installer falls back to python3 -m venv):
        // never required, but say so.
        println!("SKIPPED: uv (or python3) is not on PATH; the uv install path is not tested");
        eprintln!("SKIPPED: uv (or python3) is not on PATH; the uv install path is not tested");
        return;
    };
    let f = Fixture::new();
    wheel(f.dir.path());
    let bin = f.dir.path().join("uv-bin");
    let path = path_with(&bin, "uv", &uv);
    std::os::unix::fs::symlink(&python, bin.join("python3")).unwrap();
    let mut steps = Vec::new();
    let installed = f
        .installer_on(Some(path))
        .install(
            f.registry("1.0.0").agent("fake-uvx").unwrap(),
            &CancelToken::new(),
            &mut |p| steps.push(p.message),
        )
        .unwrap();
    assert!(
        steps.iter().any(|s| s.starts_with("uv pip install")),
        "{steps:?}"
    );
    check_python_install(&f, &installed);
}

#[test]
fn the_chat_example_installs_and_runs_a_registry_agent_by_id() {
    let f = Fixture::new();
    let index = f.dir.path().join("registry.json");
    std::fs::write(&index, f.registry_json("1.0.0")).unwrap();
    let agents = f.dir.path().join("agents");
    let run = |id: &str| {
        Command::new(chat_example())
            .args(["--permission", "allow", "--prompt", "hi", "--cwd"])
            .arg(f.dir.path())
            .args(["--agent", id, "--agents-dir"])
            .arg(&agents)
            .arg("--registry")
            .arg(format!("file://{}", index.display()))
            .env("XDG_CACHE_HOME", f.dir.path().join("cache"))
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let first = run("fake-bin");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&first.stderr),
    );
    assert!(first.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("installing Fake agent (binary) 1.0.0"),
        "{stderr}"
    );
    assert!(stdout.contains("hello from the fake agent"), "{stdout}");
    assert!(agents.join("fake-bin/installed.json").is_file());

    // Installed: the second run starts it without installing.
    let second = run("fake-bin");
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert!(second.status.success(), "{stderr}");
    assert!(!stderr.contains("installing"), "{stderr}");
    assert!(String::from_utf8_lossy(&second.stdout).contains("hello from the fake agent"));

    let unknown = run("nope");
    assert!(!unknown.status.success());
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        stderr.contains("the registry has no agent `nope`; it has: fake-bin"),
        "{stderr}"
    );
}
