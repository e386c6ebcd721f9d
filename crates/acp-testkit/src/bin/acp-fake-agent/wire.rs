//! The ACP channel: framing of outgoing lines on stdout, and the table of
//! requests this agent sent to the client that still wait for a reply.

use std::collections::HashMap;
use std::io::{self, BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

use parking_lot::{Mutex, MutexGuard};

use serde_json::{json, Value};

/// JSON-RPC error codes this agent sends or checks.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const AUTH_REQUIRED: i64 = -32000;
    pub const NOT_FOUND: i64 = -32002;
}

/// A JSON-RPC error object, as sent or received.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// A `-32602` error.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// The error object as sent on the wire.
    pub fn to_json(&self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    /// Reads an error object from the wire, tolerating missing fields.
    pub fn from_json(error: &Value) -> Self {
        Self {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            data: error.get("data").cloned(),
        }
    }
}

/// The answer to one request: its `result` or its `error`.
pub type Reply = Result<Value, RpcError>;

/// The agent's stdout. Every message is one line; the lock is held for a
/// whole message (or a whole burst) so lines never interleave.
#[derive(Debug)]
pub struct Out {
    writer: Mutex<BufWriter<Stdout>>,
}

impl Default for Out {
    fn default() -> Self {
        Self::new()
    }
}

impl Out {
    /// Buffered stdout.
    pub fn new() -> Self {
        // A large buffer so a burst step turns into few big writes.
        Self {
            writer: Mutex::new(BufWriter::with_capacity(1 << 16, io::stdout())),
        }
    }

    /// Locks stdout for a sequence of writes; call [`OutLock::flush`] at the end.
    pub fn lock(&self) -> OutLock<'_> {
        OutLock {
            writer: self.writer.lock(),
        }
    }

    /// Writes one message and flushes.
    pub fn send(&self, message: &Value) {
        let mut out = self.lock();
        out.message(message);
        out.flush();
    }

    /// Writes raw bytes as they are and flushes.
    pub fn raw(&self, bytes: &[u8]) {
        let mut out = self.lock();
        out.bytes(bytes);
        out.flush();
    }

    /// Writes the answer to a request.
    pub fn respond(&self, id: &Value, reply: &Reply) {
        self.send(&response(id, reply));
    }

    /// Writes a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(&json!({ "jsonrpc": "2.0", "method": method, "params": params }));
    }
}

/// Exclusive access to stdout.
#[derive(Debug)]
pub struct OutLock<'a> {
    writer: MutexGuard<'a, BufWriter<Stdout>>,
}

impl OutLock<'_> {
    /// Writes one message as one line (not flushed).
    pub fn message(&mut self, message: &Value) {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.bytes(&line);
    }

    /// Writes raw bytes (not flushed).
    pub fn bytes(&mut self, bytes: &[u8]) {
        if let Err(err) = self.writer.write_all(bytes) {
            client_gone(&err);
        }
    }

    /// Flushes everything written so far.
    pub fn flush(&mut self) {
        if let Err(err) = self.writer.flush() {
            client_gone(&err);
        }
    }
}

/// The client closed our stdout: nobody is left to talk to, so leave the way
/// an agent does when its client goes away.
fn client_gone(err: &io::Error) -> ! {
    tracing::info!("stdout closed ({err}); exiting");
    std::process::exit(0)
}

/// The `session/update` notification carrying `update` for `session_id`.
pub fn update_notification(session_id: &str, update: Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": { "sessionId": session_id, "update": update },
    })
}

/// The `session/update` line of one streamed text chunk, rendered by
/// splicing the chunk's JSON-escaped text into a line prepared once per
/// step. Building a `Value` (a `preserve_order` map per object) and
/// formatting it for every chunk made this agent use more CPU than the
/// client it benchmarks (bench/fixes.md section 10); the bytes are the same
/// as [`Agent::notify_update`](crate::agent::Agent::notify_update) writes
/// for the same update (a test holds them equal).
#[derive(Debug)]
pub struct ChunkLine {
    /// Everything before the text: `{"jsonrpc":...,"text":`.
    head: Vec<u8>,
    /// Everything after it: the closing braces, the `messageId`, a newline.
    tail: Vec<u8>,
    line: Vec<u8>,
}

impl ChunkLine {
    /// The line of a `kind` chunk (`agent_message_chunk`, ...) in
    /// `session_id`, with a `messageId` when given.
    pub fn new(session_id: &str, kind: &str, message_id: Option<&str>) -> Self {
        let mut head =
            br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"#.to_vec();
        push_json_str(&mut head, session_id);
        head.extend_from_slice(br#","update":{"sessionUpdate":"#);
        push_json_str(&mut head, kind);
        head.extend_from_slice(br#","content":{"type":"text","text":"#);
        let mut tail = b"}".to_vec();
        if let Some(id) = message_id {
            tail.extend_from_slice(br#","messageId":"#);
            push_json_str(&mut tail, id);
        }
        tail.extend_from_slice(b"}}}\n");
        Self {
            head,
            tail,
            line: Vec::new(),
        }
    }

    /// The whole line (newline included) carrying `text`.
    pub fn render(&mut self, text: &str) -> &[u8] {
        self.line.clear();
        self.line.extend_from_slice(&self.head);
        push_json_str(&mut self.line, text);
        self.line.extend_from_slice(&self.tail);
        &self.line
    }
}

/// Appends `s` as a JSON string (quoted, escaped as serde_json escapes).
fn push_json_str(out: &mut Vec<u8>, s: &str) {
    // Writing a `str` into a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Builds a response message.
pub fn response(id: &Value, reply: &Reply) -> Value {
    match reply {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err(error) => json!({ "jsonrpc": "2.0", "id": id, "error": error.to_json() }),
    }
}

/// The requests this agent sent to the client and has no answer for yet.
#[derive(Debug, Default)]
pub struct Pending {
    next_id: AtomicU64,
    waiting: Mutex<HashMap<String, mpsc::Sender<Reply>>>,
}

impl Pending {
    /// Sends a request and returns its id and where its reply will arrive.
    /// The request is registered before it is written, so a fast reply is
    /// never lost.
    pub fn start(&self, out: &Out, method: &str, params: Value) -> (Value, mpsc::Receiver<Reply>) {
        let id = json!(self.next_id.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = mpsc::channel();
        self.table().insert(id.to_string(), tx);
        tracing::debug!(%id, method, "request to client");
        out.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
        (id, rx)
    }

    /// Sends a request and blocks until the client answers it.
    pub fn call(&self, out: &Out, method: &str, params: Value) -> Reply {
        let (_, rx) = self.start(out, method, params);
        wait(&rx)
    }

    /// Hands a reply from the client to whoever waits for it. Returns false
    /// when no request with that id is pending.
    pub fn deliver(&self, id: &Value, reply: Reply) -> bool {
        match self.table().remove(&id.to_string()) {
            Some(tx) => {
                // The waiter may have given up (its turn ended); nothing to do then.
                let _ = tx.send(reply);
                true
            }
            None => false,
        }
    }

    fn table(&self) -> MutexGuard<'_, HashMap<String, mpsc::Sender<Reply>>> {
        self.waiting.lock()
    }
}

/// Blocks for a reply; a dropped sender cannot happen while the process
/// lives, but is still answered with an error rather than a panic.
pub fn wait(rx: &mpsc::Receiver<Reply>) -> Reply {
    rx.recv().unwrap_or_else(|_| {
        Err(RpcError::new(
            codes::INTERNAL_ERROR,
            "the fake agent lost track of this request",
        ))
    })
}

/// One incoming line, classified.
#[derive(Debug, PartialEq)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    Response {
        id: Value,
        reply: Reply,
    },
    /// Valid JSON that is no JSON-RPC message; carries the id if it had one.
    Invalid {
        id: Option<Value>,
    },
}

/// Classifies a parsed message.
pub fn classify(message: Value) -> Incoming {
    let Value::Object(mut map) = message else {
        return Incoming::Invalid { id: None };
    };
    let id = map.remove("id");
    let method = map.remove("method");
    let params = map.remove("params").unwrap_or(Value::Null);
    match (id, method) {
        (Some(id), Some(Value::String(method))) => Incoming::Request { id, method, params },
        (None, Some(Value::String(method))) => Incoming::Notification { method, params },
        (Some(id), None) => {
            if let Some(error) = map.get("error") {
                Incoming::Response {
                    id,
                    reply: Err(RpcError::from_json(error)),
                }
            } else if let Some(result) = map.remove("result") {
                Incoming::Response {
                    id,
                    reply: Ok(result),
                }
            } else {
                Incoming::Invalid { id: Some(id) }
            }
        }
        (id, _) => Incoming::Invalid { id },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_each_kind_of_message() {
        assert_eq!(
            classify(json!({"jsonrpc":"2.0","id":"a","method":"m","params":{"x":1}})),
            Incoming::Request {
                id: json!("a"),
                method: "m".into(),
                params: json!({"x":1})
            }
        );
        assert_eq!(
            classify(json!({"jsonrpc":"2.0","method":"n"})),
            Incoming::Notification {
                method: "n".into(),
                params: Value::Null
            }
        );
        assert_eq!(
            classify(json!({"jsonrpc":"2.0","id":3,"result":null})),
            Incoming::Response {
                id: json!(3),
                reply: Ok(Value::Null)
            }
        );
        assert_eq!(
            classify(json!({"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"no"}})),
            Incoming::Response {
                id: json!(3),
                reply: Err(RpcError::new(-32601, "no"))
            }
        );
        assert_eq!(
            classify(json!({"hello":"world"})),
            Incoming::Invalid { id: None }
        );
        assert_eq!(classify(json!([1, 2])), Incoming::Invalid { id: None });
        assert_eq!(
            classify(json!({"id": 7, "method": 5})),
            Incoming::Invalid { id: Some(json!(7)) }
        );
    }

    #[test]
    fn a_chunk_line_is_the_line_of_the_same_update_as_a_value() {
        let texts = [
            "",
            "plain words\n",
            "quote \" backslash \\ tab \t return \r",
            "héllo ✓ 😀 \u{1} \u{1f} \u{7f}",
            "</script> {{not a placeholder}}",
        ];
        for message_id in [None, Some("msg \"1\"")] {
            let mut line = ChunkLine::new("sess-1 \\", "agent_thought_chunk", message_id);
            for text in texts {
                let mut update = json!({
                    "sessionUpdate": "agent_thought_chunk",
                    "content": { "type": "text", "text": text },
                });
                if let Some(id) = message_id {
                    update["messageId"] = json!(id);
                }
                let expected = format!("{}\n", update_notification("sess-1 \\", update));
                let rendered = line.render(text);
                assert_eq!(std::str::from_utf8(rendered).unwrap(), expected);
            }
        }
    }

    #[test]
    fn delivers_a_reply_once_and_only_to_its_request() {
        let pending = Pending::default();
        let (tx, rx) = mpsc::channel();
        pending.table().insert(json!(4).to_string(), tx);
        assert!(!pending.deliver(&json!(5), Ok(json!(1))));
        assert!(pending.deliver(&json!(4), Ok(json!(2))));
        assert!(!pending.deliver(&json!(4), Ok(json!(3))));
        assert_eq!(wait(&rx), Ok(json!(2)));
    }
}
