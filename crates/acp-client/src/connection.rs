//! The typed, async connection to one agent.
//!
//! A [`Connection`] owns the agent process (when it spawned it), the JSON-RPC
//! engine (`engine`) and the session layer above it
//! (`sessions`), and turns each ACP method into a typed call. Methods
//! the agent did not advertise fail with [`Error::NotSupported`] without
//! sending anything. Edit review has its own handle, [`Connection::review`].

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};

use parking_lot::Mutex;

use crate::dispatch::elicitation_capabilities;
use crate::editor_tools::{EditorTools, Offer};
use crate::edits::fs::Workspace;
use crate::edits::host::EditorHost;
use crate::edits::review::Review;
use crate::engine::{CloseReason, Engine, Limits, Tasks};
use crate::error::{Error, Result};
use crate::methods;
use crate::permission::PermissionPolicy;
use crate::process::{AgentCommand, AgentProcess, ExitInfo};
use crate::schema;
use crate::session::{SessionChange, SessionState, TurnUsage};
use crate::sessions::{SessionSlot, Sessions};
use crate::update::{Content, SessionId};

pub use crate::options::{env_denied, ConnectionOptions, ProtocolVersion, DENIED_ENV_DEFAULT};

/// The ACP protocol version this client speaks by default (v2 is offered
/// with [`ConnectionOptions::protocol_version`]).
pub const PROTOCOL_VERSION: u16 = 1;

/// What the agent said about itself in `initialize`.
#[derive(Debug, Clone)]
pub struct AgentInfo {
    /// The protocol version the connection runs: 1, or 2 when v2 was offered
    /// and the agent answered 2. A v2 agent's `info` and `capabilities` are
    /// mapped onto the v1 fields below.
    pub protocol_version: u16,
    /// What the agent supports (load, list, resume, prompt content...).
    pub capabilities: schema::AgentCapabilities,
    /// How to log in, when the agent needs it.
    pub auth_methods: Vec<schema::AuthMethod>,
    /// The agent's name and version.
    pub implementation: Option<schema::Implementation>,
    /// Which client system prompt modes the agent takes
    /// (`sessionCapabilities.systemPrompt`, stable since 2026-11-06).
    pub system_prompt: SystemPromptSupport,
}

/// What `agentCapabilities.sessionCapabilities.systemPrompt` says.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SystemPromptSupport {
    /// Not advertised: a system prompt is not sent.
    #[default]
    None,
    /// `{}`: `append` only.
    Append,
    /// `{mode: {override: {}}}`: `append` and `override`.
    AppendAndOverride,
}

impl SystemPromptSupport {
    /// Reads `agentCapabilities.sessionCapabilities.systemPrompt` (a value
    /// that is not an object decodes as absent: unsupported).
    fn of_capabilities(caps: &schema::AgentCapabilities) -> Self {
        match &caps.session_capabilities.system_prompt {
            None => SystemPromptSupport::None,
            Some(sp) if sp.mode.as_ref().is_some_and(|m| m.override_.is_some()) => {
                SystemPromptSupport::AppendAndOverride
            }
            Some(_) => SystemPromptSupport::Append,
        }
    }

    fn allows(self, mode: SystemPromptMode) -> bool {
        !matches!(
            (self, mode),
            (SystemPromptSupport::None, _)
                | (SystemPromptSupport::Append, SystemPromptMode::Override)
        )
    }
}

/// How the agent combines the client's system prompt with its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SystemPromptMode {
    /// Added to the agent's own instructions.
    #[default]
    Append,
    /// Replaces the agent's built-in default instructions.
    Override,
}

impl SystemPromptMode {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            SystemPromptMode::Append => "append",
            SystemPromptMode::Override => "override",
        }
    }
}

/// A client system prompt for `session/new`, `load` and `resume`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SystemPrompt {
    /// How it combines with the agent's instructions.
    pub mode: SystemPromptMode,
    /// The instructions (non-empty: an empty prompt is not sent).
    pub text: String,
}

/// Why a turn ended. Unknown reasons keep their wire name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StopReason {
    /// The agent finished its answer.
    EndTurn,
    /// The model's token limit was reached.
    MaxTokens,
    /// The agent's limit of model requests per turn was reached.
    MaxTurnRequests,
    /// The agent refused to continue.
    Refusal,
    /// The turn was cancelled.
    Cancelled,
    /// A stop reason this client does not know, by its wire name.
    Unknown(String),
}

impl StopReason {
    /// Parses the wire name; never fails.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "end_turn" => StopReason::EndTurn,
            "max_tokens" => StopReason::MaxTokens,
            "max_turn_requests" => StopReason::MaxTurnRequests,
            "refusal" => StopReason::Refusal,
            "cancelled" => StopReason::Cancelled,
            other => StopReason::Unknown(other.to_owned()),
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::MaxTokens => "max_tokens",
            StopReason::MaxTurnRequests => "max_turn_requests",
            StopReason::Refusal => "refusal",
            StopReason::Cancelled => "cancelled",
            StopReason::Unknown(s) => s,
        }
    }
}

impl Serialize for StopReason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// Where and with what a session works.
#[derive(Debug, Clone, Default)]
pub struct SessionParams {
    /// Absolute working directory; also the root of the fs/terminal sandbox.
    pub cwd: PathBuf,
    /// More directories the agent may work in (sent only when the agent
    /// advertises `sessionCapabilities.additionalDirectories`; always part of
    /// the sandbox).
    pub additional_directories: Vec<PathBuf>,
    /// MCP servers for the agent to connect to.
    pub mcp_servers: Vec<schema::McpServer>,
    /// Instructions for the agent's system prompt, sent only when the agent
    /// advertises the mode (see [`SessionStarted::system_prompt_skipped`]).
    pub system_prompt: Option<SystemPrompt>,
}

impl SessionParams {
    /// A session rooted at `cwd`.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            ..Self::default()
        }
    }
}

/// A session that was created, loaded or resumed.
#[derive(Debug, Clone)]
pub struct SessionStarted {
    /// The session's id.
    pub session_id: SessionId,
    /// The modes the agent offers and the current one.
    pub modes: Option<schema::SessionModeState>,
    /// The session's configuration options (model, ...).
    pub config_options: Vec<schema::SessionConfigOption>,
    /// Why the configured system prompt was not sent (the agent does not
    /// advertise it, or not in that mode), as a sentence for the user.
    pub system_prompt_skipped: Option<String>,
}

/// One page of `session/list`.
#[derive(Debug, Clone)]
pub struct SessionPage {
    /// The sessions on this page.
    pub sessions: Vec<schema::SessionInfo>,
    /// The cursor of the next page, if any.
    pub next_cursor: Option<String>,
}

/// A value for `session/set_config_option`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigValue {
    /// One of a select option's value ids.
    Id(String),
    /// A boolean option's value.
    Bool(bool),
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSessionResponse {
    #[serde(default)]
    session_id: Option<SessionId>,
    #[serde(default)]
    modes: Option<schema::SessionModeState>,
    #[serde(default)]
    config_options: Option<Vec<schema::SessionConfigOption>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePromptResponse {
    stop_reason: String,
    /// Unstable in the schema (`PromptResponse.usage`); decoded leniently.
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireConfigResponse {
    #[serde(default)]
    config_options: Vec<schema::SessionConfigOption>,
}

/// Decrements the "session opening" counter however the open ends.
struct OpeningGuard<'a>(&'a Sessions);

impl Drop for OpeningGuard<'_> {
    fn drop(&mut self) {
        self.0.sessions_opening.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A turn's label for its checkpoint: the first non-empty line of the
/// prompt's first text block.
fn prompt_label(content: &[schema::ContentBlock]) -> String {
    content
        .iter()
        .find_map(|block| match block {
            schema::ContentBlock::Text(t) => t
                .text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_owned),
            _ => None,
        })
        .unwrap_or_default()
}

/// Ends a turn for edit review however the prompt ends (answered, failed,
/// or the caller dropped the future).
struct TurnGuard<'a> {
    sessions: &'a Sessions,
    session_id: &'a SessionId,
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.sessions.review.turn_ended(self.session_id);
    }
}

/// A v2 turn waiting for its idle `state_update`; forgets its waiter
/// however the prompt ends.
struct V2Turn<'a> {
    sessions: &'a Sessions,
    session_id: &'a SessionId,
    rx: tokio::sync::oneshot::Receiver<crate::sessions::TurnEnd>,
}

impl Drop for V2Turn<'_> {
    fn drop(&mut self) {
        self.rx.close();
        let mut turns = self.sessions.turns.lock();
        if let Some(waiters) = turns.get_mut(self.session_id) {
            waiters.retain(|tx| !tx.is_closed());
            if waiters.is_empty() {
                turns.remove(self.session_id);
            }
        }
    }
}

/// A connection to one agent. Cheap to clone; the agent is shut down (its
/// whole process group killed) when the last clone is dropped.
#[derive(Clone, Debug)]
pub struct Connection {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    // Dropped first: the last clone stops the engine's tasks and the agent.
    _tasks: Tasks,
    engine: Arc<Engine<Sessions>>,
    agent: Mutex<Option<AgentInfo>>,
    /// The editor's MCP server, started with the first session that is
    /// offered it (`None` inside: it could not start).
    editor_tools: OnceLock<Option<EditorTools>>,
}

impl Connection {
    /// Spawns the agent and starts talking to it. Call
    /// [`Connection::initialize`] next. Must run inside a tokio runtime.
    pub fn spawn(
        command: &AgentCommand,
        host: Arc<dyn EditorHost>,
        options: ConnectionOptions,
    ) -> Result<Self> {
        let (process, stdin, stdout) = AgentProcess::spawn(command)?;
        Ok(Self::start(
            stdout,
            stdin,
            host,
            options,
            Some(Arc::new(process)),
        ))
    }

    /// Talks ACP over existing streams (in-memory pipes in tests, a socket...).
    /// Must run inside a tokio runtime.
    pub fn from_streams<R, W>(
        reader: R,
        writer: W,
        host: Arc<dyn EditorHost>,
        options: ConnectionOptions,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::start(reader, writer, host, options, None)
    }

    fn start<R, W>(
        reader: R,
        writer: W,
        host: Arc<dyn EditorHost>,
        options: ConnectionOptions,
        process: Option<Arc<AgentProcess>>,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let limits = Limits {
            max_line_bytes: options.max_line_bytes,
            outgoing_queue: options.outgoing_queue,
            max_outgoing_bytes: options.max_outgoing_bytes,
        };
        let sessions = Arc::new(Sessions::new(host, options, process));
        let (engine, tasks) = Engine::start(reader, writer, sessions, limits);
        Self {
            inner: Arc::new(Inner {
                _tasks: tasks,
                engine,
                agent: Mutex::new(None),
                editor_tools: OnceLock::new(),
            }),
        }
    }

    fn engine(&self) -> &Engine<Sessions> {
        &self.inner.engine
    }

    fn sessions(&self) -> &Sessions {
        self.inner.engine.handler()
    }

    fn timeout(&self) -> Option<Duration> {
        self.sessions().options.request_timeout
    }

    fn info_or_err(&self, method: &str) -> Result<AgentInfo> {
        self.agent_info().ok_or_else(|| Error::NotInitialized {
            method: method.to_owned(),
        })
    }

    fn require(
        &self,
        method: &'static str,
        supported: impl FnOnce(&AgentInfo) -> bool,
    ) -> Result<()> {
        let info = self.info_or_err(method)?;
        if supported(&info) {
            Ok(())
        } else {
            Err(Error::NotSupported {
                method: method.to_owned(),
            })
        }
    }

    /// `initialize`: offers the version of
    /// [`ConnectionOptions::protocol_version`] and the capabilities the
    /// editor host implements. Offering v2 sends the v2 `info` and
    /// `capabilities` and the v1 `clientInfo` and `clientCapabilities`
    /// beside them, so an agent that answers 1 still has the client's fs and
    /// terminal. An agent answering a version that was not offered is an
    /// error.
    pub async fn initialize(&self) -> Result<AgentInfo> {
        let offered = self.sessions().options.protocol_version;
        let mut params = self.initialize_v1_params();
        if offered == ProtocolVersion::V2 {
            params["protocolVersion"] = json!(2);
            params["info"] = params["clientInfo"].clone();
            params["capabilities"] = self.client_capabilities_v2();
        }
        let raw: Value = self
            .engine()
            .request(
                methods::INITIALIZE,
                params,
                self.sessions().options.initialize_timeout,
            )
            .await?;
        let answered = raw
            .get("protocolVersion")
            .and_then(Value::as_u64)
            .and_then(|n| u16::try_from(n).ok());
        let info = match answered.and_then(ProtocolVersion::from_u16) {
            Some(ProtocolVersion::V2) if offered == ProtocolVersion::V2 => {
                self.agent_info_v2(&raw)?
            }
            Some(ProtocolVersion::V2) => {
                return Err(Error::ProtocolVersion {
                    agent: 2,
                    client: offered.as_u16(),
                })
            }
            _ => self.agent_info_v1(&raw)?,
        };
        self.sessions()
            .v2
            .store(info.protocol_version == 2, Ordering::Release);
        *self.inner.agent.lock() = Some(info.clone());
        Ok(info)
    }

    /// The v2 client capabilities: no fs or terminal (v2 has neither; the
    /// editor's tools reach the agent as an MCP server instead).
    fn client_capabilities_v2(&self) -> Value {
        let caps = self.sessions().host.capabilities();
        json!({
            "auth": { "terminal": self.sessions().options.terminal_auth },
            "elicitation": elicitation_capabilities(&caps),
        })
    }

    /// The v2 answer to `initialize` as an [`AgentInfo`]: `info` and
    /// `capabilities.session` mapped onto their v1 places. A v2 agent's
    /// baseline session methods (`{}`) include list, resume and close, and
    /// load is a resume with a replay.
    fn agent_info_v2(&self, raw: &Value) -> Result<AgentInfo> {
        let decode_error = |e: serde_json::Error| Error::Decode {
            what: "the agent's v2 answer to `initialize`".into(),
            reason: e.to_string(),
        };
        let response = agent_client_protocol_schema::v2::InitializeResponse::deserialize(raw)
            .map_err(decode_error)?;
        let session = serde_json::to_value(&response.capabilities.session).map_err(decode_error)?;
        let mut v1 = json!({ "loadSession": false });
        if let Value::Object(session) = &session {
            let mut session_caps = json!({ "list": {}, "resume": {}, "close": {} });
            for key in ["systemPrompt", "additionalDirectories", "delete"] {
                if let Some(v) = session.get(key).filter(|v| !v.is_null()) {
                    session_caps[key] = v.clone();
                }
            }
            v1["loadSession"] = json!(true);
            v1["sessionCapabilities"] = session_caps;
            if let Some(prompt) = session.get("prompt").filter(|v| v.is_object()) {
                v1["promptCapabilities"] = prompt.clone();
            }
            // v2: agents with auth methods serve `auth/logout` too.
            if !response.auth_methods.is_empty() {
                v1["auth"] = json!({ "logout": {} });
            }
            if let Some(Value::Object(mcp)) = session.get("mcp") {
                // v2 marks a transport with an object (`http: {}`), v1 with
                // a boolean: the editor's MCP server is offered over http
                // only where the agent marks it (claude-agent-acp 0.101.0
                // sends `{stdio: {}, http: {}}`).
                let mut caps = serde_json::Map::new();
                for (transport, marker) in mcp {
                    if transport != "_meta" {
                        caps.insert(transport.clone(), json!(!marker.is_null()));
                    }
                }
                v1["mcpCapabilities"] = Value::Object(caps);
            }
        }
        let capabilities = schema::AgentCapabilities::deserialize(&v1).map_err(decode_error)?;
        let implementation = serde_json::to_value(&response.info)
            .and_then(schema::Implementation::deserialize)
            .ok();
        let auth_methods = response
            .auth_methods
            .iter()
            .filter_map(|m| {
                serde_json::to_value(m)
                    .map(crate::update::v2::auth_method_to_v1)
                    .and_then(schema::AuthMethod::deserialize)
                    .ok()
            })
            .map(|m| self.without_denied_env(m))
            .collect();
        Ok(AgentInfo {
            protocol_version: 2,
            system_prompt: SystemPromptSupport::of_capabilities(&capabilities),
            capabilities,
            auth_methods,
            implementation,
        })
    }

    /// The v1 answer to `initialize` as an [`AgentInfo`].
    fn agent_info_v1(&self, raw: &Value) -> Result<AgentInfo> {
        let response = schema::InitializeResponse::deserialize(raw).map_err(|e| Error::Decode {
            what: "the agent's answer to `initialize`".into(),
            reason: e.to_string(),
        })?;
        let version = response.protocol_version.as_u16();
        if version != PROTOCOL_VERSION {
            return Err(Error::ProtocolVersion {
                agent: version,
                client: self.sessions().options.protocol_version.as_u16(),
            });
        }
        let system_prompt = SystemPromptSupport::of_capabilities(&response.agent_capabilities);
        Ok(AgentInfo {
            protocol_version: version,
            capabilities: response.agent_capabilities,
            auth_methods: response
                .auth_methods
                .into_iter()
                .map(legacy_terminal_auth)
                .map(|m| self.without_denied_env(m))
                .collect(),
            implementation: response.agent_info,
            system_prompt,
        })
    }

    /// The v1 `initialize` params (also sent beside the v2 ones).
    fn initialize_v1_params(&self) -> Value {
        let caps = self.sessions().host.capabilities();
        json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {
                "fs": {
                    "readTextFile": caps.read_text_file,
                    "writeTextFile": caps.write_text_file,
                },
                "terminal": caps.terminal,
                "auth": { "terminal": self.sessions().options.terminal_auth },
                "elicitation": elicitation_capabilities(&caps),
                // Boolean config options are decoded, shown and set
                // (`set_config_option` with `ConfigValue::Bool`); agents
                // hide them from clients that do not say so. Notices and
                // compactions are decoded into `SessionChange`s.
                "session": {
                    "configOptions": { "boolean": {} },
                    "notices": {},
                    "compaction": {},
                    // `cursor_update`s are kept per session: a rewind forks
                    // at the one before the turn (`fork_session`).
                    "cursors": {},
                },
                // `plan_update`/`plan_removed` and subagent sessions are
                // decoded into `SessionChange`s (stable 2026-11-20).
                "plan": {},
                "subagents": {},
                // codex-acp 2.6.0 streams the output of the commands it runs
                // itself as `_meta.terminal_output_delta` to clients that
                // say so (and as a single blob otherwise).
                "_meta": { "terminal_output_delta": true },
            },
            "clientInfo": {
                "name": self.sessions().options.client_name,
                "version": self.sessions().options.client_version,
            },
        })
    }

    /// A request whose answer carries `configOptions`: on v2 they are
    /// brought to their v1 shape before the answer is decoded.
    async fn session_request<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<T> {
        let mut answer: Value = self
            .engine()
            .request(method, params, self.timeout())
            .await?;
        if self.is_v2() {
            crate::update::v2::config_options_to_v1(&mut answer);
        }
        T::deserialize(&answer).map_err(|e| Error::Decode {
            what: format!("the agent's answer to `{method}`"),
            reason: e.to_string(),
        })
    }

    fn is_v2(&self) -> bool {
        self.sessions().v2.load(Ordering::Acquire)
    }

    /// Drops the entries of a terminal auth method's `env` that
    /// `ConnectionOptions::denied_env` names (`LD_PRELOAD` in a login
    /// command would load the agent's code into it), and says so.
    fn without_denied_env(&self, method: schema::AuthMethod) -> schema::AuthMethod {
        let schema::AuthMethod::Terminal(mut terminal) = method else {
            return method;
        };
        let sessions = self.sessions();
        let denied = &sessions.options.denied_env;
        let before = terminal.env.len();
        terminal
            .env
            .retain(|name, _| !crate::options::env_denied(name, denied));
        if terminal.env.len() != before {
            sessions.warn(format!(
                "the agent's login method `{}` sets loader variables (such as LD_PRELOAD); they were dropped",
                terminal.name
            ));
        }
        schema::AuthMethod::Terminal(terminal)
    }

    /// What the agent answered to `initialize`, once it did.
    pub fn agent_info(&self) -> Option<AgentInfo> {
        self.inner.agent.lock().clone()
    }

    /// `authenticate` with one of the agent's `authMethods`.
    pub async fn authenticate(&self, method_id: &str) -> Result<()> {
        self.require(methods::AUTHENTICATE, |i| {
            i.auth_methods
                .iter()
                .any(|m| m.id().0.as_ref() == method_id)
        })?;
        let method = match self.is_v2() {
            true => methods::AUTH_LOGIN,
            false => methods::AUTHENTICATE,
        };
        let _: Value = self
            .engine()
            .request(
                method,
                to_params(&schema::AuthenticateRequest::new(method_id.to_owned()))?,
                self.timeout(),
            )
            .await?;
        Ok(())
    }

    /// `logout`, when the agent advertises `auth.logout`.
    pub async fn logout(&self) -> Result<()> {
        self.require(methods::LOGOUT, |i| i.capabilities.auth.logout.is_some())?;
        let method = match self.is_v2() {
            true => methods::AUTH_LOGOUT,
            false => methods::LOGOUT,
        };
        let _: Value = self
            .engine()
            .request(
                method,
                to_params(&schema::LogoutRequest::new())?,
                self.timeout(),
            )
            .await?;
        Ok(())
    }

    /// The editor's MCP server of this connection, started on first use;
    /// `None` when the options switch it off or it could not start.
    fn editor_tools(&self) -> Option<&EditorTools> {
        let options = self.sessions().options.editor_tools.as_ref()?;
        self.inner
            .editor_tools
            .get_or_init(|| {
                let sessions = Arc::downgrade(self.inner.engine.handler());
                match EditorTools::start(sessions, options.clone()) {
                    Ok(tools) => Some(tools),
                    Err(e) => {
                        self.sessions().warn(format!(
                            "the editor's MCP server could not start ({e}), so agents of this connection get no editor tools; check that the temp directory is writable"
                        ));
                        None
                    }
                }
            })
            .as_ref()
    }

    /// The editor's MCP server for a session being opened: when it is on,
    /// the agent takes one of its transports (`http` if it advertises it,
    /// else stdio through the bridge), and the user configured no server
    /// of the same name.
    fn editor_offer(&self, params: &SessionParams) -> Option<Offer<'_>> {
        let caps = self.agent_info()?.capabilities.mcp_capabilities;
        let taken = params.mcp_servers.iter().any(|s| {
            let name = match s {
                schema::McpServer::Http(h) => &h.name,
                schema::McpServer::Sse(h) => &h.name,
                schema::McpServer::Stdio(h) => &h.name,
                #[allow(unreachable_patterns)]
                _ => return false,
            };
            name == crate::editor_tools::SERVER_NAME
        });
        if taken {
            return None;
        }
        self.editor_tools()?.offer(&caps)
    }

    /// The `mcpServers` of a `session/new`, load or resume: the editor's
    /// own server (when offered), then the configured ones. The one place
    /// that decides the list.
    fn mcp_servers(params: &SessionParams, offer: Option<&Offer<'_>>) -> Vec<schema::McpServer> {
        offer
            .map(|o| o.server().clone())
            .into_iter()
            .chain(params.mcp_servers.iter().cloned())
            .collect()
    }

    /// The system prompt sent: the configured one, with the editor
    /// server's sentence appended when the server is offered.
    fn system_prompt(params: &SessionParams, offer: Option<&Offer<'_>>) -> Option<SystemPrompt> {
        let configured = params
            .system_prompt
            .as_ref()
            .filter(|sp| !sp.text.is_empty());
        let sentence = offer.map(Offer::prompt).filter(|s| !s.is_empty());
        match (configured, sentence) {
            (Some(sp), Some(sentence)) => Some(SystemPrompt {
                mode: sp.mode,
                text: format!("{}\n\n{sentence}", sp.text),
            }),
            (Some(sp), None) => Some(sp.clone()),
            (None, Some(sentence)) => Some(SystemPrompt {
                mode: SystemPromptMode::Append,
                text: sentence.to_owned(),
            }),
            (None, None) => None,
        }
    }

    fn session_params_json(
        &self,
        params: &SessionParams,
        session_id: Option<&SessionId>,
        offer: Option<&Offer<'_>>,
    ) -> Value {
        let mut v = json!({
            "cwd": params.cwd,
            "mcpServers": self.mcp_servers_json(&Self::mcp_servers(params, offer)),
        });
        let additional_supported = self.agent_info().is_some_and(|i| {
            i.capabilities
                .session_capabilities
                .additional_directories
                .is_some()
        });
        if additional_supported && !params.additional_directories.is_empty() {
            v["additionalDirectories"] = json!(params.additional_directories);
        }
        if let Some(id) = session_id {
            v["sessionId"] = json!(id);
        }
        if let Some(sp) = Self::system_prompt(params, offer) {
            let support = self
                .agent_info()
                .map(|i| i.system_prompt)
                .unwrap_or_default();
            if support.allows(sp.mode) {
                v["systemPrompt"] = json!({
                    "mode": sp.mode.as_str(),
                    "content": [{ "type": "text", "text": sp.text }],
                });
            }
        }
        v
    }

    /// The `mcpServers` of `session/new`, `load` and `resume`: the one place
    /// that builds them. v2 tags a stdio server with `type: "stdio"`
    /// (claude-agent-acp 0.101.0 on v2 refuses one without it).
    fn mcp_servers_json(&self, servers: &[schema::McpServer]) -> Value {
        let mut list = json!(servers);
        if self.is_v2() {
            if let Value::Array(items) = &mut list {
                for item in items.iter_mut().filter_map(Value::as_object_mut) {
                    item.entry("type").or_insert_with(|| json!("stdio"));
                }
            }
        }
        list
    }

    /// Why `params`' system prompt is not sent to this agent, if it is not.
    fn system_prompt_skipped(&self, params: &SessionParams) -> Option<String> {
        let sp = params
            .system_prompt
            .as_ref()
            .filter(|sp| !sp.text.is_empty())?;
        let support = self
            .agent_info()
            .map(|i| i.system_prompt)
            .unwrap_or_default();
        match support {
            _ if support.allows(sp.mode) => None,
            SystemPromptSupport::None => Some(
                "this agent does not take a client system prompt (it does not advertise sessionCapabilities.systemPrompt), so `system_prompt` is not sent; put the instructions in your first message instead".into(),
            ),
            _ => Some(
                "this agent takes a system prompt only in `append` mode, so the `override` one is not sent; set `system_prompt = { mode = \"append\", text = ... }` to send it".into(),
            ),
        }
    }

    fn workspace_for(&self, params: &SessionParams) -> Workspace {
        let mut roots = vec![params.cwd.clone()];
        roots.extend(params.additional_directories.iter().cloned());
        let mut ws = Workspace::new(roots);
        for p in &self.sessions().options.allowed_paths {
            ws.allow(p.clone());
        }
        ws
    }

    fn check_cwd(params: &SessionParams) -> Result<()> {
        if !params.cwd.is_absolute() {
            return Err(Error::RelativePath {
                path: params.cwd.clone(),
            });
        }
        Ok(())
    }

    fn register_session(
        &self,
        session_id: &SessionId,
        params: &SessionParams,
        response: &WireSessionResponse,
    ) {
        let changes = {
            let mut sessions = self.sessions().slots.lock();
            let slot = sessions
                .entry(session_id.clone())
                .or_insert_with(|| SessionSlot {
                    state: SessionState::new(session_id.clone()),
                    workspace: Workspace::new(Vec::new()),
                    cwd: PathBuf::new(),
                    parent: None,
                });
            slot.workspace = self.workspace_for(params);
            slot.cwd = params.cwd.clone();
            let mut changes = Vec::new();
            if let Some(modes) = &response.modes {
                changes.extend(slot.state.set_modes(modes.clone()));
            }
            if let Some(options) = &response.config_options {
                changes.extend(slot.state.set_config_options(options.clone()));
            }
            changes
        };
        self.sessions().emit_changes(session_id, changes);
    }

    /// The end every opening shares (new, load, resume, fork): the session
    /// registered, the editor's MCP server bound to it, its start reported.
    fn opened(
        &self,
        session_id: SessionId,
        params: &SessionParams,
        response: WireSessionResponse,
        offer: Option<Offer<'_>>,
    ) -> SessionStarted {
        self.register_session(&session_id, params, &response);
        if let Some(offer) = offer {
            offer.bind(&session_id);
        }
        self.started(session_id, params, response)
    }

    fn started(
        &self,
        session_id: SessionId,
        params: &SessionParams,
        response: WireSessionResponse,
    ) -> SessionStarted {
        SessionStarted {
            system_prompt_skipped: self.system_prompt_skipped(params),
            session_id,
            modes: response.modes,
            config_options: response.config_options.unwrap_or_default(),
        }
    }

    /// `session/new`. The session's cwd and additional directories become
    /// the sandbox for the agent's fs and terminal requests.
    pub async fn new_session(&self, params: SessionParams) -> Result<SessionStarted> {
        Self::check_cwd(&params)?;
        self.info_or_err(methods::SESSION_NEW)?;
        self.sessions()
            .sessions_opening
            .fetch_add(1, Ordering::AcqRel);
        let _opening = OpeningGuard(self.sessions());
        let offer = self.editor_offer(&params);
        let response: WireSessionResponse = self
            .session_request(
                methods::SESSION_NEW,
                self.session_params_json(&params, None, offer.as_ref()),
            )
            .await?;
        let session_id = response.session_id.clone().ok_or_else(|| Error::Decode {
            what: "the agent's answer to `session/new`".into(),
            reason: "it has no `sessionId`".into(),
        })?;
        Ok(self.opened(session_id, &params, response, offer))
    }

    /// `session/load`: the agent replays the session's history as updates
    /// before answering; the session model is rebuilt from that replay.
    pub async fn load_session(
        &self,
        session_id: &SessionId,
        params: SessionParams,
    ) -> Result<SessionStarted> {
        Self::check_cwd(&params)?;
        self.require(methods::SESSION_LOAD, |i| i.capabilities.load_session)?;
        // Registered before the request so the replay lands in a fresh model
        // (its subagents' too: the replay announces them again).
        self.sessions().remove_session(session_id);
        self.sessions().slots.lock().insert(
            session_id.clone(),
            SessionSlot {
                state: SessionState::new(session_id.clone()),
                workspace: self.workspace_for(&params),
                cwd: params.cwd.clone(),
                parent: None,
            },
        );
        // v2 has no `session/load`: a resume replaying from the start, whose
        // answer ends the replay (claude-agent-acp 0.101.0 sends no marker).
        let offer = self.editor_offer(&params);
        let mut request = self.session_params_json(&params, Some(session_id), offer.as_ref());
        let method = if self.is_v2() {
            request["replayFrom"] = json!({ "type": "start" });
            methods::SESSION_RESUME
        } else {
            methods::SESSION_LOAD
        };
        let result: Result<WireSessionResponse> = self.session_request(method, request).await;
        match result {
            Ok(response) => Ok(self.opened(session_id.clone(), &params, response, offer)),
            Err(e) => {
                self.sessions().remove_session(session_id);
                Err(e)
            }
        }
    }

    /// `session/resume`: reattach to a session without a replay.
    pub async fn resume_session(
        &self,
        session_id: &SessionId,
        params: SessionParams,
    ) -> Result<SessionStarted> {
        Self::check_cwd(&params)?;
        self.require(methods::SESSION_RESUME, |i| {
            i.capabilities.session_capabilities.resume.is_some()
        })?;
        self.sessions()
            .sessions_opening
            .fetch_add(1, Ordering::AcqRel);
        let _opening = OpeningGuard(self.sessions());
        let offer = self.editor_offer(&params);
        let response: WireSessionResponse = self
            .session_request(
                methods::SESSION_RESUME,
                self.session_params_json(&params, Some(session_id), offer.as_ref()),
            )
            .await?;
        Ok(self.opened(session_id.clone(), &params, response, offer))
    }

    /// Whether the agent offers `session/fork` (unstable).
    pub fn can_fork(&self) -> bool {
        self.agent_info()
            .is_some_and(|i| i.capabilities.session_capabilities.fork.is_some())
    }

    /// `session/fork` (unstable): a new session whose history is `source`'s
    /// before the session cursor `cursor` (whole, without one). The new
    /// session is live when the agent answers, and has the sandbox of
    /// `params` like a new one.
    pub async fn fork_session(
        &self,
        source: &SessionId,
        cursor: Option<&str>,
        params: SessionParams,
    ) -> Result<SessionStarted> {
        Self::check_cwd(&params)?;
        self.require(methods::SESSION_FORK, |i| {
            i.capabilities.session_capabilities.fork.is_some()
        })?;
        self.sessions()
            .sessions_opening
            .fetch_add(1, Ordering::AcqRel);
        let _opening = OpeningGuard(self.sessions());
        let offer = self.editor_offer(&params);
        // `ForkSessionRequest`'s fields are those of `session/resume` (one
        // builder decides what an agent is sent) plus the cursor.
        let mut request = self.session_params_json(&params, Some(source), offer.as_ref());
        if let Some(cursor) = cursor {
            request["cursorId"] = json!(cursor);
        }
        let response: WireSessionResponse =
            self.session_request(methods::SESSION_FORK, request).await?;
        let session_id = response.session_id.clone().ok_or_else(|| Error::Decode {
            what: "the agent's answer to `session/fork`".into(),
            reason: "it has no `sessionId`".into(),
        })?;
        if &session_id == source {
            return Err(Error::Decode {
                what: "the agent's answer to `session/fork`".into(),
                reason: "it named the session being forked, not a new one".into(),
            });
        }
        Ok(self.opened(session_id, &params, response, offer))
    }

    /// One page of `session/list`.
    pub async fn list_sessions(
        &self,
        cwd: Option<&Path>,
        cursor: Option<&str>,
    ) -> Result<SessionPage> {
        self.require(methods::SESSION_LIST, |i| {
            i.capabilities.session_capabilities.list.is_some()
        })?;
        let params = to_params(
            &schema::ListSessionsRequest::new()
                .cwd(cwd.map(Path::to_path_buf))
                .cursor(cursor.map(str::to_owned)),
        )?;
        let response: schema::ListSessionsResponse = self
            .engine()
            .request(methods::SESSION_LIST, params, self.timeout())
            .await?;
        Ok(SessionPage {
            sessions: response.sessions,
            next_cursor: response.next_cursor,
        })
    }

    /// Every page of `session/list`, newest first by `updatedAt` when the
    /// agent gives it. Stops if the agent repeats a cursor.
    pub async fn list_all_sessions(&self, cwd: Option<&Path>) -> Result<Vec<schema::SessionInfo>> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        loop {
            let page = self.list_sessions(cwd, cursor.as_deref()).await?;
            all.extend(page.sessions);
            match page.next_cursor {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                _ => break,
            }
        }
        all.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        Ok(all)
    }

    /// `session/close` when advertised; the session's terminals are killed
    /// and its pending prompts cancelled either way.
    pub async fn close_session(&self, session_id: &SessionId) -> Result<()> {
        let supported = self
            .agent_info()
            .is_some_and(|i| i.capabilities.session_capabilities.close.is_some());
        self.sessions().cancel_session_prompts(session_id);
        self.sessions().terminals.release_session(session_id).await;
        let result = if supported {
            self.engine()
                .request::<Value>(
                    methods::SESSION_CLOSE,
                    to_params(&schema::CloseSessionRequest::new(session_id.clone()))?,
                    self.timeout(),
                )
                .await
                .map(|_| ())
        } else {
            Ok(())
        };
        self.sessions().remove_session(session_id);
        self.sessions().review.remove(session_id);
        result
    }

    /// `session/delete`, when advertised.
    pub async fn delete_session(&self, session_id: &SessionId) -> Result<()> {
        self.require(methods::SESSION_DELETE, |i| {
            i.capabilities.session_capabilities.delete.is_some()
        })?;
        let _: Value = self
            .engine()
            .request(
                methods::SESSION_DELETE,
                to_params(&schema::DeleteSessionRequest::new(session_id.clone()))?,
                self.timeout(),
            )
            .await?;
        self.sessions().remove_session(session_id);
        self.sessions().review.remove(session_id);
        Ok(())
    }

    fn require_session(&self, session_id: &SessionId) -> Result<()> {
        if self.sessions().slots.lock().contains_key(session_id) {
            Ok(())
        } else {
            Err(Error::NotFound(format!(
                "unknown session `{session_id}`; open or load it first"
            )))
        }
    }

    /// `session/set_mode`. The model follows the agent's
    /// `current_mode_update`, or this call's success when none comes.
    ///
    /// On v2 there is no `session/set_mode`: the mode is the config option
    /// of category `mode` (claude-agent-acp 0.101.0), set with
    /// `session/set_config_option`.
    pub async fn set_mode(&self, session_id: &SessionId, mode_id: &str) -> Result<()> {
        self.require_session(session_id)?;
        if self.is_v2() {
            let option = self
                .with_session(session_id, |s| {
                    s.config_options().iter().find_map(|o| {
                        let o = serde_json::to_value(o).ok()?;
                        (o.get("category").and_then(Value::as_str) == Some("mode"))
                            .then(|| o.get("id").and_then(Value::as_str).map(str::to_owned))
                            .flatten()
                    })
                })
                .flatten()
                .ok_or_else(|| Error::NotSupported {
                    method: format!(
                        "{} (on ACP v2 the mode is a config option, and this session has none of category `mode`)",
                        methods::SESSION_SET_MODE
                    ),
                })?;
            self.set_config_option(session_id, &option, ConfigValue::Id(mode_id.to_owned()))
                .await?;
            let changes = self
                .sessions()
                .slots
                .lock()
                .get_mut(session_id)
                .map(|slot| slot.state.set_current_mode(mode_id.to_owned()))
                .unwrap_or_default();
            self.sessions().emit_changes(session_id, changes);
            return Ok(());
        }
        let _: Value = self
            .engine()
            .request(
                methods::SESSION_SET_MODE,
                to_params(&schema::SetSessionModeRequest::new(
                    session_id.clone(),
                    mode_id.to_owned(),
                ))?,
                self.timeout(),
            )
            .await?;
        let changes = self
            .sessions()
            .slots
            .lock()
            .get_mut(session_id)
            .map(|slot| slot.state.set_current_mode(mode_id.to_owned()))
            .unwrap_or_default();
        self.sessions().emit_changes(session_id, changes);
        Ok(())
    }

    /// `session/set_config_option`; returns (and stores) the agent's complete
    /// option list.
    pub async fn set_config_option(
        &self,
        session_id: &SessionId,
        config_id: &str,
        value: ConfigValue,
    ) -> Result<Vec<schema::SessionConfigOption>> {
        self.require_session(session_id)?;
        let mut params = json!({ "sessionId": session_id, "configId": config_id });
        match value {
            ConfigValue::Id(id) => {
                // v2 requires the tag (claude-agent-acp 0.101.0 refuses the
                // request without it); v1 agents predate it.
                if self.is_v2() {
                    params["type"] = json!("id");
                }
                params["value"] = json!(id);
            }
            ConfigValue::Bool(b) => {
                params["type"] = json!("boolean");
                params["value"] = json!(b);
            }
        }
        let response: WireConfigResponse = self
            .session_request(methods::SESSION_SET_CONFIG_OPTION, params)
            .await?;
        let changes = self
            .sessions()
            .slots
            .lock()
            .get_mut(session_id)
            .map(|slot| {
                slot.state
                    .set_config_options(response.config_options.clone())
            })
            .unwrap_or_default();
        self.sessions().emit_changes(session_id, changes);
        Ok(response.config_options)
    }

    fn check_prompt_content(&self, content: &[schema::ContentBlock]) -> Result<()> {
        let info = self.info_or_err(methods::SESSION_PROMPT)?;
        let caps = &info.capabilities.prompt_capabilities;
        for block in content {
            let allowed = match block {
                schema::ContentBlock::Text(_) | schema::ContentBlock::ResourceLink(_) => true,
                schema::ContentBlock::Image(_) => caps.image,
                schema::ContentBlock::Audio(_) => caps.audio,
                schema::ContentBlock::Resource(_) => caps.embedded_context,
                _ => false,
            };
            if !allowed {
                let kind = serde_json::to_value(block)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| "this".into());
                return Err(Error::NotSupported {
                    method: format!("{} with `{kind}` content", methods::SESSION_PROMPT),
                });
            }
        }
        Ok(())
    }

    /// `session/prompt`: records the prompt in the session model, sends it,
    /// and resolves once with the agent's stop reason. Content kinds the
    /// agent did not advertise are refused before anything is sent.
    pub async fn prompt(
        &self,
        session_id: &SessionId,
        content: Vec<schema::ContentBlock>,
    ) -> Result<StopReason> {
        self.require_session(session_id)?;
        self.check_prompt_content(&content)?;
        let (changes, earlier) = self
            .sessions()
            .slots
            .lock()
            .get_mut(session_id)
            .map(|slot| {
                // The session's prompts before this one, replayed ones
                // included: its checkpoint is numbered after them even when
                // the replay was still being applied as the load returned.
                let earlier = slot
                    .state
                    .entries()
                    .iter()
                    .filter(|e| matches!(e, crate::session::Entry::UserMessage(_)))
                    .count();
                let changes = slot
                    .state
                    .push_user_prompt(content.iter().cloned().map(Content::Known).collect());
                (changes, earlier)
            })
            .unwrap_or_default();
        self.sessions().emit_changes(session_id, changes);
        let workspace = self.session_workspace(session_id)?;
        let label = prompt_label(&content);
        self.sessions()
            .review
            .turn_started(session_id, &workspace, &label, earlier);
        let _turn = TurnGuard {
            sessions: self.sessions(),
            session_id,
        };
        let params = to_params(&schema::PromptRequest::new(session_id.clone(), content))?;
        let (stop_reason, usage) = if self.is_v2() {
            self.prompt_v2(session_id, params).await?
        } else {
            let response: WirePromptResponse = self
                .engine()
                .request(methods::SESSION_PROMPT, params, None)
                .await?;
            (StopReason::from_wire(&response.stop_reason), response.usage)
        };
        if let Some(usage) = usage.as_ref().and_then(TurnUsage::decode) {
            self.sessions()
                .emit_changes(session_id, vec![SessionChange::TurnUsage { usage }]);
        }
        Ok(stop_reason)
    }

    /// A v2 turn: the answer to `session/prompt` only acknowledges the
    /// prompt; the turn ends with the idle `state_update`, which carries the
    /// stop reason and usage (and may come before that answer).
    async fn prompt_v2(
        &self,
        session_id: &SessionId,
        params: Value,
    ) -> Result<(StopReason, Option<Value>)> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        // A prompt sent while the agent works joins its turn (v2 inserts it
        // into the conversation): the one idle update ends both.
        self.sessions()
            .turns
            .lock()
            .entry(session_id.clone())
            .or_default()
            .push(tx);
        let mut turn = V2Turn {
            sessions: self.sessions(),
            session_id,
            rx,
        };
        let ack: Value = self
            .engine()
            .request(methods::SESSION_PROMPT, params, None)
            .await?;
        if let Some(message_id) = ack.get("messageId").and_then(Value::as_str) {
            if let Some(slot) = self.sessions().slots.lock().get_mut(session_id) {
                slot.state.acknowledge_prompt(message_id.to_owned());
            }
        }
        let end = tokio::select! {
            end = &mut turn.rx => end.map_err(|_| Error::NotFound(format!(
                "session `{session_id}` was closed before its turn ended"
            )))?,
            closed = self.closed() => return Err(closed),
        };
        // An idle update without a stop reason ended the work all the same.
        let stop_reason = end
            .stop_reason
            .map_or(StopReason::EndTurn, |s| StopReason::from_wire(&s));
        Ok((stop_reason, end.usage))
    }

    /// `session/cancel`: tells the agent, answers the session's pending
    /// permission prompts `cancelled`, and marks its unfinished tool calls
    /// cancelled. The turn's [`Connection::prompt`] still resolves with the
    /// agent's stop reason; later updates are still applied.
    ///
    /// For a subagent's session, only when the agent's `subagent_update`
    /// gave the client `capabilities.cancel` for it (the spec: support on
    /// ordinary sessions grants nothing on a child).
    pub fn cancel(&self, session_id: &SessionId) -> Result<()> {
        self.require_session(session_id)?;
        let allowed = {
            let slots = self.sessions().slots.lock();
            match slots.get(session_id).and_then(|s| s.parent.as_ref()) {
                None => true,
                Some(parent) => slots.get(parent).is_some_and(|p| {
                    p.state
                        .subagent(&session_id.0)
                        .is_some_and(|child| child.can_cancel)
                }),
            }
        };
        if !allowed {
            return Err(Error::SubagentCancelNotAllowed {
                session: session_id.to_string(),
            });
        }
        // No early return: the prompts are cancelled here whatever happens
        // to the notification.
        let sent = to_params(&schema::CancelNotification::new(session_id.clone()))
            .and_then(|params| self.engine().notify(methods::SESSION_CANCEL, &params));
        self.sessions().cancel_session_prompts(session_id);
        let changes = self
            .sessions()
            .slots
            .lock()
            .get_mut(session_id)
            .map(|slot| slot.state.cancel_unfinished_tool_calls())
            .unwrap_or_default();
        self.sessions().emit_changes(session_id, changes);
        sent
    }

    /// Reads a session's model.
    pub fn with_session<R>(
        &self,
        session_id: &SessionId,
        f: impl FnOnce(&SessionState) -> R,
    ) -> Option<R> {
        self.sessions()
            .slots
            .lock()
            .get(session_id)
            .map(|slot| f(&slot.state))
    }

    fn session_workspace(&self, session_id: &SessionId) -> Result<Workspace> {
        self.sessions()
            .slots
            .lock()
            .get(session_id)
            .map(|slot| slot.workspace.clone())
            .ok_or_else(|| {
                Error::NotFound(format!(
                    "unknown session `{session_id}`; open or load it first"
                ))
            })
    }

    /// Edit review of one session: the files the agent changed, as hunks
    /// to accept or reject. See [`Review`].
    pub fn review(&self, session_id: &SessionId) -> Review<'_> {
        let workspace = self.session_workspace(session_id).ok();
        Review::new(
            &self.sessions().review,
            &*self.sessions().host,
            session_id.clone(),
            workspace,
        )
    }

    /// The ids of every open session.
    pub fn session_ids(&self) -> Vec<SessionId> {
        self.sessions().slots.lock().keys().cloned().collect()
    }

    /// Reads or changes the permission memory and rules.
    pub fn with_permissions<R>(&self, f: impl FnOnce(&mut PermissionPolicy) -> R) -> R {
        f(&mut self.sessions().permission_policy.lock())
    }

    /// The newest stderr output of the agent (when this connection spawned it).
    pub fn stderr_tail(&self) -> Option<String> {
        self.sessions().process.as_ref().map(|p| p.stderr_tail())
    }

    /// The agent's process id (when this connection spawned it).
    pub fn pid(&self) -> Option<u32> {
        self.sessions().process.as_ref().and_then(|p| p.pid())
    }

    /// True once the connection is closed (agent exited, protocol failure or
    /// shutdown).
    pub fn is_closed(&self) -> bool {
        self.engine().close_reason().is_some()
    }

    /// Resolves when the connection closes, with the reason as an error.
    pub async fn closed(&self) -> Error {
        self.engine().closed().await.to_error()
    }

    /// Graceful shutdown: fail pending calls, kill terminals, close the
    /// agent's stdin, then SIGTERM and SIGKILL its process group after the
    /// grace period. Returns the agent's exit status when it was spawned here.
    pub async fn shutdown(&self) -> Option<ExitInfo> {
        self.engine().close(CloseReason::Shutdown);
        self.sessions().terminals.release_all().await;
        match &self.sessions().process {
            Some(p) => Some(p.shutdown(self.sessions().options.shutdown_grace).await),
            None => None,
        }
    }
}

/// An older agent's terminal login: an `agent` method marked
/// `_meta["terminal-auth"] = {command, args, env, label}` (claude-code-acp
/// before ACP had terminal auth methods) becomes a `terminal` method, so no
/// client passes it to `authenticate`. Its `args` and `env` move into the
/// method; the `_meta` stays, for [`terminal_auth_command`].
fn legacy_terminal_auth(method: schema::AuthMethod) -> schema::AuthMethod {
    let schema::AuthMethod::Agent(agent) = &method else {
        return method;
    };
    let Some(marker) = agent
        .meta
        .as_ref()
        .and_then(|m| m.get("terminal-auth"))
        .and_then(Value::as_object)
    else {
        return method;
    };
    let args: Vec<String> = marker
        .get("args")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let env: std::collections::HashMap<String, String> = marker
        .get("env")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let terminal = schema::AuthMethodTerminal::new(agent.id.clone(), agent.name.clone())
        .description(agent.description.clone())
        .args(args)
        .env(env)
        .meta(agent.meta.clone());
    schema::AuthMethod::Terminal(terminal)
}

/// The program a terminal auth method runs instead of the agent's own
/// command: the `command` of an older agent's `_meta["terminal-auth"]`.
/// `None` for ACP terminal methods, which run the agent's command.
pub fn terminal_auth_command(method: &schema::AuthMethod) -> Option<String> {
    let meta = match method {
        schema::AuthMethod::Terminal(t) => t.meta.as_ref(),
        _ => None,
    }?;
    meta.get("terminal-auth")?
        .get("command")?
        .as_str()
        .map(str::to_owned)
}

/// The params of a request (or notification) to the agent, built from the
/// schema crate's type so that the field names are the schema's and not
/// hand-written. Serializing these types cannot fail (string keys, derived
/// serializers); the error is reported rather than unwrapped all the same.
fn to_params<T: Serialize>(params: &T) -> Result<Value> {
    serde_json::to_value(params)
        .map_err(|e| Error::InvalidParams(format!("the request could not be encoded: {e}")))
}

#[cfg(test)]
mod params_tests;
