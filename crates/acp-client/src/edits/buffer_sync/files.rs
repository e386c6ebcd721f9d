//! Every file's record ([`FileRecords`]: one per file, one lock), and the
//! record's sync state: what each agent saw of the file, the text at each
//! session's prompt, the buffer as the editor last reported it, the disk
//! text the buffer is in sync with, and the agent's disk text the buffer
//! has not taken yet; and the planning of instructions from it. The
//! record's review part is in `records`.

mod records;

use std::collections::HashMap;
use std::sync::Arc;

use super::instruction::{Applied, BufferText, Instruction, Origin, PlannedMerge};
use crate::edits::diff::{join_lines, matches, split_lines};
use crate::edits::merge::{merge3, ConflictLabels};
use crate::path::CanonicalPath;
use crate::session::update::SessionId;
pub(crate) use records::ReviewId;
use records::{Reviewers, SessionFile};

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
    /// write; see [`FileRecords::turn_started`]).
    turn_start: HashMap<SessionId, TurnText>,
    /// The file's text at its first mention in each session's current
    /// turn (review's snapshot when a tool call first named it): what an
    /// agent that reads with its own tools may have read
    /// ([`FileRecords::mentioned`]).
    mentioned: HashMap<SessionId, Mention>,
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
    /// Counts the agent's disk edits of the file ([`FileRecords::disk_changed`]).
    disk_edits: u64,
    /// The buffer answered [`Applied::Waiting`] to `pending` as a disk
    /// edit (its merge conflicts next to open conflict blocks): planned
    /// again once a report has none. Until then (an instruction on its way,
    /// stale answers, a write that waited) any report plans it again.
    waiting: bool,
}

/// A file's text at its first mention in a session's turn.
#[derive(Debug, Clone)]
struct Mention {
    text: Arc<str>,
    /// From an earlier turn: still a base (as an earlier prompt's text is),
    /// until the file's first mention in this one replaces it.
    aged: bool,
}

/// A file's text when a session's prompt went out.
#[derive(Debug, Clone)]
struct TurnText {
    text: Arc<str>,
    /// The session's prompt count then ([`FileRecords::turn_started`]).
    turn: u64,
    /// The user saved the file since: a difference from `text` may be
    /// theirs, so it is no "before" of the agent's edits
    /// ([`FileRecords::text_before_turn`]); it stays the base of a blind
    /// write, whose user lines the merge keeps.
    saved: bool,
}

/// What to do with a report of the user's buffer ([`FileRecords::user_reported`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// The report is the user's edit of the file's text (review records
    /// it). `false` for a report older than the buffer's last answer and
    /// for a buffer read anew. While an agent's disk text waits for the
    /// buffer, the review that recorded that change skips the report
    /// itself (it would pass for the user undoing the change).
    pub record: bool,
    /// Plan the waiting disk text again now ([`FileRecords::plan_disk`]):
    /// the buffer has no conflict blocks any more, or its merge was not
    /// found to conflict with them yet.
    pub sync: bool,
}

/// What [`FileRecords`] holds of one file, for diagnostics
/// ([`FileRecords::state`]): a test or a bug report compares it with the
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

/// Every file the agents of one connection touched, one record per file
/// keyed by its [`CanonicalPath`]: its sync with the editor's buffer and,
/// per session, its review (the text review last knew it had, its hunks,
/// decisions and undo states; see `records.rs`). Every method takes the
/// path resolved once where it entered (the workspace gate for an agent's
/// path, the editor's decode point for a buffer's), so two spellings of
/// one file cannot hold two records. One lock holds the table (the
/// [`BufferSync`](super::BufferSync)'s, which review shares).
#[derive(Debug, Default)]
pub struct FileRecords {
    pub(super) files: HashMap<CanonicalPath, FileRecord>,
    /// Counts each session's prompts ([`FileRecords::turn_started`]).
    turns: HashMap<SessionId, u64>,
    /// Each review's hunk ids, and the last review id handed out (see
    /// `records.rs`).
    pub(super) reviews: Reviewers,
}

/// One file's record.
#[derive(Debug, Default)]
pub(super) struct FileRecord {
    sync: FileSync,
    /// Each session's review of the file.
    pub(super) reviews: HashMap<ReviewId, SessionFile>,
}

impl FileRecord {
    /// Nothing held: the record can go.
    pub(super) fn is_unused(&self) -> bool {
        self.reviews.is_empty() && self.sync.is_pristine()
    }
}

impl FileSync {
    /// As made: nothing reported, planned or seen yet.
    fn is_pristine(&self) -> bool {
        self.revision == 0
            && self.buffer.is_none()
            && self.seen.is_empty()
            && self.turn_start.is_empty()
            && self.mentioned.is_empty()
            && self.disk.is_none()
            && self.pending.is_none()
            && self.pending_base.is_none()
            && !self.disk_from_user
            && self.disk_edits == 0
            && !self.waiting
    }
}

impl FileRecords {
    /// Nothing known yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The sync state of `path`, made when missing.
    fn sync_mut(&mut self, path: &CanonicalPath) -> &mut FileSync {
        &mut self.files.entry(path.to_owned()).or_default().sync
    }

    /// The sync state of `path`, if it has a record.
    fn sync(&self, path: &CanonicalPath) -> Option<&FileSync> {
        self.files.get(path).map(|r| &r.sync)
    }

    /// The editor reported a buffer's text in the answer of a read, or when
    /// it sent a prompt. The version held already wins when it is newer: an
    /// instruction answered while the read's answer was on its way (the
    /// editor's versions of a file only grow).
    pub fn reported(&mut self, path: &CanonicalPath, buffer: BufferText) {
        let file = self.sync_mut(path);
        if file
            .buffer
            .as_ref()
            .is_none_or(|known| known.version < buffer.version)
        {
            file.buffer = Some(buffer);
        }
    }

    /// The buffer's text as last reported.
    pub fn buffer(&self, path: &CanonicalPath) -> Option<&BufferText> {
        self.sync(path)?.buffer.as_ref()
    }

    /// What is held of the file, if anything.
    pub fn state(&self, path: &CanonicalPath) -> Option<FileState> {
        // A record only review holds has no sync state to show.
        let file = self.sync(path).filter(|f| !f.is_pristine())?;
        Some(FileState {
            revision: file.revision,
            buffer: file.buffer.clone(),
            disk: file.disk.clone(),
            pending: file.pending.clone(),
        })
    }

    /// The agent of `session` saw `text` of the file; `None`: it read the
    /// disk (then the disk is what it saw).
    pub fn saw(&mut self, session: &SessionId, path: &CanonicalPath, text: Option<Arc<str>>) {
        match text {
            Some(text) => {
                let file = self.sync_mut(path);
                file.seen.insert(session.clone(), text);
                // Newer than the text at a mention before it (read, or its
                // own write): a base of the read and that text would make a
                // conflict of the user's lines it read and writes back
                // (found by the data-safety regression seed 542158645).
                file.mentioned.remove(session);
            }
            None => {
                if let Some(file) = self.files.get_mut(path).map(|r| &mut r.sync) {
                    file.seen.remove(session);
                }
            }
        }
    }

    /// What the agent of `session` last saw of the file, if not the disk
    /// (shared: a big file is not copied for each write).
    pub fn seen(&self, session: &SessionId, path: &CanonicalPath) -> Option<Arc<str>> {
        self.sync(path)?.seen.get(session).cloned()
    }

    /// The base of a write by the agent of `session`: what it last saw of
    /// the file, else the file's text when its latest prompt that carried
    /// the file went out, else at the file's first mention. A save is the user's text, never a base: after `:w`, the
    /// agent's write-back of what it read is merged against what it read,
    /// so the saved lines it never saw stay. `None`: nothing known (the
    /// caller takes the disk).
    ///
    /// An agent that read the file through the client (or had it at the
    /// prompt) and also, by its own tools, at a mention may write from
    /// either text: the base is then the lines both hold, so a line only one of them has is never
    /// taken for one the agent deleted (found by the in-memory property: an
    /// agent that read the unsaved buffer, then the disk, wrote the disk's
    /// text back and the user's unsaved line went from the buffer).
    pub fn base_of_write(&self, session: &SessionId, path: &CanonicalPath) -> Option<Arc<str>> {
        match self.views(session, path)? {
            (Some(view), Some(mentioned)) if view != mentioned => {
                Some(common_lines(view, mentioned).into())
            }
            (Some(view), _) => Some(view.clone()),
            (None, mentioned) => mentioned.cloned(),
        }
    }

    /// The two texts an agent of `session` may write `path` from: what it
    /// last saw (else the text at its prompt), and the text at the file's
    /// first mention. `None`: the file has no record.
    fn views(&self, session: &SessionId, path: &CanonicalPath) -> Option<Views<'_>> {
        let file = self.sync(path)?;
        let view = file
            .seen
            .get(session)
            .or_else(|| file.turn_start.get(session).map(|t| &t.text));
        Some((view, file.mentioned.get(session).map(|m| &m.text)))
    }

    /// The view the agent of `session` wrote `content` from: of the texts
    /// [`Self::base_of_write`] draws on, the one nearest `content`. Review
    /// counts the write's change from it. The base itself, when the agent
    /// had two views, lacks a user's unsaved line one of them held, and an
    /// agent that read the buffer, then named the file in a tool call and
    /// wrote the buffer back with a line, had the user's line taken for its
    /// own: a reject removed it (`test_e2e_fs`, "a reject after a write back
    /// from a read before the file's first mention ...").
    pub fn view_of_write(
        &self,
        session: &SessionId,
        path: &CanonicalPath,
        content: &str,
    ) -> Option<Arc<str>> {
        match self.views(session, path)? {
            (Some(view), Some(mentioned)) if view != mentioned => {
                let nearer = changed_lines(mentioned, content) < changed_lines(view, content);
                Some(if nearer { mentioned } else { view }.clone())
            }
            (Some(view), _) => Some(view.clone()),
            (None, mentioned) => mentioned.cloned(),
        }
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
    pub fn turn_started(&mut self, session: &SessionId, texts: Vec<(CanonicalPath, Arc<str>)>) {
        let turn = self.turns.entry(session.clone()).or_default();
        *turn += 1;
        let turn = *turn;
        for (path, text) in texts {
            self.sync_mut(&path).turn_start.insert(
                session.clone(),
                TurnText {
                    text,
                    turn,
                    saved: false,
                },
            );
        }
    }

    /// A tool call of `session` named `path` for the first time in its
    /// turn, when the file held `text` (review's snapshot): the agent read
    /// it with its own tools, so it is the base of a blind write unless the
    /// prompt carried the file this turn (that text is older still). Found
    /// with a fake agent: with no buffer at the prompt, the base was the
    /// disk, and a line the user saved while the agent asked to write was
    /// replaced by its whole-file write without a word.
    pub fn mentioned(&mut self, session: &SessionId, path: &CanonicalPath, text: &str) {
        let file = self.sync_mut(path);
        if file.mentioned.get(session).is_some_and(|m| !m.aged) {
            return;
        }
        file.mentioned.insert(
            session.clone(),
            Mention {
                text: text.into(),
                aged: false,
            },
        );
    }

    /// A new turn of `session` began for review: the texts at the files'
    /// first mentions stay a base until a mention in this turn replaces
    /// them (found by the in-memory property: an agent that read a file
    /// with its own tools, then wrote it in the next turn after the user
    /// saved a line and closed the buffer, had no base but the disk).
    pub fn age_mentions(&mut self, session: &SessionId) {
        for file in self.files.values_mut().map(|r| &mut r.sync) {
            if let Some(m) = file.mentioned.get_mut(session) {
                m.aged = true;
            }
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
    pub fn text_before_turn(&self, session: &SessionId, path: &CanonicalPath) -> Option<Arc<str>> {
        let now = *self.turns.get(session)?;
        let at = self.sync(path)?.turn_start.get(session)?;
        (at.turn == now && !at.saved).then(|| at.text.clone())
    }

    /// The user saved `path` (the editor reports every save, of buffers
    /// under review or not): its texts at the prompts are no "before" of an
    /// agent edit any more ([`FileRecords::text_before_turn`]).
    pub fn saved(&mut self, path: &CanonicalPath) {
        if let Some(file) = self.files.get_mut(path).map(|r| &mut r.sync) {
            for at in file.turn_start.values_mut() {
                at.saved = true;
            }
        }
    }

    /// Forgets what a closed session saw.
    pub fn drop_session(&mut self, session: &SessionId) {
        self.turns.remove(session);
        for file in self.files.values_mut().map(|r| &mut r.sync) {
            file.seen.remove(session);
            file.turn_start.remove(session);
            file.mentioned.remove(session);
        }
        self.files.retain(|_, r| {
            let f = &r.sync;
            let held = f.buffer.is_some()
                || !f.seen.is_empty()
                || !f.turn_start.is_empty()
                || !f.mentioned.is_empty()
                || f.disk.is_some()
                || f.pending.is_some();
            if !held {
                // Its sync starts over, as for a file that had no record;
                // the record stays while a session's review holds the file.
                r.sync = FileSync::default();
            }
            held || !r.reviews.is_empty()
        });
    }

    /// The user's report of a buffer (`on_disk`: saved or just read, so the
    /// disk holds its text): says whether review records it (a review
    /// holding the agent's waiting disk text skips it itself) and whether
    /// the agent's waiting disk text is planned again.
    pub fn user_reported(
        &mut self,
        path: &CanonicalPath,
        buffer: BufferText,
        on_disk: OnDisk,
    ) -> Report {
        let file = self.sync_mut(path);
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
        let file = self.sync_mut(path);
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
            record: on_disk != OnDisk::Read,
            sync,
        }
    }

    /// The disk text the buffer of `path` was last in sync with.
    pub fn disk(&self, path: &CanonicalPath) -> Option<&str> {
        self.sync(path)?.disk.as_deref()
    }

    /// The agent's disk text the buffer has not taken yet.
    pub fn pending(&self, path: &CanonicalPath) -> Option<&str> {
        self.sync(path)?.pending.as_deref()
    }

    /// The agent changed `path` on disk from `before` (`None`: unknown or
    /// no file) to `after`. Returns whether the buffer needs an instruction
    /// ([`FileRecords::plan_disk`]): not when it is in sync with `after`
    /// already.
    pub fn disk_changed(
        &mut self,
        path: &CanonicalPath,
        before: Option<&str>,
        after: &str,
    ) -> bool {
        let file = self.sync_mut(path);
        tracing::debug!(
            path = %path.display(),
            synced = ?file.disk.as_ref().map(String::len),
            before = ?before.map(str::len),
            after = after.len(),
            "the agent changed a file on disk"
        );
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
        // An edit on top of the agent's own waiting text (its write that
        // waited on open conflict blocks) still starts from what the agent
        // saw: merged against the user's save instead, the lines the user
        // saved would read as the agent's deletions (data-safety seed
        // 1020918746, case 153: a blind write waited on the blocks the user
        // had saved, then the agent edited its text on disk).
        if before.is_none() || file.pending.as_deref() != before {
            file.pending_base = None;
        }
        file.pending = Some(after.to_owned());
        file.disk_edits += 1;
        true
    }

    /// The instruction for the agent's waiting disk text of `path`, if any:
    /// merged with base = the disk text the buffer was last in sync with;
    /// for an agent's write that waited while that text is the user's save,
    /// what that agent saw (no merge when neither is known: the buffer's
    /// unsaved edits are left alone).
    pub fn plan_disk(&mut self, path: &CanonicalPath) -> Option<Instruction> {
        let file = self.sync(path)?;
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
    pub fn wrote_disk(&mut self, path: &CanonicalPath, text: &str) {
        let file = self.sync_mut(path);
        file.disk = Some(text.to_owned());
        file.disk_from_user = false;
    }

    /// The editor answered every attempt of `instruction` (planned with
    /// `base`) stale: a write goes to disk and waits for the buffer, like a
    /// disk edit (merged on the synced text, else on `base`); a disk edit
    /// without a base gives up (the buffer keeps the user's text).
    pub fn gave_up(&mut self, instruction: &Instruction, base: &str) {
        let file = self.sync_mut(&instruction.path);
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
    pub fn plan(
        &mut self,
        path: &CanonicalPath,
        base: &str,
        content: &str,
        origin: Origin,
    ) -> Instruction {
        self.plan_from(path, Some(base), content.to_owned(), origin)
    }

    fn plan_from(
        &mut self,
        path: &CanonicalPath,
        base: Option<&str>,
        content: String,
        origin: Origin,
    ) -> Instruction {
        let file = self.sync_mut(path);
        file.revision += 1;
        let merge = match (&file.buffer, base) {
            (Some(buffer), Some(base)) => {
                let merged = merge3(base, &buffer.text, &content);
                tracing::debug!(
                    path = %path.display(),
                    ?origin,
                    base = base.len(),
                    buffer = buffer.text.len(),
                    content = content.len(),
                    conflicts = merged.conflict_count(),
                    "merged into the buffer's text"
                );
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
        let file = self.sync_mut(&instruction.path);
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

/// The lines `a` and `b` both hold, in order (what a line diff keeps).
fn common_lines(a: &str, b: &str) -> String {
    let (a, b) = (split_lines(a), split_lines(b));
    let kept: Vec<&str> = matches(&a, &b).into_iter().map(|(i, _)| a[i]).collect();
    join_lines(&kept)
}

/// An agent's two views of a file: what it last saw (or had at its prompt),
/// and the text at the file's first mention.
type Views<'a> = (Option<&'a Arc<str>>, Option<&'a Arc<str>>);

/// How many lines of `a` and `b` the other lacks.
fn changed_lines(a: &str, b: &str) -> usize {
    let (a, b) = (split_lines(a), split_lines(b));
    a.len() + b.len() - 2 * matches(&a, &b).len()
}

/// Whether a buffer's text holds a conflict block's first marker line.
fn has_conflict_blocks(text: &str) -> bool {
    let start = format!("<<<<<<< {}", ConflictLabels::default().ours);
    text.lines().any(|l| l == start)
}
