//! The review state of one file: baseline, current content and the hunks
//! between them.

use super::{FileStatus, Hunk, HunkId, RejectOutcome};
use crate::edits::diff::{changes, join_lines, matches, split_lines, Change};

/// Hands out hunk ids; never reuses one, so an id from a stale review can
/// never name a different hunk.
#[derive(Debug, Default)]
pub(crate) struct IdGen(u64);

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
        for change in self.split_deletions(changes(&current_lines, &user_lines)) {
            let (start, end) = (change.old.start, change.old.end);
            if self.hunks.iter().any(|h| overlaps(h, start, end)) {
                continue;
            }
            let inserted = &user_lines[change.new.clone()];
            if let Some((h, at)) = self.restored_deletion(start, end, inserted) {
                // The user's lines hold the very lines the agent deleted
                // here: the deletion is undone, and the lines around it are
                // the user's. Seen when the agent rewrites a file from disk
                // (Claude, the fake agent's writeDisk) while the buffer keeps
                // an unsaved line the baseline already has: without this the
                // baseline got that line twice.
                let deleted = h.old_lines.len();
                new_base.extend_from_slice(&base_lines[cursor..h.old_start]);
                new_base.extend_from_slice(&inserted[..at]);
                new_base.extend_from_slice(&base_lines[h.old_start..h.old_start + deleted]);
                new_base.extend_from_slice(&inserted[at + deleted..]);
                cursor = h.old_start + deleted;
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

    /// `changes` with each pure deletion that spans hunks cut where a hunk
    /// starts and ends, and where the agent deleted lines: the lines
    /// deleted outside the agent's hunks are the user's deletion (out of the
    /// baseline), those inside shrink the hunk. Taken whole, the lines
    /// around were kept as the agent's deletion, and a reject brought them
    /// back: another chat's reject had deleted them with that agent's line
    /// amid this agent's (data-safety seed 562451862, case 978), or on both
    /// sides of this agent's deletion (seed 762722601, case 731: `:Acp
    /// reject file` with two chats, the second chat's reject restored the
    /// first agent's lines the first reject had just removed). A change
    /// that inserts lines stays whole: which of them replace which is not
    /// known.
    fn split_deletions(&self, changes: Vec<Change>) -> Vec<Change> {
        let mut out = Vec::with_capacity(changes.len());
        for change in changes {
            let (start, end) = (change.old.start, change.old.end);
            if !change.new.is_empty() || !self.hunks.iter().any(|h| overlaps(h, start, end)) {
                out.push(change);
                continue;
            }
            let mut cuts: Vec<usize> = self
                .hunks
                .iter()
                .flat_map(|h| [h.new_start, h.new_end()])
                .filter(|&at| start < at && at < end)
                .collect();
            cuts.sort_unstable();
            cuts.dedup();
            let mut at = start;
            for cut in cuts.into_iter().chain(std::iter::once(end)) {
                out.push(Change {
                    old: at..cut,
                    new: change.new.clone(),
                });
                at = cut;
            }
        }
        out
    }

    /// The agent's pure deletion at `current` line `start`, when a user
    /// insertion there (`start == end`) holds its deleted lines in a row;
    /// with where they start among the inserted lines.
    fn restored_deletion(
        &self,
        start: usize,
        end: usize,
        inserted: &[&str],
    ) -> Option<(&Hunk, usize)> {
        if start != end {
            return None;
        }
        let h = self
            .hunks
            .iter()
            .find(|h| h.new_lines.is_empty() && h.new_start == start)?;
        let n = h.old_lines.len();
        if n == 0 || n > inserted.len() {
            return None;
        }
        let at = (0..=inserted.len() - n).find(|&i| {
            inserted[i..i + n]
                .iter()
                .zip(&h.old_lines)
                .all(|(a, b)| *a == b.as_str())
        })?;
        Some((h, at))
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

    /// Accepts lines `start..end` of `current` (the side the user kept when
    /// resolving a conflict): they join the baseline, and what else their
    /// hunk holds stays under review (a partly covered hunk keeps its old
    /// lines in the baseline, before the accepted lines unless the hunk's
    /// first line is one of them). A pure deletion standing at a line in
    /// `start..=end` is accepted whole: the marker lines a resolution
    /// removes leave one there.
    pub(super) fn accept_lines(&mut self, start: usize, end: usize, ids: &mut IdGen) {
        let current = self.current.as_deref().unwrap_or("");
        let baseline = self.baseline.as_deref().unwrap_or("");
        let (cur, base) = (split_lines(current), split_lines(baseline));
        let mut new_base: Vec<&str> = Vec::with_capacity(base.len() + end.saturating_sub(start));
        let mut cursor = 0;
        let mut changed = false;
        for h in &self.hunks {
            let (old_start, old_end) = (h.old_start, h.old_start + h.old_lines.len());
            if h.new_lines.is_empty() {
                if start <= h.new_start && h.new_start <= end {
                    new_base.extend_from_slice(&base[cursor..old_start]);
                    cursor = old_end;
                    changed = true;
                }
                continue;
            }
            let (a, b) = (start.max(h.new_start), end.min(h.new_end()));
            if a >= b {
                continue;
            }
            new_base.extend_from_slice(&base[cursor..old_start]);
            let (old, accepted) = (&base[old_start..old_end], &cur[a..b]);
            if a == h.new_start && b == h.new_end() {
                new_base.extend_from_slice(accepted);
            } else if a > h.new_start {
                new_base.extend_from_slice(old);
                new_base.extend_from_slice(accepted);
            } else {
                new_base.extend_from_slice(accepted);
                new_base.extend_from_slice(old);
            }
            cursor = old_end;
            changed = true;
        }
        if !changed {
            return;
        }
        new_base.extend_from_slice(&base[cursor..]);
        let text = join_lines(&new_base);
        self.baseline = match (&self.baseline, text.is_empty()) {
            (None, true) => None,
            _ => Some(text),
        };
        self.rediff(ids);
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
