//! Editor-agnostic review of agent edits: per-file baselines, hunks with
//! stable ids, accept and reject per hunk, per file and per session.
//!
//! Agents change files in three ways, and each has an entry point:
//!
//! - through `fs/write_text_file`, where the client sees the old and the
//!   new content: [`EditTracker::record_write`];
//! - directly on disk, reporting `diff` content in their tool calls (Claude
//!   does this and never calls `fs/*`): [`EditTracker::record_tool_diff`];
//! - on disk with no diff at all, where the disk change itself is the
//!   evidence (seen by a file watcher): [`EditTracker::record_write`] and
//!   [`EditTracker::record_delete`] with the last known content.
//!
//! One [`EditTracker`] per session keeps, for every file the agent changed,
//! its *baseline* (the content before the agent's first change since the
//! last review decision) and its *current* content, and the [`Hunk`]s
//! between them. Accepting a hunk moves it into the baseline; rejecting it
//! puts the baseline's lines back into the current content and returns the
//! new content ([`RejectOutcome`]) for the caller to write (to the buffer,
//! or to disk with [`crate::edits::fs::write_text_file_atomic`]). The tracker never
//! touches disk or buffers itself.
//!
//! Lines keep their terminators, so CRLF files and files without a final
//! newline come back byte for byte. Line numbers are 0-based.
//!
//! When the user edits a file under review, report it with
//! [`EditTracker::record_user_edit`], so the user's typing is not taken for
//! the agent's. When the agent changes a file whose buffer has unsaved
//! edits, combine both with [`crate::edits::merge::merge3`] instead of reloading.
//!
//! # Example
//!
//! ```
//! use std::path::Path;
//! use acp_client::edits::hunks::{EditTracker, FileStatus, RejectOutcome};
//! use acp_client::path::CanonicalPath;
//!
//! # fn main() -> acp_client::Result<()> {
//! let mut tracker = EditTracker::new();
//! // A file's one key: resolved once, where the path enters.
//! let path = &CanonicalPath::resolve(Path::new("/project/src/lib.rs"))?;
//!
//! // The agent wrote through fs/write_text_file: the client saw both texts.
//! tracker.record_write(path, Some("a\nb\nc\nd\ne\n"), "a\nB\nc\nD\ne\n");
//! let review = tracker.review(path).expect("under review");
//! assert_eq!(review.status, FileStatus::Modified);
//! let (first, second) = (review.hunks[0].id, review.hunks[1].id);
//!
//! // The user accepts the first hunk: it moves into the baseline.
//! tracker.accept_hunk(path, first)?;
//!
//! // The agent appends a line. The accepted hunk is not shown again and
//! // the other one keeps its id.
//! tracker.record_write(path, None, "a\nB\nc\nD\ne\nf\n");
//! let review = tracker.review(path).expect("under review");
//! assert_eq!(review.hunks.len(), 2);
//! assert_eq!(review.hunks[0].id, second);
//!
//! // Rejecting a hunk returns the content to write; the other hunks stay.
//! let outcome = tracker.reject_hunk(path, second)?;
//! assert_eq!(outcome, RejectOutcome::Write { content: "a\nB\nc\nd\ne\nf\n".into() });
//!
//! // Whole-session decisions.
//! tracker.accept_all();
//! assert!(tracker.is_empty());
//! # Ok(())
//! # }
//! ```

mod file;
#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests;
mod tool_diff;
mod track;

use crate::edits::diff;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::path::CanonicalPath;
pub(crate) use file::IdGen;
use file::TrackedFile;
pub(crate) use track::{FileTrack, FileTracker};

/// The id of a hunk, unique within one [`EditTracker`] and never reused.
///
/// Stable: a hunk keeps its id while its lines stay the same, also when
/// other edits move it. A hunk whose lines changed (the agent edited it
/// again, or the user typed inside it) gets a new id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct HunkId(u64);

impl HunkId {
    /// The id as a number, for the wire.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for HunkId {
    /// An id that came back from the editor.
    fn from(id: u64) -> Self {
        Self(id)
    }
}

impl fmt::Display for HunkId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// One changed region between a file's baseline and its current content.
///
/// Lines carry their terminators (`"x\n"`, `"x\r\n"`; a file's last line may
/// have none); use [`strip_line_ending`] to display them. Either side may
/// be empty: a pure insertion has no `old_lines`, a pure deletion no
/// `new_lines`. Hunks of one file are ordered and separated by at least one
/// unchanged line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Hunk {
    /// Stable id, for accept and reject.
    pub id: HunkId,
    /// 0-based index in the baseline of the first replaced line (for an
    /// insertion: of the line the new lines go before).
    pub old_start: usize,
    /// The baseline's lines.
    pub old_lines: Vec<String>,
    /// 0-based index in the current content of the first new line (for a
    /// deletion: of the line the removed lines stood before).
    pub new_start: usize,
    /// The current content's lines.
    pub new_lines: Vec<String>,
}

impl Hunk {
    /// The hunk's lines in the baseline.
    pub fn old_range(&self) -> Range<usize> {
        self.old_start..self.old_start + self.old_lines.len()
    }

    /// The hunk's lines in the current content: where a buffer shows it.
    pub fn new_range(&self) -> Range<usize> {
        self.new_start..self.new_end()
    }

    fn new_end(&self) -> usize {
        self.new_start + self.new_lines.len()
    }
}

/// `line` without its `\n` or `\r\n`.
pub fn strip_line_ending(line: &str) -> &str {
    let line = line.strip_suffix('\n').unwrap_or(line);
    line.strip_suffix('\r').unwrap_or(line)
}

/// What happened to a file under review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileStatus {
    /// The file did not exist before the agent's change.
    Created,
    /// The file existed and still exists.
    Modified,
    /// The agent deleted the file.
    Deleted,
}

/// One line of a review list (a quickfix entry).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSummary {
    /// The file.
    pub path: CanonicalPath,
    /// Created, modified or deleted.
    pub status: FileStatus,
    /// Number of hunks; 0 for an empty file created or deleted.
    pub hunks: usize,
    /// Lines in the current content that the baseline does not have.
    pub added: usize,
    /// Lines of the baseline that the current content does not have.
    pub removed: usize,
    /// 0-based line of the first hunk in the current content, to jump to.
    pub first_line: Option<usize>,
}

/// Everything needed to show one file's review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileReview {
    /// The file.
    pub path: CanonicalPath,
    /// Created, modified or deleted.
    pub status: FileStatus,
    /// Content before the agent's changes; `None` when the file did not exist.
    pub baseline: Option<String>,
    /// Content now, as far as the tracker knows; `None` when deleted.
    pub current: Option<String>,
    /// The changes from `baseline` to `current`, in order.
    pub hunks: Vec<Hunk>,
}

impl FileReview {
    /// The hunk with this id.
    pub fn hunk(&self, id: HunkId) -> Option<&Hunk> {
        self.hunks.iter().find(|h| h.id == id)
    }

    /// The hunk shown at 0-based `line` of the current content: the hunk
    /// whose new lines include it, or a deletion that stood just before it
    /// (a deletion at the end of the file is found at the last line).
    pub fn hunk_at(&self, line: usize) -> Option<&Hunk> {
        let current_lines = self
            .current
            .as_deref()
            .map_or(0, |c| diff::split_lines(c).len());
        self.hunks.iter().find(|h| {
            if h.new_lines.is_empty() {
                h.new_start == line || (h.new_start == current_lines && line + 1 == h.new_start)
            } else {
                h.new_range().contains(&line)
            }
        })
    }
}

/// What the caller must do to a file after a reject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum RejectOutcome {
    /// Write this content to the file (buffer and/or disk). Also the
    /// outcome of rejecting a deletion: the file comes back.
    Write {
        /// The file's whole new content.
        content: String,
    },
    /// The file did not exist before the agent created it: delete it, after
    /// the user confirms. The tracker has already dropped the file; if the
    /// user keeps it, nothing more needs to be done.
    Delete,
}

/// One file's result of [`EditTracker::reject_all`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileRejection {
    /// The file.
    pub path: CanonicalPath,
    /// What to do to it.
    pub outcome: RejectOutcome,
}

/// How [`EditTracker::record_tool_diff`] used a tool call's `diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolDiffPlacement {
    /// The file was already under review: the tracker took the disk content
    /// as the current content (the baseline stays).
    Tracked,
    /// `newText` is the whole file: `oldText` was taken as the content
    /// before (`null` = new file).
    WholeFile,
    /// `newText` was found once in the file: the content before was rebuilt
    /// by putting `oldText` back in its place.
    Snippet,
    /// Nothing recorded: the file is not on disk, or the edit could not be
    /// placed (empty, missing or repeated `newText`). The caller may fall
    /// back to a snapshot it took before the tool ran.
    NotPlaced,
}

/// The agent edits of one session, file by file. See the [module
/// documentation](self).
///
/// Files are keyed by [`CanonicalPath`] (as
/// [`crate::edits::fs::Workspace::resolve`] returns them), so one file has
/// one key.
#[derive(Debug, Default)]
pub struct EditTracker {
    /// Each file's review; a file whose review left keeps its entry while
    /// it has undo states.
    files: BTreeMap<CanonicalPath, FileTrack>,
    ids: IdGen,
}

impl EditTracker {
    /// An empty tracker.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs `f` on the file's track (made when missing, dropped after when
    /// it keeps nothing).
    pub(crate) fn with_file<R>(
        &mut self,
        path: &CanonicalPath,
        f: impl FnOnce(&mut FileTracker<'_>) -> R,
    ) -> R {
        let track = self.files.entry(path.to_owned()).or_default();
        let result = f(&mut FileTracker {
            path,
            track,
            ids: &mut self.ids,
        });
        if self.files.get(path).is_some_and(FileTrack::is_unused) {
            self.files.remove(path);
        }
        result
    }

    /// The agent wrote `new` to `path` (through `fs/write_text_file`, a
    /// tool call whose diff holds the whole file, or a disk change seen
    /// during the agent's turn).
    ///
    /// `old` is the content before this write (`None`: the file did not
    /// exist). It becomes the baseline when the file is not under review
    /// yet; for a file under review the baseline stays the one from the
    /// agent's first change and `old` is not used. Returns the file's
    /// summary, or `None` when nothing is left to review (the agent wrote
    /// the baseline back, or `old == new`).
    pub fn record_write(
        &mut self,
        path: &CanonicalPath,
        old: Option<&str>,
        new: &str,
    ) -> Option<FileSummary> {
        self.with_file(path, |t| t.record_write(old, new))
    }

    /// The agent deleted `path`, whose content was `old`. Same baseline rule
    /// as [`record_write`](Self::record_write); a file the agent created and
    /// then deleted leaves nothing to review.
    pub fn record_delete(&mut self, path: &CanonicalPath, old: &str) -> Option<FileSummary> {
        self.with_file(path, |t| t.record_delete(old))
    }

    /// Records a tool call's `diff` content (`path`, `oldText`, `newText`),
    /// given the file's content on disk now (`None`: no such file). Call it
    /// when the tool call has completed, so the disk shows the edit.
    ///
    /// For a file under review the disk content is all that is needed. For
    /// a new one, the content before the edit comes from the diff: `newText`
    /// equal to the disk content is a whole-file diff with `oldText` as the
    /// previous content; otherwise `newText` is taken as a snippet (as
    /// claude-agent-acp sends for its `Edit` tool) and the previous content
    /// is rebuilt by putting `oldText` back where `newText` occurs, if it
    /// occurs exactly once.
    ///
    /// Caveat: claude-agent-acp sends `oldText: null` for its `Write` tool
    /// also when it overwrites an existing file, which reads as "new file"
    /// here (a reject would then offer to delete it). A caller that
    /// snapshotted the file when the tool call was announced should call
    /// [`record_write`](Self::record_write) with that snapshot instead.
    pub fn record_tool_diff(
        &mut self,
        path: &CanonicalPath,
        old_text: Option<&str>,
        new_text: &str,
        on_disk: Option<&str>,
    ) -> ToolDiffPlacement {
        self.with_file(path, |t| t.record_tool_diff(old_text, new_text, on_disk))
    }

    /// The user changed a file under review (typed in its buffer, or saved
    /// it from elsewhere); `content` is the new text, `None` when the user
    /// deleted the file.
    ///
    /// The user's changes outside the agent's hunks go into the baseline
    /// too: they are not shown as the agent's, and rejecting a hunk keeps
    /// them. A change overlapping an agent hunk becomes part of that hunk
    /// (which gets a new id); a line typed right above or below a hunk stays
    /// outside it. A deleted file is dropped from review. Paths not under
    /// review are ignored. Returns the file's summary after the change.
    pub fn record_user_edit(
        &mut self,
        path: &CanonicalPath,
        content: Option<&str>,
    ) -> Option<FileSummary> {
        self.with_file(path, |t| t.record_user_edit(content))
    }

    /// True when `path` has changes under review.
    pub fn contains(&self, path: &CanonicalPath) -> bool {
        self.files.get(path).is_some_and(FileTrack::contains)
    }

    /// True when nothing is under review.
    pub fn is_empty(&self) -> bool {
        !self.files.values().any(FileTrack::contains)
    }

    /// Every file under review, sorted by path.
    pub fn files(&self) -> Vec<FileSummary> {
        self.files
            .iter()
            .filter_map(|(path, track)| track.summary(path))
            .collect()
    }

    /// The summary of one file, `None` when it has nothing under review.
    pub fn summary(&self, path: &CanonicalPath) -> Option<FileSummary> {
        self.files.get(path)?.summary(path)
    }

    /// The full review of one file, `None` when it has nothing under review.
    pub fn review(&self, path: &CanonicalPath) -> Option<FileReview> {
        self.files.get(path)?.review(path)
    }

    /// Accepts one hunk: it becomes part of the baseline and is not shown
    /// again. The file itself does not change. Accepting the last hunk of a
    /// deleted file accepts the deletion.
    pub fn accept_hunk(&mut self, path: &CanonicalPath, id: HunkId) -> Result<()> {
        self.with_file(path, |t| t.accept_hunk(id))
    }

    /// Accepts lines `start..end` of the current content (0-based), not
    /// the whole hunks they are part of: what a user keeps when resolving a
    /// conflict is theirs, the agent's lines around it stay under review.
    /// Pure deletions standing at a line in `start..=end` are accepted.
    pub fn accept_lines(&mut self, path: &CanonicalPath, start: usize, end: usize) -> Result<()> {
        self.with_file(path, |t| t.accept_lines(start, end))
    }

    /// Rejects one hunk: its lines go back to the baseline's, the other
    /// hunks stay. Returns what to write; rejecting the last hunk of a file
    /// the agent created returns [`RejectOutcome::Delete`].
    ///
    /// The tracker takes the returned content as the file's current content
    /// at once; write it to the buffer or disk before the next `record_*`
    /// call for this file.
    pub fn reject_hunk(&mut self, path: &CanonicalPath, id: HunkId) -> Result<RejectOutcome> {
        self.with_file(path, |t| t.reject_hunk(id))
    }

    /// Accepts every change to `path`, including its creation or deletion.
    pub fn accept_file(&mut self, path: &CanonicalPath) -> Result<()> {
        self.with_file(path, |t| t.accept_file())
    }

    /// Rejects every change to `path`: returns the baseline to write, or
    /// [`RejectOutcome::Delete`] for a file the agent created.
    pub fn reject_file(&mut self, path: &CanonicalPath) -> Result<RejectOutcome> {
        self.with_file(path, |t| t.reject_file())
    }

    /// Accepts every change of the session; returns the files that were
    /// under review.
    pub fn accept_all(&mut self) -> Vec<CanonicalPath> {
        std::mem::take(&mut self.files)
            .into_iter()
            .filter_map(|(path, mut track)| track.accept_all().then_some(path))
            .collect()
    }

    /// Rejects every change of the session; returns what to do to each file,
    /// sorted by path.
    pub fn reject_all(&mut self) -> Vec<FileRejection> {
        std::mem::take(&mut self.files)
            .into_iter()
            .filter_map(|(path, mut track)| {
                let outcome = track.reject_all()?;
                Some(FileRejection { path, outcome })
            })
            .collect()
    }

    /// Stops reviewing `path` without a decision (the caller took the file
    /// over some other way). Returns whether it was under review.
    pub fn forget(&mut self, path: &CanonicalPath) -> bool {
        self.with_file(path, |t| t.forget())
    }
}

pub(crate) fn missing_file(path: &Path) -> Error {
    Error::NotFound(format!(
        "`{}` has no agent edits under review; refresh the review list",
        path.display()
    ))
}

fn summarize(path: &CanonicalPath, file: &TrackedFile) -> FileSummary {
    FileSummary {
        path: path.to_owned(),
        status: file.status(),
        hunks: file.hunks.len(),
        added: file.hunks.iter().map(|h| h.new_lines.len()).sum(),
        removed: file.hunks.iter().map(|h| h.old_lines.len()).sum(),
        first_line: file.hunks.first().map(|h| h.new_start),
    }
}
