//! Rewind: the workspace taken back to its state before a turn, from the
//! session's checkpoints ([`crate::edits::checkpoint`]).
//!
//! A rewind is a restore like a review reject's: each file's text before
//! the turn goes through the editor's buffer sync as a restore (merged
//! into a buffer with unsaved edits, conflicts shown, one undo step per
//! buffer), else atomically to disk. Either way the base of the merge is
//! the agent's last text of the file, not the disk's: a line the user
//! saved after the agent's last edit is the user's edit, and stays (on
//! disk it is merged here; a conflict is written with both sides). Files the
//! agent created in the rewound turns are removed from disk (the editor
//! keeps a buffer of one with unsaved edits); files it deleted come back.
//! The review follows: the rewound edits leave it, earlier ones stay.
//!
//! The writes set the files' last known text first, under the lock the
//! worker holds while it reads, so the watcher never takes them for the
//! agent's edits.

use std::path::PathBuf;

use serde::Serialize;

use super::decisions::{emit, observe, remove_regular_file, write_content};
use super::watcher::{read_disk, Disk};
use super::{Job, Reviews};
use crate::edits::checkpoint::{Checkpoints, Restore, TurnInfo, TurnNumber};
use crate::edits::fs::Workspace;
use crate::edits::host::EditorHost;
use crate::edits::merge::{merge3, ConflictLabels};
use crate::error::{Error, Result};
use crate::path::CanonicalPath;
use crate::session::update::SessionId;
use tokio::sync::oneshot;

/// What a rewind would do to one file, for a preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RewindFile {
    /// The file.
    pub path: PathBuf,
    /// Its text on disk now (`None`: missing, or not readable as text).
    pub now: Option<String>,
    /// Its text after the rewind (`None`: it is removed).
    pub then: Option<String>,
}

/// What rewinding to before a turn would change, file by file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RewindPlan {
    /// The turn the workspace goes back to before.
    pub turn: TurnNumber,
    /// The files that change (ones already at their old text left out).
    pub files: Vec<RewindFile>,
}

/// What a rewind did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Rewound {
    /// Files given their text before the turn back (or brought back).
    pub restored: Vec<PathBuf>,
    /// Files the agent created in the rewound turns, removed from disk.
    pub removed: Vec<PathBuf>,
    /// Files whose buffer kept the user's unsaved lines around the restore
    /// (merged; conflicts shown in the buffer).
    pub merged: Vec<PathBuf>,
    /// Files that could not be restored, with why; they keep their text.
    pub failed: Vec<(PathBuf, String)>,
}

impl Reviews {
    /// The session's turns that can be rewound, oldest first.
    pub(crate) fn turns(&self, session_id: &SessionId) -> Vec<TurnInfo> {
        self.get(session_id)
            .map(|r| r.state.lock().checkpoints.turns())
            .unwrap_or_default()
    }

    /// The session's checkpoints, to save or to hand to the session that
    /// continues the chat.
    pub(crate) fn checkpoints(&self, session_id: &SessionId) -> Checkpoints {
        self.get(session_id)
            .map(|r| r.state.lock().checkpoints.clone())
            .unwrap_or_default()
    }

    /// The session continues a chat whose checkpoints these are (a forked
    /// or new session after a rewind, or a reopened transcript). Files
    /// outside the session's workspace are dropped: a saved store is input
    /// the user may not have written.
    pub(crate) fn adopt_checkpoints(
        &self,
        session_id: &SessionId,
        workspace: &Workspace,
        mut checkpoints: Checkpoints,
    ) {
        checkpoints.retain_files(|path| workspace.resolve(path).ok().as_deref() == Some(path));
        let review = self.get_or_start(session_id, workspace);
        review.state.lock().checkpoints = checkpoints;
    }

    /// Waits until the session's worker has recorded every edit it was
    /// told of (a turn that just ended has its last disk check queued).
    pub(crate) async fn settled(&self, session_id: &SessionId) {
        let Some(review) = self.get(session_id) else {
            return;
        };
        let (tx, rx) = oneshot::channel();
        if review.jobs.send(Job::Barrier(tx)).is_ok() {
            // An error means the worker is gone: nothing to wait for.
            let _ = rx.await;
        }
    }

    /// What rewinding to before `turn` would change.
    pub(crate) async fn rewind_plan(
        &self,
        session_id: &SessionId,
        turn: TurnNumber,
    ) -> Result<RewindPlan> {
        self.settled(session_id).await;
        let plan = self.plan_of(session_id, turn)?;
        let mut files = Vec::new();
        for r in plan {
            let now = disk_text(&r).await;
            let then = target(&r, now.as_deref());
            if now != then {
                files.push(RewindFile {
                    path: r.path,
                    now,
                    then,
                });
            }
        }
        Ok(RewindPlan { turn, files })
    }

    fn plan_of(&self, session_id: &SessionId, turn: TurnNumber) -> Result<Vec<Restore>> {
        let review = self.get(session_id).ok_or_else(|| {
            Error::NotFound(format!(
                "there is no turn {turn}: this chat has no turns to rewind yet"
            ))
        })?;
        let plan = review.state.lock().checkpoints.plan(turn);
        plan
    }

    /// Takes the workspace back to before `turn`. The turn and later ones
    /// leave the checkpoints when every file was restored; a file that
    /// failed keeps its text and them, so the rewind can be tried again.
    pub(crate) async fn rewind(
        &self,
        host: &dyn EditorHost,
        session_id: &SessionId,
        turn: TurnNumber,
    ) -> Result<Rewound> {
        self.settled(session_id).await;
        let plan = self.plan_of(session_id, turn)?;
        let Some(review) = self.get(session_id) else {
            return Ok(Rewound::default());
        };
        let _io = review.io.lock().await;
        let mut done = Rewound::default();
        for r in plan {
            // The store's paths are plain (it may have been saved and read
            // back): keyed by the one resolution, like every path that
            // reaches a file's state.
            let path = match CanonicalPath::resolve(&r.path) {
                Ok(path) => path,
                Err(e) => {
                    done.failed.push((r.path, e.to_string()));
                    continue;
                }
            };
            let now = disk_text(&r).await;
            let then = target(&r, now.as_deref());
            // Before any write: the watcher must see the client's text.
            let change = {
                let mut files = review.files.lock();
                files.set_known(&path, then.clone());
                let under_review = files.contains(&path);
                files
                    .with_file(&path, |t| {
                        observe(t, |t| {
                            if !under_review {
                                return;
                            }
                            match (&r.text, &now) {
                                (Some(text), _) => {
                                    t.record_write(now.as_deref(), text);
                                }
                                (None, Some(old)) => {
                                    t.record_delete(old);
                                }
                                (None, None) => {}
                            }
                        })
                    })
                    .1
            };
            emit(&self.events, session_id, change);
            match &r.text {
                Some(text) => {
                    // The buffer merges against the agent's last text too
                    // (the disk's when that is not known).
                    let base = r.agent_text.clone().or_else(|| now.clone());
                    let on_disk = then.as_deref();
                    match write_content(host, session_id, &path, text, base, on_disk).await {
                        Ok(Some(saved)) => {
                            self.record_user_edit(session_id, &path, Some(&saved), true);
                            done.merged.push(r.path.clone());
                            done.restored.push(r.path);
                        }
                        Ok(None) => {
                            if now.as_deref() != Some(text.as_str()) {
                                done.restored.push(r.path);
                            }
                        }
                        Err(e) => {
                            tracing::warn!(path = %r.path.display(), error = %e, "rewind could not restore a file");
                            review.files.lock().set_known(&path, now);
                            done.failed.push((r.path, e.to_string()));
                        }
                    }
                }
                None => match remove_regular_file(&r.path).await {
                    Ok(true) => done.removed.push(r.path),
                    Ok(false) => {}
                    Err(e) => {
                        review.files.lock().set_known(&path, now);
                        done.failed.push((r.path, e.to_string()));
                    }
                },
            }
        }
        if done.failed.is_empty() {
            review.state.lock().checkpoints.rewound(turn);
        }
        Ok(done)
    }
}

/// The text a rewind gives the file: its text before the turn, with what
/// the user changed since the agent's last edit merged in (a conflict
/// rendered with both sides). `None`: the file is removed.
fn target(r: &Restore, now: Option<&str>) -> Option<String> {
    let then = r.text.as_deref()?;
    let (Some(base), Some(now)) = (r.agent_text.as_deref(), now) else {
        return Some(then.to_owned());
    };
    if base == now {
        return Some(then.to_owned());
    }
    let merged = merge3(base, now, then);
    Some(merged.clean_text().unwrap_or_else(|| {
        merged.render(&ConflictLabels {
            ours: "yours".to_owned(),
            theirs: format!("before turn {}", r.turn),
            base: None,
        })
    }))
}

/// The file's text on disk now; `None` when missing or not text.
async fn disk_text(r: &Restore) -> Option<String> {
    match read_disk(&r.path, crate::edits::checkpoint::FILE_MAX_BYTES).await {
        Disk::Known(text) => text,
        Disk::Unreadable => None,
    }
}
