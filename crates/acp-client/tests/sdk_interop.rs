//! Interop with an agent written with the official ACP Rust SDK
//! (`agent-client-protocol` 5.2), run as its own process (see `sdk_agent/`).
//!
//! Every test drives both directions: what we send must decode into the
//! SDK's typed requests (the agent asserts on those), and what the SDK sends
//! with its own types must land in our session model field for field.
#![allow(clippy::unwrap_used)]

mod sdk_agent;
mod support;

use std::path::Path;

use acp_client::permission::{OptionKind, PermissionDecision};
use acp_client::session::{Entry, Message, ToolCallState};
use acp_client::update::{Content, PlanEntry, SessionId, ToolContent, ToolKind, ToolStatus, Usage};
use acp_client::{
    ClientEvent, ConfigValue, Connection, HostCapabilities, SessionParams, StopReason,
};
use agent_client_protocol_schema::v1 as sdk;
use agent_client_protocol_schema::v1::ErrorCode;
use agent_client_protocol_schema::ProtocolVersion;
use sdk_agent::{start, SdkAgent};
use serde_json::json;
use support::{wait_event, PermissionMode, TestHost, WAIT};

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

#[tokio::test]
async fn initialize_authenticate_and_new_session_decode_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(
        HostCapabilities {
            read_text_file: true,
            write_text_file: false,
            terminal: true,
            ..HostCapabilities::default()
        },
        PermissionMode::Pick("allow_once"),
    );
    let (conn, mut agent) = start(host).await;

    // initialize: our request as the SDK decoded it.
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (req, responder) = agent.expect_initialize().await;
    assert_eq!(req.protocol_version, ProtocolVersion::V1);
    assert!(req.client_capabilities.fs.read_text_file);
    assert!(!req.client_capabilities.fs.write_text_file);
    assert!(req.client_capabilities.terminal);
    let client_info = req.client_info.expect("clientInfo");
    assert_eq!(client_info.name, "acp-client");
    assert_eq!(client_info.version, env!("CARGO_PKG_VERSION"));

    // Their answer, built with their types, as we decoded it.
    let mut session_caps =
        sdk::SessionCapabilities::new().list(sdk::SessionListCapabilities::new());
    session_caps.close = Some(sdk::SessionCloseCapabilities::new());
    let capabilities = sdk::AgentCapabilities::new()
        .load_session(true)
        .prompt_capabilities(
            sdk::PromptCapabilities::new()
                .image(true)
                .embedded_context(true),
        )
        .mcp_capabilities(sdk::McpCapabilities::new().http(true))
        .session_capabilities(session_caps);
    let auth_methods = vec![
        sdk::AuthMethod::Agent(
            sdk::AuthMethodAgent::new("api-key", "API key").description("Reads $SDK_API_KEY"),
        ),
        sdk::AuthMethod::Terminal(
            sdk::AuthMethodTerminal::new("login", "Log in").args(vec!["--login".into()]),
        ),
    ];
    let agent_info = sdk::Implementation::new("sdk-agent", "5.0.0").title("SDK Agent");
    responder
        .respond(
            sdk::InitializeResponse::new(ProtocolVersion::V1)
                .agent_capabilities(capabilities.clone())
                .auth_methods(auth_methods.clone())
                .agent_info(agent_info.clone()),
        )
        .unwrap();
    let info = init.await.unwrap().unwrap();
    assert_eq!(info.protocol_version, 1);
    assert_eq!(info.capabilities, capabilities);
    assert_eq!(info.auth_methods, auth_methods);
    assert_eq!(info.implementation, Some(agent_info));

    // authenticate with an advertised method.
    let c = conn.clone();
    let auth = tokio::spawn(async move { c.authenticate("api-key").await });
    let (req, responder) = agent.expect_authenticate().await;
    assert_eq!(req.method_id.0.as_ref(), "api-key");
    responder.respond(sdk::AuthenticateResponse::new()).unwrap();
    auth.await.unwrap().unwrap();

    // `auth_required` from their side is recognisable on ours.
    let c = conn.clone();
    let params = SessionParams::new(dir.path());
    let new = tokio::spawn(async move { c.new_session(params).await });
    let (_req, responder) = agent.expect_new_session().await;
    responder
        .respond_with_error(sdk::Error::auth_required())
        .unwrap();
    let err = new.await.unwrap().unwrap_err();
    assert!(err.is_auth_required(), "{err}");
    assert!(conn.session_ids().is_empty());

    // session/new with cwd and MCP servers of two transports.
    let mcp_servers = vec![
        sdk::McpServer::Stdio(
            sdk::McpServerStdio::new("files", "/usr/bin/mcp-files")
                .args(vec!["--root".into(), "/tmp".into()])
                .env(vec![sdk::EnvVariable::new("LOG", "debug")]),
        ),
        sdk::McpServer::Http(
            sdk::McpServerHttp::new("web", "https://mcp.example.com/")
                .headers(vec![sdk::HttpHeader::new("Authorization", "Bearer x")]),
        ),
    ];
    let c = conn.clone();
    let params = SessionParams {
        mcp_servers: mcp_servers.clone(),
        ..SessionParams::new(dir.path())
    };
    let new = tokio::spawn(async move { c.new_session(params).await });
    let (req, responder) = agent.expect_new_session().await;
    assert_eq!(req.cwd, dir.path());
    assert_eq!(req.mcp_servers, mcp_servers);
    assert!(req.additional_directories.is_empty());
    responder
        .respond(
            sdk::NewSessionResponse::new("sess-1")
                .modes(modes())
                .config_options(config_options("smart", false)),
        )
        .unwrap();
    let started = new.await.unwrap().unwrap();
    assert_eq!(started.session_id.0.as_ref(), "sess-1");
    assert_eq!(started.modes, Some(modes()));
    assert_eq!(started.config_options, config_options("smart", false));
    let sid = started.session_id;
    conn.with_session(&sid, |s| {
        assert_eq!(s.current_mode(), Some("ask"));
        assert_eq!(s.available_modes(), modes().available_modes.as_slice());
        assert_eq!(
            s.config_options(),
            config_options("smart", false).as_slice()
        );
    })
    .unwrap();
}

#[tokio::test]
async fn streamed_updates_land_in_the_session_model_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host).await;
    let caps = sdk::AgentCapabilities::new().prompt_capabilities(
        sdk::PromptCapabilities::new()
            .image(true)
            .embedded_context(true),
    );
    let sid = open_session(&conn, &mut agent, caps, dir.path()).await;

    let main_rs = dir.path().join("src/main.rs");
    let uri = format!("file://{}", main_rs.display());
    let screenshot = sdk::ContentBlock::Image(sdk::ImageContent::new("iVBORw0KGgo=", "image/png"));
    let prompt = vec![
        text("fix the build"),
        sdk::ContentBlock::ResourceLink(sdk::ResourceLink::new("main.rs", uri.clone())),
        sdk::ContentBlock::Resource(sdk::EmbeddedResource::new(
            sdk::EmbeddedResourceResource::TextResourceContents(
                sdk::TextResourceContents::new("fn main() {}\n", uri).mime_type("text/x-rust"),
            ),
        )),
        screenshot.clone(),
    ];
    let (turn, req, responder) = start_turn(&conn, &mut agent, &sid, prompt.clone()).await;
    // Our prompt as they decoded it.
    assert_eq!(req.session_id.0.as_ref(), "sess-1");
    assert_eq!(req.prompt, prompt);

    let s = "sess-1";
    agent.update(s, sdk::SessionUpdate::AgentThoughtChunk(chunk("Let me ")));
    agent.update(s, sdk::SessionUpdate::AgentThoughtChunk(chunk("look.")));
    agent.update(
        s,
        sdk::SessionUpdate::AgentMessageChunk(chunk("I'll ").message_id("m1")),
    );
    agent.update(
        s,
        sdk::SessionUpdate::AgentMessageChunk(chunk("fix it.").message_id("m1")),
    );
    agent.update(
        s,
        sdk::SessionUpdate::AgentMessageChunk(
            sdk::ContentChunk::new(screenshot.clone()).message_id("m1"),
        ),
    );
    let location = sdk::ToolCallLocation::new(&main_rs).line(3);
    let raw_input = json!({"path": main_rs, "old": "fn main() {", "new": "fn main() -> () {"});
    agent.update(
        s,
        sdk::SessionUpdate::ToolCall(
            sdk::ToolCall::new("edit-1", "Edit src/main.rs")
                .name("edit_file")
                .kind(sdk::ToolKind::Edit)
                .status(sdk::ToolCallStatus::Pending)
                .locations(vec![location.clone()])
                .raw_input(raw_input.clone())
                .content(vec![sdk::ToolCallContent::Diff(
                    sdk::Diff::new(&main_rs, "fn main() -> () {}\n").old_text("fn main() {}\n"),
                )]),
        ),
    );
    agent.update(
        s,
        sdk::SessionUpdate::ToolCallUpdate(sdk::ToolCallUpdate::new(
            "edit-1",
            sdk::ToolCallUpdateFields::new()
                .status(sdk::ToolCallStatus::Completed)
                .raw_output(json!({"ok": true})),
        )),
    );
    let new_file = dir.path().join("NOTES.md");
    agent.update(
        s,
        sdk::SessionUpdate::ToolCall(
            sdk::ToolCall::new("write-1", "Write NOTES.md")
                .kind(sdk::ToolKind::Edit)
                .status(sdk::ToolCallStatus::InProgress)
                .content(vec![sdk::ToolCallContent::Diff(sdk::Diff::new(
                    &new_file, "notes\n",
                ))]),
        ),
    );
    // SDK quirk: `ToolCall` leaves a default status (`pending`) and kind
    // (`other`) off the wire; our model starts from the same defaults.
    agent.update(
        s,
        sdk::SessionUpdate::ToolCall(
            sdk::ToolCall::new("run-1", "cargo build")
                .kind(sdk::ToolKind::Execute)
                .raw_input(json!({"command": "cargo build"})),
        ),
    );
    agent.update(
        s,
        sdk::SessionUpdate::ToolCallUpdate(sdk::ToolCallUpdate::new(
            "run-1",
            sdk::ToolCallUpdateFields::new()
                .status(sdk::ToolCallStatus::Failed)
                .title("cargo build (failed)".to_owned())
                .name("shell".to_owned())
                .content(vec![
                    sdk::ToolCallContent::Content(sdk::Content::new(text("1 error"))),
                    sdk::ToolCallContent::Terminal(sdk::Terminal::new("term-7")),
                ]),
        )),
    );
    let plan = vec![
        sdk::PlanEntry::new(
            "Read the error",
            sdk::PlanEntryPriority::High,
            sdk::PlanEntryStatus::Completed,
        ),
        sdk::PlanEntry::new(
            "Fix main.rs",
            sdk::PlanEntryPriority::Medium,
            sdk::PlanEntryStatus::InProgress,
        ),
        sdk::PlanEntry::new(
            "Run tests",
            sdk::PlanEntryPriority::Low,
            sdk::PlanEntryStatus::Pending,
        ),
    ];
    agent.update(s, sdk::SessionUpdate::Plan(sdk::Plan::new(plan)));
    let commands = vec![
        sdk::AvailableCommand::new("web", "Search the web").input(
            sdk::AvailableCommandInput::Unstructured(sdk::UnstructuredCommandInput::new("query")),
        ),
        sdk::AvailableCommand::new("compact", "Compact the context"),
    ];
    agent.update(
        s,
        sdk::SessionUpdate::AvailableCommandsUpdate(sdk::AvailableCommandsUpdate::new(
            commands.clone(),
        )),
    );
    agent.update(
        s,
        sdk::SessionUpdate::CurrentModeUpdate(sdk::CurrentModeUpdate::new("code")),
    );
    agent.update(
        s,
        sdk::SessionUpdate::ConfigOptionUpdate(sdk::ConfigOptionUpdate::new(config_options(
            "fast", true,
        ))),
    );
    agent.update(
        s,
        sdk::SessionUpdate::UsageUpdate(
            sdk::UsageUpdate::new(52_000, 200_000).cost(sdk::Cost::new(0.25, "USD")),
        ),
    );
    agent.update(
        s,
        sdk::SessionUpdate::SessionInfoUpdate(
            sdk::SessionInfoUpdate::new()
                .title("Fix the build".to_owned())
                .updated_at("2025-06-01T12:00:00Z".to_owned()),
        ),
    );
    responder
        .respond(sdk::PromptResponse::new(sdk::StopReason::EndTurn))
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::EndTurn);

    // The SDK writes the updates before the response on one pipe, and we
    // apply updates as they are read: the model is complete now.
    let known = |b: sdk::ContentBlock| Content::Known(b);
    let expected = vec![
        Entry::UserMessage(Message {
            message_id: None,
            content: prompt.into_iter().map(known).collect(),
        }),
        Entry::Thought(Message {
            message_id: None,
            content: vec![Content::text("Let me look.")],
        }),
        Entry::AgentMessage(Message {
            message_id: Some("m1".into()),
            content: vec![Content::text("I'll fix it."), known(screenshot)],
        }),
        Entry::ToolCall(ToolCallState {
            id: "edit-1".into(),
            title: "Edit src/main.rs".into(),
            name: Some("edit_file".into()),
            kind: ToolKind::Edit,
            status: ToolStatus::Completed,
            content: vec![ToolContent::Diff {
                path: main_rs.clone(),
                old_text: Some("fn main() {}\n".into()),
                new_text: "fn main() -> () {}\n".into(),
            }],
            locations: vec![location],
            raw_input: Some(raw_input),
            raw_output: Some(json!({"ok": true})),
            agent_terminal: None,
        }),
        Entry::ToolCall(ToolCallState {
            id: "write-1".into(),
            title: "Write NOTES.md".into(),
            name: None,
            kind: ToolKind::Edit,
            status: ToolStatus::InProgress,
            content: vec![ToolContent::Diff {
                path: new_file,
                old_text: None,
                new_text: "notes\n".into(),
            }],
            locations: vec![],
            raw_input: None,
            raw_output: None,
            agent_terminal: None,
        }),
        Entry::ToolCall(ToolCallState {
            id: "run-1".into(),
            title: "cargo build (failed)".into(),
            name: Some("shell".into()),
            kind: ToolKind::Execute,
            status: ToolStatus::Failed,
            content: vec![
                ToolContent::Content {
                    content: Content::text("1 error"),
                },
                ToolContent::Terminal {
                    terminal_id: "term-7".into(),
                },
            ],
            locations: vec![],
            raw_input: Some(json!({"command": "cargo build"})),
            raw_output: None,
            agent_terminal: None,
        }),
    ];
    conn.with_session(&sid, |state| {
        assert_eq!(state.entries(), expected.as_slice());
        let plan: Vec<(&str, &str, &str)> = state
            .plan()
            .iter()
            .map(|e: &PlanEntry| (e.content.as_str(), e.priority.as_str(), e.status.as_str()))
            .collect();
        assert_eq!(
            plan,
            [
                ("Read the error", "high", "completed"),
                ("Fix main.rs", "medium", "in_progress"),
                ("Run tests", "low", "pending"),
            ]
        );
        assert_eq!(state.available_commands(), commands.as_slice());
        assert_eq!(state.current_mode(), Some("code"));
        assert_eq!(
            state.config_options(),
            config_options("fast", true).as_slice()
        );
        assert_eq!(
            state.usage(),
            Some(&Usage {
                used: 52_000,
                size: 200_000,
                cost: Some(json!({"amount": 0.25, "currency": "USD"})),
            })
        );
        assert_eq!(state.title(), Some("Fix the build"));
        assert_eq!(state.updated_at(), Some("2025-06-01T12:00:00Z"));
    })
    .unwrap();

    // A null title from their `MaybeUndefined` clears ours; an absent
    // `updatedAt` leaves it alone.
    let (turn, _req, responder) = start_turn(&conn, &mut agent, &sid, vec![text("next")]).await;
    agent.update(
        s,
        sdk::SessionUpdate::SessionInfoUpdate(sdk::SessionInfoUpdate::new().title(None)),
    );
    responder
        .respond(sdk::PromptResponse::new(sdk::StopReason::MaxTokens))
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::MaxTokens);
    conn.with_session(&sid, |state| {
        assert_eq!(state.title(), None);
        assert_eq!(state.updated_at(), Some("2025-06-01T12:00:00Z"));
    })
    .unwrap();
}

#[tokio::test]
async fn permission_decisions_decode_as_their_response() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::with_caps(all_caps(), PermissionMode::Manual(ptx));
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let (turn, _req, responder) = start_turn(&conn, &mut agent, &sid, vec![text("go")]).await;

    let options = vec![
        sdk::PermissionOption::new("yes", "Allow", sdk::PermissionOptionKind::AllowOnce),
        sdk::PermissionOption::new(
            "always",
            "Always allow",
            sdk::PermissionOptionKind::AllowAlways,
        ),
        sdk::PermissionOption::new("no", "Reject", sdk::PermissionOptionKind::RejectOnce),
        sdk::PermissionOption::new(
            "never",
            "Always reject",
            sdk::PermissionOptionKind::RejectAlways,
        ),
    ];
    let ask = |id: &str, command: &str| {
        sdk::RequestPermissionRequest::new(
            "sess-1",
            sdk::ToolCallUpdate::new(
                id.to_owned(),
                sdk::ToolCallUpdateFields::new()
                    .title(format!("Run {command}"))
                    .name("shell".to_owned())
                    .kind(sdk::ToolKind::Execute)
                    .raw_input(json!({ "command": command })),
            ),
            options.clone(),
        )
    };

    // Selected.
    let cx = agent.cx.clone();
    let request = ask("t1", "make");
    let call = tokio::spawn(async move { cx.send_request(request).block_task().await });
    let (request, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(request.session_id.0.as_ref(), "sess-1");
    assert_eq!(request.tool_call.tool_call_id.0.as_ref(), "t1");
    assert_eq!(request.tool_call.title.as_deref(), Some("Run make"));
    assert_eq!(request.tool_call.name.as_deref(), Some("shell"));
    assert_eq!(request.tool_call.kind, Some(ToolKind::Execute));
    assert_eq!(
        request.tool_call.raw_input,
        Some(json!({"command": "make"}))
    );
    let seen: Vec<(&str, &str, OptionKind)> = request
        .options
        .iter()
        .map(|o| (o.option_id.as_str(), o.name.as_str(), o.kind.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            ("yes", "Allow", OptionKind::AllowOnce),
            ("always", "Always allow", OptionKind::AllowAlways),
            ("no", "Reject", OptionKind::RejectOnce),
            ("never", "Always reject", OptionKind::RejectAlways),
        ]
    );
    answer
        .send(PermissionDecision::Selected {
            option_id: "yes".into(),
        })
        .unwrap();
    let response = tokio::time::timeout(WAIT, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        response.outcome,
        sdk::RequestPermissionOutcome::Selected(sdk::SelectedPermissionOutcome::new("yes"))
    );

    // Dismissed by the user.
    let cx = agent.cx.clone();
    let request = ask("t2", "rm -rf build");
    let call = tokio::spawn(async move { cx.send_request(request).block_task().await });
    let (_request, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    answer.send(PermissionDecision::Cancelled).unwrap();
    let response = tokio::time::timeout(WAIT, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(response.outcome, sdk::RequestPermissionOutcome::Cancelled);

    // "Always allow" is remembered for the same command: the next request
    // is answered without asking, with their allow_once option.
    let cx = agent.cx.clone();
    let request = ask("t3", "cargo test");
    let call = tokio::spawn(async move { cx.send_request(request).block_task().await });
    let (_request, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    answer
        .send(PermissionDecision::Selected {
            option_id: "always".into(),
        })
        .unwrap();
    let response = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(
        response.unwrap().outcome,
        sdk::RequestPermissionOutcome::Selected(sdk::SelectedPermissionOutcome::new("always"))
    );
    let response = agent.call(ask("t4", "cargo test")).await.unwrap();
    assert_eq!(
        response.outcome,
        sdk::RequestPermissionOutcome::Selected(sdk::SelectedPermissionOutcome::new("yes"))
    );
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::PermissionAutoAnswered { .. })
    })
    .await;
    assert!(prx.try_recv().is_err(), "the user must not be asked again");

    responder
        .respond(sdk::PromptResponse::new(sdk::StopReason::EndTurn))
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::EndTurn);
}

#[tokio::test]
async fn fs_requests_read_buffers_and_disk_and_write_disk() {
    let dir = tempfile::tempdir().unwrap();
    let (host, mut rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host.clone()).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let s = sid.0.to_string();

    let on_disk = dir.path().join("lines.txt");
    std::fs::write(&on_disk, "one\ntwo\nthree\nfour").unwrap();
    let read = |path: &Path| sdk::ReadTextFileRequest::new(s.clone(), path);

    let whole = agent.call(read(&on_disk)).await.unwrap();
    assert_eq!(whole.content, "one\ntwo\nthree\nfour");
    // `line` is 1-based, `limit` counts lines.
    let middle = agent.call(read(&on_disk).line(2).limit(2)).await.unwrap();
    assert_eq!(middle.content, "two\nthree\n");
    let tail = agent.call(read(&on_disk).line(3)).await.unwrap();
    assert_eq!(tail.content, "three\nfour");
    let first = agent.call(read(&on_disk).limit(1)).await.unwrap();
    assert_eq!(first.content, "one\n");

    // An open buffer's unsaved text wins over the disk.
    let buffered = dir.path().join("open.rs");
    std::fs::write(&buffered, "saved\n").unwrap();
    *host.buffers.buffer.lock().unwrap() =
        Some((buffered.clone(), "unsaved 1\nunsaved 2\n".into()));
    let from_buffer = agent.call(read(&buffered).line(2)).await.unwrap();
    assert_eq!(from_buffer.content, "unsaved 2\n");

    // A write creates a missing file (and its directory) on disk.
    let target = dir.path().join("new/dir/file.txt");
    agent
        .call(sdk::WriteTextFileRequest::new(
            s.clone(),
            &target,
            "héllo\n",
        ))
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "héllo\n");
    let edit = wait_event(&mut rx, |e| matches!(e, ClientEvent::FileEdited(_))).await;
    let ClientEvent::FileEdited(edit) = edit else {
        unreachable!()
    };
    assert_eq!(edit.old_content, None);
    assert_eq!(edit.new_content, "héllo\n");
    // Overwriting reports the old text.
    agent
        .call(sdk::WriteTextFileRequest::new(s.clone(), &target, "bye\n"))
        .await
        .unwrap();
    let edit = wait_event(&mut rx, |e| matches!(e, ClientEvent::FileEdited(_))).await;
    let ClientEvent::FileEdited(edit) = edit else {
        unreachable!()
    };
    assert_eq!(edit.old_content.as_deref(), Some("héllo\n"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "bye\n");

    // Paths outside the workspace: their side sees -32002 for both methods,
    // and nothing was written.
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "secret").unwrap();
    let err = agent.call(read(&secret)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");
    assert!(err.message.contains("secret.txt"), "{}", err.message);
    let escape = dir.path().join("../escape.txt");
    let err = agent
        .call(sdk::WriteTextFileRequest::new(s.clone(), &escape, "x"))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");
    assert!(!dir.path().parent().unwrap().join("escape.txt").exists());
    // A missing file inside the workspace is "not found" too.
    let err = agent
        .call(read(&dir.path().join("missing.txt")))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");
    // Reading past the end is bad params.
    let err = agent.call(read(&on_disk).line(9)).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidParams, "{err:?}");
}

#[tokio::test]
async fn fs_and_terminal_requests_are_refused_when_not_advertised() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(
        HostCapabilities {
            read_text_file: false,
            write_text_file: false,
            terminal: false,
            ..HostCapabilities::default()
        },
        PermissionMode::Pick("allow_once"),
    );
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let s = sid.0.to_string();
    let err = agent
        .call(sdk::ReadTextFileRequest::new(
            s.clone(),
            dir.path().join("a"),
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::MethodNotFound, "{err:?}");
    let err = agent
        .call(sdk::CreateTerminalRequest::new(s, "true"))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::MethodNotFound, "{err:?}");
}

#[tokio::test]
async fn terminals_create_output_wait_kill_and_release() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let (host, _rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let s = sid.0.to_string();

    // args, env and cwd decode on our side; the exit status on theirs.
    let created = agent
        .call(
            sdk::CreateTerminalRequest::new(s.clone(), "sh")
                .args(vec![
                    "-c".into(),
                    "printf '%s in %s\\n' \"$GREETING\" \"${PWD##*/}\"; exit 3".into(),
                ])
                .env(vec![sdk::EnvVariable::new("GREETING", "hi")])
                .cwd(dir.path().join("sub"))
                .output_byte_limit(1024),
        )
        .await
        .unwrap();
    let id = created.terminal_id.clone();
    assert!(!id.0.is_empty());
    let exit = agent
        .call(sdk::WaitForTerminalExitRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(exit.exit_status.exit_code, Some(3));
    assert_eq!(exit.exit_status.signal, None);
    let output = agent
        .call(sdk::TerminalOutputRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(output.output, "hi in sub\n");
    assert!(!output.truncated);
    assert_eq!(
        output.exit_status,
        Some(sdk::TerminalExitStatus::new().exit_code(3))
    );
    agent
        .call(sdk::ReleaseTerminalRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    // A released id is gone.
    let err = agent
        .call(sdk::TerminalOutputRequest::new(s.clone(), id))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");

    // The output limit keeps the newest bytes and says it truncated.
    let created = agent
        .call(
            sdk::CreateTerminalRequest::new(s.clone(), "printf")
                .args(vec!["abcdefgh".into()])
                .output_byte_limit(4),
        )
        .await
        .unwrap();
    let id = created.terminal_id;
    agent
        .call(sdk::WaitForTerminalExitRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    let output = agent
        .call(sdk::TerminalOutputRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(output.output, "efgh");
    assert!(output.truncated);
    agent
        .call(sdk::ReleaseTerminalRequest::new(s.clone(), id))
        .await
        .unwrap();

    // kill: the terminal stays valid and reports the signal.
    let created = agent
        .call(sdk::CreateTerminalRequest::new(s.clone(), "sleep").args(vec!["600".into()]))
        .await
        .unwrap();
    let id = created.terminal_id;
    let running = agent
        .call(sdk::TerminalOutputRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(running.exit_status, None);
    agent
        .call(sdk::KillTerminalRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    let exit = agent
        .call(sdk::WaitForTerminalExitRequest::new(s.clone(), id.clone()))
        .await
        .unwrap();
    assert_eq!(exit.exit_status.exit_code, None);
    assert_eq!(exit.exit_status.signal.as_deref(), Some("SIGKILL"));
    agent
        .call(sdk::ReleaseTerminalRequest::new(s.clone(), id))
        .await
        .unwrap();

    // A cwd outside the workspace is refused with -32002.
    let outside = tempfile::tempdir().unwrap();
    let err = agent
        .call(sdk::CreateTerminalRequest::new(s, "true").cwd(outside.path().to_path_buf()))
        .await
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::ResourceNotFound, "{err:?}");
}

#[tokio::test]
async fn cancel_reaches_the_agent_and_the_turn_ends_once_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::with_caps(all_caps(), PermissionMode::Manual(ptx));
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let (turn, _req, responder) = start_turn(&conn, &mut agent, &sid, vec![text("go")]).await;

    agent.update(
        "sess-1",
        sdk::SessionUpdate::ToolCall(
            sdk::ToolCall::new("t1", "Delete target/")
                .kind(sdk::ToolKind::Delete)
                .status(sdk::ToolCallStatus::Pending),
        ),
    );
    let cx = agent.cx.clone();
    let permission = tokio::spawn(async move {
        cx.send_request(sdk::RequestPermissionRequest::new(
            "sess-1",
            sdk::ToolCallUpdate::new("t1", sdk::ToolCallUpdateFields::new()),
            vec![sdk::PermissionOption::new(
                "ok",
                "Allow",
                sdk::PermissionOptionKind::AllowOnce,
            )],
        ))
        .block_task()
        .await
    });
    // The user sees the prompt, merged with the tool call, and does not
    // answer; the turn is cancelled instead.
    let (request, _never_answered) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(request.tool_call.title.as_deref(), Some("Delete target/"));
    conn.cancel(&sid).unwrap();

    let cancel = agent.expect_cancel().await;
    assert_eq!(cancel.session_id.0.as_ref(), "sess-1");
    // The pending permission request was answered `cancelled`, which their
    // type decodes.
    let response = tokio::time::timeout(WAIT, permission)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(response.outcome, sdk::RequestPermissionOutcome::Cancelled);
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::PermissionCancelled { .. })
    })
    .await;
    let status = conn
        .with_session(&sid, |s| s.tool_call(&"t1".into()).unwrap().status.clone())
        .unwrap();
    assert_eq!(status, ToolStatus::Cancelled);

    // Updates after the cancel still apply; the turn ends with their stop
    // reason, once.
    agent.update(
        "sess-1",
        sdk::SessionUpdate::AgentMessageChunk(chunk("Stopped.")),
    );
    responder
        .respond(sdk::PromptResponse::new(sdk::StopReason::Cancelled))
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::Cancelled);
    let last = conn
        .with_session(&sid, |s| s.entries().last().cloned())
        .unwrap();
    assert_eq!(
        last,
        Some(Entry::AgentMessage(Message {
            message_id: None,
            content: vec![Content::text("Stopped.")],
        }))
    );
    assert!(
        agent.silent_for(200).await,
        "nothing else reaches the agent"
    );
}

#[tokio::test]
async fn set_mode_and_config_options_decode_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;

    let c = conn.clone();
    let s = sid.clone();
    let call = tokio::spawn(async move { c.set_mode(&s, "code").await });
    let (req, responder) = agent.expect_set_mode().await;
    assert_eq!(req.session_id.0.as_ref(), "sess-1");
    assert_eq!(req.mode_id.0.as_ref(), "code");
    responder
        .respond(sdk::SetSessionModeResponse::new())
        .unwrap();
    call.await.unwrap().unwrap();
    assert_eq!(
        conn.with_session(&sid, |s| s.current_mode().map(str::to_owned))
            .unwrap()
            .as_deref(),
        Some("code")
    );

    // A select value (no `type` on the wire).
    let c = conn.clone();
    let s = sid.clone();
    let call = tokio::spawn(async move {
        c.set_config_option(&s, "model", ConfigValue::Id("fast".into()))
            .await
    });
    let (req, responder) = agent.expect_set_config_option().await;
    assert_eq!(req.session_id.0.as_ref(), "sess-1");
    assert_eq!(req.config_id.0.as_ref(), "model");
    assert_eq!(req.value, sdk::SessionConfigOptionValue::value_id("fast"));
    responder
        .respond(sdk::SetSessionConfigOptionResponse::new(config_options(
            "fast", false,
        )))
        .unwrap();
    assert_eq!(call.await.unwrap().unwrap(), config_options("fast", false));

    // A boolean value.
    let c = conn.clone();
    let s = sid.clone();
    let call = tokio::spawn(async move {
        c.set_config_option(&s, "thinking", ConfigValue::Bool(true))
            .await
    });
    let (req, responder) = agent.expect_set_config_option().await;
    assert_eq!(req.config_id.0.as_ref(), "thinking");
    assert_eq!(req.value, sdk::SessionConfigOptionValue::boolean(true));
    responder
        .respond(sdk::SetSessionConfigOptionResponse::new(config_options(
            "fast", true,
        )))
        .unwrap();
    assert_eq!(call.await.unwrap().unwrap(), config_options("fast", true));
    assert_eq!(
        conn.with_session(&sid, |s| s.config_options().to_vec())
            .unwrap(),
        config_options("fast", true)
    );

    // An error from their side reaches us with its code, and the model
    // keeps the last good state.
    let c = conn.clone();
    let s = sid.clone();
    let call = tokio::spawn(async move {
        c.set_config_option(&s, "model", ConfigValue::Id("huge".into()))
            .await
    });
    let (_req, responder) = agent.expect_set_config_option().await;
    responder
        .respond_with_error(sdk::Error::invalid_params())
        .unwrap();
    let err = call.await.unwrap().unwrap_err();
    match &err {
        acp_client::Error::Rpc { error, .. } => assert_eq!(error.code, -32602, "{err}"),
        other => panic!("expected the agent's error, got {other}"),
    }
    assert_eq!(
        conn.with_session(&sid, |s| s.config_options().to_vec())
            .unwrap(),
        config_options("fast", true)
    );
}

#[tokio::test]
async fn load_session_replays_history_into_a_fresh_model() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host).await;
    initialize(
        &conn,
        &mut agent,
        sdk::AgentCapabilities::new().load_session(true),
    )
    .await;

    let sid: SessionId = "old-7".into();
    let c = conn.clone();
    let s = sid.clone();
    let mcp = vec![sdk::McpServer::Stdio(sdk::McpServerStdio::new(
        "files",
        "/usr/bin/mcp-files",
    ))];
    let params = SessionParams {
        mcp_servers: mcp.clone(),
        ..SessionParams::new(dir.path())
    };
    let load = tokio::spawn(async move { c.load_session(&s, params).await });
    let (req, responder) = agent.expect_load_session().await;
    assert_eq!(req.session_id.0.as_ref(), "old-7");
    assert_eq!(req.cwd, dir.path());
    assert_eq!(req.mcp_servers, mcp);

    // The replay, before the answer.
    agent.update(
        "old-7",
        sdk::SessionUpdate::UserMessageChunk(chunk("What is 2+2?")),
    );
    agent.update(
        "old-7",
        sdk::SessionUpdate::AgentMessageChunk(chunk("Let me check. ")),
    );
    agent.update(
        "old-7",
        sdk::SessionUpdate::ToolCall(
            sdk::ToolCall::new("calc", "Calculate")
                .kind(sdk::ToolKind::Think)
                .status(sdk::ToolCallStatus::Completed),
        ),
    );
    agent.update("old-7", sdk::SessionUpdate::AgentMessageChunk(chunk("4.")));
    agent.update(
        "old-7",
        sdk::SessionUpdate::UserMessageChunk(chunk("Thanks")),
    );
    agent.update(
        "old-7",
        sdk::SessionUpdate::CurrentModeUpdate(sdk::CurrentModeUpdate::new("code")),
    );
    responder
        .respond(
            sdk::LoadSessionResponse::new()
                .modes(sdk::SessionModeState::new("code", modes().available_modes))
                .config_options(config_options("smart", true)),
        )
        .unwrap();
    let started = load.await.unwrap().unwrap();
    assert_eq!(started.session_id, sid);
    assert_eq!(
        started.modes.map(|m| m.current_mode_id.0.to_string()),
        Some("code".to_owned())
    );
    assert_eq!(started.config_options, config_options("smart", true));

    let said = |s: &str| Message {
        message_id: None,
        content: vec![Content::text(s)],
    };
    let expected = vec![
        Entry::UserMessage(said("What is 2+2?")),
        Entry::AgentMessage(said("Let me check. ")),
        Entry::ToolCall(ToolCallState {
            kind: ToolKind::Think,
            status: ToolStatus::Completed,
            title: "Calculate".into(),
            ..ToolCallState::placeholder("calc".into())
        }),
        Entry::AgentMessage(said("4.")),
        Entry::UserMessage(said("Thanks")),
    ];
    conn.with_session(&sid, |s| {
        assert_eq!(s.entries(), expected.as_slice());
        assert_eq!(s.current_mode(), Some("code"));
        assert_eq!(s.available_modes().len(), 2);
        assert_eq!(s.config_options(), config_options("smart", true).as_slice());
    })
    .unwrap();

    // The loaded session takes prompts like a new one.
    let (turn, req, responder) = start_turn(&conn, &mut agent, &sid, vec![text("again")]).await;
    assert_eq!(req.session_id.0.as_ref(), "old-7");
    responder
        .respond(sdk::PromptResponse::new(sdk::StopReason::EndTurn))
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::EndTurn);
}

#[tokio::test]
async fn list_sessions_follows_their_cursor() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host).await;
    initialize(
        &conn,
        &mut agent,
        sdk::AgentCapabilities::new().session_capabilities(
            sdk::SessionCapabilities::new().list(sdk::SessionListCapabilities::new()),
        ),
    )
    .await;

    let older = sdk::SessionInfo::new("a", dir.path())
        .title("Older".to_owned())
        .updated_at("2025-01-01T00:00:00Z".to_owned());
    let newer = sdk::SessionInfo::new("b", dir.path())
        .title("Newer".to_owned())
        .updated_at("2025-02-01T00:00:00Z".to_owned());
    let c = conn.clone();
    let cwd = dir.path().to_path_buf();
    let list = tokio::spawn(async move { c.list_all_sessions(Some(&cwd)).await });

    let (req, responder) = agent.expect_list_sessions().await;
    assert_eq!(req.cwd.as_deref(), Some(dir.path()));
    assert_eq!(req.cursor, None);
    responder
        .respond(
            sdk::ListSessionsResponse::new(vec![older.clone()]).next_cursor("page-2".to_owned()),
        )
        .unwrap();
    let (req, responder) = agent.expect_list_sessions().await;
    assert_eq!(req.cursor.as_deref(), Some("page-2"));
    responder
        .respond(sdk::ListSessionsResponse::new(vec![newer.clone()]))
        .unwrap();
    // Newest first, every field as they sent it.
    assert_eq!(list.await.unwrap().unwrap(), vec![newer, older]);
    assert!(agent.silent_for(200).await, "no third page is asked for");
}

#[tokio::test]
async fn cancel_request_works_in_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::with_caps(all_caps(), PermissionMode::Manual(ptx));
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;

    // The agent withdraws a permission request with `$/cancel_request`:
    // the editor's prompt is closed and their side gets -32800.
    let sent = agent.cx.send_request(sdk::RequestPermissionRequest::new(
        "sess-1",
        sdk::ToolCallUpdate::new(
            "t1",
            sdk::ToolCallUpdateFields::new().title("Run ls".to_owned()),
        ),
        vec![sdk::PermissionOption::new(
            "ok",
            "Allow",
            sdk::PermissionOptionKind::AllowOnce,
        )],
    ));
    let (request, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(request.tool_call.title.as_deref(), Some("Run ls"));
    sent.cancel().unwrap();
    let err = tokio::time::timeout(WAIT, sent.block_task())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RequestCancelled, "{err:?}");
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::PermissionCancelled { .. })
    })
    .await;
    // The editor answering late changes nothing.
    let _ = answer.send(PermissionDecision::Selected {
        option_id: "ok".into(),
    });

    // We withdraw a request whose caller gave up (the same path a timeout
    // takes): their responder sees the cancellation of exactly that request.
    let c = conn.clone();
    let s = sid.clone();
    let call = tokio::spawn(async move { c.set_mode(&s, "code").await });
    let (_req, responder) = agent.expect_set_mode().await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let cancellation = responder.cancellation();
    tokio::time::timeout(WAIT, cancellation.cancelled())
        .await
        .expect("the SDK agent never saw our $/cancel_request");
    // Their late answer is dropped quietly; the connection keeps working.
    responder
        .respond_with_error(sdk::Error::request_cancelled())
        .unwrap();
    let c = conn.clone();
    let s = sid.clone();
    let call = tokio::spawn(async move { c.set_mode(&s, "ask").await });
    let (req, responder) = agent.expect_set_mode().await;
    assert_eq!(req.mode_id.0.as_ref(), "ask");
    responder
        .respond(sdk::SetSessionModeResponse::new())
        .unwrap();
    call.await.unwrap().unwrap();
    assert!(!conn.is_closed());
}

#[tokio::test]
async fn resume_and_close_decode_on_both_sides() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host).await;
    let mut session_caps = sdk::SessionCapabilities::new();
    session_caps.resume = Some(sdk::SessionResumeCapabilities::new());
    session_caps.close = Some(sdk::SessionCloseCapabilities::new());
    initialize(
        &conn,
        &mut agent,
        sdk::AgentCapabilities::new().session_capabilities(session_caps),
    )
    .await;

    let sid: SessionId = "kept".into();
    let c = conn.clone();
    let s = sid.clone();
    let cwd = dir.path().to_path_buf();
    let resume = tokio::spawn(async move { c.resume_session(&s, SessionParams::new(cwd)).await });
    let (req, responder) = agent.expect_resume_session().await;
    assert_eq!(req.session_id.0.as_ref(), "kept");
    assert_eq!(req.cwd, dir.path());
    assert!(req.mcp_servers.is_empty());
    responder
        .respond(sdk::ResumeSessionResponse::new().modes(modes()))
        .unwrap();
    let started = resume.await.unwrap().unwrap();
    assert_eq!(started.modes, Some(modes()));
    // No replay: the model is empty but knows the modes.
    conn.with_session(&sid, |s| {
        assert!(s.entries().is_empty());
        assert_eq!(s.current_mode(), Some("ask"));
    })
    .unwrap();

    let c = conn.clone();
    let s = sid.clone();
    let close = tokio::spawn(async move { c.close_session(&s).await });
    let (req, responder) = agent.expect_close_session().await;
    assert_eq!(req.session_id.0.as_ref(), "kept");
    responder.respond(sdk::CloseSessionResponse::new()).unwrap();
    close.await.unwrap().unwrap();
    assert!(conn.with_session(&sid, |_| ()).is_none());
}

#[tokio::test]
async fn elicitations_from_the_sdk_agent_round_trip_in_both_modes_and_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let caps = HostCapabilities {
        elicitation_form: true,
        elicitation_url: true,
        ..all_caps()
    };
    let (host, mut rx) = TestHost::with_caps(caps, PermissionMode::Pick("allow_once"));
    let mut asked = host.take_elicitations();
    let (conn, mut agent) = start(host).await;

    // The SDK decodes our advertisement into its typed capabilities.
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (req, responder) = agent.expect_initialize().await;
    let elicitation = req
        .client_capabilities
        .elicitation
        .clone()
        .expect("advertised");
    assert!(elicitation.form.is_some() && elicitation.url.is_some());
    responder
        .respond(sdk::InitializeResponse::new(ProtocolVersion::V1))
        .unwrap();
    init.await.unwrap().unwrap();
    let c = conn.clone();
    let cwd = dir.path().to_path_buf();
    let new = tokio::spawn(async move { c.new_session(SessionParams::new(cwd)).await });
    let (_req, responder) = agent.expect_new_session().await;
    responder
        .respond(sdk::NewSessionResponse::new("sess-1"))
        .unwrap();
    let sid = new.await.unwrap().unwrap().session_id;

    // A form tied to the session, built with the SDK's schema builders.
    let schema = sdk::ElicitationSchema::new()
        .string("name", true)
        .integer("age", 0, 150, false)
        .boolean("subscribe", false);
    let form = sdk::ElicitationFormMode::new(sdk::ElicitationSessionScope::new("sess-1"), schema);
    let call = agent.call(sdk::CreateElicitationRequest::new(form, "Who are you?"));
    let answer = async {
        let (req, tx) = tokio::time::timeout(WAIT, asked.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(req.message, "Who are you?");
        assert_eq!(req.scope.session_id(), Some(&sid));
        let acp_client::elicitation::ElicitationMode::Form { schema } = &req.mode else {
            panic!("not a form: {req:?}");
        };
        let content = schema
            .validate(
                json!({"name": "Ada", "age": 36, "subscribe": true})
                    .as_object()
                    .unwrap(),
            )
            .unwrap();
        tx.send(acp_client::elicitation::ElicitationResponse::Accept { content })
            .unwrap();
    };
    let (response, ()) = tokio::join!(call, answer);
    let sdk::ElicitationAction::Accept(accept) = response.unwrap().action else {
        panic!("not accepted");
    };
    let content = accept.content.unwrap();
    assert_eq!(
        content["name"],
        sdk::ElicitationContentValue::String("Ada".into())
    );
    assert_eq!(content["age"], sdk::ElicitationContentValue::Integer(36));
    assert_eq!(
        content["subscribe"],
        sdk::ElicitationContentValue::Boolean(true)
    );

    // A URL scoped to a request, declined.
    let url = sdk::ElicitationUrlMode::new(
        sdk::ElicitationRequestScope::new(sdk::RequestId::Number(99)),
        "e-1",
        "https://example.com/consent",
    );
    let call = agent.call(sdk::CreateElicitationRequest::new(url, "Consent"));
    let answer = async {
        let (req, tx) = tokio::time::timeout(WAIT, asked.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(req.scope.session_id().is_none());
        tx.send(acp_client::elicitation::ElicitationResponse::Decline)
            .unwrap();
    };
    let (response, ()) = tokio::join!(call, answer);
    assert!(matches!(
        response.unwrap().action,
        sdk::ElicitationAction::Decline
    ));

    // A URL tied to the session, accepted, then completed by the agent.
    let url = sdk::ElicitationUrlMode::new(
        sdk::ElicitationSessionScope::new("sess-1"),
        "e-2",
        "https://example.com/pay",
    );
    let call = agent.call(sdk::CreateElicitationRequest::new(url, "Pay"));
    let answer = async {
        let (_req, tx) = tokio::time::timeout(WAIT, asked.recv())
            .await
            .unwrap()
            .unwrap();
        tx.send(acp_client::elicitation::ElicitationResponse::Accept {
            content: serde_json::Map::new(),
        })
        .unwrap();
    };
    let (response, ()) = tokio::join!(call, answer);
    assert!(matches!(
        response.unwrap().action,
        sdk::ElicitationAction::Accept(_)
    ));
    agent.notify(
        "elicitation/complete",
        json!(sdk::CompleteElicitationNotification::new("e-2")),
    );
    let done = wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::ElicitationCompleted { .. })
    })
    .await;
    assert!(matches!(
        done,
        ClientEvent::ElicitationCompleted { elicitation_id, .. } if elicitation_id.0 == "e-2"
    ));
}
