//! One file's review in one session ([`FileTrack`]) and the operations on
//! it ([`FileTracker`]): what [`EditTracker`](super::EditTracker) keeps per
//! path, and what each file's record keeps per session (see
//! [`crate::edits::buffer_sync::FileRecords`]), so both run the same code.

use std::collections::VecDeque;
use std::path::Path;

use super::file::{IdGen, TrackedFile};
use super::{
    missing_file, summarize, tool_diff, FileReview, FileSummary, HunkId, RejectOutcome,
    ToolDiffPlacement,
};
use crate::edits::diff::{join_lines, matches, split_lines};
use crate::error::{Error, Result};
use crate::path::CanonicalPath;

/// Most states kept per file for undo and redo.
const STATES_KEPT: usize = 16;

/// One file's review in one session.
#[derive(Debug, Default)]
pub(crate) struct FileTrack {
    /// The file's changes under review; `None`: nothing to review.
    file: Option<TrackedFile>,
    /// The states the file's review went through since the last decision
    /// on it, newest last: the user's undo and redo bring a buffer back to
    /// one of their texts, and the review follows (redoing an undone agent
    /// merge shows its hunks again, instead of nothing to review).
    states: VecDeque<TrackedFile>,
}

impl FileTrack {
    /// True when the file has changes under review.
    pub(crate) fn contains(&self) -> bool {
        self.file.is_some()
    }

    /// Nothing under review and no state kept: the track can go.
    pub(crate) fn is_unused(&self) -> bool {
        self.file.is_none() && self.states.is_empty()
    }

    /// The file's text as review has it, `None` when nothing is under
    /// review or the file is deleted.
    pub(crate) fn current(&self) -> Option<&str> {
        self.file.as_ref()?.current.as_deref()
    }

    /// The summary of the file, `None` when it has nothing under review.
    pub(crate) fn summary(&self, path: &CanonicalPath) -> Option<FileSummary> {
        self.file.as_ref().map(|file| summarize(path, file))
    }

    /// The full review of the file, `None` when it has nothing under review.
    pub(crate) fn review(&self, path: &CanonicalPath) -> Option<FileReview> {
        let file = self.file.as_ref()?;
        Some(FileReview {
            path: path.to_owned(),
            status: file.status(),
            baseline: file.baseline.clone(),
            current: file.current.clone(),
            hunks: file.hunks.clone(),
        })
    }

    /// A whole-session accept: the file leaves review, and undo does not
    /// bring it back. Returns whether it was under review.
    pub(crate) fn accept_all(&mut self) -> bool {
        self.states.clear();
        self.file.take().is_some()
    }

    /// A whole-session reject: what to do to the file, if it was under
    /// review.
    pub(crate) fn reject_all(&mut self) -> Option<RejectOutcome> {
        self.states.clear();
        self.file.take().map(|mut file| file.reject_all())
    }
}

/// One file's track with the hunk ids of its session: the operations
/// [`EditTracker`](super::EditTracker) documents, for one path.
pub(crate) struct FileTracker<'a> {
    pub(crate) path: &'a CanonicalPath,
    pub(crate) track: &'a mut FileTrack,
    pub(crate) ids: &'a mut IdGen,
}

impl FileTracker<'_> {
    /// See [`EditTracker::record_write`](super::EditTracker::record_write).
    pub(crate) fn record_write(&mut self, old: Option<&str>, new: &str) -> Option<FileSummary> {
        self.record(old, Some(new))
    }

    /// See [`EditTracker::record_delete`](super::EditTracker::record_delete).
    pub(crate) fn record_delete(&mut self, old: &str) -> Option<FileSummary> {
        self.record(Some(old), None)
    }

    fn record(&mut self, old: Option<&str>, new: Option<&str>) -> Option<FileSummary> {
        let path = self.path;
        match &mut self.track.file {
            Some(file) => {
                match (old, new) {
                    (Some(old), Some(new)) if Some(old) != file.current.as_deref() => {
                        record_from_other_text(file, old, new, self.ids);
                    }
                    _ => file.set_current(new.map(str::to_owned), self.ids),
                }
                trace_state(path, file, "agent edit recorded");
            }
            None => {
                if old == new {
                    return None;
                }
                let file =
                    TrackedFile::new(old.map(str::to_owned), new.map(str::to_owned), self.ids);
                trace_state(path, &file, "agent edit starts a review");
                self.track.file = Some(file);
            }
        }
        self.remember();
        self.settle()
    }

    /// Keeps the file's state for the user's undo and redo.
    fn remember(&mut self) {
        let Some(file) = &self.track.file else {
            return;
        };
        if file.current.is_none() {
            return;
        }
        let states = &mut self.track.states;
        states.retain(|s| s.current != file.current);
        states.push_back(file.clone());
        if states.len() > STATES_KEPT {
            states.pop_front();
        }
    }

    /// The user changed the text while nothing is under review: kept as
    /// the newest state (one, replaced by the next such text), so that a
    /// redo after an undo back into an earlier review state comes back to
    /// nothing under review. Without it the redone text was rebased as the
    /// user's edit of that earlier state (data-safety seed 61500616, case
    /// 33: Neovim joined a conflict's resolution and the typing after it in
    /// one undo step, and after undo then redo the marker lines of the
    /// resolved block were a hunk). Only for a file that was under review
    /// since the last decision (it has states).
    fn remember_closed(&mut self, content: &str) {
        let states = &mut self.track.states;
        if states.is_empty() {
            return;
        }
        if states.back().is_some_and(TrackedFile::is_settled) {
            states.pop_back();
        }
        states.retain(|s| s.current.as_deref() != Some(content));
        states.push_back(TrackedFile::new(
            Some(content.to_owned()),
            Some(content.to_owned()),
            self.ids,
        ));
        if states.len() > STATES_KEPT {
            states.pop_front();
        }
    }

    /// A decision on the file is final: undo does not bring the states
    /// before it back (an accepted hunk stays accepted); the state after it
    /// is the first one kept.
    fn decided(&mut self) {
        self.track.states.clear();
        self.remember();
    }

    /// See [`EditTracker::record_tool_diff`](super::EditTracker::record_tool_diff).
    pub(crate) fn record_tool_diff(
        &mut self,
        old_text: Option<&str>,
        new_text: &str,
        on_disk: Option<&str>,
    ) -> ToolDiffPlacement {
        if self.track.contains() {
            match on_disk {
                Some(now) => self.record_write(None, now),
                // The agent deleted the file after editing it; the diff is
                // not evidence of that, the caller's watcher is.
                None => return ToolDiffPlacement::NotPlaced,
            };
            return ToolDiffPlacement::Tracked;
        }
        let Some(now) = on_disk else {
            return ToolDiffPlacement::NotPlaced;
        };
        if now == new_text {
            self.record_write(old_text, now);
            return ToolDiffPlacement::WholeFile;
        }
        let before = old_text.and_then(|old| tool_diff::content_before(old, new_text, now));
        match before {
            Some(before) => {
                self.record_write(Some(&before), now);
                ToolDiffPlacement::Snippet
            }
            None => {
                tracing::debug!(path = %self.path.display(), "could not place a tool call diff in the file on disk");
                ToolDiffPlacement::NotPlaced
            }
        }
    }

    /// See [`EditTracker::record_user_edit`](super::EditTracker::record_user_edit).
    pub(crate) fn record_user_edit(&mut self, content: Option<&str>) -> Option<FileSummary> {
        let path = self.path;
        if let Some(content) = content {
            let earlier = self
                .track
                .states
                .iter()
                .rev()
                .find(|s| s.current.as_deref() == Some(content))
                .cloned();
            let changed = self
                .track
                .file
                .as_ref()
                .is_none_or(|f| f.current.as_deref() != Some(content));
            if let (Some(earlier), true) = (earlier, changed) {
                // Undo or redo: the text is one the review had.
                trace_state(path, &earlier, "user undo/redo restores a review state");
                self.track.file = Some(earlier);
                return self.settle();
            }
        }
        let Some(file) = self.track.file.as_mut() else {
            if let Some(content) = content {
                self.remember_closed(content);
            }
            return None;
        };
        match content {
            Some(content) => {
                file.rebase_user_edit(content.to_owned(), self.ids);
                trace_state(path, file, "user edit rebased");
            }
            None => {
                self.track.file = None;
                self.decided();
                return None;
            }
        }
        self.remember();
        self.settle()
    }

    /// True when the file has changes under review.
    pub(crate) fn contains(&self) -> bool {
        self.track.contains()
    }

    /// The summary of the file, `None` when it has nothing under review.
    pub(crate) fn summary(&self) -> Option<FileSummary> {
        self.track.summary(self.path)
    }

    /// The full review of the file, `None` when it has nothing under review.
    pub(crate) fn review(&self) -> Option<FileReview> {
        self.track.review(self.path)
    }

    /// See [`EditTracker::accept_hunk`](super::EditTracker::accept_hunk).
    pub(crate) fn accept_hunk(&mut self, id: HunkId) -> Result<()> {
        let path = self.path;
        let file = self.file_mut()?;
        file.accept(id).ok_or_else(|| missing_hunk(path, id))?;
        self.decided();
        self.settle();
        Ok(())
    }

    /// See [`EditTracker::accept_lines`](super::EditTracker::accept_lines).
    pub(crate) fn accept_lines(&mut self, start: usize, end: usize) -> Result<()> {
        let path = self.path;
        let file = self.track.file.as_mut().ok_or_else(|| missing_file(path))?;
        file.accept_lines(start, end, self.ids);
        self.decided();
        self.settle();
        Ok(())
    }

    /// See [`EditTracker::reject_hunk`](super::EditTracker::reject_hunk).
    pub(crate) fn reject_hunk(&mut self, id: HunkId) -> Result<RejectOutcome> {
        let path = self.path;
        let file = self.file_mut()?;
        let outcome = file.reject(id).ok_or_else(|| missing_hunk(path, id))?;
        self.decided();
        self.settle();
        Ok(outcome)
    }

    /// See [`EditTracker::accept_file`](super::EditTracker::accept_file).
    pub(crate) fn accept_file(&mut self) -> Result<()> {
        self.file_mut()?.accept_all();
        self.decided();
        self.settle();
        Ok(())
    }

    /// See [`EditTracker::reject_file`](super::EditTracker::reject_file).
    pub(crate) fn reject_file(&mut self) -> Result<RejectOutcome> {
        let outcome = self.file_mut()?.reject_all();
        self.decided();
        self.settle();
        Ok(outcome)
    }

    /// See [`EditTracker::forget`](super::EditTracker::forget).
    pub(crate) fn forget(&mut self) -> bool {
        self.decided();
        self.track.file.take().is_some()
    }

    fn file_mut(&mut self) -> Result<&mut TrackedFile> {
        let path = self.path;
        self.track.file.as_mut().ok_or_else(|| missing_file(path))
    }

    /// Drops the file when nothing is left to review; else its summary.
    fn settle(&mut self) -> Option<FileSummary> {
        let file = self.track.file.as_ref()?;
        if file.is_settled() {
            self.track.file = None;
            return None;
        }
        Some(summarize(self.path, file))
    }
}

/// An agent edit from `old` to `new` of a file whose review has other text:
/// someone else changed the file since review last saw it (the user, or
/// another chat's agent), or the agent wrote from a view review did not
/// have. The lines of review's text that neither `old` nor `new` holds were
/// not the agent's to remove: the agent never had them, so their going is
/// the others' change. The rest of the way to `new` is the agent's, so a
/// reject brings back what it removed and removes what it added, and a line
/// it wrote back from its view (a user's line in both texts) stays the
/// user's.
///
/// Taken whole, review's text -> `new` was the agent's: after a second
/// chat's write opened a conflict block and the first agent's write from
/// its view waited on it, the block's lines were that agent's deletions,
/// and `:Acp reject file` wrote markers back and left an agent line the user
/// had rejected (data-safety seed 250035408, case 53). Rebasing review's
/// text to `old` instead made a user's saved line the agent's when the
/// agent's view was older than its text (a blind write from the text at a
/// prompt review had no copy of: seed 250035408, case 918).
fn record_from_other_text(file: &mut TrackedFile, old: &str, new: &str, ids: &mut IdGen) {
    let current = file.current.as_deref().unwrap_or("");
    let lines = split_lines(current);
    let mut had = vec![false; lines.len()];
    for other in [old, new] {
        for (i, _) in matches(&lines, &split_lines(other)) {
            had[i] = true;
        }
    }
    if had.iter().any(|h| !h) {
        let kept: Vec<&str> = lines
            .iter()
            .zip(&had)
            .filter_map(|(l, h)| h.then_some(*l))
            .collect();
        file.rebase_user_edit(join_lines(&kept), ids);
    }
    file.set_current(Some(new.to_owned()), ids);
}

/// Both texts of a tracked file, at trace level (what a data-safety
/// failure is read from).
fn trace_state(path: &Path, file: &TrackedFile, what: &str) {
    tracing::trace!(path = %path.display(), baseline = ?file.baseline, current = ?file.current, "{what}");
}

fn missing_hunk(path: &Path, id: HunkId) -> Error {
    Error::NotFound(format!(
        "hunk {id} of `{}` no longer exists (the file changed since the review was shown); refresh the review",
        path.display()
    ))
}
