//! One session's review of its files, kept in the connection's file
//! records ([`FileRecords`], one record per file next to its buffer sync,
//! one lock): [`ReviewFiles`] is the session's handle on them and
//! [`SessionFiles`] the view it locks, shaped like an
//! [`EditTracker`](crate::edits::hunks::EditTracker) plus each file's last
//! known text.
//!
//! Lock order: a session's review state, then the records; the records'
//! lock is never held across an await, nor while the buffer sync (which
//! takes it too) or an event sink is called.

use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::edits::buffer_sync::{FileRecords, ReviewId};
use crate::edits::hunks::{FileRejection, FileReview, FileSummary, FileTracker};
use crate::path::CanonicalPath;

/// A session's review's handle on the file records.
#[derive(Clone)]
pub(super) struct ReviewFiles {
    records: Arc<Mutex<FileRecords>>,
    id: ReviewId,
}

impl ReviewFiles {
    /// A new review in `records`.
    pub(super) fn start(records: Arc<Mutex<FileRecords>>) -> Self {
        let id = records.lock().start_review();
        Self { records, id }
    }

    /// The records, locked, as this review sees them.
    pub(super) fn lock(&self) -> SessionFiles<'_> {
        SessionFiles {
            records: self.records.lock(),
            review: self.id,
        }
    }

    /// The review ended: what it held of every file goes.
    pub(super) fn end(&self) {
        self.records.lock().end_review(self.id);
    }
}

/// One session's files in the locked records.
pub(super) struct SessionFiles<'a> {
    records: MutexGuard<'a, FileRecords>,
    review: ReviewId,
}

impl SessionFiles<'_> {
    /// Runs `f` on the file's review.
    pub(super) fn with_file<R>(
        &mut self,
        path: &CanonicalPath,
        f: impl FnOnce(&mut FileTracker<'_>) -> R,
    ) -> R {
        self.records.with_reviewed(self.review, path, |file, ids| {
            f(&mut FileTracker {
                path,
                track: &mut file.track,
                ids,
            })
        })
    }

    /// True when `path` has changes under review.
    pub(super) fn contains(&self, path: &CanonicalPath) -> bool {
        self.records
            .reviewed(self.review, path)
            .is_some_and(|f| f.track.contains())
    }

    /// The full review of one file.
    pub(super) fn review(&self, path: &CanonicalPath) -> Option<FileReview> {
        self.records.reviewed(self.review, path)?.track.review(path)
    }

    /// The summary of one file.
    pub(super) fn summary(&self, path: &CanonicalPath) -> Option<FileSummary> {
        self.records
            .reviewed(self.review, path)?
            .track
            .summary(path)
    }

    /// Every file under review, sorted by path.
    pub(super) fn files(&self) -> Vec<FileSummary> {
        self.records
            .all_reviewed(self.review)
            .into_iter()
            .filter_map(|(path, f)| f.track.summary(path))
            .collect()
    }

    /// Accepts every change of the session.
    pub(super) fn accept_all(&mut self) {
        self.records.each_reviewed(self.review, |_, f| {
            f.track.accept_all();
        });
    }

    /// Rejects every change of the session; what to do to each file,
    /// sorted by path.
    pub(super) fn reject_all(&mut self) -> Vec<FileRejection> {
        let mut out = Vec::new();
        self.records.each_reviewed(self.review, |path, f| {
            if let Some(outcome) = f.track.reject_all() {
                out.push(FileRejection {
                    path: path.to_owned(),
                    outcome,
                });
            }
        });
        out
    }

    /// True when this review's text of `path` is the agent's disk text
    /// its buffer has not taken yet: a report of the buffer lacks that
    /// change, and recorded it would read as the user undoing it.
    pub(super) fn holds_pending(&self, path: &CanonicalPath) -> bool {
        let Some(pending) = self.records.pending(path) else {
            return false;
        };
        self.records
            .reviewed(self.review, path)
            .and_then(|f| f.track.current())
            == Some(pending)
    }

    /// The text the file had when last seen (`Some(None)`: missing), if
    /// it was seen since the turn began.
    pub(super) fn known(&self, path: &CanonicalPath) -> Option<&Option<String>> {
        self.records.reviewed(self.review, path)?.known.as_ref()
    }

    /// The file was seen holding `text`; returns what was known before.
    pub(super) fn set_known(
        &mut self,
        path: &CanonicalPath,
        text: Option<String>,
    ) -> Option<Option<String>> {
        self.records
            .with_reviewed(self.review, path, |f, _| f.known.replace(text))
    }

    /// A new turn: no file's text is known until it is seen again.
    pub(super) fn forget_known(&mut self) {
        self.records
            .each_reviewed(self.review, |_, f| f.known = None);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn only_the_review_that_recorded_the_waiting_disk_text_holds_it() {
        let records = Arc::new(Mutex::new(FileRecords::new()));
        let p = &CanonicalPath::resolve(Path::new("/w/a.txt")).unwrap();
        let (writer, other) = (
            ReviewFiles::start(records.clone()),
            ReviewFiles::start(records.clone()),
        );
        // The writer's review recorded the agent's disk edit; the other
        // review holds the buffer's text, a conflict block left by a
        // second agent's write.
        writer.lock().with_file(p, |t| {
            t.record_write(Some("a\n"), "a\nagent\n");
        });
        let block = "<<<<<<< buffer\na\n=======\nb\n>>>>>>> agent\n";
        other.lock().with_file(p, |t| {
            t.record_write(Some("a\n"), block);
        });
        assert!(!writer.lock().holds_pending(p), "nothing waits yet");
        assert!(records.lock().disk_changed(p, Some("a\n"), "a\nagent\n"));
        assert_eq!(records.lock().pending(p), Some("a\nagent\n"));
        // A report of the buffer lacks the waiting text: the writer's
        // review skips it, the other records it.
        assert!(writer.lock().holds_pending(p));
        assert!(!other.lock().holds_pending(p));
    }
}
