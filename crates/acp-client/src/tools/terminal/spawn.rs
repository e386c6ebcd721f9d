//! Starting a terminal's process and signalling it: the OS-facing half of
//! terminals (Unix only).

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::{ExitStatus, Stdio};

use tokio::process::{Child, Command};

use super::{TerminalExit, TerminalSpec};
use crate::error::Error;

/// Characters that only make sense to a shell. A command holding one of
/// them (and no separate args) is a command line, not a program name: agents
/// send whole lines such as `cargo test 2>&1 | tail` in `command`.
const SHELL_SYNTAX: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '"', '\'', '*', '?', '~',
];

/// A started terminal process and the read end of its output pipe.
pub(super) struct Spawned {
    pub child: Child,
    /// The process group id (the child's pid: it leads its own group).
    pub pgid: libc::pid_t,
    /// Non-blocking read end of the pipe that is both stdout and stderr.
    pub output: File,
}

/// Starts `spec` in its own process group with stdin on /dev/null and stdout
/// and stderr on one pipe, so their interleaving is the order the kernel saw
/// the writes (two pipes read by two tasks could reorder `a`, `b` on stderr,
/// `c`).
pub(super) fn spawn(spec: &TerminalSpec, mark: Option<&str>) -> Result<Spawned, Error> {
    validate_env(spec)?;
    let spawn_error = |e: io::Error| Error::TerminalSpawn {
        command: spec.command.clone(),
        reason: e.to_string(),
    };
    let (read, write) = output_pipe().map_err(spawn_error)?;
    let child = {
        let mut command = build_command(spec, mark);
        command
            .stdout(Stdio::from(write.try_clone().map_err(spawn_error)?))
            .stderr(Stdio::from(write));
        command.spawn().map_err(spawn_error)?
        // `command` drops here and closes our copies of the write end: the
        // reader only sees EOF once no process holds it any more.
    };
    let pgid = child
        .id()
        .and_then(|pid| libc::pid_t::try_from(pid).ok())
        .ok_or_else(|| Error::TerminalSpawn {
            command: spec.command.clone(),
            reason: "the process ended before its id could be read".to_owned(),
        })?;
    if let Ok(pid) = u32::try_from(pgid) {
        // Marked, and our child: the reaper of adopted daemons must leave
        // its exit status to the terminal's task (reader.rs disowns it).
        crate::agents::process::own(pid);
    }
    Ok(Spawned {
        child,
        pgid,
        output: File::from(read),
    })
}

fn build_command(spec: &TerminalSpec, mark: Option<&str>) -> Command {
    let mut command = if spec.args.is_empty() && needs_shell(&spec.command) {
        // An absolute path: the agent's env may set PATH, and the shell
        // itself must not be looked up through it.
        let mut shell = Command::new("/bin/sh");
        shell.arg("-c").arg(&spec.command);
        shell
    } else {
        let mut direct = Command::new(&spec.command);
        direct.args(&spec.args);
        direct
    };
    // Agents read output, nobody can page through it: a pager would wait on
    // a terminal that does not exist. The agent's own env still wins.
    command.env("PAGER", "cat").env("GIT_PAGER", "cat");
    command.envs(spec.env.iter().map(|(k, v)| (k, v)));
    if let Some(mark) = mark {
        // After the agent's env: the agent cannot unmark its commands.
        command.env(crate::agents::process::MARKER, mark);
    }
    command
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .process_group(0)
        // Covers a leader that left our process group (setsid): dropping the
        // reader task kills it even then.
        .kill_on_drop(true);
    command
}

/// True when `command` is a shell command line rather than a program name.
pub(super) fn needs_shell(command: &str) -> bool {
    command.contains(|c: char| c.is_whitespace() || SHELL_SYNTAX.contains(&c))
}

fn validate_env(spec: &TerminalSpec) -> Result<(), Error> {
    for (name, value) in &spec.env {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(Error::InvalidParams(format!(
                "environment variable name `{name}` is invalid: a name must be non-empty and contain no `=` or NUL"
            )));
        }
        if value.contains('\0') {
            return Err(Error::InvalidParams(format!(
                "the value of environment variable `{name}` contains a NUL byte, which no process can receive"
            )));
        }
    }
    Ok(())
}

/// A pipe whose ends are close-on-exec, with a non-blocking read end.
///
/// Close-on-exec matters: without it a terminal started at the same moment
/// would inherit this pipe's write end, and this terminal's reader would not
/// see EOF until that other process exited.
fn output_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    // std creates both ends close-on-exec atomically where the OS can.
    let (read, write) = io::pipe()?;
    let (read, write) = (OwnedFd::from(read), OwnedFd::from(write));
    set_fd_flag(&read, libc::F_GETFL, libc::F_SETFL, libc::O_NONBLOCK)?;
    Ok((read, write))
}

fn set_fd_flag(
    fd: &OwnedFd,
    get: libc::c_int,
    set: libc::c_int,
    flag: libc::c_int,
) -> io::Result<()> {
    // SAFETY: fcntl with F_GET*/F_SET* on a descriptor we own reads and
    // writes only that descriptor's flags.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), get) };
    if flags == -1 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd.as_raw_fd(), set, flags | flag) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sends SIGKILL to every process in group `pgid`. A group that no longer
/// exists is not an error: the processes are gone, which is what was asked.
pub(super) fn kill_group(pgid: libc::pid_t) {
    // killpg(0) would signal OUR group and killpg(1) is meaningless: never
    // let a bad id take the editor down.
    if pgid <= 1 {
        tracing::warn!(
            pgid,
            "refusing to signal a process group with a reserved id"
        );
        return;
    }
    // SAFETY: killpg has no memory-safety preconditions.
    if unsafe { libc::killpg(pgid, libc::SIGKILL) } == -1 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ESRCH) {
            tracing::warn!(pgid, error = %err, "could not kill a terminal's process group");
        }
    }
}

/// The ACP exit status of a finished process.
pub(super) fn exit_of(status: ExitStatus) -> TerminalExit {
    TerminalExit {
        exit_code: status.code().and_then(|code| u32::try_from(code).ok()),
        signal: status.signal().map(signal_name),
    }
}

/// The conventional name of a signal ("SIGKILL"), as ACP reports it; numbers
/// without a portable name read "SIG" plus the number.
pub(super) fn signal_name(signal: libc::c_int) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGSYS => "SIGSYS",
        other => return format!("SIG{other}"),
    };
    name.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_go_through_the_shell() {
        assert!(needs_shell("echo hi"));
        assert!(needs_shell("ls|wc"));
        assert!(needs_shell("cargo\ttest"));
        assert!(!needs_shell("printf"));
        assert!(!needs_shell("/usr/bin/env"));
        assert!(!needs_shell("git-upload-pack"));
    }

    #[test]
    fn names_signals_like_the_schema() {
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(200), "SIG200");
    }
}
