//! The sync of agent edits with an editor's open buffers.
//!
//! The client owns each file's state; the editor applies and draws. For
//! every file an agent touches, [`FileSyncs`] keeps what the agent last
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
//! - `fs/write_text_file` ([`Origin::Write`]): merged ([`merge3`]) with
//!   base = what the agent saw, so the user's unsaved lines it read and
//!   wrote back are not a conflict;
//! - a change the agent made on disk with its own tools, seen by review
//!   ([`Origin::Disk`], [`FileSyncs::disk_changed`]): merged with base = the
//!   disk text the buffer was last in sync with; an unmodified buffer takes
//!   it without saving (the text is on disk already).
//!
//! The editor answers once ([`Applied`]); [`Applied::Stale`] (the user typed
//! since the last report) carries the buffer's text, and the caller plans
//! again from it, at most [`MAX_ATTEMPTS`] times. A buffer with open
//! conflict blocks answers [`Applied::Waiting`]: the agent's text waits
//! ([`FileSyncs::pending`]) until the user's next report without conflict
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

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use parking_lot::{Mutex, MutexGuard};
use serde::Serialize;
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};
use crate::merge::{merge3, ConflictLabels};
use crate::schema;
use crate::update::SessionId;

/// An `fs/read_text_file` that passed the workspace check.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadTextFile {
    /// The session the request belongs to.
    pub session_id: SessionId,
    /// Absolute, normalized path inside the session's workspace.
    pub path: PathBuf,
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
    /// Absolute, normalized path inside the session's workspace.
    pub path: PathBuf,
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

/// What the editor did with a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The editor applied the write (to a buffer and/or disk). `old_content`
    /// is the text it replaced (`None` for a new file), for edit review.
    Handled {
        /// The text the write replaced (`None` for a new file).
        old_content: Option<String>,
    },
    /// The editor's buffer of the path has unsaved edits: the client writes
    /// the agent's text to disk (so the agent's view of the file stays
    /// true) and the buffer keeps the user's work.
    KeptUnsaved {
        /// The text the agent last saw of the file (it read the unsaved
        /// buffer, or a mention embedded it): the "before" of its edit. A
        /// user's unsaved line it wrote back is not the agent's change.
        /// `None`: it saw the disk.
        seen: Option<String>,
        /// What the buffer holds now: the agent's change merged into the
        /// user's unsaved text (recorded as the user's text, so review
        /// shows only the agent's lines as its own). `None`: the buffer was
        /// left alone (it has open conflict blocks; the editor merges the
        /// change once they are resolved).
        buffer: Option<String>,
    },
    /// The agent's change was merged with text of the user's it had not
    /// seen (saved after the agent read the file, or typed during the turn
    /// of a write that read nothing): `text` holds both, without conflict
    /// blocks, and is what the file holds now.
    Merged {
        /// The text the merge replaced (the user's saved text), the "before"
        /// of the edit for review: what differs from it in `text` is the
        /// agent's change (`None`: no file).
        old_content: Option<String>,
        /// The merge.
        text: String,
        /// The editor saved `text` (its buffer took it); `false`: the
        /// client writes it to disk.
        written: bool,
    },
    /// The editor has no buffer for the path: the client writes the disk.
    NotHandled,
}

/// How many instructions one write may take: the first, and a new one each
/// time the user typed between the editor's last report and the
/// instruction's arrival. Typing through three round trips is unlikely;
/// after that the write goes to disk and the editor merges it later.
pub const MAX_ATTEMPTS: usize = 3;

/// A buffer's text as the editor reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferText {
    /// The buffer's whole text, as the file would hold it (conflict blocks
    /// included). Shared: what an agent read of the buffer is this text
    /// (see [`FileSyncs::saw`]), and a big buffer is held once.
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
    pub path: PathBuf,
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

/// One file's state.
#[derive(Debug, Default)]
struct FileSync {
    revision: u64,
    buffer: Option<BufferText>,
    /// Shared with `buffer` when an agent read it: one copy of a big
    /// buffer however many sessions read it.
    seen: HashMap<SessionId, Arc<str>>,
    /// The file's text when each session's latest prompt that carried it
    /// went out (the disk's, for a buffer with unsaved edits): the base of
    /// a write by an agent that saw nothing of the file (a blind whole-file
    /// write; see [`FileSyncs::turn_started`]).
    turn_start: HashMap<SessionId, TurnText>,
    /// The disk text the buffer was last in sync with: the base of merging
    /// the agent's next disk edit into its unsaved edits.
    disk: Option<String>,
    /// The agent's disk text the buffer has not taken yet.
    pending: Option<String>,
    /// The base of merging `pending` when it is an agent's write that
    /// waited (what that agent saw), not its edit on disk: the synced disk
    /// text may be a save of the user's, whose lines the agent never saw
    /// (found by the data-safety test: a blind write waiting on open
    /// conflicts dropped the lines the user had saved during the turn).
    pending_base: Option<Arc<str>>,
    /// `disk` is the user's save (or a read), not a text the agent wrote or
    /// the buffer took from it: a waiting write is then merged against
    /// `pending_base`, else against `disk` as a disk edit is.
    disk_from_user: bool,
    /// Counts the agent's disk edits of the file ([`FileSyncs::disk_changed`]).
    disk_edits: u64,
    /// The buffer answered [`Applied::Waiting`] to `pending` as a disk
    /// edit (its merge conflicts next to open conflict blocks): planned
    /// again once a report has none. Until then (an instruction on its way,
    /// stale answers, a write that waited) any report plans it again.
    waiting: bool,
}

/// A file's text when a session's prompt went out.
#[derive(Debug, Clone)]
struct TurnText {
    text: Arc<str>,
    /// The session's prompt count then ([`FileSyncs::turn_started`]).
    turn: u64,
    /// The user saved the file since: a difference from `text` may be
    /// theirs, so it is no "before" of the agent's edits
    /// ([`FileSyncs::text_before_turn`]); it stays the base of a blind
    /// write, whose user lines the merge keeps.
    saved: bool,
}

/// What to do with a report of the user's buffer ([`FileSyncs::user_reported`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// The report is the user's edit of the file's current text (review
    /// records it). `false` while an agent's disk text waits for the
    /// buffer: the buffer would pass for the user undoing that change; it
    /// is reported again once merged.
    pub record: bool,
    /// Plan the waiting disk text again now ([`FileSyncs::plan_disk`]):
    /// the buffer has no conflict blocks any more, or its merge was not
    /// found to conflict with them yet.
    pub sync: bool,
}

/// What [`FileSyncs`] holds of one file, for diagnostics
/// ([`FileSyncs::state`]): a test or a bug report compares it with the
/// editor's buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileState {
    /// The file's instruction count.
    pub revision: u64,
    /// The buffer's text and version as last known.
    pub buffer: Option<BufferText>,
    /// The disk text the buffer was last in sync with.
    pub disk: Option<String>,
    /// The agent's disk text the buffer has not taken yet.
    pub pending: Option<String>,
}

/// How the buffer in a user's report relates to the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDisk {
    /// Unsaved text (typing, undo, a resolution).
    No,
    /// The user saved the buffer: the disk holds its text.
    Saved,
    /// The buffer was just read from disk: not an edit, only its state.
    Read,
}

/// The sync state of every file the agents of one connection touched.
#[derive(Debug, Default)]
pub struct FileSyncs {
    files: HashMap<PathBuf, FileSync>,
    /// Counts each session's prompts ([`FileSyncs::turn_started`]).
    turns: HashMap<SessionId, u64>,
}

impl FileSyncs {
    /// Nothing known yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The editor reported a buffer's text in the answer of a read, or when
    /// it sent a prompt. The version held already wins when it is newer: an
    /// instruction answered while the read's answer was on its way (the
    /// editor's versions of a file only grow).
    pub fn reported(&mut self, path: &Path, buffer: BufferText) {
        let file = self.files.entry(path.to_owned()).or_default();
        if file
            .buffer
            .as_ref()
            .is_none_or(|known| known.version < buffer.version)
        {
            file.buffer = Some(buffer);
        }
    }

    /// The buffer's text as last reported.
    pub fn buffer(&self, path: &Path) -> Option<&BufferText> {
        self.files.get(path)?.buffer.as_ref()
    }

    /// What is held of the file, if anything.
    pub fn state(&self, path: &Path) -> Option<FileState> {
        let file = self.files.get(path)?;
        Some(FileState {
            revision: file.revision,
            buffer: file.buffer.clone(),
            disk: file.disk.clone(),
            pending: file.pending.clone(),
        })
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

    /// What the agent of `session` last saw of the file, if not the disk
    /// (shared: a big file is not copied for each write).
    pub fn seen(&self, session: &SessionId, path: &Path) -> Option<Arc<str>> {
        self.files.get(path)?.seen.get(session).cloned()
    }

    /// The base of a write by the agent of `session`: what it last saw of
    /// the file, else the file's text when its current prompt went out.
    /// A save is the user's text, never a base: after `:w`, the agent's
    /// write-back of what it read is merged against what it read, so the
    /// saved lines it never saw stay. `None`: nothing known (the caller
    /// takes the disk).
    pub fn base_of_write(&self, session: &SessionId, path: &Path) -> Option<Arc<str>> {
        let file = self.files.get(path)?;
        file.seen
            .get(session)
            .or_else(|| file.turn_start.get(session).map(|t| &t.text))
            .cloned()
    }

    /// A prompt of `session` goes out: `texts` are the files' texts now
    /// (the disk's, for buffers with unsaved edits), the base of a blind
    /// write in this turn. A file not among them (no buffer now) keeps its
    /// text of an earlier prompt: found by the in-memory property test, a
    /// buffer wiped between two prompts otherwise left a blind write no base
    /// but the disk, and the line the user saved before wiping it was lost.
    /// (An agent writing from what it remembers of an earlier turn, after
    /// the user saved lines since, is not covered: the text at this turn's
    /// prompt is the base, as for an agent that re-read the file with its
    /// own tools. Keeping the first text instead broke a file recreated
    /// with other lines under the same path.)
    pub fn turn_started(&mut self, session: &SessionId, texts: Vec<(PathBuf, Arc<str>)>) {
        let turn = self.turns.entry(session.clone()).or_default();
        *turn += 1;
        let turn = *turn;
        for (path, text) in texts {
            self.files.entry(path).or_default().turn_start.insert(
                session.clone(),
                TurnText {
                    text,
                    turn,
                    saved: false,
                },
            );
        }
    }

    /// The text `path` had when the current prompt of `session` went out,
    /// if the editor held it then and the user has not saved it since;
    /// `None` otherwise (an earlier prompt's text is not this turn's).
    ///
    /// Review uses it as the "before" of an agent edit that came with no
    /// diff and was written before the client could read the file (an
    /// agent that writes right after announcing the tool call, or reports
    /// it afterwards). Only a copy taken when the prompt is sent is safe: a
    /// buffer read later may already hold the new text, because editors
    /// reload unmodified buffers whose file changed (Neovim's `autoread` on
    /// `:checktime`, focus or cursor-hold hooks) without any notice that
    /// would let them keep the old text. Review still checks that the file
    /// changed on disk during the turn before it believes the copy.
    pub fn text_before_turn(&self, session: &SessionId, path: &Path) -> Option<Arc<str>> {
        let now = *self.turns.get(session)?;
        let at = self.files.get(path)?.turn_start.get(session)?;
        (at.turn == now && !at.saved).then(|| at.text.clone())
    }

    /// The user saved `path` (the editor reports every save, of buffers
    /// under review or not): its texts at the prompts are no "before" of an
    /// agent edit any more ([`FileSyncs::text_before_turn`]).
    pub fn saved(&mut self, path: &Path) {
        if let Some(file) = self.files.get_mut(path) {
            for at in file.turn_start.values_mut() {
                at.saved = true;
            }
        }
    }

    /// Forgets what a closed session saw.
    pub fn drop_session(&mut self, session: &SessionId) {
        self.turns.remove(session);
        for file in self.files.values_mut() {
            file.seen.remove(session);
            file.turn_start.remove(session);
        }
        self.files.retain(|_, f| {
            f.buffer.is_some()
                || !f.seen.is_empty()
                || !f.turn_start.is_empty()
                || f.disk.is_some()
                || f.pending.is_some()
        });
    }

    /// The user's report of a buffer (`on_disk`: saved or just read, so the
    /// disk holds its text): says whether review records it and whether the
    /// agent's waiting disk text is planned again.
    pub fn user_reported(&mut self, path: &Path, buffer: BufferText, on_disk: OnDisk) -> Report {
        let file = self.files.entry(path.to_owned()).or_default();
        let outdated = file
            .buffer
            .as_ref()
            .is_some_and(|known| buffer.version < known.version);
        if outdated && on_disk != OnDisk::Read {
            // Sent before an instruction the buffer took since (the editor's
            // versions only grow; a buffer read anew starts over with a
            // `Read` report): the buffer's text then is in the answer, and
            // the editor reports the result again.
            return Report {
                record: false,
                sync: false,
            };
        }
        if on_disk == OnDisk::Saved {
            self.saved(path);
        }
        let file = self.files.entry(path.to_owned()).or_default();
        if on_disk != OnDisk::No {
            // The buffer is the disk's text now (a save overwrote the
            // agent's waiting text, or a read took it).
            file.disk = Some(buffer.text.to_string());
            file.disk_from_user = true;
            file.pending = None;
            file.pending_base = None;
            file.waiting = false;
        }
        let sync = file.pending.is_some() && (!file.waiting || !has_conflict_blocks(&buffer.text));
        file.buffer = Some(buffer);
        Report {
            record: file.pending.is_none() && on_disk != OnDisk::Read,
            sync,
        }
    }

    /// The disk text the buffer of `path` was last in sync with.
    pub fn disk(&self, path: &Path) -> Option<&str> {
        self.files.get(path)?.disk.as_deref()
    }

    /// The agent's disk text the buffer has not taken yet.
    pub fn pending(&self, path: &Path) -> Option<&str> {
        self.files.get(path)?.pending.as_deref()
    }

    /// The agent changed `path` on disk from `before` (`None`: unknown or
    /// no file) to `after`. Returns whether the buffer needs an instruction
    /// ([`FileSyncs::plan_disk`]): not when it is in sync with `after`
    /// already.
    pub fn disk_changed(&mut self, path: &Path, before: Option<&str>, after: &str) -> bool {
        let file = self.files.entry(path.to_owned()).or_default();
        if file.disk.as_deref() == Some(after) {
            file.pending = None;
            file.pending_base = None;
            file.waiting = false;
            return false;
        }
        if file.disk.is_none() {
            // Never in sync through us: the buffer had the text before the
            // change (the editor reloads a clean buffer; unsaved edits were
            // made on it).
            file.disk = before.map(str::to_owned);
        }
        file.pending = Some(after.to_owned());
        file.pending_base = None;
        file.disk_edits += 1;
        true
    }

    /// The instruction for the agent's waiting disk text of `path`, if any:
    /// merged with base = the disk text the buffer was last in sync with;
    /// for an agent's write that waited while that text is the user's save,
    /// what that agent saw (no merge when neither is known: the buffer's
    /// unsaved edits are left alone).
    pub fn plan_disk(&mut self, path: &Path) -> Option<Instruction> {
        let file = self.files.get(path)?;
        let content = file.pending.clone()?;
        let disk: Option<Arc<str>> = file.disk.as_deref().map(Into::into);
        let base = match file.pending_base.clone() {
            Some(seen) if file.disk_from_user || disk.is_none() => Some(seen),
            _ => disk,
        };
        Some(self.plan_from(path, base.as_deref(), content, Origin::Disk))
    }

    /// The client wrote `text` to the disk of `path`, which no buffer has
    /// (an agent's write merged with the user's saved text).
    pub fn wrote_disk(&mut self, path: &Path, text: &str) {
        let file = self.files.entry(path.to_owned()).or_default();
        file.disk = Some(text.to_owned());
        file.disk_from_user = false;
    }

    /// The editor answered every attempt of `instruction` (planned with
    /// `base`) stale: a write goes to disk and waits for the buffer, like a
    /// disk edit (merged on the synced text, else on `base`); a disk edit
    /// without a base gives up (the buffer keeps the user's text).
    pub fn gave_up(&mut self, instruction: &Instruction, base: &str) {
        let file = self.files.entry(instruction.path.clone()).or_default();
        match instruction.origin {
            Origin::Write => {
                file.pending = Some(instruction.content.clone());
                file.pending_base = instruction.base.clone();
                file.disk.get_or_insert_with(|| base.to_owned());
            }
            Origin::Disk if instruction.merge.is_none() && file.disk.is_none() => {
                if file.pending.as_deref() == Some(instruction.content.as_str()) {
                    file.pending = None;
                    file.pending_base = None;
                }
            }
            Origin::Disk | Origin::Restore => {}
        }
    }

    /// The instruction for writing `content` to `path`: `base` is the text
    /// the writer changed (what the agent saw; for a restore, the text the
    /// review knew). The merge is made against the buffer's reported text.
    pub fn plan(&mut self, path: &Path, base: &str, content: &str, origin: Origin) -> Instruction {
        self.plan_from(path, Some(base), content.to_owned(), origin)
    }

    fn plan_from(
        &mut self,
        path: &Path,
        base: Option<&str>,
        content: String,
        origin: Origin,
    ) -> Instruction {
        let file = self.files.entry(path.to_owned()).or_default();
        file.revision += 1;
        let merge = match (&file.buffer, base) {
            (Some(buffer), Some(base)) => {
                let merged = merge3(base, &buffer.text, &content);
                Some(PlannedMerge {
                    version: buffer.version,
                    text: merged.render(&ConflictLabels::default()),
                    conflicts: merged.conflict_count(),
                })
            }
            _ => None,
        };
        Instruction {
            path: path.to_owned(),
            revision: file.revision,
            content,
            merge,
            origin,
            base: base.map(Into::into),
            disk_edits: file.disk_edits,
            session: None,
        }
    }

    /// The editor answered `instruction`: the buffer's text is known again
    /// (or there is none).
    pub fn answered(&mut self, instruction: &Instruction, applied: &Applied) {
        let file = self.files.entry(instruction.path.clone()).or_default();
        let content = &instruction.content;
        // The text a buffer without unsaved edits saved: the merge for an
        // agent's write (made against the text the user saved since the
        // agent read it), else the content.
        let saved = instruction.saved_text();
        // The buffer's text now (a buffer left waiting did not change).
        match applied {
            Applied::NoBuffer => file.buffer = None,
            Applied::Saved { version, .. } => {
                file.buffer = Some(BufferText {
                    text: saved.into(),
                    version: *version,
                });
            }
            Applied::Reloaded { version } => {
                file.buffer = Some(BufferText {
                    text: content.as_str().into(),
                    version: *version,
                });
            }
            Applied::Merged { version } => {
                file.buffer = instruction.merge.as_ref().map(|m| BufferText {
                    text: m.text.as_str().into(),
                    version: *version,
                });
            }
            Applied::Waiting | Applied::Locked => {}
            Applied::Stale(buffer) => file.buffer = Some(buffer.clone()),
        }
        // The disk text the buffer is in sync with now. A restore merged
        // into unsaved edits leaves the disk alone; every other taken text
        // is the disk's (saved, on disk already, or written by the caller
        // next). A newer disk text that came meanwhile stays pending.
        let synced = match applied {
            Applied::Merged { .. } if instruction.origin == Origin::Restore => false,
            Applied::NoBuffer
            | Applied::Saved { .. }
            | Applied::Reloaded { .. }
            | Applied::Merged { .. } => true,
            Applied::Waiting => {
                match instruction.origin {
                    // Its merge conflicts next to the open blocks.
                    Origin::Disk => file.waiting = true,
                    // Written to disk by the caller; tried as a disk edit
                    // next (it may merge around the open blocks).
                    Origin::Write => {
                        file.pending = Some(content.clone());
                        file.pending_base = instruction.base.clone();
                    }
                    Origin::Restore => {}
                }
                false
            }
            Applied::Stale(_) | Applied::Locked => false,
        };
        if synced {
            file.disk_from_user = false;
            file.disk = Some(match applied {
                Applied::Saved { .. } => saved.to_owned(),
                _ => content.clone(),
            });
            // A write supersedes the agent's older disk text, not one that
            // came while it was on its way (claude-agent-acp edits on disk
            // with its own tools, next to its fs/write_text_file).
            let superseded = match instruction.origin {
                Origin::Disk => file.pending.as_ref() == Some(content),
                Origin::Write | Origin::Restore => file.disk_edits == instruction.disk_edits,
            };
            if superseded {
                file.pending = None;
                file.pending_base = None;
                file.waiting = false;
            }
        }
    }
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

/// A loaded buffer's answer to an agent's read ([`Buffers::read`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferRead {
    /// What the agent gets: the lines it asked for.
    pub text: String,
    /// The buffer's version now.
    pub version: u64,
    /// The whole buffer; `None` when it is still at the version the client
    /// said it knows (then it answers only the range: an agent paging
    /// through a 1,000,000-line buffer must not ship it each time).
    pub view: Option<BufferView>,
}

/// The whole of a buffer an agent read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferView {
    /// The whole text as the agent reads it (open conflict blocks as the
    /// agent's side): what it saw of the file.
    pub whole: Arc<str>,
    /// The buffer's text as it is (conflict blocks included).
    pub buffer: Arc<str>,
}

/// A buffer as a prompt goes out ([`BufferSync::turn_started`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferAtPrompt {
    /// The file, keyed like the agent's requests (absolute, symlinks
    /// followed).
    pub path: PathBuf,
    /// The buffer's text.
    pub text: String,
    /// The buffer's version.
    pub version: u64,
    /// The file's text on disk, when the buffer has unsaved edits.
    pub disk: Option<String>,
}

/// An editor's buffers, as the sync drives them: the one narrow trait an
/// editor implements to get agent reads of unsaved text, agent writes
/// merged into unsaved buffers, and the agent's own disk edits brought
/// into them ([`BufferSync`]). Every method is called from a task of its
/// own and must not wait on the user.
#[async_trait]
pub trait Buffers: Send + Sync + 'static {
    /// The loaded buffer of `request.path`, cut to `request.line` and
    /// `request.limit`; `None` when no loaded buffer has the file (the
    /// client reads the disk). `known`: the buffer version the client
    /// holds the text of (see [`BufferRead::view`]).
    async fn read(&self, request: &ReadTextFile, known: Option<u64>) -> Result<Option<BufferRead>> {
        let _ = (request, known);
        Ok(None)
    }

    /// Applies one instruction to the loaded buffer of its file (see
    /// [`Instruction`] for what each kind of buffer takes) and answers.
    async fn apply(&self, instruction: &Instruction) -> Result<Applied>;

    /// The file's text on disk (`None`: no file, not a regular file, too
    /// big, or not UTF-8). Defaults to reading it as the client reads a file
    /// for an agent: a FIFO or device in the workspace is refused, not
    /// waited on (found by the security test: a plain read of a FIFO with
    /// no writer hung the agent's `fs/read_text_file` forever). An editor
    /// with its own file system (a test's memory, a remote one) overrides
    /// it.
    async fn disk_text(&self, path: &Path) -> Option<String> {
        crate::fs::read_text_file(path, None, None, crate::fs::DEFAULT_MAX_READ_BYTES)
            .await
            .ok()
    }

    /// Tells the user something about a file an agent wrote (a refused
    /// write, a disk edit its buffer could not take); `session`: the agent's
    /// session, when known. Defaults to the log.
    fn tell_user(&self, path: &Path, session: Option<&SessionId>, message: String) {
        let _ = session;
        tracing::warn!(path = %path.display(), "{message}");
    }
}

/// The buffer sync of one connection's agents: the one owner of every
/// file's state ([`FileSyncs`]), the order of instructions, and the task
/// that brings buffers up to date with the agents' own disk edits. An
/// editor makes one with its [`Buffers`] and hands it to the client
/// ([`crate::EditorHost::buffer_sync`]); the client serves
/// `fs/read_text_file` and `fs/write_text_file` through it and tells it of
/// every disk edit review records. The editor reports the user's edits
/// and saves of buffers ([`BufferSync::user_reported`],
/// [`BufferSync::saved`]) and the buffers each prompt goes out with
/// ([`BufferSync::turn_started`]).
pub struct BufferSync {
    core: Arc<Core>,
    /// The task bringing buffers up to date with the agent's disk edits,
    /// started with the first one (see [`Core::sync_disk`]).
    disk_sync: OnceLock<mpsc::UnboundedSender<DiskJob>>,
}

impl std::fmt::Debug for BufferSync {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferSync")
            .field("files", &*self.core.files.lock())
            .finish_non_exhaustive()
    }
}

/// What the [`BufferSync`] and its disk-sync task share.
struct Core {
    files: Mutex<FileSyncs>,
    /// Held from planning an instruction to recording its answer: an
    /// editor applies instructions in the order they arrive, and their
    /// answers must be recorded in that order too. Two tasks woken by their
    /// answers could otherwise record an older buffer text and synced disk
    /// text over a newer one.
    instructions: tokio::sync::Mutex<()>,
    buffers: Arc<dyn Buffers>,
}

/// Work for the disk-sync task, done in order.
#[derive(Debug)]
enum DiskJob {
    /// Send the buffer of this file the agent's waiting disk text; the
    /// session whose agent made the edit, when known.
    Sync(PathBuf, Option<SessionId>),
    /// Answered once the jobs before it are done.
    Barrier(oneshot::Sender<()>),
}

impl BufferSync {
    /// Nothing known yet; instructions go to `buffers`.
    pub fn new(buffers: Arc<dyn Buffers>) -> Self {
        Self {
            core: Arc::new(Core {
                files: Mutex::new(FileSyncs::new()),
                instructions: tokio::sync::Mutex::new(()),
                buffers,
            }),
            disk_sync: OnceLock::new(),
        }
    }

    /// The files' state (held briefly: never across an await).
    pub fn files(&self) -> MutexGuard<'_, FileSyncs> {
        self.core.files.lock()
    }

    /// What is held of a file's sync with its buffer, for diagnostics.
    pub fn state(&self, path: &Path) -> Option<FileState> {
        self.files().state(path)
    }

    /// Serves an `fs/read_text_file` from the loaded buffer of its file
    /// (`None`: no buffer has it; the client reads the disk), and records
    /// what the agent saw: the base of its next write.
    pub async fn read(&self, request: &ReadTextFile) -> Result<Option<String>> {
        let core = &self.core;
        // The client's copy of the buffer, by its version: a buffer still at
        // it answers with the range only.
        let known = core.files.lock().buffer(&request.path).cloned();
        let read = core
            .buffers
            .read(request, known.as_ref().map(|b| b.version))
            .await?;
        let Some(read) = read else {
            // Read from disk (by the client, next): the disk is what it saw.
            // A whole read is kept as the base of its next write, which is
            // then merged with what the user saves meanwhile; a range is not
            // the file (the base falls back to the text at the prompt).
            let whole = match (request.line, request.limit) {
                (None, None) => core.buffers.disk_text(&request.path).await.map(Into::into),
                _ => None,
            };
            core.files
                .lock()
                .saw(&request.session_id, &request.path, whole);
            return Ok(None);
        };
        let mut files = core.files.lock();
        let whole = match read.view {
            Some(view) => {
                files.reported(
                    &request.path,
                    BufferText {
                        text: view.buffer,
                        version: read.version,
                    },
                );
                view.whole
            }
            // Unchanged (an editor answers so only without open conflicts,
            // when the agent reads the buffer as it is).
            None => match known {
                Some(known) if known.version == read.version => known.text,
                _ => {
                    return Err(Error::Host(format!(
                        "the editor answered a read of `{}` as unchanged at a version the client does not hold; update the editor plugin and the client together",
                        request.path.display()
                    )))
                }
            },
        };
        files.saw(&request.session_id, &request.path, Some(whole));
        Ok(Some(read.text))
    }

    /// Serves a write ([`WriteTextFile`]: the agent's `fs/write_text_file`,
    /// or a review reject's restore) through the editor's buffers; see
    /// [`Core::write`].
    pub async fn write(&self, request: &WriteTextFile) -> Result<WriteOutcome> {
        self.core.write(request).await
    }

    /// The client recorded an agent's write (`waited`: its outcome was
    /// [`WriteOutcome::KeptUnsaved`] without a buffer): one that waited for the
    /// buffer (open conflicts, or typing under every merge) is tried as a
    /// disk edit now. Not earlier: the merged buffer's report would reach
    /// review before the write and be overwritten by it.
    pub fn write_recorded(&self, session: &SessionId, path: &Path, waited: bool) {
        if waited {
            self.queue(DiskJob::Sync(path.to_owned(), Some(session.clone())));
        }
    }

    /// The agent changed `path` on disk with its own tools (claude-agent-acp
    /// and Codex edit files themselves and only report diffs): review read
    /// `after` from the disk, a tool call diff or the file watcher told it.
    /// `before` is the text review knew the file had before (`None`:
    /// unknown, or no file). Called from the session's review worker before
    /// the change's `ReviewChanged`, for every change it records; the
    /// buffer is brought up to date by the disk-sync task (needs a tokio
    /// runtime), in the order of the file's changes.
    pub fn disk_changed(
        &self,
        session: &SessionId,
        path: &Path,
        before: Option<&str>,
        after: &str,
    ) {
        if self.files().disk_changed(path, before, after) {
            self.queue(DiskJob::Sync(path.to_owned(), Some(session.clone())));
        }
    }

    /// The editor reported a buffer's text with its version (the user's
    /// edit of a reviewed buffer; `on_disk`: saved or just read): the next
    /// merge into it is made against that text. Returns whether review
    /// records it as the user's edit: not while the agent's disk text waits
    /// for the buffer (it is reported again once merged). A report without
    /// conflict blocks sends that waiting text again.
    pub async fn user_reported(&self, path: &Path, buffer: BufferText, on_disk: OnDisk) -> bool {
        if self.files().pending(path).is_some() {
            // An instruction for the agent's disk text may be out: its
            // answer is taken first, so a report the editor sent after
            // applying it is not judged by the state before.
            self.disk_synced().await;
        }
        let report = self.files().user_reported(path, buffer, on_disk);
        if report.sync {
            self.queue(DiskJob::Sync(path.to_owned(), None));
        }
        report.record
    }

    /// The user saved the buffer of `path` (an editor reports every save):
    /// see [`FileSyncs::saved`].
    pub fn saved(&self, path: &Path) {
        self.files().saved(path);
    }

    /// A prompt of `session` goes out with these buffers: their text is
    /// known from now on (unless a newer report came first), so the agent's
    /// first write or disk edit of one is merged in one instruction; their
    /// files' texts are the base of a write by an agent that reads nothing
    /// first ([`FileSyncs::base_of_write`]) and the "before" of its edits
    /// that come without a diff ([`BufferSync::text_before_turn`]).
    pub fn turn_started(&self, session: &SessionId, buffers: Vec<BufferAtPrompt>) {
        let mut files = self.files();
        let mut texts = Vec::with_capacity(buffers.len());
        for b in buffers {
            let text: Arc<str> = b.text.into();
            texts.push((
                b.path.clone(),
                b.disk.map_or_else(|| text.clone(), Into::into),
            ));
            files.reported(
                &b.path,
                BufferText {
                    text,
                    version: b.version,
                },
            );
        }
        files.turn_started(session, texts);
    }

    /// See [`FileSyncs::text_before_turn`].
    pub fn text_before_turn(&self, session: &SessionId, path: &Path) -> Option<String> {
        self.files()
            .text_before_turn(session, path)
            .map(|t| t.to_string())
    }

    /// Forgets what a closed session saw.
    pub fn drop_session(&self, session: &SessionId) {
        self.files().drop_session(session);
    }

    /// A prompt of `session` goes out: the files it embeds whole
    /// (`file://` resources) are what its agent saw of them.
    pub fn saw_prompt(&self, session: &SessionId, blocks: &[schema::ContentBlock]) {
        let embedded: Vec<(PathBuf, &str)> = blocks
            .iter()
            .filter_map(|block| {
                let schema::ContentBlock::Resource(embedded) = block else {
                    return None;
                };
                let schema::EmbeddedResourceResource::TextResourceContents(res) =
                    &embedded.resource
                else {
                    return None;
                };
                // A range (`#L3-9`) is not the whole file.
                let path = res
                    .uri
                    .strip_prefix("file://")
                    .filter(|p| !p.contains('#'))
                    .map(percent_decode)?;
                // Keyed like the agent's requests: resolved (symlinks
                // followed). Resolved before the state is locked: it reads
                // the file system.
                let path = std::fs::canonicalize(&path).unwrap_or_else(|_| PathBuf::from(path));
                Some((path, res.text.as_str()))
            })
            .collect();
        let mut files = self.files();
        for (path, text) in embedded {
            files.saw(session, &path, Some(text.into()));
        }
    }

    /// Waits until the disk edits queued so far were sent to the editor
    /// and answered.
    pub async fn disk_synced(&self) {
        if self.disk_sync.get().is_none() {
            return;
        }
        let (tx, rx) = oneshot::channel();
        self.queue(DiskJob::Barrier(tx));
        let _ = rx.await;
    }

    fn queue(&self, job: DiskJob) {
        let jobs = self.disk_sync.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tokio::spawn(Core::run_disk_sync(self.core.clone(), rx));
            tx
        });
        if jobs.send(job).is_err() {
            tracing::warn!("disk edit not synced: the task has stopped");
        }
    }
}

impl Core {
    /// The disk-sync task: one per connection, so neither review's worker
    /// nor the read loop waits on the editor, and the instructions of a
    /// file go out in the order of its changes. Ends with the
    /// [`BufferSync`].
    async fn run_disk_sync(core: Arc<Self>, mut jobs: mpsc::UnboundedReceiver<DiskJob>) {
        while let Some(job) = jobs.recv().await {
            match job {
                DiskJob::Sync(path, session) => {
                    if let Err(e) = core.sync_disk(&path, session.as_ref()).await {
                        tracing::warn!(path = %path.display(), "disk edit not applied to its buffer: {e}");
                        core.buffers.tell_user(
                            &path,
                            session.as_ref(),
                            format!(
                                "could not bring the buffer of {} up to date with the agent's edit on disk ({e}); reload the buffer from disk to see it",
                                path.display()
                            ),
                        );
                    }
                }
                DiskJob::Barrier(done) => {
                    let _ = done.send(());
                }
            }
        }
    }

    /// Sends one instruction (holding the instruction lock) and records
    /// its answer.
    async fn send(&self, instruction: &Instruction) -> Result<Applied> {
        let applied = self.buffers.apply(instruction).await?;
        self.files.lock().answered(instruction, &applied);
        Ok(applied)
    }

    /// Serves a write ([`WriteTextFile`]: the agent's `fs/write_text_file`,
    /// or a review reject's restore) through the editor's buffers: one
    /// instruction, again after each stale answer (at most
    /// [`MAX_ATTEMPTS`]). The base of the merge is what the writer
    /// changed: for the agent, what it last saw of the file, else the
    /// file's text when its prompt went out, else the disk
    /// ([`FileSyncs::base_of_write`]); never the user's save, whose lines
    /// the agent never saw would read as its deletions. For a restore, the
    /// text review knew the file had.
    async fn write(&self, request: &WriteTextFile) -> Result<WriteOutcome> {
        let buffers = &*self.buffers;
        let path = request.path.as_path();
        let restore = match &request.kind {
            WriteKind::Restore { current } => Some(current.as_deref()),
            WriteKind::Agent => None,
        };
        let seen = match restore {
            Some(_) => None,
            None => self.files.lock().seen(&request.session_id, path),
        };
        // What the disk holds now: the text an agent's write replaces when
        // no buffer has unsaved edits.
        let disk: Option<Arc<str>> = match restore {
            Some(_) => None,
            None => buffers.disk_text(path).await.map(Into::into),
        };
        // Shared, not copied per attempt. `known`: not the disk now, whose
        // text the agent may never have seen either.
        let (base, known): (Option<Arc<str>>, bool) = match restore {
            Some(current) => (current.map(Into::into), true),
            None => match self.files.lock().base_of_write(&request.session_id, path) {
                Some(base) => (Some(base), true),
                None => (disk.clone(), false),
            },
        };
        let origin = match restore {
            Some(_) => Origin::Restore,
            None => Origin::Write,
        };
        let mut outcome = None;
        // The last instruction answered stale, with its base.
        let mut last = None;
        // Once per stale answer: the user typed (or saved) between the
        // editor's last report of the buffer and the instruction's arrival,
        // so the merge is made again from the text the answer carries.
        for _ in 0..MAX_ATTEMPTS {
            let _turn = self.instructions.lock().await;
            let (instruction, base) = {
                let mut files = self.files.lock();
                let base: Arc<str> = match (&base, restore) {
                    (Some(base), _) => base.clone(),
                    // A restore of text review did not know: taken whole.
                    (None, Some(_)) => files
                        .buffer(path)
                        .map_or_else(|| "".into(), |b| b.text.clone()),
                    // An agent's write of a file that is not on disk.
                    (None, None) => "".into(),
                };
                let mut instruction = files.plan(path, &base, &request.content, origin);
                instruction.session = Some(request.session_id.clone());
                if !known {
                    // A write that waits is merged later against the synced
                    // disk text, as before.
                    instruction.base = None;
                }
                (instruction, base)
            };
            match self.send(&instruction).await? {
                Applied::NoBuffer if origin == Origin::Write => {
                    outcome = Some(self.write_without_buffer(
                        buffers,
                        request,
                        &base,
                        disk.as_deref(),
                    )?);
                    break;
                }
                Applied::NoBuffer => {
                    outcome = Some(WriteOutcome::NotHandled);
                    break;
                }
                Applied::Saved { old_content, .. } => {
                    let saved = instruction.saved_text();
                    outcome = Some(if saved != request.content {
                        WriteOutcome::Merged {
                            old_content,
                            text: saved.to_owned(),
                            written: true,
                        }
                    } else {
                        WriteOutcome::Handled { old_content }
                    });
                    break;
                }
                Applied::Merged { .. } if origin == Origin::Restore => {
                    // A restore leaves the disk alone.
                    outcome = Some(WriteOutcome::Handled { old_content: None });
                    break;
                }
                Applied::Merged { .. } => {
                    outcome = Some(WriteOutcome::KeptUnsaved {
                        seen: Some(base.to_string()),
                        buffer: instruction.merge.map(|m| m.text),
                    });
                    break;
                }
                Applied::Waiting => {
                    // Open conflict blocks: the write goes to disk and waits
                    // (FileSyncs::pending); its merge is tried as a disk edit
                    // once the client recorded it.
                    outcome = Some(WriteOutcome::KeptUnsaved {
                        seen: seen.as_deref().map(str::to_owned),
                        buffer: None,
                    });
                    break;
                }
                Applied::Locked => {
                    // The editor told the user, naming the option.
                    return Err(Error::Host(format!(
                        "the user has `{}` open read-only in the editor; the file was not written: ask the user to make the buffer writable, then write again",
                        path.display()
                    )));
                }
                Applied::Reloaded { .. } => {
                    return Err(Error::Host(format!(
                        "the editor took the agent's write of `{}` as a disk edit and did not save it; update the editor plugin and the client together",
                        path.display()
                    )));
                }
                Applied::Stale(_) => last = Some((instruction, base)),
            }
        }
        let outcome = match outcome {
            Some(outcome) => outcome,
            None => {
                tracing::info!(
                    path = %path.display(),
                    "the buffer changed under every merge; the write goes to disk and waits"
                );
                if let Some((instruction, base)) = &last {
                    // Tried again as a disk edit once the client wrote and
                    // recorded it, and after the user's next report.
                    self.files.lock().gave_up(instruction, base);
                }
                WriteOutcome::KeptUnsaved {
                    seen: seen.as_deref().map(str::to_owned),
                    buffer: None,
                }
            }
        };
        if restore.is_none() {
            // It knows what it wrote.
            self.files.lock().saw(
                &request.session_id,
                path,
                Some(request.content.as_str().into()),
            );
        }
        Ok(outcome)
    }

    /// Brings the buffer of `path` up to date with the agent's waiting
    /// disk text ([`FileSyncs::disk_changed`]: an edit it made with its own
    /// tools, or a write that waited): one instruction, again after each
    /// stale answer (at most [`MAX_ATTEMPTS`]); nothing when none waits
    /// (taken by an earlier call, or overwritten by a save). After that the
    /// user's next report plans it again.
    async fn sync_disk(&self, path: &Path, session: Option<&SessionId>) -> Result<()> {
        for _ in 0..MAX_ATTEMPTS {
            let _turn = self.instructions.lock().await;
            let Some(mut instruction) = self.files.lock().plan_disk(path) else {
                return Ok(());
            };
            instruction.session = session.cloned();
            let Applied::Stale(_) = self.send(&instruction).await? else {
                return Ok(());
            };
            if instruction.merge.is_none() && self.files.lock().disk(path).is_none() {
                // No base to merge on: the unsaved edits stay as they are
                // (the agent's text is on disk).
                tracing::info!(
                    path = %path.display(),
                    "no base to merge the agent's disk edit into unsaved edits"
                );
                self.files.lock().gave_up(&instruction, "");
                return Ok(());
            }
        }
        tracing::info!(
            path = %path.display(),
            "the buffer changed under every merge of a disk edit; it waits for the next report"
        );
        Ok(())
    }

    /// An agent's write of a file no buffer has: from `base`, while the
    /// disk holds `disk`. When the disk is not the base (the user saved
    /// lines the agent did not see, then closed the buffer), the agent's
    /// change is merged into the disk's text; a merge that conflicts is
    /// refused (the file is left alone, the agent told to read it again),
    /// as no buffer can show the conflict blocks.
    fn write_without_buffer(
        &self,
        buffers: &dyn Buffers,
        request: &WriteTextFile,
        base: &str,
        disk: Option<&str>,
    ) -> Result<WriteOutcome> {
        let Some(disk) = disk.filter(|d| *d != base) else {
            return Ok(WriteOutcome::NotHandled);
        };
        let path = request.path.display();
        let merged = merge3(base, disk, &request.content);
        if merged.conflict_count() > 0 {
            buffers.tell_user(
                &request.path,
                Some(&request.session_id),
                format!(
                    "the agent's write of {path} was refused: it changes lines you saved after it last saw the file; the agent was asked to read the file again"
                ),
            );
            return Err(Error::Host(format!(
                "`{path}` changed since you last read it (the user saved it), and your write changes the same lines; read the file again and redo the change"
            )));
        }
        let text = merged.render(&ConflictLabels::default());
        self.files.lock().wrote_disk(&request.path, &text);
        Ok(WriteOutcome::Merged {
            old_content: Some(disk.to_owned()),
            text,
            written: false,
        })
    }
}

/// A `file://` URI's path with its `%XX` escapes decoded (Lua's
/// `vim.uri_from_fname` escapes spaces and other reserved bytes).
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether a buffer's text holds a conflict block's first marker line.
fn has_conflict_blocks(text: &str) -> bool {
    let start = format!("<<<<<<< {}", ConflictLabels::default().ours);
    text.lines().any(|l| l == start)
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
        let base = s.seen(&sid("s"), p).unwrap();
        let i = s.plan(p, &base, "hello ACP\nunsaved line\n", Origin::Write);
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
    fn a_restore_keeps_lines_another_chat_wrote_since() {
        // Two chats' reviews of one file (data-safety seed 141793484, case
        // 63): the first chat's review knew "first\nbase\n"; the second
        // agent wrote its line since. The first chat's reject restores
        // "base\n": the unmodified buffer saves the merge, keeping the
        // second agent's line, not the restore whole.
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        s.reported(p, buffer("first\nbase\nsecond\n", 2));
        let i = s.plan(p, "first\nbase\n", "base\n", Origin::Restore);
        assert_eq!(i.saved_text(), "base\nsecond\n");
        s.answered(
            &i,
            &Applied::Saved {
                old_content: Some("first\nbase\nsecond\n".into()),
                version: 3,
            },
        );
        assert_eq!(s.disk(p), Some("base\nsecond\n"));
    }

    #[test]
    fn a_save_after_the_agent_read_is_merged_not_overwritten() {
        // The agent reads the buffer, the user types a line and saves (:w),
        // the agent writes back what it read plus its own line: the save is
        // the user's text, so the base stays what the agent read.
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        let read = "one\ntwo\n";
        s.reported(p, buffer(read, 1));
        s.saw(&sid("s"), p, Some(read.into()));
        s.user_reported(p, buffer("mine\none\ntwo\n", 3), OnDisk::Saved);
        let base = s.base_of_write(&sid("s"), p).unwrap();
        assert_eq!(&*base, read);
        let i = s.plan(p, &base, "one\ntwo\nagent\n", Origin::Write);
        let merge = i.merge.clone().unwrap();
        assert_eq!(
            (merge.version, merge.text.as_str(), merge.conflicts),
            (3, "mine\none\ntwo\nagent\n", 0)
        );
        // An unmodified buffer saves the merge: that is the disk's text now.
        assert_eq!(i.saved_text(), "mine\none\ntwo\nagent\n");
        s.answered(
            &i,
            &Applied::Saved {
                old_content: Some("mine\none\ntwo\n".into()),
                version: 4,
            },
        );
        assert_eq!(s.disk(p), Some("mine\none\ntwo\nagent\n"));
        assert_eq!(s.buffer(p), Some(&buffer("mine\none\ntwo\nagent\n", 4)));
    }

    #[test]
    fn a_write_that_waited_merges_later_against_what_the_agent_saw_not_a_save() {
        // The buffer has open conflict blocks; the user saved it (the
        // blocks and a line of theirs on disk); the agent's write, made from
        // what it saw before, waits, and is merged as a disk edit later.
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        let saved = "<<<<<<< buffer\nmine\n=======\n>>>>>>> agent\nx\nsaved\n";
        s.user_reported(p, buffer(saved, 2), OnDisk::Saved);
        let i = s.plan(p, "x\n", "x\nagent\n", Origin::Write);
        s.answered(&i, &Applied::Waiting);
        let d = s.plan_disk(p).unwrap();
        assert_eq!(d.base.as_deref(), Some("x\n"));
        let merge = d.merge.unwrap();
        assert!(merge.text.contains("mine\n") && merge.text.contains("saved\n"));
        assert!(merge.text.contains("agent\n"));
        // An edit of its own on disk merges against the synced text again.
        assert!(s.disk_changed(p, None, "disk edit\n"));
        assert_eq!(s.plan_disk(p).unwrap().base.as_deref(), Some(saved));
    }

    #[test]
    fn a_blind_write_merges_against_the_text_at_the_prompt() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        let q = Path::new("/w/b.txt");
        s.turn_started(&sid("s"), vec![(p.into(), "one\ntwo\n".into())]);
        assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("one\ntwo\n"));
        assert_eq!(s.base_of_write(&sid("other"), p), None);
        // The buffer not known: no merge (the editor answers stale with its
        // text, the user's saved line in it, and the write is planned again).
        let i = s.plan(p, "one\ntwo\n", "one\ntwo\nagent\n", Origin::Write);
        assert_eq!(i.merge, None);
        s.answered(&i, &Applied::Stale(buffer("one\nmine\ntwo\n", 5)));
        let i = s.plan(p, "one\ntwo\n", "one\ntwo\nagent\n", Origin::Write);
        let merge = i.merge.clone().unwrap();
        assert_eq!(
            (merge.version, merge.text.as_str()),
            (5, "one\nmine\ntwo\nagent\n")
        );
        assert_eq!(i.saved_text(), "one\nmine\ntwo\nagent\n");
        // What the agent read wins over the text at the prompt; a newer
        // prompt replaces the texts it carries, others stay; a closed
        // session's go.
        s.saw(&sid("s"), p, Some("read\n".into()));
        assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("read\n"));
        s.turn_started(&sid("s"), vec![(q.into(), "q\n".into())]);
        s.saw(&sid("s"), p, None);
        assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("one\ntwo\n"));
        assert_eq!(s.base_of_write(&sid("s"), q).as_deref(), Some("q\n"));
        s.drop_session(&sid("s"));
        assert_eq!(s.base_of_write(&sid("s"), q), None);
    }

    #[test]
    fn the_disk_as_base_makes_a_conflict_of_the_users_line() {
        // What the merge was before the agent's view was its base.
        let mut s = FileSyncs::new();
        let p = Path::new("/w/hello.txt");
        // The user changed the line the agent read from the buffer and
        // changed again.
        s.reported(
            p,
            BufferText {
                text: "hello world!\n".into(),
                version: 7,
            },
        );
        let i = s.plan(p, "hello world\n", "hello ACP!\n", Origin::Write);
        assert_eq!(i.merge.unwrap().conflicts, 1);
        let i = s.plan(p, "hello world!\n", "hello ACP!\n", Origin::Write);
        assert_eq!(i.merge.unwrap().conflicts, 0);
    }

    #[test]
    fn answers_keep_the_buffers_text_and_version() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        // Unknown buffer: no merge to offer; the editor answers stale.
        let i = s.plan(p, "a\nx\n", "b\nx\n", Origin::Write);
        assert_eq!(i.merge, None);
        let now = BufferText {
            text: "a\nx\nmine\n".into(),
            version: 3,
        };
        s.answered(&i, &Applied::Stale(now.clone()));
        assert_eq!(s.buffer(p), Some(&now));
        let i = s.plan(p, "a\nx\n", "b\nx\n", Origin::Write);
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
    fn a_buffer_unsaved_at_the_prompt_is_merged_in_one_instruction() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        let unsaved = |text: &str, version| BufferText {
            text: text.into(),
            version,
        };
        s.reported(p, unsaved("a\nx\nmine\n", 4));
        let merge = s.plan(p, "a\nx\n", "b\nx\n", Origin::Write).merge.unwrap();
        assert_eq!((merge.version, merge.text.as_str()), (4, "b\nx\nmine\n"));
        // A newer version held is kept over an older report (a read answered
        // before an instruction, recorded after it).
        s.reported(p, unsaved("a\nx\nmine 2\n", 6));
        s.reported(p, unsaved("a\nx\nmine\n", 5));
        assert_eq!(s.buffer(p).unwrap().version, 6);
    }

    #[test]
    fn a_disk_edit_that_came_while_a_write_was_on_its_way_stays_pending() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        s.reported(p, buffer("a\n", 2));
        // The agent's disk edit before the write: the write supersedes it.
        assert!(s.disk_changed(p, Some("a\n"), "d1\n"));
        let w = s.plan(p, "a\n", "w\n", Origin::Write);
        s.answered(
            &w,
            &Applied::Saved {
                old_content: Some("a\n".into()),
                version: 3,
            },
        );
        assert_eq!(s.pending(p), None);
        // One after the write was planned is newer than it: it stays, merged
        // on the text the write left.
        let w = s.plan(p, "w\n", "w2\n", Origin::Write);
        assert!(s.disk_changed(p, Some("w2\n"), "d2\n"));
        s.answered(
            &w,
            &Applied::Saved {
                old_content: Some("w\n".into()),
                version: 4,
            },
        );
        assert_eq!(s.pending(p), Some("d2\n"));
        assert_eq!(s.disk(p), Some("w2\n"));
        let i = s.plan_disk(p).unwrap();
        assert_eq!((i.content.as_str(), i.origin), ("d2\n", Origin::Disk));
    }

    #[test]
    fn what_a_session_saw_goes_with_it() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        s.saw(&sid("s1"), p, Some("x\n".into()));
        s.saw(&sid("s2"), p, Some("y\n".into()));
        s.drop_session(&sid("s1"));
        assert_eq!(s.seen(&sid("s1"), p).as_deref(), None);
        assert_eq!(s.seen(&sid("s2"), p).as_deref(), Some("y\n"));
        s.saw(&sid("s2"), p, None);
        assert_eq!(s.seen(&sid("s2"), p).as_deref(), None);
    }

    fn buffer(text: &str, version: u64) -> BufferText {
        BufferText {
            text: text.into(),
            version,
        }
    }

    #[test]
    fn a_disk_edit_merges_against_the_text_the_buffer_was_last_in_sync_with() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        // An agent write the buffer saved: the disk holds it.
        let i = s.plan(p, "a\nb\nc\n", "a\nB\nc\n", Origin::Write);
        s.answered(
            &i,
            &Applied::Saved {
                old_content: Some("a\nb\nc\n".into()),
                version: 2,
            },
        );
        assert_eq!(s.disk(p), Some("a\nB\nc\n"));
        // The user types; the agent then edits the file on disk itself.
        let r = s.user_reported(p, buffer("mine\na\nB\nc\n", 3), OnDisk::No);
        assert_eq!(
            r,
            Report {
                record: true,
                sync: false
            }
        );
        assert!(s.disk_changed(p, Some("stale before"), "a\nB\nC\n"));
        assert_eq!(s.pending(p), Some("a\nB\nC\n"));
        let i = s.plan_disk(p).unwrap();
        assert_eq!(i.origin, Origin::Disk);
        assert_eq!(i.content, "a\nB\nC\n");
        // Base = the synced disk text, not the `before` review passed.
        assert_eq!(
            i.merge,
            Some(PlannedMerge {
                version: 3,
                text: "mine\na\nB\nC\n".into(),
                conflicts: 0
            })
        );
        s.answered(&i, &Applied::Merged { version: 4 });
        assert_eq!(s.disk(p), Some("a\nB\nC\n"));
        assert_eq!(s.pending(p), None);
        assert_eq!(s.buffer(p), Some(&buffer("mine\na\nB\nC\n", 4)));
        // The same text seen again (the watcher after a diff): nothing to do.
        assert!(!s.disk_changed(p, None, "a\nB\nC\n"));
        assert_eq!(s.plan_disk(p), None);
    }

    #[test]
    fn a_disk_edit_of_a_file_never_synced_uses_the_text_before_it() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        s.user_reported(p, buffer("x\nmine\n", 5), OnDisk::No);
        assert!(s.disk_changed(p, Some("x\n"), "X\n"));
        let merge = s.plan_disk(p).unwrap().merge.unwrap();
        assert_eq!((merge.text.as_str(), merge.conflicts), ("X\nmine\n", 0));
        // No base at all: no merge, and giving up leaves the buffer alone.
        let q = Path::new("/w/b.txt");
        s.user_reported(q, buffer("mine\n", 1), OnDisk::No);
        assert!(s.disk_changed(q, None, "agent\n"));
        let i = s.plan_disk(q).unwrap();
        assert_eq!(i.merge, None);
        s.answered(&i, &Applied::Stale(buffer("mine\n", 1)));
        s.gave_up(&i, "");
        assert_eq!(s.pending(q), None);
    }

    #[test]
    fn an_unmodified_buffer_reloads_a_disk_edit_and_is_in_sync_with_it() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        assert!(s.disk_changed(p, Some("a\n"), "b\n"));
        let i = s.plan_disk(p).unwrap();
        // The buffer's text is not known: only an unmodified buffer can
        // take it (a modified one answers stale and gets the merge next).
        assert_eq!(i.merge, None);
        s.answered(&i, &Applied::Reloaded { version: 9 });
        assert_eq!(s.disk(p), Some("b\n"));
        assert_eq!(s.buffer(p), Some(&buffer("b\n", 9)));
        assert_eq!(s.pending(p), None);
    }

    #[test]
    fn a_disk_edit_waits_for_open_conflicts_and_is_planned_after_a_clean_report() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        let blocks = "<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nz\n";
        s.user_reported(p, buffer("old\nz\n", 1), OnDisk::Saved);
        s.user_reported(p, buffer(blocks, 2), OnDisk::No);
        assert!(s.disk_changed(p, None, "agent\nZ\n"));
        let i = s.plan_disk(p).unwrap();
        s.answered(&i, &Applied::Waiting);
        assert_eq!(s.pending(p), Some("agent\nZ\n"));
        // Typing with the blocks still open: not recorded (the buffer lacks
        // the agent's newer text), not planned.
        assert_eq!(
            s.user_reported(p, buffer(&format!("{blocks}typed\n"), 3), OnDisk::No),
            Report {
                record: false,
                sync: false
            }
        );
        // Resolved: planned again, from the synced base.
        assert_eq!(
            s.user_reported(p, buffer("mine\nz\n", 4), OnDisk::No),
            Report {
                record: false,
                sync: true
            }
        );
        let i = s.plan_disk(p).unwrap();
        let merge = i.merge.clone().unwrap();
        assert_eq!((merge.version, merge.conflicts), (4, 1));
        // A newer disk text arriving while this one was out stays pending.
        assert!(s.disk_changed(p, None, "agent\nZ2\n"));
        s.answered(&i, &Applied::Merged { version: 5 });
        assert_eq!(s.disk(p), Some("agent\nZ\n"));
        assert_eq!(s.pending(p), Some("agent\nZ2\n"));
    }

    #[test]
    fn a_report_older_than_the_last_answer_is_not_the_users_edit() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        s.user_reported(p, buffer("a\n", 1), OnDisk::Read);
        s.user_reported(p, buffer("a\nmine\n", 2), OnDisk::No);
        assert!(s.disk_changed(p, None, "A\n"));
        let i = s.plan_disk(p).unwrap();
        s.answered(&i, &Applied::Merged { version: 4 });
        // Typed at 3, merged over at 4: the merge has that text already.
        let late = s.user_reported(p, buffer("a\nmine\nmore\n", 3), OnDisk::No);
        assert!(!late.record);
        assert_eq!(s.buffer(p).unwrap().version, 4);
        // A buffer read anew starts its versions over.
        assert!(!s.user_reported(p, buffer("A\n", 1), OnDisk::Read).record);
        assert!(s.user_reported(p, buffer("A\nx\n", 2), OnDisk::No).record);
    }

    #[test]
    fn a_write_answered_waiting_waits_on_disk_and_a_save_overrides_it() {
        let mut s = FileSyncs::new();
        let p = Path::new("/w/a.txt");
        s.user_reported(p, buffer("old\n", 1), OnDisk::Read);
        let i = s.plan(p, "old\n", "new\n", Origin::Write);
        s.answered(&i, &Applied::Waiting);
        assert_eq!((s.pending(p), s.disk(p)), (Some("new\n"), Some("old\n")));
        // Not known to conflict yet: a report plans it as a disk edit, even
        // with conflict blocks open (it may merge around them).
        let blocks = "<<<<<<< buffer\nmine\n=======\nold\n>>>>>>> agent\n";
        assert_eq!(
            s.user_reported(p, buffer(blocks, 2), OnDisk::No),
            Report {
                record: false,
                sync: true
            }
        );
        // The user saves over it (Neovim asked whether to): the disk is theirs.
        let r = s.user_reported(p, buffer("mine\n", 3), OnDisk::Saved);
        assert_eq!(
            r,
            Report {
                record: true,
                sync: false
            }
        );
        assert_eq!((s.pending(p), s.disk(p)), (None, Some("mine\n")));
        // A read is the buffer's state, never the user's edit.
        assert!(!s.user_reported(p, buffer("mine\n", 4), OnDisk::Read).record);
        // A restore merged into unsaved edits leaves the disk alone.
        let i = s.plan(p, "mine\n", "restored\n", Origin::Restore);
        s.answered(&i, &Applied::Merged { version: 4 });
        assert_eq!(s.disk(p), Some("mine\n"));
    }
}
