//! [`Review`]: the editor's handle on one session's edit review, from
//! [`Connection::review`](crate::Connection::review).

use std::path::Path;

use super::decisions::Target;
use super::Reviews;
use crate::edits::checkpoint::{Checkpoints, TurnInfo, TurnNumber};
use crate::edits::fs::Workspace;
use crate::edits::host::EditorHost;
use crate::edits::hunks::{FileRejection, FileReview, FileSummary, HunkId, RejectOutcome};
use crate::error::{Error, Result};
use crate::path::CanonicalPath;
use crate::session::update::SessionId;

/// The edit review of one session: every file the agent changed, as hunks
/// the user accepts or rejects one by one.
///
/// Edits are recorded from `fs/write_text_file`, from tool calls with
/// `diff` content once they complete, and from disk changes of the files a
/// turn's tool calls mention (see
/// [`ClientEvent::ReviewChanged`](crate::ClientEvent::ReviewChanged)).
/// Paths may be relative to the session's cwd; a path outside its
/// workspace, or a session the connection does not know, is an error (or
/// nothing, for the queries).
pub struct Review<'a> {
    reviews: &'a Reviews,
    host: &'a dyn EditorHost,
    session_id: SessionId,
    /// `None` when the session is unknown.
    workspace: Option<Workspace>,
}

impl std::fmt::Debug for Review<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Review")
            .field("session_id", &self.session_id)
            .finish_non_exhaustive()
    }
}

impl<'a> Review<'a> {
    pub(crate) fn new(
        reviews: &'a Reviews,
        host: &'a dyn EditorHost,
        session_id: SessionId,
        workspace: Option<Workspace>,
    ) -> Self {
        Self {
            reviews,
            host,
            session_id,
            workspace,
        }
    }

    /// The session this review belongs to.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    fn require_session(&self) -> Result<&Workspace> {
        self.workspace.as_ref().ok_or_else(|| {
            Error::NotFound(format!(
                "unknown session `{}`; open or load it first",
                self.session_id
            ))
        })
    }

    /// Resolves an editor-supplied path against the session's workspace:
    /// the one resolution a path from the editor goes through before it
    /// keys a file's review.
    fn path(&self, path: &Path) -> Result<CanonicalPath> {
        self.require_session()?.resolve(path)
    }

    /// Every file with agent edits under review, sorted by path.
    pub fn files(&self) -> Vec<FileSummary> {
        self.reviews.files(&self.session_id)
    }

    /// The full review of one file (baseline, current content, hunks);
    /// `None` when it has nothing under review, or when the path is outside
    /// the session's workspace or the session is unknown.
    pub fn file(&self, path: &Path) -> Option<FileReview> {
        match self.path(path) {
            Ok(path) => self.reviews.file(&self.session_id, &path),
            Err(e) => {
                tracing::debug!(error = %e, "no review for this path");
                None
            }
        }
    }

    /// Whether the file has changes under review (cheaper than
    /// [`Review::file`], which copies its texts).
    pub fn contains(&self, path: &Path) -> bool {
        self.path(path)
            .is_ok_and(|path| self.reviews.contains(&self.session_id, &path))
    }

    /// Accepts one hunk: it is not shown again, the file does not change.
    pub fn accept_hunk(&self, path: &Path, hunk: HunkId) -> Result<()> {
        let path = self.path(path)?;
        self.reviews
            .accept(&self.session_id, Target::Hunk(&path, hunk))
            .map(drop)
    }

    /// Accepts lines `start..end` of a file's current content, not whole
    /// hunks (see [`EditTracker::accept_lines`](crate::edits::hunks::EditTracker::accept_lines)):
    /// the side of a conflict the user kept.
    pub fn accept_lines(&self, path: &Path, start: usize, end: usize) -> Result<()> {
        let path = self.path(path)?;
        self.reviews
            .accept_lines(&self.session_id, &path, start, end)
    }

    /// Accepts every change to one file, including its creation or deletion.
    pub fn accept_file(&self, path: &Path) -> Result<()> {
        let path = self.path(path)?;
        self.reviews
            .accept(&self.session_id, Target::File(&path))
            .map(drop)
    }

    /// Accepts every change of the session; returns the files that were
    /// under review.
    pub fn accept_all(&self) -> Result<Vec<CanonicalPath>> {
        self.require_session()?;
        self.reviews.accept(&self.session_id, Target::All)
    }

    /// Rejects one hunk and applies the result: the restored content goes through
    /// the editor's buffer sync ([`EditorHost::buffer_sync`]: a buffer-aware
    /// editor updates its buffer), else atomically to disk. Rejecting the last hunk of a file
    /// the agent created returns [`RejectOutcome::Delete`] without deleting
    /// anything: confirm with the user, then call [`Review::delete_file`].
    pub async fn reject_hunk(&self, path: &Path, hunk: HunkId) -> Result<RejectOutcome> {
        let path = self.path(path)?;
        let rejections = self
            .reviews
            .reject(self.host, &self.session_id, Target::Hunk(&path, hunk))
            .await?;
        single_outcome(rejections, &path)
    }

    /// Rejects every change to one file and applies it like
    /// [`Review::reject_hunk`]: a modified or deleted file gets its content
    /// before the agent back; a file the agent created returns
    /// [`RejectOutcome::Delete`].
    pub async fn reject_file(&self, path: &Path) -> Result<RejectOutcome> {
        let path = self.path(path)?;
        let rejections = self
            .reviews
            .reject(self.host, &self.session_id, Target::File(&path))
            .await?;
        single_outcome(rejections, &path)
    }

    /// Rejects every change of the session, writing each restored file.
    /// Returns every file's outcome; the `Delete` ones are for the caller to
    /// confirm and apply with [`Review::delete_file`].
    pub async fn reject_all(&self) -> Result<Vec<FileRejection>> {
        self.require_session()?;
        self.reviews
            .reject(self.host, &self.session_id, Target::All)
            .await
    }

    /// Deletes a file whose creation the user rejected (a reject that
    /// returned [`RejectOutcome::Delete`]). Any other file is refused, so
    /// this cannot delete what the agent did not create.
    pub async fn delete_file(&self, path: &Path) -> Result<()> {
        let path = self.path(path)?;
        self.reviews.delete_rejected(&self.session_id, &path).await
    }

    /// Waits until every agent edit reported so far is recorded (the
    /// session's worker reads the disk after a turn ends): call it before
    /// [`Review::turns`] right after a turn.
    pub async fn settled(&self) {
        self.reviews.settled(&self.session_id).await;
    }

    /// The turns whose edits can be rewound, oldest first: the prompt's
    /// first line, when it was sent, the files the agent touched.
    pub fn turns(&self) -> Vec<TurnInfo> {
        self.reviews.turns(&self.session_id)
    }

    /// What [`Review::rewind`] to before `turn` would change, file by file
    /// (the disk's text now and after), without changing anything.
    pub async fn rewind_plan(&self, turn: TurnNumber) -> Result<super::RewindPlan> {
        self.require_session()?;
        self.reviews.rewind_plan(&self.session_id, turn).await
    }

    /// Takes the workspace back to its state before `turn`: every agent
    /// edit of that turn and later ones undone (created files removed,
    /// deleted ones restored, edited ones given their text back), restored
    /// through the buffer sync ([`EditorHost::buffer_sync`]) like a reject, so a
    /// buffer-aware editor keeps the user's unsaved lines by merging.
    pub async fn rewind(&self, turn: TurnNumber) -> Result<super::Rewound> {
        self.require_session()?;
        self.reviews.rewind(self.host, &self.session_id, turn).await
    }

    /// The session's checkpoints (to save with a transcript, or to hand to
    /// the session that continues the chat with [`Review::adopt_checkpoints`]).
    pub fn checkpoints(&self) -> Checkpoints {
        self.reviews.checkpoints(&self.session_id)
    }

    /// The session continues a chat with these checkpoints; paths outside
    /// its workspace are dropped.
    pub fn adopt_checkpoints(&self, checkpoints: Checkpoints) -> Result<()> {
        let workspace = self.require_session()?;
        self.reviews
            .adopt_checkpoints(&self.session_id, workspace, checkpoints);
        Ok(())
    }

    /// Tells review that the user changed a file (typed in its buffer, or
    /// saved it; `None`: deleted it), so the user's text is not taken for
    /// the agent's and survives rejects. `on_disk`: the file holds `content`
    /// now (the user saved it, or the editor just read it); unsaved typing
    /// leaves the disk as it was, and the disk then differing from the
    /// buffer is no edit of the agent's. Returns the file's summary after
    /// the change, `None` when it has nothing under review.
    pub fn record_user_edit(
        &self,
        path: &Path,
        content: Option<&str>,
        on_disk: bool,
    ) -> Result<Option<FileSummary>> {
        let path = self.path(path)?;
        Ok(self
            .reviews
            .record_user_edit(&self.session_id, &path, content, on_disk))
    }
}

/// The outcome of a one-file reject.
fn single_outcome(rejections: Vec<FileRejection>, path: &Path) -> Result<RejectOutcome> {
    rejections
        .into_iter()
        .next()
        .map(|r| r.outcome)
        .ok_or_else(|| {
            Error::NotFound(format!(
                "`{}` has no agent edits under review; refresh the review list",
                path.display()
            ))
        })
}
