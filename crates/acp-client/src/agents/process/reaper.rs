//! Descendants that left the agent's process group: `setsid` daemons.
//!
//! Killing the agent's process group stops wrappers and their children, but
//! a process that called `setsid` (a daemon, a language server started the
//! classic double-fork way) is in a group and session of its own and lived
//! on after the session closed (issue #25, X2). On Linux, a process that
//! declared itself a *child subreaper* ([`become_subreaper`]) adopts the
//! orphans of its descendants instead of init: the daemon becomes our
//! child once its parent exits, so it can be found.
//!
//! Which agent an adopted orphan came from is told by an environment
//! variable ([`MARKER`]) every agent is started with and that its
//! descendants inherit. When an agent closes, adopted children carrying its
//! mark are killed (repeatedly, as killing one orphans its own children,
//! which are adopted in turn) and reaped. A process that clears its
//! environment before daemonizing is not recognised; nothing short of a
//! cgroup per agent catches that, and this library does not manage cgroups.
//!
//! Other platforms: macOS has no subreaper; FreeBSD's `procctl(PROC_REAP_*)`
//! is not used. There, as before, the agent's process group is stopped and a
//! `setsid` daemon survives it.
//!
//! Only pids found carrying a mark are ever waited for: the other children
//! of the process (tokio's, the terminals') are reaped by their owners. A
//! thread started by [`become_subreaper`] looks for marked adopted children
//! every 2 s and reaps them when they exit (an agent's `cmd &` whose shell
//! exited is adopted too, and would otherwise stay a zombie).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// The environment variable marking an agent's descendants; its value is
/// `new_mark`'s.
pub const MARKER: &str = "ACP_CLIENT_AGENT_MARK";

static NEXT_MARK: AtomicU64 = AtomicU64::new(1);

/// Set once [`become_subreaper`] succeeded.
static SUBREAPER: AtomicBool = AtomicBool::new(false);

/// True once this process adopts its descendants' orphans.
pub(super) fn is_subreaper() -> bool {
    SUBREAPER.load(Ordering::Relaxed)
}

/// Adopted pids killed but not reaped yet.
static KILLED: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// The agents this process started itself: our children that carry a mark
/// but are waited for by their owner (`AgentProcess`'s exit task). Waiting
/// for one here would take its exit status from that owner, and the user
/// would read "the agent exited (?)" instead of its code or signal.
static OWN: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// Notes a process this process spawned and waits for itself (an agent, a
/// client terminal): never waited for or killed here.
pub(crate) fn own(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        OWN.lock().get_or_insert_with(HashSet::new).insert(pid);
    }
}

/// Forgets a process once its owner has waited for it.
pub(crate) fn disown(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        if let Some(set) = OWN.lock().as_mut() {
            set.remove(&pid);
        }
    }
}

/// True for an agent this process spawned and still owns.
fn is_own(pid: i32) -> bool {
    OWN.lock().as_ref().is_some_and(|set| set.contains(&pid))
}

/// A mark no other agent of this process has.
pub(super) fn new_mark() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        NEXT_MARK.fetch_add(1, Ordering::Relaxed)
    )
}

/// Makes this process adopt the orphans of its descendants (Linux:
/// `prctl(PR_SET_CHILD_SUBREAPER)`), so that a `setsid` daemon started under
/// an agent is stopped with the agent. Call it once, early in `main`, in a
/// program that runs agents (the acp-nvim backend and the chat example do).
/// False where the platform has no subreaper (see the module docs), or when
/// the call failed.
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with integer arguments only.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        if rc != 0 {
            tracing::warn!(target: "acp::process",
                "could not become a child subreaper: {}; setsid daemons of agents may outlive them",
                std::io::Error::last_os_error());
        }
        if rc == 0 && !SUBREAPER.swap(true, Ordering::AcqRel) {
            let _ = std::thread::Builder::new()
                .name("acp-reaper".into())
                .spawn(watch_adopted);
        }
        rc == 0
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// How long [`kill_adopted`] keeps looking for orphans of orphans.
const SWEEP_LIMIT: Duration = Duration::from_secs(2);
const SWEEP_POLL: Duration = Duration::from_millis(10);

/// Kills and reaps every adopted child of this process that carries
/// `mark`, until none is left (or [`SWEEP_LIMIT`] passed). Blocking: call it
/// from a blocking thread. Does nothing unless this process is a subreaper.
pub(super) fn kill_adopted(mark: &str) {
    #[cfg(target_os = "linux")]
    if is_subreaper() {
        let wanted = format!("{MARKER}={mark}");
        let deadline = std::time::Instant::now() + SWEEP_LIMIT;
        loop {
            let found = kill_marked_children(wanted.as_bytes());
            reap_killed();
            if found == 0 || std::time::Instant::now() > deadline {
                break;
            }
            std::thread::sleep(SWEEP_POLL);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = mark;
}

/// How often adopted children are looked for while agents run.
#[cfg(target_os = "linux")]
const WATCH_PERIOD: Duration = Duration::from_secs(2);

/// Adopted, marked children seen alive, to be reaped once they exit.
static ADOPTED: Mutex<Option<HashSet<i32>>> = Mutex::new(None);

/// Runs for the life of the process: notes the marked children this
/// process adopted (an agent's background job whose shell exited) and reaps
/// them when they exit, so that they do not stay zombies. One that lives
/// and dies between two looks is not known and stays a zombie (a pid slot,
/// no memory) until this process exits.
#[cfg(target_os = "linux")]
fn watch_adopted() {
    let prefix = format!("{MARKER}={}-", std::process::id());
    loop {
        std::thread::sleep(WATCH_PERIOD);
        let mut seen = Vec::new();
        for_each_child(|pid, state, env| {
            if state != 'Z'
                && !is_own(pid)
                && env
                    .split(|&b| b == 0)
                    .any(|v| v.starts_with(prefix.as_bytes()))
            {
                seen.push(pid);
            }
            false
        });
        let mut adopted = ADOPTED.lock();
        let set = adopted.get_or_insert_with(HashSet::new);
        set.extend(seen);
        // An agent noted as ours after it was seen is left to its owner.
        set.retain(|&pid| !is_own(pid) && !reaped(pid));
    }
}

/// True when `pid`, our child, has been waited for (or is not ours).
#[cfg(target_os = "linux")]
fn reaped(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on a pid that is our child (adopted) and that no one
    // else waits for: only this module knows it.
    let rc = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    rc != 0
}

/// Calls `f(pid, state, environment)` for each child of this process;
/// stops when it returns true. The environment is empty for zombies.
#[cfg(target_os = "linux")]
fn for_each_child(mut f: impl FnMut(i32, char, &[u8]) -> bool) {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some((state, ppid)) = state_and_parent(&stat) else {
            continue;
        };
        if ppid != me {
            continue;
        }
        // A zombie's environment is gone; a live one's is readable by us
        // (same user, our child).
        let env = if state == 'Z' || state == 'X' {
            Vec::new()
        } else {
            std::fs::read(entry.path().join("environ")).unwrap_or_default()
        };
        if f(pid, state, &env) {
            return;
        }
    }
}

/// SIGKILLs the live children of this process whose environment holds
/// `wanted`; the number found.
#[cfg(target_os = "linux")]
fn kill_marked_children(wanted: &[u8]) -> usize {
    let mut found = 0;
    for_each_child(|pid, state, env| {
        if state != 'Z' && !is_own(pid) && env.split(|&b| b == 0).any(|var| var == wanted) {
            found += 1;
            tracing::info!(target: "acp::process", pid,
                "killing a process that left its agent's group (setsid) and outlived the agent");
            // SAFETY: kill(2) with integers only; pid is our child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
            KILLED.lock().get_or_insert_with(HashSet::new).insert(pid);
        }
        false
    });
    found
}

/// Waits for the adopted children killed so far that have died.
#[cfg(target_os = "linux")]
fn reap_killed() {
    let mut killed = KILLED.lock();
    let Some(set) = killed.as_mut() else {
        return;
    };
    set.retain(|&pid| !reaped(pid));
}

/// State and parent pid from a `/proc/<pid>/stat` line.
#[cfg(target_os = "linux")]
fn state_and_parent(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((state, ppid))
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_give_state_and_parent() {
        assert_eq!(
            state_and_parent("4242 (a) b) S 4240 4240 4240 0"),
            Some(('S', 4240))
        );
        assert_eq!(state_and_parent("x"), None);
    }

    /// The agent itself carries its mark; the sweep of adopted daemons must
    /// leave it (and its exit status) to its owner.
    #[test]
    fn an_agent_of_our_own_is_never_killed_or_waited_for_by_the_sweep() {
        let mark = new_mark();
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env(MARKER, &mark)
            .spawn()
            .unwrap();
        let wanted = format!("{MARKER}={mark}");
        own(child.id());
        assert_eq!(kill_marked_children(wanted.as_bytes()), 0);
        assert!(child.try_wait().unwrap().is_none(), "still running");
        disown(child.id());
        assert_eq!(kill_marked_children(wanted.as_bytes()), 1);
        reap_killed();
        let _ = child.wait();
    }

    #[test]
    fn marks_differ() {
        assert_ne!(new_mark(), new_mark());
    }
}
