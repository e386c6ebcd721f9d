//! The JSON-RPC engine and connection, driven by a test that plays the agent
//! over in-memory pipes: every reply rule, cancellation, ordering, failures.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use acp_client::policy::permission::PermissionDecision;
use acp_client::schema;
use acp_client::session::SessionChange;
use acp_client::{ClientEvent, ConnectionOptions, Error, HostCapabilities, StopReason};
use serde_json::{json, Value};
use support::*;

fn event_json(e: &ClientEvent) -> Value {
    serde_json::to_value(e).unwrap()
}

#[tokio::test]
async fn initialize_sends_version_one_and_host_capabilities() {
    let (host, _rx) = TestHost::with_caps(
        HostCapabilities {
            read_text_file: true,
            write_text_file: false,
            terminal: false,
            ..HostCapabilities::default()
        },
        PermissionMode::Pick("allow_once"),
    );
    let (conn, mut peer) = connect(host);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let req = peer.accept_initialize(json!({"loadSession": true})).await;
    assert_eq!(req["params"]["protocolVersion"], 1);
    assert_eq!(
        req["params"]["clientCapabilities"]["fs"]["readTextFile"],
        true
    );
    assert_eq!(
        req["params"]["clientCapabilities"]["fs"]["writeTextFile"],
        false
    );
    assert_eq!(req["params"]["clientCapabilities"]["terminal"], false);
    // Terminal auth methods are opt-in (ConnectionOptions::terminal_auth).
    assert_eq!(
        req["params"]["clientCapabilities"]["auth"]["terminal"],
        false
    );
    assert_eq!(
        req["params"]["clientCapabilities"]["session"]["configOptions"]["boolean"],
        json!({})
    );
    assert_eq!(req["params"]["clientInfo"]["name"], "acp-client");
    let info = init.await.unwrap().unwrap();
    assert!(info.capabilities.load_session);
}

#[tokio::test]
async fn initialize_rejects_a_version_we_cannot_speak() {
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let req = peer.recv().await;
    peer.respond(
        &req["id"],
        json!({"protocolVersion": 2, "agentCapabilities": {}}),
    )
    .await;
    let err = init.await.unwrap().unwrap_err();
    assert!(
        matches!(
            err,
            Error::ProtocolVersion {
                agent: 2,
                client: 1
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("version 2"));
}

#[tokio::test]
async fn initialize_times_out_with_a_clear_error() {
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let options = ConnectionOptions {
        initialize_timeout: Some(Duration::from_millis(100)),
        ..Default::default()
    };
    let (conn, mut peer) = connect_with(host, options, 1 << 16);
    let err = conn.initialize().await.unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    assert!(err.to_string().contains("initialize"));
    // The withdrawn request is announced to the agent.
    let _init = peer.recv().await;
    let cancel = peer.recv().await;
    assert_eq!(cancel["method"], "$/cancel_request");
    assert_eq!(cancel["params"]["requestId"], 0);
}

#[tokio::test]
async fn unknown_and_unadvertised_methods_get_method_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(
        HostCapabilities {
            read_text_file: true,
            write_text_file: true,
            terminal: false,
            ..HostCapabilities::default()
        },
        PermissionMode::Pick("allow_once"),
    );
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    peer.send(json!({"jsonrpc":"2.0","id":"x1","method":"foo/bar","params":{}}))
        .await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], "x1");
    assert_eq!(reply["error"]["code"], -32601);
    // Terminals were not advertised: -32601 even though the method exists.
    peer.send(json!({"jsonrpc":"2.0","id":5,"method":"terminal/create","params":{"sessionId":"s1","command":"ls"}}))
        .await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], 5);
    assert_eq!(reply["error"]["code"], -32601);
}

#[tokio::test]
async fn bad_params_get_invalid_params_and_unknown_sessions_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    peer.send(
        json!({"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s1"}}),
    )
    .await;
    let reply = peer.recv().await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    peer.send(json!({"jsonrpc":"2.0","id":2,"method":"fs/read_text_file","params":{"sessionId":"s1","path":"relative.txt"}}))
        .await;
    let reply = peer.recv().await;
    assert_eq!(reply["error"]["code"], -32602, "{reply}");
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .contains("absolute"));
    peer.send(json!({"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"nope","toolCall":{"toolCallId":"t"},"options":[]}}))
        .await;
    let reply = peer.recv().await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
}

#[tokio::test]
async fn a_failing_handler_gets_internal_error() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    host.buffers
        .fail_reads
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let path = dir.path().join("a.txt");
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s1","path":path}}))
        .await;
    let reply = peer.recv().await;
    assert_eq!(reply["error"]["code"], -32603, "{reply}");
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .contains("editor is gone"));
}

#[tokio::test]
async fn reads_outside_the_workspace_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s1","path":"/etc/passwd"}}))
        .await;
    let reply = peer.recv().await;
    assert_eq!(reply["error"]["code"], -32002, "{reply}");
    assert!(reply["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/etc/passwd"));
}

#[tokio::test]
async fn many_requests_in_flight_resolve_to_their_own_answers() {
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    peer.accept_initialize(json!({"sessionCapabilities": {"list": {}}}))
        .await;
    init.await.unwrap().unwrap();
    let mut calls = Vec::new();
    for i in 0..50 {
        let c = conn.clone();
        let cursor = format!("c{i}");
        calls.push(tokio::spawn(async move {
            (i, c.list_sessions(None, Some(&cursor)).await)
        }));
    }
    let mut reqs = Vec::new();
    for _ in 0..50 {
        reqs.push(peer.recv().await);
    }
    // Answer in reverse order; each answer names the cursor it was for.
    for req in reqs.iter().rev() {
        let cursor = req["params"]["cursor"].as_str().unwrap();
        peer.respond(
            &req["id"],
            json!({"sessions": [{"sessionId": cursor, "cwd": "/tmp"}]}),
        )
        .await;
    }
    for call in calls {
        let (i, page) = call.await.unwrap();
        let page = page.unwrap();
        assert_eq!(page.sessions[0].session_id.to_string(), format!("c{i}"));
    }
}

#[tokio::test]
async fn garbage_and_unknown_response_ids_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let (host, mut rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host.clone());
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    peer.send_raw(b"this is not json\n").await;
    peer.send_raw(b"{\"hello\":1}\n").await;
    peer.send_raw(&[0xff, 0xfe, b'\n']).await;
    peer.send_raw(b"\r\n\n").await;
    peer.send(json!({"jsonrpc":"2.0","id":999,"result":{}}))
        .await;
    // The connection still works.
    peer.notify_update(
        "s1",
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"still here"}}),
    )
    .await;
    let e = wait_event(&mut rx, |e| {
        event_json(e).to_string().contains("still here")
    })
    .await;
    assert!(matches!(e, ClientEvent::Session { .. }));
    assert!(!conn.is_closed());
    let warnings = host
        .events()
        .iter()
        .filter(|e| matches!(e, ClientEvent::ProtocolWarning { .. }))
        .count();
    // "not json", a non-JSON-RPC object, invalid UTF-8; blank lines are not warnings.
    assert_eq!(warnings, 3, "{:?}", host.events());
}

#[tokio::test]
async fn agent_cancel_request_gets_exactly_one_cancelled_reply() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::new(PermissionMode::Manual(ptx));
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    peer.send(
        json!({"jsonrpc":"2.0","id":42,"method":"session/request_permission","params":{
        "sessionId":"s1","toolCall":{"toolCallId":"t1","title":"Run ls","kind":"execute"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}),
    )
    .await;
    let (request, answer) = next_prompt(&mut prx).await;
    assert_eq!(request.tool_call.title.as_deref(), Some("Run ls"));
    peer.send(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":42}}))
        .await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], 42);
    assert_eq!(reply["error"]["code"], -32800);
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::PermissionCancelled { .. })
    })
    .await;
    // A late answer from the editor produces no second reply.
    choose(answer, "ok");
    assert!(peer.silent_for(200).await);
}

#[tokio::test]
async fn permission_prompts_do_not_block_reading() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::new(PermissionMode::Manual(ptx));
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{
        "sessionId":"s1","toolCall":{"toolCallId":"t1"},
        "options":[{"optionId":"yes","name":"Yes","kind":"allow_once"},{"optionId":"weird","name":"Maybe","kind":"allow_sometimes"}]}}))
        .await;
    let (request, answer) = next_prompt(&mut prx).await;
    // Unknown option kinds are still offered.
    assert_eq!(request.options.len(), 2);
    assert_eq!(request.options[1].kind.as_str(), "allow_sometimes");
    // While the human thinks, updates keep flowing.
    peer.notify_update(
        "s1",
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"meanwhile"}}),
    )
    .await;
    wait_event(&mut rx, |e| event_json(e).to_string().contains("meanwhile")).await;
    choose(answer, "yes");
    let reply = peer.recv().await;
    assert_eq!(reply["id"], 1);
    assert_eq!(
        reply["result"],
        json!({"outcome": {"outcome": "selected", "optionId": "yes"}})
    );
}

#[tokio::test]
async fn cancel_answers_pending_permission_and_the_turn_ends_once() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::new(PermissionMode::Manual(ptx));
    let (conn, mut peer) = connect(host);
    let sid = open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let c = conn.clone();
    let s = sid.clone();
    let turn = tokio::spawn(async move { c.prompt(&s, vec![text("do it")]).await });
    let prompt = peer.recv().await;
    assert_eq!(prompt["method"], "session/prompt");
    assert_eq!(prompt["params"]["prompt"][0]["text"], "do it");
    peer.notify_update(
        "s1",
        json!({"sessionUpdate":"tool_call","toolCallId":"t1","title":"Edit","kind":"edit","status":"in_progress"}),
    )
    .await;
    peer.send(
        json!({"jsonrpc":"2.0","id":"perm","method":"session/request_permission","params":{
        "sessionId":"s1","toolCall":{"toolCallId":"t1"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}),
    )
    .await;
    let (request, _answer) = next_prompt(&mut prx).await;
    // Merged with what the session knew about t1.
    assert_eq!(request.tool_call.title.as_deref(), Some("Edit"));

    conn.cancel(&sid).unwrap();
    let cancel = peer
        .recv_until(|m| m["method"] == "session/cancel" || m["id"] == "perm")
        .await;
    let (cancel_msg, perm_reply) = if cancel["method"] == "session/cancel" {
        (cancel, peer.recv().await)
    } else {
        (peer.recv().await, cancel)
    };
    assert_eq!(cancel_msg["params"]["sessionId"], "s1");
    assert_eq!(
        perm_reply["result"],
        json!({"outcome": {"outcome": "cancelled"}})
    );
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::PermissionCancelled { .. })
    })
    .await;
    // Unfinished tool calls are marked cancelled at once.
    let status = conn
        .with_session(&sid, |s| {
            serde_json::to_value(s.tool_call(&"t1".into()).unwrap()).unwrap()
        })
        .unwrap();
    assert_eq!(status["status"], "cancelled");

    // Late updates after the cancel are still applied, and the turn ends
    // once, with the agent's stop reason.
    peer.notify_update(
        "s1",
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"stopping"}}),
    )
    .await;
    peer.respond(&prompt["id"], json!({"stopReason": "cancelled"}))
        .await;
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::Cancelled);
    peer.notify_update(
        "s1",
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"late"}}),
    )
    .await;
    wait_event(&mut rx, |e| event_json(e).to_string().contains("late")).await;
}

#[tokio::test]
async fn unknown_update_kinds_and_late_updates_reach_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (host, mut rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    let sid = open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let c = conn.clone();
    let s = sid.clone();
    let turn = tokio::spawn(async move { c.prompt(&s, vec![text("hi")]).await });
    let prompt = peer.recv().await;
    peer.notify_update("s1", json!({"sessionUpdate":"future_thing","x":1}))
        .await;
    peer.respond(&prompt["id"], json!({"stopReason": "end_turn"}))
        .await;
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::EndTurn);
    peer.notify_update(
        "s1",
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"after the end"}}),
    )
    .await;
    wait_event(&mut rx, |e| {
        event_json(e).to_string().contains("after the end")
    })
    .await;
    let unknown = conn
        .with_session(&sid, |s| serde_json::to_value(s.entries()).unwrap())
        .unwrap();
    assert!(unknown.to_string().contains("future_thing"), "{unknown}");
}

#[tokio::test]
async fn unknown_stop_reasons_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    let sid = open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let c = conn.clone();
    let turn = tokio::spawn(async move { c.prompt(&sid, vec![text("hi")]).await });
    let prompt = peer.recv().await;
    peer.respond(&prompt["id"], json!({"stopReason": "paused"}))
        .await;
    assert_eq!(
        turn.await.unwrap().unwrap(),
        StopReason::Unknown("paused".into())
    );
}

#[tokio::test]
async fn unadvertised_methods_fail_without_sending() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    let sid = open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let err = conn.list_sessions(None, None).await.unwrap_err();
    assert!(matches!(err, Error::NotSupported { .. }), "{err}");
    let err = conn
        .load_session(&sid, acp_client::SessionParams::new(dir.path()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotSupported { .. }), "{err}");
    let err = conn.delete_session(&sid).await.unwrap_err();
    assert!(matches!(err, Error::NotSupported { .. }), "{err}");
    let image = schema::ContentBlock::Image(schema::ImageContent::new("AAAA", "image/png"));
    let err = conn.prompt(&sid, vec![image]).await.unwrap_err();
    assert!(matches!(err, Error::NotSupported { .. }), "{err}");
    assert!(peer.silent_for(200).await, "nothing may be sent");
}

#[tokio::test]
async fn load_replay_rebuilds_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    peer.accept_initialize(json!({"loadSession": true})).await;
    init.await.unwrap().unwrap();
    let sid: acp_client::session::update::SessionId = "old".into();
    let c = conn.clone();
    let s = sid.clone();
    let cwd = dir.path().to_path_buf();
    let load = tokio::spawn(async move {
        c.load_session(&s, acp_client::SessionParams::new(cwd))
            .await
    });
    let req = peer.recv().await;
    assert_eq!(req["method"], "session/load");
    assert_eq!(req["params"]["sessionId"], "old");
    peer.notify_update(
        "old",
        json!({"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"question"}}),
    )
    .await;
    peer.notify_update(
        "old",
        json!({"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"answer"}}),
    )
    .await;
    peer.notify_update(
        "old",
        json!({"sessionUpdate":"tool_call","toolCallId":"t","title":"Read","kind":"read","status":"completed"}),
    )
    .await;
    peer.notify_update(
        "old",
        json!({"sessionUpdate":"plan","entries":[{"content":"step","priority":"high","status":"completed"}]}),
    )
    .await;
    peer.respond(
        &req["id"],
        json!({"modes": {"currentModeId": "code", "availableModes": [{"id":"code","name":"Code"},{"id":"ask","name":"Ask"}]}}),
    )
    .await;
    let started = load.await.unwrap().unwrap();
    assert_eq!(started.modes.unwrap().current_mode_id.to_string(), "code");
    let model = conn
        .with_session(&sid, |s| serde_json::to_value(s.entries()).unwrap())
        .unwrap()
        .to_string();
    for needle in ["question", "answer", "Read"] {
        assert!(model.contains(needle), "{needle} missing from {model}");
    }
    assert_eq!(conn.with_session(&sid, |s| s.plan().len()).unwrap(), 1);
}

#[tokio::test]
async fn agent_exit_fails_pending_requests_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let (host, mut rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    let sid = open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let c = conn.clone();
    let turn = tokio::spawn(async move { c.prompt(&sid, vec![text("hi")]).await });
    let _prompt = peer.recv().await;
    peer.close();
    let err = tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, Error::AgentExited { .. }), "{err}");
    wait_event(&mut rx, |e| matches!(e, ClientEvent::AgentExited { .. })).await;
    assert!(conn.is_closed());
    // Later calls fail at once with the same reason.
    let err = conn.list_sessions(None, None).await.unwrap_err();
    assert!(!matches!(err, Error::Timeout { .. }));
}

#[tokio::test]
async fn an_agent_that_stops_reading_gets_a_clear_backpressure_error() {
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let options = ConnectionOptions {
        outgoing_queue: 4,
        ..Default::default()
    };
    // A tiny pipe that the "agent" never reads.
    let (conn, _peer) = connect_with(host, options, 64);
    let mut saw_backpressure = false;
    let mut calls = Vec::new();
    for _ in 0..64 {
        let c = conn.clone();
        calls.push(tokio::spawn(async move {
            tokio::time::timeout(Duration::from_millis(500), c.initialize()).await
        }));
    }
    for call in calls {
        if let Ok(Err(Error::Backpressure { .. })) = call.await.unwrap() {
            saw_backpressure = true;
        }
    }
    assert!(saw_backpressure);
}

#[tokio::test]
async fn duplicate_incoming_ids_get_one_reply_each_and_no_double_handling() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, _rx) = TestHost::new(PermissionMode::Manual(ptx));
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let perm = json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{
        "sessionId":"s1","toolCall":{"toolCallId":"t1"},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}});
    peer.send(perm.clone()).await;
    let (_req, answer) = next_prompt(&mut prx).await;
    peer.send(perm).await;
    let dup = peer.recv().await;
    assert_eq!(dup["id"], 7);
    assert_eq!(dup["error"]["code"], -32600);
    choose(answer, "ok");
    let reply = peer.recv().await;
    assert_eq!(reply["result"]["outcome"]["optionId"], "ok");
    assert!(peer.silent_for(200).await);
}

#[tokio::test]
async fn always_allow_is_remembered_for_the_same_subject_only() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::new(PermissionMode::Manual(ptx));
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let ask = |id: i64, cmd: &str| {
        json!({"jsonrpc":"2.0","id":id,"method":"session/request_permission","params":{
            "sessionId":"s1","toolCall":{"toolCallId":format!("t{id}"),"title":cmd,"kind":"execute","rawInput":{"command":cmd}},
            "options":[{"optionId":"always","name":"Always allow","kind":"allow_always"},
                       {"optionId":"once","name":"Allow","kind":"allow_once"},
                       {"optionId":"no","name":"Reject","kind":"reject_once"}]}})
    };
    peer.send(ask(1, "cargo test")).await;
    let (_req, answer) = next_prompt(&mut prx).await;
    choose(answer, "always");
    assert_eq!(peer.recv().await["result"]["outcome"]["optionId"], "always");
    // Same command: answered from memory, nobody asked. The client answers
    // with the agent's allow_once option, so the agent never widens the
    // grant on its side.
    peer.send(ask(2, "cargo test")).await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], 2);
    assert_eq!(reply["result"]["outcome"]["optionId"], "once");
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::PermissionAutoAnswered { .. })
    })
    .await;
    // A different command is asked again.
    peer.send(ask(3, "rm -rf x")).await;
    let (req, answer) = next_prompt(&mut prx).await;
    assert_eq!(req.tool_call.title.as_deref(), Some("rm -rf x"));
    answer.send(PermissionDecision::Cancelled).unwrap();
    assert_eq!(
        peer.recv().await["result"]["outcome"]["outcome"],
        "cancelled"
    );
}

#[tokio::test]
async fn a_tool_call_first_seen_in_a_permission_request_is_recorded_for_its_later_updates() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::new(PermissionMode::Manual(ptx));
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let file = dir.path().join("a.txt");
    // gemini-cli asks before it sends the `tool_call`.
    peer.send(
        json!({"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{
        "sessionId":"s1","toolCall":{"toolCallId":"g1","title":"WriteFile a.txt","kind":"edit",
            "locations":[{"path": file}],
            "content":[{"type":"diff","path": file,"oldText":null,"newText":"hi\n"}]},
        "options":[{"optionId":"ok","name":"Allow","kind":"allow_once"}]}}),
    )
    .await;
    let (_request, answer) = next_prompt(&mut prx).await;
    choose(answer, "ok");
    peer.recv_until(|m| m["id"] == 7).await;
    // The later update carries the status only.
    peer.notify_update(
        "s1",
        json!({"sessionUpdate":"tool_call_update","toolCallId":"g1","status":"completed"}),
    )
    .await;
    let done = wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::Session { change: SessionChange::ToolCallChanged { tool_call, .. }, .. }
            if tool_call.status.as_str() == "completed")
    })
    .await;
    let ClientEvent::Session {
        change: SessionChange::ToolCallChanged { tool_call: tc, .. },
        ..
    } = done
    else {
        unreachable!()
    };
    assert_eq!(tc.title, "WriteFile a.txt");
    assert_eq!(tc.kind.as_str(), "edit");
    assert_eq!(tc.locations.len(), 1);
    assert_eq!(tc.content.len(), 1, "the diff is kept");
}

#[tokio::test]
async fn an_older_agents_terminal_auth_marker_makes_a_terminal_method() {
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let req = peer.recv().await;
    peer.respond(
        &req["id"],
        json!({"protocolVersion": 1, "agentCapabilities": {}, "authMethods": [
            {"id": "claude-login", "name": "Log in with Claude Code",
             "_meta": {"terminal-auth": {"command": "node", "args": ["cli.js", "/login"],
                                         "env": {"X": "1"}, "label": "claude /login"}}},
            {"id": "key", "name": "API key"}
        ]}),
    )
    .await;
    let info = init.await.unwrap().unwrap();
    let schema::AuthMethod::Terminal(t) = &info.auth_methods[0] else {
        panic!("not a terminal method: {:?}", info.auth_methods[0]);
    };
    assert_eq!(t.args, ["cli.js", "/login"]);
    assert_eq!(t.env.get("X").map(String::as_str), Some("1"));
    assert_eq!(
        acp_client::connection::terminal_auth_command(&info.auth_methods[0]).as_deref(),
        Some("node")
    );
    assert!(matches!(info.auth_methods[1], schema::AuthMethod::Agent(_)));
    assert_eq!(
        acp_client::connection::terminal_auth_command(&info.auth_methods[1]),
        None
    );
}
