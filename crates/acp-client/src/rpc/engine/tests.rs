//! The engine alone, over an in-memory duplex: each test plays the peer,
//! asserts exactly the lines the engine wrote, then that nothing else was
//! written (a marker notification sent last must be the next line: the
//! writer keeps call order).
#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use super::*;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf};
use tokio::sync::Notify;

/// What the engine handed up, for the test to check.
#[derive(Default)]
struct Recorder {
    notifications: Mutex<Vec<(String, Option<String>)>>,
    /// Lines of the method `bulk`, taken whole by `take_line`.
    taken: Mutex<Vec<Value>>,
    warnings: Mutex<Vec<String>>,
    closing: Mutex<Vec<String>>,
    closed: Mutex<Vec<bool>>,
    /// Requests named `block` wait here until the test releases them.
    release: Notify,
}

impl Handler for Recorder {
    async fn request(
        self: Arc<Self>,
        method: String,
        params: Option<Box<RawValue>>,
    ) -> Result<Value, RpcError> {
        match method.as_str() {
            "echo" => Ok(json!({ "echo": params.map(|p| p.get().to_owned()) })),
            // A reply of `n` bytes, as a whole-file read makes.
            "big" => {
                let n = params
                    .and_then(|p| serde_json::from_str::<Value>(p.get()).ok())
                    .and_then(|p| p["n"].as_u64())
                    .unwrap_or(0);
                Ok(json!("x".repeat(n as usize)))
            }
            "block" => {
                self.release.notified().await;
                Ok(json!("released"))
            }
            other => Err(RpcError::method_not_found(other)),
        }
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        self.notifications
            .lock()
            .push((method.to_owned(), params.map(|p| p.get().to_owned())));
    }

    fn take_line(&self, line: &[u8]) -> bool {
        match crate::rpc::notification_params::<Value>(line, "bulk") {
            Some(params) => {
                self.taken.lock().push(params);
                true
            }
            None => false,
        }
    }

    fn warn(&self, message: String) {
        self.warnings.lock().push(message);
    }

    fn closing(&self, reason: &CloseReason) {
        self.closing.lock().push(format!("{reason:?}"));
    }

    async fn input_ended(self: Arc<Self>, failure: Option<CloseReason>) -> CloseReason {
        failure.unwrap_or(CloseReason::Exited {
            status: ExitInfo {
                code: Some(3),
                signal: None,
            },
            stderr_tail: "bye".into(),
        })
    }

    async fn closed(self: Arc<Self>, _reason: CloseReason, first: bool) {
        self.closed.lock().push(first)
    }
}

/// The test's end of the wire.
struct Peer {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    out: WriteHalf<DuplexStream>,
}

impl Peer {
    async fn send(&mut self, message: Value) {
        let mut line = serde_json::to_vec(&message).unwrap();
        line.push(b'\n');
        self.out.write_all(&line).await.unwrap();
    }

    async fn send_raw(&mut self, line: &str) {
        self.out.write_all(line.as_bytes()).await.unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = self.lines.next_line().await.unwrap().expect("a line");
        serde_json::from_str(&line).unwrap()
    }

    /// Asserts the engine wrote nothing since the last [`Peer::next`]:
    /// the marker sent now is the next line.
    async fn assert_nothing_else(&mut self, engine: &Engine<Recorder>) {
        engine.notify("test/marker", &json!({})).unwrap();
        assert_eq!(
            self.next().await,
            json!({ "jsonrpc": "2.0", "method": "test/marker", "params": {} }),
            "the engine wrote something else first"
        );
    }
}

fn start() -> (Arc<Engine<Recorder>>, Tasks, Arc<Recorder>, Peer) {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (our_read, our_write) = tokio::io::split(ours);
    let (their_read, their_write) = tokio::io::split(theirs);
    let handler = Arc::new(Recorder::default());
    let limits = Limits {
        max_line_bytes: 1 << 16,
        outgoing_queue: 64,
        max_outgoing_bytes: 1 << 20,
    };
    let (engine, tasks) = Engine::start(our_read, our_write, handler.clone(), limits);
    let peer = Peer {
        lines: BufReader::new(their_read).lines(),
        out: their_write,
    };
    (engine, tasks, handler, peer)
}

/// Our request, in its own task so the test can play the peer meanwhile.
fn spawn_call(
    engine: &Arc<Engine<Recorder>>,
    method: &'static str,
    params: Value,
) -> tokio::task::JoinHandle<Result<Value>> {
    let engine = engine.clone();
    tokio::spawn(async move { engine.request::<Value>(method, params, None).await })
}

#[tokio::test]
async fn a_request_is_sent_once_and_resolved_by_its_response() {
    let (engine, _tasks, _h, mut peer) = start();
    let call = spawn_call(&engine, "ping", json!({ "n": 1 }));
    assert_eq!(
        peer.next().await,
        json!({ "jsonrpc": "2.0", "id": 0, "method": "ping", "params": { "n": 1 } })
    );
    peer.send(json!({ "jsonrpc": "2.0", "id": 0, "result": { "pong": true } }))
        .await;
    assert_eq!(call.await.unwrap().unwrap(), json!({ "pong": true }));
    peer.assert_nothing_else(&engine).await;
}

#[tokio::test]
async fn an_error_response_fails_the_call_with_its_method() {
    let (engine, _tasks, _h, mut peer) = start();
    let call = spawn_call(&engine, "nope", json!({}));
    let sent = peer.next().await;
    peer.send(
        json!({ "jsonrpc": "2.0", "id": sent["id"], "error": { "code": -32601, "message": "no" } }),
    )
    .await;
    match call.await.unwrap() {
        Err(Error::Rpc { method, error }) => {
            assert_eq!(method, "nope");
            assert_eq!(error.code, -32601);
        }
        other => panic!("expected an RPC error, got {other:?}"),
    }
    peer.assert_nothing_else(&engine).await;
}

#[tokio::test]
async fn a_dropped_call_is_withdrawn_with_cancel_request() {
    let (engine, _tasks, _h, mut peer) = start();
    let call = spawn_call(&engine, "slow", json!({}));
    let sent = peer.next().await;
    call.abort();
    assert_eq!(
        peer.next().await,
        json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": sent["id"] } })
    );
    // A late answer to the withdrawn request is ignored.
    peer.send(json!({ "jsonrpc": "2.0", "id": sent["id"], "result": null }))
        .await;
    peer.assert_nothing_else(&engine).await;
}

#[tokio::test]
async fn an_incoming_request_gets_exactly_one_reply() {
    let (engine, _tasks, _h, mut peer) = start();
    peer.send(json!({ "jsonrpc": "2.0", "id": "a", "method": "echo", "params": [1] }))
        .await;
    assert_eq!(
        peer.next().await,
        json!({ "jsonrpc": "2.0", "id": "a", "result": { "echo": "[1]" } })
    );
    peer.send(json!({ "jsonrpc": "2.0", "id": 7, "method": "unknown" }))
        .await;
    let reply = peer.next().await;
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["error"]["code"], codes::METHOD_NOT_FOUND);
    peer.assert_nothing_else(&engine).await;
}

#[tokio::test]
async fn a_cancelled_incoming_request_is_aborted_and_answered_once() {
    let (engine, _tasks, handler, mut peer) = start();
    peer.send(json!({ "jsonrpc": "2.0", "id": 5, "method": "block" }))
        .await;
    peer.send(
        json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": 5 } }),
    )
    .await;
    let reply = peer.next().await;
    assert_eq!(reply["id"], 5);
    assert_eq!(reply["error"]["code"], codes::REQUEST_CANCELLED);
    // Released now, the aborted handler would answer a second time.
    handler.release.notify_one();
    // Cancelling again, or an unknown id, sends nothing.
    peer.send(
        json!({ "jsonrpc": "2.0", "method": "$/cancel_request", "params": { "requestId": 5 } }),
    )
    .await;
    peer.assert_nothing_else(&engine).await;
    assert!(handler.notifications.lock().is_empty());
}

#[tokio::test]
async fn a_reused_incoming_id_is_refused_and_the_first_request_still_answered() {
    let (engine, _tasks, handler, mut peer) = start();
    peer.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "block" }))
        .await;
    peer.send(json!({ "jsonrpc": "2.0", "id": 1, "method": "echo" }))
        .await;
    let refused = peer.next().await;
    assert_eq!(refused["id"], 1);
    assert_eq!(refused["error"]["code"], codes::INVALID_REQUEST);
    handler.release.notify_one();
    assert_eq!(
        peer.next().await,
        json!({ "jsonrpc": "2.0", "id": 1, "result": "released" })
    );
    peer.assert_nothing_else(&engine).await;
    assert_eq!(handler.warnings.lock().len(), 1);
}

#[tokio::test]
async fn notifications_and_bad_lines_go_to_the_handler_and_get_no_reply() {
    let (engine, _tasks, handler, mut peer) = start();
    peer.send(json!({ "jsonrpc": "2.0", "method": "session/update", "params": { "x": 1 } }))
        .await;
    peer.send(json!({ "jsonrpc": "2.0", "method": "bulk", "params": [1] }))
        .await;
    // A request of that method is not the handler's to take.
    peer.send(json!({ "jsonrpc": "2.0", "id": 8, "method": "bulk", "params": [2] }))
        .await;
    peer.send_raw("not json\n\n").await;
    peer.send(json!({ "jsonrpc": "2.0", "method": "$/cancel_request" }))
        .await;
    // A request after them proves they were all read.
    peer.send(json!({ "jsonrpc": "2.0", "id": 9, "method": "echo" }))
        .await;
    let mut answered = [peer.next().await, peer.next().await];
    answered.sort_by_key(|m| m["id"].as_i64());
    assert_eq!(answered[0]["error"]["code"], codes::METHOD_NOT_FOUND);
    assert_eq!(answered[1]["id"], 9);
    peer.assert_nothing_else(&engine).await;
    assert_eq!(
        *handler.notifications.lock(),
        vec![("session/update".to_owned(), Some(r#"{"x":1}"#.to_owned()))]
    );
    // The handler took the notification it decodes in one pass.
    assert_eq!(*handler.taken.lock(), vec![json!([1])]);
    let warnings = handler.warnings.lock();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(warnings[0].contains("not JSON-RPC"));
    assert!(warnings[1].contains("$/cancel_request"));
}

#[tokio::test]
async fn end_of_input_closes_with_the_handlers_reason_and_fails_pending_calls() {
    let (engine, _tasks, handler, mut peer) = start();
    let call = spawn_call(&engine, "work", json!({}));
    peer.next().await;
    drop(peer);
    match call.await.unwrap() {
        Err(Error::AgentExited {
            status,
            stderr_tail,
        }) => {
            assert_eq!(status.code, Some(3));
            assert_eq!(stderr_tail, "bye");
        }
        other => panic!("expected AgentExited, got {other:?}"),
    }
    assert!(matches!(engine.closed().await, CloseReason::Exited { .. }));
    // Later calls fail at once with the same reason; nothing is queued.
    assert!(matches!(
        engine.request::<Value>("late", json!({}), None).await,
        Err(Error::AgentExited { .. })
    ));
    assert!(matches!(
        engine.notify("late", &json!({})),
        Err(Error::AgentExited { .. })
    ));
    assert_eq!(handler.closing.lock().len(), 1);
    // `closed` runs after `close`; wait for the reader task to finish it.
    while handler.closed.lock().is_empty() {
        tokio::task::yield_now().await;
    }
    assert_eq!(*handler.closed.lock(), vec![true]);
}

#[tokio::test]
async fn dropping_the_tasks_shuts_the_engine_down_and_closes_the_peers_input() {
    let (engine, tasks, handler, mut peer) = start();
    drop(tasks);
    assert!(matches!(engine.closed().await, CloseReason::Shutdown));
    assert_eq!(handler.closing.lock().len(), 1);
    assert!(
        peer.lines.next_line().await.unwrap().is_none(),
        "the peer reads end of file"
    );
}

#[tokio::test]
async fn a_line_over_the_limit_closes_the_engine() {
    let (engine, _tasks, _h, peer) = start();
    let long = format!("{}\n", "x".repeat((1 << 16) + 10));
    let mut out = peer.out;
    // The engine stops reading midway, so this write may fail: not checked.
    tokio::spawn(async move { out.write_all(long.as_bytes()).await });
    assert!(matches!(
        engine.closed().await,
        CloseReason::LineTooLong { limit } if limit == 1 << 16
    ));
}

#[tokio::test]
async fn replies_a_peer_does_not_read_are_bounded_in_bytes_and_its_requests_refused() {
    // The engine under test holds at most 1 MiB of unread replies
    // (`start`); the peer asks for ten 400 KB replies and reads none.
    let (engine, _tasks, handler, mut peer) = start();
    for id in 0..10 {
        peer.send(
            json!({ "jsonrpc": "2.0", "id": id, "method": "big", "params": { "n": 400_000 } }),
        )
        .await;
    }
    tokio::time::timeout(Duration::from_secs(20), async {
        while !handler
            .warnings
            .lock()
            .iter()
            .any(|w| w.contains("not reading"))
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the user is told the agent does not read");
    // Every request still gets its one reply: a result while the bound
    // held, then a short error.
    let (mut served, mut refused) = (0, 0);
    for _ in 0..10 {
        let reply = peer.next().await;
        if reply["result"].is_string() {
            served += 1;
        } else {
            assert!(
                reply["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("not served"),
                "{reply}"
            );
            refused += 1;
        }
    }
    assert!(
        refused > 0 && served > 0,
        "served {served}, refused {refused}"
    );
    assert!(
        served <= 4,
        "at most the bound plus the replies in flight: {served}"
    );
    // Read again: served again.
    peer.send(json!({ "jsonrpc": "2.0", "id": 99, "method": "big", "params": { "n": 10 } }))
        .await;
    assert_eq!(peer.next().await["result"], json!("xxxxxxxxxx"));
    drop(engine);
}
