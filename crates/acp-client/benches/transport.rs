//! Transport throughput: how fast agent output becomes editor events.
//!
//! Two kinds of lines, as real agents send them in bulk: `agent_message_chunk`
//! (streamed answer text, 100 bytes each) and `tool_call_update` (status and
//! content of running tools). For each kind, three measurements over the same
//! lines:
//!
//! - `raw_value`: `serde_json::from_slice::<Value>` of each line. Nothing
//!   useful can be faster than parsing the JSON once, so this is the
//!   practical limit the others are compared with (budget: >= 50% of it).
//! - `decode_dispatch`: what the reader task does per line, without I/O:
//!   `decode_session_update_line` (envelope and params in one pass; lines
//!   of other shapes: `Incoming::decode`, `decode_session_notification`),
//!   `SessionState::apply`.
//! - `connection`: the whole pipeline: bytes written into an in-memory pipe,
//!   read by a `Connection` made with `from_streams`, until the `EditorHost`
//!   has received one event per line.
//!
//! `bench/run.sh` turns criterion's estimates into MB/s and messages/s for
//! doc/benchmarks.md.

// Benchmarks may unwrap, like tests (house rule): a failure here is a bug in
// the benchmark's own set-up, and should stop it loudly.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use acp_client::policy::permission::{PermissionDecision, PermissionRequest};
use acp_client::session::update::{
    decode_session_notification, decode_session_update_line, SessionId,
};
use acp_client::session::SessionState;
use acp_client::wire::Incoming;
use acp_client::{ClientEvent, Connection, ConnectionOptions, EditorHost, SessionParams};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::Notify;

/// Lines per measured batch: enough that per-batch set-up is noise.
const LINES: usize = 10_000;
const SESSION: &str = "bench-session";

/// `count` agent_message_chunk lines of `bytes` ASCII letters each.
fn chunk_lines(count: usize, bytes: usize) -> Vec<Vec<u8>> {
    let text: String = (b'a'..=b'z').cycle().take(bytes).map(char::from).collect();
    let line = json!({
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": SESSION,
            "update": {
                "sessionUpdate": "agent_message_chunk",
                "content": { "type": "text", "text": text },
            },
        },
    });
    vec![serde_json::to_vec(&line).unwrap(); count]
}

/// `count` tool_call_update lines over 100 tool calls: a status and a
/// one-block text content each, the shape agents send while a tool runs.
fn tool_update_lines(count: usize) -> Vec<Vec<u8>> {
    (0..count)
        .map(|i| {
            let status = if i % 10 == 9 {
                "completed"
            } else {
                "in_progress"
            };
            let line = json!({
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": SESSION,
                    "update": {
                        "sessionUpdate": "tool_call_update",
                        "toolCallId": format!("call-{}", i % 100),
                        "status": status,
                        "content": [{
                            "type": "content",
                            "content": { "type": "text", "text": format!("line {i}: cargo test output, 42 passed") },
                        }],
                    },
                },
            });
            serde_json::to_vec(&line).unwrap()
        })
        .collect()
}

/// Bytes on the wire, newlines included.
fn wire_bytes(lines: &[Vec<u8>]) -> u64 {
    lines.iter().map(|l| l.len() as u64 + 1).sum()
}

/// What the reader task does with one line, minus the I/O and the event sink.
/// What the reader task does with one line, minus the I/O and the event
/// sink: the one-pass decode of a streamed update, or the envelope and then
/// the params for any other shape.
fn decode_dispatch(state: &mut SessionState, line: &[u8]) -> usize {
    let notification = match decode_session_update_line(line) {
        Some(notification) => notification,
        None => {
            let Incoming::Notification { method, params } = Incoming::decode(line).unwrap() else {
                panic!("the bench lines are notifications");
            };
            assert_eq!(method, "session/update");
            decode_session_notification(params.as_deref().unwrap()).unwrap()
        }
    };
    state.apply(notification.update).len()
}

/// An editor that counts session events and wakes the bench at a target.
#[derive(Default)]
struct CountingHost {
    events: AtomicUsize,
    target: AtomicUsize,
    reached: Notify,
}

#[async_trait::async_trait]
impl EditorHost for CountingHost {
    async fn request_permission(&self, _request: PermissionRequest) -> PermissionDecision {
        PermissionDecision::Cancelled
    }

    fn on_event(&self, event: ClientEvent) {
        if let ClientEvent::Session { .. } = event {
            let n = self.events.fetch_add(1, Ordering::AcqRel) + 1;
            if n == self.target.load(Ordering::Acquire) {
                // notify_one keeps a permit if the bench is not waiting yet.
                self.reached.notify_one();
            }
        }
    }
}

/// A connected client with one open session, and the agent's end of the
/// pipe that carries agent output to it.
struct Pipeline {
    host: Arc<CountingHost>,
    agent_out: DuplexStream,
    // Held so the connection stays open; dropped with the pipeline.
    _conn: Connection,
}

/// Plays the agent for `initialize` and `session/new` on the in-memory pipe,
/// then hands back the write end for the bench to stream into.
async fn pipeline() -> Pipeline {
    let (client_in, mut agent_out) = tokio::io::duplex(1 << 16);
    let (client_out, agent_in) = tokio::io::duplex(1 << 16);
    let host = Arc::new(CountingHost::default());
    let conn = Connection::from_streams(
        client_in,
        client_out,
        host.clone(),
        ConnectionOptions::default(),
    );
    let agent = tokio::spawn(async move {
        let mut requests = BufReader::new(agent_in).lines();
        for _ in 0..2 {
            let line = requests.next_line().await.unwrap().unwrap();
            let request: Value = serde_json::from_str(&line).unwrap();
            let result = match request["method"].as_str().unwrap() {
                "initialize" => json!({ "protocolVersion": 1, "agentCapabilities": {} }),
                "session/new" => json!({ "sessionId": SESSION }),
                other => panic!("unexpected request {other}"),
            };
            let reply = json!({ "jsonrpc": "2.0", "id": request["id"], "result": result });
            let mut bytes = serde_json::to_vec(&reply).unwrap();
            bytes.push(b'\n');
            agent_out.write_all(&bytes).await.unwrap();
        }
        // Keep reading so the client's writes never block on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = requests.next_line().await {} });
        agent_out
    });
    conn.initialize().await.unwrap();
    conn.new_session(SessionParams::new(std::env::temp_dir()))
        .await
        .unwrap();
    let agent_out = agent.await.unwrap();
    Pipeline {
        host,
        agent_out,
        _conn: conn,
    }
}

/// Streams `batch` (lines already joined with newlines) through a fresh
/// connection per iteration and times only the streaming.
fn bench_connection(
    rt: &tokio::runtime::Runtime,
    batch: &[u8],
    lines: usize,
    iters: u64,
) -> Duration {
    rt.block_on(async {
        let mut total = Duration::ZERO;
        for _ in 0..iters {
            let mut p = pipeline().await;
            let target = p.host.events.load(Ordering::Acquire) + lines;
            p.host.target.store(target, Ordering::Release);
            let start = Instant::now();
            p.agent_out.write_all(batch).await.unwrap();
            // A hang guard, not a measurement: a lost event would block forever.
            tokio::time::timeout(Duration::from_secs(60), p.host.reached.notified())
                .await
                .expect("every line became an event");
            total += start.elapsed();
            assert_eq!(p.host.events.load(Ordering::Acquire), target);
        }
        total
    })
}

fn bench_kind(c: &mut Criterion, rt: &tokio::runtime::Runtime, name: &str, lines: Vec<Vec<u8>>) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Bytes(wire_bytes(&lines)));

    group.bench_function("raw_value", |b| {
        b.iter(|| {
            for line in &lines {
                black_box(serde_json::from_slice::<Value>(line).unwrap());
            }
        })
    });

    group.bench_function("decode_dispatch", |b| {
        b.iter_batched(
            || SessionState::new(SessionId::new(SESSION)),
            |mut state| {
                let mut changes = 0;
                for line in &lines {
                    changes += decode_dispatch(&mut state, line);
                }
                assert_eq!(changes, lines.len());
                state
            },
            BatchSize::LargeInput,
        )
    });

    let batch: Vec<u8> = lines
        .iter()
        .flat_map(|l| l.iter().copied().chain(std::iter::once(b'\n')))
        .collect();
    group.bench_function("connection", |b| {
        b.iter_custom(|iters| bench_connection(rt, &batch, lines.len(), iters))
    });
    group.finish();
}

fn transport(c: &mut Criterion) {
    // Two workers, like the editor backend: the reader task and everything else.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    bench_kind(c, &rt, "agent_message_chunk", chunk_lines(LINES, 100));
    bench_kind(c, &rt, "tool_call_update", tool_update_lines(LINES));
}

criterion_group!(benches, transport);
criterion_main!(benches);
