//! The one task per terminal: it owns the process and the read end of its
//! output pipe, stores output, reports the exit and emits coalesced events.

use std::fs::File;
use std::io::{self, Read};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use tokio::io::unix::AsyncFd;
use tokio::process::Child;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::buffer::{incomplete_tail_len, leading_continuation_len, TailBuffer};
use super::spawn::exit_of;
use super::{TerminalEvent, TerminalExit, TerminalId};
use crate::session::update::SessionId;

/// At most one output event per terminal per this interval: a command
/// printing 100k lines must not send the editor 100k redraws.
const COALESCE: Duration = Duration::from_millis(50);

/// Bytes read per system call.
const READ_CHUNK: usize = 64 * 1024;

/// How much already-written output to collect after the process exited
/// before reporting the exit. Far above a pipe's capacity (64 KiB by
/// default), so everything the process wrote is collected; but bounded, so
/// a background process that keeps printing cannot postpone the exit.
const EXIT_DRAIN_BUDGET: usize = 4 * 1024 * 1024;

/// Requests from the manager to the task.
#[derive(Debug)]
pub(super) enum Control {
    /// SIGKILL the process the terminal started, in case it left the process
    /// group that `kill` signals.
    KillLeader,
}

/// Everything the task needs; [`TerminalTask::run`] consumes it.
pub(super) struct TerminalTask {
    pub child: Child,
    /// The leader's pid, known after `child` was waited for (tokio forgets it).
    pub pid: Option<u32>,
    pub pipe: AsyncFd<File>,
    pub control: mpsc::UnboundedReceiver<Control>,
    pub exit: watch::Sender<Option<TerminalExit>>,
    pub sink: OutputSink,
}

/// Where output goes: the terminal's stored output and the event stream.
pub(super) struct OutputSink {
    pub session_id: SessionId,
    pub terminal_id: TerminalId,
    pub output: Arc<Mutex<TailBuffer>>,
    /// Output not yet sent in an event, bounded by the terminal's limit.
    pub backlog: TailBuffer,
    pub events: super::TerminalSink,
    pub last_event: Option<Instant>,
    pub flush_at: Option<Instant>,
}

impl TerminalTask {
    /// Runs until the process has exited and its output pipe is closed.
    ///
    /// The exit is reported once the process was reaped and the output it
    /// wrote before exiting was collected; output from background processes
    /// that still hold the pipe keeps being stored (and evented) after that.
    pub(super) async fn run(mut self) {
        let mut buf = vec![0u8; READ_CHUNK];
        let mut exited = false;
        let mut eof = false;
        let mut control_open = true;
        while !(exited && eof) {
            tokio::select! {
                command = self.control.recv(), if control_open => match command {
                    Some(Control::KillLeader) => {
                        if !exited {
                            if let Err(error) = self.child.start_kill() {
                                tracing::debug!(terminal = %self.sink.terminal_id, %error, "could not kill the terminal's process");
                            }
                        }
                    }
                    None => control_open = false,
                },
                status = self.child.wait(), if !exited => {
                    exited = true;
                    if let Some(pid) = self.pid {
                        crate::agents::process::disown(pid);
                    }
                    let exit = match status {
                        Ok(status) => exit_of(status),
                        Err(error) => {
                            tracing::warn!(terminal = %self.sink.terminal_id, %error, "could not read the terminal's exit status");
                            TerminalExit { exit_code: None, signal: None }
                        }
                    };
                    if !eof {
                        eof = drain_written(self.pipe.get_ref(), &mut buf, &mut self.sink);
                    }
                    self.sink.flush_at = None;
                    self.sink.flush(true);
                    tracing::debug!(terminal = %self.sink.terminal_id, ?exit, "terminal command exited");
                    self.sink.emit(TerminalEvent::Exited {
                        session_id: self.sink.session_id.clone(),
                        terminal_id: self.sink.terminal_id.clone(),
                        exit_status: exit.clone(),
                    });
                    // Published after the Exited event: a release that waits
                    // for the exit and then stops this task never loses it.
                    self.exit.send_replace(Some(exit));
                },
                ready = self.pipe.readable(), if !eof => match ready {
                    Ok(mut guard) => match guard.try_io(|pipe| read_once(pipe.get_ref(), &mut buf)) {
                        Ok(Ok(0)) => eof = true,
                        Ok(Ok(n)) => {
                            self.sink.record(&buf[..n]);
                            self.sink.schedule();
                        }
                        Ok(Err(error)) if error.kind() == io::ErrorKind::Interrupted => {}
                        Ok(Err(error)) => {
                            tracing::warn!(terminal = %self.sink.terminal_id, %error, "reading terminal output failed");
                            eof = true;
                        }
                        Err(_would_block) => {}
                    },
                    Err(error) => {
                        tracing::warn!(terminal = %self.sink.terminal_id, %error, "waiting for terminal output failed");
                        eof = true;
                    }
                },
                () = tokio::time::sleep_until(self.sink.flush_at.unwrap_or_else(Instant::now)),
                    if self.sink.flush_at.is_some() =>
                {
                    self.sink.flush_at = None;
                    self.sink.flush(false);
                }
            }
        }
        self.sink.flush(true);
    }
}

fn read_once(mut pipe: &File, buf: &mut [u8]) -> io::Result<usize> {
    pipe.read(buf)
}

/// Reads what is already in the pipe, without waiting. Returns true at EOF.
///
/// Everything a process wrote is in the pipe by the time it is reaped, so
/// reading until the pipe is empty collects all of it, with no timeout.
fn drain_written(pipe: &File, buf: &mut [u8], sink: &mut OutputSink) -> bool {
    let mut budget = EXIT_DRAIN_BUDGET;
    loop {
        match read_once(pipe, buf) {
            Ok(0) => return true,
            Ok(n) => {
                sink.record(&buf[..n]);
                budget = budget.saturating_sub(n);
                if budget == 0 {
                    return false;
                }
            }
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return false,
            Err(error) => {
                tracing::warn!(terminal = %sink.terminal_id, %error, "reading terminal output failed");
                return true;
            }
        }
    }
}

impl OutputSink {
    fn record(&mut self, bytes: &[u8]) {
        self.output.lock().push(bytes);
        self.backlog.push(bytes);
    }

    /// Sends the backlog now if no event went out in the last [`COALESCE`],
    /// else makes sure a flush is due when that interval ends.
    fn schedule(&mut self) {
        match self.last_event {
            Some(last) if Instant::now() < last + COALESCE => {
                self.flush_at.get_or_insert(last + COALESCE);
            }
            _ => self.flush(false),
        }
    }

    /// Emits the backlog as one Output event. Unless `last`, a character
    /// whose bytes have not all arrived stays in the backlog for the next
    /// event, so no event shows half a character as U+FFFD.
    fn flush(&mut self, last: bool) {
        let (mut bytes, truncated) = self.backlog.take();
        if !last {
            let partial = incomplete_tail_len(&bytes);
            if partial > 0 {
                let tail = bytes.split_off(bytes.len() - partial);
                self.backlog.push(&tail);
            }
        }
        let start = if truncated {
            leading_continuation_len(&bytes)
        } else {
            0
        };
        if bytes.len() == start && !truncated {
            return;
        }
        self.last_event = Some(Instant::now());
        self.emit(TerminalEvent::Output {
            session_id: self.session_id.clone(),
            terminal_id: self.terminal_id.clone(),
            data: String::from_utf8_lossy(&bytes[start..]).into_owned(),
            truncated,
        });
    }

    fn emit(&self, event: TerminalEvent) {
        (self.events)(event);
    }
}
