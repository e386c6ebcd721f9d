//! The crate's one error type, and the JSON-RPC error object (with its
//! codes) that an agent sends and that [`Error::to_rpc_error`] answers with,
//! and the JSON-RPC [`RequestId`] an agent's request carries (an elicitation
//! scoped to a request names it).

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Everything that can go wrong talking to an agent or serving its requests.
///
/// Messages are sentences meant for a user: they say what happened and, where
/// there is one, what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
// Fields are named for what they hold; each variant's doc says what it means.
#[allow(missing_docs)]
pub enum Error {
    /// The agent sent a line longer than the configured limit.
    #[error("the agent sent a message longer than the {limit}-byte limit; raise `max_line_bytes` in the connection options if the agent really sends messages that large")]
    LineTooLong { limit: usize },

    /// Reading from or writing to the agent's pipes failed.
    #[error("I/O error talking to the agent: {0}")]
    Io(#[from] std::io::Error),

    /// The agent command could not be started.
    #[error("could not start agent `{command}`: {reason}")]
    Spawn { command: String, reason: String },

    /// The agent process exited (or closed its stdout) while requests were pending.
    #[error("the agent exited ({status}){}", stderr_suffix(stderr_tail))]
    AgentExited {
        status: ExitInfo,
        stderr_tail: String,
    },

    /// The agent answered a request with a JSON-RPC error.
    #[error("the agent answered `{method}` with error {}: {}", error.code, error.message)]
    Rpc {
        method: String,
        error: Box<RpcError>,
    },

    /// No answer within the request's timeout.
    #[error("the agent did not answer `{method}` within {timeout:?}; check that the agent command is an ACP agent (some need an extra flag such as `--acp`)")]
    Timeout { method: String, timeout: Duration },

    /// The agent did not advertise the capability a method needs.
    #[error("the agent does not support `{method}`: it did not advertise it in `initialize`")]
    NotSupported { method: String },

    /// The agent answered `initialize` with a protocol version we cannot speak.
    #[error("the agent speaks ACP protocol version {agent}, this client speaks version {client}; update the agent or acp-client")]
    ProtocolVersion { agent: u16, client: u16 },

    /// A message from the agent did not have the expected shape.
    #[error("could not decode {what}: {reason}")]
    Decode { what: String, reason: String },

    /// The agent stopped reading its stdin and our outgoing queue is full
    /// (by count, or by bytes: see `ConnectionOptions::max_outgoing_bytes`).
    #[error("the agent is not reading its input ({queued} messages, {} MB queued); it is probably stuck: restart it", queued_bytes / (1024 * 1024))]
    Backpressure { queued: usize, queued_bytes: usize },

    /// The connection was shut down.
    #[error("the connection to the agent is closed; start a new one")]
    Closed,

    /// The request was cancelled.
    #[error("the request was cancelled")]
    Cancelled,

    /// An answer to an elicitation form does not fit the form's schema.
    #[error("the answer does not fit the form: {}; fix it and send it again", problems.join("; "))]
    InvalidForm { problems: Vec<String> },

    /// Method called before `initialize` succeeded.
    #[error("call `initialize` before `{method}`")]
    NotInitialized { method: String },

    /// A path parameter was not absolute.
    #[error("path `{}` is not absolute; ACP requires absolute paths", path.display())]
    RelativePath { path: PathBuf },

    /// A path lies outside every workspace root of the session.
    #[error("path `{}` is outside the workspace ({}); the agent may only touch files under the session's cwd and additional directories", path.display(), roots_list(roots))]
    OutsideWorkspace { path: PathBuf, roots: Vec<PathBuf> },

    /// A file's content is not UTF-8.
    #[error("`{}` is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf },

    /// Something the request names does not exist (session, terminal, file, line).
    #[error("{0}")]
    NotFound(String),

    /// The agent did not allow this on a subagent session (its
    /// `subagent_update` capabilities leave it out).
    #[error("the agent does not allow cancelling subagent `{session}`; cancel the parent session's turn instead")]
    SubagentCancelNotAllowed { session: String },

    /// A request's parameters were malformed.
    #[error("invalid parameters: {0}")]
    InvalidParams(String),

    /// The editor host failed to serve a request.
    #[error("{0}")]
    Host(String),

    /// A path names a directory, FIFO, device, socket or symbolic link where
    /// a regular file is needed.
    #[error("`{}` is a {what}, not a regular file; only regular text files can be read or written", path.display())]
    NotRegularFile { path: PathBuf, what: &'static str },

    /// A read would return more than the configured byte cap.
    #[error("reading `{}` would return more than {limit} bytes; read it in parts with `line` and `limit`", path.display())]
    FileTooLarge { path: PathBuf, limit: usize },

    /// Reading or writing a file in the workspace failed.
    #[error("could not {action} `{}`: {source}", path.display())]
    FileIo {
        path: PathBuf,
        action: &'static str,
        source: std::io::Error,
    },

    /// The saved permission memory could not be loaded or saved.
    #[error("permission memory `{}`: {reason}", path.display())]
    PermissionState { path: PathBuf, reason: String },

    /// The user refused (or dismissed) a prompt the client raised itself:
    /// a terminal command with `ask_before_terminal`, a write into `.git/`.
    #[error("{0}")]
    RefusedByUser(String),

    /// A `terminal/create` past the live-terminal or output-memory bounds
    /// (see `TerminalManager::create`); the sentence says what to release.
    #[error("{0}")]
    TerminalLimit(String),

    /// A `terminal/create` command could not be started.
    #[error("could not start terminal command `{command}`: {reason}; check that the program exists and that the terminal's cwd is a directory")]
    TerminalSpawn { command: String, reason: String },

    /// The workspace file index could not be started.
    #[error("could not index the files of `{}`: {reason}; `@` completion needs a readable directory", root.display())]
    FileIndex { root: PathBuf, reason: String },

    /// The agent registry could not be loaded, or an agent could not be
    /// installed or removed; the message is a whole sentence naming the fix.
    #[error("{0}")]
    Registry(String),

    /// A command run to install an agent (`npm install`, `pip install`...)
    /// failed.
    #[error(
        "installing {agent} failed: `{command}` {status}{}",
        output_suffix(output_tail)
    )]
    InstallCommand {
        agent: String,
        command: String,
        status: String,
        output_tail: String,
    },

    /// The user cancelled an installation; nothing of it was kept.
    #[error("the installation of {agent} was cancelled; nothing was installed")]
    InstallCancelled { agent: String },
}

fn stderr_suffix(tail: &str) -> String {
    let tail = tail.trim_end();
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its last stderr output was:\n{tail}")
    }
}

fn output_suffix(tail: &str) -> String {
    let tail = tail.trim_end();
    if tail.is_empty() {
        " (it printed nothing)".to_owned()
    } else {
        format!("; its last output was:\n{tail}")
    }
}

fn roots_list(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Error {
    /// The JSON-RPC error to send back when a handler fails with this error.
    pub fn to_rpc_error(&self) -> RpcError {
        let code = match self {
            Error::InvalidParams(_)
            | Error::InvalidForm { .. }
            | Error::RelativePath { .. }
            | Error::Decode { .. }
            | Error::NotRegularFile { .. }
            | Error::FileTooLarge { .. } => codes::INVALID_PARAMS,
            Error::OutsideWorkspace { .. } | Error::NotFound(_) => codes::RESOURCE_NOT_FOUND,
            Error::Cancelled => codes::REQUEST_CANCELLED,
            Error::Rpc { error, .. } => error.code,
            _ => codes::INTERNAL_ERROR,
        };
        RpcError::new(code, self.to_string())
    }

    /// True when the agent answered `-32000` (authentication required).
    pub fn is_auth_required(&self) -> bool {
        matches!(self, Error::Rpc { error, .. } if error.code == codes::AUTH_REQUIRED)
    }
}

/// Shorthand for results in this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExitInfo {
    /// The exit code, when the process exited normally.
    pub code: Option<i32>,
    /// The signal that killed the process, when it did not exit normally.
    pub signal: Option<i32>,
}

impl fmt::Display for ExitInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exit code {c}"),
            (None, Some(s)) => write!(f, "killed by signal {s}"),
            (None, None) => f.write_str("exit status unknown"),
        }
    }
}

impl ExitInfo {
    /// Used when the status could not be collected.
    pub(crate) const UNKNOWN: ExitInfo = ExitInfo {
        code: None,
        signal: None,
    };
}

/// A JSON-RPC request id: ACP allows numbers and strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id (the ids this client sends).
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

/// JSON-RPC error codes used by ACP.
pub mod codes {
    /// The message was not valid JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// The JSON was not a valid request.
    pub const INVALID_REQUEST: i32 = -32600;
    /// Unknown or unadvertised method.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Malformed parameters.
    pub const INVALID_PARAMS: i32 = -32602;
    /// The handler failed.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// The request was cancelled with `$/cancel_request`.
    pub const REQUEST_CANCELLED: i32 = -32800;
    /// The agent needs `authenticate` first.
    pub const AUTH_REQUIRED: i32 = -32000;
    /// A session, terminal or file does not exist or may not be used.
    pub const RESOURCE_NOT_FOUND: i32 = -32002;
}

/// The `error` member of a JSON-RPC response.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// One of [`codes`], or an agent-specific code.
    pub code: i32,
    /// A human-readable description.
    pub message: String,
    /// Extra data, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with no data.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// `-32601` for `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("method `{method}` is not supported by this client"),
        )
    }

    /// `-32602` with the reason.
    pub fn invalid_params(reason: impl fmt::Display) -> Self {
        Self::new(codes::INVALID_PARAMS, format!("invalid params: {reason}"))
    }

    /// `-32800`.
    pub fn cancelled() -> Self {
        Self::new(codes::REQUEST_CANCELLED, "request cancelled")
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}
