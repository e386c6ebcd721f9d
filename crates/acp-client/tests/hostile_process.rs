//! Hostile agents' process tricks (issue #25, row X2): a daemon started
//! with `setsid` leaves the agent's process group and, without more, the
//! session. Linux only: the defence is `PR_SET_CHILD_SUBREAPER`.
#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use acp_client::process::{become_subreaper, AgentCommand, AgentProcess};

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
    for _ in 0..300 {
        if !running(daemon) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        !running(daemon),
        "the setsid daemon {daemon} outlived its agent"
    );
    // Its own child is gone too, and nothing of this agent is left as a
    // zombie of ours.
    let leftovers: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            let rest = &stat[stat.rfind(')').unwrap() + 1..];
            let ppid = rest.split_whitespace().nth(1).unwrap_or("");
            ppid == std::process::id().to_string() && stat.contains("(sleep)")
        })
        .collect();
    assert!(leftovers.is_empty(), "left: {leftovers:?}");
}
