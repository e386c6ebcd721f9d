//! The JSON-RPC engine: one reader task, one writer task, the map of our
//! pending requests and the map of the agent's requests we are serving.
//!
//! Wire order is call order: a request is queued for the writer before its
//! future is returned. Incoming requests run in their own tasks, so a handler
//! that waits for a human never blocks reading. Every incoming request gets
//! exactly one reply: whoever removes its id from the `incoming` map first
//! (the finished handler, or a `$/cancel_request`) sends it.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;

use crate::codec::LineReader;
use crate::connection::{AgentInfo, ConnectionOptions};
use crate::elicitation::{ElicitationId, ElicitationRequestId, ElicitationScope};
use crate::error::{Error, Result};
use crate::fs::Workspace;
use crate::host::{ClientEvent, EditorHost, EventSink};
use crate::methods;
use crate::permission::{PermissionPolicy, PermissionRequestId};
use crate::process::{AgentProcess, ExitInfo};
use crate::rpc::{Incoming, Outgoing, RequestId, RpcError};
use crate::session::SessionState;
use crate::terminal::TerminalManager;
use crate::tracking::{Reviews, ToolFacts};
use crate::update::{self, SessionId, SessionUpdate, ToolStatus};

/// Why the connection is closed; cloned into an [`Error`] for every caller
/// that was waiting or calls later.
#[derive(Debug, Clone)]
pub(crate) enum CloseReason {
    Exited {
        status: ExitInfo,
        stderr_tail: String,
    },
    LineTooLong {
        limit: usize,
    },
    Io(String),
    Shutdown,
}

impl CloseReason {
    pub(crate) fn to_error(&self) -> Error {
        match self {
            CloseReason::Exited {
                status,
                stderr_tail,
            } => Error::AgentExited {
                status: *status,
                stderr_tail: stderr_tail.clone(),
            },
            CloseReason::LineTooLong { limit } => Error::LineTooLong { limit: *limit },
            CloseReason::Io(msg) => Error::Io(std::io::Error::other(msg.clone())),
            CloseReason::Shutdown => Error::Closed,
        }
    }
}

struct Pending {
    method: &'static str,
    tx: oneshot::Sender<Result<Box<RawValue>>>,
}

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
    pub cwd: std::path::PathBuf,
}

/// Everything the connection's tasks share.
pub(crate) struct Shared {
    pub host: Arc<dyn EditorHost>,
    pub options: ConnectionOptions,
    pub events: EventSink,
    outgoing: mpsc::Sender<Vec<u8>>,
    next_id: AtomicI64,
    pending: Mutex<HashMap<RequestId, Pending>>,
    incoming: Mutex<HashMap<RequestId, AbortHandle>>,
    closed: Mutex<Option<CloseReason>>,
    closed_tx: watch::Sender<bool>,
    pub sessions: Mutex<HashMap<SessionId, SessionSlot>>,
    pub permissions_pending: Mutex<HashMap<PermissionRequestId, PendingPermission>>,
    pub permission_policy: Mutex<PermissionPolicy>,
    next_permission_id: AtomicU64,
    pub elicitations_pending: Mutex<HashMap<ElicitationRequestId, PendingElicitation>>,
    /// Tool calls the user answered with an `allow_always` option, until
    /// they complete or fail; and the sessions whose agent refused such an
    /// answer (see [`Shared::check_always_refused`]).
    pub always_answered: Mutex<HashSet<(SessionId, String)>>,
    pub always_refused: Mutex<HashSet<SessionId>>,
    /// URL elicitations the user accepted, until `elicitation/complete`.
    pub url_elicitations: Mutex<HashMap<ElicitationId, ElicitationScope>>,
    next_elicitation_id: AtomicU64,
    pub terminals: TerminalManager,
    /// Agent edits under review, per session.
    pub review: Reviews,
    pub agent: Mutex<Option<AgentInfo>>,
    pub process: Option<Arc<AgentProcess>>,
    /// While a `session/new` (or load/resume) is in flight, updates for a
    /// session id we do not know yet create it: some agents (claude-agent-acp
    /// sends `available_commands_update` from a timer) race the response.
    pub sessions_opening: AtomicUsize,
    warned_sessions: Mutex<HashSet<String>>,
    warnings_sent: AtomicUsize,
}

/// Cap on `ProtocolWarning` events, so an agent printing garbage in a loop
/// cannot flood the editor; everything is still logged.
const MAX_WARNING_EVENTS: usize = 100;

/// Locks a mutex, recovering the data if a panicking thread poisoned it: the
/// maps behind these locks stay consistent at every await-free step.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("closed", &*lock(&self.closed))
            .field("pending", &lock(&self.pending).len())
            .finish_non_exhaustive()
    }
}

/// Handles of the connection's long-lived tasks, aborted when the last
/// [`crate::connection::Connection`] clone is dropped.
#[derive(Debug, Default)]
pub(crate) struct Tasks {
    handles: Mutex<Vec<AbortHandle>>,
    shared: Mutex<Weak<Shared>>,
}

impl Tasks {
    pub(crate) fn push(&self, h: AbortHandle) {
        lock(&self.handles).push(h);
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        // Stop everything that holds the shared state, so it drops and with
        // it the agent process (its group is killed) and the terminals.
        if let Some(shared) = lock(&self.shared).upgrade() {
            shared.close(CloseReason::Shutdown);
            for (_, h) in lock(&shared.incoming).drain() {
                h.abort();
            }
        }
        for h in lock(&self.handles).drain(..) {
            h.abort();
        }
    }
}

impl Shared {
    /// Builds the shared state and starts the reader and writer tasks.
    pub(crate) fn start<R, W>(
        reader: R,
        writer: W,
        host: Arc<dyn EditorHost>,
        options: ConnectionOptions,
        process: Option<Arc<AgentProcess>>,
        tasks: &Tasks,
    ) -> Arc<Shared>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out_tx, out_rx) = mpsc::channel(options.outgoing_queue.max(1));
        let (closed_tx, _) = watch::channel(false);
        let host_for_events = host.clone();
        let events: EventSink = Arc::new(move |e| host_for_events.on_event(e));
        let terminals = TerminalManager::new(events.clone(), options.terminal_output_cap);
        let review = Reviews::new(events.clone(), host.clone(), options.max_read_bytes);
        let mut policy = PermissionPolicy::new();
        policy.auto_allow_kinds(options.auto_allow_kinds.iter().cloned());
        let shared = Arc::new(Shared {
            host,
            events,
            outgoing: out_tx,
            next_id: AtomicI64::new(0),
            pending: Mutex::new(HashMap::new()),
            incoming: Mutex::new(HashMap::new()),
            closed: Mutex::new(None),
            closed_tx,
            sessions: Mutex::new(HashMap::new()),
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
            agent: Mutex::new(None),
            process,
            sessions_opening: AtomicUsize::new(0),
            warned_sessions: Mutex::new(HashSet::new()),
            warnings_sent: AtomicUsize::new(0),
            options,
        });
        *lock(&tasks.shared) = Arc::downgrade(&shared);
        let w = tokio::spawn(write_loop(writer, out_rx, shared.closed_tx.subscribe()));
        tasks.push(w.abort_handle());
        let line_reader = LineReader::new(reader, shared.options.max_line_bytes);
        let r = tokio::spawn(read_loop(shared.clone(), line_reader));
        tasks.push(r.abort_handle());
        shared
    }

    pub(crate) fn emit(&self, event: ClientEvent) {
        (self.events)(event);
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

    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        lock(&self.closed).clone()
    }

    fn close_error(&self) -> Error {
        self.close_reason()
            .map(|r| r.to_error())
            .unwrap_or(Error::Closed)
    }

    /// Resolves once the connection is closed.
    pub(crate) async fn closed(&self) -> CloseReason {
        let mut rx = self.closed_tx.subscribe();
        loop {
            if let Some(r) = self.close_reason() {
                return r;
            }
            if rx.changed().await.is_err() {
                return self.close_reason().unwrap_or(CloseReason::Shutdown);
            }
        }
    }

    /// Queues one encoded line for the writer. Never waits: a full queue
    /// means the agent stopped reading, and waiting would freeze the editor.
    fn send_line(&self, line: Vec<u8>) -> Result<()> {
        if let Some(r) = self.close_reason() {
            return Err(r.to_error());
        }
        self.outgoing.try_send(line).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Error::Backpressure {
                queued: self.options.outgoing_queue,
            },
            mpsc::error::TrySendError::Closed(_) => self.close_error(),
        })
    }

    pub(crate) fn notify(&self, method: &'static str, params: &Value) -> Result<()> {
        self.send_line(Outgoing::Notification { method, params }.encode())
    }

    fn reply(&self, id: &RequestId, result: Result<Value, RpcError>) {
        let line = match &result {
            Ok(v) => Outgoing::Response { id, result: Ok(v) }.encode(),
            Err(e) => Outgoing::Response { id, result: Err(e) }.encode(),
        };
        if let Err(e) = self.send_line(line) {
            tracing::warn!("could not send the reply to agent request {id}: {e}");
        }
    }

    /// Sends a request and waits for its typed result.
    pub(crate) async fn request<T: DeserializeOwned>(
        self: &Arc<Self>,
        method: &'static str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<T> {
        let raw = self.request_raw(method, params, timeout).await?;
        serde_json::from_str(raw.get()).map_err(|e| Error::Decode {
            what: format!("the agent's answer to `{method}`"),
            reason: e.to_string(),
        })
    }

    pub(crate) async fn request_raw(
        self: &Arc<Self>,
        method: &'static str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>> {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(id.clone(), Pending { method, tx });
        // From here on, dropping this future (caller gave up, timeout)
        // withdraws the request and tells the agent.
        let mut guard = PendingGuard {
            shared: self,
            id: &id,
            armed: true,
        };
        self.send_line(
            Outgoing::Request {
                id: &id,
                method,
                params: &params,
            }
            .encode(),
        )?;
        let received = match timeout {
            Some(t) => match tokio::time::timeout(t, rx).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(Error::Timeout {
                        method: method.to_owned(),
                        timeout: t,
                    })
                }
            },
            None => rx.await,
        };
        guard.armed = false;
        match received {
            Ok(result) => result,
            Err(_) => Err(self.close_error()),
        }
    }

    /// Fails every pending request, closes every prompt, and records why.
    pub(crate) fn close(&self, reason: CloseReason) {
        {
            let mut closed = lock(&self.closed);
            if closed.is_some() {
                return;
            }
            *closed = Some(reason.clone());
        }
        let pending: Vec<Pending> = lock(&self.pending).drain().map(|(_, p)| p).collect();
        for p in pending {
            let _ = p.tx.send(Err(reason.to_error()));
        }
        self.cancel_permissions(|_| true);
        self.cancel_elicitations(|_| true);
        let _ = self.closed_tx.send(true);
    }

    /// Answers matching pending permission prompts `cancelled`.
    pub(crate) fn cancel_permissions(&self, mut filter: impl FnMut(&SessionId) -> bool) {
        let cancelled: Vec<PendingPermission> = {
            let mut map = lock(&self.permissions_pending);
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
            let mut map = lock(&self.elicitations_pending);
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
        if !lock(&self.always_answered).remove(&key) || f.status != Some(ToolStatus::Failed) {
            return;
        }
        let mut text = String::new();
        for c in f.content.iter().flatten() {
            if let update::ToolContent::Content {
                content: update::Content::Known(crate::schema::ContentBlock::Text(t)),
            } = c
            {
                text.push_str(&t.text);
            }
        }
        if let Some(raw) = &f.raw_output {
            text.push_str(&raw.to_string());
        }
        if !text.contains("untrusted folder")
            || !lock(&self.always_refused).insert(session_id.clone())
        {
            return;
        }
        self.emit(ClientEvent::Session {
            session_id: session_id.clone(),
            change: crate::session::SessionChange::Notice {
                severity: "warning".into(),
                title: "The agent refused an \"always\" answer: it does not trust this folder".into(),
                description: Some(
                    "From now on this session offers the once options only. Trust the folder in the agent (gemini: /permissions) to use \"always\" again.".into(),
                ),
            },
        });
    }

    /// Applies a decoded update to its session and emits the changes.
    fn apply_update(&self, notification: update::SessionNotification) {
        let session_id = notification.session_id;
        self.check_always_refused(&session_id, &notification.update);
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
            let mut sessions = lock(&self.sessions);
            match sessions.get_mut(&session_id) {
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
                    sessions.insert(
                        session_id.clone(),
                        SessionSlot {
                            state,
                            workspace: Workspace::new(Vec::new()),
                            cwd: std::path::PathBuf::new(),
                        },
                    );
                    changes
                }
                None => {
                    drop(sessions);
                    if lock(&self.warned_sessions).insert(session_id.to_string()) {
                        self.warn(format!(
                            "the agent sent updates for unknown session `{session_id}`; they are ignored"
                        ));
                    }
                    return;
                }
            }
        };
        for change in changes {
            self.emit(ClientEvent::Session {
                session_id: session_id.clone(),
                change,
            });
        }
        if let Some(facts) = facts {
            self.review.on_tool_call(&session_id, facts);
        }
    }

    fn handle(self: &Arc<Self>, message: Incoming) {
        match message {
            Incoming::Response { id, result } => {
                let Some(p) = lock(&self.pending).remove(&id) else {
                    tracing::warn!("ignoring a response for unknown request id {id}");
                    return;
                };
                // Questions asked while serving this request are moot now.
                self.cancel_elicitations(|scope| {
                    matches!(scope, ElicitationScope::Request { request_id } if *request_id == id)
                });
                let result = result.map_err(|error| Error::Rpc {
                    method: p.method.to_owned(),
                    error: Box::new(error),
                });
                let _ = p.tx.send(result);
            }
            Incoming::Notification { method, params } => {
                self.handle_notification(&method, params.as_deref())
            }
            Incoming::Request { id, method, params } => self.spawn_handler(id, method, params),
        }
    }

    fn handle_notification(self: &Arc<Self>, method: &str, params: Option<&RawValue>) {
        match method {
            methods::SESSION_UPDATE => {
                let Some(params) = params else {
                    self.warn("the agent sent a `session/update` without params".into());
                    return;
                };
                match update::decode_session_notification(params) {
                    Ok(n) => self.apply_update(n),
                    Err(e) => self.warn(format!("ignoring a malformed `session/update`: {e}")),
                }
            }
            methods::CANCEL_REQUEST => {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct CancelParams {
                    request_id: RequestId,
                }
                let parsed = params.map(|p| serde_json::from_str::<CancelParams>(p.get()));
                match parsed {
                    Some(Ok(c)) => self.cancel_incoming(&c.request_id),
                    _ => self.warn("ignoring a malformed `$/cancel_request`".into()),
                }
            }
            methods::ELICITATION_COMPLETE => crate::elicitation::completed(self, params),
            // Unknown notifications are ignored, as the spec requires.
            other => tracing::debug!("ignoring notification `{other}`"),
        }
    }

    /// The agent withdrew one of its requests: stop serving it and answer
    /// `-32800` (unless the handler already replied).
    fn cancel_incoming(&self, id: &RequestId) {
        let handle = lock(&self.incoming).remove(id);
        if let Some(h) = handle {
            h.abort();
            self.reply(id, Err(RpcError::cancelled()));
        }
    }

    fn spawn_handler(
        self: &Arc<Self>,
        id: RequestId,
        method: String,
        params: Option<Box<RawValue>>,
    ) {
        let mut incoming = lock(&self.incoming);
        if incoming.contains_key(&id) {
            drop(incoming);
            self.warn(format!(
                "the agent reused request id {id} while the first request is still running"
            ));
            self.reply(
                &id,
                Err(RpcError::new(
                    crate::rpc::codes::INVALID_REQUEST,
                    format!("request id {id} is already in use"),
                )),
            );
            return;
        }
        let shared = self.clone();
        let task_id = id.clone();
        // Spawned while holding the lock, so the task's final `remove` cannot
        // run before its handle is registered.
        let task = tokio::spawn(async move {
            let result = crate::dispatch::handle_request(&shared, &method, params).await;
            let still_ours = lock(&shared.incoming).remove(&task_id).is_some();
            if still_ours {
                shared.reply(&task_id, result);
            }
        });
        incoming.insert(id, task.abort_handle());
    }

    pub(crate) fn agent_info(&self) -> Option<AgentInfo> {
        lock(&self.agent).clone()
    }
}

/// Withdraws a request whose future was dropped before the answer came.
struct PendingGuard<'a> {
    shared: &'a Shared,
    id: &'a RequestId,
    armed: bool,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let was_pending = lock(&self.shared.pending).remove(self.id).is_some();
        if was_pending && self.shared.close_reason().is_none() {
            let params = serde_json::json!({ "requestId": self.id });
            let _ = self.shared.notify(methods::CANCEL_REQUEST, &params);
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    mut closed: watch::Receiver<bool>,
) {
    let mut writer = tokio::io::BufWriter::new(writer);
    loop {
        let line = tokio::select! {
            line = rx.recv() => match line {
                Some(line) => line,
                None => break,
            },
            // Closing the connection closes the agent's stdin: the first step
            // of a graceful shutdown.
            _ = closed.wait_for(|c| *c) => break,
        };
        if let Err(e) = writer.write_all(&line).await {
            // The reader notices the agent is gone and closes the connection.
            tracing::warn!("writing to the agent failed: {e}");
            return;
        }
        if rx.is_empty() {
            if let Err(e) = writer.flush().await {
                tracing::warn!("writing to the agent failed: {e}");
                return;
            }
        }
    }
    let _ = writer.shutdown().await;
}

async fn read_loop<R: AsyncRead + Unpin>(shared: Arc<Shared>, mut reader: LineReader<R>) {
    let reason = loop {
        match reader.next_line().await {
            Ok(Some(line)) => {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                match Incoming::decode(line) {
                    Ok(message) => shared.handle(message),
                    Err(e) => {
                        let preview = String::from_utf8_lossy(&line[..line.len().min(200)]);
                        shared.warn(format!(
                            "ignoring a line from the agent that is not JSON-RPC ({e}): {preview}"
                        ));
                    }
                }
            }
            Ok(None) => break None,
            Err(Error::LineTooLong { limit }) => break Some(CloseReason::LineTooLong { limit }),
            Err(e) => break Some(CloseReason::Io(e.to_string())),
        }
    };
    let reason = match reason {
        Some(r) => {
            // The agent is unusable; do not leave it running.
            if let Some(p) = &shared.process {
                p.shutdown(shared.options.shutdown_grace).await;
            }
            r
        }
        None => match &shared.process {
            Some(p) => {
                // stdout closed: the agent is exiting. Give it a moment so the
                // error carries its real exit status; kill it if it lingers.
                let status =
                    match tokio::time::timeout(shared.options.shutdown_grace, p.exited()).await {
                        Ok(s) => s,
                        Err(_) => p.shutdown(shared.options.shutdown_grace).await,
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
    };
    let already_closed = shared.close_reason().is_some();
    shared.close(reason.clone());
    shared.terminals.release_all().await;
    if !already_closed {
        if let CloseReason::Exited {
            status,
            stderr_tail,
        } = reason
        {
            shared.emit(ClientEvent::AgentExited {
                status,
                stderr_tail,
            });
        }
    }
}
