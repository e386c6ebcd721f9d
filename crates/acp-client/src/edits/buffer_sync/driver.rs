//! The driver ([`BufferSync`]): serves agents' reads and writes through the
//! editor's buffers, one instruction at a time, again after each stale
//! answer, and runs the task that brings buffers up to date with the
//! agents' own disk edits.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, MutexGuard};
use tokio::sync::{mpsc, oneshot};

use super::buffers::{BufferAtPrompt, Buffers};
use super::files::{FileRecords, FileState, OnDisk};
use super::instruction::{Applied, BufferText, Instruction, Origin};
use super::{ReadTextFile, WriteKind, WriteOutcome, WriteTextFile, MAX_ATTEMPTS};
use crate::edits::merge::{merge3, ConflictLabels};
use crate::error::{Error, Result};
use crate::path::CanonicalPath;
use crate::schema;
use crate::session::update::SessionId;

/// The buffer sync of one connection's agents: the owner of every file's
/// record ([`FileRecords`], whose lock the connection's review shares for
/// each file's review), the order of instructions, and the task
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
    /// Shared with the connection's review, which keeps each file's
    /// review in the same records (see [`BufferSync::records`]).
    files: Arc<Mutex<FileRecords>>,
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
    Sync(CanonicalPath, Option<SessionId>),
    /// Answered once the jobs before it are done.
    Barrier(oneshot::Sender<()>),
}

impl BufferSync {
    /// Nothing known yet; instructions go to `buffers`.
    pub fn new(buffers: Arc<dyn Buffers>) -> Self {
        Self {
            core: Arc::new(Core {
                files: Arc::new(Mutex::new(FileRecords::new())),
                instructions: tokio::sync::Mutex::new(()),
                buffers,
            }),
            disk_sync: OnceLock::new(),
        }
    }

    /// The files' state (held briefly: never across an await).
    pub fn files(&self) -> MutexGuard<'_, FileRecords> {
        self.core.files.lock()
    }

    /// The file records, for the connection's review to keep each file's
    /// review in (one record per file, one lock).
    pub(crate) fn records(&self) -> Arc<Mutex<FileRecords>> {
        self.core.files.clone()
    }

    /// What is held of a file's sync with its buffer, for diagnostics.
    pub fn state(&self, path: &CanonicalPath) -> Option<FileState> {
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
    /// `Core::write`.
    pub async fn write(&self, request: &WriteTextFile) -> Result<WriteOutcome> {
        self.core.write(request).await
    }

    /// The client recorded an agent's write (`waited`: its outcome was
    /// [`WriteOutcome::Waiting`]): one that waited for the
    /// buffer (open conflicts, or typing under every merge) is tried as a
    /// disk edit now. Not earlier: the merged buffer's report would reach
    /// review before the write and be overwritten by it.
    pub fn write_recorded(&self, session: &SessionId, path: &CanonicalPath, waited: bool) {
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
        path: &CanonicalPath,
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
    /// records it as the user's edit (a review that holds the agent's disk
    /// text still waiting for the buffer skips it: the merged text is
    /// reported once taken). A report without conflict blocks sends that
    /// waiting text again.
    pub async fn user_reported(
        &self,
        path: &CanonicalPath,
        buffer: BufferText,
        on_disk: OnDisk,
    ) -> bool {
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
    /// see [`FileRecords::saved`].
    pub fn saved(&self, path: &CanonicalPath) {
        self.files().saved(path);
    }

    /// A prompt of `session` goes out with these buffers: their text is
    /// known from now on (unless a newer report came first), so the agent's
    /// first write or disk edit of one is merged in one instruction; their
    /// files' texts are the base of a write by an agent that reads nothing
    /// first ([`FileRecords::base_of_write`]) and the "before" of its edits
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

    /// See [`FileRecords::mentioned`].
    pub fn mentioned(&self, session: &SessionId, path: &CanonicalPath, text: &str) {
        self.files().mentioned(session, path, text);
    }

    /// A new turn of `session` began for review: see
    /// [`FileRecords::age_mentions`].
    pub fn review_turn_began(&self, session: &SessionId) {
        self.files().age_mentions(session);
    }

    /// See [`FileRecords::text_before_turn`].
    pub fn text_before_turn(&self, session: &SessionId, path: &CanonicalPath) -> Option<String> {
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
        let embedded: Vec<(CanonicalPath, &str)> = blocks
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
                // Keyed like the agent's requests: by the one normaliser
                // the workspace uses (std's canonicalize kept a missing
                // file's path as written, `..` and symlinked parents
                // included). Resolved before the state is locked: it reads
                // the file system.
                // A path that does not resolve (a symlink loop) keys no
                // file: an agent's request for it is refused by the same
                // walk.
                let path = CanonicalPath::resolve(Path::new(&path))
                    .inspect_err(
                        |e| tracing::debug!(error = %e, "an embedded file's path does not resolve"),
                    )
                    .ok()?;
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
    /// ([`FileRecords::base_of_write`]); never the user's save, whose lines
    /// the agent never saw would read as its deletions. For a restore, the
    /// text review knew the file had.
    async fn write(&self, request: &WriteTextFile) -> Result<WriteOutcome> {
        let buffers = &*self.buffers;
        let path = &request.path;
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
                    outcome = Some(WriteOutcome::Disk);
                    break;
                }
                Applied::Saved { old_content, .. } => {
                    let saved = instruction.saved_text();
                    outcome = Some(if saved != request.content {
                        WriteOutcome::SavedMerged {
                            old_content,
                            text: saved.to_owned(),
                        }
                    } else {
                        WriteOutcome::Saved { old_content }
                    });
                    break;
                }
                Applied::Merged { .. } if origin == Origin::Restore => {
                    // A restore leaves the disk alone.
                    outcome = Some(WriteOutcome::Saved { old_content: None });
                    break;
                }
                Applied::Merged { .. } => {
                    // The "before" of the agent's change is the view it
                    // wrote from, not the merge's base (see
                    // FileRecords::view_of_write).
                    let view = known
                        .then(|| {
                            self.files.lock().view_of_write(
                                &request.session_id,
                                path,
                                &request.content,
                            )
                        })
                        .flatten();
                    let seen = Some(view.map_or_else(|| base.to_string(), |v| v.to_string()));
                    outcome = Some(match instruction.merge {
                        Some(m) => WriteOutcome::MergedUnsaved {
                            seen,
                            buffer: m.text,
                        },
                        // Not answered without a merge (an editor takes a
                        // merge only at its version); kept as it was.
                        None => WriteOutcome::Waiting { seen },
                    });
                    break;
                }
                Applied::Waiting => {
                    // Open conflict blocks: the write goes to disk and waits
                    // (FileRecords::pending); its merge is tried as a disk edit
                    // once the client recorded it.
                    outcome = Some(WriteOutcome::Waiting {
                        seen: seen.as_deref().map(str::to_owned),
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
                WriteOutcome::Waiting {
                    seen: seen.as_deref().map(str::to_owned),
                }
            }
        };
        if restore.is_none() {
            // It knows what it wrote: its newest view.
            self.files.lock().saw(
                &request.session_id,
                path,
                Some(request.content.as_str().into()),
            );
        }
        Ok(outcome)
    }

    /// Brings the buffer of `path` up to date with the agent's waiting
    /// disk text ([`FileRecords::disk_changed`]: an edit it made with its own
    /// tools, or a write that waited): one instruction, again after each
    /// stale answer (at most [`MAX_ATTEMPTS`]); nothing when none waits
    /// (taken by an earlier call, or overwritten by a save). After that the
    /// user's next report plans it again.
    async fn sync_disk(&self, path: &CanonicalPath, session: Option<&SessionId>) -> Result<()> {
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
            return Ok(WriteOutcome::Disk);
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
        Ok(WriteOutcome::DiskMerged {
            old_content: Some(disk.to_owned()),
            text,
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
