//! The tunables of a connection, shared by the connection and the session
//! layer below it.

use std::path::PathBuf;
use std::time::Duration;

use crate::rpc::codec::DEFAULT_MAX_LINE_BYTES;
use crate::tools::terminal::DEFAULT_OUTPUT_CAP;

/// The default of [`ConnectionOptions::denied_env`]: the variables with
/// which the Linux and macOS dynamic loaders load or redirect libraries.
pub const DENIED_ENV_DEFAULT: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "LD_*",
    "DYLD_*",
];

/// Whether `name` is in a deny-list of names and `PREFIX*` patterns.
pub fn env_denied(name: &str, denied: &[String]) -> bool {
    denied.iter().any(|d| match d.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == d,
    })
}

/// The ACP version a connection offers in `initialize`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProtocolVersion {
    /// ACP v1 only (the default until v2 is stable).
    #[default]
    V1,
    /// Offer v2 (Preview since 2026-11-20), with the v1 fields beside it:
    /// an agent answering 1 continues in v1.
    V2,
}

impl ProtocolVersion {
    /// The wire number.
    pub fn as_u16(self) -> u16 {
        match self {
            ProtocolVersion::V1 => 1,
            ProtocolVersion::V2 => 2,
        }
    }

    /// The version of a wire number this client speaks.
    pub fn from_u16(n: u16) -> Option<Self> {
        match n {
            1 => Some(ProtocolVersion::V1),
            2 => Some(ProtocolVersion::V2),
            _ => None,
        }
    }
}

/// Tunables of a connection. `Default` gives sensible values for editors.
#[derive(Debug, Clone)]
pub struct ConnectionOptions {
    /// Sent as `clientInfo` in `initialize`.
    pub client_name: String,
    /// Sent as `clientInfo.version` in `initialize`.
    pub client_version: String,
    /// A line from the agent longer than this fails the connection.
    pub max_line_bytes: usize,
    /// How long `initialize` may take (agents behind `npx` may download first).
    pub initialize_timeout: Option<Duration>,
    /// Timeout for every other request except `session/prompt`, which runs as
    /// long as the agent works.
    pub request_timeout: Option<Duration>,
    /// Messages queued for an agent that stopped reading before calls fail
    /// with [`Error::Backpressure`](crate::Error::Backpressure).
    pub outgoing_queue: usize,
    /// Bytes queued for an agent that stopped reading (replies it has not
    /// read) past which the client stops serving its requests: they are
    /// answered with a short error until the agent reads again, and the
    /// user is told. One reply larger than this still goes out alone.
    pub max_outgoing_bytes: usize,
    /// Grace period at each shutdown step (stdin closed, SIGTERM, SIGKILL).
    pub shutdown_grace: Duration,
    /// Upper bound for one whole-file `fs/read_text_file` from disk.
    pub max_read_bytes: usize,
    /// The most output one terminal keeps, whatever `outputByteLimit` the
    /// agent asks for (without one it keeps
    /// [`DEFAULT_OUTPUT_LIMIT`](crate::tools::terminal::DEFAULT_OUTPUT_LIMIT)).
    pub terminal_output_cap: usize,
    /// Tool kinds (`read`, `search`, `think`...) whose permission requests are
    /// allowed without asking. Empty by default: ask for everything.
    pub auto_allow_kinds: Vec<String>,
    /// Paths outside every session workspace that the editor's policy lets
    /// agents read and write anyway.
    pub allowed_paths: Vec<PathBuf>,
    /// Environment variables the user pinned for every `terminal/create`:
    /// applied after the agent's `env`, so an agent can neither change nor
    /// blank them (e.g. `PATH`, `GIT_SSH_COMMAND`, a proxy).
    pub pinned_env: Vec<(String, String)>,
    /// Ask the user before running each `terminal/create` (off by default:
    /// ACP has the agent ask, and agents do, before a shell call). With it
    /// on, the client raises its own permission prompt naming the command
    /// line; a rejected or dismissed prompt fails the request and nothing
    /// runs. Never remembered or auto-allowed.
    pub ask_before_terminal: bool,
    /// Environment variables an agent may not set, in `terminal/create` and
    /// in a terminal auth method's `env`: a name, or a prefix ending in `*`.
    /// By default the dynamic loader's ([`DENIED_ENV_DEFAULT`]): they load
    /// code into every program the command starts. A `terminal/create`
    /// naming one is refused (nothing runs); an auth method's entry is
    /// dropped with a warning. Empty allows everything.
    pub denied_env: Vec<String>,
    /// Advertise `clientCapabilities.auth.terminal`: the editor can run the
    /// agent's own command with a `terminal` auth method's args and env in
    /// an interactive terminal. Agents offer such methods only then.
    pub terminal_auth: bool,
    /// Answer `fs/read_text_file` of a missing file inside the session's
    /// workspace with empty content instead of the spec's `-32002`. Off by
    /// default. gemini-cli (0.61) reads a file before creating it and gives
    /// up when the read fails (its issue 9280), so without this it cannot
    /// create files through a spec-correct client.
    pub missing_file_read_empty: bool,
    /// Offer the editor's own MCP server (`editor`: read, write and edit
    /// files as the editor has them, diagnostics, open buffers) in every
    /// `session/new`, load and resume; see [`crate::serve::editor_tools`]. `None`
    /// (the default) offers nothing and starts no server.
    pub editor_tools: Option<EditorToolsOptions>,
    /// The newest ACP version to offer in `initialize` (v1 by default).
    pub protocol_version: ProtocolVersion,
}

impl Default for ConnectionOptions {
    fn default() -> Self {
        Self {
            client_name: "acp-client".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            initialize_timeout: Some(Duration::from_secs(60)),
            request_timeout: None,
            outgoing_queue: 4096,
            max_outgoing_bytes: 32 * 1024 * 1024,
            shutdown_grace: Duration::from_secs(2),
            max_read_bytes: 64 * 1024 * 1024,
            terminal_output_cap: DEFAULT_OUTPUT_CAP,
            auto_allow_kinds: Vec::new(),
            allowed_paths: Vec::new(),
            pinned_env: Vec::new(),
            ask_before_terminal: false,
            denied_env: DENIED_ENV_DEFAULT.iter().map(|s| (*s).to_owned()).collect(),
            terminal_auth: false,
            missing_file_read_empty: false,
            editor_tools: None,
            protocol_version: ProtocolVersion::V1,
        }
    }
}

/// The sentence appended to the client system prompt (where the agent takes
/// one) by default: without it Claude Code keeps using its own `Read` and
/// `Edit`, which see the disk only.
pub const DEFAULT_PROMPT: &str = "The `editor` MCP server's tools (read_file, write_file, edit_file, diagnostics, open_buffers) work on the user's editor: they see the unsaved changes in open buffers and merge your edits into them without losing the user's typing, so prefer them to your own file tools for reading and changing files in this project.";

/// How the editor's MCP server is offered (see the module docs).
#[derive(Debug, Clone)]
pub struct EditorToolsOptions {
    /// The command the agent runs to reach the server over stdio, when it
    /// does not take MCP over HTTP. Without one such agents get no server.
    pub bridge: Option<BridgeCommand>,
    /// Appended to the client system prompt when the agent takes one in
    /// `append` mode; empty sends nothing.
    pub prompt: String,
}

impl Default for EditorToolsOptions {
    fn default() -> Self {
        Self {
            bridge: None,
            prompt: DEFAULT_PROMPT.into(),
        }
    }
}

/// A program that runs `editor_tools::run_bridge`: `program args...`, started by the
/// agent with [`SOCKET_ENV`](crate::serve::editor_tools::SOCKET_ENV) and
/// [`TOKEN_ENV`](crate::serve::editor_tools::TOKEN_ENV) set.
#[derive(Debug, Clone)]
pub struct BridgeCommand {
    /// Absolute path of the program (ACP requires an absolute command).
    pub program: PathBuf,
    /// Its arguments (e.g. `["mcp-bridge"]`).
    pub args: Vec<String>,
}
