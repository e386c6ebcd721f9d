//! A session's life with the SDK agent: initialize and authenticate, new,
//! modes and config options, load, list, resume and close.

use acp_client::session::update::{Content, SessionId, ToolKind, ToolStatus};
use acp_client::session::{Entry, Message, ToolCallState};
use acp_client::{ConfigValue, HostCapabilities, SessionParams, StopReason};
use agent_client_protocol_schema::v1 as sdk;
use agent_client_protocol_schema::ProtocolVersion;

use super::sdk_agent::start;
use super::support::{PermissionMode, TestHost};
use super::{all_caps, chunk, config_options, initialize, modes, open_session, start_turn, text};

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
