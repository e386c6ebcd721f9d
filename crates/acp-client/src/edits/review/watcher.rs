//! Each session's worker task and its file watcher: the one place review
//! reads the disk, and how it sees edits no diff reports.
//!
//! All disk reads happen in one worker task per session, never in the
//! connection's read loop; one task also keeps the order of events per path.
//!
//! Disk changes with no diff at all (an agent running `sed -i`, or one that
//! reports only `locations`) are caught by watching: the directory of every
//! file a tool call mentions during a turn is watched (not recursively); a
//! change, debounced, is recorded against the last known content. At the
//! end of the turn every mentioned file is checked once more, then the
//! watches are dropped.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::decisions::{emit, observe};
use super::files::ReviewFiles;
use super::{Job, ReviewState, Reviews};
use crate::edits::checkpoint::TurnNumber;
use crate::edits::fs;
use crate::edits::host::{EditorHost, EventSink};
use crate::error::Error;
use crate::path::CanonicalPath;
use crate::session::update::SessionId;

/// Quiet time after the last change of a watched file before it is read:
/// editors and agents often write a file in several steps.
pub(super) const DEBOUNCE: Duration = Duration::from_millis(100);

/// How many times a file found empty mid-change is read again (each after
/// [`DEBOUNCE`]): an in-place rewrite caught between its truncation and its
/// write, whose writer a busy machine can stall past one look (seen with
/// three data-safety runs on two cores).
pub(super) const TORN_LOOKS: usize = 5;

/// A file's content on disk, as far as review cares.
pub(super) enum Disk {
    /// Text, or `None` when there is no such file.
    Known(Option<String>),
    /// A directory, binary, huge or unreadable file: not reviewed.
    Unreadable,
}

/// The file's text, read within `max_bytes`.
pub(super) async fn read_disk(path: &Path, max_bytes: usize) -> Disk {
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
    files: HashSet<CanonicalPath>,
    dirs: HashMap<PathBuf, usize>,
}

/// One session's task: snapshots, tool diffs, watched files, in order.
pub(super) struct Worker {
    pub(super) session_id: SessionId,
    pub(super) state: Arc<Mutex<ReviewState>>,
    /// The session's files in the file records (locked after `state`).
    pub(super) files: ReviewFiles,
    io: Arc<tokio::sync::Mutex<()>>,
    pub(super) events: EventSink,
    pub(super) host: Arc<dyn EditorHost>,
    pub(super) max_read_bytes: usize,
    /// Content of each file when first mentioned in the current turn.
    pub(super) snapshots: HashMap<CanonicalPath, Option<String>>,
    /// Prompts in flight.
    pub(super) turns: usize,
    /// When the first of the prompts in flight (or the last one) was sent.
    pub(super) turn_started: Option<SystemTime>,
    watch: Option<Watch>,
    /// Watched files changed since the debounce timer started.
    pub(super) changed: BTreeSet<CanonicalPath>,
    /// Changed files found empty, read again after another debounce: how
    /// many times so far.
    retried: BTreeMap<CanonicalPath, usize>,
    /// Files found empty at their first mention, emptied during the turn,
    /// with no editor copy: their "before" is lost, and the empty text may
    /// be half a write. Snapshotted when the debounce fires instead.
    pub(super) late: BTreeSet<CanonicalPath>,
    pub(super) deadline: Option<Instant>,
    /// The checkpoint the worker's edits go to: the turn of the last
    /// prompt it saw start (a disk change found late is still its turn's).
    pub(super) checkpoint_turn: Option<TurnNumber>,
    fs_tx: mpsc::UnboundedSender<FsSignal>,
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

impl Worker {
    /// Starts a session's worker (with the connection's events, host and
    /// read limit from `reviews`); it ends when the sender of `jobs` is
    /// dropped (with the session's review).
    pub(super) fn spawn(
        reviews: &Reviews,
        session_id: SessionId,
        state: Arc<Mutex<ReviewState>>,
        files: ReviewFiles,
        io: Arc<tokio::sync::Mutex<()>>,
        jobs: mpsc::UnboundedReceiver<Job>,
    ) {
        let (fs_tx, fs_rx) = mpsc::unbounded_channel();
        let worker = Worker {
            session_id,
            state,
            files,
            io,
            events: reviews.events.clone(),
            host: reviews.host.clone(),
            max_read_bytes: reviews.max_read_bytes,
            snapshots: HashMap::new(),
            turns: 0,
            turn_started: None,
            watch: None,
            changed: BTreeSet::new(),
            late: BTreeSet::new(),
            retried: BTreeMap::new(),
            deadline: None,
            checkpoint_turn: None,
            fs_tx,
        };
        tokio::spawn(worker.run(jobs, fs_rx));
    }

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
                        let looks = retried.get(&path).copied().unwrap_or(0);
                        if looks < TORN_LOOKS && self.emptied(&path).await {
                            // Most likely an in-place rewrite between its
                            // truncation and its write (a busy machine can
                            // stall a writer past the debounce): look again.
                            self.retried.insert(path.clone(), looks + 1);
                            self.changed.insert(path);
                            self.deadline = Some(Instant::now() + DEBOUNCE);
                            continue;
                        }
                        self.check_disk(&path).await;
                    }
                }
            }
        }
        // The session's review was dropped (its files left the records
        // then); what a job finished since recorded goes too.
        self.files.end();
    }

    async fn handle(&mut self, job: Job) {
        let _io = self.io.clone().lock_owned().await;
        match job {
            Job::TurnStarted(at, turn) => {
                self.turns += 1;
                self.checkpoint_turn = Some(turn);
                if self.turns == 1 {
                    self.turn_started = Some(at);
                    self.snapshots.clear();
                    self.late.clear();
                    self.files.lock().forget_known();
                    if let Some(sync) = self.host.buffer_sync() {
                        sync.review_turn_began(&self.session_id);
                    }
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
                    let paths: Vec<CanonicalPath> = self.snapshots.keys().cloned().collect();
                    for path in paths {
                        self.check_disk(&path).await;
                    }
                    self.watch = None;
                    self.changed.clear();
                    // Their "before" is unknown and they were not seen again.
                    self.late.clear();
                    self.retried.clear();
                    self.deadline = None;
                    if let Some(turn) = self.checkpoint_turn {
                        self.state.lock().checkpoints.end_turn(turn);
                    }
                }
            }
            Job::Barrier(done) => {
                let _ = done.send(());
            }
        }
    }

    /// Whether a file whose last known text is not empty is empty now.
    async fn emptied(&self, path: &CanonicalPath) -> bool {
        let known_empty = match self.files.lock().known(path) {
            Some(Some(text)) => text.is_empty(),
            _ => true,
        };
        !known_empty
            && tokio::fs::metadata(path)
                .await
                .is_ok_and(|m| m.is_file() && m.len() == 0)
    }

    /// Watches `path` (its directory) while the turn runs.
    pub(super) fn watch(&mut self, path: &CanonicalPath) {
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
            // The watcher names a file under the watched (resolved)
            // directory: the file's key when it is one of ours.
            FsSignal::Changed(path) => match watch.files.get(path.as_path()) {
                Some(key) => {
                    self.changed.insert(key.clone());
                }
                None => return,
            },
            FsSignal::Rescan => self.changed.extend(watch.files.iter().cloned()),
        }
        self.deadline = Some(Instant::now() + DEBOUNCE);
    }

    /// Records a disk change of a mentioned file against its last known
    /// content.
    async fn check_disk(&mut self, path: &CanonicalPath) {
        let Disk::Known(now) = read_disk(path, self.max_read_bytes).await else {
            return;
        };
        let (before, change) = {
            let mut st = self.state.lock();
            let mut files = self.files.lock();
            let Some(before) = files.known(path).cloned() else {
                return;
            };
            if before == now {
                return;
            }
            files.set_known(path, now.clone());
            if let Some(turn) = self.checkpoint_turn {
                // A file under review: the text review knew it had is the
                // truer "before" (a first look can catch a rewrite midway).
                let prior = files.review(path).map(|r| r.current);
                let turn_before = prior.unwrap_or_else(|| before.clone());
                st.checkpoints
                    .touch_in(turn, path, turn_before.as_deref(), now.as_deref());
            }
            let change = files
                .with_file(path, |t| {
                    observe(t, |t| match (&before, &now) {
                        (_, Some(new)) => {
                            t.record_write(before.as_deref(), new);
                        }
                        (Some(old), None) => {
                            t.record_delete(old);
                        }
                        (None, None) => {}
                    })
                })
                .1;
            (before, change)
        };
        if let Some(after) = &now {
            // Before the event: the editor's buffer is brought up to date
            // first, so a report of it that follows the event is not taken
            // for the user undoing this change.
            if let Some(sync) = self.host.buffer_sync() {
                sync.disk_changed(&self.session_id, path, before.as_deref(), after);
            }
        }
        emit(&self.events, &self.session_id, change);
    }
}
