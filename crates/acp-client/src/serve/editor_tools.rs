//! The editor's own MCP server, offered to every session as `editor`.
//!
//! Most agents users run (claude-agent-acp, codex-acp, opencode) read and
//! write the disk with their own tools and never call `fs/*`, so they never
//! see what the user typed and did not save; ACP v2 drops the client fs
//! methods altogether. This server gives them the editor's view instead:
//! `read_file`, `write_file` and `edit_file` run through the very functions
//! that serve `fs/read_text_file` and `fs/write_text_file` (the workspace
//! sandbox, the read limits, the buffer sync that merges into a modified
//! buffer, review of the agent's edit), and `diagnostics` / `open_buffers`
//! ask the editor ([`EditorHost::diagnostics`](crate::EditorHost::diagnostics),
//! [`EditorHost::open_buffers`](crate::EditorHost::open_buffers)).
//!
//! One server per connection, started with its first session. It speaks MCP
//! (JSON-RPC: `initialize`, `ping`, `tools/list`, `tools/call`) over two
//! transports:
//! - streamable HTTP on `127.0.0.1` (an ephemeral port), offered when the
//!   agent advertises `mcpCapabilities.http` (`http`);
//! - stdio through a bridge command ([`BridgeCommand`], e.g. the editor's
//!   own binary in a bridge mode running [`run_bridge`]) that connects to a
//!   unix socket in a private `0700` directory (`socket`).
//!
//! Every session gets its own random secret: an `Authorization: Bearer`
//! header over HTTP, the first line on the socket. The secret names the
//! session, so an agent reaches only its own session's workspace; a request
//! without a known secret is refused.

use std::collections::HashMap;
use std::io::{self, Read};
use std::net::SocketAddr;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::schema::{
    EnvVariable, HttpHeader, McpCapabilities, McpServer, McpServerHttp, McpServerStdio,
};
use crate::serve::dispatch;
use crate::serve::live::LiveSessions;
use crate::session::update::SessionId;

mod http;
mod mcp;
mod socket;

use mcp::{
    InitializeResult, McpReply, McpResult, ServerCapabilities, ServerInfo, ToolCallResult,
    ToolsCapability,
};

pub use crate::options::{BridgeCommand, EditorToolsOptions, DEFAULT_PROMPT};
pub use socket::run_bridge;

/// The name the server is offered under; the agent prefixes its tools with
/// it (Claude Code calls them `mcp__editor__read_file`...).
pub const SERVER_NAME: &str = "editor";
/// The bridge's environment variable holding the session's secret.
pub const TOKEN_ENV: &str = "ACP_EDITOR_TOOLS_TOKEN";
/// The bridge's environment variable holding the socket path.
pub const SOCKET_ENV: &str = "ACP_EDITOR_TOOLS_SOCKET";
/// The largest MCP message the server takes (an HTTP body, a socket line):
/// a `write_file` of a big file fits, a flood does not.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Connections served at once (both transports together); more are
/// refused at once (HTTP 503, the socket closed).
pub const MAX_CONNECTIONS: usize = 32;
/// The MCP protocol versions the server speaks, newest first.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A session's secret: 32 random bytes, hex.
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    fn random() -> io::Result<Self> {
        Ok(Self(random_hex(32)?))
    }
}

fn random_hex(bytes: usize) -> io::Result<String> {
    let mut raw = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut raw)?;
    Ok(raw.iter().map(|b| format!("{b:02x}")).collect())
}

/// Which session a secret serves.
#[derive(Debug, Clone)]
enum Binding {
    /// Offered in a `session/new` that has not been answered yet.
    Opening,
    Session(SessionId),
}

/// What the transports share: the secrets and the session layer.
#[derive(Debug)]
struct Shared {
    sessions: Weak<LiveSessions>,
    tokens: Mutex<HashMap<String, Binding>>,
    connections: Arc<Semaphore>,
}

/// The running server of one connection; stops when dropped.
#[derive(Debug)]
pub(crate) struct EditorTools {
    shared: Arc<Shared>,
    options: EditorToolsOptions,
    http: SocketAddr,
    /// The private directory of the socket, removed on drop.
    dir: PathBuf,
    socket: PathBuf,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for EditorTools {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
        let _ = std::fs::remove_file(&self.socket);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

impl EditorTools {
    /// Binds both transports and starts serving. Must run in a tokio runtime.
    pub(crate) fn start(
        sessions: Weak<LiveSessions>,
        options: EditorToolsOptions,
    ) -> io::Result<Self> {
        let shared = Arc::new(Shared {
            sessions,
            tokens: Mutex::new(HashMap::new()),
            connections: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
        });
        let tcp = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        tcp.set_nonblocking(true)?;
        let http = tcp.local_addr()?;
        let tcp = tokio::net::TcpListener::from_std(tcp)?;
        let dir = private_dir()?;
        let socket = dir.join("mcp.sock");
        let unix = match tokio::net::UnixListener::bind(&socket) {
            Ok(l) => l,
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(e);
            }
        };
        let tasks = vec![
            tokio::spawn(http::serve(tcp, shared.clone())),
            tokio::spawn(socket::serve(unix, shared.clone())),
        ];
        tracing::info!(%http, socket = %socket.display(), "editor MCP server listening");
        Ok(Self {
            shared,
            options,
            http,
            dir,
            socket,
            tasks,
        })
    }

    /// The sentence for the system prompt (may be empty).
    pub(crate) fn prompt(&self) -> &str {
        &self.options.prompt
    }

    /// A new secret and the server entry carrying it, for a session being
    /// opened; `None` when the agent takes neither transport we can offer.
    /// The secret is revoked when the offer is dropped unbound.
    pub(crate) fn offer(&self, caps: &McpCapabilities) -> Option<Offer<'_>> {
        let server = |token: &Token| -> Option<McpServer> {
            if caps.http {
                let url = format!("http://{}/mcp", self.http);
                return Some(McpServer::Http(
                    McpServerHttp::new(SERVER_NAME, url).headers(vec![HttpHeader::new(
                        "Authorization",
                        format!("Bearer {}", token.0),
                    )]),
                ));
            }
            let bridge = self.options.bridge.as_ref()?;
            Some(McpServer::Stdio(
                McpServerStdio::new(SERVER_NAME, bridge.program.clone())
                    .args(bridge.args.clone())
                    .env(vec![
                        EnvVariable::new(SOCKET_ENV, self.socket.to_string_lossy()),
                        EnvVariable::new(TOKEN_ENV, token.0.clone()),
                    ]),
            ))
        };
        let token = match Token::random() {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!("no randomness for the editor MCP server's secret: {e}");
                return None;
            }
        };
        let server = server(&token)?;
        self.shared
            .tokens
            .lock()
            .insert(token.0.clone(), Binding::Opening);
        Some(Offer {
            tools: self,
            token,
            server,
            bound: false,
        })
    }
}

/// The editor server offered to one session being opened.
#[derive(Debug)]
pub(crate) struct Offer<'a> {
    tools: &'a EditorTools,
    token: Token,
    server: McpServer,
    bound: bool,
}

impl Offer<'_> {
    /// The entry for `mcpServers`.
    pub(crate) fn server(&self) -> &McpServer {
        &self.server
    }

    /// The sentence for the system prompt (may be empty).
    pub(crate) fn prompt(&self) -> &str {
        self.tools.prompt()
    }

    /// The session opened: its secret now serves it, and the secrets of
    /// its earlier opens (a load or resume gives the agent a new one) stop.
    pub(crate) fn bind(mut self, session_id: &SessionId) {
        let mut tokens = self.tools.shared.tokens.lock();
        tokens.retain(|_, b| !matches!(b, Binding::Session(s) if s == session_id));
        tokens.insert(self.token.0.clone(), Binding::Session(session_id.clone()));
        self.bound = true;
    }
}

impl Drop for Offer<'_> {
    fn drop(&mut self) {
        if !self.bound {
            self.tools.shared.tokens.lock().remove(&self.token.0);
        }
    }
}

/// A fresh `0700` directory for the socket: under `$XDG_RUNTIME_DIR` (a
/// per-user tmpfs) when there is one, else the temp dir.
fn private_dir() -> io::Result<PathBuf> {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute() && p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!(
        "acp-editor-tools-{}-{}",
        std::process::id(),
        random_hex(6)?
    ));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

// ---------------------------------------------------------------------------
// MCP messages

fn rpc_error(id: Value, code: i64, message: impl Into<String>) -> McpReply {
    McpReply::error(id, code, message)
}

impl Shared {
    /// True when `token` is a live secret.
    fn knows(&self, token: &str) -> bool {
        self.tokens.lock().contains_key(token)
    }

    /// Answers one MCP message from the holder of `token`; `None` for
    /// notifications and responses, which get no answer.
    async fn handle(&self, token: &str, body: &[u8]) -> Option<McpReply> {
        let message: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => return Some(rpc_error(Value::Null, -32700, format!("parse error: {e}"))),
        };
        let Value::Object(map) = message else {
            return Some(rpc_error(
                Value::Null,
                -32600,
                "a message must be one JSON-RPC object (batches are not supported)",
            ));
        };
        let id = map.get("id").cloned();
        let Some(method) = map.get("method").and_then(Value::as_str) else {
            // A response: the server sends no requests, so it answers none.
            if map.contains_key("result") || map.contains_key("error") {
                return None;
            }
            return Some(rpc_error(
                id.unwrap_or(Value::Null),
                -32600,
                "the message has no `method`",
            ));
        };
        let Some(id) = id else {
            // `notifications/initialized`, `notifications/cancelled`...
            tracing::debug!("editor MCP notification `{method}`");
            return None;
        };
        let params = map.get("params").cloned().unwrap_or(Value::Null);
        let result = match method {
            "initialize" => Ok(McpResult::Initialize(initialize(&params))),
            "ping" => Ok(McpResult::Empty {}),
            "tools/list" => Ok(McpResult::Tools { tools: tool_list() }),
            "tools/call" => self.call(token, params).await,
            other => Err((-32601, format!("method `{other}` not found"))),
        };
        Some(match result {
            Ok(result) => McpReply::result(id, result),
            Err((code, message)) => rpc_error(id, code, message),
        })
    }

    async fn call(&self, token: &str, params: Value) -> Result<McpResult, (i64, String)> {
        #[derive(Deserialize)]
        struct Call {
            name: String,
            #[serde(default)]
            arguments: Value,
        }
        let call: Call = serde_json::from_value(params)
            .map_err(|e| (-32602, format!("`tools/call` params: {e}")))?;
        if !TOOL_NAMES.contains(&call.name.as_str()) {
            return Err((
                -32602,
                format!(
                    "unknown tool `{}`; the tools are {}",
                    call.name,
                    TOOL_NAMES.join(", ")
                ),
            ));
        }
        let (text, is_error) = match self.run(token, &call.name, call.arguments).await {
            Ok(text) => (text, false),
            Err(text) => (text, true),
        };
        Ok(McpResult::ToolCall(ToolCallResult::new(text, is_error)))
    }

    /// Runs one tool; `Err` is a tool error, shown to the model.
    async fn run(&self, token: &str, name: &str, args: Value) -> Result<String, String> {
        let binding = self.tokens.lock().get(token).cloned();
        let session_id = match binding {
            Some(Binding::Session(id)) => id,
            Some(Binding::Opening) => {
                return Err("the editor is still opening this session; call the tool again".into())
            }
            None => return Err("this session of the editor was closed or reopened".into()),
        };
        let sessions = self
            .sessions
            .upgrade()
            .ok_or("the editor closed the connection to this agent")?;
        let (workspace, cwd) = sessions.workspace(&session_id).map_err(|e| e.to_string())?;
        // Relative paths are taken against the session's cwd: models send
        // them to MCP tools even when asked for absolute ones.
        let absolute = |p: &Path| {
            if p.is_absolute() {
                p.to_owned()
            } else {
                cwd.join(p)
            }
        };
        let fail = |e: crate::Error| e.to_string();
        match name {
            "read_file" => {
                let a: ReadArgs = arguments(name, args)?;
                dispatch::read_file(&sessions, session_id, &absolute(&a.path), a.line, a.limit)
                    .await
                    .map_err(fail)
            }
            "write_file" => {
                let a: WriteArgs = arguments(name, args)?;
                let path = absolute(&a.path);
                let bytes = a.content.len();
                dispatch::write_file(&sessions, session_id, &path, a.content)
                    .await
                    .map_err(fail)?;
                Ok(format!("wrote {} ({bytes} bytes)", path.display()))
            }
            "edit_file" => {
                let a: EditArgs = arguments(name, args)?;
                let path = absolute(&a.path);
                let text = dispatch::read_file(&sessions, session_id.clone(), &path, None, None)
                    .await
                    .map_err(fail)?;
                let edited = edit(&text, &a.old_string, &a.new_string, &path)?;
                dispatch::write_file(&sessions, session_id, &path, edited)
                    .await
                    .map_err(fail)?;
                Ok(format!("edited {}", path.display()))
            }
            "diagnostics" => {
                let a: DiagnosticsArgs = arguments(name, args)?;
                let path = match a.path {
                    Some(p) => Some(workspace.resolve(&absolute(&p)).map_err(fail)?),
                    None => None,
                };
                let value = sessions
                    .host()
                    .diagnostics(&session_id, path.as_deref())
                    .await
                    .map_err(fail)?;
                Ok(value.to_string())
            }
            "open_buffers" => {
                let value = sessions
                    .host()
                    .open_buffers(&session_id)
                    .await
                    .map_err(fail)?;
                Ok(value.to_string())
            }
            other => Err(format!("unknown tool `{other}`")),
        }
    }
}

/// `old_string` replaced by `new_string` in `text`, where it occurs exactly
/// once; else a sentence that tells the model how to fix the call.
fn edit(text: &str, old: &str, new: &str, path: &Path) -> Result<String, String> {
    if old.is_empty() {
        return Err("`old_string` is empty; give the exact text to replace, or use write_file to write the whole file".into());
    }
    match text.matches(old).count() {
        1 => Ok(text.replacen(old, new, 1)),
        0 => Err(format!(
            "`old_string` was not found in {}; read the file again and copy the text exactly, whitespace included",
            path.display()
        )),
        n => Err(format!(
            "`old_string` occurs {n} times in {}; include more of the surrounding lines so it matches exactly once",
            path.display()
        )),
    }
}

fn arguments<T: serde::de::DeserializeOwned>(tool: &str, args: Value) -> Result<T, String> {
    let args = if args.is_null() {
        Value::Object(serde_json::Map::new())
    } else {
        args
    };
    serde_json::from_value(args).map_err(|e| format!("bad arguments for `{tool}`: {e}"))
}

#[derive(Deserialize)]
struct ReadArgs {
    path: PathBuf,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
struct WriteArgs {
    path: PathBuf,
    content: String,
}

#[derive(Deserialize)]
struct EditArgs {
    path: PathBuf,
    old_string: String,
    new_string: String,
}

#[derive(Deserialize)]
struct DiagnosticsArgs {
    #[serde(default)]
    path: Option<PathBuf>,
}

const TOOL_NAMES: &[&str] = &[
    "read_file",
    "write_file",
    "edit_file",
    "diagnostics",
    "open_buffers",
];

fn initialize(params: &Value) -> InitializeResult {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = PROTOCOL_VERSIONS
        .iter()
        .find(|v| asked == Some(**v))
        .unwrap_or(&PROTOCOL_VERSIONS[0]);
    InitializeResult {
        protocol_version: version,
        capabilities: ServerCapabilities {
            tools: ToolsCapability {
                list_changed: false,
            },
        },
        server_info: ServerInfo {
            name: "acp-editor",
            version: env!("CARGO_PKG_VERSION"),
        },
        instructions: DEFAULT_PROMPT,
    }
}

/// The tools, with their `inputSchema`s: JSON Schema documents, free-form
/// JSON by nature, so written as JSON.
fn tool_list() -> Value {
    let path = json!({ "type": "string", "description": "Absolute path of the file, or a path relative to the project root" });
    json!([
        {
            "name": "read_file",
            "description": "Read a text file as the user's editor has it: an open buffer's text with its unsaved changes, else the file on disk. Lines keep their line endings.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": path,
                    "line": { "type": "integer", "minimum": 1, "description": "1-based first line to read (default 1)" },
                    "limit": { "type": "integer", "minimum": 0, "description": "Number of lines to read (default: to the end)" }
                },
                "required": ["path"]
            },
            "annotations": { "title": "Read file (editor)", "readOnlyHint": true }
        },
        {
            "name": "write_file",
            "description": "Write the whole text of a file through the user's editor: an open buffer with unsaved changes gets the change merged in, keeping the user's typing; the edit is shown to the user for review.",
            "inputSchema": {
                "type": "object",
                "properties": { "path": path, "content": { "type": "string", "description": "The complete new text" } },
                "required": ["path", "content"]
            },
            "annotations": { "title": "Write file (editor)", "readOnlyHint": false, "destructiveHint": true, "idempotentHint": true }
        },
        {
            "name": "edit_file",
            "description": "Replace one exact occurrence of old_string with new_string in a file as the editor has it (unsaved changes included), merged into an open buffer and shown for review. old_string must match exactly once.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": path,
                    "old_string": { "type": "string", "description": "The exact text to replace; must occur exactly once" },
                    "new_string": { "type": "string", "description": "The text to put in its place" }
                },
                "required": ["path", "old_string", "new_string"]
            },
            "annotations": { "title": "Edit file (editor)", "readOnlyHint": false, "destructiveHint": false }
        },
        {
            "name": "diagnostics",
            "description": "The editor's diagnostics (language servers, linters): severity, range, message and source, for one file or every open one.",
            "inputSchema": {
                "type": "object",
                "properties": { "path": { "type": "string", "description": "Only this file (default: every open file)" } }
            },
            "annotations": { "title": "Diagnostics (editor)", "readOnlyHint": true }
        },
        {
            "name": "open_buffers",
            "description": "The files open in the user's editor, with their unsaved-changes flag, cursor position and the last visual selection.",
            "inputSchema": { "type": "object", "properties": {} },
            "annotations": { "title": "Open buffers (editor)", "readOnlyHint": true }
        }
    ])
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    #[test]
    fn edit_needs_exactly_one_match() {
        let p = Path::new("/p/a.txt");
        assert_eq!(edit("a b c", "b", "B", p).unwrap(), "a B c");
        let none = edit("a b c", "x", "y", p).unwrap_err();
        assert!(none.contains("was not found in /p/a.txt"), "{none}");
        let two = edit("b b", "b", "y", p).unwrap_err();
        assert!(two.contains("occurs 2 times"), "{two}");
        assert!(edit("abc", "", "y", p).unwrap_err().contains("empty"));
    }

    #[test]
    fn initialize_answers_a_known_version_or_the_newest() {
        let known = initialize(&json!({ "protocolVersion": "2025-03-26" }));
        assert_eq!(known.protocol_version, "2025-03-26");
        let unknown = initialize(&json!({ "protocolVersion": "1999-01-01" }));
        assert_eq!(unknown.protocol_version, PROTOCOL_VERSIONS[0]);
        assert!(!unknown.capabilities.tools.list_changed);
    }

    #[test]
    fn the_tools_are_named_as_documented() {
        let names: Vec<String> = tool_list()
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect();
        assert_eq!(names, TOOL_NAMES);
    }
}
