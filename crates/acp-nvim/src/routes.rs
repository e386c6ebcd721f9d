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
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
pub(crate) mod tests {
    use std::path::Path;

    use acp_client::agents::process::ExitInfo;
    use acp_client::edits::host::FileEdit;
    use acp_client::policy::permission::{OptionKind, PermissionOption};
    use acp_client::session::update::ToolCallFields;
    use acp_client::session::SessionChange;
    use serde_json::{json, Value as Json};

    use super::*;

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

    /// A permission request with an allow and a reject option (shared with
    /// the host's tests).
    pub(crate) fn permission(session: &str, id: u64) -> PermissionRequest {
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
        r.unregister(&sid("s1"), &chat("a"));
        r.translate(mode("s1", "late"), &mut out);
        assert!(out.is_empty());
        assert!(r.held.is_empty());
    }

    #[test]
    fn a_close_that_ends_after_the_session_was_loaded_again_keeps_the_new_route() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        // Chat b loads s1 while chat a's close is still in flight.
        r.register(sid("s1"), chat("b"), None, &mut out);
        r.unregister(&sid("s1"), &chat("a"));
        r.translate(mode("s1", "replayed"), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].chat_id(), Some(&chat("b")));
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
    fn file_edits_say_where_the_write_went() {
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        let edit = |path: &str, applied| {
            ClientEvent::FileEdited(FileEdit {
                session_id: sid("s1"),
                path: acp_client::path::CanonicalPath::resolve(Path::new(path)).unwrap(),
                old_content: None,
                new_content: "x".into(),
                applied,
            })
        };
        let merged = WriteOutcome::MergedUnsaved {
            seen: None,
            buffer: "x\nmine\n".into(),
        };
        r.translate(edit("/p/a.rs", merged), &mut out);
        r.translate(edit("/p/b.rs", WriteOutcome::Disk), &mut out);
        r.translate(
            edit("/p/c.rs", WriteOutcome::Waiting { seen: None }),
            &mut out,
        );
        let flags: Vec<(bool, bool, bool)> = out
            .iter()
            .map(|e| match e {
                Event::FileEdited {
                    buffer_updated,
                    kept_unsaved,
                    waiting,
                    ..
                } => (*buffer_updated, *kept_unsaved, *waiting),
                other => panic!("not a file edit: {other:?}"),
            })
            .collect();
        assert_eq!(
            flags,
            [
                (false, true, false),
                (false, false, false),
                (false, true, true)
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

    #[test]
    fn review_changes_reach_the_chat_with_a_snake_case_summary_and_the_review() {
        use acp_client::edits::hunks::{EditTracker, FileStatus, FileSummary};
        let mut tracker = EditTracker::new();
        tracker.record_write(
            &acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap(),
            None,
            "a\nb\r\n",
        );
        let mut r = Routes::new("demo");
        let mut out = Vec::new();
        r.register(sid("s1"), chat("a"), None, &mut out);
        assert_eq!(r.session_of(&chat("a")), Some(sid("s1")));
        assert_eq!(r.session_of(&chat("b")), None);
        r.translate(
            ClientEvent::ReviewChanged {
                session_id: sid("s1"),
                file: FileSummary {
                    path: acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap(),
                    status: FileStatus::Created,
                    hunks: 1,
                    added: 2,
                    removed: 0,
                    first_line: Some(0),
                },
                review: tracker.review(
                    &acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap(),
                ),
            },
            &mut out,
        );
        let id = tracker
            .review(&acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap())
            .unwrap()
            .hunks[0]
            .id
            .get();
        let view = out[0].json_view();
        let revision = view["revision"].as_u64().unwrap();
        assert_eq!(
            view,
            json!({"type": "review_changed", "chat_id": "a", "path": "/p/a.rs",
                   "summary": {"path": "/p/a.rs", "status": "created", "hunks": 1, "added": 2, "removed": 0, "first_line": 0},
                   "review": {"path": "/p/a.rs", "status": "created", "current": "a\nb\r\n",
                              "hunks": [{"id": id, "old_start": 0, "old_lines": [], "new_start": 0, "new_lines": ["a", "b"]}]},
                   "revision": revision})
        );
        // The next one is newer: Lua drops an older review that comes late.
        r.translate(
            ClientEvent::ReviewChanged {
                session_id: sid("s1"),
                file: tracker
                    .summary(
                        &acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap(),
                    )
                    .unwrap(),
                review: None,
            },
            &mut out,
        );
        assert!(out[1].json_view()["revision"].as_u64().unwrap() > revision);
    }
}
