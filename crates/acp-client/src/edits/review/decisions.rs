//! What the user decides about agent edits: accept, reject (the restored
//! text written through the editor first, else atomically to disk) and the
//! deletion of files whose creation was rejected, with the empty
//! directories the agent made for them; the user's own edits of files under
//! review; and the one way a file's review change is reported
//! ([`observe`], [`emit`]).
//!
//! Writes the client makes itself (rejects, deletes) first set the "last
//! known content" of the file, under the same lock the worker holds while it
//! reads and records, so the watcher never takes them for agent edits.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::Reviews;
use crate::edits::fs;
use crate::edits::host::{
    ClientEvent, EditorHost, EventSink, WriteKind, WriteOutcome, WriteTextFile,
};
use crate::edits::hunks::{
    missing_file, FileRejection, FileReview, FileStatus, FileSummary, FileTracker, HunkId,
    RejectOutcome,
};
use crate::error::{Error, Result};
use crate::path::CanonicalPath;
use crate::session::update::SessionId;

/// Which changes a decision covers.
#[derive(Debug, Clone, Copy)]
pub(super) enum Target<'a> {
    /// One hunk of one file.
    Hunk(&'a CanonicalPath, HunkId),
    /// Every change of one file.
    File(&'a CanonicalPath),
    /// Every change of the session.
    All,
}

impl Reviews {
    /// Accepts changes; returns the files that changed state.
    pub(super) fn accept(
        &self,
        session_id: &SessionId,
        target: Target<'_>,
    ) -> Result<Vec<CanonicalPath>> {
        match target {
            Target::Hunk(path, id) => self.decide_file(session_id, path, |t| t.accept_hunk(id)),
            Target::File(path) => self.decide_file(session_id, path, |t| t.accept_file()),
            Target::All => {
                let Some(review) = self.get(session_id) else {
                    return Ok(Vec::new());
                };
                let before = {
                    let mut files = review.files.lock();
                    let before = files.files();
                    files.accept_all();
                    before
                };
                let paths = before.iter().map(|f| f.path.clone()).collect();
                for f in before {
                    emit(
                        &self.events,
                        session_id,
                        Some(ReviewChange {
                            summary: settled(&f.path, f.status),
                            review: None,
                        }),
                    );
                }
                Ok(paths)
            }
        }
    }

    /// Accepts lines of a file's current content (see
    /// [`EditTracker::accept_lines`]).
    pub(super) fn accept_lines(
        &self,
        session_id: &SessionId,
        path: &CanonicalPath,
        start: usize,
        end: usize,
    ) -> Result<()> {
        self.decide_file(session_id, path, |t| t.accept_lines(start, end))
            .map(drop)
    }

    /// Applies one file's decision to the tracker and reports the change;
    /// returns the file when its state changed.
    fn decide_file(
        &self,
        session_id: &SessionId,
        path: &CanonicalPath,
        decide: impl FnOnce(&mut FileTracker<'_>) -> Result<()>,
    ) -> Result<Vec<CanonicalPath>> {
        let review = self.get(session_id).ok_or_else(|| missing_file(path))?;
        let (result, change) = review.files.lock().with_file(path, |t| observe(t, decide));
        result?;
        let paths = change.iter().map(|c| c.summary.path.clone()).collect();
        emit(&self.events, session_id, change);
        Ok(paths)
    }

    /// Rejects changes and writes the restored content (through the editor
    /// first, else atomically to disk). `Delete` outcomes are returned for
    /// the caller to confirm. If a write fails, that file's review is put
    /// back as it was and the first error is returned.
    pub(super) async fn reject(
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
            let mut files = review.files.lock();
            let befores: Vec<FileReview> = match target {
                Target::Hunk(path, _) | Target::File(path) => {
                    files.review(path).into_iter().collect()
                }
                Target::All => files
                    .files()
                    .iter()
                    .filter_map(|f| files.review(&f.path))
                    .collect(),
            };
            let rejections = match target {
                Target::Hunk(path, id) => vec![FileRejection {
                    path: path.to_owned(),
                    outcome: files.with_file(path, |t| t.reject_hunk(id))?,
                }],
                Target::File(path) => vec![FileRejection {
                    path: path.to_owned(),
                    outcome: files.with_file(path, |t| t.reject_file())?,
                }],
                Target::All => files.reject_all(),
            };
            let mut changes = Vec::new();
            for r in &rejections {
                match &r.outcome {
                    RejectOutcome::Write { content } => {
                        files.set_known(&r.path, Some(content.clone()));
                    }
                    RejectOutcome::Delete => {
                        st.pending_deletes.insert(r.path.clone());
                    }
                }
                let status = befores
                    .iter()
                    .find(|b| b.path == r.path)
                    .map_or(FileStatus::Modified, |b| b.status);
                changes.push(ReviewChange {
                    summary: files
                        .summary(&r.path)
                        .unwrap_or_else(|| settled(&r.path, status)),
                    review: files.review(&r.path),
                });
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
            // The base of merging the restore into a buffer with unsaved
            // edits: the text the review knew the file had.
            let current = befores
                .iter()
                .find(|b| b.path == r.path)
                .and_then(|b| b.current.clone());
            let written = write_content(host, session_id, &r.path, content, current, None).await;
            if let Ok(text) = &written {
                // The file holds the restore: the other chats' reviews learn
                // it as not their agents', as they learn an agent's write.
                // Else a second chat's reject, decided right after, restored
                // from its text from before this one the lines this reject
                // removed (data-safety seed 562451862, case 978: `:Acp
                // reject all` with two chats reviewing one file).
                let text = text.as_deref().unwrap_or(content);
                self.record_other_write(session_id, &r.path, text);
            }
            match written {
                Ok(Some(saved)) => {
                    // The buffer took the restore merged with lines this
                    // review never saw (another chat's agent wrote them):
                    // they are not this chat's, as a user's edit is not.
                    self.record_user_edit(session_id, &r.path, Some(&saved), true);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(path = %r.path.display(), error = %e, "could not write the rejected file; its review is kept");
                    if let Some(before) = befores.iter().find(|b| b.path == r.path) {
                        let change = {
                            let mut files = review.files.lock();
                            files.set_known(&r.path, before.current.clone());
                            files.with_file(&r.path, |t| restore(t, before))
                        };
                        emit(&self.events, session_id, change);
                    }
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => Err(e),
            None => Ok(rejections),
        }
    }

    /// Deletes a file whose creation the user rejected.
    pub(super) async fn delete_rejected(
        &self,
        session_id: &SessionId,
        path: &CanonicalPath,
    ) -> Result<()> {
        let Some(review) = self.get(session_id) else {
            return Err(not_rejected(path));
        };
        let _io = review.io.lock().await;
        {
            let mut st = review.state.lock();
            let mut files = review.files.lock();
            if !st.pending_deletes.contains(path) {
                return Err(not_rejected(path));
            }
            if files.contains(path) {
                return Err(Error::NotFound(format!(
                    "`{}` has new agent edits under review since its creation was rejected; review them first",
                    path.display()
                )));
            }
            st.pending_deletes.remove(path);
            files.set_known(path, None);
        }
        if !remove_regular_file(path).await? {
            return Ok(());
        }
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

    /// Another session's agent wrote `path`, which holds `content` now (on
    /// disk, and in its buffer if one is open). To every other session that
    /// reviews the file or knows its text, those lines are not its agent's,
    /// as a user's edit is not. Without this a review kept the text from
    /// before the other agent's write: data-safety seed 134340754, case
    /// 314, where the second agent's write back (merged and saved) removed
    /// the first agent's line, and the first chat's reject, merged against
    /// its stale text, opened a conflict that the second chat's reject then
    /// nested.
    pub(crate) fn record_other_write(
        &self,
        writer: &SessionId,
        path: &CanonicalPath,
        content: &str,
    ) {
        let others: Vec<SessionId> = self
            .sessions
            .lock()
            .iter()
            .filter(|(id, review)| {
                if *id == writer {
                    return false;
                }
                let files = review.files.lock();
                files.contains(path) || files.known(path).is_some()
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in others {
            self.record_user_edit(&id, path, Some(content), true);
        }
    }

    /// The user changed a file under review (`None`: deleted it).
    pub(crate) fn record_user_edit(
        &self,
        session_id: &SessionId,
        path: &CanonicalPath,
        content: Option<&str>,
        on_disk: bool,
    ) -> Option<FileSummary> {
        let review = self.get(session_id)?;
        let (summary, change) = {
            let mut files = review.files.lock();
            if !on_disk && content.is_some() && files.holds_pending(path) {
                // This review recorded the agent's disk edit the buffer has
                // not taken (it waits for open conflicts): the buffer's
                // report lacks it; the merged text is recorded once taken.
                // The other reviews record the report: they hold the
                // buffer's text, and typing recorded apart from a conflict
                // resolution is not swallowed by the hunk next to it
                // (data-safety seed 896943918, case 397).
                return files.summary(path);
            }
            if (on_disk || content.is_none()) && files.known(path).is_some() {
                // The user's save must not look like the agent's edit.
                files.set_known(path, content.map(str::to_owned));
            }
            // Unsaved typing leaves `known` the disk's text: taken for the
            // disk's, the next look at the disk (the watcher, a tool call's
            // diff) saw the agent "delete" the user's unsaved lines and drew
            // them as its deletion (the demo agent's disk edit of a buffer
            // with an unsaved line, in a real terminal).
            files.with_file(path, |t| {
                let (_, change) = observe(t, |t| {
                    t.record_user_edit(content);
                });
                (t.summary(), change)
            })
        };
        emit(&self.events, session_id, change);
        summary
    }
}

/// A file's review after a change, as [`ClientEvent::ReviewChanged`]
/// reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ReviewChange {
    /// The summary (a settled one with no hunks when it left review).
    pub(super) summary: FileSummary,
    /// The whole review; `None` when nothing is left to review.
    pub(super) review: Option<FileReview>,
}

/// Runs `f` on the file's track and reports its review when it changed.
pub(super) fn observe<R>(
    tracker: &mut FileTracker<'_>,
    f: impl FnOnce(&mut FileTracker<'_>) -> R,
) -> (R, Option<ReviewChange>) {
    let before = tracker.review();
    let result = f(tracker);
    let after = tracker.review();
    if before == after {
        return (result, None);
    }
    let status = before.map_or(FileStatus::Modified, |b| b.status);
    let summary = tracker
        .summary()
        .unwrap_or_else(|| settled(tracker.path, status));
    (
        result,
        Some(ReviewChange {
            summary,
            review: after,
        }),
    )
}

/// The summary of a file with nothing left to review.
fn settled(path: &CanonicalPath, status: FileStatus) -> FileSummary {
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
fn restore(tracker: &mut FileTracker<'_>, before: &FileReview) -> Option<ReviewChange> {
    observe(tracker, |t| {
        t.forget();
        match (&before.baseline, &before.current) {
            (old, Some(current)) => {
                t.record_write(old.as_deref(), current);
            }
            (Some(old), None) => {
                t.record_delete(old);
            }
            (None, None) => {}
        }
    })
    .1
}

/// Reports a file's new review, if it changed.
pub(super) fn emit(events: &EventSink, session_id: &SessionId, change: Option<ReviewChange>) {
    if let Some(change) = change {
        events(ClientEvent::ReviewChanged {
            session_id: session_id.clone(),
            file: change.summary,
            review: change.review,
        });
    }
}

/// How much earlier than the first prompt a directory's birth time may
/// read and still be the agent's (see `remove_made_dirs`).
const BIRTH_SLACK: Duration = Duration::from_millis(500);

/// Removes the directories above a deleted file that the agent created
/// for it and that are empty now (a rejected `src/new/mod.rs` leaves no
/// `src/new/`): made by `fs/write_text_file`, or born after the session's
/// first prompt (the agent's own tools made them). Never a workspace root
/// or anything outside one; a directory it cannot tell about stays.
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
/// merges it into its buffer against `current`), or atomically to disk when
/// it has none: `on_disk` then, the content already merged with the file's
/// text by the caller (a rewind's), else the content itself.
pub(super) async fn write_content(
    host: &dyn EditorHost,
    session_id: &SessionId,
    path: &CanonicalPath,
    content: &str,
    current: Option<String>,
    on_disk: Option<&str>,
) -> Result<Option<String>> {
    let request = WriteTextFile {
        session_id: session_id.clone(),
        path: path.to_owned(),
        content: content.to_owned(),
        kind: WriteKind::Restore { current },
    };
    let outcome = match host.buffer_sync() {
        Some(sync) => sync.write(&request).await?,
        None => WriteOutcome::Disk,
    };
    match outcome {
        WriteOutcome::Saved { .. } => Ok(None),
        WriteOutcome::SavedMerged { text, .. } => Ok((text != content).then_some(text)),
        WriteOutcome::DiskMerged { text, .. } => {
            fs::write_text_file_atomic(path, &text).await?;
            Ok((text != content).then_some(text))
        }
        WriteOutcome::Disk | WriteOutcome::MergedUnsaved { .. } | WriteOutcome::Waiting { .. } => {
            let text = on_disk.unwrap_or(content);
            fs::write_text_file_atomic(path, text)
                .await
                .map(|_| (text != content).then(|| text.to_owned()))
        }
    }
}

/// Deletes a file the agent created (a rejected creation, a rewound one);
/// false when it is already gone. Only a regular file: a directory or link
/// the agent made in its place is left, with an error that says which.
pub(super) async fn remove_regular_file(path: &Path) -> Result<bool> {
    let meta = match tokio::fs::symlink_metadata(path).await {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
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
    Ok(true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::edits::hunks::EditTracker;

    #[test]
    fn observe_reports_settled_files_with_no_hunks() {
        let mut t = EditTracker::new();
        let p = &CanonicalPath::resolve(Path::new("/w/a.txt")).unwrap();
        let (_, change) = t.with_file(p, |t| {
            observe(t, |t| {
                t.record_write(None, "x\n");
            })
        });
        let change = change.unwrap();
        assert_eq!(change.summary.hunks, 1);
        assert_eq!(change.review.unwrap().hunks.len(), 1);
        let (_, change) = t.with_file(p, |t| observe(t, |t| t.accept_file().unwrap()));
        let change = change.unwrap();
        assert_eq!(
            (change.summary.hunks, change.summary.status),
            (0, FileStatus::Created)
        );
        assert_eq!(change.review, None);
        // Nothing changed: no event.
        let (_, change) = t.with_file(p, |t| {
            observe(t, |t| {
                t.record_user_edit(Some("y\n"));
            })
        });
        assert_eq!(change, None);
    }
}
