//! The review part of each file's record ([`SessionFile`]: per session's
//! review, the text review last knew the file had, its hunks, decisions
//! and undo states), and the hunk ids of each review. Review
//! (`crate::edits::review`) reads and writes them through these methods,
//! under the one lock of [`FileRecords`], next to the file's sync state.

use std::collections::HashMap;

use super::FileRecords;
use crate::edits::hunks::{FileTrack, IdGen};
use crate::path::CanonicalPath;

/// One session's review in the file records: handed out when the review
/// starts and never reused, so a review that ended (its worker finishing a
/// job after the session closed) cannot write into a later review of the
/// same session id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ReviewId(u64);

/// The reviews the records know: the last id handed out, and each
/// review's hunk ids (unique within the review, never reused).
#[derive(Debug, Default)]
pub(crate) struct Reviewers {
    last: u64,
    hunk_ids: HashMap<ReviewId, IdGen>,
}

/// One session's review of one file.
#[derive(Debug, Default)]
pub(crate) struct SessionFile {
    /// The content the file had when last seen (`Some(None)`: missing): on
    /// disk for files mentioned this turn, or as the client itself wrote
    /// it. A disk change is an agent edit only when it differs from this.
    /// `None`: not seen since the turn began.
    pub(crate) known: Option<Option<String>>,
    /// The file's changes under review and the states since the last
    /// decision on it.
    pub(crate) track: FileTrack,
}

impl SessionFile {
    fn is_unused(&self) -> bool {
        self.known.is_none() && self.track.is_unused()
    }
}

impl FileRecords {
    /// A new review (a session's, on its first use).
    pub(crate) fn start_review(&mut self) -> ReviewId {
        self.reviews.last += 1;
        let id = ReviewId(self.reviews.last);
        self.reviews.hunk_ids.insert(id, IdGen::default());
        id
    }

    /// The review ended (its session closed): what it held of every file
    /// goes, and the records left with nothing.
    pub(crate) fn end_review(&mut self, review: ReviewId) {
        self.reviews.hunk_ids.remove(&review);
        for record in self.files.values_mut() {
            record.reviews.remove(&review);
        }
        self.files.retain(|_, r| !r.is_unused());
    }

    /// What `review` holds of `path`, if anything.
    pub(crate) fn reviewed(&self, review: ReviewId, path: &CanonicalPath) -> Option<&SessionFile> {
        self.files.get(path)?.reviews.get(&review)
    }

    /// Runs `f` on what `review` holds of `path` (made when missing, with
    /// the review's hunk ids); what is left holding nothing goes after.
    pub(crate) fn with_reviewed<R>(
        &mut self,
        review: ReviewId,
        path: &CanonicalPath,
        f: impl FnOnce(&mut SessionFile, &mut IdGen) -> R,
    ) -> R {
        let ids = self.reviews.hunk_ids.entry(review).or_default();
        let record = self.files.entry(path.to_owned()).or_default();
        let file = record.reviews.entry(review).or_default();
        let result = f(file, ids);
        if file.is_unused() {
            record.reviews.remove(&review);
            if record.is_unused() {
                self.files.remove(path);
            }
        }
        result
    }

    /// Runs `f` on everything `review` holds, file by file in the order of
    /// their paths; what is left holding nothing goes after.
    pub(crate) fn each_reviewed(
        &mut self,
        review: ReviewId,
        mut f: impl FnMut(&CanonicalPath, &mut SessionFile),
    ) {
        let mut paths: Vec<CanonicalPath> = self
            .files
            .iter()
            .filter(|(_, r)| r.reviews.contains_key(&review))
            .map(|(path, _)| path.clone())
            .collect();
        paths.sort();
        for path in paths {
            let Some(record) = self.files.get_mut(&path) else {
                continue;
            };
            let Some(file) = record.reviews.get_mut(&review) else {
                continue;
            };
            f(&path, file);
            if file.is_unused() {
                record.reviews.remove(&review);
                if record.is_unused() {
                    self.files.remove(&path);
                }
            }
        }
    }

    /// Everything `review` holds, in the order of the paths.
    pub(crate) fn all_reviewed(&self, review: ReviewId) -> Vec<(&CanonicalPath, &SessionFile)> {
        let mut files: Vec<_> = self
            .files
            .iter()
            .filter_map(|(path, r)| Some((path, r.reviews.get(&review)?)))
            .collect();
        files.sort_by(|a, b| a.0.cmp(b.0));
        files
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::edits::buffer_sync::Origin;
    use crate::edits::hunks::FileTracker;
    use crate::session::update::SessionId;

    fn cp(path: &str) -> CanonicalPath {
        CanonicalPath::resolve(Path::new(path)).unwrap()
    }

    fn write(records: &mut FileRecords, review: ReviewId, path: &CanonicalPath, new: &str) {
        records.with_reviewed(review, path, |file, ids| {
            FileTracker {
                path,
                track: &mut file.track,
                ids,
            }
            .record_write(Some("a\n"), new);
        });
    }

    #[test]
    fn a_file_only_review_holds_shows_no_sync_state_and_goes_with_the_review() {
        let mut records = FileRecords::new();
        let p = &cp("/w/a.txt");
        let review = records.start_review();
        write(&mut records, review, p, "b\n");
        assert!(records.reviewed(review, p).unwrap().track.contains());
        // The buffer sync's diagnostics see nothing of it.
        assert_eq!(records.state(p), None);
        records.end_review(review);
        assert!(records.reviewed(review, p).is_none());
        assert!(records.files.is_empty());
    }

    #[test]
    fn reviews_keep_their_own_part_of_a_record_and_their_own_hunk_ids() {
        let mut records = FileRecords::new();
        let p = &cp("/w/a.txt");
        let (first, second) = (records.start_review(), records.start_review());
        assert_ne!(first, second);
        write(&mut records, first, p, "b\n");
        write(&mut records, second, p, "c\n");
        let id = |records: &FileRecords, review| {
            let file = records.reviewed(review, p).unwrap();
            file.track.review(p).unwrap().hunks[0].id
        };
        // Numbered per review, as one tracker per session numbered them.
        assert_eq!(id(&records, first), id(&records, second));
        records.end_review(first);
        assert!(records.reviewed(first, p).is_none());
        assert!(records.reviewed(second, p).unwrap().track.contains());
    }

    #[test]
    fn a_closed_sessions_sync_starts_over_while_a_review_keeps_the_record() {
        let mut records = FileRecords::new();
        let (p, s) = (&cp("/w/a.txt"), SessionId::from("s"));
        let review = records.start_review();
        records.saw(&s, p, Some(Arc::from("a\n")));
        records.plan(p, "a\n", "b\n", Origin::Write);
        records.with_reviewed(review, p, |file, _| file.known = Some(Some("a\n".into())));
        assert_eq!(records.state(p).map(|s| s.revision), Some(1));
        records.drop_session(&s);
        // Nothing of the sync held the file but the closed session's view:
        // it starts over (revision 0), as a file without a record would.
        assert_eq!(records.state(p), None);
        assert_eq!(
            records.reviewed(review, p).unwrap().known,
            Some(Some("a\n".into()))
        );
    }
}
