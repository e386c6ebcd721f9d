//! The editor host of one agent process: acp-client calls it for permission
//! prompts, buffer-aware file access and events; it answers through Lua and
//! turns the client's session-keyed events into the plugin's chat-keyed ones.

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use acp_client::host::{ReadTextFile, WriteOutcome, WriteTextFile};
use acp_client::permission::{PermissionDecision, PermissionRequest, PermissionRequestId};
use acp_client::update::SessionId;
use acp_client::{ClientEvent, EditorHost};
use async_trait::async_trait;
use rmpv::Value;
use serde::Serialize;
use serde_json::Value as Json;

use crate::batcher::EventQueue;
use crate::command::{ChatId, PromptId};
use crate::editor::Editor;
use crate::event::Event;
use crate::msgpack;
use crate::prompts::{Prompts, Withdraw};

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
    writes: HashMap<(SessionId, PathBuf), WriteNote>,
    warnings: usize,
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
            writes: HashMap::new(),
            warnings: 0,
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
        let session = match &item {
            Item::Client(ev) => session_of(ev),
            Item::Permission { request, .. } => Some(request.session_id.clone()),
        };
        let Some(session) = session else {
            self.translate_agent_wide(item, out);
            return;
        };
        let Some(chat) = self.sessions.get(&session).cloned() else {
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
                tool_call: to_json(&request.tool_call),
                options: to_json(&request.options),
            }),
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
        if let Item::Client(ClientEvent::PermissionCancelled { id, .. }) = item {
            self.prompt_ids.remove(&id);
        }
    }

    fn translate_agent_wide(&mut self, item: Item, out: &mut Vec<Event>) {
        let Item::Client(event) = item else {
            return;
        };
        match event {
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
                change: to_json(&change),
            }),
            ClientEvent::PermissionCancelled { id, .. } => match self.prompt_ids.remove(&id) {
                Some(prompt) => out.push(Event::PermissionCancelled {
                    chat_id: chat,
                    request_id: prompt,
                }),
                None => tracing::debug!(?id, "cancelled permission prompt was never shown"),
            },
            ClientEvent::PermissionAutoAnswered { request, decision } => {
                let option = match &decision {
                    PermissionDecision::Selected { option_id } => request
                        .options
                        .iter()
                        .find(|o| &o.option_id == option_id)
                        .map(to_json)
                        .unwrap_or(Json::Null),
                    _ => Json::Null,
                };
                out.push(Event::PermissionAuto {
                    chat_id: chat,
                    tool_call: to_json(&request.tool_call),
                    option,
                });
            }
            ClientEvent::Terminal(terminal) => {
                let Json::Object(mut fields) = to_json(&terminal) else {
                    tracing::warn!("terminal event did not serialize to a map: {terminal:?}");
                    return;
                };
                fields.remove("sessionId");
                out.push(Event::Terminal {
                    chat_id: chat,
                    fields,
                });
            }
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
            other => tracing::debug!("client event not forwarded to Lua: {other:?}"),
        }
    }
}

/// The session a client event belongs to; `None` for agent-wide events.
fn session_of(event: &ClientEvent) -> Option<SessionId> {
    match event {
        ClientEvent::Session { session_id, .. }
        | ClientEvent::PermissionCancelled { session_id, .. } => Some(session_id.clone()),
        ClientEvent::PermissionAutoAnswered { request, .. } => Some(request.session_id.clone()),
        ClientEvent::FileEdited(edit) => Some(edit.session_id.clone()),
        ClientEvent::Terminal(terminal) => to_json(terminal)
            .get("sessionId")
            .and_then(Json::as_str)
            .map(SessionId::new),
        _ => None,
    }
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> Json {
    serde_json::to_value(value).unwrap_or_else(|e| {
        tracing::error!("could not serialize a value for Lua: {e}");
        Json::Null
    })
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
        // Every Routes operation leaves it consistent, so poison is ignored.
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the routes and queues what it produced. The lock is held
    /// while queueing so that events keep the order in which they were routed.
    fn with_routes(&self, f: impl FnOnce(&mut Routes, &mut Vec<Event>)) {
        let mut routes = self.routes();
        let mut out = Vec::new();
        f(&mut routes, &mut out);
        for ev in out {
            self.events.push(ev);
        }
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
}

/// A path as Lua gets it; `None` for paths that are not UTF-8 (Lua could
/// not match them against buffer names reliably: the disk is used).
fn lua_path(path: &Path) -> Option<&str> {
    path.to_str()
}

#[async_trait]
impl EditorHost for NvimHost {
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
        let mut args = vec![(Value::from("path"), Value::from(path))];
        if let Some(line) = request.line {
            args.push((Value::from("line"), Value::from(line)));
        }
        if let Some(limit) = request.limit {
            args.push((Value::from("limit"), Value::from(limit)));
        }
        let reply = self
            .editor
            .fs_read(Value::Map(args))
            .await
            .map_err(|e| {
                acp_client::Error::Host(format!(
                    "Neovim could not read `{path}` from its buffer: {e}"
                ))
            })?;
        match reply {
            Value::Nil => Ok(None),
            Value::String(s) => match s.into_str() {
                Some(text) => Ok(Some(text)),
                None => Err(acp_client::Error::NotUtf8 {
                    path: request.path.clone(),
                }),
            },
            other => Err(acp_client::Error::Host(format!(
                "Neovim answered a read of `{path}` with {other}, not text; update the acp.nvim plugin and backend together"
            ))),
        }
    }

    async fn write_text_file(&self, request: &WriteTextFile) -> acp_client::Result<WriteOutcome> {
        let Some(path) = lua_path(&request.path) else {
            return Ok(WriteOutcome::NotHandled);
        };
        let args = msgpack::map([
            ("path", Value::from(path)),
            ("content", Value::from(request.content.as_str())),
        ]);
        let reply = self.editor.fs_write(args).await.map_err(|e| {
            acp_client::Error::Host(format!(
                "Neovim could not write `{path}` through its buffer: {e}"
            ))
        })?;
        let flag = |key| msgpack::field(&reply, key).and_then(Value::as_bool) == Some(true);
        let handled = match msgpack::field(&reply, "handled").and_then(Value::as_bool) {
            Some(h) => h,
            None => {
                return Err(acp_client::Error::Host(format!(
                    "Neovim answered a write of `{path}` without `handled`; update the acp.nvim plugin and backend together"
                )))
            }
        };
        let note = WriteNote {
            buffer_updated: handled,
            kept_unsaved: !handled && flag("kept_unsaved"),
        };
        self.routes()
            .writes
            .insert((request.session_id.clone(), request.path.clone()), note);
        if handled {
            let old_content = msgpack::field(&reply, "old_content")
                .and_then(Value::as_str)
                .map(str::to_owned);
            Ok(WriteOutcome::Handled { old_content })
        } else {
            Ok(WriteOutcome::NotHandled)
        }
    }

    fn on_event(&self, event: ClientEvent) {
        self.with_routes(|r, out| r.translate(event, out));
    }
}
