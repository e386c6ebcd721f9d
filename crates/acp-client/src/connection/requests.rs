//! The params of the requests whose wire shape the schema crate's request
//! types cannot give as this client has always sent it. Each is a small
//! typed struct built from the schema crate's parts (`McpServer`,
//! `SystemPrompt`, `ClientCapabilities`, ...), encoded once by `to_params`
//! like every other request. The requests the schema's types do give
//! exactly are built from them where they are sent (`connection.rs`,
//! `handshake.rs`, `lifecycle.rs`).

use std::path::PathBuf;

use agent_client_protocol_schema::v2;
use serde::Serialize;

use crate::schema;
use crate::session::update::SessionId;

/// The params of `session/new`, `session/load`, `session/resume` and
/// `session/fork` (and of v2's resume with a replay, its `session/load`):
/// one shape, so one builder decides what an agent is sent.
///
/// Not the schema's request types, though it is theirs field for field
/// (the tests hold it to `NewSessionRequest` and `LoadSessionRequest`):
/// `ResumeSessionRequest` and `ForkSessionRequest` (and every v2 request)
/// leave out an empty `mcpServers`, which this client has always sent
/// (agents that check shapes strictly see what they always saw); v2 tags a
/// stdio server, which v1's `McpServer` does not; and v1 has no
/// `replayFrom`. A path that is not UTF-8 fails the encoding with an error
/// (the `json!` literal panicked on one).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct OpenSession {
    pub(super) cwd: PathBuf,
    /// Sent even when empty.
    pub(super) mcp_servers: Vec<WireMcpServer>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) additional_directories: Vec<PathBuf>,
    /// The session loaded, resumed or forked; none for `session/new`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) session_id: Option<SessionId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) system_prompt: Option<schema::SystemPrompt>,
    /// v2's `session/load`: a resume replaying from the start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) replay_from: Option<v2::ReplayFrom>,
    /// `session/fork` at a session cursor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cursor_id: Option<schema::CursorId>,
}

impl OpenSession {
    /// The params with `cwd` and the MCP servers; `v2` tags stdio servers.
    pub(super) fn new(cwd: PathBuf, servers: Vec<schema::McpServer>, v2: bool) -> Self {
        OpenSession {
            cwd,
            mcp_servers: servers
                .into_iter()
                .map(|s| WireMcpServer::new(s, v2))
                .collect(),
            additional_directories: Vec::new(),
            session_id: None,
            system_prompt: None,
            replay_from: None,
            cursor_id: None,
        }
    }

    /// v2's `session/load`: `session/resume` replaying from the start.
    pub(super) fn replay_from_start(mut self) -> Self {
        self.replay_from = Some(v2::ReplayFrom::Start(v2::ReplayFromStart::new()));
        self
    }
}

/// One entry of `mcpServers`. v2 tags a stdio server with `type: "stdio"`
/// (claude-agent-acp 0.101.0 on v2 refuses one without it); v1's
/// `McpServer` leaves a stdio server untagged.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(super) enum WireMcpServer {
    TaggedStdio {
        #[serde(flatten)]
        server: schema::McpServerStdio,
        #[serde(rename = "type")]
        kind: &'static str,
    },
    Plain(schema::McpServer),
}

impl WireMcpServer {
    fn new(server: schema::McpServer, v2: bool) -> Self {
        match server {
            schema::McpServer::Stdio(server) if v2 => WireMcpServer::TaggedStdio {
                server,
                kind: "stdio",
            },
            other => WireMcpServer::Plain(other),
        }
    }
}

/// A `systemPrompt` of one text block.
pub(super) fn system_prompt(mode: super::SystemPromptMode, text: String) -> schema::SystemPrompt {
    let mode = match mode {
        super::SystemPromptMode::Append => schema::SystemPromptMode::Append,
        super::SystemPromptMode::Override => schema::SystemPromptMode::Override,
    };
    schema::SystemPrompt::new(vec![schema::ContentBlock::from(text)]).mode(mode)
}

/// `session/set_config_option`'s params: v1's request for a v1 agent, v2's
/// for a v2 one. They differ in an id value: v2 requires `type: "id"`
/// (claude-agent-acp 0.101.0 refuses the request without it), v1 agents
/// predate the tag.
pub(super) fn set_config_option(
    session_id: &SessionId,
    config_id: &str,
    value: super::ConfigValue,
    v2: bool,
) -> crate::error::Result<serde_json::Value> {
    if v2 {
        let value = match value {
            super::ConfigValue::Id(id) => v2::SessionConfigOptionValue::Id { value: id.into() },
            super::ConfigValue::Bool(b) => v2::SessionConfigOptionValue::Boolean { value: b },
        };
        return super::to_params(&v2::SetSessionConfigOptionRequest::new(
            session_id.0.clone(),
            config_id.to_owned(),
            value,
        ));
    }
    let value = match value {
        super::ConfigValue::Id(id) => schema::SessionConfigOptionValue::value_id(id),
        super::ConfigValue::Bool(b) => schema::SessionConfigOptionValue::boolean(b),
    };
    super::to_params(&schema::SetSessionConfigOptionRequest::new(
        session_id.clone(),
        config_id.to_owned(),
        value,
    ))
}

/// `initialize`'s params. v1's `InitializeRequest` but for one field, and
/// on v2 the v2 `info` and `capabilities` beside the v1 ones (an agent that
/// answers 1 still has the client's fs and terminal).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Initialize {
    pub(super) protocol_version: agent_client_protocol_schema::ProtocolVersion,
    pub(super) client_capabilities: ClientCapabilities,
    pub(super) client_info: schema::Implementation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) info: Option<schema::Implementation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) capabilities: Option<ClientCapabilitiesV2>,
}

/// The schema's v1 `ClientCapabilities` with `elicitation` always sent:
/// `null` when the host serves no elicitation, as this client has always
/// sent it (the schema's type leaves a `None` out).
#[derive(Debug, Serialize)]
pub(super) struct ClientCapabilities {
    /// Its `elicitation` stays `None`, so it is left out here.
    #[serde(flatten)]
    pub(super) known: schema::ClientCapabilities,
    pub(super) elicitation: Option<schema::ElicitationCapabilities>,
}

/// The v2 `capabilities` this client offers: no fs or terminal (v2 has
/// neither; the editor's tools reach the agent as an MCP server instead).
/// Not v2's `ClientCapabilities`, for `elicitation` as in v1 (`null`
/// included). Terminal auth is v2's object (`auth: {terminal: {}}`): the
/// v1 boolean sent before decodes as "no terminal auth" in a v2 SDK agent,
/// which then hides its terminal login.
#[derive(Debug, Serialize)]
pub(super) struct ClientCapabilitiesV2 {
    pub(super) auth: agent_client_protocol_schema::v2::ClientAuthCapabilities,
    pub(super) elicitation: Option<schema::ElicitationCapabilities>,
}

/// What the client takes and shows, for v2's `capabilities`.
pub(super) fn client_capabilities_v2(
    host: &crate::edits::host::HostCapabilities,
    terminal_auth: bool,
) -> ClientCapabilitiesV2 {
    use agent_client_protocol_schema::v2::{ClientAuthCapabilities, TerminalAuthCapabilities};
    ClientCapabilitiesV2 {
        auth: ClientAuthCapabilities::new()
            .terminal(terminal_auth.then(TerminalAuthCapabilities::new)),
        elicitation: crate::serve::dispatch::elicitation_capabilities(host),
    }
}

/// What the client takes and shows, for `clientCapabilities`.
pub(super) fn client_capabilities(
    host: &crate::edits::host::HostCapabilities,
    terminal_auth: bool,
) -> ClientCapabilities {
    // Boolean config options are decoded, shown and set
    // (`set_config_option` with `ConfigValue::Bool`); agents hide them from
    // clients that do not say so. Notices and compactions are decoded into
    // `SessionChange`s. `cursor_update`s are kept per session: a rewind
    // forks at the one before the turn (`fork_session`).
    let session = schema::ClientSessionCapabilities::new()
        .config_options(
            schema::SessionConfigOptionsCapabilities::new()
                .boolean(schema::BooleanConfigOptionCapabilities::new()),
        )
        .notices(schema::NoticeCapabilities::new())
        .compaction(schema::CompactionCapabilities::new())
        .cursors(schema::SessionCursorsCapabilities::new());
    // codex-acp 2.6.0 streams the output of the commands it runs itself as
    // `_meta.terminal_output_delta` to clients that say so (and as a single
    // blob otherwise).
    let mut meta = schema::Meta::new();
    meta.insert(
        "terminal_output_delta".into(),
        serde_json::Value::Bool(true),
    );
    let known = schema::ClientCapabilities::new()
        .fs(schema::FileSystemCapabilities::new()
            .read_text_file(host.read_text_file)
            .write_text_file(host.write_text_file))
        .terminal(host.terminal)
        .auth(schema::AuthCapabilities::new().terminal(terminal_auth))
        .session(session)
        // `plan_update`/`plan_removed` and subagent sessions are decoded
        // into `SessionChange`s (stable 2026-11-20).
        .plan(schema::PlanCapabilities::new())
        .subagents(schema::SubagentCapabilities::new())
        .meta(meta);
    ClientCapabilities {
        known,
        elicitation: crate::serve::dispatch::elicitation_capabilities(host),
    }
}
