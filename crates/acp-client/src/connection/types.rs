//! The values the connection's calls take and return.

use super::*;

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
    pub(super) fn of_capabilities(caps: &schema::AgentCapabilities) -> Self {
        match &caps.session_capabilities.system_prompt {
            None => SystemPromptSupport::None,
            Some(sp) if sp.mode.as_ref().is_some_and(|m| m.override_.is_some()) => {
                SystemPromptSupport::AppendAndOverride
            }
            Some(_) => SystemPromptSupport::Append,
        }
    }

    pub(super) fn allows(self, mode: SystemPromptMode) -> bool {
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
