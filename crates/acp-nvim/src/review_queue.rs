//! The review task's queue: Lua's review decisions and queries, and the
//! buffers that took an agent's disk-edit merge (reported by the agent
//! hosts), in the order they came. A module of its own so the hosts hold
//! it without depending on the review task (`review`), which uses them.

use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};

use crate::command::ReviewCommand;

/// What the review task does next, in the order Lua (or the buffer sync)
/// sent it.
#[derive(Debug)]
pub(crate) enum Job {
    Decide(ReviewCommand),
    Query(ReviewCommand, oneshot::Sender<rmpv::Value>),
    Merged(MergedBuffer),
}

/// A buffer took the merge of an agent's disk edit into its unsaved text
/// (`acp.edits.fs.apply` answered `merged`): its text at `tick` is that merge.
#[derive(Debug)]
pub struct MergedBuffer {
    /// The file.
    pub path: std::path::PathBuf,
    /// The merged text the buffer holds now.
    pub text: Arc<str>,
    /// The buffer's tick (`acp.edits.fs.tick`) at `text`.
    pub tick: u64,
}

/// The queue of the task applying review decisions in order, and answering
/// review queries after every decision sent before them: a save reports
/// the user's text (`acp.user_edit`, which renumbers hunks) and the
/// refresh right after it must see the new hunks, or the next key acts on
/// a hunk that no longer exists.
///
/// Every agent host holds a clone (its buffer sync reports merges here), so
/// the handle exists before the agents; `review::start` starts the task
/// once they do. Jobs sent before wait in the queue.
#[derive(Debug, Clone)]
pub struct Decisions {
    tx: mpsc::UnboundedSender<Job>,
    rx: Arc<Mutex<Option<mpsc::UnboundedReceiver<Job>>>>,
}

impl Default for Decisions {
    fn default() -> Self {
        Self::new()
    }
}

impl Decisions {
    /// The queue, with no task yet.
    pub fn new() -> Self {
        let (tx, rx) = mpsc::unbounded_channel::<Job>();
        Self {
            tx,
            rx: Arc::new(Mutex::new(Some(rx))),
        }
    }

    /// The receiving end, once: for the task.
    pub(crate) fn take_receiver(&self) -> Option<mpsc::UnboundedReceiver<Job>> {
        self.rx.lock().take()
    }

    /// Queues a decision; its outcome arrives as events.
    pub fn send(&self, cmd: ReviewCommand) {
        if self.tx.send(Job::Decide(cmd)).is_err() {
            tracing::warn!("review decision dropped: the review task has stopped");
        }
    }

    /// Queues a query, answered once the decisions before it are applied.
    pub fn query(&self, cmd: ReviewCommand, answer: oneshot::Sender<rmpv::Value>) {
        if self.tx.send(Job::Query(cmd, answer)).is_err() {
            tracing::warn!("review query dropped: the review task has stopped");
        }
    }

    /// A buffer took the merge of an agent's disk edit: every chat's review
    /// learns its text as the user's edit (see `review::record_merge`).
    pub fn merged(&self, merged: MergedBuffer) {
        if self.tx.send(Job::Merged(merged)).is_err() {
            tracing::warn!("merged buffer not recorded: the review task has stopped");
        }
    }
}
