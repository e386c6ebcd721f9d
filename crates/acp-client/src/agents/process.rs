//! Agent subprocesses: spawn, stderr draining, exit status, shutdown.
//!
//! Unix only: agents run in their own process group so that wrappers such as
//! `npx`, `uvx` or `sh -c` cannot leak their children when we stop the agent.
//! Descendants that leave the group (`setsid` daemons) are stopped too when
//! the program called [`become_subreaper`] (Linux; see `process/reaper.rs`
//! for what other platforms get).
//!
//! Logging: each stderr line of the agent is logged at DEBUG under the target
//! `acp::agent_stderr` (cut to 1 KiB); spawn, signals and exits are logged
//! under `acp::process`.

mod group;
mod reaper;
mod resolve;
mod stderr;

pub use reaper::{become_subreaper, MARKER};
pub(crate) use reaper::{disown, own};

use std::fmt;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::watch;

use crate::error::Error;
pub use crate::error::ExitInfo;

impl From<ExitStatus> for ExitInfo {
    fn from(status: ExitStatus) -> Self {
        ExitInfo {
            code: status.code(),
            signal: status.signal(),
        }
    }
}

/// How many bytes of the agent's stderr [`AgentProcess::stderr_tail`] keeps
/// by default (the newest ones).
pub const DEFAULT_STDERR_TAIL_BYTES: usize = 64 * 1024;

/// After the agent exits, how long we wait for its stderr to reach EOF
/// before reporting the exit. Normally EOF comes at once; it does not when
/// a grandchild inherited stderr and lives on.
const STDERR_SETTLE: Duration = Duration::from_millis(200);

/// How often [`AgentProcess::shutdown`] checks whether the group is gone.
const GROUP_POLL: Duration = Duration::from_millis(10);

/// After SIGKILL, how long to wait for the group to vanish before giving up
/// (only processes stuck in uninterruptible I/O survive that long).
const KILL_SETTLE: Duration = Duration::from_secs(5);

/// What to run as the agent.
///
/// Built builder-style. `env` overlays the full inherited environment, which
/// is never cleared: agents need `HOME`, `PATH` and friends for their OAuth
/// logins and to find `node`/`python`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentCommand {
    /// The program: a name looked up on `PATH`, or a path (relative paths
    /// are taken from `cwd`).
    pub program: String,
    /// Arguments after the program name.
    pub args: Vec<String>,
    /// Working directory of the agent; ours when `None`.
    pub cwd: Option<PathBuf>,
    /// Variables set on top of the inherited environment, in order (a later
    /// entry for the same name wins). A `PATH` here is also used to find
    /// the program.
    pub env: Vec<(String, String)>,
}

impl AgentCommand {
    /// A command running `program` with no arguments.
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
        }
    }

    /// Appends one argument.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets the working directory.
    pub fn cwd(mut self, cwd: impl Into<PathBuf>) -> Self {
        self.cwd = Some(cwd.into());
        self
    }

    /// Sets one environment variable on top of the inherited environment.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }
}

/// Shell-like rendering (`npx -y "some arg"`), for messages and logs.
impl fmt::Display for AgentCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.program)?;
        for arg in &self.args {
            if arg.is_empty() || arg.contains(|c: char| c.is_whitespace() || c == '"') {
                write!(f, " {arg:?}")?;
            } else {
                write!(f, " {arg}")?;
            }
        }
        Ok(())
    }
}

/// A running (or finished) agent process.
///
/// Its stderr is drained continuously in the background; the newest bytes
/// are kept for error messages. Dropping it kills the agent's whole process
/// group unless [`AgentProcess::shutdown`] already saw the group gone.
pub struct AgentProcess {
    command: String,
    pid: Option<u32>,
    exit: watch::Receiver<Option<ExitInfo>>,
    tail: Arc<Mutex<stderr::Tail>>,
    /// Set once every process of the group is known to be dead, after which
    /// the group id may be reused by an unrelated process and must not be
    /// signalled any more.
    group_gone: AtomicBool,
    /// The value of [`MARKER`] in the agent's environment, inherited by
    /// its descendants: how daemons it left behind are recognised.
    mark: String,
    /// Set once the agent's adopted descendants were killed.
    swept: AtomicBool,
}

impl fmt::Debug for AgentProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentProcess")
            .field("command", &self.command)
            .field("pid", &self.pid)
            .field("exit", &self.try_exit())
            .finish_non_exhaustive()
    }
}

impl AgentProcess {
    /// The value of [`MARKER`] this agent and its descendants carry. Give it
    /// to the processes started on the agent's behalf (client terminals,
    /// [`crate::tools::terminal::TerminalManager::with_agent_mark`]) so a daemon one of them
    /// leaves behind is stopped with the agent too.
    pub fn mark(&self) -> &str {
        &self.mark
    }

    /// Starts the agent with piped stdio in its own process group, keeping a
    /// [`DEFAULT_STDERR_TAIL_BYTES`] stderr tail. Returns the process handle
    /// and the agent's stdin and stdout.
    ///
    /// Must be called from within a Tokio runtime (it starts the tasks that
    /// drain stderr and wait for the exit). Fails with [`Error::Spawn`] when
    /// the program cannot be found or run; the message says where we looked.
    #[allow(clippy::result_large_err)] // `Error`'s size is the crate's choice (error.rs).
    pub fn spawn(cmd: &AgentCommand) -> Result<(AgentProcess, ChildStdin, ChildStdout), Error> {
        Self::spawn_with_stderr_tail(cmd, DEFAULT_STDERR_TAIL_BYTES)
    }

    /// Like [`AgentProcess::spawn`], keeping the newest `tail_bytes` bytes of
    /// stderr instead of the default.
    #[allow(clippy::result_large_err)] // `Error`'s size is the crate's choice (error.rs).
    pub fn spawn_with_stderr_tail(
        cmd: &AgentCommand,
        tail_bytes: usize,
    ) -> Result<(AgentProcess, ChildStdin, ChildStdout), Error> {
        let spawn_error = |reason: String| Error::Spawn {
            command: cmd.to_string(),
            reason,
        };
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(spawn_error(
                "no Tokio runtime is running; start agents from within a Tokio runtime".into(),
            ));
        }
        let program = resolve::program(cmd).map_err(spawn_error)?;

        let mark = reaper::new_mark();
        let mut command = tokio::process::Command::new(&program);
        command
            .arg0(&cmd.program)
            .args(&cmd.args)
            .envs(cmd.env.iter().map(|(k, v)| (k, v)))
            .env(MARKER, &mark)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        if let Some(cwd) = &cmd.cwd {
            command.current_dir(cwd);
        }
        let mut child = command.spawn().map_err(|e| {
            // The program itself was found above, so ENOENT here means the
            // interpreter of a script (`#!/usr/bin/env node` without node on
            // PATH: the usual `npx` failure).
            let hint = if e.kind() == std::io::ErrorKind::NotFound {
                "; if it is a script, check that the interpreter in its `#!` line is installed and on PATH"
            } else {
                ""
            };
            spawn_error(format!("running `{}` failed: {e}{hint}", program.display()))
        })?;
        let pid = child.id();
        if let Some(pid) = pid {
            // Our own child: its exit status is collected by the task below,
            // never by the reaper of adopted daemons.
            reaper::own(pid);
        }
        tracing::debug!(target: "acp::process", command = %cmd, ?pid, "spawned agent");

        let (Some(stdin), Some(stdout), Some(stderr_pipe)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // Unreachable with piped stdio; still, never leave a child behind.
            if let Some(pid) = pid {
                reaper::disown(pid);
                group::signal_if_present(pid, libc::SIGKILL);
            }
            return Err(spawn_error(
                "the agent's stdio pipes were not created".into(),
            ));
        };

        let tail = Arc::new(Mutex::new(stderr::Tail::new(tail_bytes)));
        let drain = tokio::spawn(stderr::drain(
            stderr_pipe,
            Arc::clone(&tail),
            cmd.program.clone(),
        ));

        let (exit_tx, exit_rx) = watch::channel(None);
        let command_text = cmd.to_string();
        tokio::spawn(async move {
            let info = match child.wait().await {
                Ok(status) => ExitInfo::from(status),
                Err(e) => {
                    tracing::warn!(target: "acp::process", command = %command_text,
                        "could not collect the agent's exit status: {e}");
                    ExitInfo::UNKNOWN
                }
            };
            if let Some(pid) = pid {
                reaper::disown(pid);
            }
            // Let the drain take in the last words of a crash before anyone
            // reads the tail for the error message.
            let _ = tokio::time::timeout(STDERR_SETTLE, drain).await;
            tracing::debug!(target: "acp::process", command = %command_text, ?pid, "agent exited: {info}");
            exit_tx.send_replace(Some(info));
        });

        let process = AgentProcess {
            command: cmd.to_string(),
            pid,
            exit: exit_rx,
            tail,
            group_gone: AtomicBool::new(false),
            mark,
            swept: AtomicBool::new(false),
        };
        Ok((process, stdin, stdout))
    }

    /// The agent's process id (also its process group id).
    pub fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// The newest bytes the agent wrote to stderr, as text (invalid UTF-8
    /// replaced), starting at a character boundary.
    pub fn stderr_tail(&self) -> String {
        self.tail.lock().text()
    }

    /// Resolves when the agent has exited; any number of tasks may wait.
    ///
    /// If the agent's stderr reaches EOF as it exits (the usual case), the
    /// stderr tail is complete by the time this resolves.
    pub async fn exited(&self) -> ExitInfo {
        let mut exit = self.exit.clone();
        let info = match exit.wait_for(Option::is_some).await {
            Ok(info) => *info,
            // The waiter task is gone without a result: the runtime is
            // shutting down, and the child with it (kill_on_drop).
            Err(_) => None,
        };
        info.unwrap_or(ExitInfo::UNKNOWN)
    }

    /// The exit status if the agent has exited, without waiting.
    pub fn try_exit(&self) -> Option<ExitInfo> {
        *self.exit.borrow()
    }

    /// Stops the agent and everything in its process group.
    ///
    /// Call it after dropping (closing) the agent's stdin, which is how ACP
    /// asks an agent to quit. Waits `grace` for the group to end, then sends
    /// SIGTERM to the group and waits `grace` again, then sends SIGKILL.
    /// Processes left in the group after the agent itself exited (children of
    /// a wrapper) are stopped the same way; then descendants that left the
    /// group and were adopted by this process ([`become_subreaper`]) are
    /// killed. Returns the agent's exit status.
    pub async fn shutdown(&self, grace: Duration) -> ExitInfo {
        let info = self.stop_group(grace).await;
        if !self.swept.swap(true, Ordering::AcqRel) {
            let mark = self.mark.clone();
            let _ = tokio::task::spawn_blocking(move || reaper::kill_adopted(&mark)).await;
        }
        info
    }

    /// [`shutdown`](Self::shutdown) of the process group.
    async fn stop_group(&self, grace: Duration) -> ExitInfo {
        let Some(pgid) = self.pid else {
            return self.exited().await;
        };
        if self.group_gone.load(Ordering::Acquire) {
            return self.exited().await;
        }
        if !self.group_ended_within(pgid, grace).await {
            tracing::debug!(target: "acp::process", command = %self.command,
                "agent still running {grace:?} after stdin was closed; sending SIGTERM");
            group::signal_if_present(pgid, libc::SIGTERM);
            if !self.group_ended_within(pgid, grace).await {
                tracing::debug!(target: "acp::process", command = %self.command,
                    "agent ignored SIGTERM for {grace:?}; sending SIGKILL");
                group::signal_if_present(pgid, libc::SIGKILL);
                if !self.group_ended_within(pgid, KILL_SETTLE).await {
                    tracing::warn!(target: "acp::process", command = %self.command, pgid,
                        "agent process group survived SIGKILL for {KILL_SETTLE:?}");
                    return self.try_exit().unwrap_or(ExitInfo::UNKNOWN);
                }
            }
        }
        self.group_gone.store(true, Ordering::Release);
        self.exited().await
    }

    /// Waits up to `limit` for the agent to exit and every other member of
    /// its group to die. True if that happened.
    async fn group_ended_within(&self, pgid: u32, limit: Duration) -> bool {
        let ended = async {
            self.exited().await;
            while group::has_live_member(pgid) {
                tokio::time::sleep(GROUP_POLL).await;
            }
        };
        tokio::time::timeout(limit, ended).await.is_ok()
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if let Some(pgid) = self.pid {
            if !self.group_gone.load(Ordering::Acquire) {
                // Even if the agent itself exited, wrapper children may live on.
                group::signal_if_present(pgid, libc::SIGKILL);
            }
        }
        if !self.swept.swap(true, Ordering::AcqRel) && reaper::is_subreaper() {
            // The sweep polls for up to 2 s: never in the caller's thread,
            // which may be a runtime worker.
            let mark = std::mem::take(&mut self.mark);
            let _ = std::thread::Builder::new()
                .name("acp-reaper".into())
                .spawn(move || reaper::kill_adopted(&mark));
        }
    }
}
