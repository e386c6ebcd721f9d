//! The sync of agent writes with an editor's open buffers.
//!
//! The client owns each file's state; the editor applies and draws. For
//! every file an agent touches, [`FileSyncs`] keeps what the agent last
//! saw of it (per session: what `fs/read_text_file` answered, what a
//! mention embedded, what it wrote), the buffer's text as the editor last
//! reported it with the editor's version of it (Neovim's `b:changedtick`),
//! and a revision number per file. An agent's write to a buffer with
//! unsaved edits is merged here ([`merge3`], base = what the agent saw)
//! against the reported text, and the editor gets ONE [`Instruction`]:
//! "revision N: if your buffer is unmodified, set `content` and save; if it
//! is modified and still at version V, set the merge". The editor answers
//! once ([`Applied`]); [`Applied::Stale`] (the user typed since the last
//! report) carries the buffer's text, and the caller plans again from it,
//! at most [`MAX_ATTEMPTS`] times.
//!
//! ```text
//!                 report(text, version)            plan(write)
//!   (unknown) ───────────────────────────▶ Known ─────────────▶ Sent(rev N)
//!       ▲                                   ▲  ▲                 │
//!       │ NoBuffer                          │  └── Saved/Merged ─┤
//!       └───────────────────────────────────┼─────── NoBuffer ───┤
//!                                           └──── Stale(text) ───┘ (plan again)
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::merge::{merge3, ConflictLabels};
use crate::update::SessionId;

/// How many instructions one write may take: the first, and a new one each
/// time the user typed between the editor's last report and the
/// instruction's arrival. Typing through three round trips is unlikely;
/// after that the write goes to disk and the editor merges it later.
pub const MAX_ATTEMPTS: usize = 3;

/// A buffer's text as the editor reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferText {
    /// The buffer's whole text, as the file would hold it (conflict blocks
    /// included).
    pub text: String,
    /// The editor's version of the buffer when it had `text` (it changes
    /// with every edit, undo and redo).
    pub version: u64,
}

/// The merge an [`Instruction`] carries for a buffer with unsaved edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedMerge {
    /// The version the buffer must still be at.
    pub version: u64,
    /// The buffer's new text; conflicts are written between
    /// `<<<<<<< buffer` / `=======` / `>>>>>>> agent` lines.
    pub text: String,
    /// How many conflict blocks `text` holds.
    pub conflicts: usize,
}

/// What the editor is told to do with one write of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// The file.
    pub path: PathBuf,
    /// Counts the instructions of this file; the answer names it.
    pub revision: u64,
    /// The text a buffer without unsaved edits takes (and is saved with).
    pub content: String,
    /// The text a buffer with unsaved edits takes, when the client knows
    /// that buffer's text: valid only at `merge.version`.
    pub merge: Option<PlannedMerge>,
    /// A review reject restores text (not the agent's write): a buffer with
    /// open conflicts takes it too, and the disk is left alone.
    pub restore: bool,
}

/// The editor's one answer to an [`Instruction`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// No loaded buffer has the file.
    NoBuffer,
    /// The buffer had no unsaved edits: it took `content` and was saved.
    Saved {
        /// The buffer's text before (`None`: a file not created yet).
        old_content: Option<String>,
        /// The buffer's version now.
        version: u64,
    },
    /// The buffer had unsaved edits and took the merge (not saved).
    Merged {
        /// The buffer's version now.
        version: u64,
    },
    /// The buffer has open conflict blocks: left alone, it takes the write
    /// once they are resolved.
    Waiting,
    /// The buffer has unsaved edits and is not at the version the merge was
    /// made for: its text now.
    Stale(BufferText),
}

/// One file's state.
#[derive(Debug, Default)]
struct FileSync {
    revision: u64,
    buffer: Option<BufferText>,
    /// Shared with `read`: one copy of a big buffer however many sessions
    /// read it.
    seen: HashMap<SessionId, Arc<str>>,
    /// The whole text an agent's read of the buffer gave, at the buffer's
    /// version then. A later read at the same version sends only its range.
    read: Option<(u64, Arc<str>)>,
}

/// The sync state of every file the agents of one connection touched.
#[derive(Debug, Default)]
pub struct FileSyncs {
    files: HashMap<PathBuf, FileSync>,
}

impl FileSyncs {
    /// Nothing known yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The editor reported a buffer's text (in the answer of a read, or as
    /// the user's edit).
    pub fn reported(&mut self, path: &Path, buffer: BufferText) {
        self.files.entry(path.to_owned()).or_default().buffer = Some(buffer);
    }

    /// The buffer's text as last reported.
    pub fn buffer(&self, path: &Path) -> Option<&BufferText> {
        self.files.get(path)?.buffer.as_ref()
    }

    /// The agent of `session` saw `text` of the file; `None`: it read the
    /// disk (then the disk is what it saw).
    pub fn saw(&mut self, session: &SessionId, path: &Path, text: Option<Arc<str>>) {
        match text {
            Some(text) => {
                self.files
                    .entry(path.to_owned())
                    .or_default()
                    .seen
                    .insert(session.clone(), text);
            }
            None => {
                if let Some(file) = self.files.get_mut(path) {
                    file.seen.remove(session);
                }
            }
        }
    }

    /// What the agent of `session` last saw of the file, if not the disk.
    pub fn seen(&self, session: &SessionId, path: &Path) -> Option<&str> {
        self.files.get(path)?.seen.get(session).map(|t| &**t)
    }

    /// The whole text the last read of the file's buffer gave, and the
    /// buffer's version then. An editor asked for a range of a buffer still
    /// at that version sends the range only: reading 50 lines of a
    /// 1,000,000-line buffer must not ship the buffer each time.
    pub fn last_read(&self, path: &Path) -> Option<(u64, Arc<str>)> {
        self.files.get(path)?.read.clone()
    }

    /// A read of the file's buffer at `version` gave `whole`.
    pub fn read_at(&mut self, path: &Path, version: u64, whole: Arc<str>) {
        self.files.entry(path.to_owned()).or_default().read = Some((version, whole));
    }

    /// Forgets what a closed session saw.
    pub fn drop_session(&mut self, session: &SessionId) {
        for file in self.files.values_mut() {
            file.seen.remove(session);
        }
        self.files
            .retain(|_, f| f.buffer.is_some() || !f.seen.is_empty());
    }

    /// The instruction for writing `content` to `path`: `base` is the text
    /// the writer changed (what the agent saw; for a restore, the text the
    /// review knew). The merge is made against the buffer's reported text.
    pub fn plan(&mut self, path: &Path, base: &str, content: &str, restore: bool) -> Instruction {
        let file = self.files.entry(path.to_owned()).or_default();
        file.revision += 1;
        let merge = file.buffer.as_ref().map(|buffer| {
            let merged = merge3(base, &buffer.text, content);
            PlannedMerge {
                version: buffer.version,
                text: merged.render(&ConflictLabels::default()),
                conflicts: merged.conflict_count(),
            }
        });
        Instruction {
            path: path.to_owned(),
            revision: file.revision,
            content: content.to_owned(),
            merge,
            restore,
        }
    }

    /// The editor answered `instruction`: the buffer's text is known again
    /// (or there is none).
    pub fn answered(&mut self, instruction: &Instruction, applied: &Applied) {
        let file = self.files.entry(instruction.path.clone()).or_default();
        if *applied == Applied::NoBuffer {
            file.read = None;
        }
        file.buffer = match applied {
            Applied::NoBuffer => None,
            Applied::Saved { version, .. } => Some(BufferText {
                text: instruction.content.clone(),
                version: *version,
            }),
            Applied::Merged { version } => instruction.merge.as_ref().map(|m| BufferText {
                text: m.text.clone(),
                version: *version,
            }),
            Applied::Waiting => file.buffer.take(),
            Applied::Stale(buffer) => Some(buffer.clone()),
        };
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    fn sid(s: &str) -> SessionId {
        SessionId::new(s)
    }

    #[test]
    fn a_write_back_of_the_unsaved_buffer_the_agent_read_merges_clean() {
        // claude-code-acp 0.16.2: read `hello.txt` from the unsaved buffer,
        // wrote it back with its change.
        let mut s = FileSyncs::new();
        let p = Path::new("/w/hello.txt");
        let unsaved = "hello world\nunsaved line\n";
        s.reported(
            p,
            BufferText {
                text: unsaved.into(),
                version: 7,
            },
        );
        s.saw(&sid("s"), p, Some(unsaved.into()));
        let base = s.seen(&sid("s"), p).unwrap().to_owned();
        let i = s.plan(p, &base, "hello ACP\nunsaved line\n", false);
        assert_eq!(
            i.merge,
            Some(PlannedMerge {
                version: 7,
                text: "hello ACP\nunsaved line\n".into(),
                conflicts: 0
            })
        );
        assert_eq!(i.revision, 1);
    }

    #[test]
    fn the_disk_as_base_makes_a_conflict_of_the_users_line() {
        // What the merge was before the agent's view was its base.
        let mut s = FileSyncs::new();
        let p = Path::new("/w/hello.txt");
        s.reported(
            p,
            BufferText {
                text: "hello world\nunsaved line\n".into(),
                version: 7,
            },
        );
        let i = s.plan(p, "hello world\n", "hello ACP\nunsaved line\n", false);
        assert_eq!(i.merge.unwrap().conflicts, 1);
    }

    #[test]
    fn answers_keep_the_buffers_text_and_version() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        // Unknown buffer: no merge to offer; the editor answers stale.
        let i = s.plan(p, "a\nx\n", "b\nx\n", false);
        assert_eq!(i.merge, None);
        let now = BufferText {
            text: "a\nx\nmine\n".into(),
            version: 3,
        };
        s.answered(&i, &Applied::Stale(now.clone()));
        assert_eq!(s.buffer(p), Some(&now));
        let i = s.plan(p, "a\nx\n", "b\nx\n", false);
        assert_eq!(i.revision, 2);
        let merge = i.merge.clone().unwrap();
        assert_eq!((merge.version, merge.text.as_str()), (3, "b\nx\nmine\n"));
        s.answered(&i, &Applied::Merged { version: 4 });
        assert_eq!(
            s.buffer(p),
            Some(&BufferText {
                text: "b\nx\nmine\n".into(),
                version: 4
            })
        );
        s.answered(&i, &Applied::NoBuffer);
        assert_eq!(s.buffer(p), None);
    }

    #[test]
    fn what_a_session_saw_goes_with_it() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        s.saw(&sid("s1"), p, Some("x\n".into()));
        s.saw(&sid("s2"), p, Some("y\n".into()));
        s.drop_session(&sid("s1"));
        assert_eq!(s.seen(&sid("s1"), p), None);
        assert_eq!(s.seen(&sid("s2"), p), Some("y\n"));
        s.saw(&sid("s2"), p, None);
        assert_eq!(s.seen(&sid("s2"), p), None);
    }
}
