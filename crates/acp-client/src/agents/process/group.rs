//! Signals to the agent's process group, and telling when the group is gone.
//!
//! Agents are usually started through wrappers (`npx`, `uvx`, `sh -c`) whose
//! children outlive them if only the direct child is killed, so everything
//! here works on the whole group the agent was started in.

use std::io;

/// Sends `signal` to every process in group `pgid`; `signal` 0 only checks
/// that the group exists. `ESRCH` (no such group) is returned as an error
/// like any other; callers decide whether that matters.
pub(super) fn signal(pgid: u32, signal: libc::c_int) -> io::Result<()> {
    let pgid = libc::pid_t::try_from(pgid).map_err(|_| {
        io::Error::new(io::ErrorKind::InvalidInput, "process group id out of range")
    })?;
    if pgid <= 1 {
        // killpg(0) would signal our own group and killpg(1) init's: never.
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing to signal process group 0 or 1",
        ));
    }
    // SAFETY: killpg has no memory-safety preconditions; it only takes integers.
    let rc = unsafe { libc::killpg(pgid, signal) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sends `signal` to the group, treating "already gone" as success.
pub(super) fn signal_if_present(pgid: u32, sig: libc::c_int) {
    match signal(pgid, sig) {
        Ok(()) => {
            tracing::debug!(target: "acp::process", pgid, sig, "signalled agent process group")
        }
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
        Err(e) => {
            tracing::warn!(target: "acp::process", pgid, sig, "could not signal agent process group: {e}")
        }
    }
}

/// True while some process of group `pgid` is still running.
///
/// Zombies do not count: they are dead and only wait for their parent to
/// reap them. That matters because orphaned grandchildren are reparented to
/// PID 1, and in containers PID 1 often never reaps, so "the group still
/// exists" can stay true forever after everything in it has died.
pub(super) fn has_live_member(pgid: u32) -> bool {
    match signal(pgid, 0) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return false,
        // EPERM: a member exists that we may not signal; it is alive to us.
        Err(_) => return true,
    }
    live_member_in_proc(pgid).unwrap_or(true)
}

/// Scans `/proc` for a member of `pgid` that is not a zombie. `None` when
/// `/proc` cannot be read (not Linux, or not mounted).
#[cfg(target_os = "linux")]
fn live_member_in_proc(pgid: u32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // The process may exit while we look: skip what we cannot read.
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if let Some((state, group)) = parse_stat(&stat) {
            if group == pgid && state != 'Z' && state != 'X' {
                return Some(true);
            }
        }
    }
    Some(false)
}

#[cfg(not(target_os = "linux"))]
fn live_member_in_proc(_pgid: u32) -> Option<bool> {
    None
}

/// State and process group from a `/proc/<pid>/stat` line:
/// `pid (comm) state ppid pgrp ...`. The command name may contain spaces
/// and parentheses, so parsing starts after the last `)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse_stat(stat: &str) -> Option<(char, u32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_odd_command_names() {
        assert_eq!(
            parse_stat("4242 (sleep) S 4240 4240 4240 0 -1 4194560"),
            Some(('S', 4240))
        );
        assert_eq!(parse_stat("77 (a) (b c) Z 1 70 70 0"), Some(('Z', 70)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn never_signals_our_own_or_init_group() {
        assert!(signal(0, 0).is_err());
        assert!(signal(1, 0).is_err());
    }
}
