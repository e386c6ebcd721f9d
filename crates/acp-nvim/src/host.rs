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
        for _ in 0..buffer_sync::MAX_ATTEMPTS {
            let _turn = self.sync.turn().await;
            let Some(instruction) = self.sync.files().plan_disk(path) else {
                return;
            };
            let buffers = LuaBuffers {
                editor: &*self.editor,
                events: &self.events,
                chat,
            };
            match self.sync.send(&buffers, &instruction).await {
                Ok(buffer_sync::Applied::Stale(_)) => {
                    if instruction.merge.is_none() && self.sync.files().disk(path).is_none() {
                        // No base to merge on: the unsaved edits stay as
                        // they are (the agent's text is on disk).
                        tracing::info!(
                            path = lua_path,
                            "no base to merge the agent's disk edit into unsaved edits"
                        );
                        self.sync.files().gave_up(&instruction, "");
                        return;
                    }
                }
                Ok(_) => return,
                Err(e) => {
                    tracing::warn!(path = lua_path, "disk edit not applied to its buffer: {e}");
                    self.events.push(Event::Warning {
                        chat_id: None,
                        message: format!(
                            "could not bring the buffer of {lua_path} up to date with the agent's edit on disk ({e}); :edit reloads it"
                        ),
                    });
                    return;
                }
            }
        }
        // The user typed under every merge: the next report plans it again.
        tracing::info!(
            path = lua_path,
            "the buffer changed under every merge of a disk edit; it waits for the next report"
        );
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
        let mut files = self.sync.files();
        for (path, text) in embedded {
            files.saw(session, &path, Some(text.into()));
        }
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
mod tests {
    use acp_client::host::{FileEdit, WriteKind};
    use acp_client::permission::{OptionKind, PermissionOption, PermissionRequestId};
    use std::collections::VecDeque;

    use acp_client::update::ToolCallFields;
    use rmpv::Value;
    use serde_json::{json, Value as Json};

    use super::*;
    use crate::msgpack;

    fn sid(s: &str) -> SessionId {
        SessionId::new(s)
    }

    fn chat(s: &str) -> ChatId {
        ChatId(s.into())
    }

    fn permission(session: &str, id: u64) -> PermissionRequest {
        PermissionRequest {
            id: PermissionRequestId(id),
            session_id: sid(session),
            tool_call: ToolCallFields::new("tool-1"),
            options: vec![
                PermissionOption {
                    option_id: "yes".into(),
                    name: "Allow".into(),
                    kind: OptionKind::AllowOnce,
                },
                PermissionOption {
                    option_id: "no".into(),
                    name: "Reject".into(),
                    kind: OptionKind::RejectOnce,
                },
            ],
        }
    }

    /// A fake Lua `acp.fs`, answering with fixed values.
    struct FakeFs {
        read: Value,
        apply: Value,
        seen: Mutex<Vec<Value>>,
    }

    impl FakeFs {
        fn answering(read: Json, apply: Json) -> Self {
            Self {
                read: msgpack::from_json(&read),
                apply: msgpack::from_json(&apply),
                seen: Mutex::default(),
            }
        }
    }

    #[async_trait]
    impl Editor for FakeFs {
        async fn dispatch(&self, _events: Vec<Value>) -> Result<(), crate::editor::LuaError> {
            Ok(())
        }
        async fn fs_read(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
            self.seen.lock().push(args);
            Ok(self.read.clone())
        }
        async fn fs_apply(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
            self.seen.lock().push(args);
            Ok(self.apply.clone())
        }
        /// Answers with `read`'s text, like a buffer read.
        async fn before_turn(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
            self.seen.lock().push(args);
            Ok(msgpack::field(&self.read, "text")
                .cloned()
                .unwrap_or(Value::Nil))
        }
    }

    fn host_with(fs: FakeFs) -> (NvimHost, Arc<FakeFs>, crate::batcher::EventReceiver) {
        let fs = Arc::new(fs);
        let (events, rx) = EventQueue::new();
        let host = NvimHost::new("demo", events, fs.clone(), Arc::new(Prompts::new()));
        (host, fs, rx)
    }

    fn write(content: &str) -> WriteTextFile {
        WriteTextFile {
            session_id: sid("s1"),
            path: "/p/a.txt".into(),
            content: content.into(),
            kind: WriteKind::Agent,
        }
    }

    #[tokio::test]
    async fn reads_ask_lua_for_the_requested_range_only() {
        let (host, fs, _rx) = host_with(FakeFs::answering(
            json!({"text": "b\nc\n", "whole": "a\nb\nc\n", "tick": 3}),
            Json::Null,
        ));
        let got = host
            .read_text_file(&ReadTextFile {
                session_id: sid("s1"),
                path: "/p/a.txt".into(),
                line: Some(2),
                limit: Some(2),
            })
            .await
            .unwrap();
        assert_eq!(got.as_deref(), Some("b\nc\n"));
        let args = &fs.seen.lock()[0];
        assert_eq!(
            msgpack::to_json(args),
            json!({"path": "/p/a.txt", "line": 2, "limit": 2})
        );
        // The whole text is what it saw, and the buffer's state is known.
        let files = host.sync.files();
        assert_eq!(
            files.seen(&sid("s1"), Path::new("/p/a.txt")).as_deref(),
            Some("a\nb\nc\n")
        );
        assert_eq!(
            files.buffer(Path::new("/p/a.txt")),
            Some(&BufferText {
                text: "a\nb\nc\n".into(),
                version: 3
            })
        );
    }

    #[tokio::test]
    async fn a_read_of_an_unchanged_buffer_ships_the_range_only() {
        // An agent paging through a 1,000,000-line buffer: the backend holds
        // the whole text of the buffer's tick from the first read.
        let (host, fs, _rx) = host_with(FakeFs::answering(
            json!({"text": "c\n", "tick": 3, "unchanged": true}),
            Json::Null,
        ));
        let path = Path::new("/p/a.txt");
        host.sync.files().reported(
            path,
            BufferText {
                text: "a\nb\nc\n".into(),
                version: 3,
            },
        );
        let read = ReadTextFile {
            session_id: sid("s1"),
            path: path.into(),
            line: Some(3),
            limit: Some(1),
        };
        let got = host.read_text_file(&read).await.unwrap();
        assert_eq!(got.as_deref(), Some("c\n"));
        assert_eq!(
            msgpack::to_json(&fs.seen.lock()[0]),
            json!({"path": "/p/a.txt", "line": 3, "limit": 1, "known": 3})
        );
        assert_eq!(
            host.sync.files().seen(&sid("s1"), path).as_deref(),
            Some("a\nb\nc\n")
        );
        // "Unchanged" at a tick the backend does not hold is a broken
        // contract, said as such.
        host.sync.files().reported(
            path,
            BufferText {
                text: "newer\n".into(),
                version: 4,
            },
        );
        let err = host.read_text_file(&read).await.unwrap_err().to_string();
        assert!(
            err.contains("update the acp.nvim plugin and backend together"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_read_without_buffer_falls_back_to_disk() {
        let (host, _fs, _rx) = host_with(FakeFs::answering(Json::Null, Json::Null));
        let got = host
            .read_text_file(&ReadTextFile {
                session_id: sid("s1"),
                path: "/p/a.txt".into(),
                line: None,
                limit: None,
            })
            .await
            .unwrap();
        assert_eq!(got, None);
    }

    #[tokio::test]
    async fn a_write_merged_into_a_modified_buffer_is_kept_unsaved() {
        let (host, fs, _rx) = host_with(FakeFs::answering(
            json!({"text": "old\nmine\n", "tick": 4}),
            json!({"status": "merged", "revision": 1, "tick": 5}),
        ));
        host.read_text_file(&ReadTextFile {
            session_id: sid("s1"),
            path: "/p/a.txt".into(),
            line: None,
            limit: None,
        })
        .await
        .unwrap();
        let outcome = host.write_text_file(&write("new\nmine\n")).await.unwrap();
        assert_eq!(
            outcome,
            WriteOutcome::KeptUnsaved {
                seen: Some("old\nmine\n".into()),
                buffer: Some("new\nmine\n".into())
            }
        );
        assert_eq!(
            msgpack::to_json(&fs.seen.lock()[1]),
            json!({"path": "/p/a.txt", "revision": 1, "content": "new\nmine\n",
                   "merged": "new\nmine\n", "tick": 4})
        );
        // It knows what it wrote; the buffer is known at its new tick.
        let files = host.sync.files();
        assert_eq!(
            files.seen(&sid("s1"), Path::new("/p/a.txt")).as_deref(),
            Some("new\nmine\n")
        );
        assert_eq!(files.buffer(Path::new("/p/a.txt")).unwrap().version, 5);
    }

    #[tokio::test]
    async fn a_write_through_the_buffer_returns_the_old_content() {
        let (host, fs, _rx) = host_with(FakeFs::answering(
            Json::Null,
            json!({"status": "saved", "revision": 1, "tick": 9, "old_content": "old\n"}),
        ));
        let outcome = host.write_text_file(&write("new\n")).await.unwrap();
        assert_eq!(
            outcome,
            WriteOutcome::Handled {
                old_content: Some("old\n".into())
            }
        );
        assert_eq!(
            msgpack::to_json(&fs.seen.lock()[0]),
            json!({"path": "/p/a.txt", "revision": 1, "content": "new\n"})
        );
    }

    #[tokio::test]
    async fn an_answer_naming_another_revision_is_an_error() {
        let (host, fs, _rx) = host_with(FakeFs::answering(
            Json::Null,
            json!({"status": "stale", "revision": 1, "text": "x\n", "tick": 2}),
        ));
        // The first instruction is revision 1 (stale), the second 2: its
        // answer still names 1.
        let err = host.write_text_file(&write("y\n")).await.unwrap_err();
        assert!(err.to_string().contains("revision"), "{err}");
        assert_eq!(fs.seen.lock().len(), 2);
    }

    /// A Lua side whose buffer changes under every instruction.
    struct AlwaysStale {
        instructions: Mutex<u64>,
    }

    #[async_trait]
    impl Editor for AlwaysStale {
        async fn dispatch(&self, _events: Vec<Value>) -> Result<(), crate::editor::LuaError> {
            Ok(())
        }
        async fn fs_read(&self, _args: Value) -> Result<Value, crate::editor::LuaError> {
            Ok(Value::Nil)
        }
        async fn fs_apply(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
            let mut n = self.instructions.lock();
            *n += 1;
            let revision = msgpack::to_json(&args)["revision"].clone();
            Ok(msgpack::from_json(
                &json!({"status": "stale", "revision": revision, "text": format!("typed {n}\n"), "tick": *n}),
            ))
        }
    }

    #[tokio::test]
    async fn a_buffer_that_stays_stale_gets_the_write_on_disk_and_later() {
        let lua = Arc::new(AlwaysStale {
            instructions: Mutex::new(0),
        });
        let (events, _rx) = EventQueue::new();
        let host = NvimHost::new("demo", events, lua.clone(), Arc::new(Prompts::new()));
        let outcome = host.write_text_file(&write("y\n")).await.unwrap();
        // The buffer is left alone; the client writes the disk and the
        // write is merged into the buffer later, as a disk edit.
        assert_eq!(
            outcome,
            WriteOutcome::KeptUnsaved {
                seen: None,
                buffer: None
            }
        );
        assert_eq!(*lua.instructions.lock() as usize, buffer_sync::MAX_ATTEMPTS);
        assert_eq!(
            host.sync.files().pending(Path::new("/p/a.txt")),
            Some("y\n")
        );
        // Tried again as a disk edit once the client wrote and recorded it
        // (bounded too); the user's next report tries it after that.
        host.on_event(waited("/p/a.txt", "y\n"));
        host.disk_synced().await;
        assert_eq!(
            *lua.instructions.lock() as usize,
            2 * buffer_sync::MAX_ATTEMPTS
        );
        assert_eq!(
            host.sync.files().pending(Path::new("/p/a.txt")),
            Some("y\n")
        );
    }

    /// The client's event of an agent write that waited for the buffer.
    fn waited(path: &str, content: &str) -> ClientEvent {
        ClientEvent::FileEdited(FileEdit {
            session_id: sid("s1"),
            path: PathBuf::from(path),
            old_content: None,
            new_content: content.into(),
            applied: Applied::Waiting,
        })
    }

    /// A Lua side answering instructions from a script, in order (the
    /// revision echoed), and keeping every instruction it got. A gated one
    /// holds its answer to the first instruction until the gate opens.
    struct Scripted {
        replies: Mutex<VecDeque<Json>>,
        seen: Mutex<Vec<Json>>,
        gate: Option<tokio::sync::Notify>,
    }

    impl Scripted {
        fn new(replies: Vec<Json>) -> Arc<Self> {
            Arc::new(Self {
                replies: Mutex::new(replies.into()),
                seen: Mutex::default(),
                gate: None,
            })
        }

        fn gated(replies: Vec<Json>) -> Arc<Self> {
            Arc::new(Self {
                replies: Mutex::new(replies.into()),
                seen: Mutex::default(),
                gate: Some(tokio::sync::Notify::new()),
            })
        }
    }

    #[async_trait]
    impl Editor for Scripted {
        async fn dispatch(&self, _events: Vec<Value>) -> Result<(), crate::editor::LuaError> {
            Ok(())
        }
        async fn fs_read(&self, _args: Value) -> Result<Value, crate::editor::LuaError> {
            Ok(Value::Nil)
        }
        async fn fs_apply(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
            let args = msgpack::to_json(&args);
            let mut reply = self
                .replies
                .lock()
                .pop_front()
                .expect("an instruction the script did not expect");
            reply["revision"] = args["revision"].clone();
            let first = {
                let mut seen = self.seen.lock();
                seen.push(args);
                seen.len() == 1
            };
            if let (Some(gate), true) = (&self.gate, first) {
                gate.notified().await;
            }
            Ok(msgpack::from_json(&reply))
        }
    }

    fn scripted_host(replies: Vec<Json>) -> (NvimHost, Arc<Scripted>) {
        let lua = Scripted::new(replies);
        let (events, _rx) = EventQueue::new();
        let host = NvimHost::new("demo", events, lua.clone(), Arc::new(Prompts::new()));
        (host, lua)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn instructions_of_a_write_and_a_disk_edit_go_out_one_at_a_time() {
        let lua = Scripted::gated(vec![
            json!({"status": "saved", "tick": 3}),
            json!({"status": "reloaded", "tick": 4}),
        ]);
        let (events, _rx) = EventQueue::new();
        let host = Arc::new(NvimHost::new(
            "demo",
            events,
            lua.clone(),
            Arc::new(Prompts::new()),
        ));
        let path = Path::new("/p/a.txt");
        let writer = {
            let host = host.clone();
            tokio::spawn(async move { host.write_text_file(&write("w\n")).await })
        };
        while lua.seen.lock().is_empty() {
            tokio::task::yield_now().await;
        }
        // The agent's disk edit comes while the write's answer is on its
        // way: its instruction waits, or its answer could be recorded first
        // and the write's older one over it.
        host.disk_changed(&sid("s1"), path, Some("w\n"), "d\n");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(lua.seen.lock().len(), 1, "the disk edit waited");
        if let Some(gate) = &lua.gate {
            gate.notify_one();
        }
        writer.await.unwrap().unwrap();
        host.disk_synced().await;
        assert_eq!(lua.seen.lock().len(), 2);
        let files = host.sync.files();
        assert_eq!(
            files.buffer(path),
            Some(&BufferText {
                text: "d\n".into(),
                version: 4
            })
        );
        assert_eq!(files.disk(path), Some("d\n"));
    }

    #[tokio::test]
    async fn a_disk_edit_reloads_an_unmodified_buffer_with_one_instruction() {
        let (host, lua) = scripted_host(vec![json!({"status": "reloaded", "tick": 3})]);
        let path = Path::new("/p/a.txt");
        host.register(sid("s1"), chat("c7"), None);
        host.disk_changed(&sid("s1"), path, Some("old\n"), "new\n");
        host.disk_synced().await;
        // The text is on disk already: the unmodified buffer takes it
        // without saving (`disk`); its text is not known, so no merge. The
        // chat is named: the buffer's saves are reported to it at once.
        assert_eq!(
            *lua.seen.lock(),
            [
                json!({"path": "/p/a.txt", "revision": 1, "content": "new\n", "disk": true,
                    "chat_id": "c7"})
            ]
        );
        {
            let files = host.sync.files();
            assert_eq!(files.disk(path), Some("new\n"));
            assert_eq!(
                files.buffer(path),
                Some(&BufferText {
                    text: "new\n".into(),
                    version: 3
                })
            );
        }
        // The watcher reading the same text after the diff: nothing sent.
        host.disk_changed(&sid("s1"), path, Some("old\n"), "new\n");
        host.disk_synced().await;
        assert_eq!(lua.seen.lock().len(), 1);
    }

    #[tokio::test]
    async fn a_disk_edit_merges_into_unsaved_edits_on_the_synced_text_with_one_instruction() {
        let (host, lua) = scripted_host(vec![json!({"status": "merged", "tick": 5})]);
        let path = Path::new("/p/a.txt");
        // Saved by the user (the disk text), then typed in.
        assert!(
            host.buffer_reported(path, "a\nb\n".into(), 2, OnDisk::Saved)
                .await
        );
        assert!(
            host.buffer_reported(path, "mine\na\nb\n".into(), 4, OnDisk::No)
                .await
        );
        // Review's "before" is older than what the buffer was in sync with.
        host.disk_changed(&sid("s1"), path, Some("a\n"), "a\nB\n");
        host.disk_synced().await;
        assert_eq!(
            *lua.seen.lock(),
            [
                json!({"path": "/p/a.txt", "revision": 1, "content": "a\nB\n", "disk": true,
                    "merged": "mine\na\nB\n", "tick": 4})
            ]
        );
        let files = host.sync.files();
        assert_eq!(files.disk(path), Some("a\nB\n"));
        assert_eq!(files.buffer(path).unwrap().version, 5);
        assert_eq!(files.pending(path), None);
    }

    #[tokio::test]
    async fn a_disk_edit_waits_for_open_conflicts_and_goes_out_once_they_are_resolved() {
        let (host, lua) = scripted_host(vec![
            json!({"status": "waiting", "tick": 3}),
            json!({"status": "merged", "tick": 6}),
        ]);
        let path = Path::new("/p/a.txt");
        let blocks = "<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nz\n";
        host.buffer_reported(path, "old\nz\n".into(), 1, OnDisk::Read)
            .await;
        host.buffer_reported(path, blocks.into(), 2, OnDisk::No)
            .await;
        host.disk_changed(&sid("s1"), path, None, "old\nZ\n");
        host.disk_synced().await;
        // One instruction, answered waiting.
        assert_eq!(lua.seen.lock().len(), 1);
        assert_eq!(lua.seen.lock()[0]["tick"], 2);
        // Typing with the blocks open: not the user's edit of the agent's
        // text, and nothing sent.
        let typed = format!("{blocks}typed\n");
        assert!(
            !host
                .buffer_reported(path, typed.as_str().into(), 3, OnDisk::No)
                .await
        );
        host.disk_synced().await;
        assert_eq!(lua.seen.lock().len(), 1);
        // Resolved: the waiting text goes out again, merged on the synced
        // text; the report itself is not recorded (Lua reports the merge).
        assert!(
            !host
                .buffer_reported(path, "mine\nz\n".into(), 5, OnDisk::No)
                .await
        );
        host.disk_synced().await;
        assert_eq!(
            lua.seen.lock()[1],
            json!({"path": "/p/a.txt", "revision": 2, "content": "old\nZ\n", "disk": true,
                   "merged": "mine\nZ\n", "tick": 5})
        );
        assert_eq!(host.sync.files().pending(path), None);
        // The next report is the user's again.
        assert!(
            host.buffer_reported(path, "mine\nZ\nmore\n".into(), 7, OnDisk::No)
                .await
        );
    }

    #[tokio::test]
    async fn an_agent_write_to_a_buffer_with_open_conflicts_is_tried_as_a_disk_edit() {
        let (host, lua) = scripted_host(vec![
            json!({"status": "waiting", "tick": 2}),
            json!({"status": "merged", "tick": 3}),
        ]);
        let path = Path::new("/p/a.txt");
        let blocks = "<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nz\n";
        host.buffer_reported(path, "agent\nz\n".into(), 1, OnDisk::Read)
            .await;
        host.buffer_reported(path, blocks.into(), 2, OnDisk::No)
            .await;
        let outcome = host
            .write_text_file(&write("agent\nz\nmore\n"))
            .await
            .unwrap();
        assert_eq!(
            outcome,
            WriteOutcome::KeptUnsaved {
                seen: None,
                buffer: None
            }
        );
        host.disk_synced().await;
        assert_eq!(
            lua.seen.lock().len(),
            1,
            "not before the client recorded it"
        );
        host.on_event(waited("/p/a.txt", "agent\nz\nmore\n"));
        host.disk_synced().await;
        // Its merge around the open blocks does not conflict: taken.
        let seen = lua.seen.lock();
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1]["disk"], true);
        assert_eq!(
            seen[1]["merged"],
            "<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nz\nmore\n"
        );
    }

    #[tokio::test]
    async fn a_malformed_write_reply_is_an_error_for_the_agent() {
        let (host, _fs, _rx) = host_with(FakeFs {
            read: Value::from(3),
            apply: Value::from(true),
            seen: Mutex::default(),
        });
        assert!(matches!(
            host.write_text_file(&write("x")).await,
            Err(acp_client::Error::Host(_))
        ));
        let r = ReadTextFile {
            session_id: sid("s1"),
            path: "/p/a.txt".into(),
            line: None,
            limit: None,
        };
        assert!(matches!(
            host.read_text_file(&r).await,
            Err(acp_client::Error::Host(_))
        ));
    }

    #[tokio::test]
    async fn the_text_before_a_turn_is_asked_of_the_sessions_chat() {
        let (host, fs, _rx) = host_with(FakeFs::answering(
            json!({"text": "old\n", "tick": 1}),
            Json::Null,
        ));
        let path = Path::new("/p/a.txt");
        // A session with no chat yet: nothing to ask.
        assert_eq!(host.text_before_turn(&sid("s1"), path).await.unwrap(), None);
        assert!(fs.seen.lock().is_empty());
        host.register(sid("s1"), chat("c7"), None);
        let got = host.text_before_turn(&sid("s1"), path).await.unwrap();
        assert_eq!(got.as_deref(), Some("old\n"));
        assert_eq!(
            msgpack::to_json(&fs.seen.lock()[0]),
            json!({"chat_id": "c7", "path": "/p/a.txt"})
        );
    }

    #[tokio::test]
    async fn restores_merge_against_the_text_review_knew_and_leave_the_disk() {
        let (host, fs, _rx) = host_with(FakeFs::answering(
            Json::Null,
            json!({"status": "merged", "revision": 1, "tick": 5}),
        ));
        host.buffer_reported(
            Path::new("/p/a.txt"),
            "a\nnew\nb\nmine\n".into(),
            4,
            OnDisk::No,
        )
        .await;
        let restore = WriteTextFile {
            kind: WriteKind::Restore {
                current: Some("a\nnew\nb\n".into()),
            },
            ..write("a\nold\nb\n")
        };
        let outcome = host.write_text_file(&restore).await.unwrap();
        assert_eq!(outcome, WriteOutcome::Handled { old_content: None });
        assert_eq!(
            msgpack::to_json(&fs.seen.lock()[0]),
            json!({"path": "/p/a.txt", "revision": 1, "content": "a\nold\nb\n",
                   "merged": "a\nold\nb\nmine\n", "tick": 4, "restore": true})
        );
    }

    #[tokio::test]
    async fn permission_prompts_are_answered_through_the_backend_id() {
        let (host, _fs, mut rx) = host_with(FakeFs::answering(Json::Null, Json::Null));
        host.register(sid("s1"), chat("a"), None);
        let prompts = host.prompts.clone();
        let waiting = tokio::spawn({
            let host = Arc::new(host);
            async move { host.request_permission(permission("s1", 7)).await }
        });
        let Event::PermissionRequest { request_id, .. } = rx.recv().await.unwrap() else {
            panic!("expected a permission request");
        };
        assert!(prompts.answer(request_id, Some("no".into())));
        assert_eq!(
            waiting.await.unwrap(),
            PermissionDecision::Selected {
                option_id: "no".into()
            }
        );
        assert!(prompts.is_empty());
    }

    #[tokio::test]
    async fn a_dismissed_prompt_is_cancelled() {
        let (host, _fs, mut rx) = host_with(FakeFs::answering(Json::Null, Json::Null));
        host.register(sid("s1"), chat("a"), None);
        let prompts = host.prompts.clone();
        let host = Arc::new(host);
        let waiting = tokio::spawn({
            let host = host.clone();
            async move { host.request_permission(permission("s1", 8)).await }
        });
        let Event::PermissionRequest { request_id, .. } = rx.recv().await.unwrap() else {
            panic!("expected a permission request");
        };
        assert!(prompts.answer(request_id, None));
        assert_eq!(waiting.await.unwrap(), PermissionDecision::Cancelled);
        assert!(host.routes().prompt_ids.is_empty());
    }
}
