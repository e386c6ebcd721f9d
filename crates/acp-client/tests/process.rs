//! Real subprocesses through `sh -c`: spawn errors, environment, stderr
//! tail, exit status and process-group shutdown.

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::time::Duration;

use acp_client::agents::process::{
    AgentCommand, AgentProcess, ExitInfo, DEFAULT_STDERR_TAIL_BYTES,
};
use acp_client::wire::LineReader;
use acp_client::Error;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::time::timeout;

/// Hang guard only: every awaited event here normally happens in
/// milliseconds.
const HANG_GUARD: Duration = Duration::from_secs(60);

fn sh(script: &str) -> AgentCommand {
    AgentCommand::new("sh").arg("-c").arg(script)
}

async fn guard<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    timeout(HANG_GUARD, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

async fn read_line(lines: &mut LineReader<ChildStdout>) -> String {
    let line = guard("a stdout line", lines.next_line())
        .await
        .unwrap()
        .expect("stdout ended early");
    String::from_utf8(line.to_vec()).unwrap()
}

/// True while `pid` exists and is not a zombie. (PID 1 of a container may
/// never reap orphans, so a killed grandchild can stay a zombie.)
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..].trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

async fn wait_until_gone(pid: u32) {
    guard("the process to die", async {
        while running(pid) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn missing_program_is_a_spawn_error_naming_it() {
    let err =
        AgentProcess::spawn(&AgentCommand::new("acp-no-such-agent-xyz").arg("--acp")).unwrap_err();
    assert!(matches!(err, Error::Spawn { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("acp-no-such-agent-xyz"), "{message}");
    assert!(message.contains("PATH"), "{message}");
}

#[tokio::test]
async fn non_executable_program_is_a_spawn_error_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("agent.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let err = AgentProcess::spawn(&AgentCommand::new(script.to_str().unwrap())).unwrap_err();
    let message = err.to_string();
    assert!(message.contains("agent.sh"), "{message}");
    assert!(message.contains("chmod +x"), "{message}");
}

/// Spawns a script the test has just written. Another test thread forking
/// at that moment holds the script's write descriptor until it execs, and
/// the kernel refuses to run a file open for writing ("Text file busy"; CI
/// saw it once): that passes in a moment.
fn spawn_fresh(cmd: &AgentCommand) -> Result<(AgentProcess, ChildStdin, ChildStdout), Error> {
    let mut attempts = 0;
    loop {
        let result = AgentProcess::spawn(cmd);
        attempts += 1;
        match &result {
            Err(e) if e.to_string().contains("Text file busy") && attempts < 50 => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            _ => return result,
        }
    }
}

#[tokio::test]
async fn script_with_a_missing_interpreter_is_explained() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("agent");
    std::fs::write(&script, "#!/nonexistent/acp-interpreter\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = spawn_fresh(&AgentCommand::new(script.to_str().unwrap())).unwrap_err();
    let message = err.to_string();
    assert!(matches!(err, Error::Spawn { .. }), "{err:?}");
    assert!(message.contains("interpreter"), "{message}");
}

#[tokio::test]
async fn env_overlays_the_inherited_environment_and_cwd_applies() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = sh(r#"printf '%s\n' "$ACP_TEST_VAR" "$PATH" "$HOME" "$(pwd -P)""#)
        .env("ACP_TEST_VAR", "overlay works")
        .cwd(dir.path());
    let (process, _stdin, stdout) = AgentProcess::spawn(&cmd).unwrap();
    let mut lines = LineReader::new(stdout, 4096);
    assert_eq!(read_line(&mut lines).await, "overlay works");
    assert_eq!(read_line(&mut lines).await, std::env::var("PATH").unwrap());
    assert_eq!(
        read_line(&mut lines).await,
        std::env::var("HOME").unwrap_or_default()
    );
    let cwd = dir.path().canonicalize().unwrap();
    assert_eq!(read_line(&mut lines).await, cwd.to_str().unwrap());
    assert_eq!(guard("exit", process.exited()).await.code, Some(0));
}

#[tokio::test]
async fn program_is_found_on_the_overlaid_path() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("fake-acp-agent");
    std::fs::write(&agent, "#!/bin/sh\necho \"found as $0\"\n").unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        dir.path().display(),
        std::env::var("PATH").unwrap()
    );
    let cmd = AgentCommand::new("fake-acp-agent").env("PATH", path);
    let (process, _stdin, stdout) = spawn_fresh(&cmd).unwrap();
    let mut lines = LineReader::new(stdout, 4096);
    assert!(read_line(&mut lines).await.starts_with("found as"));
    assert_eq!(guard("exit", process.exited()).await.code, Some(0));
}

#[tokio::test]
async fn exit_code_signal_and_last_stderr_words_are_reported() {
    let (process, _stdin, _stdout) =
        AgentProcess::spawn(&sh("echo 'fatal: no API key' >&2; exit 3")).unwrap();
    // Several waiters see the same result.
    let (a, b) = guard("exit", async {
        tokio::join!(process.exited(), process.exited())
    })
    .await;
    let expected = ExitInfo {
        code: Some(3),
        signal: None,
    };
    assert_eq!((a, b), (expected, expected));
    assert_eq!(process.try_exit(), Some(expected));
    assert_eq!(process.stderr_tail(), "fatal: no API key\n");

    let (process, _stdin, _stdout) = AgentProcess::spawn(&sh("kill -9 $$")).unwrap();
    let info = guard("exit", process.exited()).await;
    assert_eq!(info.code, None);
    assert_eq!(info.signal, Some(libc::SIGKILL));
}

#[tokio::test]
async fn try_exit_is_none_while_running() {
    let (process, stdin, _stdout) = AgentProcess::spawn(&AgentCommand::new("cat")).unwrap();
    assert_eq!(process.try_exit(), None);
    drop(stdin);
    assert_eq!(guard("exit", process.exited()).await.code, Some(0));
}

#[tokio::test]
async fn stderr_tail_keeps_the_newest_bytes_within_its_bound() {
    // 3000 numbered lines, about 50 KiB, into a 1000-byte tail.
    let script = "i=1; while [ $i -le 3000 ]; do echo \"line $i\" >&2; i=$((i+1)); done";
    let (process, _stdin, _stdout) =
        AgentProcess::spawn_with_stderr_tail(&sh(script), 1000).unwrap();
    assert_eq!(guard("exit", process.exited()).await.code, Some(0));
    let tail = process.stderr_tail();
    assert_eq!(tail.len(), 1000);
    let all: String = (1..=3000).map(|i| format!("line {i}\n")).collect();
    assert_eq!(tail, all[all.len() - 1000..]);
}

#[tokio::test]
async fn stderr_flood_neither_stalls_the_agent_nor_grows_the_tail() {
    for flood in [
        // One 50 MB line, and 25 million tiny lines.
        "head -c 50000000 /dev/zero | tr '\\0' x >&2; echo done",
        "yes | head -c 50000000 >&2; echo done",
    ] {
        let (process, _stdin, stdout) = AgentProcess::spawn(&sh(flood)).unwrap();
        let mut lines = LineReader::new(stdout, 4096);
        assert_eq!(read_line(&mut lines).await, "done");
        assert_eq!(guard("exit", process.exited()).await.code, Some(0));
        assert_eq!(process.stderr_tail().len(), DEFAULT_STDERR_TAIL_BYTES);
    }
}

#[tokio::test]
async fn shutdown_of_an_agent_that_quits_on_stdin_close_is_graceful() {
    let (process, stdin, _stdout) = AgentProcess::spawn(&AgentCommand::new("cat")).unwrap();
    drop(stdin);
    let info = guard("shutdown", process.shutdown(Duration::from_secs(30))).await;
    assert_eq!(info.code, Some(0));
}

#[tokio::test]
async fn shutdown_sends_sigterm_when_stdin_close_is_ignored() {
    let (process, stdin, stdout) = AgentProcess::spawn(&sh("echo ready; exec sleep 1000")).unwrap();
    let mut lines = LineReader::new(stdout, 4096);
    assert_eq!(read_line(&mut lines).await, "ready");
    drop(stdin);
    let info = guard("shutdown", process.shutdown(Duration::from_millis(100))).await;
    assert_eq!(info.signal, Some(libc::SIGTERM));
}

#[tokio::test]
async fn shutdown_ends_with_sigkill_when_sigterm_is_ignored() {
    let script = "trap '' TERM; sleep 1000 & echo $!; echo ready; while :; do sleep 1; done";
    let (process, stdin, stdout) = AgentProcess::spawn(&sh(script)).unwrap();
    let mut lines = LineReader::new(stdout, 4096);
    let grandchild: u32 = read_line(&mut lines).await.parse().unwrap();
    assert_eq!(read_line(&mut lines).await, "ready");
    drop(stdin);
    let info = guard("shutdown", process.shutdown(Duration::from_millis(100))).await;
    assert_eq!(info.signal, Some(libc::SIGKILL));
    assert!(!running(grandchild), "grandchild {grandchild} survived");
}

#[tokio::test]
async fn shutdown_leaves_no_grandchild_behind_a_shell_wrapper() {
    let (process, stdin, stdout) =
        AgentProcess::spawn(&sh("sleep 1000 & echo $!; sleep 1000")).unwrap();
    let mut lines = LineReader::new(stdout, 4096);
    let grandchild: u32 = read_line(&mut lines).await.parse().unwrap();
    assert!(running(grandchild));
    drop(stdin);
    guard("shutdown", process.shutdown(Duration::from_millis(100))).await;
    assert!(!running(grandchild), "grandchild {grandchild} survived");
    assert!(!running(process.pid().unwrap()));
}

#[tokio::test]
async fn shutdown_kills_grandchildren_even_after_the_wrapper_exited() {
    let (process, stdin, stdout) = AgentProcess::spawn(&sh("sleep 1000 & echo $!")).unwrap();
    let mut lines = LineReader::new(stdout, 4096);
    let grandchild: u32 = read_line(&mut lines).await.parse().unwrap();
    // The wrapper is done; its child still holds the group (and stderr).
    assert_eq!(guard("wrapper exit", process.exited()).await.code, Some(0));
    assert!(running(grandchild));
    drop(stdin);
    let info = guard("shutdown", process.shutdown(Duration::from_millis(100))).await;
    assert_eq!(info.code, Some(0), "the wrapper's own status is kept");
    assert!(!running(grandchild), "grandchild {grandchild} survived");
}

#[tokio::test]
async fn drop_without_shutdown_kills_the_group() {
    let (process, stdin, stdout) =
        AgentProcess::spawn(&sh("sleep 1000 & echo $!; sleep 1000")).unwrap();
    let mut lines = LineReader::new(stdout, 4096);
    let grandchild: u32 = read_line(&mut lines).await.parse().unwrap();
    let leader = process.pid().unwrap();
    assert!(running(grandchild) && running(leader));
    drop(process);
    drop(stdin);
    wait_until_gone(grandchild).await;
    wait_until_gone(leader).await;
}
