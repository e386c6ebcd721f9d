//! Where agent edits come from, in the order of how much they tell:
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
//!    workspace) and watched by the session's worker ([`super::watcher`]).
//!
//! A snapshot taken when the tool call arrives is too late for an agent
//! that writes right after announcing the edit (or announces it after
//! writing): the disk already holds the new text. So the buffer sync is asked
//! too ([`BufferSync::text_before_turn`]): the file's text when the editor
//! sent the prompt is the "before", if the file changed on
//! disk during the turn (a buffer that was stale before the prompt is not
//! believed: its difference is not the agent's).
//!
//! [`BufferSync::text_before_turn`]: crate::edits::buffer_sync::BufferSync::text_before_turn
//!
//! This module owns what a tool call says about files ([`ToolFacts`]), the
//! recording of `fs/write_text_file` and of tool call diffs, and the
//! worker's mentions and snapshots (the "before" of each file in a turn).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::decisions::{emit, observe};
use super::watcher::{read_disk, Disk, Worker, DEBOUNCE, TORN_LOOKS};
use super::{Job, Reviews};
use crate::edits::fs::Workspace;
use crate::edits::hunks::{FileTracker, ToolDiffPlacement};
use crate::path::CanonicalPath;
use crate::schema::ToolCallLocation;
use crate::session::update::{SessionId, ToolCallFields, ToolContent, ToolKind};
use crate::session::ToolCallState;

/// Largest file snapshotted when a tool call mentions it: every mentioned
/// file of a turn is held in memory (twice), and agents mention every file
/// they read. Bigger files are reviewed only through the diffs of tool calls.
const SNAPSHOT_MAX_BYTES: usize = 8 * 1024 * 1024;

/// Slack for file times: filesystems stamp a write with a coarse clock
/// (Linux: the timer tick; 1 s on ext3 and HFS+, 2 s on FAT), so a write
/// right after the prompt can carry a time a little before it.
const MTIME_SLACK: Duration = Duration::from_secs(2);
/// How far a file's modification time can lag the precise clock (the
/// kernel stamps files with a clock that advances once per tick).
const COARSE_CLOCK: Duration = Duration::from_millis(20);

/// One `diff` item of a completed tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ToolDiff {
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

impl Reviews {
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
        path: &CanonicalPath,
        old: Option<&str>,
        new: &str,
    ) {
        let review = self.get_or_start(session_id, workspace);
        let change = {
            let mut st = review.state.lock();
            let mut files = review.files.lock();
            files.set_known(path, Some(new.to_owned()));
            st.checkpoints.touch(path, old, Some(new));
            files
                .with_file(path, |t| {
                    observe(t, |t| {
                        t.record_write(old, new);
                    })
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
}

impl Worker {
    async fn resolve(&self, path: PathBuf) -> Option<CanonicalPath> {
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
    pub(super) async fn mention(&mut self, raw: PathBuf) {
        let Some(path) = self.resolve(raw).await else {
            return;
        };
        if !self.snapshots.contains_key(&path) && !self.late.contains(&path) {
            let Disk::Known(mut disk) = read_disk(&path, self.snapshot_limit()).await else {
                return;
            };
            if disk.as_deref() == Some("") {
                // Likely an in-place rewrite (truncate, then write) caught
                // in between, and for an instant after the truncation Linux
                // shows the file empty with its old modification time
                // (measured on ext4: a third of the reads in that window),
                // so no time check below can tell it from a file empty
                // before the turn. Seen with the demo agent's hello.lua
                // edit: a "before" of "" made the user's unsaved line a
                // whole-file conflict. One look after the debounce sees the
                // write done (and its time) unless the writer stalled.
                tokio::time::sleep(DEBOUNCE).await;
                let Disk::Known(again) = read_disk(&path, self.snapshot_limit()).await else {
                    return;
                };
                disk = again;
            }
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
            let snapshot = before.map_or(disk, Some);
            if let (Some(sync), Some(text)) = (self.host.buffer_sync(), &snapshot) {
                // What the agent read with its own tools, if it read the
                // file: the base of its blind write (issue 24).
                sync.mentioned(&self.session_id, &path, text);
            }
            self.snapshot(&path, snapshot);
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
    pub(super) async fn late_snapshot(&mut self, path: CanonicalPath) {
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
    fn snapshot(&mut self, path: &CanonicalPath, content: Option<String>) {
        self.files.lock().set_known(path, content.clone());
        self.snapshots.insert(path.to_owned(), content);
    }

    /// The editor's copy of `path` from when the prompt was sent, when it
    /// is the file's true "before" (see [`editor_baseline`]).
    async fn text_before_turn(
        &self,
        path: &CanonicalPath,
        disk: &Option<String>,
    ) -> Option<String> {
        disk.as_ref()?;
        let editor = self
            .host
            .buffer_sync()?
            .text_before_turn(&self.session_id, path)?;
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

    /// A completed tool call's diff: the disk shows the edit now.
    pub(super) async fn record_diff(&mut self, diff: ToolDiff) {
        let Some(path) = self.resolve(diff.path).await else {
            return;
        };
        let Disk::Known(mut now) = read_disk(&path, self.max_read_bytes).await else {
            return;
        };
        // Empty while the agent says it wrote text: an in-place rewrite
        // (truncate, then write) caught in between, by the agent or the
        // user. Seen under load with the user's :w of a file the agent had
        // just created (data-safety seed 250035408, case 72): recorded, the
        // empty file was the agent's edit and the buffer was reloaded empty.
        // Looked at again until written (a writer can stall past one look).
        for _ in 0..TORN_LOOKS {
            if now.as_deref() != Some("") || diff.new_text.is_empty() {
                break;
            }
            tokio::time::sleep(DEBOUNCE).await;
            let Disk::Known(again) = read_disk(&path, self.max_read_bytes).await else {
                return;
            };
            now = again;
        }
        let snapshot = self.snapshots.get(&path).cloned();
        let (before, change) = {
            let mut st = self.state.lock();
            let mut files = self.files.lock();
            let known = files.set_known(&path, now.clone());
            // The checkpoint's "before": the text review knew the file had
            // before this edit, else the baseline review placed for it (from
            // the snapshot, the editor's copy or the diff's old text).
            let prior = files.review(&path).map(|r| r.current);
            let change = files
                .with_file(&path, |t| {
                    observe(t, |t| {
                        record_diff(
                            t,
                            diff.old_text.as_deref(),
                            &diff.new_text,
                            snapshot.clone(),
                            now.as_deref(),
                        )
                    })
                })
                .1;
            // The text before this edit: the last known one, unless that is
            // already the new text (a snapshot taken after the write), then
            // the review's baseline.
            let before = match known {
                Some(known) if known != now => known,
                _ => files.review(&path).and_then(|r| r.baseline).or_else(|| {
                    snapshot
                        .clone()
                        .flatten()
                        .filter(|s| Some(s) != now.as_ref())
                }),
            };
            let turn_before = prior.or_else(|| files.review(&path).map(|r| r.baseline));
            if let (Some(turn), Some(b), true) =
                (self.checkpoint_turn, turn_before, change.is_some())
            {
                st.checkpoints
                    .touch_in(turn, &path, b.as_deref(), now.as_deref());
            }
            (before, change)
        };
        if let Some(after) = &now {
            // Before the event (see `Worker::check_disk`).
            if let Some(sync) = self.host.buffer_sync() {
                sync.disk_changed(&self.session_id, &path, before.as_deref(), after);
            }
        }
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
    if disk.is_empty() {
        // Emptied: an in-place rewrite still between its truncation and its
        // write (a stalled writer), whose file time can be the old one (see
        // `Worker::mention`). A file already empty when the prompt went out
        // would have been sent empty, unless the editor held a stale copy
        // of it: that copy is what the user saw.
        return Some(editor);
    }
    let (modified, started) = (modified?, turn_started?);
    (modified + MTIME_SLACK >= started).then_some(editor)
}

/// Places one tool call diff, falling back to the snapshot taken when the
/// file was first mentioned.
fn record_diff(
    tracker: &mut FileTracker<'_>,
    old_text: Option<&str>,
    new_text: &str,
    snapshot: Option<Option<String>>,
    on_disk: Option<&str>,
) {
    if !tracker.contains() && old_text.is_none() {
        // claude-agent-acp's `Write` says `oldText: null` also when it
        // replaces a file: a snapshot showing the file existed wins. A
        // snapshot equal to the new content was taken too late to tell.
        if let (Some(Some(before)), Some(now)) = (&snapshot, on_disk) {
            if before != now {
                tracker.record_write(Some(before), now);
                return;
            }
        }
    }
    let placement = tracker.record_tool_diff(old_text, new_text, on_disk);
    if placement == ToolDiffPlacement::NotPlaced && !tracker.contains() {
        if let (Some(before), Some(now)) = (snapshot, on_disk) {
            tracker.record_write(before.as_deref(), now);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::edits::hunks::{EditTracker, FileStatus};
    use serde_json::json;

    fn fields(v: Value) -> ToolCallFields {
        crate::session::update::decode_tool_call_fields(&v).unwrap()
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
        let p = &CanonicalPath::resolve(Path::new("/w/a.txt")).unwrap();
        t.with_file(p, |t| {
            record_diff(t, None, "new\n", Some(Some("old\n".into())), Some("new\n"))
        });
        let review = t.review(p).unwrap();
        assert_eq!(review.status, FileStatus::Modified);
        assert_eq!(review.baseline.as_deref(), Some("old\n"));
    }

    #[test]
    fn a_late_snapshot_does_not_hide_the_diff() {
        let mut t = EditTracker::new();
        let p = &CanonicalPath::resolve(Path::new("/w/a.txt")).unwrap();
        // Snapshot taken after the write: equal to the new content.
        t.with_file(p, |t| {
            record_diff(
                t,
                Some("old\n"),
                "new\n",
                Some(Some("new\n".into())),
                Some("new\n"),
            )
        });
        assert_eq!(t.review(p).unwrap().baseline.as_deref(), Some("old\n"));
    }

    #[test]
    fn an_unplaceable_snippet_falls_back_to_the_snapshot() {
        let mut t = EditTracker::new();
        let p = &CanonicalPath::resolve(Path::new("/w/a.txt")).unwrap();
        // `newText` occurs twice: the snippet cannot be placed.
        t.with_file(p, |t| {
            record_diff(
                t,
                Some("x"),
                "y",
                Some(Some("a\nb\n".into())),
                Some("y\ny\n"),
            )
        });
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
        assert_eq!(editor_baseline(old.clone(), &disk, during, None), None);
        // Emptied, and stamped before the prompt: a truncation whose write
        // has not come yet (Linux can show the old time right after one).
        let empty = Some(String::new());
        assert_eq!(
            editor_baseline(old.clone(), &empty, before, Some(started)),
            old
        );
    }
}
