//! Fault injection: the scripted fake agent (and, where the fault is about
//! bytes on the wire, an in-memory peer) misbehaving in every way the brief
//! lists. Each test asserts what a user of the API sees: the error returned,
//! the events emitted, and whether the connection still works or closed
//! cleanly. Faults already covered elsewhere are named in
//! doc/reliability.md instead of being tested twice.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use acp_client::policy::permission::PermissionDecision;
use acp_client::session::Entry;
use acp_client::wire::DEFAULT_MAX_LINE_BYTES;
use acp_client::{ClientEvent, Connection, ConnectionOptions, Error, SessionParams, StopReason};
use serde_json::{json, Value};
use support::*;
use tokio::io::{AsyncRead, ReadBuf};

struct Setup {
    conn: Connection,
    host: Arc<TestHost>,
    rx: tokio::sync::mpsc::UnboundedReceiver<ClientEvent>,
    sid: acp_client::session::update::SessionId,
    dir: tempfile::TempDir,
}

async fn start_with(
    scenario: Value,
    permission: PermissionMode,
    options: ConnectionOptions,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = acp_testkit::write_scenario(dir.path(), &scenario);
    let (host, rx) = TestHost::new(permission);
    let conn = Connection::spawn(&fake_agent(&path, dir.path()), host.clone(), options).unwrap();
    guard("initialize", conn.initialize()).await.unwrap();
    let sid = guard(
        "session/new",
        conn.new_session(SessionParams::new(dir.path())),
    )
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
        ConnectionOptions::default(),
    )
    .await
}

/// A hang guard: generous, never a timing assertion.
async fn guard<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(WAIT * 6, f)
        .await
        .unwrap_or_else(|_| panic!("{what} hung"))
}

fn warnings(host: &TestHost) -> Vec<String> {
    host.events()
        .into_iter()
        .filter_map(|e| match e {
            ClientEvent::ProtocolWarning { message } => Some(message),
            _ => None,
        })
        .collect()
}

/// A fresh agent on a fresh connection answers a turn: what a user does
/// after a crash.
async fn fresh_agent_works() {
    let s = start(json!([{"type": "text", "text": "back again"}])).await;
    let stop = guard("turn", s.conn.prompt(&s.sid, vec![text("hi")])).await;
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
    assert_eq!(agent_text(&s.conn, &s.sid), "back again");
    s.conn.shutdown().await;
}

// Agent exits before `initialize`: fake_agent.rs
// `exit_before_initialize_is_reported_with_stderr`.

#[tokio::test]
async fn an_agent_that_never_answers_initialize_times_out_naming_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let path = acp_testkit::write_scenario(
        dir.path(),
        &json!({"initialize": {"fault": {"type": "never"}}}),
    );
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let options = ConnectionOptions {
        initialize_timeout: Some(Duration::from_millis(300)),
        ..Default::default()
    };
    let conn = Connection::spawn(&fake_agent(&path, dir.path()), host, options).unwrap();
    let err = guard("initialize", conn.initialize()).await.unwrap_err();
    match &err {
        Error::Timeout { method, .. } => assert_eq!(method, "initialize"),
        other => panic!("expected a timeout, got {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("`initialize`") && msg.contains("ACP agent"),
        "{msg}"
    );
    // Nothing else works before initialize, and shutdown does not hang on
    // the silent agent.
    let err = conn
        .new_session(SessionParams::new(dir.path()))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotInitialized { .. }), "{err}");
    assert!(guard("shutdown", conn.shutdown()).await.is_some());
}

// Crash mid-stream: fake_agent.rs `a_crash_mid_turn_fails_the_prompt_with_the_stderr_tail`.

#[tokio::test]
async fn a_crash_mid_tool_call_fails_the_turn_with_the_stderr_tail() {
    let mut s = start(json!([
        {"type": "toolCall", "toolCallId": "t1", "title": "Run tests", "kind": "execute", "status": "in_progress"},
        {"type": "crash", "stderr": "fatal: tool runner died", "code": 9}
    ]))
    .await;
    let err = guard("turn", s.conn.prompt(&s.sid, vec![text("go")]))
        .await
        .unwrap_err();
    match &err {
        Error::AgentExited {
            status,
            stderr_tail,
        } => {
            assert_eq!(status.code, Some(9));
            assert!(stderr_tail.contains("tool runner died"), "{stderr_tail}");
        }
        other => panic!("unexpected {other}"),
    }
    wait_event(&mut s.rx, |e| matches!(e, ClientEvent::AgentExited { .. })).await;
    // What arrived before the crash is kept for the user to see.
    let title = s
        .conn
        .with_session(&s.sid, |st| {
            st.tool_call(&"t1".into()).map(|t| t.title.clone())
        })
        .unwrap();
    assert_eq!(title.as_deref(), Some("Run tests"));
    // Every later call fails at once with the reason, never hangs.
    assert!(s.conn.is_closed());
    let err = guard(
        "prompt after exit",
        s.conn.prompt(&s.sid, vec![text("again")]),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, Error::AgentExited { .. } | Error::Closed),
        "{err}"
    );
}

#[tokio::test]
async fn a_crash_while_a_permission_prompt_is_open_closes_the_prompt() {
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    // Two sessions, each on its own agent thread: one waits for the
    // permission answer while the other crashes the whole agent.
    let scenario = json!({"turns": [
        {"match": "ask", "steps": [{"type": "requestPermission",
            "toolCall": {"toolCallId": "e1", "title": "Edit a.txt", "kind": "edit"}}]},
        {"match": "die", "steps": [{"type": "crash", "stderr": "panic: lost the tea", "code": 4}]}
    ]});
    let mut s = start_with(
        scenario,
        PermissionMode::Manual(ptx),
        ConnectionOptions::default(),
    )
    .await;
    let other = guard(
        "session/new",
        s.conn.new_session(SessionParams::new(s.dir.path())),
    )
    .await
    .unwrap()
    .session_id;
    let c = s.conn.clone();
    let sid = s.sid.clone();
    let asking = tokio::spawn(async move { c.prompt(&sid, vec![text("ask")]).await });
    let (request, _answer) = guard("permission prompt", prx.recv()).await.unwrap();
    assert_eq!(request.tool_call.title.as_deref(), Some("Edit a.txt"));

    let err = guard("crashing turn", s.conn.prompt(&other, vec![text("die")]))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("lost the tea"), "{err}");
    // The open prompt is closed for the editor, and the waiting turn fails
    // with the same reason instead of hanging.
    let closed = wait_event(&mut s.rx, |e| {
        matches!(e, ClientEvent::PermissionCancelled { .. })
    })
    .await;
    if let ClientEvent::PermissionCancelled { session_id, .. } = closed {
        assert_eq!(session_id, s.sid);
    }
    let err = guard("waiting turn", asking).await.unwrap().unwrap_err();
    match err {
        Error::AgentExited { stderr_tail, .. } => {
            assert!(stderr_tail.contains("lost the tea"), "{stderr_tail}")
        }
        other => panic!("unexpected {other}"),
    }
    fresh_agent_works().await;
}

#[tokio::test]
async fn a_hung_agent_gets_every_cancel_and_shutdown_fails_the_turn() {
    let options = ConnectionOptions {
        shutdown_grace: Duration::from_millis(300),
        ..Default::default()
    };
    let mut s = start_with(
        json!({"turns": [{"steps": [
            {"type": "text", "text": "working"},
            {"type": "waitForCancel", "ignoreCancel": true}
        ]}]}),
        PermissionMode::Pick("allow_once"),
        options,
    )
    .await;
    let c = s.conn.clone();
    let sid = s.sid.clone();
    let turn = tokio::spawn(async move { c.prompt(&sid, vec![text("go")]).await });
    wait_event(&mut s.rx, |e| {
        serde_json::to_string(e).unwrap().contains("working")
    })
    .await;
    s.conn.cancel(&s.sid).unwrap();
    // The agent ignored the first cancel; the user presses cancel again and
    // it is sent again, not swallowed as "already cancelling".
    s.conn.cancel(&s.sid).unwrap();
    let cancels_seen = || {
        s.conn
            .stderr_tail()
            .unwrap()
            .lines()
            .filter(|l| l.contains("notification") && l.contains("session/cancel"))
            .count()
    };
    guard("both cancels reach the agent", async {
        while cancels_seen() < 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(cancels_seen(), 2);
    assert!(!turn.is_finished(), "the hung agent never answered");
    // Shutdown gets through the grace periods and fails the pending turn.
    let exit = guard("shutdown", s.conn.shutdown()).await;
    assert!(exit.is_some());
    let err = guard("turn", turn).await.unwrap().unwrap_err();
    assert!(
        matches!(err, Error::Closed | Error::AgentExited { .. }),
        "{err}"
    );
    assert!(s.conn.is_closed());
}

#[tokio::test]
async fn bad_output_from_the_agent_is_skipped_with_warnings_and_the_turn_completes() {
    let s = start(json!([
        {"type": "rawLine", "line": "Loading model... 100%"},
        {"type": "rawBytes", "hex": "7b 22 ff fe 22 7d"},
        {"type": "json", "value": {"hello": "world"}},
        {"type": "json", "value": {"jsonrpc": "2.0", "id": 987654, "result": {}}},
        {"type": "toolCall", "toolCallId": "t1", "title": "First"},
        {"type": "toolCall", "toolCallId": "t1", "title": "Same id again"},
        {"type": "update", "sessionId": "no-such-session",
         "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ghost"}}},
        {"type": "call", "method": "foo/bar", "expect": {"error": -32601}},
        {"type": "text", "text": "done"}
    ]))
    .await;
    let stop = guard("turn", s.conn.prompt(&s.sid, vec![text("go")])).await;
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
    // The agent saw -32601 for its unknown method (else it would have
    // reported a failed expectation), and the text after all of it arrived.
    assert_eq!(agent_text(&s.conn, &s.sid), "done");
    // A repeated tool call id updates the one entry.
    let tool_calls: Vec<String> = s
        .conn
        .with_session(&s.sid, |st| {
            st.entries()
                .iter()
                .filter_map(|e| match e {
                    Entry::ToolCall(tc) => Some(tc.title.clone()),
                    _ => None,
                })
                .collect()
        })
        .unwrap();
    assert_eq!(tool_calls, ["Same id again"]);
    // The ghost session's text went nowhere.
    assert!(!agent_text(&s.conn, &s.sid).contains("ghost"));
    let w = warnings(&s.host);
    let has = |needle: &str| w.iter().any(|m| m.contains(needle));
    assert!(has("Loading model"), "{w:?}");
    assert!(has("not JSON-RPC"), "{w:?}");
    assert!(has("no-such-session"), "{w:?}");
    // Garbage line, invalid UTF-8, non-JSON-RPC object, unknown session.
    assert_eq!(w.len(), 4, "{w:?}");
    assert!(!s.conn.is_closed());
    // And the connection is still usable for another turn.
    let stop = guard("second turn", s.conn.prompt(&s.sid, vec![text("again")])).await;
    assert!(stop.is_ok());
}

#[tokio::test]
async fn a_200_mb_line_fails_with_line_too_long_at_the_default_limit() {
    // Plain `x`s (`json: false`): the codec never looks inside a line, and
    // the debug-built agent would spend most of the test serializing JSON.
    let s = start(json!([{"type": "oversizedLine", "bytes": 200_000_000u64, "json": false}])).await;
    let err = guard("turn", s.conn.prompt(&s.sid, vec![text("go")]))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::LineTooLong { limit } if limit == DEFAULT_MAX_LINE_BYTES),
        "{err}"
    );
    assert!(err.to_string().contains("max_line_bytes"), "{err}");
    assert!(s.conn.is_closed());
    assert!(guard("shutdown", s.conn.shutdown()).await.is_some());
}

/// An endless line of `x` that counts what the client pulled out of it.
struct EndlessLine(Arc<AtomicUsize>);

impl AsyncRead for EndlessLine {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = buf.remaining().min(1 << 20);
        buf.put_slice(&vec![b'x'; n]);
        self.0.fetch_add(n, Ordering::SeqCst);
        Poll::Ready(Ok(()))
    }
}

#[tokio::test]
async fn an_endless_line_is_cut_off_after_the_limit_not_buffered_whole() {
    let read = Arc::new(AtomicUsize::new(0));
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let conn = Connection::from_streams(
        EndlessLine(read.clone()),
        tokio::io::sink(),
        host,
        ConnectionOptions::default(),
    );
    let err = guard("close", conn.closed()).await;
    assert!(matches!(err, Error::LineTooLong { .. }), "{err}");
    // The codec's buffer is bounded by the limit plus one 64 KiB read: the
    // memory an agent can make us hold, whatever it sends.
    let pulled = read.load(Ordering::SeqCst);
    assert!(
        pulled <= DEFAULT_MAX_LINE_BYTES + 64 * 1024 + 1,
        "read {pulled} bytes for a {DEFAULT_MAX_LINE_BYTES}-byte limit"
    );
    assert!(pulled > DEFAULT_MAX_LINE_BYTES);
}

#[tokio::test]
async fn a_500_mb_stderr_flood_neither_stalls_the_turn_nor_grows_the_tail() {
    let s = start(json!([
        {"type": "floodStderr", "bytes": 500_000_000u64},
        {"type": "text", "text": "still alive"}
    ]))
    .await;
    let stop = guard("turn", s.conn.prompt(&s.sid, vec![text("go")])).await;
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
    assert_eq!(agent_text(&s.conn, &s.sid), "still alive");
    let tail = s.conn.stderr_tail().unwrap();
    assert!(tail.len() <= 64 * 1024, "tail is bounded: {}", tail.len());
    assert!(
        tail.contains("stderr flood"),
        "the tail is the newest output"
    );
}

#[tokio::test]
async fn an_agent_that_stops_reading_makes_calls_fail_with_backpressure_not_hang() {
    let options = ConnectionOptions {
        outgoing_queue: 8,
        shutdown_grace: Duration::from_millis(300),
        ..Default::default()
    };
    let mut s = start_with(
        json!({"turns": [{"steps": [
            {"type": "stopReadingStdin"},
            {"type": "text", "text": "not listening"},
            {"type": "waitForCancel", "ignoreCancel": true}
        ]}]}),
        PermissionMode::Pick("allow_once"),
        options,
    )
    .await;
    let c = s.conn.clone();
    let sid = s.sid.clone();
    let turn = tokio::spawn(async move { c.prompt(&sid, vec![text("go")]).await });
    wait_event(&mut s.rx, |e| {
        serde_json::to_string(e).unwrap().contains("not listening")
    })
    .await;
    // Keep sending: the pipe fills, then our queue, then sends fail at once.
    let mut sent = 0usize;
    let err = guard("backpressure", async {
        loop {
            match s.conn.cancel(&s.sid) {
                Ok(()) => sent += 1,
                Err(e) => return e,
            }
            tokio::task::yield_now().await;
            assert!(sent < 10_000_000, "never saw backpressure");
        }
    })
    .await;
    assert!(matches!(err, Error::Backpressure { .. }), "{err}");
    assert!(err.to_string().contains("restart it"), "{err}");
    // A request fails the same way instead of waiting forever.
    let err = guard("request", s.conn.set_mode(&s.sid, "code"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Backpressure { .. }), "{err}");
    // Shutdown still works and fails the stuck turn.
    assert!(guard("shutdown", s.conn.shutdown()).await.is_some());
    assert!(guard("turn", turn).await.unwrap().is_err());
}

#[tokio::test]
async fn a_thousand_concurrent_agent_requests_are_each_answered_once() {
    let s = start(json!([
        {"type": "concurrentRequests", "count": 1000, "method": "fs/read_text_file",
         "params": {"path": "{{cwd}}/f.txt"}, "expect": {"result": {"content": "shared\n"}}},
        {"type": "text", "text": "after"}
    ]))
    .await;
    std::fs::write(s.dir.path().join("f.txt"), "shared\n").unwrap();
    let stop = guard("turn", s.conn.prompt(&s.sid, vec![text("go")])).await;
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
    let t = agent_text(&s.conn, &s.sid);
    assert!(t.contains("concurrent requests: 1000/1000 answered"), "{t}");
    assert!(!t.contains("EXPECTATION FAILED"), "{t}");
    // A second answer to any id would be logged by the agent as a response
    // to a request it never sent (or is no longer waiting for).
    let tail = s.conn.stderr_tail().unwrap();
    assert!(!tail.contains("never sent"), "{tail}");
}

#[tokio::test]
async fn an_agent_cancelling_its_own_permission_request_gets_minus_32800() {
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let mut s = start_with(
        json!({"turns": [{"steps": [
            {"type": "cancelOwnRequest", "method": "session/request_permission",
             "params": {"toolCall": {"toolCallId": "x1", "title": "Delete build/"},
                        "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"}]},
             "expect": {"error": -32800}},
            {"type": "text", "text": "after"}
        ]}]}),
        PermissionMode::Manual(ptx),
        ConnectionOptions::default(),
    )
    .await;
    let stop = guard("turn", s.conn.prompt(&s.sid, vec![text("go")])).await;
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
    // The cancel races the prompt: it may arrive before the editor was
    // asked (then nothing is shown). If the editor was asked, the prompt was
    // closed for it, and the user's late click sends nothing (the agent
    // would log an answer to a request it no longer waits for).
    if let Ok((_request, answer)) = prx.try_recv() {
        wait_event(&mut s.rx, |e| {
            matches!(e, ClientEvent::PermissionCancelled { .. })
        })
        .await;
        let _ = answer.send(PermissionDecision::Selected {
            option_id: "ok".into(),
        });
    }
    let t = agent_text(&s.conn, &s.sid);
    assert!(
        t.contains("cancel_request: answered with error -32800"),
        "{t}"
    );
    assert!(!t.contains("EXPECTATION FAILED"), "{t}");
}

#[tokio::test]
async fn cancelling_a_request_that_already_finished_sends_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let (host, _rx) = TestHost::new(PermissionMode::Pick("allow_once"));
    let (conn, mut peer) = connect(host);
    open_session(&conn, &mut peer, json!({}), dir.path()).await;
    let path = dir.path().join("a.txt");
    peer.send(json!({"jsonrpc":"2.0","id":1,"method":"fs/read_text_file","params":{"sessionId":"s1","path":path}}))
        .await;
    let reply = peer.recv().await;
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["content"], "alpha\n");
    peer.send(json!({"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}))
        .await;
    // Messages are handled in order, so a reply to the cancel would come
    // before the reply to this next request.
    peer.send(json!({"jsonrpc":"2.0","id":2,"method":"fs/read_text_file","params":{"sessionId":"s1","path":path}}))
        .await;
    let next = peer.recv().await;
    assert_eq!(next["id"], 2, "{next}");
    assert_eq!(next["result"]["content"], "alpha\n");
    assert!(!conn.is_closed());
}
