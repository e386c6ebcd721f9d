//! The live sessions of one connection ([`LiveSessions`]), as opposed to
//! [`crate::session`], the model of one session's transcript: every open
//! session (its model, workspace and cwd), the permission prompts
//! waiting for the editor and the memory that answers some of them, the
//! agent's terminals, and the feed of typed edit events into edit review
//! ([`crate::edits::review`]). It serves the agent's messages as the engine's
//! [`Handler`](crate::rpc::engine::Handler) (see [`crate::serve::dispatch`]).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::agents::process::{AgentProcess, ExitInfo};
use crate::edits::fs::Workspace;
use crate::edits::host::{ClientEvent, EditorHost, EventSink};
use crate::edits::review::{Reviews, ToolFacts};
use crate::error::{Error, Result};
use crate::options::ConnectionOptions;
use crate::policy::elicitation::{ElicitationId, ElicitationRequestId, ElicitationScope};
use crate::policy::permission::{PermissionPolicy, PermissionRequestId};
use crate::rpc::engine::CloseReason;
use crate::session::update::{self, SessionId, SessionUpdate, ToolStatus};
use crate::session::update::{Content, ToolContent};
use crate::session::{SessionChange, SessionState};
use crate::tools::terminal::TerminalManager;

/// A permission prompt waiting for the editor.
pub(crate) struct PendingPermission {
    pub session_id: SessionId,
    pub cancel: oneshot::Sender<()>,
}

/// An elicitation waiting for the editor.
pub(crate) struct PendingElicitation {
    pub scope: ElicitationScope,
    pub cancel: oneshot::Sender<()>,
}

/// Per-session state kept by the connection.
#[derive(Debug)]
pub(crate) struct SessionSlot {
    pub state: SessionState,
    pub workspace: Workspace,
    pub cwd: PathBuf,
    /// For a subagent's session: the session that announced it. Its
    /// changes are shown in the parent's chat ([`SessionChange::Child`]).
    pub parent: Option<SessionId>,
}

/// Cap on `ProtocolWarning` events, so an agent printing garbage in a loop
/// cannot flood the editor; everything is still logged.
const MAX_WARNING_EVENTS: usize = 100;

/// The biggest file a v2 diff's old or new text is recovered from.
const DIFF_BASE_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// Everything above the engine that one connection owns.
/// See [`LiveSessions::reads`]: two, so one slow file does not stall the rest.
const READS_AT_ONCE: usize = 2;

pub(crate) struct LiveSessions {
    pub host: Arc<dyn EditorHost>,
    pub options: ConnectionOptions,
    pub events: EventSink,
    pub slots: Mutex<HashMap<SessionId, SessionSlot>>,
    pub permissions_pending: Mutex<HashMap<PermissionRequestId, PendingPermission>>,
    pub permission_policy: Mutex<PermissionPolicy>,
    next_permission_id: AtomicU64,
    pub elicitations_pending: Mutex<HashMap<ElicitationRequestId, PendingElicitation>>,
    /// Tool calls the user answered with an `allow_always` option, until
    /// they complete or fail; and the sessions whose agent refused such an
    /// answer (see [`LiveSessions::check_always_refused`]).
    pub always_answered: Mutex<HashSet<(SessionId, String)>>,
    pub always_refused: Mutex<HashSet<SessionId>>,
    /// URL elicitations the user accepted, until `elicitation/complete`.
    pub url_elicitations: Mutex<HashMap<ElicitationId, ElicitationScope>>,
    next_elicitation_id: AtomicU64,
    pub terminals: TerminalManager,
    /// Agent edits under review, per session.
    pub review: Reviews,
    pub process: Option<Arc<AgentProcess>>,
    /// While a `session/new` (or load/resume) is in flight, updates for a
    /// session id we do not know yet create it: some agents (claude-agent-acp
    /// sends `available_commands_update` from a timer) race the response.
    pub sessions_opening: AtomicUsize,
    warned_sessions: Mutex<HashSet<String>>,
    warnings_sent: AtomicUsize,
    /// `fs/read_text_file` requests being read at once. A read can be 64 MB
    /// and the agent may send 40 of them together (the issue 25 flood): one
    /// at a time each costs memory only until its reply is queued, where the
    /// engine's byte bound takes over.
    pub reads: tokio::sync::Semaphore,
    /// True once `initialize` settled on ACP v2: the decode points read v2
    /// shapes, and the client's fs and terminal methods are not served.
    pub v2: AtomicBool,
    /// The v2 prompts in flight, per session: a v2 turn ends with an idle
    /// `state_update`, which resolves the sender.
    pub turns: Mutex<HashMap<SessionId, Vec<oneshot::Sender<TurnEnd>>>>,
}

/// How a v2 turn ended (its idle `state_update`).
#[derive(Debug)]
pub(crate) struct TurnEnd {
    /// The stop reason's wire name.
    pub stop_reason: Option<String>,
    pub usage: Option<serde_json::Value>,
}

impl std::fmt::Debug for LiveSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveSessions")
            .field("sessions", &self.slots.lock().len())
            .field("prompts", &self.permissions_pending.lock().len())
            .finish_non_exhaustive()
    }
}

impl LiveSessions {
    pub(crate) fn new(
        host: Arc<dyn EditorHost>,
        options: ConnectionOptions,
        process: Option<Arc<AgentProcess>>,
    ) -> Self {
        let host_for_events = host.clone();
        let events: EventSink = Arc::new(move |e| host_for_events.on_event(e));
        let terminal_events = events.clone();
        let terminal_sink: crate::tools::terminal::TerminalSink =
            Arc::new(move |e| terminal_events(ClientEvent::Terminal(e)));
        // Commands run for the agent carry its mark: a daemon one of them
        // starts with `setsid` is swept when the agent closes (issue #25, X2).
        let terminals = match &process {
            Some(process) => TerminalManager::with_agent_mark(
                terminal_sink,
                options.terminal_output_cap,
                process.mark().to_owned(),
            ),
            None => TerminalManager::new(terminal_sink, options.terminal_output_cap),
        };
        let review = Reviews::new(events.clone(), host.clone(), options.max_read_bytes);
        let mut policy = PermissionPolicy::new();
        policy.auto_allow_kinds(options.auto_allow_kinds.iter().cloned());
        LiveSessions {
            reads: tokio::sync::Semaphore::new(READS_AT_ONCE),
            host,
            events,
            slots: Mutex::new(HashMap::new()),
            permissions_pending: Mutex::new(HashMap::new()),
            permission_policy: Mutex::new(policy),
            next_permission_id: AtomicU64::new(1),
            elicitations_pending: Mutex::new(HashMap::new()),
            always_answered: Mutex::new(HashSet::new()),
            always_refused: Mutex::new(HashSet::new()),
            url_elicitations: Mutex::new(HashMap::new()),
            next_elicitation_id: AtomicU64::new(1),
            terminals,
            review,
            process,
            sessions_opening: AtomicUsize::new(0),
            warned_sessions: Mutex::new(HashSet::new()),
            warnings_sent: AtomicUsize::new(0),
            v2: AtomicBool::new(false),
            turns: Mutex::new(HashMap::new()),
            options,
        }
    }

    pub(crate) fn emit(&self, event: ClientEvent) {
        (self.events)(event);
    }

    /// Emits a session's model changes, in order. A subagent's changes go
    /// to the chat of its parent, wrapped in [`SessionChange::Child`]
    /// (nested children up to the top session).
    pub(crate) fn emit_changes(&self, session_id: &SessionId, changes: Vec<SessionChange>) {
        let chain = self.parents_of(session_id);
        for mut change in changes {
            let mut target = session_id.clone();
            for parent in &chain {
                change = SessionChange::Child {
                    session_id: target.to_string(),
                    child_change: Box::new(change),
                };
                target = parent.clone();
            }
            self.emit(ClientEvent::Session {
                session_id: target,
                change,
            });
        }
    }

    /// The parent, grandparent... of a subagent session (empty for a top
    /// session). Bounded: an agent that makes a cycle of parents gets its
    /// changes shown one level up.
    fn parents_of(&self, session_id: &SessionId) -> Vec<SessionId> {
        let slots = self.slots.lock();
        let mut chain: Vec<SessionId> = Vec::new();
        let mut at = session_id;
        while let Some(parent) = slots.get(at).and_then(|s| s.parent.as_ref()) {
            if chain.len() >= 8 || parent == session_id || chain.contains(parent) {
                break;
            }
            chain.push(parent.clone());
            at = parent;
        }
        chain
    }

    /// Forgets a session and the subagent sessions under it.
    pub(crate) fn remove_session(&self, session_id: &SessionId) {
        // Its v2 turns end with it (their prompts fail: session closed).
        self.turns.lock().remove(session_id);
        let mut slots = self.slots.lock();
        slots.remove(session_id);
        // Children whose parent is gone, level by level (bounded as
        // `parents_of`).
        for _ in 0..8 {
            let orphans: Vec<SessionId> = slots
                .iter()
                .filter(|(_, s)| s.parent.as_ref().is_some_and(|p| !slots.contains_key(p)))
                .map(|(id, _)| id.clone())
                .collect();
            if orphans.is_empty() {
                break;
            }
            for id in orphans {
                slots.remove(&id);
            }
        }
    }

    /// A `subagent_update` announced a child of `parent`: the child gets a
    /// session of its own (its updates, permission requests, fs and
    /// terminal requests carry its id), working in the parent's workspace,
    /// or in the directory the agent placed it in when that is inside it.
    fn register_child(
        &self,
        slots: &mut HashMap<SessionId, SessionSlot>,
        parent: &SessionId,
        child: &crate::session::Subagent,
    ) {
        let child_id = SessionId::new(child.session_id.as_str());
        if child_id == *parent {
            return;
        }
        let Some(p) = slots.get(parent) else {
            return;
        };
        let workspace = p.workspace.clone();
        let cwd = child
            .cwd
            .as_ref()
            .and_then(|c| workspace.resolve(std::path::Path::new(c)).ok())
            .unwrap_or_else(|| p.cwd.clone());
        match slots.get_mut(&child_id) {
            // A top session the client opened is never made a child.
            Some(slot) if slot.parent.is_none() => {}
            Some(slot) => slot.cwd = cwd,
            None => {
                slots.insert(
                    child_id.clone(),
                    SessionSlot {
                        state: SessionState::new(child_id),
                        workspace,
                        cwd,
                        parent: Some(parent.clone()),
                    },
                );
            }
        }
    }

    pub(crate) fn warn(&self, message: String) {
        tracing::warn!("{message}");
        if self.warnings_sent.fetch_add(1, Ordering::Relaxed) < MAX_WARNING_EVENTS {
            self.emit(ClientEvent::ProtocolWarning { message });
        }
    }

    pub(crate) fn next_permission_id(&self) -> PermissionRequestId {
        PermissionRequestId(self.next_permission_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn next_elicitation_id(&self) -> ElicitationRequestId {
        ElicitationRequestId(self.next_elicitation_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Cancels the session's pending prompts and elicitations (used by
    /// `session/cancel` and close).
    pub(crate) fn cancel_session_prompts(&self, session_id: &SessionId) {
        self.cancel_permissions(|s| s == session_id);
        self.cancel_elicitations(|scope| scope.session_id() == Some(session_id));
    }

    /// The workspace and cwd of a session, or `-32002` for the agent.
    pub(crate) fn workspace(&self, session_id: &SessionId) -> Result<(Workspace, PathBuf)> {
        let slots = self.slots.lock();
        let slot = slots
            .get(session_id)
            .ok_or_else(|| unknown_session(session_id))?;
        Ok((slot.workspace.clone(), slot.cwd.clone()))
    }

    /// Answers matching pending permission prompts `cancelled`.
    pub(crate) fn cancel_permissions(&self, mut filter: impl FnMut(&SessionId) -> bool) {
        let cancelled: Vec<PendingPermission> = {
            let mut map = self.permissions_pending.lock();
            let ids: Vec<PermissionRequestId> = map
                .iter()
                .filter(|(_, p)| filter(&p.session_id))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for p in cancelled {
            // The handler task sees this, replies `cancelled`, and emits the event.
            let _ = p.cancel.send(());
        }
    }

    /// Answers matching pending elicitations `cancel`.
    pub(crate) fn cancel_elicitations(&self, mut filter: impl FnMut(&ElicitationScope) -> bool) {
        let cancelled: Vec<PendingElicitation> = {
            let mut map = self.elicitations_pending.lock();
            let ids: Vec<ElicitationRequestId> = map
                .iter()
                .filter(|(_, p)| filter(&p.scope))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for p in cancelled {
            // The handler task replies `cancel` and emits the event.
            let _ = p.cancel.send(());
        }
    }

    /// gemini-cli offers "allow always" and then, in a folder it does not
    /// trust, fails the tool call with "Cannot enable privileged approval
    /// modes in an untrusted folder." When a tool call answered "always"
    /// fails that way, the session's later prompts offer the once options
    /// only (dispatch filters them), and the user is told why.
    fn check_always_refused(&self, session_id: &SessionId, update: &SessionUpdate) {
        let (SessionUpdate::ToolCall(f) | SessionUpdate::ToolCallUpdate(f)) = update else {
            return;
        };
        let finished = matches!(f.status, Some(ToolStatus::Failed | ToolStatus::Completed));
        if !finished {
            return;
        }
        let key = (session_id.clone(), f.tool_call_id.0.to_string());
        if !self.always_answered.lock().remove(&key) || f.status != Some(ToolStatus::Failed) {
            return;
        }
        let mut text = String::new();
        for c in f.content.iter().flatten() {
            if let ToolContent::Content {
                content: Content::Known(crate::schema::ContentBlock::Text(t)),
            } = c
            {
                text.push_str(&t.text);
            }
        }
        if let Some(raw) = &f.raw_output {
            text.push_str(&raw.to_string());
        }
        if !text.contains("untrusted folder")
            || !self.always_refused.lock().insert(session_id.clone())
        {
            return;
        }
        self.emit(ClientEvent::Session {
            session_id: session_id.clone(),
            change: SessionChange::Notice {
                severity: "warning".into(),
                title: "The agent refused an \"always\" answer: it does not trust this folder".into(),
                description: Some(
                    "From now on this session offers the once options only. Trust the folder in the agent (gemini: /permissions) to use \"always\" again.".into(),
                ),
            },
        });
    }

    /// The text on disk of a file a v2 diff names, to recover the diff's
    /// other side: only inside the session's workspace (a diff naming
    /// `/etc/passwd` reads nothing) and up to [`DIFF_BASE_MAX_BYTES`]. A
    /// small blocking read on the reader task, like the path checks.
    pub(crate) fn diff_base(&self, session_id: &SessionId, path: &Path) -> Option<String> {
        let workspace = self.slots.lock().get(session_id)?.workspace.clone();
        let resolved = workspace.resolve(path).ok()?;
        let meta = std::fs::metadata(&resolved).ok()?;
        if !meta.is_file() || meta.len() > DIFF_BASE_MAX_BYTES {
            return None;
        }
        std::fs::read_to_string(&resolved).ok()
    }

    /// Applies one decoded v2 `session/update`: its updates like a v1
    /// agent's, and an idle `state_update` ends the session's turn.
    pub(crate) fn apply_v2(&self, notification: update::v2::V2Notification) {
        use update::v2::{AgentState, V2Notification};
        match notification {
            V2Notification::Updates {
                session_id,
                updates,
            } => {
                for update in updates {
                    self.apply_update(update::SessionNotification {
                        session_id: session_id.clone(),
                        update,
                    });
                }
            }
            V2Notification::UserMessage {
                session_id,
                message_id,
                content,
            } => {
                // The echo of a prompt this client recorded (claude-agent-acp
                // 0.101.0 echoes each one with the id it answers
                // `session/prompt` with, before or after that answer): the
                // message with that id, or the prompt recorded last while it
                // has no id yet, with the same content, is already shown.
                let id = Some(message_id.clone());
                let known = self
                    .slots
                    .lock()
                    .get_mut(&session_id)
                    .is_some_and(|slot| slot.state.take_prompt_echo(&id, &content));
                if known {
                    return;
                }
                self.apply_update(update::SessionNotification {
                    session_id,
                    update: SessionUpdate::MessageUpsert(update::MessageUpsert {
                        kind: update::MessageKind::User,
                        message_id,
                        content: Some(content),
                    }),
                });
            }
            V2Notification::State {
                session_id,
                state: AgentState::Idle { stop_reason, usage },
            } => match self.turns.lock().remove(&session_id) {
                Some(turns) => {
                    for turn in turns {
                        let _ = turn.send(TurnEnd {
                            stop_reason: stop_reason.clone(),
                            usage: usage.clone(),
                        });
                    }
                }
                // The end of a replay, or of work the agent started itself:
                // no turn of ours to end.
                None => tracing::debug!("idle state of `{session_id}` with no prompt in flight"),
            },
            // Running, waiting on the user (a permission request follows)
            // or a state this client does not know: the turn goes on.
            V2Notification::State { session_id, state } => {
                tracing::debug!("session `{session_id}` state {state:?}")
            }
        }
    }

    /// Applies a decoded update to its session and emits the changes.
    pub(crate) fn apply_update(&self, notification: update::SessionNotification) {
        let session_id = notification.session_id;
        self.check_always_refused(&session_id, &notification.update);
        // Tool calls feed edit review (edits/review.rs) once the session is live.
        let tool_call = match &notification.update {
            SessionUpdate::ToolCall(f) | SessionUpdate::ToolCallUpdate(f)
                if self.review.is_live(&session_id) =>
            {
                Some((
                    f.tool_call_id.clone(),
                    f.status == Some(ToolStatus::Completed),
                ))
            }
            _ => None,
        };
        let mut facts = None;
        let changes = {
            let mut slots = self.slots.lock();
            match slots.get_mut(&session_id) {
                Some(slot) => {
                    let changes = slot.state.apply(notification.update);
                    facts = tool_call.and_then(|(id, completed)| {
                        slot.state
                            .tool_call(&id)
                            .map(|tc| ToolFacts::of_state(tc, completed))
                    });
                    for change in &changes {
                        if let SessionChange::SubagentChanged { subagent } = change {
                            self.register_child(&mut slots, &session_id, subagent);
                        }
                    }
                    changes
                }
                None if self.sessions_opening.load(Ordering::Acquire) > 0 => {
                    let mut state = SessionState::new(session_id.clone());
                    let changes = state.apply(notification.update);
                    slots.insert(
                        session_id.clone(),
                        SessionSlot {
                            state,
                            workspace: Workspace::new(Vec::new()),
                            cwd: PathBuf::new(),
                            parent: None,
                        },
                    );
                    changes
                }
                None => {
                    drop(slots);
                    if self.warned_sessions.lock().insert(session_id.to_string()) {
                        self.warn(format!(
                            "the agent sent updates for unknown session `{session_id}`; they are ignored"
                        ));
                    }
                    return;
                }
            }
        };
        self.emit_changes(&session_id, changes);
        if let Some(facts) = facts {
            self.review.on_tool_call(&session_id, facts);
        }
    }

    /// The reason to close with once the agent's output ended: its exit
    /// status when this connection spawned it (after a grace period, then
    /// killing it), or the read failure.
    pub(crate) async fn input_ended(&self, failure: Option<CloseReason>) -> CloseReason {
        let grace = self.options.shutdown_grace;
        match failure {
            Some(r) => {
                // The agent is unusable; do not leave it running.
                if let Some(p) = &self.process {
                    p.shutdown(grace).await;
                }
                r
            }
            None => match &self.process {
                Some(p) => {
                    // stdout closed: the agent is exiting. Give it a moment so
                    // the error carries its real exit status; kill it if it
                    // lingers.
                    let status = match tokio::time::timeout(grace, p.exited()).await {
                        Ok(s) => s,
                        Err(_) => p.shutdown(grace).await,
                    };
                    CloseReason::Exited {
                        status,
                        stderr_tail: p.stderr_tail(),
                    }
                }
                None => CloseReason::Exited {
                    status: ExitInfo {
                        code: None,
                        signal: None,
                    },
                    stderr_tail: String::new(),
                },
            },
        }
    }

    /// After the agent's output ended: its terminals go, and the editor is
    /// told the agent exited (unless the editor shut it down itself).
    pub(crate) async fn closed(&self, reason: CloseReason, first: bool) {
        self.terminals.release_all().await;
        if !first {
            return;
        }
        if let CloseReason::Exited {
            status,
            stderr_tail,
        } = reason
        {
            self.emit(ClientEvent::AgentExited {
                status,
                stderr_tail,
            });
        }
    }
}

pub(crate) fn unknown_session(session_id: &SessionId) -> Error {
    Error::NotFound(format!("unknown session `{session_id}`"))
}
