//! Client-side terminals (`terminal/*`): commands the agent runs on the
//! user's machine, with bounded output and live display.
//!
//! [`TerminalManager`] is what the connection calls after it decoded a
//! `terminal/*` request and checked its `cwd` against the workspace. Each
//! terminal is one process in its own process group, with stdin on
//! `/dev/null` and stdout and stderr merged into one pipe, read by one task.
//! Output is kept newest-first within a byte limit (ACP truncates from the
//! beginning, at a character boundary) and streamed to the editor as
//! coalesced [`TerminalEvent`]s. Unix only.

// `Error`'s size is the crate's choice (error.rs), not this module's.
#![allow(clippy::result_large_err)]

mod buffer;
mod reader;
mod spawn;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use serde::Serialize;
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::error::Error;
use crate::schema::{TerminalExitStatus, TerminalOutputResponse};
use crate::session::update::SessionId;
use buffer::TailBuffer;
use reader::{Control, OutputSink, TerminalTask};

/// The id of a terminal on the wire (`terminalId`): the official schema's
/// newtype, so the connection passes it through without converting.
pub use crate::schema::TerminalId;

/// Where a [`TerminalManager`] sends its events (the session layer wraps
/// them into [`ClientEvent::Terminal`](crate::edits::host::ClientEvent::Terminal)).
pub type TerminalSink = Arc<dyn Fn(TerminalEvent) + Send + Sync>;

/// The most output one terminal may keep, whatever `outputByteLimit` the
/// agent asks for (the manager's `default_cap`).
pub const DEFAULT_OUTPUT_CAP: usize = 16 * 1024 * 1024;

/// Output kept by a terminal whose agent gave no `outputByteLimit`. An
/// agent that starts 40 `yes` terminals without a limit (issue 25) must not
/// make the editor hold 16 MB (twice: stored and not yet shown) for each.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1024 * 1024;

/// Live (not released) terminals one session may hold; `terminal/create`
/// past it is an error that says to release some. Agents run a handful
/// (a build, a server, a test watcher); a thousand is a flood.
pub const MAX_TERMINALS_PER_SESSION: usize = 16;

/// The sum of the output limits of every live terminal of a connection:
/// whatever the agent asks, stored terminal output stays within it.
pub const OUTPUT_BUDGET: usize = 64 * 1024 * 1024;

/// Output not yet shown to the editor, per terminal: a flood shows its
/// newest megabyte per event (the stored output keeps the whole limit).
const BACKLOG_CAP: usize = 1024 * 1024;

/// How long a release waits for a killed process to be reaped before it
/// gives up on the final output and exit event. A hang guard: SIGKILL ends a
/// process at once unless it is stuck in the kernel.
const RELEASE_GRACE: Duration = Duration::from_secs(5);

/// A `terminal/create` request, decoded and with its `cwd` checked against
/// the session's workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TerminalSpec {
    /// The session the terminal belongs to.
    pub session_id: SessionId,
    /// A program, or a whole command line when `args` is empty (run with
    /// `/bin/sh -c` when it contains whitespace or shell syntax).
    pub command: String,
    /// Arguments, passed to `command` as they are (no shell).
    pub args: Vec<String>,
    /// Variables set on top of the editor's environment.
    pub env: Vec<(String, String)>,
    /// Absolute working directory.
    pub cwd: PathBuf,
    /// The most output bytes to keep (newest kept); `None` for the manager's
    /// default cap.
    pub output_byte_limit: Option<u64>,
}

impl TerminalSpec {
    /// The command line for display: the program, then each argument,
    /// single-quoted unless it is made only of characters a shell leaves
    /// alone, so the line reads as the command that ran.
    pub fn command_line(&self) -> String {
        let mut line = self.command.clone();
        for arg in &self.args {
            line.push(' ');
            let plain = |c: char| c.is_ascii_alphanumeric() || "_./=:,+@%-".contains(c);
            if arg.is_empty() || !arg.chars().all(plain) {
                line.push('\'');
                line.push_str(&arg.replace('\'', r"'\''"));
                line.push('\'');
            } else {
                line.push_str(arg);
            }
        }
        line
    }

    /// Applies variables the user pinned on top of the agent's `env`: the
    /// agent's entries for those names are dropped and the pinned values
    /// appended, so whatever the agent sent, the command sees the pinned
    /// value (entries are applied in order; the last one wins).
    pub fn pin_env(&mut self, pinned: &[(String, String)]) {
        if pinned.is_empty() {
            return;
        }
        self.env
            .retain(|(name, _)| !pinned.iter().any(|(p, _)| p == name));
        self.env.extend(pinned.iter().cloned());
    }
}

/// How a terminal's command ended (ACP `TerminalExitStatus`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalExit {
    /// The exit code; `None` when a signal ended the process.
    pub exit_code: Option<u32>,
    /// The name of the signal that ended the process, such as `"SIGKILL"`.
    pub signal: Option<String>,
}

impl From<TerminalExit> for TerminalExitStatus {
    fn from(exit: TerminalExit) -> Self {
        TerminalExitStatus::new()
            .exit_code(exit.exit_code)
            .signal(exit.signal)
    }
}

/// A terminal's output so far (ACP `terminal/output` response).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TerminalOutput {
    /// The newest output, within the terminal's byte limit; invalid UTF-8
    /// shows as U+FFFD.
    pub output: String,
    /// True when older output was dropped to stay within the limit.
    pub truncated: bool,
    /// Set once the command has exited. Left out of the `terminal/output`
    /// reply until then; once set, its `exitCode` and `signal` are both
    /// sent, `null` included, as this client always has (the schema's
    /// `TerminalExitStatus` leaves a `None` out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<TerminalExit>,
}

impl From<TerminalOutput> for TerminalOutputResponse {
    fn from(output: TerminalOutput) -> Self {
        TerminalOutputResponse::new(output.output, output.truncated)
            .exit_status(output.exit_status.map(TerminalExitStatus::from))
    }
}

/// Terminal output and lifecycle, for live display in the tool call that
/// embeds the terminal. Per terminal, events arrive in order: Output*,
/// Exited, then Released if the agent releases it. Background processes that
/// outlive the command may add Output after Exited.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "kind",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum TerminalEvent {
    /// The agent started a command (`terminal/create`). Comes before any
    /// other event of the terminal, so an editor can show the command in the
    /// tool call that embeds the terminal: agents such as the fake demo
    /// agent embed a terminal without repeating its command in `rawInput`.
    Started {
        /// The session that created the terminal.
        session_id: SessionId,
        /// The new terminal.
        terminal_id: TerminalId,
        /// The command line as it runs: the program and its arguments.
        command: String,
    },
    /// New output since the previous Output event of this terminal (at most
    /// one event per ~50 ms).
    Output {
        /// The session that created the terminal.
        session_id: SessionId,
        /// The terminal that printed.
        terminal_id: TerminalId,
        /// The new text. When more than the terminal's limit arrived since
        /// the last event, only the newest limit's worth.
        data: String,
        /// True when `data` skips output that arrived in between.
        truncated: bool,
    },
    /// The command exited; all output it wrote was sent before this event.
    Exited {
        /// The session that created the terminal.
        session_id: SessionId,
        /// The terminal whose command exited.
        terminal_id: TerminalId,
        /// How the command ended.
        exit_status: TerminalExit,
    },
    /// The agent released the terminal (its process is killed); the id is
    /// no longer valid but the editor may keep showing the output.
    Released {
        /// The session that created the terminal.
        session_id: SessionId,
        /// The id that is no longer valid.
        terminal_id: TerminalId,
    },
}

/// Runs and tracks the terminals of one connection.
///
/// Cheap to clone: clones share the terminals. When the last clone is
/// dropped every terminal's process group is killed, so no command outlives
/// the manager.
#[derive(Clone)]
pub struct TerminalManager {
    inner: Arc<Inner>,
}

struct Inner {
    events: TerminalSink,
    default_cap: usize,
    next_id: AtomicU64,
    terminals: Mutex<HashMap<TerminalId, Arc<Terminal>>>,
    /// The agent's [`crate::agents::process::MARKER`] value, given to every command
    /// so a `setsid` daemon one leaves behind is swept with the agent.
    mark: Option<String>,
    /// Live terminals per session and the sum of their limits, reserved
    /// before a process starts so concurrent creates cannot overshoot.
    usage: Mutex<Usage>,
}

#[derive(Default)]
struct Usage {
    per_session: HashMap<SessionId, usize>,
    bytes: usize,
}

impl Inner {
    fn reserve(&self, session_id: &SessionId, limit: usize) -> Result<(), Error> {
        let mut usage = self.usage.lock();
        let live = usage.per_session.get(session_id).copied().unwrap_or(0);
        if live >= MAX_TERMINALS_PER_SESSION {
            return Err(Error::TerminalLimit(format!(
                "this session already has {live} live terminals, the most it may hold; release finished ones with terminal/release before creating more"
            )));
        }
        if usage.bytes + limit > OUTPUT_BUDGET {
            return Err(Error::TerminalLimit(format!(
                "live terminals already keep up to {} MB of output, and this one's {} MB would pass the {} MB the client allows; release terminals with terminal/release or ask for a smaller outputByteLimit",
                usage.bytes / (1024 * 1024),
                limit.div_ceil(1024 * 1024),
                OUTPUT_BUDGET / (1024 * 1024)
            )));
        }
        *usage.per_session.entry(session_id.clone()).or_default() += 1;
        usage.bytes += limit;
        Ok(())
    }

    fn unreserve(&self, session_id: &SessionId, limit: usize) {
        let mut usage = self.usage.lock();
        usage.bytes = usage.bytes.saturating_sub(limit);
        if let Some(n) = usage.per_session.get_mut(session_id) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                usage.per_session.remove(session_id);
            }
        }
    }
}

/// The manager's handle on one terminal; the process itself belongs to the
/// terminal's reader task.
struct Terminal {
    session_id: SessionId,
    /// The output limit reserved in [`Inner::usage`].
    limit: usize,
    pgid: libc::pid_t,
    output: Arc<Mutex<TailBuffer>>,
    exit: watch::Receiver<Option<TerminalExit>>,
    control: mpsc::UnboundedSender<Control>,
    task: JoinHandle<()>,
}

impl Terminal {
    fn kill(&self) {
        spawn::kill_group(self.pgid);
        // The task may already be gone (command exited, pipe closed); then
        // there is no leader left to kill.
        let _ = self.control.send(Control::KillLeader);
    }
}

impl TerminalManager {
    /// A manager without terminals. `events` receives every
    /// [`TerminalEvent`]; `default_cap` bounds each terminal's
    /// output memory (see [`TerminalManager::create`]).
    pub fn new(events: TerminalSink, default_cap: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                events,
                default_cap,
                next_id: AtomicU64::new(1),
                terminals: Mutex::new(HashMap::new()),
                mark: None,
                usage: Mutex::new(Usage::default()),
            }),
        }
    }

    /// A manager whose commands carry the agent's mark
    /// ([`crate::agents::process::AgentProcess::mark`]): a daemon a terminal command
    /// starts with `setsid` is then killed when the agent closes, like the
    /// agent's own (Linux, in a process that called
    /// [`crate::agents::process::become_subreaper`]).
    pub fn with_agent_mark(events: TerminalSink, default_cap: usize, mark: String) -> Self {
        let mut manager = Self::new(events, default_cap);
        if let Some(inner) = Arc::get_mut(&mut manager.inner) {
            inner.mark = Some(mark);
        }
        manager
    }

    /// Starts the command and returns at once with a fresh id (`term-1`,
    /// `term-2`, ...).
    ///
    /// With `args` the command is executed directly; without args, a command
    /// containing whitespace or shell syntax runs through `/bin/sh -c`.
    /// `env` overlays the inherited environment, which also gets
    /// `PAGER=cat` and `GIT_PAGER=cat` unless `env` sets them. Output is
    /// kept within `output_byte_limit` ([`DEFAULT_OUTPUT_LIMIT`] when the
    /// agent gives none), and never more than the manager's `default_cap`.
    /// A session holds at most [`MAX_TERMINALS_PER_SESSION`] live terminals
    /// and all of them at most [`OUTPUT_BUDGET`] of output: past either,
    /// [`Error::TerminalLimit`] and nothing runs. So memory stays bounded
    /// whatever the agent asks for.
    pub async fn create(&self, spec: TerminalSpec) -> Result<TerminalId, Error> {
        let limit = spec
            .output_byte_limit
            .map_or(DEFAULT_OUTPUT_LIMIT, |l| {
                usize::try_from(l).unwrap_or(usize::MAX)
            })
            .min(self.inner.default_cap);
        self.inner.reserve(&spec.session_id, limit)?;
        let spawned = match spawn::spawn(&spec, self.inner.mark.as_deref()) {
            Ok(s) => s,
            Err(e) => {
                self.inner.unreserve(&spec.session_id, limit);
                return Err(e);
            }
        };
        // SAFETY: the AsyncFd owns the File, so the descriptor stays open
        // and unchanged until the AsyncFd is dropped.
        let pipe = unsafe { AsyncFd::register_with_interest(spawned.output, Interest::READABLE) }
            .map_err(|e| {
            self.inner.unreserve(&spec.session_id, limit);
            Error::TerminalSpawn {
                command: spec.command.clone(),
                reason: format!("could not watch its output: {e}"),
            }
        })?;
        let id = TerminalId::new(format!(
            "term-{}",
            self.inner.next_id.fetch_add(1, Ordering::Relaxed)
        ));
        tracing::debug!(terminal = %id, command = %spec.command, args = ?spec.args, limit, "terminal started");

        // Before the task starts, so it precedes the terminal's output.
        (self.inner.events)(TerminalEvent::Started {
            session_id: spec.session_id.clone(),
            terminal_id: id.clone(),
            command: spec.command_line(),
        });
        let output = Arc::new(Mutex::new(TailBuffer::new(limit)));
        let (exit_tx, exit_rx) = watch::channel(None);
        let (control_tx, control_rx) = mpsc::unbounded_channel();
        let task = TerminalTask {
            pid: u32::try_from(spawned.pgid).ok(),
            child: spawned.child,
            pipe,
            control: control_rx,
            exit: exit_tx,
            sink: OutputSink {
                session_id: spec.session_id.clone(),
                terminal_id: id.clone(),
                output: Arc::clone(&output),
                backlog: TailBuffer::new(limit.min(BACKLOG_CAP)),
                events: Arc::clone(&self.inner.events),
                last_event: None,
                flush_at: None,
            },
        };
        let terminal = Terminal {
            session_id: spec.session_id,
            limit,
            pgid: spawned.pgid,
            output,
            exit: exit_rx,
            control: control_tx,
            task: tokio::spawn(task.run()),
        };
        self.inner
            .terminals
            .lock()
            .insert(id.clone(), Arc::new(terminal));
        Ok(id)
    }

    /// The output so far, whether it was truncated, and the exit status once
    /// the command exited.
    pub async fn output(&self, id: &TerminalId) -> Result<TerminalOutput, Error> {
        let terminal = self.get(id)?;
        // Exit first: once it is set, the buffer already holds everything
        // the command wrote.
        let exit_status = terminal.exit.borrow().clone();
        let (output, truncated) = terminal.output.lock().text();
        Ok(TerminalOutput {
            output,
            truncated,
            exit_status,
        })
    }

    /// Waits until the command exits and returns how it ended.
    pub async fn wait_for_exit(&self, id: &TerminalId) -> Result<TerminalExit, Error> {
        let mut exit = self.get(id)?.exit.clone();
        let result = exit
            .wait_for(Option::is_some)
            .await
            .map(|exit| exit.clone());
        match result {
            Ok(Some(exit)) => Ok(exit),
            _ => Err(Error::NotFound(format!(
                "terminal `{id}` was released before its command exited"
            ))),
        }
    }

    /// Kills the command and every process it started (SIGKILL to its
    /// process group). The terminal stays valid: its output and exit status
    /// can still be read.
    pub async fn kill(&self, id: &TerminalId) -> Result<(), Error> {
        self.get(id)?.kill();
        Ok(())
    }

    /// Kills the command if it still runs and forgets the terminal: later
    /// calls with `id` fail with [`Error::NotFound`].
    pub async fn release(&self, id: &TerminalId) -> Result<(), Error> {
        let terminal = self
            .inner
            .terminals
            .lock()
            .remove(id)
            .ok_or_else(|| not_found(id))?;
        self.finish_release(vec![(id.clone(), terminal)]).await;
        Ok(())
    }

    /// Kills and releases every terminal of a session (the session closed).
    pub async fn release_session(&self, session_id: &SessionId) {
        let released: Vec<_> = {
            let mut terminals = self.inner.terminals.lock();
            let ids: Vec<TerminalId> = terminals
                .iter()
                .filter(|(_, t)| &t.session_id == session_id)
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| terminals.remove(&id).map(|t| (id, t)))
                .collect()
        };
        self.finish_release(released).await;
    }

    /// Kills and releases every terminal (the agent exited).
    pub async fn release_all(&self) {
        let released: Vec<_> = self.inner.terminals.lock().drain().collect();
        self.finish_release(released).await;
    }

    /// The largest allocation a terminal's output buffer ever had, in bytes.
    /// It never exceeds the terminal's limit, however much the command
    /// prints; exposed for memory diagnostics and tests.
    pub fn output_capacity_high_water(&self, id: &TerminalId) -> Result<usize, Error> {
        Ok(self.get(id)?.output.lock().capacity_high_water())
    }

    fn get(&self, id: &TerminalId) -> Result<Arc<Terminal>, Error> {
        self.inner
            .terminals
            .lock()
            .get(id)
            .cloned()
            .ok_or_else(|| not_found(id))
    }

    /// Kills the terminals (already removed from the map), lets each report
    /// its final output and exit, then stops its task and says so.
    async fn finish_release(&self, released: Vec<(TerminalId, Arc<Terminal>)>) {
        for (_, terminal) in &released {
            terminal.kill();
        }
        for (id, terminal) in released {
            self.inner.unreserve(&terminal.session_id, terminal.limit);
            let mut exit = terminal.exit.clone();
            let waited = tokio::time::timeout(RELEASE_GRACE, async {
                // Err only when the task ended without an exit: nothing to wait for.
                let _ = exit.wait_for(Option::is_some).await;
            })
            .await;
            if waited.is_err() {
                tracing::warn!(terminal = %id, "a released terminal's process did not exit after SIGKILL");
            }
            terminal.task.abort();
            tracing::debug!(terminal = %id, "terminal released");
            (self.inner.events)(TerminalEvent::Released {
                session_id: terminal.session_id.clone(),
                terminal_id: id,
            });
        }
    }
}

impl fmt::Debug for TerminalManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TerminalManager")
            .field("default_cap", &self.inner.default_cap)
            .field("terminals", &self.inner.terminals.lock().len())
            .finish_non_exhaustive()
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let terminals = self.terminals.get_mut();
        for (_, terminal) in terminals.drain() {
            terminal.kill();
            // Dropping the task drops the child, which kills the leader too
            // (kill_on_drop) and leaves reaping to tokio.
            terminal.task.abort();
        }
    }
}

fn not_found(id: &TerminalId) -> Error {
    Error::NotFound(format!(
        "terminal `{id}` does not exist or was released; create a new one with terminal/create"
    ))
}
