//! An agent built with the official ACP Rust SDK (`agent-client-protocol`
//! 5.2), speaking ACP on stdin/stdout, steered by `tests/sdk_interop.rs`
//! over a loopback control socket (`SDK_AGENT_CONTROL=127.0.0.1:port`).
//!
//! The SDK decodes every request the client sends into its own typed struct;
//! only then is it forwarded to the test (as that struct, serialized again),
//! so a request the SDK cannot decode never reaches the test. What the test
//! asks the agent to send (responses, notifications, agent->client requests)
//! is first decoded into the SDK's typed structs and sent by the SDK, so the
//! client sees the SDK's own encoding.
//!
//! Control lines, one JSON object each:
//! - to the test: `{"type":"received","id"?,"method","params"}` (no id for a
//!   notification), `{"type":"cancelled","id"}` when the client withdrew that
//!   request, `{"type":"result","call","result"|"error"}` for an
//!   agent->client request;
//! - from the test: `{"type":"respond","id","result"|"error"}`,
//!   `{"type":"notify","method","params"}`, `{"type":"call","call","method",
//!   "params"}`, `{"type":"cancel_call","call"}`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::{self, schema as sdk};
use agent_client_protocol::{Agent, ByteStreams, Client};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

type Responders = Arc<Mutex<HashMap<u64, v1::Responder<Value>>>>;

fn error_json(e: &agent_client_protocol::Error) -> Value {
    let mut v = json!({"code": i32::from(e.code), "message": e.message});
    if let Some(data) = &e.data {
        v["data"] = data.clone();
    }
    v
}

fn error_from_json(v: &Value) -> agent_client_protocol::Error {
    let code = v["code"].as_i64().unwrap_or(-32603) as i32;
    let message = v["message"].as_str().unwrap_or("").to_owned();
    let e = agent_client_protocol::Error::new(code, message);
    match v.get("data") {
        Some(d) => e.data(d.clone()),
        None => e,
    }
}

/// Forwards each decoded request of type `$req` to the test.
macro_rules! forward {
    ($builder:expr, $ctx:ident, $method:literal, $req:ty) => {{
        let ctx = $ctx.clone();
        $builder.on_receive_request(
            async move |req: $req, responder, _cx| {
                ctx.request(
                    $method,
                    serde_json::to_value(&req).expect("serialize"),
                    responder.erase_to_json(),
                );
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
    }};
}

#[derive(Clone)]
struct Ctx {
    out: mpsc::UnboundedSender<Value>,
    responders: Responders,
    next: Arc<Mutex<u64>>,
}

impl Ctx {
    fn request(&self, method: &str, params: Value, responder: v1::Responder<Value>) {
        let id = {
            let mut n = self.next.lock().expect("lock");
            *n += 1;
            *n
        };
        let cancellation = responder.cancellation();
        self.responders.lock().expect("lock").insert(id, responder);
        let out = self.out.clone();
        tokio::spawn(async move {
            cancellation.cancelled().await;
            let _ = out.send(json!({"type": "cancelled", "id": id}));
        });
        let _ = self
            .out
            .send(json!({"type": "received", "id": id, "method": method, "params": params}));
    }
}

/// Sends the agent->client request `method` with the SDK's type for it and
/// reports the decoded answer as `{"type":"result"}`.
macro_rules! call {
    ($method:expr, $params:expr, $cx:expr, $out:expr, $call:expr, $calls:expr, $( $name:literal => $req:ty ),* $(,)?) => {
        match $method {
            $( $name => {
                let req: $req = match serde_json::from_value($params) {
                    Ok(r) => r,
                    Err(e) => panic!("the test sent a {} the SDK cannot decode: {e}", $name),
                };
                let sent = $cx.send_request(req);
                $calls.lock().expect("lock").insert($call, sent.cancellation_handle());
                let out = $out.clone();
                let call = $call;
                tokio::spawn(async move {
                    let line = match sent.block_task().await {
                        Ok(r) => json!({"type": "result", "call": call, "result": r}),
                        Err(e) => json!({"type": "result", "call": call, "error": error_json(&e)}),
                    };
                    let _ = out.send(line);
                });
            } )*
            other => panic!("the SDK agent cannot send `{other}`"),
        }
    };
}

#[tokio::main]
async fn main() {
    let addr =
        std::env::var("SDK_AGENT_CONTROL").expect("SDK_AGENT_CONTROL names the control socket");
    let control = TcpStream::connect(addr).await.expect("connect to the test");
    let (control_read, mut control_write) = control.into_split();
    let (out, mut out_rx) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        while let Some(line) = out_rx.recv().await {
            let mut s = line.to_string();
            s.push('\n');
            if control_write.write_all(s.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let ctx = Ctx {
        out: out.clone(),
        responders: Arc::default(),
        next: Arc::default(),
    };

    let builder = Agent.v1().name("sdk-interop-agent");
    let builder = forward!(builder, ctx, "initialize", sdk::InitializeRequest);
    let builder = forward!(builder, ctx, "authenticate", sdk::AuthenticateRequest);
    let builder = forward!(builder, ctx, "session/new", sdk::NewSessionRequest);
    let builder = forward!(builder, ctx, "session/load", sdk::LoadSessionRequest);
    let builder = forward!(builder, ctx, "session/list", sdk::ListSessionsRequest);
    let builder = forward!(builder, ctx, "session/resume", sdk::ResumeSessionRequest);
    let builder = forward!(builder, ctx, "session/close", sdk::CloseSessionRequest);
    let builder = forward!(builder, ctx, "session/prompt", sdk::PromptRequest);
    let builder = forward!(builder, ctx, "session/set_mode", sdk::SetSessionModeRequest);
    let builder = forward!(
        builder,
        ctx,
        "session/set_config_option",
        sdk::SetSessionConfigOptionRequest
    );
    let cancel_out = out.clone();
    let builder = builder.on_receive_notification(
        async move |n: sdk::CancelNotification, _cx| {
            let params = serde_json::to_value(&n).expect("serialize");
            let _ = cancel_out
                .send(json!({"type": "received", "method": "session/cancel", "params": params}));
            Ok(())
        },
        agent_client_protocol::on_receive_notification!(),
    );

    let transport = ByteStreams::new(
        tokio::io::stdout().compat_write(),
        tokio::io::stdin().compat(),
    );
    let responders = ctx.responders.clone();
    let result = builder
        .connect_with(transport, async move |cx: v1::ConnectionTo<Client>| {
            let calls = Arc::new(Mutex::new(HashMap::new()));
            let mut lines = BufReader::new(control_read).lines();
            loop {
                tokio::select! {
                    line = lines.next_line() => {
                        let Ok(Some(line)) = line else { break };
                        let msg: Value = serde_json::from_str(&line).expect("control line");
                        match msg["type"].as_str().unwrap_or("") {
                            "respond" => {
                                let id = msg["id"].as_u64().expect("id");
                                let responder = responders.lock().expect("lock").remove(&id).expect("unknown responder");
                                // A closed connection or a late answer to a
                                // cancelled request: nobody reads the error.
                                let _ = match msg.get("error") {
                                    Some(e) => responder.respond_with_error(error_from_json(e)),
                                    None => responder.respond(msg["result"].clone()),
                                };
                            }
                            "notify" => {
                                let params = msg["params"].clone();
                                match msg["method"].as_str().unwrap_or("") {
                                    "session/update" => {
                                        let n: sdk::SessionNotification = serde_json::from_value(params).expect("a SessionNotification");
                                        cx.send_notification(n).expect("send session/update");
                                    }
                                    "elicitation/complete" => {
                                        let n: sdk::CompleteElicitationNotification = serde_json::from_value(params).expect("a CompleteElicitationNotification");
                                        cx.send_notification(n).expect("send elicitation/complete");
                                    }
                                    other => panic!("the SDK agent cannot send `{other}`"),
                                }
                            }
                            "call" => {
                                let call = msg["call"].as_u64().expect("call");
                                let method = msg["method"].as_str().unwrap_or("").to_owned();
                                call!(method.as_str(), msg["params"].clone(), cx, out, call, calls,
                                    "session/request_permission" => sdk::RequestPermissionRequest,
                                    "fs/read_text_file" => sdk::ReadTextFileRequest,
                                    "fs/write_text_file" => sdk::WriteTextFileRequest,
                                    "terminal/create" => sdk::CreateTerminalRequest,
                                    "terminal/output" => sdk::TerminalOutputRequest,
                                    "terminal/wait_for_exit" => sdk::WaitForTerminalExitRequest,
                                    "terminal/kill" => sdk::KillTerminalRequest,
                                    "terminal/release" => sdk::ReleaseTerminalRequest,
                                    "elicitation/create" => sdk::CreateElicitationRequest,
                                );
                            }
                            "cancel_call" => {
                                let call = msg["call"].as_u64().expect("call");
                                if let Some(handle) = calls.lock().expect("lock").get(&call) {
                                    let _ = handle.cancel();
                                }
                            }
                            other => panic!("unknown control message `{other}`"),
                        }
                    }
                    () = cx.incoming_closed() => break,
                }
            }
            Ok(())
        })
        .await;
    if let Err(e) = result {
        eprintln!("sdk-interop-agent: {e:?}");
    }
}
