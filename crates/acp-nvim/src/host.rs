//! The editor host of one agent process: acp-client calls it for permission
//! prompts, buffer-aware file access and events; it answers through Lua and
//! turns the client's session-keyed events into the plugin's chat-keyed ones.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::batcher::EventQueue;
use crate::editor::Editor;
use crate::elicitation::{self, ElicitationPromptId, WithdrawElicitation};
use crate::prompts::{Prompts, Withdraw};
use crate::protocol::lua::{self, BadReply};
use crate::protocol::{ChatId, Event, PromptId};
use acp_client::elicitation::{
    ElicitationMode, ElicitationRequest, ElicitationRequestId, ElicitationResponse,
    ElicitationScope,
};
use acp_client::host::{HostCapabilities, ReadTextFile, WriteOutcome, WriteTextFile};
use acp_client::permission::{PermissionDecision, PermissionRequest, PermissionRequestId};
use acp_client::schema;
use acp_client::terminal::TerminalEvent;
use acp_client::update::SessionId;
use acp_client::{ClientEvent, EditorHost};
use async_trait::async_trait;

/// Most events kept for sessions that are not registered yet.
const HELD_MAX: usize = 2_000;
/// Protocol warnings of one agent shown to the user; later ones are logged.
const WARNINGS_SHOWN: usize = 3;

/// What Lua did with an agent's write, kept until the client reports the
/// edit as done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct WriteNote {
    buffer_updated: bool,
    kept_unsaved: bool,
}

/// Something for a session that may not be routable yet.
#[derive(Debug)]
enum Item {
    Client(ClientEvent),
    Permission {
        request: PermissionRequest,
        prompt: PromptId,
    },
    Elicitation {
        request: ElicitationRequest,
        prompt: ElicitationPromptId,
    },
}

/// Which chat each session of one agent belongs to, and the translation of
/// the client's events into plugin events.
#[derive(Debug)]
pub struct Routes {
    agent_name: String,
    sessions: HashMap<SessionId, ChatId>,
    /// Sessions whose chat was closed: their late events are dropped.
    closed: HashSet<SessionId>,
    /// Events of sessions the backend does not know yet, in order. An agent
    /// may send updates right after its `session/new` answer, before the
    /// task that sent the request has registered the session (Claude sends
    /// its slash commands that way).
    held: VecDeque<(SessionId, Item)>,
    /// The client's permission ids (per agent) to the backend's (global).
    prompt_ids: HashMap<PermissionRequestId, PromptId>,
    /// The client's elicitation ids to the backend's, with the chat a
    /// request-scoped one was shown in.
    elicitation_ids: HashMap<ElicitationRequestId, (ElicitationPromptId, Option<ChatId>)>,
    /// Chats opening a session in this agent, newest last: a request-scoped
    /// elicitation (asked while serving `authenticate` or `session/new`)
    /// is shown in the newest.
    opening: Vec<ChatId>,
    writes: HashMap<(SessionId, PathBuf), WriteNote>,
    warnings: usize,
    /// Files being restored by a review reject, with the text the review
    /// knew as current: Lua merges the restore into a modified buffer
    /// against it instead of against the disk.
    restores: HashMap<(SessionId, PathBuf), Option<String>>,
    /// The text the agent last saw of a file: what `fs/read_text_file`
    /// answered from its buffer, what a mention embedded, what it wrote.
    /// The base of merging its next write into a buffer with unsaved edits:
    /// claude-code-acp reads the unsaved buffer and writes it back with its
    /// change, and merging that against the disk made a conflict of the
    /// user's own lines. Absent: it saw the disk.
    seen: HashMap<(SessionId, PathBuf), String>,
    /// Scratch space of [`NvimHost::with_routes`], empty between calls.
    routed: Vec<Event>,
}

impl Routes {
    /// No sessions yet.
    pub fn new(agent_name: impl Into<String>) -> Self {
        Self {
            agent_name: agent_name.into(),
            sessions: HashMap::new(),
            closed: HashSet::new(),
            held: VecDeque::new(),
            prompt_ids: HashMap::new(),
            elicitation_ids: HashMap::new(),
            opening: Vec::new(),
            writes: HashMap::new(),
            warnings: 0,
            restores: HashMap::new(),
            seen: HashMap::new(),
            routed: Vec::new(),
        }
    }

    /// Routes `session` to `chat` from now on; `started` (the
    /// `session_started` event) goes out first, then every event held for
    /// the session, in order.
    pub fn register(
        &mut self,
        session: SessionId,
        chat: ChatId,
        started: Option<Event>,
        out: &mut Vec<Event>,
    ) {
        self.closed.remove(&session);
        self.sessions.insert(session.clone(), chat);
        out.extend(started);
        let held = std::mem::take(&mut self.held);
        for (sid, item) in held {
            if sid == session {
                self.route(item, out);
            } else {
                self.held.push_back((sid, item));
            }
        }
    }

    /// Stops routing `session`; its late events are dropped.
    pub fn unregister(&mut self, session: &SessionId) {
        self.sessions.remove(session);
        self.closed.insert(session.clone());
        self.held.retain(|(sid, _)| sid != session);
        self.writes.retain(|(sid, _), _| sid != session);
        self.seen.retain(|(sid, _), _| sid != session);
    }

    /// The chats of this agent.
    pub fn chats(&self) -> Vec<ChatId> {
        let mut chats: Vec<ChatId> = self.sessions.values().cloned().collect();
        chats.sort();
        chats
    }

    /// Translates one client event; the result goes to `out`, or is held
    /// until its session is registered.
    pub fn translate(&mut self, event: ClientEvent, out: &mut Vec<Event>) {
        self.route(Item::Client(event), out);
    }

    fn route(&mut self, item: Item, out: &mut Vec<Event>) {
        // Borrowed: this runs for every streamed chunk, and the ids are only
        // copied (a reference count) into the event that leaves.
        let session = match &item {
            Item::Client(ev) => session_of(ev),
            Item::Permission { request, .. } => Some(&request.session_id),
            Item::Elicitation { request, .. } => request.scope.session_id(),
        };
        let Some(session) = session else {
            self.translate_agent_wide(item, out);
            return;
        };
        let Some(chat) = self.sessions.get(session).cloned() else {
            let session = session.clone();
            if self.closed.contains(&session) {
                tracing::debug!(%session, "dropping a late event of a closed session");
                self.drop_item(item);
            } else {
                self.hold(session, item);
            }
            return;
        };
        match item {
            Item::Client(ev) => self.translate_for_chat(ev, chat, out),
            Item::Permission { request, prompt } => out.push(Event::PermissionRequest {
                chat_id: chat,
                request_id: prompt,
                tool_call: request.tool_call,
                options: request.options,
            }),
            Item::Elicitation { request, prompt } => {
                out.push(elicitation_event(Some(chat), prompt, request))
            }
        }
    }

    fn hold(&mut self, session: SessionId, item: Item) {
        if self.held.len() >= HELD_MAX {
            if let Some((sid, old)) = self.held.pop_front() {
                tracing::warn!(session = %sid, "dropping an event of a session that never opened");
                self.drop_item(old);
            }
        }
        self.held.push_back((session, item));
    }

    /// Forgets the bookkeeping of an event that will never be shown.
    fn drop_item(&mut self, item: Item) {
        match item {
            Item::Client(ClientEvent::PermissionCancelled { id, .. }) => {
                self.prompt_ids.remove(&id);
            }
            Item::Client(ClientEvent::ElicitationCancelled { id, .. }) => {
                self.elicitation_ids.remove(&id);
            }
            _ => {}
        }
    }

    fn translate_agent_wide(&mut self, item: Item, out: &mut Vec<Event>) {
        let event = match item {
            Item::Client(event) => event,
            Item::Elicitation { request, prompt } => {
                // Request-scoped: the chat whose session is opening.
                let chat = self.opening.last().cloned();
                if let Some(entry) = self.elicitation_ids.get_mut(&request.id) {
                    entry.1 = chat.clone();
                }
                out.push(elicitation_event(chat, prompt, request));
                return;
            }
            Item::Permission { .. } => return,
        };
        match event {
            ClientEvent::ElicitationCancelled { id, .. } => {
                if let Some((prompt, chat)) = self.elicitation_ids.remove(&id) {
                    out.push(Event::ElicitationCancelled {
                        chat_id: chat,
                        request_id: prompt,
                    });
                }
            }
            ClientEvent::ElicitationCompleted { elicitation_id, .. } => {
                out.push(Event::ElicitationCompleted {
                    chat_id: self.opening.last().cloned(),
                    elicitation_id: elicitation_id.0,
                })
            }
            ClientEvent::AgentExited {
                status,
                stderr_tail,
            } => {
                for chat in self.chats() {
                    out.push(Event::AgentExited {
                        chat_id: chat,
                        status: status.to_string(),
                        stderr_tail: stderr_tail.clone(),
                    });
                }
            }
            ClientEvent::ProtocolWarning { message } => {
                tracing::warn!(agent = %self.agent_name, "{message}");
                self.warnings += 1;
                if self.warnings <= WARNINGS_SHOWN {
                    let mut message = format!("agent {}: {message}", self.agent_name);
                    if self.warnings == WARNINGS_SHOWN {
                        message.push_str(
                            " (further warnings of this agent go to the log only: :Acp log)",
                        );
                    }
                    out.push(Event::Warning {
                        chat_id: None,
                        message,
                    });
                }
            }
            other => tracing::debug!("client event without a session ignored: {other:?}"),
        }
    }

    fn translate_for_chat(&mut self, event: ClientEvent, chat: ChatId, out: &mut Vec<Event>) {
        match event {
            ClientEvent::Session { change, .. } => out.push(Event::Session {
                chat_id: chat,
                change,
            }),
            ClientEvent::PermissionCancelled { id, .. } => match self.prompt_ids.remove(&id) {
                Some(prompt) => out.push(Event::PermissionCancelled {
                    chat_id: chat,
                    request_id: prompt,
                }),
                None => tracing::debug!(?id, "cancelled permission prompt was never shown"),
            },
            ClientEvent::ElicitationCancelled { id, .. } => {
                match self.elicitation_ids.remove(&id) {
                    Some((prompt, _)) => out.push(Event::ElicitationCancelled {
                        chat_id: Some(chat),
                        request_id: prompt,
                    }),
                    None => tracing::debug!(?id, "cancelled elicitation was never shown"),
                }
            }
            ClientEvent::ElicitationCompleted { elicitation_id, .. } => {
                out.push(Event::ElicitationCompleted {
                    chat_id: Some(chat),
                    elicitation_id: elicitation_id.0,
                })
            }
            ClientEvent::PermissionAutoAnswered { request, decision } => {
                let option = match &decision {
                    PermissionDecision::Selected { option_id } => request
                        .options
                        .iter()
                        .find(|o| &o.option_id == option_id)
                        .cloned(),
                    _ => None,
                };
                out.push(Event::PermissionAuto {
                    chat_id: chat,
                    tool_call: request.tool_call,
                    option,
                });
            }
            ClientEvent::Terminal(terminal) => out.push(Event::Terminal {
                chat_id: chat,
                terminal,
            }),
            ClientEvent::FileEdited(edit) => {
                let note = self
                    .writes
                    .remove(&(edit.session_id.clone(), edit.path.clone()))
                    .unwrap_or_default();
                out.push(Event::FileEdited {
                    chat_id: chat,
                    path: edit.path.to_string_lossy().into_owned(),
                    buffer_updated: note.buffer_updated,
                    kept_unsaved: note.kept_unsaved,
                });
            }
            ClientEvent::ReviewChanged { file, .. } => out.push(Event::ReviewChanged {
                chat_id: chat,
                path: file.path.to_string_lossy().into_owned(),
                summary: file,
            }),
            other => tracing::debug!("client event not forwarded to Lua: {other:?}"),
        }
    }

    /// The session routed to `chat`, if it is open.
    pub fn session_of(&self, chat: &ChatId) -> Option<SessionId> {
        self.sessions
            .iter()
            .find(|(_, c)| *c == chat)
            .map(|(s, _)| s.clone())
    }
}

/// The session a client event belongs to; `None` for agent-wide events.
fn session_of(event: &ClientEvent) -> Option<&SessionId> {
    match event {
        ClientEvent::Session { session_id, .. }
        | ClientEvent::PermissionCancelled { session_id, .. } => Some(session_id),
        ClientEvent::ElicitationCancelled { scope, .. }
        | ClientEvent::ElicitationCompleted { scope, .. } => scope.session_id(),
        ClientEvent::PermissionAutoAnswered { request, .. } => Some(&request.session_id),
        ClientEvent::FileEdited(edit) => Some(&edit.session_id),
        ClientEvent::ReviewChanged { session_id, .. } => Some(session_id),
        ClientEvent::Terminal(terminal) => terminal_session(terminal),
        _ => None,
    }
}

/// The `elicitation_request` event of an elicitation.
fn elicitation_event(
    chat: Option<ChatId>,
    prompt: ElicitationPromptId,
    request: ElicitationRequest,
) -> Event {
    let (tool_call_id, tool_title) = match &request.scope {
        ElicitationScope::Session {
            tool_call_id,
            tool_title,
            ..
        } => (tool_call_id.clone(), tool_title.clone()),
        ElicitationScope::Request { .. } => (None, None),
    };
    let session_id = request.scope.session_id().map(ToString::to_string);
    let (mode, requested_schema, fields, url, elicitation_id) = match request.mode {
        ElicitationMode::Form { schema } => (
            "form",
            Some(schema.raw.clone()),
            Some(elicitation::lua_fields(&schema)),
            None,
            None,
        ),
        ElicitationMode::Url {
            elicitation_id,
            url,
        } => ("url", None, None, Some(url), Some(elicitation_id.0)),
    };
    Event::ElicitationRequest {
        chat_id: chat,
        request_id: prompt,
        session_id,
        mode,
        message: request.message,
        requested_schema,
        fields,
        url,
        elicitation_id,
        tool_call_id,
        tool_title,
    }
}

fn terminal_session(event: &TerminalEvent) -> Option<&SessionId> {
    match event {
        TerminalEvent::Started { session_id, .. }
        | TerminalEvent::Output { session_id, .. }
        | TerminalEvent::Exited { session_id, .. }
        | TerminalEvent::Released { session_id, .. } => Some(session_id),
        _ => None,
    }
}

/// The [`EditorHost`] of one agent process.
pub struct NvimHost {
    events: EventQueue,
    editor: Arc<dyn Editor>,
    prompts: Arc<Prompts>,
    routes: Mutex<Routes>,
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
        }
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

    /// The next writes of `path` in `session` restore rejected review
    /// hunks; `current` is the text review knew the file had. Until
    /// [`end_restore`](Self::end_restore), Lua merges those writes into a
    /// modified buffer against `current` and leaves the disk alone.
    pub fn begin_restore(&self, session: &SessionId, path: &Path, current: Option<String>) {
        self.routes()
            .restores
            .insert((session.clone(), path.to_owned()), current);
    }

    /// A prompt goes out: the files it embeds whole are what the agent
    /// saw of them.
    pub fn saw_prompt(&self, session: &SessionId, blocks: &[schema::ContentBlock]) {
        let mut routes = self.routes();
        for block in blocks {
            let schema::ContentBlock::Resource(embedded) = block else {
                continue;
            };
            let schema::EmbeddedResourceResource::TextResourceContents(res) = &embedded.resource
            else {
                continue;
            };
            // A range (`#L3-9`) is not the whole file.
            let Some(path) = res
                .uri
                .strip_prefix("file://")
                .filter(|p| !p.contains('#'))
                .map(percent_decode)
            else {
                continue;
            };
            // Keyed like the agent's requests: resolved (symlinks followed).
            let path = std::fs::canonicalize(&path).unwrap_or_else(|_| PathBuf::from(path));
            routes
                .seen
                .insert((session.clone(), path), res.text.clone());
        }
    }

    /// `require('acp.fs').read`: the buffer's text, `None` when no loaded
    /// buffer has the file.
    async fn buffer_read(
        &self,
        full: &Path,
        path: &str,
        args: lua::FsRead<'_>,
    ) -> acp_client::Result<Option<String>> {
        let reply = self.editor.fs_read(args.encode()).await.map_err(|e| {
            acp_client::Error::Host(format!(
                "Neovim could not read `{path}` from its buffer: {e}"
            ))
        })?;
        match lua::decode_text(reply) {
            Ok(text) => Ok(text),
            Err(BadReply::NotUtf8) => Err(acp_client::Error::NotUtf8 {
                path: full.to_owned(),
            }),
            Err(bad) => Err(acp_client::Error::Host(format!("reading `{path}`: {bad}"))),
        }
    }

    /// The restore of `path` is over: later writes are the agent's again.
    pub fn end_restore(&self, session: &SessionId, path: &Path) {
        self.routes()
            .restores
            .remove(&(session.clone(), path.to_owned()));
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
        let args = lua::FsRead {
            path,
            line: request.line,
            limit: request.limit,
        };
        let text = self.buffer_read(&request.path, path, args).await?;
        // From the first line, and fewer lines than asked for: all of it.
        let whole = request.line.unwrap_or(1) <= 1
            && request.limit.is_none_or(|limit| {
                text.as_ref()
                    .is_some_and(|t| t.lines().count() < limit as usize)
            });
        let seen = match &text {
            Some(text) if whole => Some(text.clone()),
            // A range: what the agent saw of the rest is the buffer's too.
            Some(_) => {
                let all = lua::FsRead {
                    path,
                    line: None,
                    limit: None,
                };
                self.buffer_read(&request.path, path, all).await?
            }
            None => None,
        };
        let key = (request.session_id.clone(), request.path.clone());
        let mut routes = self.routes();
        match seen {
            Some(seen) => routes.seen.insert(key, seen),
            // Read from disk: the disk is what it saw.
            None => routes.seen.remove(&key),
        };
        Ok(text)
    }

    async fn write_text_file(&self, request: &WriteTextFile) -> acp_client::Result<WriteOutcome> {
        let Some(path) = lua_path(&request.path) else {
            return Ok(WriteOutcome::NotHandled);
        };
        let restore = self
            .routes()
            .restores
            .get(&(request.session_id.clone(), request.path.clone()))
            .cloned();
        let key = (request.session_id.clone(), request.path.clone());
        let seen = match &restore {
            Some(_) => None,
            None => self.routes().seen.get(&key).cloned(),
        };
        let args = lua::FsWrite {
            path,
            content: &request.content,
            restore: restore.is_some(),
            base: match &restore {
                Some(base) => base.as_deref(),
                None => seen.as_deref(),
            },
        };
        let reply = self.editor.fs_write(args.encode()).await.map_err(|e| {
            acp_client::Error::Host(format!(
                "Neovim could not write `{path}` through its buffer: {e}"
            ))
        })?;
        let reply = lua::decode_write(&reply)
            .map_err(|bad| acp_client::Error::Host(format!("writing `{path}`: {bad}")))?;
        let note = WriteNote {
            buffer_updated: reply.handled,
            kept_unsaved: !reply.handled && reply.kept_unsaved,
        };
        {
            let mut routes = self.routes();
            if restore.is_none() {
                // It knows what it wrote.
                routes.seen.insert(key.clone(), request.content.clone());
            }
            routes.writes.insert(key, note);
        }
        if reply.handled {
            return Ok(WriteOutcome::Handled {
                old_content: reply.old_content,
            });
        }
        match seen {
            // Merged into the unsaved buffer the agent read: its change is
            // the difference from what it read, not from the disk (the
            // user's unsaved lines there are the user's).
            Some(seen) if reply.kept_unsaved => {
                let old =
                    acp_client::fs::write_text_file_atomic(&request.path, &request.content).await?;
                Ok(WriteOutcome::Handled {
                    old_content: old.map(|_| seen),
                })
            }
            _ => Ok(WriteOutcome::NotHandled),
        }
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

    fn on_event(&self, event: ClientEvent) {
        self.with_routes(|r, out| r.translate(event, out));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use acp_client::host::FileEdit;
    use acp_client::permission::{OptionKind, PermissionOption};
    use acp_client::process::ExitInfo;
    use acp_client::session::SessionChange;
    use acp_client::terminal::TerminalEvent;
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

    fn mode(session: &str, mode: &str) -> ClientEvent {
        ClientEvent::Session {
            session_id: sid(session),
            change: SessionChange::ModeChanged {
                current_mode_id: mode.into(),
            },
        }
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

    fn started(c: &str) -> Event {
        Event::Warning {
            chat_id: Some(chat(c)),
            message: "started".into(),
        }
    }

    #[test]
    fn session_events_are_routed_to_their_chat() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        r.register(sid("s2"), chat("b"), None, &mut out);
        r.translate(mode("s2", "plan"), &mut out);
        r.translate(mode("s1", "code"), &mut out);
        assert_eq!(
            out,
            vec![
                Event::Session {
                    chat_id: chat("b"),
                    change: SessionChange::ModeChanged {
                        current_mode_id: "plan".into(),
                    },
                },
                Event::Session {
                    chat_id: chat("a"),
                    change: SessionChange::ModeChanged {
                        current_mode_id: "code".into(),
                    },
                },
            ]
        );
    }

    #[test]
    fn events_before_registration_follow_session_started_in_order() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.translate(mode("s1", "one"), &mut out);
        r.translate(mode("other", "x"), &mut out);
        r.translate(mode("s1", "two"), &mut out);
        assert!(out.is_empty());
        r.register(sid("s1"), chat("a"), Some(started("a")), &mut out);
        let kinds: Vec<Json> = out.iter().map(Event::json_view).collect();
        assert_eq!(kinds[0]["message"], "started");
        assert_eq!(kinds[1]["change"]["current_mode_id"], "one");
        assert_eq!(kinds[2]["change"]["current_mode_id"], "two");
        assert_eq!(out.len(), 3);
        // The other session's event is still held for it.
        out.clear();
        r.register(sid("other"), chat("b"), None, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].chat_id(), Some(&chat("b")));
    }

    #[test]
    fn late_events_of_a_closed_session_are_dropped() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        r.unregister(&sid("s1"));
        r.translate(mode("s1", "late"), &mut out);
        assert!(out.is_empty());
        assert!(r.held.is_empty());
    }

    #[test]
    fn held_events_are_bounded() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        for i in 0..HELD_MAX + 10 {
            r.translate(mode("never", &i.to_string()), &mut out);
        }
        assert_eq!(r.held.len(), HELD_MAX);
        r.register(sid("never"), chat("a"), None, &mut out);
        assert_eq!(out.len(), HELD_MAX);
        // The oldest ones were dropped, the newest kept.
        assert_eq!(out[0].json_view()["change"]["current_mode_id"], "10");
    }

    #[test]
    fn agent_exit_reaches_every_chat_of_the_agent() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        r.register(sid("s2"), chat("b"), None, &mut out);
        r.translate(
            ClientEvent::AgentExited {
                status: ExitInfo {
                    code: Some(3),
                    signal: None,
                },
                stderr_tail: "boom\n".into(),
            },
            &mut out,
        );
        assert_eq!(
            out,
            vec![
                Event::AgentExited {
                    chat_id: chat("a"),
                    status: "exit code 3".into(),
                    stderr_tail: "boom\n".into()
                },
                Event::AgentExited {
                    chat_id: chat("b"),
                    status: "exit code 3".into(),
                    stderr_tail: "boom\n".into()
                },
            ]
        );
    }

    #[test]
    fn permission_requests_and_cancellations_use_backend_ids() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        r.prompt_ids.insert(PermissionRequestId(1), PromptId(41));
        r.route(
            Item::Permission {
                request: permission("s1", 1),
                prompt: PromptId(41),
            },
            &mut out,
        );
        r.translate(
            ClientEvent::PermissionCancelled {
                id: PermissionRequestId(1),
                session_id: sid("s1"),
            },
            &mut out,
        );
        let j: Vec<Json> = out.iter().map(Event::json_view).collect();
        assert_eq!(j[0]["type"], "permission_request");
        assert_eq!(j[0]["request_id"], 41);
        assert_eq!(j[0]["chat_id"], "a");
        assert_eq!(j[0]["tool_call"]["tool_call_id"], "tool-1");
        assert_eq!(
            j[0]["options"][0],
            json!({"option_id": "yes", "name": "Allow", "kind": "allow_once"})
        );
        assert_eq!(
            j[1],
            json!({"type": "permission_cancelled", "chat_id": "a", "request_id": 41})
        );
        assert!(r.prompt_ids.is_empty());
    }

    #[test]
    fn auto_answers_name_the_chosen_option() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        r.translate(
            ClientEvent::PermissionAutoAnswered {
                request: permission("s1", 2),
                decision: PermissionDecision::Selected {
                    option_id: "yes".into(),
                },
            },
            &mut out,
        );
        let j = out[0].json_view();
        assert_eq!(j["type"], "permission_auto");
        assert_eq!(j["option"]["option_id"], "yes");
        assert_eq!(j["tool_call"]["tool_call_id"], "tool-1");
    }

    #[test]
    fn terminal_events_gain_the_chat() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        r.translate(
            ClientEvent::Terminal(TerminalEvent::Output {
                session_id: sid("s1"),
                terminal_id: "term-1".into(),
                data: "hi\n".into(),
                truncated: false,
            }),
            &mut out,
        );
        assert_eq!(
            out[0].json_view(),
            json!({"type": "terminal", "chat_id": "a", "kind": "output", "session_id": "s1", "terminal_id": "term-1", "data": "hi\n", "truncated": false})
        );
    }

    #[test]
    fn file_edits_carry_what_lua_did_with_the_write() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        r.writes.insert(
            (sid("s1"), PathBuf::from("/p/a.rs")),
            WriteNote {
                buffer_updated: false,
                kept_unsaved: true,
            },
        );
        let edit = |path: &str| {
            ClientEvent::FileEdited(FileEdit {
                session_id: sid("s1"),
                path: PathBuf::from(path),
                old_content: None,
                new_content: "x".into(),
            })
        };
        r.translate(edit("/p/a.rs"), &mut out);
        r.translate(edit("/p/b.rs"), &mut out);
        assert_eq!(
            out,
            vec![
                Event::FileEdited {
                    chat_id: chat("a"),
                    path: "/p/a.rs".into(),
                    buffer_updated: false,
                    kept_unsaved: true
                },
                Event::FileEdited {
                    chat_id: chat("a"),
                    path: "/p/b.rs".into(),
                    buffer_updated: false,
                    kept_unsaved: false
                },
            ]
        );
    }

    #[test]
    fn only_the_first_protocol_warnings_are_shown() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        for i in 0..10 {
            r.translate(
                ClientEvent::ProtocolWarning {
                    message: format!("bad line {i}"),
                },
                &mut out,
            );
        }
        assert_eq!(out.len(), WARNINGS_SHOWN);
        let last = out.last().unwrap().json_view();
        assert!(last["message"].as_str().unwrap().contains(":Acp log"));
        assert!(last["message"]
            .as_str()
            .unwrap()
            .starts_with("agent demo: "));
    }

    /// A fake Lua `acp.fs`, answering with fixed values.
    struct FakeFs {
        read: Value,
        write: Value,
        seen: Mutex<Vec<Value>>,
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
        async fn fs_write(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
            self.seen.lock().push(args);
            Ok(self.write.clone())
        }
        /// Answers with `read`, like a buffer read.
        async fn before_turn(&self, args: Value) -> Result<Value, crate::editor::LuaError> {
            self.seen.lock().push(args);
            Ok(self.read.clone())
        }
    }

    fn host_with(fs: FakeFs) -> (NvimHost, Arc<FakeFs>, crate::batcher::EventReceiver) {
        let fs = Arc::new(fs);
        let (events, rx) = EventQueue::new();
        let host = NvimHost::new("demo", events, fs.clone(), Arc::new(Prompts::new()));
        (host, fs, rx)
    }

    #[tokio::test]
    async fn reads_ask_lua_for_the_requested_range_only() {
        let (host, fs, _rx) = host_with(FakeFs {
            read: Value::from("b\nc\n"),
            write: Value::Nil,
            seen: Mutex::default(),
        });
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
    }

    #[tokio::test]
    async fn a_read_without_buffer_falls_back_to_disk() {
        let (host, _fs, _rx) = host_with(FakeFs {
            read: Value::Nil,
            write: Value::Nil,
            seen: Mutex::default(),
        });
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
    async fn a_write_to_a_modified_buffer_goes_to_disk_and_is_reported() {
        let (host, _fs, mut rx) = host_with(FakeFs {
            read: Value::Nil,
            write: msgpack::from_json(&json!({"handled": false, "kept_unsaved": true})),
            seen: Mutex::default(),
        });
        host.register(sid("s1"), chat("a"), None);
        let outcome = host
            .write_text_file(&WriteTextFile {
                session_id: sid("s1"),
                path: "/p/a.txt".into(),
                content: "new".into(),
            })
            .await
            .unwrap();
        assert_eq!(outcome, WriteOutcome::NotHandled);
        // The client writes the disk, then reports the edit.
        host.on_event(ClientEvent::FileEdited(FileEdit {
            session_id: sid("s1"),
            path: "/p/a.txt".into(),
            old_content: Some("old".into()),
            new_content: "new".into(),
        }));
        assert_eq!(
            rx.try_recv().unwrap(),
            Event::FileEdited {
                chat_id: chat("a"),
                path: "/p/a.txt".into(),
                buffer_updated: false,
                kept_unsaved: true
            }
        );
    }

    #[tokio::test]
    async fn a_write_through_the_buffer_returns_the_old_content() {
        let (host, fs, _rx) = host_with(FakeFs {
            read: Value::Nil,
            write: msgpack::from_json(&json!({"handled": true, "old_content": "old\n"})),
            seen: Mutex::default(),
        });
        let outcome = host
            .write_text_file(&WriteTextFile {
                session_id: sid("s1"),
                path: "/p/a.txt".into(),
                content: "new\n".into(),
            })
            .await
            .unwrap();
        assert_eq!(
            outcome,
            WriteOutcome::Handled {
                old_content: Some("old\n".into())
            }
        );
        assert_eq!(
            msgpack::to_json(&fs.seen.lock()[0]),
            json!({"path": "/p/a.txt", "content": "new\n"})
        );
    }

    #[tokio::test]
    async fn a_malformed_write_reply_is_an_error_for_the_agent() {
        let (host, _fs, _rx) = host_with(FakeFs {
            read: Value::from(3),
            write: Value::from(true),
            seen: Mutex::default(),
        });
        let w = WriteTextFile {
            session_id: sid("s1"),
            path: "/p/a.txt".into(),
            content: "x".into(),
        };
        assert!(matches!(
            host.write_text_file(&w).await,
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

    #[test]
    fn review_changes_reach_the_chat_with_a_snake_case_summary() {
        use acp_client::review::{FileStatus, FileSummary};
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        assert_eq!(r.session_of(&chat("a")), Some(sid("s1")));
        assert_eq!(r.session_of(&chat("b")), None);
        r.translate(
            ClientEvent::ReviewChanged {
                session_id: sid("s1"),
                file: FileSummary {
                    path: "/p/a.rs".into(),
                    status: FileStatus::Created,
                    hunks: 1,
                    added: 2,
                    removed: 0,
                    first_line: Some(0),
                },
            },
            &mut out,
        );
        assert_eq!(
            out[0].json_view(),
            json!({"type": "review_changed", "chat_id": "a", "path": "/p/a.rs",
                   "summary": {"path": "/p/a.rs", "status": "created", "hunks": 1, "added": 2, "removed": 0, "first_line": 0}})
        );
    }

    #[tokio::test]
    async fn the_text_before_a_turn_is_asked_of_the_sessions_chat() {
        let (host, fs, _rx) = host_with(FakeFs {
            read: Value::from("old\n"),
            write: Value::Nil,
            seen: Mutex::default(),
        });
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
    async fn restores_tell_lua_the_text_review_knew() {
        let (host, fs, _rx) = host_with(FakeFs {
            read: Value::Nil,
            write: msgpack::from_json(&json!({"handled": true})),
            seen: Mutex::default(),
        });
        let w = WriteTextFile {
            session_id: sid("s1"),
            path: "/p/a.txt".into(),
            content: "old\n".into(),
        };
        host.begin_restore(&sid("s1"), Path::new("/p/a.txt"), Some("new\n".into()));
        host.write_text_file(&w).await.unwrap();
        host.end_restore(&sid("s1"), Path::new("/p/a.txt"));
        host.write_text_file(&w).await.unwrap();
        let seen = fs.seen.lock();
        assert_eq!(
            msgpack::to_json(&seen[0]),
            json!({"path": "/p/a.txt", "content": "old\n", "restore": true, "base": "new\n"})
        );
        assert_eq!(
            msgpack::to_json(&seen[1]),
            json!({"path": "/p/a.txt", "content": "old\n"})
        );
    }

    #[tokio::test]
    async fn permission_prompts_are_answered_through_the_backend_id() {
        let (host, _fs, mut rx) = host_with(FakeFs {
            read: Value::Nil,
            write: Value::Nil,
            seen: Mutex::default(),
        });
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
        let (host, _fs, mut rx) = host_with(FakeFs {
            read: Value::Nil,
            write: Value::Nil,
            seen: Mutex::default(),
        });
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
