//! The review state of one file: baseline, current content and the hunks
//! between them.

use super::diff::{changes, join_lines, matches, split_lines};
use super::{FileStatus, Hunk, HunkId, RejectOutcome};

/// Hands out hunk ids; never reuses one, so an id from a stale review can
/// never name a different hunk.
#[derive(Debug, Default)]
pub(super) struct IdGen(u64);

impl IdGen {
    fn next(&mut self) -> HunkId {
        self.0 += 1;
        HunkId(self.0)
    }
}

/// A file with agent changes under review.
///
/// Invariant: applying every hunk to `baseline` gives `current` (a missing
/// file counts as empty text), and the hunks are ordered and separated by at
/// least one unchanged line.
#[derive(Debug, Clone)]
pub(super) struct TrackedFile {
    /// The content before the agent's first change since the last decision;
    /// `None` when the file did not exist.
    pub(super) baseline: Option<String>,
    /// The content now; `None` when the file is deleted.
    pub(super) current: Option<String>,
    pub(super) hunks: Vec<Hunk>,
}

impl TrackedFile {
    pub(super) fn new(baseline: Option<String>, current: Option<String>, ids: &mut IdGen) -> Self {
        let mut file = Self {
            baseline,
            current,
            hunks: Vec::new(),
        };
        file.rediff(ids);
        file
    }

    /// Nothing left to review: same content, same existence.
    pub(super) fn is_settled(&self) -> bool {
        self.baseline == self.current
    }

    pub(super) fn status(&self) -> FileStatus {
        match (&self.baseline, &self.current) {
            (None, _) => FileStatus::Created,
            (Some(_), None) => FileStatus::Deleted,
            (Some(_), Some(_)) => FileStatus::Modified,
        }
    }

    /// The agent changed the file again; the baseline stays.
    pub(super) fn set_current(&mut self, current: Option<String>, ids: &mut IdGen) {
        if self.current != current {
            self.current = current;
            self.rediff(ids);
        }
    }

    /// The user changed the file (typed in its buffer, or saved it). The
    /// user's changes outside the agent's hunks go into the baseline too, so
    /// they are not shown as the agent's and survive a reject. A user change
    /// that overlaps an agent hunk becomes part of that hunk: rejecting it
    /// restores the baseline there, as the user asked.
    pub(super) fn rebase_user_edit(&mut self, content: String, ids: &mut IdGen) {
        if self.current.as_deref() == Some(content.as_str()) {
            return;
        }
        let current = self.current.as_deref().unwrap_or("");
        let baseline = self.baseline.as_deref().unwrap_or("");
        let current_lines = split_lines(current);
        let user_lines = split_lines(&content);
        let base_lines = split_lines(baseline);

        let mut new_base: Vec<&str> = Vec::with_capacity(base_lines.len());
        let mut cursor = 0;
        for change in changes(&current_lines, &user_lines) {
            let (start, end) = (change.old.start, change.old.end);
            if self.hunks.iter().any(|h| overlaps(h, start, end)) {
                continue;
            }
            // Where the agent deleted lines right at the edge of the user's
            // change, the user's change stays outside the deleted lines.
            let base_start = self.to_baseline(start, true);
            let base_end = if start == end {
                base_start
            } else {
                self.to_baseline(end, false)
            };
            new_base.extend_from_slice(&base_lines[cursor..base_start]);
            new_base.extend_from_slice(&user_lines[change.new]);
            cursor = base_end;
        }
        new_base.extend_from_slice(&base_lines[cursor..]);
        let new_base = join_lines(&new_base);

        self.baseline = match (&self.baseline, new_base.is_empty()) {
            // A file the agent created stays "created" unless the user
            // typed outside the agent's text.
            (None, true) => None,
            _ => Some(new_base),
        };
        self.current = Some(content);
        self.rediff(ids);
    }

    /// Maps a line position of `current` that lies outside every hunk to the
    /// same position in `baseline`. A position where the agent deleted lines
    /// maps to after them when `after_deletion`, else to before them.
    fn to_baseline(&self, line: usize, after_deletion: bool) -> usize {
        let mut shifted = line;
        let before = |h: &&Hunk| {
            h.new_end() < line || (h.new_end() == line && (after_deletion || h.new_start < line))
        };
        for h in self.hunks.iter().take_while(before) {
            shifted = shifted - h.new_lines.len() + h.old_lines.len();
        }
        shifted
    }

    /// Accepts a hunk: the baseline takes its new lines.
    pub(super) fn accept(&mut self, id: HunkId) -> Option<()> {
        let i = self.hunks.iter().position(|h| h.id == id)?;
        let hunk = self.hunks.remove(i);
        if self.hunks.is_empty() {
            // Also carries existence: accepting the last hunk of a deleted
            // file accepts the deletion.
            self.baseline = self.current.clone();
            return Some(());
        }
        let mut lines = split_lines(self.baseline.as_deref().unwrap_or(""));
        lines.splice(
            hunk.old_start..hunk.old_start + hunk.old_lines.len(),
            hunk.new_lines.iter().map(String::as_str),
        );
        let text = join_lines(&lines);
        self.baseline = Some(text);
        for h in &mut self.hunks[i..] {
            h.old_start = h.old_start - hunk.old_lines.len() + hunk.new_lines.len();
        }
        Some(())
    }

    /// Rejects a hunk: the current content takes back the baseline's lines
    /// there, other hunks stay.
    pub(super) fn reject(&mut self, id: HunkId) -> Option<RejectOutcome> {
        let i = self.hunks.iter().position(|h| h.id == id)?;
        let hunk = self.hunks.remove(i);
        if self.hunks.is_empty() {
            return Some(self.reject_all());
        }
        let mut lines = split_lines(self.current.as_deref().unwrap_or(""));
        lines.splice(
            hunk.new_start..hunk.new_end(),
            hunk.old_lines.iter().map(String::as_str),
        );
        let text = join_lines(&lines);
        self.current = Some(text.clone());
        for h in &mut self.hunks[i..] {
            h.new_start = h.new_start - hunk.new_lines.len() + hunk.old_lines.len();
        }
        Some(RejectOutcome::Write { content: text })
    }

    pub(super) fn accept_all(&mut self) {
        self.baseline = self.current.clone();
        self.hunks.clear();
    }

    pub(super) fn reject_all(&mut self) -> RejectOutcome {
        self.current = self.baseline.clone();
        self.hunks.clear();
        match &self.baseline {
            Some(content) => RejectOutcome::Write {
                content: content.clone(),
            },
            None => RejectOutcome::Delete,
        }
    }

    /// Recomputes the hunks. A new hunk with the same lines as an old one
    /// (matched in order) keeps the old id, wherever it moved: an edit
    /// elsewhere in the file does not disturb a hunk the user is looking at.
    fn rediff(&mut self, ids: &mut IdGen) {
        let old = split_lines(self.baseline.as_deref().unwrap_or(""));
        let new = split_lines(self.current.as_deref().unwrap_or(""));
        let mut fresh: Vec<Hunk> = changes(&old, &new)
            .into_iter()
            .map(|c| Hunk {
                id: HunkId(0),
                old_start: c.old.start,
                old_lines: old[c.old].iter().map(|l| (*l).to_owned()).collect(),
                new_start: c.new.start,
                new_lines: new[c.new].iter().map(|l| (*l).to_owned()).collect(),
            })
            .collect();

        let mut kept: Vec<Option<HunkId>> = vec![None; fresh.len()];
        {
            fn key(h: &Hunk) -> (&[String], &[String]) {
                (&h.old_lines, &h.new_lines)
            }
            let before: Vec<_> = self.hunks.iter().map(key).collect();
            let after: Vec<_> = fresh.iter().map(key).collect();
            for (old_index, new_index) in matches(&before, &after) {
                kept[new_index] = Some(self.hunks[old_index].id);
            }
        }
        for (hunk, id) in fresh.iter_mut().zip(kept) {
            hunk.id = id.unwrap_or_else(|| ids.next());
        }
        self.hunks = fresh;
    }
}

/// True when a user change of `current` lines `start..end` (empty for an
/// insertion) falls inside hunk `h`. An insertion at either edge of a hunk
/// is outside it: the user's new line goes next to the agent's text, not
/// into it.
fn overlaps(h: &Hunk, start: usize, end: usize) -> bool {
    let (h_start, h_end) = (h.new_start, h.new_end());
    if h_start == h_end {
        // The agent deleted lines here: a user change spanning the spot
        // swallows the deletion.
        start < h_start && h_start < end
    } else if start == end {
        h_start < start && start < h_end
    } else {
        start < h_end && h_start < end
    }
}
