//! Interop with an agent written with the official ACP Rust SDK
//! (`agent-client-protocol` 5.2), run as its own process (see `sdk_agent/`).
//!
//! Every test drives both directions: what we send must decode into the
//! SDK's typed requests (the agent asserts on those), and what the SDK sends
//! with its own types must land in our session model field for field.
#![allow(clippy::unwrap_used)]

mod sdk_agent;
mod support;

#[path = "sdk_interop/asks.rs"]
mod asks;
#[path = "sdk_interop/cancel.rs"]
mod cancel;
#[path = "sdk_interop/sessions.rs"]
mod sessions;
#[path = "sdk_interop/tools.rs"]
mod tools;
#[path = "sdk_interop/updates.rs"]
mod updates;

use std::path::Path;

use acp_client::session::update::SessionId;
use acp_client::{Connection, HostCapabilities, SessionParams, StopReason};
use agent_client_protocol_schema::v1 as sdk;
use agent_client_protocol_schema::ProtocolVersion;
use sdk_agent::SdkAgent;

fn text(s: &str) -> sdk::ContentBlock {
    sdk::ContentBlock::Text(sdk::TextContent::new(s))
}

fn chunk(s: &str) -> sdk::ContentChunk {
    sdk::ContentChunk::new(text(s))
}

fn all_caps() -> HostCapabilities {
    HostCapabilities {
        read_text_file: true,
        write_text_file: true,
        terminal: true,
        ..HostCapabilities::default()
    }
}

fn modes() -> sdk::SessionModeState {
    sdk::SessionModeState::new(
        "ask",
        vec![
            sdk::SessionMode::new("ask", "Ask").description("Asks before every edit"),
            sdk::SessionMode::new("code", "Code"),
        ],
    )
}

fn config_options(model: &str, thinking: bool) -> Vec<sdk::SessionConfigOption> {
    vec![
        sdk::SessionConfigOption::select(
            "model",
            "Model",
            model.to_owned(),
            vec![
                sdk::SessionConfigSelectOption::new("smart", "Smart"),
                sdk::SessionConfigSelectOption::new("fast", "Fast").description("Cheaper"),
            ],
        )
        .category(sdk::SessionConfigOptionCategory::Model),
        sdk::SessionConfigOption::boolean("thinking", "Extended thinking", thinking)
            .description("Think longer before answering"),
    ]
}

/// Runs `initialize` on both sides: the agent answers with `caps`.
async fn initialize(conn: &Connection, agent: &mut SdkAgent, caps: sdk::AgentCapabilities) {
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (_req, responder) = agent.expect_initialize().await;
    responder
        .respond(sdk::InitializeResponse::new(ProtocolVersion::V1).agent_capabilities(caps))
        .unwrap();
    init.await.unwrap().unwrap();
}

/// Initializes and opens session `sess-1` rooted at `cwd`, with modes and
/// config options.
async fn open_session(
    conn: &Connection,
    agent: &mut SdkAgent,
    caps: sdk::AgentCapabilities,
    cwd: &Path,
) -> SessionId {
    initialize(conn, agent, caps).await;
    let c = conn.clone();
    let params = SessionParams::new(cwd);
    let new = tokio::spawn(async move { c.new_session(params).await });
    let (_req, responder) = agent.expect_new_session().await;
    responder
        .respond(
            sdk::NewSessionResponse::new("sess-1")
                .modes(modes())
                .config_options(config_options("smart", false)),
        )
        .unwrap();
    new.await.unwrap().unwrap().session_id
}

/// Sends `prompt` and returns the running turn with the agent's view of it.
async fn start_turn(
    conn: &Connection,
    agent: &mut SdkAgent,
    session_id: &SessionId,
    prompt: Vec<sdk::ContentBlock>,
) -> (
    tokio::task::JoinHandle<acp_client::Result<StopReason>>,
    sdk::PromptRequest,
    sdk_agent::Responder<sdk::PromptResponse>,
) {
    let c = conn.clone();
    let s = session_id.clone();
    let turn = tokio::spawn(async move { c.prompt(&s, prompt).await });
    let (req, responder) = agent.expect_prompt().await;
    (turn, req, responder)
}
