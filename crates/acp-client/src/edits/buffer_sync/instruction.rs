//! The one instruction an agent's edit becomes for an editor's buffer, and
//! the editor's one answer to it.

use std::sync::Arc;

use crate::path::CanonicalPath;
use crate::session::update::SessionId;

#[cfg(doc)]
use super::{FileRecords, WriteOutcome};

/// A buffer's text as the editor reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferText {
    /// The buffer's whole text, as the file would hold it (conflict blocks
    /// included). Shared: what an agent read of the buffer is this text
    /// (see [`FileRecords::saw`]), and a big buffer is held once.
    pub text: Arc<str>,
    /// The editor's version of the buffer when it had `text` (it changes
    /// with every edit, undo and redo).
    pub version: u64,
}

/// The merge an [`Instruction`] carries: the writer's change merged into
/// the buffer's text (unsaved edits, or text the user saved after the
/// writer read the file).
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

/// Where the text of an [`Instruction`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The agent's `fs/write_text_file`: an unmodified buffer takes it and
    /// is saved; with unsaved edits, the caller writes the disk.
    Write,
    /// A review reject restores text (not the agent's write): a buffer with
    /// open conflicts takes it too, and the disk is left alone.
    Restore,
    /// The agent changed the file on disk itself: the text is on disk
    /// already, so an unmodified buffer takes it without saving.
    Disk,
}

/// What the editor is told to do with one write of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instruction {
    /// The file.
    pub path: CanonicalPath,
    /// Counts the instructions of this file; the answer names it.
    pub revision: u64,
    /// The text a buffer without unsaved edits takes (and is saved with,
    /// unless it is on disk already).
    pub content: String,
    /// The text the buffer takes instead of `content` when the client
    /// knows its text (and, for a disk edit, the base): valid only at
    /// `merge.version`. A buffer with unsaved edits keeps it unsaved. For an
    /// agent's write ([`Origin::Write`]) or a restore ([`Origin::Restore`])
    /// a buffer without them takes it too (the user may have saved lines
    /// the agent never saw; another chat's agent may have written lines
    /// this chat's review never saw, which its reject must not take away),
    /// saved when it has no conflict blocks; without a merge at its
    /// version, any buffer answers [`Applied::Stale`] (the write is planned
    /// again from its text).
    pub merge: Option<PlannedMerge>,
    /// Whose text it is.
    pub origin: Origin,
    /// The base `merge` was made from, when it is what the writer saw (not
    /// merely the disk at the time): an agent's write that waits is merged
    /// against it later.
    pub base: Option<Arc<str>>,
    /// How many disk edits of the file had come when it was planned: one
    /// that comes while the instruction is on its way is newer than its
    /// text and stays pending after the answer.
    pub disk_edits: u64,
    /// The session whose agent made the edit, when known: an editor names
    /// its chat (Neovim reports the buffer's next save to it).
    pub session: Option<SessionId>,
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
    /// The buffer had no unsaved edits and took the text of a disk edit
    /// ([`Origin::Disk`]) without saving it; it is marked unmodified.
    Reloaded {
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
    /// The buffer is not at the version the merge was made for (the user
    /// typed, or saved, since the editor's last report): its text now.
    Stale(BufferText),
    /// The buffer is read-only or not modifiable (`'readonly'`,
    /// `'nomodifiable'` in Neovim): left alone, and the user told. The
    /// agent's write is refused; the disk is left alone too.
    Locked,
}

impl Instruction {
    /// The text a buffer without unsaved edits takes and saves: for an
    /// agent's write or a restore, a merge without conflicts when it
    /// carries one (the editor takes the merge whenever it is at its
    /// version), else `content`.
    pub fn saved_text(&self) -> &str {
        match &self.merge {
            Some(m) if self.origin != Origin::Disk && m.conflicts == 0 => &m.text,
            _ => &self.content,
        }
    }
}
