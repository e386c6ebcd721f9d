//! The review service (was `tracking`): each session's review of the
//! files its agent changed, fed from the three places an edit shows up,
//! and the decisions (accept, reject) applied back to buffers and disk.
//!
//! This module owns the review state of every session ([`Reviews`]: each
//! session's worker, checkpoints and pending deletes) and the session and
//! turn lifecycle. A file's review (its hunks, decisions, undo states and
//! last known text) is kept in the file's one record, next to its buffer
//! sync ([`FileRecords`], see [`files`]). Its parts, each owning one job:
//!
//! - [`files`]: a session's handle on the file records, shaped like an
//!   [`EditTracker`](crate::edits::hunks::EditTracker).
//! - [`sources`]: where edits come from: `fs/write_text_file`, the diffs of
//!   completed tool calls, and the files tool calls mention (snapshots, the
//!   editor's copy from the prompt).
//! - [`watcher`]: the per-session worker task and its file watcher, which
//!   sees disk changes no diff reports, with their debounce.
//! - [`decisions`]: accept, reject and delete, written back through the
//!   editor or to disk, and the user's own edits of reviewed files.
//! - [`handle`]: [`Review`], the editor's handle on one session's review.
//!
//! Updates are only tracked once the session had a prompt on this
//! connection, so a `session/load` replay does not put old edits under
//! review.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::Mutex;

use tokio::sync::{mpsc, oneshot};

mod decisions;
mod files;
mod handle;
mod rewind;
mod sources;
mod watcher;

pub use handle::Review;
pub use rewind::{RewindFile, RewindPlan, Rewound};
pub(crate) use sources::ToolFacts;

use crate::edits::buffer_sync::FileRecords;
use crate::edits::checkpoint::{Checkpoints, TurnNumber};
use crate::edits::fs::Workspace;
use crate::edits::host::{EditorHost, EventSink};
use crate::edits::hunks::{FileReview, FileSummary};
use crate::path::CanonicalPath;
use crate::session::update::SessionId;
use files::ReviewFiles;
use sources::ToolDiff;
use watcher::Worker;

/// The review state of every session of a connection.
pub(crate) struct Reviews {
    sessions: Mutex<HashMap<SessionId, Arc<SessionReview>>>,
    /// The file records every session's review keeps its files in: the
    /// host's buffer sync's (one record per file), else the review's own.
    records: Arc<Mutex<FileRecords>>,
    events: EventSink,
    /// Asked for the text files had when the prompt was sent.
    host: Arc<dyn EditorHost>,
    max_read_bytes: usize,
}

impl std::fmt::Debug for Reviews {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reviews")
            .field("sessions", &self.sessions.lock().len())
            .finish_non_exhaustive()
    }
}

/// One session's review and the handle of its worker task.
struct SessionReview {
    state: Arc<Mutex<ReviewState>>,
    /// Its files' reviews, in the file records.
    files: ReviewFiles,
    /// Held while a file is read and recorded (worker) and while the client
    /// writes a file itself (reject, delete), so the two never interleave.
    io: Arc<tokio::sync::Mutex<()>>,
    jobs: mpsc::UnboundedSender<Job>,
}

/// What a session's review holds that is not one file's: kept out of the
/// file records. Locked before the records when both are needed.
struct ReviewState {
    /// Files whose creation the user rejected and which may now be deleted.
    pending_deletes: HashSet<CanonicalPath>,
    workspace: Workspace,
    /// A prompt was sent in this session: its updates are live, not a replay.
    live: bool,
    /// When the session's first prompt was sent: an empty directory born
    /// since then held only what the agent created.
    first_turn: Option<SystemTime>,
    /// Directories `fs/write_text_file` created for the agent's files.
    made_dirs: HashSet<PathBuf>,
    /// Each turn's text of the files the agent touched, for a rewind.
    checkpoints: Checkpoints,
}

/// Work for a session's worker task, done in the order it was sent.
enum Job {
    /// A prompt is being sent, at this time.
    TurnStarted(SystemTime, TurnNumber),
    Mention(Vec<PathBuf>),
    Completed(Vec<ToolDiff>),
    TurnEnded,
    Barrier(oneshot::Sender<()>),
}

impl Drop for SessionReview {
    /// The session's files leave review with it (its worker, if still
    /// finishing a job, clears what that job recorded when it ends).
    fn drop(&mut self) {
        self.files.end();
    }
}

impl Reviews {
    pub(crate) fn new(events: EventSink, host: Arc<dyn EditorHost>, max_read_bytes: usize) -> Self {
        let records = host
            .buffer_sync()
            .map_or_else(Default::default, |sync| sync.records());
        Self {
            sessions: Mutex::new(HashMap::new()),
            records,
            events,
            host,
            max_read_bytes,
        }
    }

    fn get(&self, session_id: &SessionId) -> Option<Arc<SessionReview>> {
        self.sessions.lock().get(session_id).cloned()
    }

    /// The session's review, created (with its worker) on first use.
    fn get_or_start(&self, session_id: &SessionId, workspace: &Workspace) -> Arc<SessionReview> {
        let mut sessions = self.sessions.lock();
        if let Some(review) = sessions.get(session_id) {
            review.state.lock().workspace = workspace.clone();
            return review.clone();
        }
        let files = ReviewFiles::start(self.records.clone());
        let state = Arc::new(Mutex::new(ReviewState {
            pending_deletes: HashSet::new(),
            workspace: workspace.clone(),
            live: false,
            first_turn: None,
            made_dirs: HashSet::new(),
            checkpoints: Checkpoints::new(),
        }));
        let io = Arc::new(tokio::sync::Mutex::new(()));
        let (jobs_tx, jobs_rx) = mpsc::unbounded_channel();
        // Ends when the session's review is dropped (its job sender with it).
        Worker::spawn(
            self,
            session_id.clone(),
            state.clone(),
            files.clone(),
            io.clone(),
            jobs_rx,
        );
        let review = Arc::new(SessionReview {
            state,
            files,
            io,
            jobs: jobs_tx,
        });
        sessions.insert(session_id.clone(), review.clone());
        review
    }

    /// Forgets a closed session: its worker stops and its watches go.
    pub(crate) fn remove(&self, session_id: &SessionId) {
        // Dropped out of the sessions' lock: its files leave the records.
        let review = self.sessions.lock().remove(session_id);
        drop(review);
    }

    /// True when the session's tool call updates are tracked.
    pub(crate) fn is_live(&self, session_id: &SessionId) -> bool {
        self.get(session_id).is_some_and(|r| r.state.lock().live)
    }

    /// A prompt is about to be sent: watch the files the turn touches, and
    /// begin its checkpoint (`label`: the prompt's first line; `earlier`:
    /// the session's prompts before it, replayed ones included, which the
    /// turn is numbered after at least).
    pub(crate) fn turn_started(
        &self,
        session_id: &SessionId,
        workspace: &Workspace,
        label: &str,
        earlier: usize,
    ) {
        let review = self.get_or_start(session_id, workspace);
        let now = SystemTime::now();
        let turn = {
            let mut st = review.state.lock();
            st.live = true;
            st.first_turn.get_or_insert(now);
            st.checkpoints
                .continue_after(u32::try_from(earlier).unwrap_or(u32::MAX));
            st.checkpoints.begin_turn(label, now)
        };
        let _ = review.jobs.send(Job::TurnStarted(now, turn));
    }

    /// The prompt ended (answered, failed or dropped).
    pub(crate) fn turn_ended(&self, session_id: &SessionId) {
        if let Some(review) = self.get(session_id) {
            let _ = review.jobs.send(Job::TurnEnded);
        }
    }

    /// Every file under review in the session.
    fn files(&self, session_id: &SessionId) -> Vec<FileSummary> {
        self.get(session_id)
            .map(|r| r.files.lock().files())
            .unwrap_or_default()
    }

    /// Whether the file has changes under review.
    fn contains(&self, session_id: &SessionId, path: &CanonicalPath) -> bool {
        self.get(session_id)
            .is_some_and(|r| r.files.lock().contains(path))
    }

    /// One file's review.
    fn file(&self, session_id: &SessionId, path: &CanonicalPath) -> Option<FileReview> {
        self.get(session_id)
            .and_then(|r| r.files.lock().review(path))
    }
}
