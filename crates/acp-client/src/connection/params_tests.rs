//! The requests built from the schema crate's types are byte for byte the
//! JSON the hand-written `json!` literals sent before (keys in the same
//! order: serde_json keeps insertion order in this workspace).

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::path::Path;

use serde_json::json;

use super::requests::{self, OpenSession};
use super::{to_params, ConfigValue, SystemPromptMode};
use crate::schema;

fn sid() -> schema::SessionId {
    schema::SessionId::from("s-1".to_owned())
}

fn same(built: serde_json::Value, before: serde_json::Value) {
    assert_eq!(
        serde_json::to_string(&built).unwrap(),
        serde_json::to_string(&before).unwrap()
    );
}

#[test]
fn requests_keep_their_wire_bytes() {
    same(
        to_params(&schema::AuthenticateRequest::new("login".to_owned())).unwrap(),
        json!({ "methodId": "login" }),
    );
    same(to_params(&schema::LogoutRequest::new()).unwrap(), json!({}));
    same(
        to_params(&schema::CloseSessionRequest::new(sid())).unwrap(),
        json!({ "sessionId": "s-1" }),
    );
    same(
        to_params(&schema::DeleteSessionRequest::new(sid())).unwrap(),
        json!({ "sessionId": "s-1" }),
    );
    same(
        to_params(&schema::SetSessionModeRequest::new(
            sid(),
            "plan".to_owned(),
        ))
        .unwrap(),
        json!({ "sessionId": "s-1", "modeId": "plan" }),
    );
    let content = vec![schema::ContentBlock::from("hi")];
    same(
        to_params(&schema::PromptRequest::new(sid(), content.clone())).unwrap(),
        json!({ "sessionId": "s-1", "prompt": content }),
    );
    same(
        to_params(&schema::CancelNotification::new(sid())).unwrap(),
        json!({ "sessionId": "s-1" }),
    );
}

#[test]
fn session_list_leaves_out_what_is_not_given() {
    let list = |cwd: Option<&Path>, cursor: Option<&str>| {
        to_params(
            &schema::ListSessionsRequest::new()
                .cwd(cwd.map(Path::to_path_buf))
                .cursor(cursor.map(str::to_owned)),
        )
        .unwrap()
    };
    same(list(None, None), json!({}));
    same(
        list(Some(Path::new("/w")), Some("c2")),
        json!({ "cwd": "/w", "cursor": "c2" }),
    );
    same(list(None, Some("c2")), json!({ "cursor": "c2" }));
}

fn stdio() -> schema::McpServer {
    schema::McpServer::Stdio(schema::McpServerStdio::new("editor", "/bin/bridge"))
}

fn open(servers: Vec<schema::McpServer>, v2: bool) -> OpenSession {
    OpenSession::new("/w".into(), servers, v2)
}

#[test]
fn session_new_is_the_schemas_request_with_an_empty_server_list_kept() {
    let built = to_params(&open(vec![], false)).unwrap();
    same(built.clone(), json!({ "cwd": "/w", "mcpServers": [] }));
    // The schema's v1 `session/new` (and load) always carry `mcpServers`:
    // the one builder is theirs field for field.
    same(
        built,
        to_params(&schema::NewSessionRequest::new("/w")).unwrap(),
    );
    let mut load = open(vec![stdio()], false);
    load.session_id = Some(sid());
    let mut expected = schema::LoadSessionRequest::new(sid(), "/w");
    expected.mcp_servers = vec![stdio()];
    assert_eq!(
        to_params(&load).unwrap(),
        to_params(&expected).unwrap(),
        "same fields, whatever their order"
    );
}

#[test]
fn session_resume_and_fork_send_an_empty_server_list_and_leave_out_what_is_unset() {
    // The schema's `ResumeSessionRequest` would leave the empty list out;
    // agents have always been sent it.
    let mut resume = open(vec![], false);
    resume.session_id = Some(sid());
    same(
        to_params(&resume).unwrap(),
        json!({ "cwd": "/w", "mcpServers": [], "sessionId": "s-1" }),
    );
    let mut fork = open(vec![], false);
    fork.session_id = Some(sid());
    fork.cursor_id = Some(schema::CursorId::from("c-7"));
    same(
        to_params(&fork).unwrap(),
        json!({ "cwd": "/w", "mcpServers": [], "sessionId": "s-1", "cursorId": "c-7" }),
    );
}

#[test]
fn session_params_carry_directories_and_system_prompt_when_set() {
    let mut params = open(vec![], false);
    params.additional_directories = vec!["/lib".into()];
    params.system_prompt = Some(requests::system_prompt(
        SystemPromptMode::Override,
        "be brief".into(),
    ));
    same(
        to_params(&params).unwrap(),
        json!({
            "cwd": "/w",
            "mcpServers": [],
            "additionalDirectories": ["/lib"],
            "systemPrompt": { "mode": "override", "content": [{ "type": "text", "text": "be brief" }] },
        }),
    );
    let append = requests::system_prompt(SystemPromptMode::Append, "x".into());
    same(
        to_params(&append).unwrap(),
        json!({ "mode": "append", "content": [{ "type": "text", "text": "x" }] }),
    );
}

#[test]
fn v2_tags_stdio_servers_and_loads_with_a_replay_from_the_start() {
    let http = schema::McpServer::Http(schema::McpServerHttp::new("web", "http://h/mcp"));
    let stdio_v1 = json!({ "name": "editor", "command": "/bin/bridge", "args": [], "env": [] });
    same(
        to_params(&open(vec![stdio(), http.clone()], false)).unwrap(),
        json!({ "cwd": "/w", "mcpServers": [stdio_v1, http] }),
    );
    let mut load = open(vec![stdio(), http.clone()], true).replay_from_start();
    load.session_id = Some(sid());
    same(
        to_params(&load).unwrap(),
        json!({
            "cwd": "/w",
            "mcpServers": [
                { "name": "editor", "command": "/bin/bridge", "args": [], "env": [], "type": "stdio" },
                http,
            ],
            "sessionId": "s-1",
            "replayFrom": { "type": "start" },
        }),
    );
}

#[test]
fn set_config_option_tags_an_id_only_on_v2() {
    let set = |value: ConfigValue, v2: bool| {
        requests::set_config_option(&sid(), "model", value, v2).unwrap()
    };
    same(
        set(ConfigValue::Id("fast".into()), false),
        json!({ "sessionId": "s-1", "configId": "model", "value": "fast" }),
    );
    same(
        set(ConfigValue::Id("fast".into()), true),
        json!({ "sessionId": "s-1", "configId": "model", "type": "id", "value": "fast" }),
    );
    for v2 in [false, true] {
        same(
            set(ConfigValue::Bool(true), v2),
            json!({ "sessionId": "s-1", "configId": "model", "type": "boolean", "value": true }),
        );
    }
}

fn initialize(v2: bool, elicitation: bool) -> serde_json::Value {
    let host = crate::edits::host::HostCapabilities {
        elicitation_form: elicitation,
        elicitation_url: elicitation,
        ..Default::default()
    };
    let client_info = schema::Implementation::new("acp-nvim", "0.1.0");
    let caps = requests::client_capabilities(&host, true);
    let v2_caps = v2.then(|| requests::client_capabilities_v2(&host, true));
    to_params(&requests::Initialize {
        protocol_version: match v2 {
            true => agent_client_protocol_schema::ProtocolVersion::V2,
            false => agent_client_protocol_schema::ProtocolVersion::V1,
        },
        client_capabilities: caps,
        info: v2.then(|| client_info.clone()),
        client_info,
        capabilities: v2_caps,
    })
    .unwrap()
}

/// The `initialize` params as the hand-written literal sent them.
fn initialize_before(elicitation: serde_json::Value) -> serde_json::Value {
    json!({
        "protocolVersion": 1,
        "clientCapabilities": {
            "fs": { "readTextFile": true, "writeTextFile": true },
            "terminal": true,
            "auth": { "terminal": true },
            "elicitation": elicitation,
            "session": {
                "configOptions": { "boolean": {} },
                "notices": {},
                "compaction": {},
                "cursors": {},
            },
            "plan": {},
            "subagents": {},
            "_meta": { "terminal_output_delta": true },
        },
        "clientInfo": { "name": "acp-nvim", "version": "0.1.0" },
    })
}

#[test]
fn initialize_sends_the_capabilities_it_always_did() {
    // Compared as values: the same keys and values (key order aside), and
    // an `elicitation` the host does not serve is `null`, not left out.
    assert_eq!(initialize(false, false), initialize_before(json!(null)));
    let both = json!({ "form": {}, "url": {} });
    assert_eq!(initialize(false, true), initialize_before(both.clone()));
    let mut v2 = initialize_before(both.clone());
    v2["protocolVersion"] = json!(2);
    v2["info"] = v2["clientInfo"].clone();
    // v2 marks terminal auth with an object (the v1 boolean sent before
    // decodes as "not supported" in a v2 SDK agent).
    v2["capabilities"] = json!({ "auth": { "terminal": {} }, "elicitation": both });
    assert_eq!(initialize(true, true), v2);
    let v2_without = initialize(true, false);
    assert_eq!(
        v2_without["capabilities"],
        json!({ "auth": { "terminal": {} }, "elicitation": null })
    );
}

/// The mapping as it was, on JSON (kept here as the oracle): a v1-shaped
/// object decoded once by the schema's `AgentCapabilities`.
fn v1_capabilities_before(
    response: &agent_client_protocol_schema::v2::InitializeResponse,
) -> schema::AgentCapabilities {
    let session = serde_json::to_value(&response.capabilities.session).unwrap();
    let mut v1 = json!({ "loadSession": false });
    if let serde_json::Value::Object(session) = &session {
        let mut session_caps = json!({ "list": {}, "resume": {}, "close": {} });
        for key in ["systemPrompt", "additionalDirectories", "delete"] {
            if let Some(v) = session.get(key).filter(|v| !v.is_null()) {
                session_caps[key] = v.clone();
            }
        }
        v1["loadSession"] = json!(true);
        v1["sessionCapabilities"] = session_caps;
        if let Some(serde_json::Value::Object(prompt)) = session.get("prompt") {
            // Fixed since: v2's markers are objects, v1's booleans (the
            // object itself decoded as `false`).
            let marked = |key: &str| json!(prompt.get(key).is_some_and(|m| !m.is_null()));
            v1["promptCapabilities"] = json!({
                "image": marked("image"),
                "audio": marked("audio"),
                "embeddedContext": marked("embeddedContext"),
            });
        }
        if !response.auth_methods.is_empty() {
            v1["auth"] = json!({ "logout": {} });
        }
        if let Some(serde_json::Value::Object(mcp)) = session.get("mcp") {
            let mut caps = serde_json::Map::new();
            for (transport, marker) in mcp {
                if transport != "_meta" {
                    caps.insert(transport.clone(), json!(!marker.is_null()));
                }
            }
            v1["mcpCapabilities"] = serde_json::Value::Object(caps);
        }
    }
    serde_json::from_value(v1).unwrap()
}

/// A v2 agent's answer to `initialize` read as v1 capabilities: what the
/// JSON mapping it replaces gave, for answers from bare to full.
#[test]
fn v2_capabilities_map_onto_v1_as_before() {
    let info = json!({ "name": "a", "version": "0" });
    let answers = [
        json!({ "protocolVersion": 2, "info": info, "capabilities": {} }),
        json!({ "protocolVersion": 2, "info": info, "capabilities": { "session": {} } }),
        json!({
            "protocolVersion": 2,
            "info": info,
            "capabilities": { "session": {
                "prompt": { "image": {}, "embeddedContext": {} },
                "systemPrompt": { "mode": { "override": {} } },
                "additionalDirectories": {},
                "delete": {},
                "mcp": { "stdio": {}, "http": {} },
            } },
            "authMethods": [{ "type": "agent", "methodId": "login", "name": "Log in" }],
        }),
        json!({
            "protocolVersion": 2,
            "info": info,
            "capabilities": { "session": { "mcp": { "sse": {}, "_meta": {} } } },
        }),
    ];
    for answer in &answers {
        let response: agent_client_protocol_schema::v2::InitializeResponse =
            serde_json::from_value(answer.clone()).unwrap();
        let caps = super::handshake::v1_capabilities(&response).unwrap();
        assert_eq!(caps, v1_capabilities_before(&response), "{answer}");
    }
    // The content types a v2 agent marks are offered (images and embedded
    // files here, no audio).
    let response: agent_client_protocol_schema::v2::InitializeResponse =
        serde_json::from_value(answers[2].clone()).unwrap();
    let prompt = super::handshake::v1_capabilities(&response)
        .unwrap()
        .prompt_capabilities;
    assert_eq!(
        (prompt.image, prompt.audio, prompt.embedded_context),
        (true, false, true)
    );
    let full: agent_client_protocol_schema::v2::InitializeResponse =
        serde_json::from_value(json!({
            "protocolVersion": 2,
            "info": info,
            "capabilities": { "session": { "mcp": { "http": {} } } },
            "authMethods": [{ "type": "agent", "methodId": "login", "name": "Log in" }],
        }))
        .unwrap();
    let caps = super::handshake::v1_capabilities(&full).unwrap();
    assert!(caps.load_session && caps.mcp_capabilities.http && !caps.mcp_capabilities.sse);
    assert!(caps.auth.logout.is_some());
}

#[test]
fn a_cwd_that_is_not_utf8_is_an_error_not_a_panic() {
    use std::os::unix::ffi::OsStrExt;
    let cwd = Path::new(std::ffi::OsStr::from_bytes(b"/w/\xff")).to_path_buf();
    let err = to_params(&OpenSession::new(cwd, vec![], false)).unwrap_err();
    assert!(err.to_string().contains("could not be encoded"), "{err}");
}
