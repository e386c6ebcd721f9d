//! The JSON-RPC engine: one reader task, one writer task, the map of our
//! pending requests and the map of the peer's requests being served. It
//! knows nothing of ACP beyond `$/cancel_request`: what a request or a
//! notification means is for its [`Handler`] (the session layer, see
//! [`crate::serve::live`]).
//!
//! Wire order is call order: a request is queued for the writer before its
//! future is returned. Incoming requests run in their own tasks, so a handler
//! that waits for a human never blocks reading. Every incoming request gets
//! exactly one reply: whoever removes its id from the `incoming` map first
//! (the finished handler, or a `$/cancel_request`) sends it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::AbortHandle;

use crate::agents::process::ExitInfo;
use crate::error::{Error, Result};
use crate::rpc::codec::LineReader;
use crate::rpc::methods;
use crate::rpc::{codes, Incoming, Outgoing, RequestId, RpcError};

#[cfg(test)]
mod tests;

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

/// What the engine hands up: the peer's requests and notifications, and
/// the end of the input.
pub(crate) trait Handler: Send + Sync + 'static {
    /// Serves one request from the peer; what it returns is the one reply.
    /// Runs in its own task, aborted if the peer cancels the request.
    fn request(
        self: Arc<Self>,
        method: String,
        params: Option<Box<RawValue>>,
    ) -> impl Future<Output = Result<Value, RpcError>> + Send + 'static;

    /// The peer answered our request `id` (before the waiting caller sees
    /// the answer).
    fn answered(&self, _id: &RequestId) {}

    /// A notification from the peer (never `$/cancel_request`, which the
    /// engine serves). Runs on the reader task: it must not wait.
    fn notification(&self, method: &str, params: Option<&RawValue>);

    /// Offers a line before the engine decodes it: a handler that decodes
    /// a notification agents send in bulk in one pass, envelope and params
    /// together ([`crate::rpc::notification_params`]), takes and handles
    /// it here and returns true. Any other line it leaves (false) to
    /// [`Incoming::decode`] and the methods above. Runs on the reader task:
    /// it must not wait.
    fn take_line(&self, _line: &[u8]) -> bool {
        false
    }

    /// Something the peer sent that does not follow the protocol; the
    /// engine ignored it.
    fn warn(&self, message: String);

    /// The engine is closing, for any reason: called once, before waiting
    /// callers are failed.
    fn closing(&self, reason: &CloseReason);

    /// The input ended (`None`: end of stream) or failed: returns the
    /// reason the engine closes with (the session layer waits here for the
    /// agent's exit status).
    fn input_ended(
        self: Arc<Self>,
        failure: Option<CloseReason>,
    ) -> impl Future<Output = CloseReason> + Send;

    /// After the reader closed the engine; `first` is false when something
    /// else (a shutdown) had closed it before.
    fn closed(self: Arc<Self>, reason: CloseReason, first: bool)
        -> impl Future<Output = ()> + Send;
}

/// Sizes the engine works within.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// A longer line from the peer closes the engine.
    pub max_line_bytes: usize,
    /// Lines queued for a peer that stopped reading before sends fail.
    pub outgoing_queue: usize,
    /// Bytes queued for a peer that stopped reading past which its
    /// requests are no longer served (see [`Engine::reply`]).
    pub max_outgoing_bytes: usize,
}

struct Pending {
    method: &'static str,
    tx: oneshot::Sender<Result<Box<RawValue>>>,
}

/// One JSON-RPC connection over a pair of byte streams.
pub(crate) struct Engine<H> {
    handler: Arc<H>,
    outgoing: mpsc::Sender<Vec<u8>>,
    outgoing_queue: usize,
    /// Bytes handed to the writer and not yet written: the memory a peer
    /// that stops reading makes us hold. Counted here, not in the channel,
    /// because one reply can be 64 MB (a whole-file read).
    queued_bytes: Arc<AtomicUsize>,
    max_outgoing_bytes: usize,
    /// Set while the byte bound is exceeded, so the user is told once per
    /// episode, not once per refused request.
    saturated: AtomicBool,
    next_id: AtomicI64,
    pending: Mutex<HashMap<RequestId, Pending>>,
    incoming: Mutex<HashMap<RequestId, AbortHandle>>,
    closed: Mutex<Option<CloseReason>>,
    closed_tx: watch::Sender<bool>,
}

impl<H> std::fmt::Debug for Engine<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("closed", &*self.closed.lock())
            .field("pending", &self.pending.lock().len())
            .field("incoming", &self.incoming.lock().len())
            .finish_non_exhaustive()
    }
}

/// Something [`Tasks`] stops when dropped.
trait Stop: Send + Sync {
    fn stop(&self);
}

impl<H: Handler> Stop for Engine<H> {
    fn stop(&self) {
        self.close(CloseReason::Shutdown);
        for (_, h) in self.incoming.lock().drain() {
            h.abort();
        }
    }
}

/// The engine's long-lived tasks, stopped (and the engine closed) when this
/// is dropped: the connection holds it so that its last clone ends them.
#[derive(Default)]
pub(crate) struct Tasks {
    handles: Mutex<Vec<AbortHandle>>,
    engine: Option<Weak<dyn Stop>>,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("handles", &self.handles.lock().len())
            .finish_non_exhaustive()
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        // Stop everything that holds the handler, so it drops and with it
        // the agent process (its group is killed) and the terminals.
        if let Some(engine) = self.engine.as_ref().and_then(Weak::upgrade) {
            engine.stop();
        }
        for h in self.handles.lock().drain(..) {
            h.abort();
        }
    }
}

impl<H: Handler> Engine<H> {
    /// Starts the reader and writer tasks over `reader` and `writer`.
    pub(crate) fn start<R, W>(
        reader: R,
        writer: W,
        handler: Arc<H>,
        limits: Limits,
    ) -> (Arc<Self>, Tasks)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out_tx, out_rx) = mpsc::channel(limits.outgoing_queue.max(1));
        let (closed_tx, _) = watch::channel(false);
        let engine = Arc::new(Engine {
            handler,
            outgoing: out_tx,
            outgoing_queue: limits.outgoing_queue,
            queued_bytes: Arc::new(AtomicUsize::new(0)),
            max_outgoing_bytes: limits.max_outgoing_bytes,
            saturated: AtomicBool::new(false),
            next_id: AtomicI64::new(0),
            pending: Mutex::new(HashMap::new()),
            incoming: Mutex::new(HashMap::new()),
            closed: Mutex::new(None),
            closed_tx,
        });
        let w = tokio::spawn(write_loop(
            writer,
            out_rx,
            engine.closed_tx.subscribe(),
            engine.queued_bytes.clone(),
        ));
        let line_reader = LineReader::new(reader, limits.max_line_bytes);
        let r = tokio::spawn(read_loop(engine.clone(), line_reader));
        let weak: Weak<Engine<H>> = Arc::downgrade(&engine);
        let tasks = Tasks {
            handles: Mutex::new(vec![w.abort_handle(), r.abort_handle()]),
            engine: Some(weak),
        };
        (engine, tasks)
    }

    pub(crate) fn handler(&self) -> &Arc<H> {
        &self.handler
    }

    pub(crate) fn close_reason(&self) -> Option<CloseReason> {
        self.closed.lock().clone()
    }

    fn close_error(&self) -> Error {
        self.close_reason()
            .map(|r| r.to_error())
            .unwrap_or(Error::Closed)
    }

    /// Resolves once the engine is closed.
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
    /// means the peer stopped reading, and waiting would freeze the editor.
    fn send_line(&self, line: Vec<u8>) -> Result<()> {
        if let Some(r) = self.close_reason() {
            return Err(r.to_error());
        }
        if self.over_byte_bound() {
            return Err(self.backpressure());
        }
        self.queue_line(line)
    }

    /// Queues without looking at the byte bound (a short error reply).
    fn queue_line(&self, line: Vec<u8>) -> Result<()> {
        let len = line.len();
        self.queued_bytes.fetch_add(len, Ordering::Relaxed);
        self.outgoing.try_send(line).map_err(|e| {
            self.queued_bytes.fetch_sub(len, Ordering::Relaxed);
            match e {
                mpsc::error::TrySendError::Full(_) => self.backpressure(),
                mpsc::error::TrySendError::Closed(_) => self.close_error(),
            }
        })
    }

    fn backpressure(&self) -> Error {
        Error::Backpressure {
            queued: self.outgoing_queue - self.outgoing.capacity(),
            queued_bytes: self.queued_bytes.load(Ordering::Relaxed),
        }
    }

    /// Whether the peer has more unread bytes waiting than the bound. The
    /// first time (per episode) the handler is told, so the user learns
    /// why the agent's requests fail.
    fn over_byte_bound(&self) -> bool {
        let queued = self.queued_bytes.load(Ordering::Relaxed);
        let over = queued >= self.max_outgoing_bytes;
        if over != self.saturated.swap(over, Ordering::Relaxed) && over {
            self.handler.warn(format!(
                "the agent is not reading its input: {} MB of replies wait for it, so its requests are refused until it reads them (restart the agent if it stays stuck)",
                queued / (1024 * 1024)
            ));
        }
        over
    }

    pub(crate) fn notify(&self, method: &'static str, params: &Value) -> Result<()> {
        self.send_line(Outgoing::Notification { method, params }.encode())
    }

    /// Sends the one reply to the peer's request `id`. Past the byte bound
    /// a reply is replaced by a short error, so a peer that asks for 50 MB
    /// reads and never reads the answers (the issue 25 attack) costs at
    /// most the bound plus one reply, not every reply it asked for.
    fn reply(&self, id: &RequestId, result: Result<Value, RpcError>) {
        let line = if self.over_byte_bound() {
            drop(result);
            Outgoing::Response {
                id,
                result: Err(&self.unserved()),
            }
            .encode()
        } else {
            match &result {
                Ok(v) => Outgoing::Response { id, result: Ok(v) }.encode(),
                Err(e) => Outgoing::Response { id, result: Err(e) }.encode(),
            }
        };
        if let Err(e) = self.queue_line(line) {
            tracing::warn!("could not send the reply to request {id}: {e}");
        }
    }

    /// The error a request gets while the peer does not read its replies.
    fn unserved(&self) -> RpcError {
        RpcError::new(
            codes::INTERNAL_ERROR,
            format!(
                "not served: {} MB of earlier replies are waiting for you to read them",
                self.queued_bytes.load(Ordering::Relaxed) / (1024 * 1024)
            ),
        )
    }

    /// Sends a request and waits for its typed result.
    pub(crate) async fn request<T: DeserializeOwned>(
        &self,
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

    /// Sends a request and waits for its result, undecoded. Dropping the
    /// future (the caller gave up, or `timeout` passed) withdraws the
    /// request with `$/cancel_request`.
    pub(crate) async fn request_raw(
        &self,
        method: &'static str,
        params: Value,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>> {
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .insert(id.clone(), Pending { method, tx });
        let mut guard = PendingGuard {
            engine: self,
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

    /// Records why the engine closes (the first reason wins), tells the
    /// handler, and fails every pending request.
    pub(crate) fn close(&self, reason: CloseReason) {
        {
            let mut closed = self.closed.lock();
            if closed.is_some() {
                return;
            }
            *closed = Some(reason.clone());
        }
        self.handler.closing(&reason);
        let pending: Vec<Pending> = self.pending.lock().drain().map(|(_, p)| p).collect();
        for p in pending {
            let _ = p.tx.send(Err(reason.to_error()));
        }
        let _ = self.closed_tx.send(true);
    }

    fn handle(self: &Arc<Self>, message: Incoming) {
        match message {
            Incoming::Response { id, result } => {
                let Some(p) = self.pending.lock().remove(&id) else {
                    tracing::warn!("ignoring a response for unknown request id {id}");
                    return;
                };
                self.handler.answered(&id);
                let result = result.map_err(|error| Error::Rpc {
                    method: p.method.to_owned(),
                    error: Box::new(error),
                });
                let _ = p.tx.send(result);
            }
            Incoming::Notification { method, params } if method == methods::CANCEL_REQUEST => {
                #[derive(serde::Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct CancelParams {
                    request_id: RequestId,
                }
                let parsed = params.map(|p| serde_json::from_str::<CancelParams>(p.get()));
                match parsed {
                    Some(Ok(c)) => self.cancel_incoming(&c.request_id),
                    _ => self
                        .handler
                        .warn("ignoring a malformed `$/cancel_request`".into()),
                }
            }
            Incoming::Notification { method, params } => {
                self.handler.notification(&method, params.as_deref())
            }
            Incoming::Request { id, method, params } => self.spawn_handler(id, method, params),
        }
    }

    /// The peer withdrew one of its requests: stop serving it and answer
    /// `-32800` (unless the handler already replied).
    fn cancel_incoming(&self, id: &RequestId) {
        let handle = self.incoming.lock().remove(id);
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
        let mut incoming = self.incoming.lock();
        if incoming.contains_key(&id) {
            drop(incoming);
            self.handler.warn(format!(
                "the agent reused request id {id} while the first request is still running"
            ));
            self.reply(
                &id,
                Err(RpcError::new(
                    codes::INVALID_REQUEST,
                    format!("request id {id} is already in use"),
                )),
            );
            return;
        }
        if self.over_byte_bound() {
            drop(incoming);
            tracing::debug!(%id, method, "not served: the agent is not reading its replies");
            self.reply(&id, Err(self.unserved()));
            return;
        }
        let engine = self.clone();
        let task_id = id.clone();
        let served = self.handler.clone().request(method, params);
        // Spawned while holding the lock, so the task's final `remove` cannot
        // run before its handle is registered.
        let task = tokio::spawn(async move {
            let result = served.await;
            let still_ours = engine.incoming.lock().remove(&task_id).is_some();
            if still_ours {
                engine.reply(&task_id, result);
            }
        });
        incoming.insert(id, task.abort_handle());
    }
}

/// Withdraws a request whose future was dropped before the answer came.
struct PendingGuard<'a, H: Handler> {
    engine: &'a Engine<H>,
    id: &'a RequestId,
    armed: bool,
}

impl<H: Handler> Drop for PendingGuard<'_, H> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let was_pending = self.engine.pending.lock().remove(self.id).is_some();
        if was_pending && self.engine.close_reason().is_none() {
            let request_id = match self.id {
                RequestId::Number(n) => crate::schema::RequestId::Number(*n),
                RequestId::String(s) => crate::schema::RequestId::Str(s.clone()),
            };
            let cancel = crate::schema::CancelRequestNotification::new(request_id);
            if let Ok(params) = serde_json::to_value(&cancel) {
                let _ = self.engine.notify(methods::CANCEL_REQUEST, &params);
            }
        }
    }
}

async fn write_loop<W: AsyncWrite + Unpin>(
    writer: W,
    mut rx: mpsc::Receiver<Vec<u8>>,
    mut closed: watch::Receiver<bool>,
    queued_bytes: Arc<AtomicUsize>,
) {
    let mut writer = tokio::io::BufWriter::new(writer);
    loop {
        let line = tokio::select! {
            line = rx.recv() => match line {
                Some(line) => line,
                None => break,
            },
            // Closing the engine closes the peer's input: the first step of
            // a graceful shutdown.
            _ = closed.wait_for(|c| *c) => break,
        };
        let written = writer.write_all(&line).await;
        queued_bytes.fetch_sub(line.len(), Ordering::Relaxed);
        drop(line);
        if let Err(e) = written {
            // The reader notices the peer is gone and closes the engine.
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

async fn read_loop<R: AsyncRead + Unpin, H: Handler>(
    engine: Arc<Engine<H>>,
    mut reader: LineReader<R>,
) {
    let failure = loop {
        match reader.next_line().await {
            Ok(Some(line)) => {
                if line.iter().all(u8::is_ascii_whitespace) || engine.handler.take_line(line) {
                    continue;
                }
                match Incoming::decode(line) {
                    Ok(message) => engine.handle(message),
                    Err(e) => {
                        let preview = String::from_utf8_lossy(&line[..line.len().min(200)]);
                        engine.handler.warn(format!(
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
    let reason = engine.handler.clone().input_ended(failure).await;
    let first = engine.close_reason().is_none();
    engine.close(reason.clone());
    engine.handler.clone().closed(reason, first).await;
}
