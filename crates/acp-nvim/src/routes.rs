//! Which chat each session of one agent belongs to: the translation of
//! acp-client's session-keyed events into the plugin's chat-keyed ones,
//! with the events of sessions not registered yet held in order.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::elicitation::{self, ElicitationPromptId};
use crate::protocol::{ChatId, Event, PromptId, ReviewView};

/// The revision of the next `review_changed`, over every agent of the
/// backend. Taken while the routes' lock is held and the event queued, so
/// one file's events of one chat (one agent) carry growing revisions in
/// the order Lua gets them.
fn next_review_revision() -> u64 {
    static REVISION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    REVISION.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
use acp_client::edits::host::WriteOutcome;
use acp_client::policy::elicitation::{
    ElicitationMode, ElicitationRequest, ElicitationRequestId, ElicitationScope,
};
use acp_client::policy::permission::{PermissionDecision, PermissionRequest, PermissionRequestId};
use acp_client::session::update::SessionId;
use acp_client::tools::terminal::TerminalEvent;
use acp_client::ClientEvent;

/// Most events kept for sessions that are not registered yet.
const HELD_MAX: usize = 2_000;
/// Protocol warnings of one agent shown to the user; later ones are logged.
const WARNINGS_SHOWN: usize = 3;

/// Something for a session that may not be routable yet.
#[derive(Debug)]
pub(crate) enum Item {
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
    pub(crate) sessions: HashMap<SessionId, ChatId>,
    /// Sessions whose chat was closed: their late events are dropped.
    closed: HashSet<SessionId>,
    /// Events of sessions the backend does not know yet, in order. An agent
    /// may send updates right after its `session/new` answer, before the
    /// task that sent the request has registered the session (Claude sends
    /// its slash commands that way).
    held: VecDeque<(SessionId, Item)>,
    /// The client's permission ids (per agent) to the backend's (global).
    pub(crate) prompt_ids: HashMap<PermissionRequestId, PromptId>,
    /// The client's elicitation ids to the backend's, with the chat a
    /// request-scoped one was shown in.
    pub(crate) elicitation_ids:
        HashMap<ElicitationRequestId, (ElicitationPromptId, Option<ChatId>)>,
    /// Chats opening a session in this agent, newest last: a request-scoped
    /// elicitation (asked while serving `authenticate` or `session/new`)
    /// is shown in the newest.
    pub(crate) opening: Vec<ChatId>,
    warnings: usize,
    /// Scratch space of [`NvimHost::with_routes`], empty between calls.
    pub(crate) routed: Vec<Event>,
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
            warnings: 0,
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

    /// Stops routing `session` to `chat`; its late events are dropped. A
    /// session routed to another chat stays theirs: it was loaded again
    /// while this chat's `session/close` was in flight (test_e2e_rewind
    /// closes a chat and loads its session at once), and this close's
    /// clean-up comes after the load registered it.
    pub fn unregister(&mut self, session: &SessionId, chat: &ChatId) {
        if self.sessions.get(session).is_some_and(|c| c != chat) {
            return;
        }
        self.sessions.remove(session);
        self.closed.insert(session.clone());
        self.held.retain(|(sid, _)| sid != session);
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

    pub(crate) fn route(&mut self, item: Item, out: &mut Vec<Event>) {
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
            ClientEvent::Session { change, .. } => {
                // A subagent's own requests (permissions, elicitations) carry
                // its session id: they go to the chat of its parent.
                let child = subagent_announced(&change).map(SessionId::new);
                out.push(Event::Session {
                    chat_id: chat.clone(),
                    change,
                });
                if let Some(child) = child {
                    if !self.sessions.contains_key(&child) {
                        self.register(child, chat, None, out);
                    }
                }
            }
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
            ClientEvent::FileEdited(edit) => out.push(Event::FileEdited {
                chat_id: chat,
                path: edit.path.to_string_lossy().into_owned(),
                buffer_updated: edit.applied.saved(),
                kept_unsaved: edit.applied.kept_unsaved(),
                waiting: matches!(edit.applied, WriteOutcome::Waiting { .. }),
            }),
            ClientEvent::ReviewChanged { file, review, .. } => out.push(Event::ReviewChanged {
                chat_id: chat,
                path: file.path.to_string_lossy().into_owned(),
                summary: file,
                review: review.as_ref().map(ReviewView::from),
                revision: next_review_revision(),
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

/// The child session a change announces (`subagent_update`), at any depth.
fn subagent_announced(change: &acp_client::session::SessionChange) -> Option<&str> {
    match change {
        acp_client::session::SessionChange::SubagentChanged { subagent } => {
            Some(&subagent.session_id)
        }
        acp_client::session::SessionChange::Child { child_change, .. } => {
            subagent_announced(child_change)
        }
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests;
