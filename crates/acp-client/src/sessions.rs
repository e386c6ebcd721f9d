//! The session layer above the JSON-RPC engine: every session of one
//! connection (its model, workspace and cwd), the permission prompts
//! waiting for the editor and the memory that answers some of them, the
//! agent's terminals, and the feed of typed edit events into edit review
//! ([`crate::tracking`]). It serves the agent's messages as the engine's
//! [`Handler`](crate::engine::Handler) (see [`crate::dispatch`]).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::engine::CloseReason;
use crate::error::{Error, Result};
use crate::fs::Workspace;
use crate::host::{ClientEvent, EditorHost, EventSink};
use crate::options::ConnectionOptions;
use crate::permission::{PermissionPolicy, PermissionRequestId};
use crate::process::{AgentProcess, ExitInfo};
use crate::session::{SessionChange, SessionState};
use crate::terminal::TerminalManager;
use crate::tracking::{Reviews, ToolFacts};
use crate::update::{self, SessionId, SessionUpdate, ToolStatus};

/// A permission prompt waiting for the editor.
pub(crate) struct PendingPermission {
    pub session_id: SessionId,
    pub cancel: oneshot::Sender<()>,
}

/// Per-session state kept by the connection.
#[derive(Debug)]
pub(crate) struct SessionSlot {
    pub state: SessionState,
    pub workspace: Workspace,
    pub cwd: PathBuf,
}

/// Cap on `ProtocolWarning` events, so an agent printing garbage in a loop
/// cannot flood the editor; everything is still logged.
const MAX_WARNING_EVENTS: usize = 100;

/// Everything above the engine that one connection owns.
pub(crate) struct Sessions {
    pub host: Arc<dyn EditorHost>,
    pub options: ConnectionOptions,
    pub events: EventSink,
    pub slots: Mutex<HashMap<SessionId, SessionSlot>>,
    pub permissions_pending: Mutex<HashMap<PermissionRequestId, PendingPermission>>,
    pub permission_policy: Mutex<PermissionPolicy>,
    next_permission_id: AtomicU64,
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
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("sessions", &self.slots.lock().len())
            .field("prompts", &self.permissions_pending.lock().len())
            .finish_non_exhaustive()
    }
}

impl Sessions {
    pub(crate) fn new(
        host: Arc<dyn EditorHost>,
        options: ConnectionOptions,
        process: Option<Arc<AgentProcess>>,
    ) -> Self {
        let host_for_events = host.clone();
        let events: EventSink = Arc::new(move |e| host_for_events.on_event(e));
        let terminal_events = events.clone();
        let terminals = TerminalManager::new(
            Arc::new(move |e| terminal_events(ClientEvent::Terminal(e))),
            options.terminal_output_cap,
        );
        let review = Reviews::new(events.clone(), host.clone(), options.max_read_bytes);
        let mut policy = PermissionPolicy::new();
        policy.auto_allow_kinds(options.auto_allow_kinds.iter().cloned());
        Sessions {
            host,
            events,
            slots: Mutex::new(HashMap::new()),
            permissions_pending: Mutex::new(HashMap::new()),
            permission_policy: Mutex::new(policy),
            next_permission_id: AtomicU64::new(1),
            terminals,
            review,
            process,
            sessions_opening: AtomicUsize::new(0),
            warned_sessions: Mutex::new(HashSet::new()),
            warnings_sent: AtomicUsize::new(0),
            options,
        }
    }

    pub(crate) fn emit(&self, event: ClientEvent) {
        (self.events)(event);
    }

    /// Emits a session's model changes, in order.
    pub(crate) fn emit_changes(&self, session_id: &SessionId, changes: Vec<SessionChange>) {
        for change in changes {
            self.emit(ClientEvent::Session {
                session_id: session_id.clone(),
                change,
            });
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

    /// Applies a decoded update to its session and emits the changes.
    pub(crate) fn apply_update(&self, notification: update::SessionNotification) {
        let session_id = notification.session_id;
        // Tool calls feed edit review (tracking.rs) once the session is live.
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
