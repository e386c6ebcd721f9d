//! Hostile agents' process tricks (issue #25, row X2): a daemon started
//! with `setsid` leaves the agent's process group and, without more, the
//! session. Linux only: the defence is `PR_SET_CHILD_SUBREAPER`.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use acp_client::agents::process::{become_subreaper, AgentCommand, AgentProcess};

/// True while `pid` exists and is not a zombie.
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat[stat.rfind(')').unwrap() + 1..].trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        }
        Err(_) => false,
    }
}

/// Waits up to 3 s for `pid` to be gone (the sweep kills it shortly after
/// the agent closes).
async fn wait_gone(pid: u32) {
    for _ in 0..300 {
        if !running(pid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn read_pid(path: &Path) -> u32 {
    for _ in 0..500 {
        if let Ok(text) = std::fs::read_to_string(path) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the daemon never wrote its pid");
}

/// The tests adopt daemons and look for leftovers among this process's
/// children: one at a time, so one never counts the other's.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Kills `pid` if a failed test left it running.
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        // SAFETY: kill(2) with integers only.
        unsafe {
            libc::kill(self.0 as libc::pid_t, libc::SIGKILL);
        }
    }
}

#[tokio::test]
async fn a_setsid_daemon_does_not_outlive_its_agent() {
    let _serial = SERIAL.lock().await;
    assert!(
        become_subreaper(),
        "the test process must become a subreaper"
    );
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("daemon.pid");
    // The agent double-forks a daemon into its own session, holding the
    // agent's stdout, and a grandchild of the daemon; then exits.
    let script = format!(
        "setsid sh -c 'echo $$ > {pf}.tmp; mv {pf}.tmp {pf}; sleep 300 & exec sleep 301' & exit 0",
        pf = pidfile.display()
    );
    let (process, stdin, _stdout) =
        AgentProcess::spawn(&AgentCommand::new("sh").arg("-c").arg(script)).unwrap();
    let daemon = read_pid(&pidfile).await;
    let _guard = KillOnDrop(daemon);
    assert!(running(daemon));
    drop(stdin);
    process.shutdown(Duration::from_millis(200)).await;
    wait_gone(daemon).await;
    assert!(
        !running(daemon),
        "the setsid daemon {daemon} outlived its agent"
    );
    // Its own child is gone too, and nothing of this agent is left as a
    // zombie of ours. The child is adopted by us only once the daemon died,
    // which can be after the close's sweep: the reaper's watch (every 2 s)
    // takes it then (seen on a loaded CI machine: the child still asleep
    // right after the daemon went).
    let mut leftovers = sleeps_of_ours();
    for _ in 0..60 {
        if leftovers.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        leftovers = sleeps_of_ours();
    }
    assert!(leftovers.is_empty(), "left: {leftovers:?}");
}

/// `sleep` processes whose parent is this test process (adopted ones).
fn sleeps_of_ours() -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let rest = &stat[stat.rfind(')').unwrap() + 1..];
            let ppid = rest.split_whitespace().nth(1).unwrap_or("");
            ppid == std::process::id().to_string() && stat.contains("(sleep)")
        })
        .collect()
}

/// A client terminal's command is started by the client, not the agent, so
/// it does not inherit the agent's mark by itself: a `setsid` daemon it
/// started lived on after the agent closed. The manager gives every command
/// the agent's mark, and the terminal's own exit status still reaches it.
#[tokio::test]
async fn a_setsid_daemon_of_a_client_terminal_does_not_outlive_the_agent() {
    use acp_client::session::update::SessionId;
    use acp_client::tools::terminal::{TerminalManager, TerminalSpec};
    use std::sync::Arc;

    let _serial = SERIAL.lock().await;
    assert!(
        become_subreaper(),
        "the test process must become a subreaper"
    );
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("daemon.pid");
    let (agent, stdin, _stdout) =
        AgentProcess::spawn(&AgentCommand::new("sh").arg("-c").arg("exec sleep 300")).unwrap();
    let terminals =
        TerminalManager::with_agent_mark(Arc::new(|_| {}), 1 << 20, agent.mark().to_owned());
    let script = format!(
        "setsid sh -c 'echo $$ > {pf}.tmp; mv {pf}.tmp {pf}; exec sleep 302' & exit 3",
        pf = pidfile.display()
    );
    let id = terminals
        .create(TerminalSpec {
            session_id: SessionId::new("s"),
            command: script,
            args: Vec::new(),
            env: Vec::new(),
            cwd: dir.path().to_path_buf(),
            output_byte_limit: None,
        })
        .await
        .unwrap();
    let daemon = read_pid(&pidfile).await;
    let _guard = KillOnDrop(daemon);
    let exit = terminals.wait_for_exit(&id).await.unwrap();
    assert_eq!(exit.exit_code, Some(3), "the terminal's own exit status");
    assert!(running(daemon));
    drop(stdin);
    agent.shutdown(Duration::from_millis(200)).await;
    wait_gone(daemon).await;
    assert!(
        !running(daemon),
        "the setsid daemon {daemon} of a terminal outlived its agent"
    );
}
