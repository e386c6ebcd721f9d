//! The editor host of one agent process: acp-client calls it for permission
//! prompts, buffer-aware file access and events; it answers through Lua and
//! turns the client's session-keyed events into the plugin's chat-keyed ones.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::{Mutex, MutexGuard};

use crate::batcher::EventQueue;
use crate::editor::Editor;
use crate::elicitation::WithdrawElicitation;
use crate::prompts::{Prompts, Withdraw};
use crate::protocol::lua::{self, BadReply};
use crate::protocol::{ChatId, Event};
use crate::routes::{Item, Routes};
use acp_client::buffer_sync::{self, BufferSync, BufferText, OnDisk};
use acp_client::elicitation::{ElicitationRequest, ElicitationResponse};
use acp_client::host::{Applied, HostCapabilities, ReadTextFile, WriteOutcome, WriteTextFile};
use acp_client::permission::{PermissionDecision, PermissionRequest};
use acp_client::schema;
use acp_client::update::SessionId;
use acp_client::{ClientEvent, EditorHost};
use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};

/// The [`EditorHost`] of one agent process.
pub struct NvimHost {
    events: EventQueue,
    editor: Arc<dyn Editor>,
    prompts: Arc<Prompts>,
    routes: Mutex<Routes>,
    /// The state of the files this agent read or wrote through Neovim,
    /// and the order of the instructions (see `acp_client::buffer_sync`):
    /// shared by the agent's writes and [`DiskSync`].
    sync: Arc<BufferSync>,
    /// The task bringing buffers up to date with the agent's disk edits,
    /// started with the first one (see [`DiskSync`]).
    disk_sync: OnceLock<mpsc::UnboundedSender<DiskJob>>,
}

/// Work for the [`DiskSync`] task, done in order.
#[derive(Debug)]
enum DiskJob {
    /// Send the buffer of this file the agent's waiting disk text; the chat
    /// whose agent made the edit, when known.
    Sync(PathBuf, Option<ChatId>),
    /// Answered once the jobs before it are done.
    Barrier(oneshot::Sender<()>),
}

/// Brings buffers up to date with the agent's disk edits (its own tools,
/// not `fs/write_text_file`): one task per agent, so neither review's
/// worker nor the read loop waits on Lua, and the instructions of a file
/// go out in the order of its changes.
struct DiskSync {
    editor: Arc<dyn Editor>,
    sync: Arc<BufferSync>,
    events: EventQueue,
}

impl DiskSync {
    async fn run(self, mut jobs: mpsc::UnboundedReceiver<DiskJob>) {
        while let Some(job) = jobs.recv().await {
            match job {
                DiskJob::Sync(path, chat) => self.sync(&path, chat.as_ref()).await,
                DiskJob::Barrier(done) => {
                    let _ = done.send(());
                }
            }
        }
    }

    /// One instruction for the file's waiting disk text (again after each
    /// stale answer, at most `MAX_ATTEMPTS`); nothing when it has none
    /// (taken by an earlier job, or overwritten by a save).
    async fn sync(&self, path: &Path, chat: Option<&ChatId>) {
        let Some(lua_path) = lua_path(path) else {
            return;
        };
        let buffers = LuaBuffers {
            editor: &*self.editor,
            events: &self.events,
            chat,
        };
        if let Err(e) = self.sync.sync_disk(&buffers, path).await {
            tracing::warn!(path = lua_path, "disk edit not applied to its buffer: {e}");
            self.events.push(Event::Warning {
                chat_id: None,
                message: format!(
                    "could not bring the buffer of {lua_path} up to date with the agent's edit on disk ({e}); :edit reloads it"
                ),
            });
        }
    }
}

impl std::fmt::Debug for NvimHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvimHost")
            .field("routes", &*self.routes())
            .finish_non_exhaustive()
    }
}

impl NvimHost {
    /// A host for the agent named `agent_name`.
    pub fn new(
        agent_name: &str,
        events: EventQueue,
        editor: Arc<dyn Editor>,
        prompts: Arc<Prompts>,
    ) -> Self {
        Self {
            events,
            editor,
            prompts,
            routes: Mutex::new(Routes::new(agent_name)),
            sync: Arc::new(BufferSync::new()),
            disk_sync: OnceLock::new(),
        }
    }

    /// Queues the instruction of a file's waiting disk text (needs a tokio
    /// runtime: the task starts with the first one).
    fn queue_disk_sync(&self, path: &Path, chat: Option<ChatId>) {
        self.disk_job(DiskJob::Sync(path.to_owned(), chat));
    }

    fn disk_job(&self, job: DiskJob) {
        let jobs = self.disk_sync.get_or_init(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            let task = DiskSync {
                editor: self.editor.clone(),
                sync: self.sync.clone(),
                events: self.events.clone(),
            };
            tokio::spawn(task.run(rx));
            tx
        });
        if jobs.send(job).is_err() {
            tracing::warn!("disk edit not synced: the task has stopped");
        }
    }

    /// Waits until the disk edits queued so far were sent to Lua and
    /// answered.
    async fn disk_synced(&self) {
        if self.disk_sync.get().is_none() {
            return;
        }
        let (tx, rx) = oneshot::channel();
        self.disk_job(DiskJob::Barrier(tx));
        let _ = rx.await;
    }

    fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock()
    }

    /// Runs `f` on the routes and queues what it produced. The lock is held
    /// while queueing so that events keep the order in which they were routed.
    fn with_routes(&self, f: impl FnOnce(&mut Routes, &mut Vec<Event>)) {
        let mut routes = self.routes();
        // The routes' own vector, reused: one allocation per streamed chunk
        // otherwise.
        let mut out = std::mem::take(&mut routes.routed);
        f(&mut routes, &mut out);
        for ev in out.drain(..) {
            self.events.push(ev);
        }
        routes.routed = out;
    }

    /// Routes a session to a chat; `started` is queued first, then the
    /// session's held events.
    pub fn register(&self, session: SessionId, chat: ChatId, started: Option<Event>) {
        self.with_routes(|r, out| r.register(session, chat, started, out));
    }

    /// Stops routing a session.
    pub fn unregister(&self, session: &SessionId) {
        self.routes().unregister(session);
        self.sync.files().drop_session(session);
    }

    /// Lua reported a buffer's text with its tick (`acp.fs.tick`; the user's
    /// edit of a reviewed buffer; `on_disk`: saved or just read): the next
    /// merge into it is made against that text. Returns whether review
    /// records it as the user's edit: not while the agent's disk text waits
    /// for the buffer (it is reported again once merged). A report without
    /// conflict blocks sends that waiting text again.
    pub async fn buffer_reported(
        &self,
        path: &Path,
        text: Arc<str>,
        tick: u64,
        on_disk: OnDisk,
    ) -> bool {
        if self.sync.files().pending(path).is_some() {
            // An instruction for the agent's disk text may be out: its
            // answer is taken first, so a report Lua sent after applying it
            // is not judged by the state before.
            self.disk_synced().await;
        }
        let report = self.sync.files().user_reported(
            path,
            BufferText {
                text,
                version: tick,
            },
            on_disk,
        );
        if report.sync {
            self.queue_disk_sync(path, None);
        }
        report.record
    }

    /// What is held of a file's sync with its buffer (`acp.file_sync`).
    pub fn file_state(&self, path: &Path) -> Option<buffer_sync::FileState> {
        self.sync.files().state(path)
    }

    /// The chats whose sessions live in this agent.
    pub fn chats(&self) -> Vec<ChatId> {
        self.routes().chats()
    }

    /// The session of `chat` in this agent, if it is open.
    pub fn session_of(&self, chat: &ChatId) -> Option<SessionId> {
        self.routes().session_of(chat)
    }

    /// `chat` is opening a session (initialize, authenticate, session/new)
    /// until the returned guard drops: request-scoped elicitations of that
    /// time are shown in it.
    pub fn opening(&self, chat: &ChatId) -> Opening<'_> {
        self.routes().opening.push(chat.clone());
        Opening {
            host: self,
            chat: chat.clone(),
        }
    }

    /// A prompt of `session` goes out with these buffers: their text is
    /// known from now on (unless a newer report came first), so the agent's
    /// first write or disk edit of one is merged in one instruction; their
    /// files' texts are the base of a write by an agent that reads nothing
    /// first (`FileSyncs::base_of_write`).
    pub fn buffers_at_prompt(
        &self,
        session: &SessionId,
        buffers: Vec<crate::command::PromptBuffer>,
    ) {
        let mut files = self.sync.files();
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
                    version: b.tick,
                },
            );
        }
        files.turn_started(session, texts);
    }

    /// A prompt goes out: the files it embeds whole are what the agent
    /// saw of them.
    pub fn saw_prompt(&self, session: &SessionId, blocks: &[schema::ContentBlock]) {
        self.sync.saw_prompt(session, blocks);
    }

    /// `require('acp.fs').read_for_agent`: what the agent gets, the whole
    /// text it sees and the buffer's state; `None` when no loaded buffer
    /// has the file.
    async fn buffer_read(
        &self,
        full: &Path,
        path: &str,
        args: lua::FsRead<'_>,
    ) -> acp_client::Result<Option<lua::ReadReply>> {
        let reply = self.editor.fs_read(args.encode()).await.map_err(|e| {
            acp_client::Error::Host(format!(
                "Neovim could not read `{path}` from its buffer: {e}"
            ))
        })?;
        match lua::decode_read(&reply) {
            Ok(read) => Ok(read),
            Err(BadReply::NotUtf8) => Err(acp_client::Error::NotUtf8 {
                path: full.to_owned(),
            }),
            Err(bad) => Err(acp_client::Error::Host(format!("reading `{path}`: {bad}"))),
        }
    }
}

/// Neovim's buffers as the buffer sync drives them: instructions go to
/// `acp.fs.apply`.
struct LuaBuffers<'a> {
    editor: &'a dyn Editor,
    events: &'a EventQueue,
    /// The chat whose agent made the edit, when known: named in a disk
    /// edit's instruction, and told of a refused write.
    chat: Option<&'a ChatId>,
}

#[async_trait]
impl buffer_sync::Buffers for LuaBuffers<'_> {
    async fn apply(
        &self,
        instruction: &buffer_sync::Instruction,
    ) -> acp_client::Result<buffer_sync::Applied> {
        let path = lua_path(&instruction.path).ok_or_else(|| {
            acp_client::Error::Host(format!(
                "`{}` is not UTF-8: Neovim cannot match it to a buffer",
                instruction.path.display()
            ))
        })?;
        let mut call = lua::Apply::of(path, instruction);
        call.chat_id = self.chat.map(|c| &*c.0);
        let reply = self.editor.fs_apply(call.encode()).await.map_err(|e| {
            acp_client::Error::Host(format!(
                "Neovim could not write `{path}` through its buffer: {e}"
            ))
        })?;
        lua::decode_apply(&reply, instruction.revision)
            .map_err(|bad| acp_client::Error::Host(format!("writing `{path}`: {bad}")))
    }

    fn tell_user(&self, path: &Path, message: String) {
        tracing::warn!(path = %path.display(), "{message}");
        self.events.push(Event::Warning {
            chat_id: self.chat.cloned(),
            message,
        });
    }
}

/// See [`NvimHost::opening`].
#[derive(Debug)]
pub struct Opening<'a> {
    host: &'a NvimHost,
    chat: ChatId,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        let mut routes = self.host.routes();
        if let Some(i) = routes.opening.iter().rposition(|c| *c == self.chat) {
            routes.opening.remove(i);
        }
    }
}

/// A path as Lua gets it; `None` for paths that are not UTF-8 (Lua could
/// not match them against buffer names reliably: the disk is used).
fn lua_path(path: &Path) -> Option<&str> {
    path.to_str()
}

impl NvimHost {
    /// Asks Lua for the editor MCP server's `diagnostics` / `open_buffers`.
    async fn editor_state(
        &self,
        what: &str,
        args: lua::EditorState<'_>,
    ) -> acp_client::Result<serde_json::Value> {
        let reply = self.editor.editor_state(args.encode()).await.map_err(|e| {
            acp_client::Error::Host(format!("Neovim could not list its {what}: {e}"))
        })?;
        match reply {
            rmpv::Value::Nil => Err(acp_client::Error::Host(format!(
                "{what} are not supported by this editor"
            ))),
            other => Ok(crate::msgpack::to_json(&other)),
        }
    }
}

#[async_trait]
impl EditorHost for NvimHost {
    fn capabilities(&self) -> HostCapabilities {
        HostCapabilities {
            elicitation_form: true,
            elicitation_url: true,
            ..HostCapabilities::default()
        }
    }

    async fn request_elicitation(&self, request: ElicitationRequest) -> ElicitationResponse {
        let registry = &self.prompts.elicitations;
        let (prompt, answer) = registry.open(&request);
        let _withdraw = WithdrawElicitation {
            elicitations: registry,
            id: prompt,
        };
        let client_id = request.id;
        self.with_routes(|r, out| {
            r.elicitation_ids.insert(client_id, (prompt, None));
            r.route(Item::Elicitation { request, prompt }, out);
        });
        // When the turn is cancelled the client drops this future; the
        // mapping stays until its ElicitationCancelled is translated.
        let answer = answer.await;
        self.routes().elicitation_ids.remove(&client_id);
        answer.unwrap_or_else(|_| {
            tracing::debug!(%prompt, "elicitation dropped without an answer");
            ElicitationResponse::Cancel
        })
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionDecision {
        let (prompt, answer) = self.prompts.open();
        let _withdraw = Withdraw {
            prompts: &self.prompts,
            id: prompt,
        };
        let client_id = request.id;
        self.with_routes(|r, out| {
            r.prompt_ids.insert(client_id, prompt);
            r.route(Item::Permission { request, prompt }, out);
        });
        // When the turn is cancelled the client drops this future; the
        // mapping then stays until its PermissionCancelled is translated.
        let answer = answer.await;
        self.routes().prompt_ids.remove(&client_id);
        match answer {
            Ok(Some(option_id)) => PermissionDecision::Selected { option_id },
            Ok(None) => PermissionDecision::Cancelled,
            Err(_) => {
                tracing::debug!(%prompt, "permission prompt dropped without an answer");
                PermissionDecision::Cancelled
            }
        }
    }

    async fn read_text_file(&self, request: &ReadTextFile) -> acp_client::Result<Option<String>> {
        let Some(path) = lua_path(&request.path) else {
            return Ok(None);
        };
        // The backend's copy of the buffer, by its tick: a buffer still at
        // it answers with the range only (an agent paging through a
        // 1,000,000-line buffer must not ship it each time).
        let known = self.sync.files().buffer(&request.path).cloned();
        let args = lua::FsRead {
            path,
            line: request.line,
            limit: request.limit,
            known: known.as_ref().map(|b| b.version),
        };
        let Some(read) = self.buffer_read(&request.path, path, args).await? else {
            // Read from disk (by the client, next): the disk is what it saw.
            // A whole read is kept as the base of its next write, which is
            // then merged with what the user saves meanwhile; a range is not
            // the file (the base falls back to the text at the prompt).
            let whole = match (request.line, request.limit) {
                (None, None) => tokio::fs::read_to_string(&request.path)
                    .await
                    .ok()
                    .map(Into::into),
                _ => None,
            };
            self.sync
                .files()
                .saw(&request.session_id, &request.path, whole);
            return Ok(None);
        };
        let mut files = self.sync.files();
        let whole = match read.view {
            Some(view) => {
                files.reported(
                    &request.path,
                    BufferText {
                        text: view.buffer,
                        version: read.tick,
                    },
                );
                view.whole
            }
            // Unchanged (Lua answers so only without open conflicts, when
            // the agent reads the buffer as it is).
            None => match known {
                Some(known) if known.version == read.tick => known.text,
                _ => {
                    return Err(acp_client::Error::Host(format!(
                        "Neovim answered a read of `{path}` as unchanged at a version the backend does not hold; update the acp.nvim plugin and backend together"
                    )))
                }
            },
        };
        files.saw(&request.session_id, &request.path, Some(whole));
        Ok(Some(read.text))
    }

    async fn write_text_file(&self, request: &WriteTextFile) -> acp_client::Result<WriteOutcome> {
        if lua_path(&request.path).is_none() {
            return Ok(WriteOutcome::NotHandled);
        }
        let chat = self.routes().sessions.get(&request.session_id).cloned();
        let buffers = LuaBuffers {
            editor: &*self.editor,
            events: &self.events,
            chat: chat.as_ref(),
        };
        self.sync.write(&buffers, request).await
    }

    async fn diagnostics(
        &self,
        _session_id: &SessionId,
        path: Option<&Path>,
    ) -> acp_client::Result<serde_json::Value> {
        let args = lua::EditorState {
            what: "diagnostics",
            path: path.and_then(lua_path),
        };
        self.editor_state("diagnostics", args).await
    }

    async fn open_buffers(&self, _session_id: &SessionId) -> acp_client::Result<serde_json::Value> {
        let args = lua::EditorState {
            what: "open_buffers",
            path: None,
        };
        self.editor_state("open buffers", args).await
    }

    async fn text_before_turn(
        &self,
        session_id: &SessionId,
        path: &Path,
    ) -> acp_client::Result<Option<String>> {
        let Some(lua_path) = lua_path(path) else {
            return Ok(None);
        };
        // Lua keeps the copies per chat (taken when the chat sent its prompt).
        let Some(chat) = self.routes().sessions.get(session_id).cloned() else {
            return Ok(None);
        };
        let args = lua::BeforeTurn {
            chat_id: &chat.0,
            path: lua_path,
        };
        let reply = self.editor.before_turn(args.encode()).await.map_err(|e| {
            acp_client::Error::Host(format!(
                "Neovim could not give the text `{lua_path}` had when the prompt was sent: {e}"
            ))
        })?;
        match lua::decode_text(reply) {
            Ok(text) => Ok(text),
            // As before: text that is not UTF-8 is no baseline.
            Err(BadReply::NotUtf8) => Ok(None),
            Err(bad) => Err(acp_client::Error::Host(format!(
                "the text `{lua_path}` had before the turn: {bad}"
            ))),
        }
    }

    fn disk_changed(&self, session_id: &SessionId, path: &Path, before: Option<&str>, after: &str) {
        if lua_path(path).is_none() {
            return;
        }
        if self.sync.files().disk_changed(path, before, after) {
            let chat = self.routes().sessions.get(session_id).cloned();
            self.queue_disk_sync(path, chat);
        }
    }

    fn on_event(&self, event: ClientEvent) {
        if let ClientEvent::FileEdited(edit) = &event {
            if edit.applied == Applied::Waiting && lua_path(&edit.path).is_some() {
                // The agent's write waited for the buffer (open conflicts,
                // or typing under every merge): now that the client wrote
                // it and review recorded it, its merge is tried as a disk
                // edit. Not earlier: the merged buffer's report would reach
                // review before the write and be overwritten by it.
                let chat = self.routes().sessions.get(&edit.session_id).cloned();
                self.queue_disk_sync(&edit.path, chat);
            }
        }
        self.with_routes(|r, out| r.translate(event, out));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests;
