//! Feeding agent edits into review: one [`EditTracker`] per session, fed from
//! the three places an edit shows up, and the decisions (accept, reject)
//! applied back to buffers and disk.
//!
//! Sources, in the order of how much they tell:
//!
//! 1. `fs/write_text_file`: old and new content, recorded at once by the
//!    request handler ([`Reviews::record_fs_write`]).
//! 2. Tool calls with `diff` content that reach `completed`: the file on
//!    disk is read and [`EditTracker::record_tool_diff`] places the diff;
//!    a snapshot taken when the file was first mentioned covers
//!    claude-agent-acp's `Write`, which sends `oldText: null` also when it
//!    overwrites a file.
//! 3. Disk changes with no diff at all (an agent running `sed -i`, or one
//!    that reports only `locations`): every file a tool call mentions during
//!    a turn is snapshotted (files up to [`SNAPSHOT_MAX_BYTES`], inside the
//!    workspace) and its directory watched (not recursively); a change,
//!    debounced, is recorded against the last known content. At the end of
//!    the turn every mentioned file is checked once more, then the watches
//!    are dropped.
//!
//! A snapshot taken when the tool call arrives is too late for an agent
//! that writes right after announcing the edit (or announces it after
//! writing): the disk already holds the new text. So the editor is asked
//! too ([`EditorHost::text_before_turn`]): the copy of the file's buffer it
//! took when the prompt was sent is the "before", if the file changed on
//! disk during the turn (a buffer that was stale before the prompt is not
//! believed: its difference is not the agent's).
//!
//! All disk reads happen in one worker task per session, never in the
//! connection's read loop; one task also keeps the order of events per path.
//! Updates are only tracked once the session had a prompt on this
//! connection, so a `session/load` replay does not put old edits under
//! review.
//!
//! Writes the client makes itself (rejects, deletes) first set the "last
//! known content" of the file, under the same lock the worker holds while it
//! reads and records, so the watcher never takes them for agent edits.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::Mutex;

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

mod handle;

pub use handle::Review;

use crate::error::{Error, Result};
use crate::fs::{self, Workspace};
use crate::host::{ClientEvent, EditorHost, EventSink, WriteOutcome, WriteTextFile};
use crate::review::{
    missing_file, EditTracker, FileRejection, FileReview, FileStatus, FileSummary, HunkId,
    RejectOutcome, ToolDiffPlacement,
};
use crate::schema::ToolCallLocation;
use crate::session::ToolCallState;
use crate::update::{SessionId, ToolCallFields, ToolContent, ToolKind};

/// Quiet time after the last change of a watched file before it is read:
/// editors and agents often write a file in several steps.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// Largest file snapshotted when a tool call mentions it: every mentioned
/// file of a turn is held in memory (twice), and agents mention every file
/// they read. Bigger files are reviewed only through the diffs of tool calls.
pub(crate) const SNAPSHOT_MAX_BYTES: usize = 8 * 1024 * 1024;

/// How long the worker waits for the editor's copy of a file: a hung editor
/// must not stall the tracking of the session.
const HOST_TIMEOUT: Duration = Duration::from_secs(5);

/// Slack for file times: filesystems stamp a write with a coarse clock
/// (Linux: the timer tick; 1 s on ext3 and HFS+, 2 s on FAT), so a write
/// right after the prompt can carry a time a little before it.
const MTIME_SLACK: Duration = Duration::from_secs(2);
/// How far a file's modification time can lag the precise clock (the
/// kernel stamps files with a clock that advances once per tick).
const COARSE_CLOCK: Duration = Duration::from_millis(20);

/// One `diff` item of a completed tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolDiff {
    path: PathBuf,
    old_text: Option<String>,
    new_text: String,
}

/// What a tool call says about files: the paths it mentions, and its diffs
/// when it just completed. Built under the session lock, used without it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct ToolFacts {
    mentioned: Vec<PathBuf>,
    diffs: Vec<ToolDiff>,
}

impl ToolFacts {
    /// The facts of a tool call's merged state; `completed` when the update
    /// that was just applied set the status `completed`.
    pub(crate) fn of_state(tool_call: &ToolCallState, completed: bool) -> Self {
        Self::collect(
            Some(&tool_call.kind),
            &tool_call.content,
            &tool_call.locations,
            tool_call.raw_input.as_ref(),
            completed,
        )
    }

    /// The paths a permission request's tool call mentions (no diffs: the
    /// edit has not happened yet).
    pub(crate) fn of_fields(fields: &ToolCallFields) -> Self {
        Self::collect(
            fields.kind.as_ref(),
            fields.content.as_deref().unwrap_or_default(),
            fields.locations.as_deref().unwrap_or_default(),
            fields.raw_input.as_ref(),
            false,
        )
    }

    fn collect(
        kind: Option<&ToolKind>,
        content: &[ToolContent],
        locations: &[ToolCallLocation],
        raw_input: Option<&Value>,
        completed: bool,
    ) -> Self {
        let mut facts = Self::default();
        // These kinds name no files they could change (a search's `path` is
        // usually a directory); their diffs, if any, still count.
        let names_files = !matches!(
            kind,
            Some(ToolKind::Think | ToolKind::Fetch | ToolKind::SwitchMode | ToolKind::Search)
        );
        if names_files {
            facts
                .mentioned
                .extend(locations.iter().map(|l| l.path.clone()));
            if let Some(input) = raw_input {
                // claude-agent-acp's tools take `file_path`, others `path`.
                for key in ["path", "file_path", "filePath"] {
                    if let Some(p) = input.get(key).and_then(Value::as_str) {
                        facts.mentioned.push(PathBuf::from(p));
                    }
                }
            }
        }
        for item in content {
            if let ToolContent::Diff {
                path,
                old_text,
                new_text,
            } = item
            {
                facts.mentioned.push(path.clone());
                if completed {
                    facts.diffs.push(ToolDiff {
                        path: path.clone(),
                        old_text: old_text.clone(),
                        new_text: new_text.clone(),
                    });
                }
            }
        }
        let mut seen = HashSet::new();
        facts.mentioned.retain(|p| seen.insert(p.clone()));
        facts
    }

    fn is_empty(&self) -> bool {
        self.mentioned.is_empty() && self.diffs.is_empty()
    }
}

/// Which changes a decision covers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Target<'a> {
    /// One hunk of one file.
    Hunk(&'a Path, HunkId),
    /// Every change of one file.
    File(&'a Path),
    /// Every change of the session.
    All,
}

/// The review state of every session of a connection.
pub(crate) struct Reviews {
    sessions: Mutex<HashMap<SessionId, Arc<SessionReview>>>,
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

/// One session's tracker and the handle of its worker task.
struct SessionReview {
    state: Arc<Mutex<ReviewState>>,
    /// Held while a file is read and recorded (worker) and while the client
    /// writes a file itself (reject, delete), so the two never interleave.
    io: Arc<tokio::sync::Mutex<()>>,
    jobs: mpsc::UnboundedSender<Job>,
}

struct ReviewState {
    tracker: EditTracker,
    /// The content each file had when last seen (`None`: missing): on disk
    /// for files mentioned this turn, or as the client itself wrote it. A
    /// disk change is an agent edit only when it differs from this.
    known: HashMap<PathBuf, Option<String>>,
    /// Files whose creation the user rejected and which may now be deleted.
    pending_deletes: HashSet<PathBuf>,
    workspace: Workspace,
    /// A prompt was sent in this session: its updates are live, not a replay.
    live: bool,
    /// When the session's first prompt was sent: an empty directory born
    /// since then held only what the agent created.
    first_turn: Option<SystemTime>,
    /// Directories `fs/write_text_file` created for the agent's files.
    made_dirs: HashSet<PathBuf>,
}

enum Job {
    /// A prompt is being sent, at this time.
    TurnStarted(SystemTime),
    Mention(Vec<PathBuf>),
    Completed(Vec<ToolDiff>),
    TurnEnded,
    Barrier(oneshot::Sender<()>),
}

impl Reviews {
    pub(crate) fn new(events: EventSink, host: Arc<dyn EditorHost>, max_read_bytes: usize) -> Self {
        Self {
            sessions: Mutex::new(HashMap::new()),
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
        let state = Arc::new(Mutex::new(ReviewState {
            tracker: EditTracker::new(),
            known: HashMap::new(),
            pending_deletes: HashSet::new(),
            workspace: workspace.clone(),
            live: false,
            first_turn: None,
            made_dirs: HashSet::new(),
        }));
        let io = Arc::new(tokio::sync::Mutex::new(()));
        let (jobs_tx, jobs_rx) = mpsc::unbounded_channel();
        let (fs_tx, fs_rx) = mpsc::unbounded_channel();
        let worker = Worker {
            session_id: session_id.clone(),
            state: state.clone(),
            io: io.clone(),
            events: self.events.clone(),
            host: self.host.clone(),
            max_read_bytes: self.max_read_bytes,
            snapshots: HashMap::new(),
            turns: 0,
            turn_started: None,
            watch: None,
            changed: BTreeSet::new(),
            late: BTreeSet::new(),
            retried: BTreeSet::new(),
            deadline: None,
            fs_tx,
        };
        // Ends when the session's review is dropped (its job sender with it).
        tokio::spawn(worker.run(jobs_rx, fs_rx));
        let review = Arc::new(SessionReview {
            state,
            io,
            jobs: jobs_tx,
        });
        sessions.insert(session_id.clone(), review.clone());
        review
    }

    /// Forgets a closed session: its worker stops and its watches go.
    pub(crate) fn remove(&self, session_id: &SessionId) {
        self.sessions.lock().remove(session_id);
    }

    /// True when the session's tool call updates are tracked.
    pub(crate) fn is_live(&self, session_id: &SessionId) -> bool {
        self.get(session_id).is_some_and(|r| r.state.lock().live)
    }

    /// A prompt is about to be sent: watch the files the turn touches.
    pub(crate) fn turn_started(&self, session_id: &SessionId, workspace: &Workspace) {
        let review = self.get_or_start(session_id, workspace);
        let now = SystemTime::now();
        {
            let mut st = review.state.lock();
            st.live = true;
            st.first_turn.get_or_insert(now);
        }
        let _ = review.jobs.send(Job::TurnStarted(now));
    }

    /// The prompt ended (answered, failed or dropped).
    pub(crate) fn turn_ended(&self, session_id: &SessionId) {
        if let Some(review) = self.get(session_id) {
            let _ = review.jobs.send(Job::TurnEnded);
        }
    }

    /// A tool call update was applied. Queues work; never blocks.
    pub(crate) fn on_tool_call(&self, session_id: &SessionId, facts: ToolFacts) {
        let Some(review) = self.get(session_id) else {
            return;
        };
        if !review.state.lock().live || facts.is_empty() {
            return;
        }
        if !facts.mentioned.is_empty() {
            let _ = review.jobs.send(Job::Mention(facts.mentioned));
        }
        if !facts.diffs.is_empty() {
            let _ = review.jobs.send(Job::Completed(facts.diffs));
        }
    }

    /// Before the user is asked to allow a tool call, the files it names are
    /// snapshotted and watched: agents that ask first (Claude) cannot have
    /// written them yet, so the snapshot is the true "before".
    pub(crate) async fn before_permission(&self, session_id: &SessionId, facts: ToolFacts) {
        let Some(review) = self.get(session_id) else {
            return;
        };
        if !review.state.lock().live || facts.mentioned.is_empty() {
            return;
        }
        let (tx, rx) = oneshot::channel();
        let _ = review.jobs.send(Job::Mention(facts.mentioned));
        let _ = review.jobs.send(Job::Barrier(tx));
        // An error means the worker is gone: nothing to wait for.
        let _ = rx.await;
    }

    /// The agent wrote `path` through `fs/write_text_file`.
    pub(crate) fn record_fs_write(
        &self,
        session_id: &SessionId,
        workspace: &Workspace,
        path: &Path,
        old: Option<&str>,
        new: &str,
    ) {
        let review = self.get_or_start(session_id, workspace);
        let change = {
            let mut st = review.state.lock();
            st.known.insert(path.to_owned(), Some(new.to_owned()));
            observe(&mut st.tracker, path, |t| {
                t.record_write(path, old, new);
            })
            .1
        };
        emit(&self.events, session_id, change);
    }

    /// `fs/write_text_file` created these directories for the agent.
    pub(crate) fn record_made_dirs(
        &self,
        session_id: &SessionId,
        workspace: &Workspace,
        dirs: Vec<PathBuf>,
    ) {
        if dirs.is_empty() {
            return;
        }
        let review = self.get_or_start(session_id, workspace);
        review.state.lock().made_dirs.extend(dirs);
    }

    /// Every file under review in the session.
    pub(crate) fn files(&self, session_id: &SessionId) -> Vec<FileSummary> {
        self.get(session_id)
            .map(|r| r.state.lock().tracker.files())
            .unwrap_or_default()
    }

    /// One file's review; `path` is already resolved.
    pub(crate) fn file(&self, session_id: &SessionId, path: &Path) -> Option<FileReview> {
        self.get(session_id)
            .and_then(|r| r.state.lock().tracker.review(path))
    }

    /// Accepts changes; returns the files that changed state.
    pub(crate) fn accept(
        &self,
        session_id: &SessionId,
        target: Target<'_>,
    ) -> Result<Vec<PathBuf>> {
        match target {
            Target::Hunk(path, id) => {
                self.decide_file(session_id, path, |t| t.accept_hunk(path, id))
            }
            Target::File(path) => self.decide_file(session_id, path, |t| t.accept_file(path)),
            Target::All => {
                let Some(review) = self.get(session_id) else {
                    return Ok(Vec::new());
                };
                let before = {
                    let mut st = review.state.lock();
                    let before = st.tracker.files();
                    st.tracker.accept_all();
                    before
                };
                let paths = before.iter().map(|f| f.path.clone()).collect();
                for f in before {
                    emit(&self.events, session_id, Some(settled(&f.path, f.status)));
                }
                Ok(paths)
            }
        }
    }

    /// Accepts lines of a file's current content (see
    /// [`EditTracker::accept_lines`]).
    pub(crate) fn accept_lines(
        &self,
        session_id: &SessionId,
        path: &Path,
        start: usize,
        end: usize,
    ) -> Result<()> {
        self.decide_file(session_id, path, |t| t.accept_lines(path, start, end))
            .map(drop)
    }

    /// Applies one file's decision to the tracker and reports the change;
    /// returns the file when its state changed.
    fn decide_file(
        &self,
        session_id: &SessionId,
        path: &Path,
        decide: impl FnOnce(&mut EditTracker) -> Result<()>,
    ) -> Result<Vec<PathBuf>> {
        let review = self.get(session_id).ok_or_else(|| missing_file(path))?;
        let (result, change) = observe(&mut review.state.lock().tracker, path, decide);
        result?;
        let paths = change.iter().map(|c| c.path.clone()).collect();
        emit(&self.events, session_id, change);
        Ok(paths)
    }

    /// Rejects changes and writes the restored content (through the editor
    /// first, else atomically to disk). `Delete` outcomes are returned for
    /// the caller to confirm. If a write fails, that file's review is put
    /// back as it was and the first error is returned.
    pub(crate) async fn reject(
        &self,
        host: &dyn EditorHost,
        session_id: &SessionId,
        target: Target<'_>,
    ) -> Result<Vec<FileRejection>> {
        let Some(review) = self.get(session_id) else {
            return match target {
                Target::All => Ok(Vec::new()),
                Target::Hunk(path, _) | Target::File(path) => Err(missing_file(path)),
            };
        };
        let _io = review.io.lock().await;
        let (rejections, befores, changes) = {
            let mut st = review.state.lock();
            let befores: Vec<FileReview> = match target {
                Target::Hunk(path, _) | Target::File(path) => {
                    st.tracker.review(path).into_iter().collect()
                }
                Target::All => st
                    .tracker
                    .files()
                    .iter()
                    .filter_map(|f| st.tracker.review(&f.path))
                    .collect(),
            };
            let rejections = match target {
                Target::Hunk(path, id) => vec![FileRejection {
                    path: path.to_owned(),
                    outcome: st.tracker.reject_hunk(path, id)?,
                }],
                Target::File(path) => vec![FileRejection {
                    path: path.to_owned(),
                    outcome: st.tracker.reject_file(path)?,
                }],
                Target::All => st.tracker.reject_all(),
            };
            let mut changes = Vec::new();
            for r in &rejections {
                match &r.outcome {
                    RejectOutcome::Write { content } => {
                        st.known.insert(r.path.clone(), Some(content.clone()));
                    }
                    RejectOutcome::Delete => {
                        st.pending_deletes.insert(r.path.clone());
                    }
                }
                let status = befores
                    .iter()
                    .find(|b| b.path == r.path)
                    .map_or(FileStatus::Modified, |b| b.status);
                changes.push(
                    st.tracker
                        .summary(&r.path)
                        .unwrap_or_else(|| settled(&r.path, status)),
                );
            }
            (rejections, befores, changes)
        };
        for change in changes {
            emit(&self.events, session_id, Some(change));
        }
        let mut first_error = None;
        for r in &rejections {
            let RejectOutcome::Write { content } = &r.outcome else {
                continue;
            };
            if let Err(e) = write_content(host, session_id, &r.path, content).await {
                tracing::warn!(path = %r.path.display(), error = %e, "could not write the rejected file; its review is kept");
                if let Some(before) = befores.iter().find(|b| b.path == r.path) {
                    let change = {
                        let mut st = review.state.lock();
                        st.known.insert(r.path.clone(), before.current.clone());
                        restore(&mut st.tracker, before)
                    };
                    emit(&self.events, session_id, change);
                }
                first_error.get_or_insert(e);
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(rejections),
        }
    }

    /// Deletes a file whose creation the user rejected.
    pub(crate) async fn delete_rejected(&self, session_id: &SessionId, path: &Path) -> Result<()> {
        let Some(review) = self.get(session_id) else {
            return Err(not_rejected(path));
        };
        let _io = review.io.lock().await;
        {
            let mut st = review.state.lock();
            if !st.pending_deletes.contains(path) {
                return Err(not_rejected(path));
            }
            if st.tracker.contains(path) {
                return Err(Error::NotFound(format!(
                    "`{}` has new agent edits under review since its creation was rejected; review them first",
                    path.display()
                )));
            }
            st.pending_deletes.remove(path);
            st.known.insert(path.to_owned(), None);
        }
        let meta = match tokio::fs::symlink_metadata(path).await {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                return Err(Error::FileIo {
                    path: path.to_owned(),
                    action: "delete",
                    source,
                })
            }
        };
        if !meta.is_file() {
            return Err(Error::NotRegularFile {
                path: path.to_owned(),
                what: if meta.is_dir() {
                    "directory"
                } else if meta.file_type().is_symlink() {
                    "symbolic link"
                } else {
                    "special file"
                },
            });
        }
        tokio::fs::remove_file(path)
            .await
            .map_err(|source| Error::FileIo {
                path: path.to_owned(),
                action: "delete",
                source,
            })?;
        let (roots, first_turn, made) = {
            let st = review.state.lock();
            (
                st.workspace.roots().to_vec(),
                st.first_turn,
                st.made_dirs.clone(),
            )
        };
        remove_made_dirs(path, &roots, first_turn, &made).await;
        Ok(())
    }

    /// The user changed a file under review (`None`: deleted it).
    pub(crate) fn record_user_edit(
        &self,
        session_id: &SessionId,
        path: &Path,
        content: Option<&str>,
    ) -> Option<FileSummary> {
        let review = self.get(session_id)?;
        let (summary, change) = {
            let mut st = review.state.lock();
            if let Some(known) = st.known.get_mut(path) {
                // The user's save must not look like the agent's edit.
                *known = content.map(str::to_owned);
            }
            let (_, change) = observe(&mut st.tracker, path, |t| {
                t.record_user_edit(path, content);
            });
            (st.tracker.summary(path), change)
        };
        emit(&self.events, session_id, change);
        summary
    }
}

/// Runs `f` on the tracker and reports the file's new summary when its
/// review changed (a settled summary with no hunks when it left review).
fn observe<R>(
    tracker: &mut EditTracker,
    path: &Path,
    f: impl FnOnce(&mut EditTracker) -> R,
) -> (R, Option<FileSummary>) {
    let before = tracker.review(path);
    let result = f(tracker);
    let after = tracker.review(path);
    if before == after {
        return (result, None);
    }
    let status = before.map_or(FileStatus::Modified, |b| b.status);
    let summary = tracker
        .summary(path)
        .unwrap_or_else(|| settled(path, status));
    (result, Some(summary))
}

/// The summary of a file with nothing left to review.
fn settled(path: &Path, status: FileStatus) -> FileSummary {
    FileSummary {
        path: path.to_owned(),
        status,
        hunks: 0,
        added: 0,
        removed: 0,
        first_line: None,
    }
}

/// Puts a file's review back as it was before a reject that could not be
/// written (its hunks get new ids).
fn restore(tracker: &mut EditTracker, before: &FileReview) -> Option<FileSummary> {
    observe(tracker, &before.path, |t| {
        t.forget(&before.path);
        match (&before.baseline, &before.current) {
            (old, Some(current)) => {
                t.record_write(&before.path, old.as_deref(), current);
            }
            (Some(old), None) => {
                t.record_delete(&before.path, old);
            }
            (None, None) => {}
        }
    })
    .1
}

fn emit(events: &EventSink, session_id: &SessionId, change: Option<FileSummary>) {
    if let Some(file) = change {
        events(ClientEvent::ReviewChanged {
            session_id: session_id.clone(),
            file,
        });
    }
}

/// Removes the directories above a deleted file that the agent created
/// for it and that are empty now (a rejected `src/new/mod.rs` leaves no
/// `src/new/`): made by `fs/write_text_file`, or born after the session's
/// first prompt (the agent's own tools made them). Never a workspace root
/// or anything outside one; a directory it cannot tell about stays.
/// How much earlier than the first prompt a directory's birth time may
/// read and still be the agent's (see `remove_made_dirs`).
const BIRTH_SLACK: Duration = Duration::from_millis(500);

async fn remove_made_dirs(
    path: &Path,
    roots: &[PathBuf],
    first_turn: Option<SystemTime>,
    made: &HashSet<PathBuf>,
) {
    for dir in path.ancestors().skip(1) {
        let inside = roots.iter().any(|r| dir.starts_with(r) && dir != r);
        if !inside {
            return;
        }
        let agents = made.contains(dir)
            || match (tokio::fs::metadata(dir).await, first_turn) {
                // File times come from the kernel's coarse clock, which
                // lags `SystemTime::now` by up to a tick.
                (Ok(meta), Some(since)) => {
                    meta.created().is_ok_and(|born| born + BIRTH_SLACK >= since)
                }
                _ => false,
            };
        // remove_dir refuses a directory that is not empty.
        if !agents || tokio::fs::remove_dir(dir).await.is_err() {
            return;
        }
        tracing::debug!(dir = %dir.display(), "removed the empty directory the agent created");
    }
}

fn not_rejected(path: &Path) -> Error {
    Error::NotFound(format!(
        "`{}` is not a file whose creation was rejected; only such files can be deleted through review",
        path.display()
    ))
}

/// Writes restored content through the editor (a buffer-aware editor
/// updates its buffer), or atomically to disk when it has none.
async fn write_content(
    host: &dyn EditorHost,
    session_id: &SessionId,
    path: &Path,
    content: &str,
) -> Result<()> {
    let request = WriteTextFile {
        session_id: session_id.clone(),
        path: path.to_owned(),
        content: content.to_owned(),
    };
    match host.write_text_file(&request).await? {
        WriteOutcome::Handled { .. } => Ok(()),
        WriteOutcome::NotHandled | WriteOutcome::KeptUnsaved { .. } => {
            fs::write_text_file_atomic(path, content).await.map(drop)
        }
    }
}

/// A file's content on disk, as far as review cares.
enum Disk {
    /// Text, or `None` when there is no such file.
    Known(Option<String>),
    /// A directory, binary, huge or unreadable file: not reviewed.
    Unreadable,
}

async fn read_disk(path: &Path, max_bytes: usize) -> Disk {
    match fs::read_text_file(path, None, None, max_bytes).await {
        Ok(text) => Disk::Known(Some(text)),
        Err(Error::NotFound(_)) => Disk::Known(None),
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "not reviewing a file that cannot be read as text");
            Disk::Unreadable
        }
    }
}

/// A change the file watcher saw.
enum FsSignal {
    Changed(PathBuf),
    /// Events were lost (queue overflow): check every watched file.
    Rescan,
}

/// The watcher and what it watches: directories (refcounted) for files.
struct Watch {
    watcher: RecommendedWatcher,
    files: HashSet<PathBuf>,
    dirs: HashMap<PathBuf, usize>,
}

/// One session's task: snapshots, tool diffs, watched files, in order.
struct Worker {
    session_id: SessionId,
    state: Arc<Mutex<ReviewState>>,
    io: Arc<tokio::sync::Mutex<()>>,
    events: EventSink,
    host: Arc<dyn EditorHost>,
    max_read_bytes: usize,
    /// Content of each file when first mentioned in the current turn.
    snapshots: HashMap<PathBuf, Option<String>>,
    /// Prompts in flight.
    turns: usize,
    /// When the first of the prompts in flight (or the last one) was sent.
    turn_started: Option<SystemTime>,
    watch: Option<Watch>,
    /// Watched files changed since the debounce timer started.
    changed: BTreeSet<PathBuf>,
    /// Changed files found empty once, read again after another debounce.
    retried: BTreeSet<PathBuf>,
    /// Files found empty at their first mention, emptied during the turn,
    /// with no editor copy: their "before" is lost, and the empty text may
    /// be half a write. Snapshotted when the debounce fires instead.
    late: BTreeSet<PathBuf>,
    deadline: Option<Instant>,
    fs_tx: mpsc::UnboundedSender<FsSignal>,
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

impl Worker {
    async fn run(
        mut self,
        mut jobs: mpsc::UnboundedReceiver<Job>,
        mut fs_rx: mpsc::UnboundedReceiver<FsSignal>,
    ) {
        loop {
            let deadline = self.deadline;
            tokio::select! {
                job = jobs.recv() => match job {
                    Some(job) => self.handle(job).await,
                    None => break,
                },
                Some(signal) = fs_rx.recv() => self.on_fs(signal),
                () = sleep_until(deadline) => {
                    self.deadline = None;
                    let paths = std::mem::take(&mut self.changed);
                    let _io = self.io.clone().lock_owned().await;
                    for path in std::mem::take(&mut self.late) {
                        self.late_snapshot(path).await;
                    }
                    let retried = std::mem::take(&mut self.retried);
                    for path in paths {
                        if !retried.contains(&path) && self.emptied(&path).await {
                            // Most likely an in-place rewrite between its
                            // truncation and its write (a busy machine can
                            // stall a writer past the debounce): look again.
                            self.retried.insert(path.clone());
                            self.changed.insert(path);
                            self.deadline = Some(Instant::now() + DEBOUNCE);
                            continue;
                        }
                        self.check_disk(&path).await;
                    }
                }
            }
        }
    }

    async fn handle(&mut self, job: Job) {
        let _io = self.io.clone().lock_owned().await;
        match job {
            Job::TurnStarted(at) => {
                self.turns += 1;
                if self.turns == 1 {
                    self.turn_started = Some(at);
                    self.snapshots.clear();
                    self.late.clear();
                    self.state.lock().known.clear();
                }
            }
            Job::Mention(paths) => {
                for path in paths {
                    self.mention(path).await;
                }
            }
            Job::Completed(diffs) => {
                for diff in diffs {
                    self.record_diff(diff).await;
                }
            }
            Job::TurnEnded => {
                self.turns = self.turns.saturating_sub(1);
                if self.turns == 0 {
                    // Changes the debounce has not delivered yet, and files
                    // that could not be watched, are read now.
                    let paths: Vec<PathBuf> = self.snapshots.keys().cloned().collect();
                    for path in paths {
                        self.check_disk(&path).await;
                    }
                    self.watch = None;
                    self.changed.clear();
                    // Their "before" is unknown and they were not seen again.
                    self.late.clear();
                    self.retried.clear();
                    self.deadline = None;
                }
            }
            Job::Barrier(done) => {
                let _ = done.send(());
            }
        }
    }

    async fn resolve(&self, path: PathBuf) -> Option<PathBuf> {
        let workspace = self.state.lock().workspace.clone();
        let resolved = tokio::task::spawn_blocking(move || workspace.resolve(&path)).await;
        match resolved {
            Ok(Ok(path)) => Some(path),
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "not reviewing a path the agent mentioned");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "resolving a mentioned path failed");
                None
            }
        }
    }

    /// First mention in a turn: snapshot, and watch while a turn runs.
    async fn mention(&mut self, raw: PathBuf) {
        let Some(path) = self.resolve(raw).await else {
            return;
        };
        if !self.snapshots.contains_key(&path) && !self.late.contains(&path) {
            let Disk::Known(disk) = read_disk(&path, self.snapshot_limit()).await else {
                return;
            };
            let before = self.text_before_turn(&path, &disk).await;
            if before.is_none()
                && disk.as_deref() == Some("")
                && self.written_this_turn(&path).await
            {
                // Emptied during the turn: likely an in-place rewrite caught
                // between its truncation and its write (seen with a fake
                // agent that truncates, announces, then writes). An empty
                // "before" would make a reject empty the file.
                self.late.insert(path.clone());
                self.deadline = Some(Instant::now() + DEBOUNCE);
                if self.turns > 0 {
                    self.watch(&path);
                }
                return;
            }
            let changed = before.is_some();
            self.snapshot(&path, before.map_or(disk, Some));
            if changed {
                // Written before we looked: no watcher event will report it.
                // Read it after the debounce, not now: an agent rewriting
                // the file in place (truncate, then write) may be half way,
                // and an empty file would be recorded as its edit.
                self.changed.insert(path.clone());
                self.deadline = Some(Instant::now() + DEBOUNCE);
            }
        }
        if self.turns > 0 {
            self.watch(&path);
        }
    }

    /// Whether a file whose last known text is not empty is empty now.
    async fn emptied(&self, path: &Path) -> bool {
        let known_empty = match self.state.lock().known.get(path) {
            Some(Some(text)) => text.is_empty(),
            _ => true,
        };
        !known_empty
            && tokio::fs::metadata(path)
                .await
                .is_ok_and(|m| m.is_file() && m.len() == 0)
    }

    /// Whether the file was modified after the prompt was sent (before
    /// its first mention, when this is asked).
    async fn written_this_turn(&self, path: &Path) -> bool {
        let Some(started) = self.turn_started else {
            return false;
        };
        let modified = tokio::fs::metadata(path)
            .await
            .ok()
            .and_then(|m| m.modified().ok());
        // File times come from the kernel's coarse clock, a tick behind the
        // precise one the turn's start was read from.
        modified.is_some_and(|m| m + COARSE_CLOCK >= started)
    }

    /// The snapshot of a file the agent was writing when first mentioned
    /// (see `late`): its text once the writes settled, against which its
    /// later edits are reviewed. The edit before it is not reviewed.
    async fn late_snapshot(&mut self, path: PathBuf) {
        if self.snapshots.contains_key(&path) {
            return;
        }
        let Disk::Known(content) = read_disk(&path, self.snapshot_limit()).await else {
            return;
        };
        tracing::debug!(path = %path.display(), "written before its first mention: reviewing its later edits only");
        self.snapshot(&path, content);
    }

    /// The largest file snapshotted.
    fn snapshot_limit(&self) -> usize {
        self.max_read_bytes.min(SNAPSHOT_MAX_BYTES)
    }

    /// `content` is the file's "before" for this turn and its last known
    /// text.
    fn snapshot(&mut self, path: &Path, content: Option<String>) {
        self.state
            .lock()
            .known
            .insert(path.to_owned(), content.clone());
        self.snapshots.insert(path.to_owned(), content);
    }

    /// The editor's copy of `path` from when the prompt was sent, when it
    /// is the file's true "before" (see [`editor_baseline`]).
    async fn text_before_turn(&self, path: &Path, disk: &Option<String>) -> Option<String> {
        disk.as_ref()?;
        let asked = tokio::time::timeout(
            HOST_TIMEOUT,
            self.host.text_before_turn(&self.session_id, path),
        )
        .await;
        let editor = match asked {
            Ok(Ok(text)) => text?,
            Ok(Err(e)) => {
                tracing::debug!(path = %path.display(), error = %e, "the editor could not give the file's text from the prompt");
                return None;
            }
            Err(_) => {
                tracing::warn!(path = %path.display(), "the editor did not give the file's text from the prompt in time; using the disk");
                return None;
            }
        };
        if disk.as_deref() == Some(editor.as_str()) {
            return None;
        }
        let modified = tokio::fs::metadata(path)
            .await
            .ok()
            .and_then(|m| m.modified().ok());
        let chosen = editor_baseline(Some(editor), disk, modified, self.turn_started);
        if chosen.is_none() {
            tracing::debug!(path = %path.display(), "the editor's buffer was older than the file before the prompt; using the disk");
        }
        chosen
    }

    fn watch(&mut self, path: &Path) {
        if self.watch.as_ref().is_some_and(|w| w.files.contains(path)) {
            return;
        }
        let Some(dir) = path.parent() else {
            return;
        };
        if self.watch.is_none() {
            let tx = self.fs_tx.clone();
            let handler = move |result: notify::Result<notify::Event>| match result {
                Ok(event) if event.need_rescan() => {
                    let _ = tx.send(FsSignal::Rescan);
                }
                Ok(event) if !matches!(event.kind, EventKind::Access(_)) => {
                    for path in event.paths {
                        let _ = tx.send(FsSignal::Changed(path));
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "file watcher error; rechecking watched files");
                    let _ = tx.send(FsSignal::Rescan);
                }
            };
            match notify::recommended_watcher(handler) {
                Ok(watcher) => {
                    self.watch = Some(Watch {
                        watcher,
                        files: HashSet::new(),
                        dirs: HashMap::new(),
                    })
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch files; edits without a diff are only seen at the end of the turn");
                    return;
                }
            }
        }
        let Some(watch) = self.watch.as_mut() else {
            return;
        };
        let count = watch.dirs.get(dir).copied().unwrap_or(0);
        if count == 0 {
            if let Err(e) = watch.watcher.watch(dir, RecursiveMode::NonRecursive) {
                tracing::debug!(dir = %dir.display(), error = %e, "cannot watch directory; its files are checked at the end of the turn");
                return;
            }
        }
        watch.dirs.insert(dir.to_owned(), count + 1);
        watch.files.insert(path.to_owned());
    }

    fn on_fs(&mut self, signal: FsSignal) {
        let Some(watch) = &self.watch else {
            return;
        };
        match signal {
            FsSignal::Changed(path) if watch.files.contains(&path) => {
                self.changed.insert(path);
            }
            FsSignal::Changed(_) => return,
            FsSignal::Rescan => self.changed.extend(watch.files.iter().cloned()),
        }
        self.deadline = Some(Instant::now() + DEBOUNCE);
    }

    /// Records a disk change of a mentioned file against its last known
    /// content.
    async fn check_disk(&mut self, path: &Path) {
        let Disk::Known(now) = read_disk(path, self.max_read_bytes).await else {
            return;
        };
        let change = {
            let mut st = self.state.lock();
            let Some(before) = st.known.get(path).cloned() else {
                return;
            };
            if before == now {
                return;
            }
            st.known.insert(path.to_owned(), now.clone());
            observe(&mut st.tracker, path, |t| match (&before, &now) {
                (_, Some(new)) => {
                    t.record_write(path, before.as_deref(), new);
                }
                (Some(old), None) => {
                    t.record_delete(path, old);
                }
                (None, None) => {}
            })
            .1
        };
        emit(&self.events, &self.session_id, change);
    }

    /// A completed tool call's diff: the disk shows the edit now.
    async fn record_diff(&mut self, diff: ToolDiff) {
        let Some(path) = self.resolve(diff.path).await else {
            return;
        };
        let Disk::Known(now) = read_disk(&path, self.max_read_bytes).await else {
            return;
        };
        let snapshot = self.snapshots.get(&path).cloned();
        let change = {
            let mut st = self.state.lock();
            st.known.insert(path.clone(), now.clone());
            observe(&mut st.tracker, &path, |t| {
                record_diff(
                    t,
                    &path,
                    diff.old_text.as_deref(),
                    &diff.new_text,
                    snapshot,
                    now.as_deref(),
                )
            })
            .1
        };
        emit(&self.events, &self.session_id, change);
    }
}

/// Whether the editor's copy of a file from when the prompt was sent is the
/// file's "before": only when it differs from the disk and the disk changed
/// during the turn. A buffer that differs from a file not written since
/// before the prompt was stale (the editor had not reloaded it yet): the
/// difference is not the agent's.
fn editor_baseline(
    editor: Option<String>,
    disk: &Option<String>,
    modified: Option<SystemTime>,
    turn_started: Option<SystemTime>,
) -> Option<String> {
    let editor = editor?;
    // A file that is gone cannot say when it went.
    let disk = disk.as_deref()?;
    if editor == disk {
        return None;
    }
    let (modified, started) = (modified?, turn_started?);
    (modified + MTIME_SLACK >= started).then_some(editor)
}

/// Places one tool call diff, falling back to the snapshot taken when the
/// file was first mentioned.
fn record_diff(
    tracker: &mut EditTracker,
    path: &Path,
    old_text: Option<&str>,
    new_text: &str,
    snapshot: Option<Option<String>>,
    on_disk: Option<&str>,
) {
    if !tracker.contains(path) && old_text.is_none() {
        // claude-agent-acp's `Write` says `oldText: null` also when it
        // replaces a file: a snapshot showing the file existed wins. A
        // snapshot equal to the new content was taken too late to tell.
        if let (Some(Some(before)), Some(now)) = (&snapshot, on_disk) {
            if before != now {
                tracker.record_write(path, Some(before), now);
                return;
            }
        }
    }
    let placement = tracker.record_tool_diff(path, old_text, new_text, on_disk);
    if placement == ToolDiffPlacement::NotPlaced && !tracker.contains(path) {
        if let (Some(before), Some(now)) = (snapshot, on_disk) {
            tracker.record_write(path, before.as_deref(), now);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(v: Value) -> ToolCallFields {
        crate::update::decode_tool_call_fields(&v).unwrap()
    }

    #[test]
    fn facts_collect_locations_diffs_and_raw_input_paths_once() {
        let f = fields(json!({
            "toolCallId": "t1", "kind": "edit",
            "locations": [{"path": "/w/a.rs"}],
            "content": [{"type": "diff", "path": "/w/a.rs", "oldText": "x", "newText": "y"}],
            "rawInput": {"file_path": "/w/b.rs"}
        }));
        let facts = ToolFacts::of_fields(&f);
        assert_eq!(
            facts.mentioned,
            vec![PathBuf::from("/w/a.rs"), PathBuf::from("/w/b.rs")]
        );
        // Diffs only count once the tool call completed.
        assert!(facts.diffs.is_empty());
        let mut state = ToolCallState::placeholder("t1".into());
        state.apply(f);
        let done = ToolFacts::of_state(&state, true);
        assert_eq!(done.diffs.len(), 1);
        assert_eq!(done.diffs[0].old_text.as_deref(), Some("x"));
    }

    #[test]
    fn search_paths_are_not_mentions() {
        let f = fields(json!({
            "toolCallId": "t1", "kind": "search",
            "locations": [{"path": "/w"}], "rawInput": {"path": "/w"}
        }));
        assert!(ToolFacts::of_fields(&f).is_empty());
    }

    #[test]
    fn a_write_with_null_old_text_over_an_existing_file_uses_the_snapshot() {
        let mut t = EditTracker::new();
        let p = Path::new("/w/a.txt");
        record_diff(
            &mut t,
            p,
            None,
            "new\n",
            Some(Some("old\n".into())),
            Some("new\n"),
        );
        let review = t.review(p).unwrap();
        assert_eq!(review.status, FileStatus::Modified);
        assert_eq!(review.baseline.as_deref(), Some("old\n"));
    }

    #[test]
    fn a_late_snapshot_does_not_hide_the_diff() {
        let mut t = EditTracker::new();
        let p = Path::new("/w/a.txt");
        // Snapshot taken after the write: equal to the new content.
        record_diff(
            &mut t,
            p,
            Some("old\n"),
            "new\n",
            Some(Some("new\n".into())),
            Some("new\n"),
        );
        assert_eq!(t.review(p).unwrap().baseline.as_deref(), Some("old\n"));
    }

    #[test]
    fn an_unplaceable_snippet_falls_back_to_the_snapshot() {
        let mut t = EditTracker::new();
        let p = Path::new("/w/a.txt");
        // `newText` occurs twice: the snippet cannot be placed.
        record_diff(
            &mut t,
            p,
            Some("x"),
            "y",
            Some(Some("a\nb\n".into())),
            Some("y\ny\n"),
        );
        assert_eq!(t.review(p).unwrap().baseline.as_deref(), Some("a\nb\n"));
    }

    #[test]
    fn the_editors_copy_counts_only_when_the_file_changed_during_the_turn() {
        let started = SystemTime::now();
        let old = Some("old\n".to_owned());
        let disk = Some("new\n".to_owned());
        let during = Some(started + Duration::from_millis(5));
        // Written during the turn: the copy from the prompt is the "before".
        assert_eq!(
            editor_baseline(old.clone(), &disk, during, Some(started)),
            old
        );
        // A coarse file clock may stamp it a little before the prompt.
        let coarse = Some(started - Duration::from_millis(10));
        assert_eq!(
            editor_baseline(old.clone(), &disk, coarse, Some(started)),
            old
        );
        // Written long before: the buffer was stale, not the agent's doing.
        let before = Some(started - Duration::from_secs(60));
        assert_eq!(
            editor_baseline(old.clone(), &disk, before, Some(started)),
            None
        );
        // Nothing to tell: same text, no copy, no file, no times.
        assert_eq!(
            editor_baseline(disk.clone(), &disk, during, Some(started)),
            None
        );
        assert_eq!(editor_baseline(None, &disk, during, Some(started)), None);
        assert_eq!(
            editor_baseline(old.clone(), &None, during, Some(started)),
            None
        );
        assert_eq!(
            editor_baseline(old.clone(), &disk, None, Some(started)),
            None
        );
        assert_eq!(editor_baseline(old, &disk, during, None), None);
    }

    #[test]
    fn observe_reports_settled_files_with_no_hunks() {
        let mut t = EditTracker::new();
        let p = Path::new("/w/a.txt");
        let (_, change) = observe(&mut t, p, |t| {
            t.record_write(p, None, "x\n");
        });
        assert_eq!(change.unwrap().hunks, 1);
        let (_, change) = observe(&mut t, p, |t| t.accept_file(p).unwrap());
        let change = change.unwrap();
        assert_eq!((change.hunks, change.status), (0, FileStatus::Created));
        // Nothing changed: no event.
        let (_, change) = observe(&mut t, p, |t| {
            t.record_user_edit(p, Some("y\n"));
        });
        assert_eq!(change, None);
    }
}
