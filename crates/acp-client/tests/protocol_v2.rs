//! ACP v2 beside v1: negotiation both ways, a v2 turn ended by its idle
//! `state_update`, v2 permission requests and upserts, against the fake
//! agent's v2 mode and a hand-scripted peer for the hostile cases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use acp_client::session::update::{ToolContent, ToolStatus};
use acp_client::session::{Entry, SessionChange};
use acp_client::{
    ClientEvent, Connection, ConnectionOptions, Error, ProtocolVersion, SessionParams, StopReason,
};
use serde_json::{json, Value};
use support::*;

fn v2_options() -> ConnectionOptions {
    ConnectionOptions {
        protocol_version: ProtocolVersion::V2,
        ..ConnectionOptions::default()
    }
}

struct Agent {
    conn: Connection,
    host: Arc<TestHost>,
    rx: tokio::sync::mpsc::UnboundedReceiver<ClientEvent>,
    dir: tempfile::TempDir,
}

async fn spawn(scenario: Value, options: ConnectionOptions) -> Agent {
    let dir = tempfile::tempdir().unwrap();
    let path = acp_testkit::write_scenario(dir.path(), &scenario);
    let (host, rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let conn = Connection::spawn(&fake_agent(&path, dir.path()), host.clone(), options).unwrap();
    Agent {
        conn,
        host,
        rx,
        dir,
    }
}

async fn prompt(
    conn: &Connection,
    sid: &acp_client::session::update::SessionId,
    text_: &str,
) -> StopReason {
    tokio::time::timeout(WAIT, conn.prompt(sid, vec![text(text_)]))
        .await
        .expect("turn timed out")
        .unwrap()
}

fn user_messages(conn: &Connection, sid: &acp_client::session::update::SessionId) -> Vec<String> {
    conn.with_session(sid, |s| {
        s.entries()
            .iter()
            .filter_map(|e| match e {
                Entry::UserMessage(m) => Some(
                    m.content
                        .iter()
                        .filter_map(|c| c.as_text())
                        .collect::<String>(),
                ),
                _ => None,
            })
            .collect()
    })
    .unwrap()
}

#[tokio::test]
async fn a_v2_agent_answers_2_and_a_turn_ends_with_its_idle_state() {
    let a = spawn(
        json!({
            "v2": true,
            "turns": [{
                "steps": [
                    {"type": "text", "text": "Hello from v2."},
                    {"type": "update", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "Read a.txt", "kind": "read", "status": "in_progress", "rawInput": {}}},
                    {"type": "update", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "content": [{"type": "diff", "changes": [{"operation": "edit", "path": "/w/a.txt"}], "patch": {"format": "git_patch", "text": "@@ -1 +1 @@\n-old\n+new\n"}}]}}
                ],
                "stopReason": "max_tokens",
                "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10}
            }]
        }),
        v2_options(),
    )
    .await;
    let mut rx = a.rx;
    let info = a.conn.initialize().await.unwrap();
    assert_eq!(info.protocol_version, 2);
    assert_eq!(
        info.implementation.as_ref().map(|i| i.name.as_str()),
        Some("acp-fake-agent")
    );
    // v2's baseline session methods, and load as a resume with a replay.
    assert!(info.capabilities.load_session);
    assert!(info.capabilities.session_capabilities.resume.is_some());
    let sid = a
        .conn
        .new_session(SessionParams::new(a.dir.path()))
        .await
        .unwrap()
        .session_id;
    assert_eq!(
        prompt(&a.conn, &sid, "hi there").await,
        StopReason::MaxTokens
    );
    // The echoed prompt is shown once, and the agent's text as on v1.
    assert_eq!(user_messages(&a.conn, &sid), vec!["hi there".to_owned()]);
    assert_eq!(agent_text(&a.conn, &sid), "Hello from v2.");
    let tc = a
        .conn
        .with_session(&sid, |s| s.tool_call(&"t1".into()).cloned())
        .unwrap()
        .expect("the first tool_call_update created the call");
    assert_eq!(tc.title, "Read a.txt");
    assert_eq!(tc.status, ToolStatus::Completed);
    match &tc.content[..] {
        [ToolContent::Content { content }] => {
            assert!(content.as_text().unwrap().contains("+new"), "{content:?}")
        }
        other => panic!("the v2 diff should show its patch: {other:?}"),
    }
    // The usage of the idle state update reaches the editor as on v1.
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::Session { change: SessionChange::TurnUsage { usage }, .. } if usage.total == 30)
    })
    .await;
    drop(a.host);
}

#[tokio::test]
async fn v2_permission_requests_are_asked_like_v1_ones() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = json!({
        "v2": true,
        "turns": [{"steps": [{
            "type": "requestPermission",
            "toolCall": {"toolCallId": "e1", "title": "Edit a.txt", "kind": "edit", "content": [
                {"type": "diff", "changes": [{"operation": "edit", "path": "/w/a.txt"}],
                 "patch": {"format": "git_patch", "text": "@@ -1 +1 @@\n-old\n+new"}}
            ]},
            "onAllow": [{"type": "text", "text": " done"}]
        }]}]
    });
    let path = acp_testkit::write_scenario(dir.path(), &scenario);
    let (tx, mut asks) = tokio::sync::mpsc::unbounded_channel();
    let (host, _rx) = TestHost::new(PermissionMode::Manual(tx));
    let conn = Connection::spawn(&fake_agent(&path, dir.path()), host, v2_options()).unwrap();
    conn.initialize().await.unwrap();
    let sid = conn
        .new_session(SessionParams::new(dir.path()))
        .await
        .unwrap()
        .session_id;
    let c = conn.clone();
    let sid2 = sid.clone();
    let turn = tokio::spawn(async move { c.prompt(&sid2, vec![text("edit")]).await });
    let (request, answer) = tokio::time::timeout(WAIT, asks.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(request.tool_call.tool_call_id.0.as_ref(), "e1");
    assert_eq!(request.tool_call.title.as_deref(), Some("Edit a.txt"));
    assert_eq!(request.options.len(), 4);
    // The subject's v2 diff reads as its patch, as in an update.
    match request.tool_call.content.as_deref() {
        Some([ToolContent::Content { content }]) => {
            assert!(content.as_text().unwrap().contains("+new"), "{content:?}")
        }
        other => panic!("the subject's diff should show its patch: {other:?}"),
    }
    choose(answer, "allow_once");
    let stop = tokio::time::timeout(WAIT, turn).await.unwrap().unwrap();
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
    assert_eq!(agent_text(&conn, &sid), "permission: allow_once done");
}

#[tokio::test]
async fn a_v1_only_agent_offered_2_continues_in_v1() {
    let a = spawn(
        json!({"turns": [{"steps": [{"type": "text", "text": "v1 here"}]}]}),
        v2_options(),
    )
    .await;
    let info = a.conn.initialize().await.unwrap();
    assert_eq!(info.protocol_version, 1);
    let sid = a
        .conn
        .new_session(SessionParams::new(a.dir.path()))
        .await
        .unwrap()
        .session_id;
    assert_eq!(prompt(&a.conn, &sid, "hi").await, StopReason::EndTurn);
    assert_eq!(agent_text(&a.conn, &sid), "v1 here");
}

#[tokio::test]
async fn a_v2_agent_offered_1_speaks_v1() {
    let a = spawn(
        json!({"v2": true, "turns": [{"steps": [{"type": "text", "text": "v1 again"}]}]}),
        ConnectionOptions::default(),
    )
    .await;
    assert_eq!(a.conn.initialize().await.unwrap().protocol_version, 1);
    let sid = a
        .conn
        .new_session(SessionParams::new(a.dir.path()))
        .await
        .unwrap()
        .session_id;
    assert_eq!(prompt(&a.conn, &sid, "hi").await, StopReason::EndTurn);
    assert_eq!(agent_text(&a.conn, &sid), "v1 again");
}

#[tokio::test]
async fn a_v2_load_resumes_with_a_replay() {
    let a = spawn(
        json!({
            "v2": true,
            "sessions": [{"sessionId": "old", "cwd": "/tmp", "history": [
                {"sessionUpdate": "user_message", "messageId": "u1", "content": [{"type": "text", "text": "before"}]},
                {"sessionUpdate": "agent_message", "messageId": "a1", "content": []},
                {"sessionUpdate": "agent_message_chunk", "messageId": "a1", "content": {"type": "text", "text": "answer"}},
                {"sessionUpdate": "state_update", "state": "idle"}
            ]}]
        }),
        v2_options(),
    )
    .await;
    a.conn.initialize().await.unwrap();
    let sid: acp_client::session::update::SessionId = "old".into();
    a.conn
        .load_session(&sid, SessionParams::new(a.dir.path()))
        .await
        .unwrap();
    assert_eq!(user_messages(&a.conn, &sid), vec!["before".to_owned()]);
    assert_eq!(agent_text(&a.conn, &sid), "answer");
}

// ---------------------------------------------------------------------------
// Hostile v2 agents, scripted by hand.

/// Initializes offering v2 and answers 2, then opens session `s1`.
async fn v2_session(
    conn: &Connection,
    peer: &mut Peer,
    cwd: &std::path::Path,
) -> acp_client::session::update::SessionId {
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let req = peer.recv().await;
    assert_eq!(req["params"]["protocolVersion"], 2);
    // The v1 fields beside the v2 ones, for an agent that falls back to 1.
    assert!(req["params"]["clientInfo"].is_object());
    assert!(req["params"]["clientCapabilities"]["fs"].is_object());
    assert!(req["params"]["info"].is_object());
    assert!(req["params"]["capabilities"].get("fs").is_none());
    assert!(req["params"]["capabilities"].get("terminal").is_none());
    peer.respond(
        &req["id"],
        json!({"protocolVersion": 2, "info": {"name": "hand", "version": "0"}, "capabilities": {"session": {}}}),
    )
    .await;
    init.await.unwrap().unwrap();
    let c = conn.clone();
    let cwd = cwd.to_path_buf();
    let new = tokio::spawn(async move {
        let mut params = SessionParams::new(cwd);
        params.mcp_servers = vec![acp_client::schema::McpServer::Stdio(
            acp_client::schema::McpServerStdio::new("editor", "/bin/editor-mcp"),
        )];
        c.new_session(params).await
    });
    let req = peer.recv().await;
    assert_eq!(req["method"], "session/new");
    assert_eq!(req["params"]["mcpServers"][0]["type"], "stdio");
    // v2 config options carry `configId` (claude-agent-acp 0.101.0).
    peer.respond(
        &req["id"],
        json!({"sessionId": "s1", "configOptions": [{"configId": "mode", "name": "Mode", "category": "mode",
            "type": "select", "currentValue": "auto", "options": [{"value": "auto", "name": "Auto"}]}]}),
    )
    .await;
    let started = new.await.unwrap().unwrap();
    assert_eq!(started.config_options.len(), 1);
    assert_eq!(
        serde_json::to_value(&started.config_options[0]).unwrap()["id"],
        "mode"
    );
    started.session_id
}

#[tokio::test]
async fn hostile_v2_updates_keep_the_turn_going_until_idle() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect_with(host, v2_options(), 1 << 20);
    let sid = v2_session(&conn, &mut peer, dir.path()).await;

    // Idle with no prompt in flight: nothing to end, nothing breaks.
    peer.notify_update(
        "s1",
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    )
    .await;

    let c = conn.clone();
    let sid2 = sid.clone();
    let turn = tokio::spawn(async move { c.prompt(&sid2, vec![text("go")]).await });
    let req = peer.recv().await;
    assert_eq!(req["method"], "session/prompt");
    // The answer only acknowledges: the turn goes on.
    peer.respond(&req["id"], json!({"messageId": "m1"})).await;
    // A state this client does not know is not idle.
    peer.notify_update(
        "s1",
        json!({"sessionUpdate": "state_update", "state": "_thinking_hard"}),
    )
    .await;
    peer.notify_update("s1", json!({"sessionUpdate": "state_update"}))
        .await;
    // An upsert of an id never seen creates the call; `null` clears.
    peer.notify_update("s1", json!({"sessionUpdate": "tool_call_update", "toolCallId": "new", "title": "Run", "content": [{"type": "content", "content": {"type": "text", "text": "x"}}]}))
        .await;
    peer.notify_update("s1", json!({"sessionUpdate": "tool_call_update", "toolCallId": "new", "title": null, "content": null}))
        .await;
    peer.notify_update("s1", json!({"sessionUpdate": "user_message", "messageId": "m1", "content": [{"type": "text", "text": "go"}]}))
        .await;
    // Garbage on the v2 decode point: a warning, not a failure.
    peer.notify_update(
        "s1",
        json!({"sessionUpdate": "user_message", "messageId": 5, "content": "nope"}),
    )
    .await;
    assert!(!turn.is_finished());
    peer.notify_update(
        "s1",
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "refusal"}),
    )
    .await;
    let stop = tokio::time::timeout(WAIT, turn).await.unwrap().unwrap();
    assert_eq!(stop.unwrap(), StopReason::Refusal);
    let tc = conn
        .with_session(&sid, |s| s.tool_call(&"new".into()).cloned())
        .unwrap()
        .unwrap();
    assert_eq!(tc.title, "");
    assert!(tc.content.is_empty());
    assert_eq!(user_messages(&conn, &sid), vec!["go".to_owned()]);
}

#[tokio::test]
async fn a_v2_idle_before_the_prompt_answer_still_ends_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect_with(host, v2_options(), 1 << 20);
    let sid = v2_session(&conn, &mut peer, dir.path()).await;
    let c = conn.clone();
    let turn = tokio::spawn(async move { c.prompt(&sid, vec![text("go")]).await });
    let req = peer.recv().await;
    peer.notify_update(
        "s1",
        json!({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}),
    )
    .await;
    peer.respond(&req["id"], json!({"messageId": "m1"})).await;
    let stop = tokio::time::timeout(WAIT, turn).await.unwrap().unwrap();
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
}

#[tokio::test]
async fn v2_agents_get_no_client_fs_or_terminal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "secret").unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect_with(host, v2_options(), 1 << 20);
    let _sid = v2_session(&conn, &mut peer, dir.path()).await;
    peer.send(
        json!({"jsonrpc": "2.0", "id": 7, "method": "fs/read_text_file",
        "params": {"sessionId": "s1", "path": dir.path().join("a.txt")}}),
    )
    .await;
    let reply = peer.recv_until(|m| m["id"] == 7).await;
    assert_eq!(reply["error"]["code"], -32601, "{reply}");
}

#[tokio::test]
async fn a_v2_answer_when_v2_was_not_offered_is_refused() {
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let req = peer.recv().await;
    assert_eq!(req["params"]["protocolVersion"], 1);
    assert!(req["params"].get("info").is_none());
    peer.respond(
        &req["id"],
        json!({"protocolVersion": 2, "info": {"name": "pushy", "version": "0"}, "capabilities": {}}),
    )
    .await;
    match init.await.unwrap() {
        Err(Error::ProtocolVersion {
            agent: 2,
            client: 1,
        }) => {}
        other => panic!("expected a version error, got {other:?}"),
    }
}

#[tokio::test]
async fn a_v2_mode_is_set_through_its_config_option() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect_with(host, v2_options(), 1 << 20);
    let sid = v2_session(&conn, &mut peer, dir.path()).await;
    let c = conn.clone();
    let set = tokio::spawn(async move { c.set_mode(&sid, "plan").await });
    let req = peer.recv().await;
    assert_eq!(req["method"], "session/set_config_option", "{req}");
    assert_eq!(req["params"]["configId"], "mode");
    assert_eq!(req["params"]["type"], "id");
    assert_eq!(req["params"]["value"], "plan");
    peer.respond(&req["id"], json!({"configOptions": []})).await;
    set.await.unwrap().unwrap();
}

/// v2 marks MCP transports with objects (`session.mcp: {stdio: {}, http:
/// {}}`, as claude-agent-acp 0.101.0 sends), v1 with booleans: the editor's
/// MCP server goes to such an agent over http, with its bearer token.
#[tokio::test]
async fn a_v2_agent_marking_http_gets_the_editor_server_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let options = ConnectionOptions {
        editor_tools: Some(acp_client::serve::editor_tools::EditorToolsOptions::default()),
        ..v2_options()
    };
    let (conn, mut peer) = connect_with(host, options, 1 << 20);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let req = peer.recv().await;
    peer.respond(
        &req["id"],
        json!({"protocolVersion": 2, "info": {"name": "marks", "version": "0"},
            "capabilities": {"session": {"mcp": {"stdio": {}, "http": {}}}}}),
    )
    .await;
    init.await.unwrap().unwrap();
    let caps = conn.agent_info().unwrap().capabilities.mcp_capabilities;
    assert!(caps.http, "the http marker counts");
    assert!(!caps.sse, "an absent transport does not");
    let c = conn.clone();
    let cwd = dir.path().to_path_buf();
    let new = tokio::spawn(async move { c.new_session(SessionParams::new(cwd)).await });
    let req = peer.recv().await;
    let server = &req["params"]["mcpServers"][0];
    assert_eq!(server["name"], "editor", "{req}");
    assert_eq!(server["type"], "http", "{req}");
    assert!(
        server["headers"][0]["value"]
            .as_str()
            .is_some_and(|v| v.starts_with("Bearer ")),
        "{req}"
    );
    peer.respond(&req["id"], json!({"sessionId": "s1"})).await;
    new.await.unwrap().unwrap();
}

// ---------------------------------------------------------------------------
// What a v2 agent reports in its own shapes reaches the same model as v1's.

/// The tool call `id` of the session.
fn tool_call(
    conn: &Connection,
    sid: &acp_client::session::update::SessionId,
    id: &str,
) -> acp_client::session::ToolCallState {
    conn.with_session(sid, |s| s.tool_call(&id.to_owned().into()).cloned())
        .unwrap()
        .unwrap_or_else(|| panic!("no tool call `{id}`"))
}

#[tokio::test]
async fn a_v2_agents_command_output_and_diff_read_like_a_v1_agents() {
    for v2 in [true, false] {
        let a = spawn(
            json!({
                "v2": v2,
                "turns": [{"steps": [
                    {"type": "agentTerminal", "toolCallId": "run", "command": "make test", "output": ["a\n", "b ✓\n"], "exitCode": 2},
                    {"type": "writeDisk", "path": "notes.txt", "content": "one\nTWO\nthree\n", "toolCallId": "edit"}
                ]}]
            }),
            v2_options(),
        )
        .await;
        std::fs::write(a.dir.path().join("notes.txt"), "one\ntwo\nthree\n").unwrap();
        let info = a.conn.initialize().await.unwrap();
        assert_eq!(info.protocol_version, if v2 { 2 } else { 1 });
        let sid = a
            .conn
            .new_session(SessionParams::new(a.dir.path()))
            .await
            .unwrap()
            .session_id;
        prompt(&a.conn, &sid, "go").await;
        let run = tool_call(&a.conn, &sid, "run");
        let term = run.agent_terminal.expect("the command's output is kept");
        assert_eq!(term.output, "a\nb ✓\n", "v2 {v2}");
        assert_eq!(term.exit.unwrap().exit_code, Some(2), "v2 {v2}");
        assert_eq!(run.status, ToolStatus::Failed);
        assert_eq!(
            term.command.as_deref(),
            v2.then_some("make test"),
            "v2 names the command in terminal_update"
        );
        let edit = tool_call(&a.conn, &sid, "edit");
        let path = a.dir.path().join("notes.txt");
        match &edit.content[..] {
            [ToolContent::Diff {
                path: p,
                old_text,
                new_text,
            }] => {
                assert_eq!(p, &path, "v2 {v2}");
                assert_eq!(old_text.as_deref(), Some("one\ntwo\nthree\n"), "v2 {v2}");
                assert_eq!(new_text, "one\nTWO\nthree\n", "v2 {v2}");
            }
            other => panic!("v2 {v2}: the edit should be a diff: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_v2_message_upsert_replaces_the_message_it_names() {
    let a = spawn(
        json!({
            "v2": true,
            "turns": [{"steps": [
                {"type": "update", "update": {"sessionUpdate": "agent_message", "messageId": "m1", "content": [{"type": "text", "text": "draft"}]}},
                {"type": "text", "text": " and more", "messageId": "m1"},
                {"type": "update", "update": {"sessionUpdate": "agent_message", "messageId": "m1", "content": [{"type": "text", "text": "final answer"}]}},
                {"type": "update", "update": {"sessionUpdate": "agent_thought", "messageId": "t1", "content": [{"type": "text", "text": "hmm"}]}},
                {"type": "update", "update": {"sessionUpdate": "agent_thought", "messageId": "t1", "content": null}}
            ]}]
        }),
        v2_options(),
    )
    .await;
    let mut rx = a.rx;
    a.conn.initialize().await.unwrap();
    let sid = a
        .conn
        .new_session(SessionParams::new(a.dir.path()))
        .await
        .unwrap()
        .session_id;
    prompt(&a.conn, &sid, "go").await;
    // Before the fix the upsert was appended: "draft and morefinal answer".
    assert_eq!(agent_text(&a.conn, &sid), "final answer");
    let thoughts: Vec<String> = a
        .conn
        .with_session(&sid, |s| {
            s.entries()
                .iter()
                .filter_map(|e| match e {
                    Entry::Thought(m) => Some(m.text()),
                    _ => None,
                })
                .collect()
        })
        .unwrap();
    assert_eq!(thoughts, vec![String::new()], "null cleared the thought");
    wait_event(&mut rx, |e| {
        matches!(
            e,
            ClientEvent::Session {
                change: SessionChange::MessageReplaced { .. },
                ..
            }
        )
    })
    .await;
}

#[tokio::test]
async fn a_v2_agent_logs_in_with_auth_login_and_out_with_auth_logout() {
    let a = spawn(
        json!({
            "v2": true,
            "authRequired": true,
            "initialize": {"authMethods": [{"id": "fake-login", "name": "Fake login"}]},
            "turns": [{"steps": [{"type": "text", "text": "in"}]}]
        }),
        v2_options(),
    )
    .await;
    let info = a.conn.initialize().await.unwrap();
    assert_eq!(info.protocol_version, 2);
    // The v2 method (`methodId`, `type: "agent"`) in its v1 place.
    let ids: Vec<String> = info
        .auth_methods
        .iter()
        .map(|m| m.id().0.to_string())
        .collect();
    assert_eq!(ids, vec!["fake-login".to_owned()]);
    let err = a
        .conn
        .new_session(SessionParams::new(a.dir.path()))
        .await
        .unwrap_err();
    assert!(err.is_auth_required(), "{err}");
    // The fake agent answers only `auth/login` on v2: `authenticate` failed.
    a.conn.authenticate("fake-login").await.unwrap();
    let sid = a
        .conn
        .new_session(SessionParams::new(a.dir.path()))
        .await
        .unwrap()
        .session_id;
    assert_eq!(prompt(&a.conn, &sid, "hi").await, StopReason::EndTurn);
    assert_eq!(agent_text(&a.conn, &sid), "in");
    a.conn.logout().await.unwrap();
    let err = a
        .conn
        .new_session(SessionParams::new(a.dir.path()))
        .await
        .unwrap_err();
    assert!(err.is_auth_required(), "logged out: {err}");
}

#[tokio::test]
async fn a_v2_agent_lists_its_sessions() {
    let a = spawn(
        json!({
            "v2": true,
            "sessions": [
                {"sessionId": "one", "cwd": "/tmp", "title": "First"},
                {"sessionId": "two", "cwd": "/tmp", "title": "Second"}
            ]
        }),
        v2_options(),
    )
    .await;
    a.conn.initialize().await.unwrap();
    let page = a.conn.list_sessions(None, None).await.unwrap();
    let mut listed: Vec<(String, Option<String>)> = page
        .sessions
        .iter()
        .map(|s| (s.session_id.to_string(), s.title.clone()))
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        vec![
            ("one".to_owned(), Some("First".to_owned())),
            ("two".to_owned(), Some("Second".to_owned()))
        ]
    );
}

#[tokio::test]
async fn cancelling_a_v2_turn_ends_it_cancelled_by_its_idle_state() {
    let a = spawn(
        json!({
            "v2": true,
            "turns": [{"steps": [
                {"type": "toolCallUpdate", "toolCallId": "w", "title": "Wait", "kind": "execute", "status": "in_progress"},
                {"type": "waitForCancel"}
            ]}]
        }),
        v2_options(),
    )
    .await;
    a.conn.initialize().await.unwrap();
    let sid = a
        .conn
        .new_session(SessionParams::new(a.dir.path()))
        .await
        .unwrap()
        .session_id;
    let c = a.conn.clone();
    let sid2 = sid.clone();
    let turn = tokio::spawn(async move { c.prompt(&sid2, vec![text("wait")]).await });
    // The tool call shows once the turn runs.
    tokio::time::timeout(WAIT, async {
        while a
            .conn
            .with_session(&sid, |s| s.tool_call(&"w".into()).is_none())
            .unwrap()
        {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    a.conn.cancel(&sid).unwrap();
    let stop = tokio::time::timeout(WAIT, turn).await.unwrap().unwrap();
    assert_eq!(stop.unwrap(), StopReason::Cancelled);
    assert_eq!(tool_call(&a.conn, &sid, "w").status, ToolStatus::Cancelled);
}

#[tokio::test]
async fn a_v2_diff_of_a_file_outside_the_workspace_is_not_read_and_shows_its_patch() {
    // A file that exists and fits the patch, but outside the session's cwd:
    // recovering its old text would hand its content to the chat.
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "new\n").unwrap();
    let patch = format!(
        "diff --git {p} {p}\n--- {p}\n+++ {p}\n@@ -1 +1 @@\n-old\n+new\n",
        p = secret.display()
    );
    let inside_patch = "@@ -1 +1 @@\n-old\n+new\n";
    let a = spawn(
        json!({
            "v2": true,
            "turns": [{"steps": [
                {"type": "update", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "completed",
                    "content": [{"type": "diff", "changes": [{"operation": "modify", "path": secret}],
                                 "patch": {"format": "git_patch", "text": patch}}]}},
                {"type": "update", "update": {"sessionUpdate": "tool_call_update", "toolCallId": "y", "status": "completed",
                    "content": [{"type": "diff", "changes": [{"operation": "modify", "path": "{{cwd}}/in.txt"}],
                                 "patch": {"format": "git_patch", "text": inside_patch}}]}}
            ]}]
        }),
        v2_options(),
    )
    .await;
    std::fs::write(a.dir.path().join("in.txt"), "new\n").unwrap();
    a.conn.initialize().await.unwrap();
    let sid = a
        .conn
        .new_session(SessionParams::new(a.dir.path()))
        .await
        .unwrap()
        .session_id;
    prompt(&a.conn, &sid, "go").await;
    match &tool_call(&a.conn, &sid, "x").content[..] {
        [ToolContent::Content { content }] => {
            assert!(content.as_text().unwrap().contains("+new"), "{content:?}")
        }
        other => panic!("outside the workspace the patch stays text: {other:?}"),
    }
    // The same patch for a file inside is a diff (the control).
    match &tool_call(&a.conn, &sid, "y").content[..] {
        [ToolContent::Diff { old_text, .. }] => assert_eq!(old_text.as_deref(), Some("old\n")),
        other => panic!("inside the workspace the diff is recovered: {other:?}"),
    }
}
