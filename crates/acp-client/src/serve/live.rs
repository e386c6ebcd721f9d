//! The live sessions of one connection ([`LiveSessions`]), as opposed to
//! [`crate::session`], the model of one session's transcript: every open
//! session (its model, workspace and cwd), the permission prompts
//! waiting for the editor and the memory that answers some of them, the
//! agent's terminals, and the feed of typed edit events into edit review
//! ([`crate::edits::review`]). It serves the agent's messages as the engine's
//! [`Handler`](crate::rpc::engine::Handler) (see [`crate::serve::dispatch`]).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
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
use crate::session::{SessionChange, SessionState};
use crate::tools::terminal::TerminalManager;

mod prompts;
mod v2;

use prompts::{PendingElicitation, PendingPermission};
use v2::TurnEnd;

/// Per-session state kept by the connection.
#[derive(Debug)]
struct SessionSlot {
    state: SessionState,
    workspace: Workspace,
    cwd: PathBuf,
    /// For a subagent's session: the session that announced it. Its
    /// changes are shown in the parent's chat ([`SessionChange::Child`]).
    parent: Option<SessionId>,
}

/// Cap on `ProtocolWarning` events, so an agent printing garbage in a loop
/// cannot flood the editor; everything is still logged.
const MAX_WARNING_EVENTS: usize = 100;

/// See [`LiveSessions::read_permit`]: two, so one slow file does not stall
/// the rest.
const READS_AT_ONCE: usize = 2;

/// Everything above the engine that one connection owns. Its state is
/// reached through methods that say what the caller wants (the files of
/// `live/` add the questions waiting for the editor and ACP v2); none of
/// them holds a lock across an await or while taking another, and the
/// closures given to `with_state*` and `register` run under the sessions'
/// lock, so they touch the model only.
pub(crate) struct LiveSessions {
    host: Arc<dyn EditorHost>,
    options: ConnectionOptions,
    events: EventSink,
    slots: Mutex<HashMap<SessionId, SessionSlot>>,
    permissions_pending: Mutex<HashMap<PermissionRequestId, PendingPermission>>,
    permission_policy: Mutex<PermissionPolicy>,
    next_permission_id: AtomicU64,
    elicitations_pending: Mutex<HashMap<ElicitationRequestId, PendingElicitation>>,
    /// Tool calls the user answered with an `allow_always` option, until
    /// they complete or fail; and the sessions whose agent refused such an
    /// answer (see [`LiveSessions::check_always_refused`]).
    always_answered: Mutex<HashSet<(SessionId, String)>>,
    always_refused: Mutex<HashSet<SessionId>>,
    /// URL elicitations the user accepted, until `elicitation/complete`.
    url_elicitations: Mutex<HashMap<ElicitationId, ElicitationScope>>,
    next_elicitation_id: AtomicU64,
    terminals: TerminalManager,
    /// Agent edits under review, per session.
    review: Reviews,
    process: Option<Arc<AgentProcess>>,
    /// While a `session/new` (or load/resume) is in flight, updates for a
    /// session id we do not know yet create it: some agents (claude-agent-acp
    /// sends `available_commands_update` from a timer) race the response.
    sessions_opening: AtomicUsize,
    warned_sessions: Mutex<HashSet<String>>,
    warnings_sent: AtomicUsize,
    /// `fs/read_text_file` requests being read at once. A read can be 64 MB
    /// and the agent may send 40 of them together (the issue 25 flood): one
    /// at a time each costs memory only until its reply is queued, where the
    /// engine's byte bound takes over.
    reads: tokio::sync::Semaphore,
    /// True once `initialize` settled on ACP v2: the decode points read v2
    /// shapes, and the client's fs and terminal methods are not served.
    v2: AtomicBool,
    /// The v2 prompts in flight, per session: a v2 turn ends with an idle
    /// `state_update`, which resolves the sender.
    turns: Mutex<HashMap<SessionId, Vec<oneshot::Sender<TurnEnd>>>>,
    /// Sessions whose `session/close` is in flight: a load or resume of the
    /// same id waits for it ([`LiveSessions::close_settled`]). Found by
    /// test_e2e_rewind under load: a chat closed and its session loaded
    /// again at once (our fake agent, as a user reopening from `:Acp
    /// sessions` would) had the load registered between the close request
    /// and its answer, whose clean-up then dropped the load's session and
    /// review: the replay was ignored as an unknown session's.
    closing: Mutex<HashMap<SessionId, tokio::sync::watch::Receiver<()>>>,
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
            closing: Mutex::new(HashMap::new()),
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
            .map(crate::path::CanonicalPath::into_path_buf)
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

    /// The editor host this connection serves.
    pub(crate) fn host(&self) -> &dyn EditorHost {
        &*self.host
    }

    pub(crate) fn options(&self) -> &ConnectionOptions {
        &self.options
    }

    /// The agent's terminals.
    pub(crate) fn terminals(&self) -> &TerminalManager {
        &self.terminals
    }

    /// Agent edits under review, per session.
    pub(crate) fn review(&self) -> &Reviews {
        &self.review
    }

    /// The newest stderr output of the agent (when this connection spawned it).
    pub(crate) fn agent_stderr_tail(&self) -> Option<String> {
        self.process.as_ref().map(|p| p.stderr_tail())
    }

    /// The agent's process id (when this connection spawned it).
    pub(crate) fn agent_pid(&self) -> Option<u32> {
        self.process.as_ref().and_then(|p| p.pid())
    }

    /// Kills the agent's terminals, then the agent (when this connection
    /// spawned it), after the grace period; its exit status.
    pub(crate) async fn shut_down(&self) -> Option<ExitInfo> {
        self.terminals.release_all().await;
        match &self.process {
            Some(p) => Some(p.shutdown(self.options.shutdown_grace).await),
            None => None,
        }
    }

    /// Waits for a turn to read a file for the agent (see `reads`); the
    /// permit ends the turn when dropped.
    pub(crate) async fn read_permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        // Never closed, so `acquire` cannot fail.
        self.reads.acquire().await.ok()
    }

    /// Counts a session being opened (new, resume, fork) until the guard
    /// drops, however the open ends: meanwhile updates for an unknown
    /// session create it (see `sessions_opening`).
    pub(crate) fn opening(&self) -> OpeningGuard<'_> {
        self.sessions_opening.fetch_add(1, Ordering::AcqRel);
        OpeningGuard(self)
    }

    /// Marks a session as closing until the guard drops (the close settled,
    /// however it ended).
    pub(crate) fn closing(&self, session_id: &SessionId) -> ClosingGuard<'_> {
        let (tx, rx) = tokio::sync::watch::channel(());
        self.closing.lock().insert(session_id.clone(), rx.clone());
        ClosingGuard {
            sessions: self,
            session_id: session_id.clone(),
            rx,
            _tx: tx,
        }
    }

    /// Waits until no `session/close` of this id is in flight, so an
    /// opening of the same id is not undone by the close's clean-up.
    pub(crate) async fn close_settled(&self, session_id: &SessionId) {
        let pending = self.closing.lock().get(session_id).cloned();
        if let Some(mut rx) = pending {
            // Nothing is ever sent: this returns (Err) when the close's
            // guard drops the sender.
            let _ = rx.changed().await;
        }
    }

    /// Registers a session the agent opened (or reopened): its sandbox and
    /// cwd, and what `init` sets in its model (modes, config options),
    /// whose changes are emitted. A model the session already has (built
    /// from updates that raced the answer, or a load's replay) is kept.
    pub(crate) fn register(
        &self,
        session_id: &SessionId,
        workspace: Workspace,
        cwd: PathBuf,
        init: impl FnOnce(&mut SessionState) -> Vec<SessionChange>,
    ) {
        let changes = {
            let mut slots = self.slots.lock();
            let slot = slots
                .entry(session_id.clone())
                .or_insert_with(|| SessionSlot {
                    state: SessionState::new(session_id.clone()),
                    workspace: Workspace::new(Vec::new()),
                    cwd: PathBuf::new(),
                    parent: None,
                });
            slot.workspace = workspace;
            slot.cwd = cwd;
            init(&mut slot.state)
        };
        self.emit_changes(session_id, changes);
    }

    /// Before a `session/load`: the session (and its subagents) forgotten
    /// and registered afresh, so the replay lands in a new model.
    pub(crate) fn register_for_load(
        &self,
        session_id: &SessionId,
        workspace: Workspace,
        cwd: PathBuf,
    ) {
        self.remove_session(session_id);
        self.slots.lock().insert(
            session_id.clone(),
            SessionSlot {
                state: SessionState::new(session_id.clone()),
                workspace,
                cwd,
                parent: None,
            },
        );
    }

    /// Whether the session is open (a top session or a subagent's).
    pub(crate) fn is_open(&self, session_id: &SessionId) -> bool {
        self.slots.lock().contains_key(session_id)
    }

    /// The ids of every open session.
    pub(crate) fn session_ids(&self) -> Vec<SessionId> {
        self.slots.lock().keys().cloned().collect()
    }

    /// Reads a session's model; `None` for an unknown session.
    pub(crate) fn with_state<R>(
        &self,
        session_id: &SessionId,
        f: impl FnOnce(&SessionState) -> R,
    ) -> Option<R> {
        self.slots.lock().get(session_id).map(|slot| f(&slot.state))
    }

    /// Changes a session's model; `None` for an unknown session. The
    /// caller emits the changes it makes ([`LiveSessions::change_state`]
    /// does both).
    pub(crate) fn with_state_mut<R>(
        &self,
        session_id: &SessionId,
        f: impl FnOnce(&mut SessionState) -> R,
    ) -> Option<R> {
        self.slots
            .lock()
            .get_mut(session_id)
            .map(|slot| f(&mut slot.state))
    }

    /// Changes a session's model and emits the changes (nothing for an
    /// unknown session).
    pub(crate) fn change_state(
        &self,
        session_id: &SessionId,
        f: impl FnOnce(&mut SessionState) -> Vec<SessionChange>,
    ) {
        let changes = self.with_state_mut(session_id, f).unwrap_or_default();
        self.emit_changes(session_id, changes);
    }

    /// Whether the client may cancel the session: a top session always; a
    /// subagent's only when the agent's `subagent_update` gave it
    /// `capabilities.cancel` (the spec: support on ordinary sessions grants
    /// nothing on a child).
    pub(crate) fn may_cancel(&self, session_id: &SessionId) -> bool {
        let slots = self.slots.lock();
        match slots.get(session_id).and_then(|s| s.parent.as_ref()) {
            None => true,
            Some(parent) => slots.get(parent).is_some_and(|p| {
                p.state
                    .subagent(&session_id.0)
                    .is_some_and(|child| child.can_cancel)
            }),
        }
    }

    /// The workspace and cwd of a session, or `-32002` for the agent.
    pub(crate) fn workspace(&self, session_id: &SessionId) -> Result<(Workspace, PathBuf)> {
        let slots = self.slots.lock();
        let slot = slots
            .get(session_id)
            .ok_or_else(|| unknown_session(session_id))?;
        Ok((slot.workspace.clone(), slot.cwd.clone()))
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

/// Decrements the "session opening" counter however the open ends
/// ([`LiveSessions::opening`]).
pub(crate) struct OpeningGuard<'a>(&'a LiveSessions);

impl Drop for OpeningGuard<'_> {
    fn drop(&mut self) {
        self.0.sessions_opening.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Ends a session's closing ([`LiveSessions::closing`]).
pub(crate) struct ClosingGuard<'a> {
    sessions: &'a LiveSessions,
    session_id: SessionId,
    rx: tokio::sync::watch::Receiver<()>,
    _tx: tokio::sync::watch::Sender<()>,
}

impl Drop for ClosingGuard<'_> {
    fn drop(&mut self) {
        let mut closing = self.sessions.closing.lock();
        // Only this close's entry: a second close of the id may have
        // replaced it.
        if closing
            .get(&self.session_id)
            .is_some_and(|rx| rx.same_channel(&self.rx))
        {
            closing.remove(&self.session_id);
        }
    }
}

pub(crate) fn unknown_session(session_id: &SessionId) -> Error {
    Error::NotFound(format!("unknown session `{session_id}`"))
}
