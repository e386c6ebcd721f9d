//! The sync of agent edits with an editor's open buffers.
//!
//! The client owns each file's state; the editor applies and draws. For
//! every file an agent touches, [`FileRecords`] keeps what the agent last
//! saw of it (per session: what `fs/read_text_file` answered, what a
//! mention embedded, what it wrote), the buffer's text as the editor last
//! reported it with the editor's version of it (for Neovim, `b:changedtick` tagged with the buffer number),
//! the disk text the buffer was last in sync with, the agent's newer disk
//! text the buffer has not taken yet, and a revision number per file.
//!
//! An agent's edit reaches a buffer as ONE [`Instruction`]: "revision N: if
//! your buffer is unmodified, set `content` (and save it, unless it is on
//! disk already); if it is modified and still at version V, set the merge".
//! Two kinds of edit are planned here:
//!
//! - `fs/write_text_file` ([`Origin::Write`]): merged ([`merge3`](crate::edits::merge::merge3)) with
//!   base = what the agent saw, so the user's unsaved lines it read and
//!   wrote back are not a conflict;
//! - a change the agent made on disk with its own tools, seen by review
//!   ([`Origin::Disk`], [`FileRecords::disk_changed`]): merged with base = the
//!   disk text the buffer was last in sync with; an unmodified buffer takes
//!   it without saving (the text is on disk already).
//!
//! The editor answers once ([`Applied`]); [`Applied::Stale`] (the user typed
//! since the last report) carries the buffer's text, and the caller plans
//! again from it, at most [`MAX_ATTEMPTS`] times. A buffer with open
//! conflict blocks answers [`Applied::Waiting`]: the agent's text waits
//! ([`FileRecords::pending`]) until the user's next report without conflict
//! blocks, and is planned again then.
//!
//! ```text
//!                 report(text, version)          plan(write | disk edit)
//!   (unknown) ───────────────────────────▶ Known ─────────────────────▶ Sent(rev N)
//!       ▲                                  ▲ ▲ ▲                         │
//!       │ NoBuffer                         │ │ └ Saved/Reloaded/Merged ──┤
//!       └──────────────────────────────────┼─┼────────── NoBuffer ───────┤
//!                                          │ └──── Stale(text) ──────────┤ (plan again)
//!                                          │                             │
//!                                          └─ report without ── Pending ◀┘ Waiting
//!                                             conflict blocks   (disk text kept)
//!                                             (plan again)
//! ```

mod buffers;
mod driver;
mod files;
mod instruction;
#[cfg(test)]
mod tests;

use serde::Serialize;

use crate::path::CanonicalPath;
use crate::session::update::SessionId;

pub use buffers::{BufferAtPrompt, BufferRead, BufferView, Buffers};
pub use driver::BufferSync;
pub(crate) use files::ReviewId;
pub use files::{FileRecords, FileState, OnDisk, Report};
pub use instruction::{Applied, BufferText, Instruction, Origin, PlannedMerge};

/// An `fs/read_text_file` that passed the workspace check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFile {
    /// The session the request belongs to.
    pub session_id: SessionId,
    /// The path as [`crate::edits::fs::Workspace::resolve`] returned it.
    pub path: CanonicalPath,
    /// 1-based first line.
    pub line: Option<u32>,
    /// Number of lines.
    pub limit: Option<u32>,
}

/// An `fs/write_text_file` that passed the workspace check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WriteTextFile {
    /// The session the request belongs to.
    pub session_id: SessionId,
    /// The path as [`crate::edits::fs::Workspace::resolve`] returned it.
    pub path: CanonicalPath,
    /// The complete new content.
    pub content: String,
    /// Whose text it is.
    pub kind: WriteKind,
}

/// Whose text a [`WriteTextFile`] writes.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WriteKind {
    /// The agent's `fs/write_text_file`.
    #[default]
    Agent,
    /// A review reject restores the text before the rejected hunks. An
    /// editor merges it into a buffer with unsaved edits against `current`
    /// and leaves the disk alone.
    Restore {
        /// The text the review knew the file had (`None`: nothing known).
        current: Option<String>,
    },
}

/// Where a write went: what [`BufferSync::write`] answers, what the client
/// does with the disk next, and what [`crate::edits::host::FileEdit::applied`]
/// tells the editor. (One enum for the three that were: the write's outcome,
/// the event's "applied" and half of the editor's answer.)
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "to", rename_all = "snake_case")]
pub enum WriteOutcome {
    /// No buffer has the file: the client writes the agent's text to disk.
    Disk,
    /// No buffer has the file, and the user saved lines the agent never saw
    /// (then closed the buffer): the client writes `text`, the agent's
    /// change merged into them.
    DiskMerged {
        /// The user's saved text the merge replaced: the "before" of the
        /// agent's change for review.
        #[serde(skip)]
        old_content: Option<String>,
        /// The merge, without conflict blocks.
        #[serde(skip)]
        text: String,
    },
    /// A buffer without unsaved edits took the text and saved it.
    Saved {
        /// The buffer's text before (`None`: a new file).
        #[serde(skip)]
        old_content: Option<String>,
    },
    /// A buffer without unsaved edits took the agent's change merged with
    /// lines the user saved after the agent read the file, and saved it.
    SavedMerged {
        /// The user's saved text the merge replaced.
        #[serde(skip)]
        old_content: Option<String>,
        /// The merge: the file's text now.
        #[serde(skip)]
        text: String,
    },
    /// The buffer has unsaved edits: the agent's change was merged into
    /// them (unsaved), and the client writes the agent's text to disk so
    /// the agent's view of the file stays true.
    MergedUnsaved {
        /// What the agent last saw of the file (the unsaved buffer it read,
        /// a mention's text): the "before" of its edit, so a user's unsaved
        /// line it wrote back is not its change. `None`: the disk.
        #[serde(skip)]
        seen: Option<String>,
        /// The buffer's text now, recorded as the user's (review shows only
        /// the agent's lines as its own).
        #[serde(skip)]
        buffer: String,
    },
    /// The buffer has open conflict blocks (or the user typed under every
    /// merge): the client writes the agent's text to disk, and the buffer
    /// takes the change once they are resolved.
    Waiting {
        /// As for [`WriteOutcome::MergedUnsaved`].
        #[serde(skip)]
        seen: Option<String>,
    },
}

impl WriteOutcome {
    /// A buffer took the write and saved it.
    pub fn saved(&self) -> bool {
        matches!(self, Self::Saved { .. } | Self::SavedMerged { .. })
    }

    /// The buffer kept the user's unsaved edits (the agent's change merged
    /// into them, or waiting).
    pub fn kept_unsaved(&self) -> bool {
        matches!(self, Self::MergedUnsaved { .. } | Self::Waiting { .. })
    }
}

/// How many instructions one write may take: the first, and a new one each
/// time the user typed between the editor's last report and the
/// instruction's arrival. Typing through three round trips is unlikely;
/// after that the write goes to disk and the editor merges it later.
pub const MAX_ATTEMPTS: usize = 3;
