//! The client against the scripted fake agent as a real subprocess: process
//! lifecycle, crashes, floods, fs and terminals through the wire, permission
//! memory, and the chat example end to end.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

#[path = "fake_agent/chat_example.rs"]
mod chat_example;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use acp_client::{ClientEvent, Connection, ConnectionOptions, Error, SessionParams, StopReason};
use serde_json::{json, Value};
use support::*;

struct Setup {
    conn: Connection,
    host: Arc<TestHost>,
    rx: tokio::sync::mpsc::UnboundedReceiver<ClientEvent>,
    sid: acp_client::session::update::SessionId,
    dir: tempfile::TempDir,
}

async fn start_with(scenario: Value, permission: PermissionMode) -> Setup {
    start_with_options(scenario, permission, ConnectionOptions::default()).await
}

async fn start_with_options(
    scenario: Value,
    permission: PermissionMode,
    options: ConnectionOptions,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = acp_testkit::write_scenario(dir.path(), &scenario);
    let (host, rx) = TestHost::new(permission);
    let conn = Connection::spawn(&fake_agent(&path, dir.path()), host.clone(), options).unwrap();
    conn.initialize().await.unwrap();
    let sid = conn
        .new_session(SessionParams::new(dir.path()))
        .await
        .unwrap()
        .session_id;
    Setup {
        conn,
        host,
        rx,
        sid,
        dir,
    }
}

async fn start(steps: Value) -> Setup {
    start_with(
        json!({"turns": [{"steps": steps}]}),
        PermissionMode::Pick("allow_once"),
    )
    .await
}

/// The agent's text of the whole session, to look for expectation reports.
async fn turn(s: &Setup, prompt: &str) -> StopReason {
    tokio::time::timeout(WAIT * 3, s.conn.prompt(&s.sid, vec![text(prompt)]))
        .await
        .expect("turn timed out")
        .unwrap()
}

fn assert_no_failed_expectation(s: &Setup) {
    let t = agent_text(&s.conn, &s.sid);
    assert!(!t.contains("EXPECTATION FAILED"), "{t}");
}

#[tokio::test]
async fn streamed_chunks_arrive_in_order_and_complete() {
    let s = start(json!([{"type": "text", "text": "The quick brown fox jumps over the lazy dog.", "chunkSize": 3}])).await;
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    assert_eq!(
        agent_text(&s.conn, &s.sid),
        "The quick brown fox jumps over the lazy dog."
    );
}

#[tokio::test]
async fn a_crash_mid_turn_fails_the_prompt_with_the_stderr_tail() {
    let s = start(json!([
        {"type": "text", "text": "working"},
        {"type": "crash", "stderr": "panic: out of tea", "code": 3}
    ]))
    .await;
    let err = s.conn.prompt(&s.sid, vec![text("go")]).await.unwrap_err();
    match &err {
        Error::AgentExited {
            status,
            stderr_tail,
        } => {
            assert_eq!(status.code, Some(3));
            assert!(stderr_tail.contains("out of tea"), "{stderr_tail}");
        }
        other => panic!("unexpected {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("exit code 3") && msg.contains("out of tea"),
        "{msg}"
    );
    // The text streamed before the crash is kept.
    assert_eq!(agent_text(&s.conn, &s.sid), "working");
}

#[tokio::test]
async fn exit_before_initialize_is_reported_with_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let path = acp_testkit::write_scenario(
        dir.path(),
        &json!({"initialize": {"fault": {"type": "exit", "stderr": "missing API key: set FOO_KEY", "code": 2}}}),
    );
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let conn = Connection::spawn(
        &fake_agent(&path, dir.path()),
        host,
        ConnectionOptions::default(),
    )
    .unwrap();
    let err = conn.initialize().await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("exit code 2"), "{msg}");
    assert!(msg.contains("missing API key"), "{msg}");
}

#[tokio::test]
async fn an_oversized_line_fails_the_connection_with_the_limit_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = acp_testkit::write_scenario(
        dir.path(),
        &json!({"turns": [{"steps": [{"type": "oversizedLine", "bytes": 300000}]}]}),
    );
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let options = ConnectionOptions {
        max_line_bytes: 100_000,
        ..Default::default()
    };
    let conn = Connection::spawn(&fake_agent(&path, dir.path()), host, options).unwrap();
    conn.initialize().await.unwrap();
    let sid = conn
        .new_session(SessionParams::new(dir.path()))
        .await
        .unwrap()
        .session_id;
    let err = conn.prompt(&sid, vec![text("go")]).await.unwrap_err();
    assert!(
        matches!(err, Error::LineTooLong { limit: 100_000 }),
        "{err}"
    );
    assert!(err.to_string().contains("100000"));
}

#[tokio::test]
async fn a_stderr_flood_does_not_stall_the_agent() {
    let s = start(json!([
        {"type": "floodStderr", "bytes": 50_000_000},
        {"type": "text", "text": "still alive"}
    ]))
    .await;
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    assert_eq!(agent_text(&s.conn, &s.sid), "still alive");
    let tail = s.conn.stderr_tail().unwrap();
    assert!(tail.len() <= 64 * 1024, "tail is bounded: {}", tail.len());
}

#[tokio::test]
async fn shutdown_leaves_no_grandchild_behind() {
    let s = start(json!([{"type": "spawnGrandchild"}, {"type": "text", "text": "spawned"}])).await;
    turn(&s, "go").await;
    let tail = s.conn.stderr_tail().unwrap();
    let pid: i32 = tail
        .lines()
        .find_map(|l| l.split("grandchild pid: ").nth(1))
        .and_then(|p| p.trim().parse().ok())
        .unwrap_or_else(|| panic!("no grandchild pid in {tail}"));
    assert!(pid_alive(pid));
    s.conn.shutdown().await;
    for _ in 0..100 {
        if !pid_alive(pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("grandchild {pid} outlived the agent");
}

#[tokio::test]
async fn dropping_the_connection_kills_the_agent_group() {
    let s = start(json!([{"type": "spawnGrandchild"}])).await;
    turn(&s, "go").await;
    let agent_pid = s.conn.pid().unwrap() as i32;
    let tail = s.conn.stderr_tail().unwrap();
    let pid: i32 = tail
        .lines()
        .find_map(|l| l.split("grandchild pid: ").nth(1))
        .and_then(|p| p.trim().parse().ok())
        .unwrap();
    drop(s);
    for _ in 0..100 {
        if !pid_alive(pid) && !pid_alive(agent_pid) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("agent or grandchild outlived the connection");
}

#[tokio::test]
async fn fs_reads_follow_line_and_limit_and_the_sandbox() {
    let s = start(json!([
        {"type": "call", "method": "fs/read_text_file", "params": {"path": "{{cwd}}/f.txt", "line": 2, "limit": 2},
         "expect": {"result": {"content": "two\nthree\n"}}},
        {"type": "call", "method": "fs/read_text_file", "params": {"path": "{{cwd}}/f.txt", "line": 4},
         "expect": {"result": {"content": "four"}}},
        {"type": "call", "method": "fs/read_text_file", "params": {"path": "{{cwd}}/f.txt", "limit": 0},
         "expect": {"result": {"content": ""}}},
        {"type": "call", "method": "fs/read_text_file", "params": {"path": "{{cwd}}/f.txt", "line": 9},
         "expect": {"error": -32602}},
        {"type": "call", "method": "fs/read_text_file", "params": {"path": "{{cwd}}/../outside.txt"},
         "expect": {"error": -32002}},
        {"type": "call", "method": "fs/read_text_file", "params": {"path": "f.txt"},
         "expect": {"error": -32602}},
        {"type": "text", "text": "ok"}
    ]))
    .await;
    std::fs::write(s.dir.path().join("f.txt"), "one\ntwo\nthree\nfour").unwrap();
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    assert_no_failed_expectation(&s);
}

#[tokio::test]
async fn fs_reads_see_the_editor_buffer_first() {
    let s = start(json!([
        {"type": "call", "method": "fs/read_text_file", "params": {"path": "{{cwd}}/open.txt", "line": 2, "limit": 1},
         "expect": {"result": {"content": "unsaved line\n"}}},
    ]))
    .await;
    let path = s.dir.path().canonicalize().unwrap().join("open.txt");
    std::fs::write(&path, "on disk\n").unwrap();
    *s.host.buffers.buffer.lock().unwrap() = Some((path, "first\nunsaved line\nlast\n".into()));
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    assert_no_failed_expectation(&s);
}

#[tokio::test]
async fn fs_writes_create_nested_files_and_report_the_edit() {
    let mut s = start(json!([
        {"type": "call", "method": "fs/write_text_file",
         "params": {"path": "{{cwd}}/new/dir/file.txt", "content": "hello\n"}, "expect": {"ok": true}},
        {"type": "call", "method": "fs/write_text_file",
         "params": {"path": "/etc/acp-should-not-exist", "content": "x"}, "expect": {"error": -32002}},
    ]))
    .await;
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    assert_no_failed_expectation(&s);
    let written = std::fs::read_to_string(s.dir.path().join("new/dir/file.txt")).unwrap();
    assert_eq!(written, "hello\n");
    assert!(!Path::new("/etc/acp-should-not-exist").exists());
    let e = wait_event(&mut s.rx, |e| matches!(e, ClientEvent::FileEdited(_))).await;
    if let ClientEvent::FileEdited(edit) = e {
        assert_eq!(edit.old_content, None);
        assert_eq!(edit.new_content, "hello\n");
    }
}

#[tokio::test]
async fn terminals_run_commands_and_keep_the_tail() {
    let s = start(json!([
        {"type": "runTerminal", "command": "echo hello from a terminal",
         "expect": {"exitCode": 0, "outputContains": "hello from a terminal"}},
        {"type": "call", "method": "terminal/create",
         "params": {"command": "sh", "args": ["-c", "for i in $(seq 1 2000); do echo line$i; done"], "outputByteLimit": 100},
         "saveAs": "t"},
        {"type": "call", "method": "terminal/wait_for_exit", "params": {"terminalId": "{{t.terminalId}}"},
         "expect": {"result": {"exitCode": 0}}},
        {"type": "call", "method": "terminal/output", "params": {"terminalId": "{{t.terminalId}}"},
         "expect": {"result": {"truncated": true}, "contains": {"output": "line2000"}}},
        {"type": "call", "method": "terminal/release", "params": {"terminalId": "{{t.terminalId}}"}, "expect": {"ok": true}},
        {"type": "call", "method": "terminal/output", "params": {"terminalId": "{{t.terminalId}}"},
         "expect": {"error": -32002}},
        {"type": "call", "method": "terminal/create", "params": {"command": "ls", "cwd": "/"},
         "expect": {"error": -32002}},
    ]))
    .await;
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    assert_no_failed_expectation(&s);
}

#[tokio::test]
async fn terminal_kill_stops_the_process_tree_and_keeps_the_terminal() {
    let s = start(json!([
        {"type": "call", "method": "terminal/create",
         "params": {"command": "sh", "args": ["-c", "echo started; sleep 1000"]}, "saveAs": "t"},
        {"type": "sleep", "ms": 200},
        {"type": "call", "method": "terminal/kill", "params": {"terminalId": "{{t.terminalId}}"}, "expect": {"ok": true}},
        {"type": "call", "method": "terminal/wait_for_exit", "params": {"terminalId": "{{t.terminalId}}"},
         "expect": {"result": {"signal": "SIGKILL"}}},
        {"type": "call", "method": "terminal/output", "params": {"terminalId": "{{t.terminalId}}"},
         "expect": {"contains": {"output": "started"}}},
    ]))
    .await;
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    assert_no_failed_expectation(&s);
}

#[tokio::test]
async fn always_allow_for_one_command_never_approves_another_or_an_edit() {
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let always = json!([
        {"optionId": "always", "name": "Always", "kind": "allow_always"},
        {"optionId": "once", "name": "Once", "kind": "allow_once"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"}
    ]);
    let ask = |id: &str, kind: &str, title: &str, input: Value| {
        json!({"type": "requestPermission",
               "toolCall": {"toolCallId": id, "title": title, "kind": kind, "rawInput": input},
               "options": always})
    };
    let s = start_with(
        json!({"turns": [{"steps": [
            ask("a", "execute", "cargo test", json!({"command": "cargo test"})),
            ask("b", "execute", "cargo test", json!({"command": "cargo test"})),
            ask("c", "execute", "rm -rf x", json!({"command": "rm -rf x"})),
            ask("d", "edit", "cargo test", json!({"path": "{{cwd}}/cargo test"})),
        ]}]}),
        PermissionMode::Manual(ptx),
    )
    .await;
    let conn = s.conn.clone();
    let sid = s.sid.clone();
    let turn = tokio::spawn(async move { conn.prompt(&sid, vec![text("go")]).await });
    // First request: the user picks "always".
    let (req, answer) = next_prompt(&mut prx).await;
    assert_eq!(req.tool_call.title.as_deref(), Some("cargo test"));
    choose(answer, "always");
    // Second (same command) is answered from memory; the next ones are asked.
    let (req, answer) = next_prompt(&mut prx).await;
    assert_eq!(req.tool_call.title.as_deref(), Some("rm -rf x"));
    choose(answer, "no");
    let (req, answer) = next_prompt(&mut prx).await;
    assert_eq!(
        req.tool_call.kind.as_ref().map(|k| k.as_str()),
        Some("edit")
    );
    answer
        .send(acp_client::policy::permission::PermissionDecision::Cancelled)
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::EndTurn);
    let t = agent_text(&s.conn, &s.sid);
    assert!(t.contains("permission: always"), "{t}");
    assert!(t.contains("permission: once"), "remembered answer: {t}");
    assert!(t.contains("permission: no"), "{t}");
    assert!(t.contains("permission: cancelled"), "{t}");
}

#[tokio::test]
async fn persisted_permission_memory_reloads_for_a_new_connection() {
    let state = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let scenario = json!({"turns": [{"steps": [
        {"type": "requestPermission",
         "toolCall": {"toolCallId": "a", "title": "make test", "kind": "execute", "rawInput": {"command": "make test"}},
         "options": [{"optionId": "always", "name": "Always", "kind": "allow_always"},
                     {"optionId": "once", "name": "Once", "kind": "allow_once"}]}
    ]}]});
    for round in 0..2 {
        let path = acp_testkit::write_scenario(project.path(), &scenario);
        let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
        let (host, _rx) = TestHost::new(PermissionMode::Manual(ptx));
        let conn = Connection::spawn(
            &fake_agent(&path, project.path()),
            host,
            ConnectionOptions::default(),
        )
        .unwrap();
        conn.with_permissions(|p| p.persist_in(state.path(), project.path()))
            .unwrap();
        conn.initialize().await.unwrap();
        let sid = conn
            .new_session(SessionParams::new(project.path()))
            .await
            .unwrap()
            .session_id;
        let c = conn.clone();
        let s2 = sid.clone();
        let turn = tokio::spawn(async move { c.prompt(&s2, vec![text("go")]).await });
        if round == 0 {
            let (_req, answer) = next_prompt(&mut prx).await;
            choose(answer, "always");
        }
        assert_eq!(turn.await.unwrap().unwrap(), StopReason::EndTurn);
        if round == 1 {
            // Nobody was asked in the second run.
            assert!(prx.try_recv().is_err());
            assert!(agent_text(&conn, &sid).contains("permission: once"));
        }
        conn.shutdown().await;
    }
}

#[tokio::test]
async fn cancel_during_a_pending_prompt_answers_cancelled_and_the_turn_ends_once() {
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let s = start_with(
        json!({"turns": [{"steps": [
            {"type": "toolCall", "toolCallId": "e1", "title": "Edit", "kind": "edit", "status": "pending"},
            {"type": "requestPermission", "toolCall": {"toolCallId": "e1"}},
            {"type": "text", "text": "after"}
        ]}]}),
        PermissionMode::Manual(ptx),
    )
    .await;
    let conn = s.conn.clone();
    let sid = s.sid.clone();
    let turn = tokio::spawn(async move { conn.prompt(&sid, vec![text("go")]).await });
    let (_req, _answer) = next_prompt(&mut prx).await;
    s.conn.cancel(&s.sid).unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::Cancelled);
    let t = agent_text(&s.conn, &s.sid);
    assert!(t.contains("permission: cancelled"), "{t}");
    let status = s
        .conn
        .with_session(&s.sid, |st| {
            st.tool_call(&"e1".into()).unwrap().status.clone()
        })
        .unwrap();
    assert_eq!(status.as_str(), "cancelled");
}

#[tokio::test]
async fn load_replays_what_was_sent_live() {
    let s = start(json!([
        {"type": "thought", "text": "hmm"},
        {"type": "text", "text": "answer", "chunkSize": 2},
        {"type": "toolCall", "toolCallId": "t", "title": "Read", "kind": "read", "status": "completed"},
        {"type": "plan", "entries": [{"content": "a", "priority": "high", "status": "completed"}]}
    ]))
    .await;
    turn(&s, "question").await;
    let live = s
        .conn
        .with_session(&s.sid, |st| serde_json::to_value(st.entries()).unwrap())
        .unwrap();
    // A fresh connection to a new agent process cannot load (history is per
    // process), so load on the same connection: the model is rebuilt.
    s.conn.close_session(&s.sid).await.unwrap();
    s.conn
        .load_session(&s.sid, SessionParams::new(s.dir.path()))
        .await
        .unwrap();
    let replayed = s
        .conn
        .with_session(&s.sid, |st| serde_json::to_value(st.entries()).unwrap())
        .unwrap();
    // The live model starts with the user's prompt (recorded by the client);
    // the fake agent does not replay user messages unless asked to.
    let live_agent_side: Vec<&Value> = live
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] != "user_message")
        .collect();
    let replayed: Vec<&Value> = replayed.as_array().unwrap().iter().collect();
    assert_eq!(live_agent_side, replayed);
}

/// A chat closed and its session loaded again at once (a user reopening it
/// from the list): the close's clean-up, when its answer comes after the
/// load began, must not forget the loaded session. Before the fix the
/// replay was dropped as an unknown session's and the session was gone.
#[tokio::test]
async fn a_load_right_after_a_close_of_the_same_session_keeps_its_replay() {
    let s = start_with(
        json!({"closeAnswerDelayMs": 300, "replayUserMessages": true,
            "turns": [{"steps": [{"type": "text", "text": "answer"}]}]}),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    turn(&s, "question").await;
    let conn = s.conn.clone();
    let sid = s.sid.clone();
    let close = tokio::spawn(async move { conn.close_session(&sid).await });
    // The close is on the wire (its answer 300 ms away) when the load starts.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let loaded = tokio::time::timeout(
        WAIT,
        s.conn
            .load_session(&s.sid, SessionParams::new(s.dir.path())),
    )
    .await
    .expect("load timed out");
    loaded.unwrap();
    close.await.unwrap().unwrap();
    assert!(
        s.conn.session_ids().contains(&s.sid),
        "the loaded session is open"
    );
    let entries = s
        .conn
        .with_session(&s.sid, |st| serde_json::to_value(st.entries()).unwrap())
        .unwrap();
    let text = entries.to_string();
    assert!(
        text.contains("question") && text.contains("answer"),
        "{text}"
    );
}

/// gemini-cli reads a file before it creates it (its issue 9280): the
/// `missing_file_read_empty` quirk answers such a read with empty content,
/// only inside the workspace; off, the spec's `-32002` is answered.
#[tokio::test]
async fn the_missing_file_read_quirk_answers_empty_content_inside_the_workspace_only() {
    let steps = json!([
        {"type": "call", "method": "fs/read_text_file", "params": {"path": "{{cwd}}/new.txt"},
         "saveAs": "inside",
         "onOk": [{"type": "text", "text": "inside: ok [{{inside.content}}]\n"}],
         "onError": [{"type": "text", "text": "inside: error {{inside.error.code}}\n"}]},
        {"type": "call", "method": "fs/read_text_file", "params": {"path": "/nonexistent-acp-test/new.txt"},
         "saveAs": "outside",
         "onOk": [{"type": "text", "text": "outside: ok\n"}],
         "onError": [{"type": "text", "text": "outside: error {{outside.error.code}}\n"}]}
    ]);
    for (quirk, inside) in [(false, "inside: error -32002"), (true, "inside: ok []")] {
        let options = ConnectionOptions {
            missing_file_read_empty: quirk,
            ..ConnectionOptions::default()
        };
        let s = start_with_options(
            json!({"turns": [{"steps": steps}]}),
            PermissionMode::Pick("allow_once"),
            options,
        )
        .await;
        turn(&s, "read").await;
        let t = agent_text(&s.conn, &s.sid);
        assert!(t.contains(inside), "quirk {quirk}: {t}");
        assert!(t.contains("outside: error -32002"), "quirk {quirk}: {t}");
        assert!(
            !s.dir.path().join("new.txt").exists(),
            "a read creates nothing"
        );
    }
}

#[tokio::test]
async fn the_prompt_responses_usage_is_reported_before_the_turn_ends() {
    let s = start_with(
        json!({"turns": [
            {"match": "with", "steps": [], "usage": {"totalTokens": 30, "inputTokens": 20, "outputTokens": 10, "cachedReadTokens": 5}},
            {"match": "bad", "steps": [], "usage": {"totalTokens": "many"}}
        ]}),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    turn(&s, "with usage").await;
    let usages: Vec<acp_client::session::TurnUsage> = s
        .host
        .events()
        .into_iter()
        .filter_map(|e| match e {
            ClientEvent::Session {
                change: acp_client::session::SessionChange::TurnUsage { usage },
                ..
            } => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(
        usages,
        [acp_client::session::TurnUsage {
            total: 30,
            input: 20,
            output: 10,
            thought: None,
            cached_read: Some(5),
            cached_write: None,
        }]
    );
    // A usage that does not fit is ignored; the turn still ends.
    assert_eq!(turn(&s, "bad usage").await, StopReason::EndTurn);
    let count = s
        .host
        .events()
        .iter()
        .filter(|e| {
            matches!(
                e,
                ClientEvent::Session {
                    change: acp_client::session::SessionChange::TurnUsage { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(count, 1);
}

/// gemini-cli offers "allow always" and, in a folder it does not trust,
/// fails the tool call instead: later prompts of the session offer the
/// once options only, and the user is told why.
#[tokio::test]
async fn after_an_always_refused_by_the_agent_only_once_options_are_offered() {
    let refused = "Cannot enable privileged approval modes in an untrusted folder.";
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let mut s = start_with(
        json!({"turns": [{"steps": [
            {"type": "toolCall", "toolCallId": "t1", "title": "Run ls", "kind": "execute", "status": "pending"},
            {"type": "requestPermission", "toolCall": {"toolCallId": "t1"},
             "on": {"allow_always": [{"type": "toolCallUpdate", "toolCallId": "t1", "status": "failed",
                    "content": [{"type": "content", "content": {"type": "text", "text": refused}}]}]}},
            {"type": "toolCall", "toolCallId": "t2", "title": "Run pwd", "kind": "execute", "status": "pending"},
            {"type": "requestPermission", "toolCall": {"toolCallId": "t2"}}
        ]}]}),
        PermissionMode::Manual(ptx),
    )
    .await;
    let c = s.conn.clone();
    let s2 = s.sid.clone();
    let turn = tokio::spawn(async move { c.prompt(&s2, vec![text("go")]).await });
    let kinds = |r: &acp_client::policy::permission::PermissionRequest| -> Vec<String> {
        r.options
            .iter()
            .map(|o| o.kind.as_str().to_owned())
            .collect()
    };
    let (first, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    assert!(kinds(&first).contains(&"allow_always".to_owned()));
    answer
        .send(
            acp_client::policy::permission::PermissionDecision::Selected {
                option_id: "allow_always".into(),
            },
        )
        .unwrap();
    let notice = wait_event(&mut s.rx, |e| {
        matches!(
            e,
            ClientEvent::Session {
                change: acp_client::session::SessionChange::Notice { .. },
                ..
            }
        )
    })
    .await;
    let ClientEvent::Session {
        change: acp_client::session::SessionChange::Notice { title, .. },
        ..
    } = notice
    else {
        unreachable!()
    };
    assert!(title.contains("does not trust this folder"), "{title}");
    let (second, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        kinds(&second),
        ["allow_once", "reject_once", "reject_always"]
    );
    answer
        .send(
            acp_client::policy::permission::PermissionDecision::Selected {
                option_id: "allow_once".into(),
            },
        )
        .unwrap();
    tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(agent_text(&s.conn, &s.sid).contains("permission: allow_once"));
}
