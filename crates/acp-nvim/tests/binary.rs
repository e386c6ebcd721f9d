//! The `acp-nvim` binary over real pipes, with nvim-rs playing Neovim: the
//! handshake, events arriving through `nvim_exec_lua`, and the shutdown of
//! every agent when Neovim goes away (stdin EOF).

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use nvim_rs::compat::tokio::Compat;
use nvim_rs::{Handler, Neovim, Value};
use serde_json::{json, Value as Json};
use tokio::process::{ChildStdin, Command};
use tokio::sync::mpsc;

const HANG_GUARD: Duration = Duration::from_secs(30);

/// The Neovim side: collects event batches, has no buffers.
#[derive(Clone)]
struct FakeNeovim {
    batches: mpsc::UnboundedSender<Vec<Json>>,
}

#[async_trait]
impl Handler for FakeNeovim {
    type Writer = Compat<ChildStdin>;

    async fn handle_request(
        &self,
        name: String,
        args: Vec<Value>,
        _neovim: Neovim<Compat<ChildStdin>>,
    ) -> Result<Value, Value> {
        assert_eq!(name, "nvim_exec_lua");
        let code = args[0].as_str().unwrap().to_owned();
        if code == acp_nvim::editor::DISPATCH_LUA {
            let Value::Array(lua_args) = &args[1] else {
                panic!("exec_lua args must be a list");
            };
            let Value::Array(events) = &lua_args[0] else {
                panic!("the batch must be a list");
            };
            let batch = events.iter().map(acp_nvim::msgpack::to_json).collect();
            self.batches.send(batch).unwrap();
            return Ok(Value::Nil);
        }
        // acp.edits.fs.read_for_agent / apply: no buffer has the file.
        if code == acp_nvim::editor::FS_APPLY_LUA {
            let revision = acp_nvim::msgpack::to_json(&args[1])[0]["revision"].clone();
            return Ok(acp_nvim::msgpack::from_json(
                &serde_json::json!({"status": "no_buffer", "revision": revision}),
            ));
        }
        Ok(Value::Nil)
    }
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_acp-nvim")
}

#[test]
fn version_prints_the_crate_version() {
    let out = std::process::Command::new(bin())
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        format!("acp-nvim {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn a_bad_argument_exits_2_with_the_usage() {
    let out = std::process::Command::new(bin())
        .arg("--log-level=loud")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage: acp-nvim"));
}

/// Children of `pid` (Linux: from /proc).
#[cfg(target_os = "linux")]
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // Fields after the `(comm)`: state, ppid, ...
        let after = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
        let ppid = after
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

#[cfg(target_os = "linux")]
fn is_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit_once(')')
                .map(|(_, r)| r.trim_start())
                .unwrap_or("");
            !state.starts_with('Z')
        }
        Err(_) => false,
    }
}

async fn next_event(
    batches: &mut mpsc::UnboundedReceiver<Vec<Json>>,
    pending: &mut Vec<Json>,
    kind: &str,
) -> Json {
    let deadline = tokio::time::Instant::now() + HANG_GUARD;
    loop {
        if let Some(i) = pending.iter().position(|e| e["type"] == kind) {
            return pending.remove(i);
        }
        let batch = tokio::time::timeout_at(deadline, batches.recv())
            .await
            .unwrap_or_else(|_| panic!("no {kind} event; pending: {pending:#?}"))
            .unwrap();
        pending.extend(batch);
    }
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn serves_a_chat_and_stops_its_agent_when_neovim_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let log = cwd.join("logs/acp.log");
    let (tx, mut batches) = mpsc::unbounded_channel();
    let mut cmd = Command::new(bin());
    cmd.args(["--log-file", log.to_str().unwrap(), "--log-level", "debug"])
        .stderr(Stdio::null());
    let (nvim, io, mut child) =
        nvim_rs::create::tokio::new_child_cmd(&mut cmd, FakeNeovim { batches: tx })
            .await
            .unwrap();
    let backend_pid = child.id().unwrap();

    let hello = nvim
        .call(
            "acp.hello",
            vec![Value::Map(vec![(
                "plugin_version".into(),
                env!("CARGO_PKG_VERSION").into(),
            )])],
        )
        .await
        .unwrap()
        .unwrap();
    let hello = acp_nvim::msgpack::to_json(&hello);
    assert_eq!(hello["ok"], true);
    assert_eq!(hello["log_file"], log.display().to_string());

    let open = json!({
        "chat_id": "c1",
        "agent": {
            "name": "fake",
            "cmd": [acp_testkit::fake_agent_bin().display().to_string(),
                    "--scenario", acp_testkit::scenario("echo").display().to_string()],
            "env": {},
        },
        "cwd": cwd.display().to_string(),
    });
    let opened = nvim
        .call("acp.open", vec![acp_nvim::msgpack::from_json(&open)])
        .await
        .unwrap()
        .unwrap();
    assert_eq!(opened, Value::Boolean(true));

    let mut pending = Vec::new();
    let started = next_event(&mut batches, &mut pending, "session_started").await;
    assert_eq!(started["chat_id"], "c1");

    nvim.call(
        "nvim_command",
        vec![], // not a backend method: must be refused, not crash anything
    )
    .await
    .unwrap()
    .unwrap_err();
    let warning = next_event(&mut batches, &mut pending, "warning").await;
    assert!(warning["message"]
        .as_str()
        .unwrap()
        .contains("nvim_command"));

    let prompt = json!({"chat_id": "c1", "blocks": [{"type": "text", "text": "over pipes"}]});
    nvim.call("acp.prompt", vec![acp_nvim::msgpack::from_json(&prompt)])
        .await
        .unwrap()
        .unwrap();
    let ended = next_event(&mut batches, &mut pending, "turn_ended").await;
    assert_eq!(ended["stop_reason"], "end_turn");

    let agents = children_of(backend_pid);
    assert_eq!(agents.len(), 1, "one agent process: {agents:?}");

    // Neovim goes away: the backend's stdin closes.
    // nvim-rs's io task holds the pipe's write end: stop it too.
    drop(nvim);
    io.abort();
    let _ = io.await;
    let status = tokio::time::timeout(HANG_GUARD, child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(!is_running(agents[0]), "agent {} still running", agents[0]);
    let log_text = std::fs::read_to_string(Path::new(&log)).unwrap();
    assert!(log_text.contains("acp-nvim serving"), "{log_text}");
    assert!(log_text.contains("agent shut down"), "{log_text}");
}
