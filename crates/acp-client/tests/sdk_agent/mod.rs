//! An agent built with the official ACP Rust SDK (`agent-client-protocol`
//! 5.2), run as a process (`tools/sdk-interop-agent`) against our
//! `Connection` over its stdio.
//!
//! The SDK pins `agent-client-protocol-schema` at `=1.17.0` while we use
//! 1.20, and cargo holds one 1.x version per workspace, so the agent is its
//! own crate outside the workspace, built here on first use. The SDK side
//! decodes every request we send into its own typed struct and forwards it
//! over a loopback control socket; the test decodes it with the schema
//! crate's types and answers through a `Responder`, which the agent decodes
//! into the SDK's typed response before the SDK sends it. A request the SDK
//! cannot decode never reaches the test, which then fails waiting for it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};

use acp_client::{Connection, ConnectionOptions};
use agent_client_protocol_schema::v1 as sdk;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot, watch};

use crate::support::{TestHost, WAIT};

/// The agent's answer to an agent->client request: the client's result or
/// the JSON-RPC error it answered with (or a decode failure on their side).
pub type CallResult<T> = Result<T, sdk::Error>;

type Control = mpsc::UnboundedSender<Value>;

/// The responder of one request the agent received.
pub struct Responder<T> {
    id: u64,
    control: Control,
    cancelled: watch::Receiver<bool>,
    _t: PhantomData<T>,
}

impl<T: Serialize> Responder<T> {
    /// Answers with `response` (decoded into the SDK's type, sent by the SDK).
    pub fn respond(self, response: T) -> Result<(), String> {
        let result = serde_json::to_value(response).map_err(|e| e.to_string())?;
        self.control
            .send(json!({"type": "respond", "id": self.id, "result": result}))
            .map_err(|e| e.to_string())
    }

    /// Answers with a JSON-RPC error.
    pub fn respond_with_error(self, error: sdk::Error) -> Result<(), String> {
        self.control
            .send(json!({"type": "respond", "id": self.id, "error": error}))
            .map_err(|e| e.to_string())
    }

    /// Resolves when the client withdrew this request (`$/cancel_request`).
    pub fn cancellation(&self) -> Cancellation {
        Cancellation(self.cancelled.clone())
    }
}

/// Waits for the client's `$/cancel_request` of one request.
pub struct Cancellation(watch::Receiver<bool>);

impl Cancellation {
    pub async fn cancelled(mut self) {
        let _ = self.0.wait_for(|c| *c).await;
    }
}

/// A request or notification the SDK agent received and decoded.
pub struct Received {
    method: String,
    params: Value,
    id: Option<u64>,
}

/// An agent->client request the SDK agent sent.
pub struct Sent<T> {
    call: u64,
    control: Control,
    result: oneshot::Receiver<Value>,
    _t: PhantomData<T>,
}

impl<T: DeserializeOwned> Sent<T> {
    /// Sends `$/cancel_request` for this request.
    pub fn cancel(&self) -> Result<(), String> {
        self.control
            .send(json!({"type": "cancel_call", "call": self.call}))
            .map_err(|e| e.to_string())
    }

    /// The client's answer, decoded by the SDK.
    pub async fn block_task(self) -> CallResult<T> {
        let line = self.result.await.expect("the SDK agent stopped");
        match line.get("error") {
            Some(e) => Err(serde_json::from_value(e.clone()).expect("an error object")),
            None => Ok(serde_json::from_value(line["result"].clone()).expect("a typed result")),
        }
    }
}

/// A request the agent can send to the client: its method and answer type.
pub trait AgentRequest: Serialize {
    const METHOD: &'static str;
    type Response: DeserializeOwned;
}

macro_rules! agent_request {
    ($($req:ty => $method:literal, $resp:ty;)*) => {
        $(impl AgentRequest for $req {
            const METHOD: &'static str = $method;
            type Response = $resp;
        })*
    };
}

agent_request! {
    sdk::RequestPermissionRequest => "session/request_permission", sdk::RequestPermissionResponse;
    sdk::ReadTextFileRequest => "fs/read_text_file", sdk::ReadTextFileResponse;
    sdk::WriteTextFileRequest => "fs/write_text_file", sdk::WriteTextFileResponse;
    sdk::CreateTerminalRequest => "terminal/create", sdk::CreateTerminalResponse;
    sdk::TerminalOutputRequest => "terminal/output", sdk::TerminalOutputResponse;
    sdk::WaitForTerminalExitRequest => "terminal/wait_for_exit", sdk::WaitForTerminalExitResponse;
    sdk::KillTerminalRequest => "terminal/kill", sdk::KillTerminalResponse;
    sdk::ReleaseTerminalRequest => "terminal/release", sdk::ReleaseTerminalResponse;
    sdk::CreateElicitationRequest => "elicitation/create", sdk::CreateElicitationResponse;
}

/// The agent's sending side (cloneable, like the SDK's connection).
#[derive(Clone)]
pub struct AgentCx {
    control: Control,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>,
    next_call: Arc<Mutex<u64>>,
}

impl AgentCx {
    /// Sends an agent->client request; `block_task` waits for the answer.
    pub fn send_request<Req: AgentRequest>(&self, request: Req) -> Sent<Req::Response> {
        let call = {
            let mut n = self.next_call.lock().unwrap();
            *n += 1;
            *n
        };
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(call, tx);
        let params = serde_json::to_value(request).unwrap();
        self.control
            .send(json!({"type": "call", "call": call, "method": Req::METHOD, "params": params}))
            .expect("the SDK agent stopped");
        Sent {
            call,
            control: self.control.clone(),
            result: rx,
            _t: PhantomData,
        }
    }
}

/// The agent side: what it received, and its connection for sending
/// notifications and agent->client requests.
pub struct SdkAgent {
    pub cx: AgentCx,
    received: mpsc::UnboundedReceiver<Received>,
    cancelled: Arc<Mutex<HashMap<u64, watch::Sender<bool>>>>,
    _child: tokio::process::Child,
}

/// Declares `SdkAgent::$fn`, which waits for the next message and asserts
/// it is the request `$method`.
macro_rules! expect_fn {
    ($fn:ident, $method:literal, $req:ty, $resp:ty) => {
        pub async fn $fn(&mut self) -> ($req, Responder<$resp>) {
            let r = self.next().await;
            assert_eq!(
                r.method, $method,
                "the SDK agent expected `{}`, got `{}`",
                $method, r.method
            );
            let req: $req = serde_json::from_value(r.params).unwrap();
            (req, self.responder(r.id.expect("a request")))
        }
    };
}

impl SdkAgent {
    /// The next message the agent decoded.
    pub async fn next(&mut self) -> Received {
        tokio::time::timeout(WAIT, self.received.recv())
            .await
            .expect("timed out waiting for a message at the SDK agent")
            .expect("the SDK agent stopped")
    }

    fn responder<T>(&self, id: u64) -> Responder<T> {
        let (tx, rx) = watch::channel(false);
        let mut cancelled = self.cancelled.lock().unwrap();
        // The cancellation may have arrived before the test took the request.
        if let Some(already) = cancelled.remove(&id) {
            let _ = tx.send(*already.borrow());
        }
        cancelled.insert(id, tx);
        Responder {
            id,
            control: self.cx.control.clone(),
            cancelled: rx,
            _t: PhantomData,
        }
    }

    /// True when nothing more reached the agent within `ms` milliseconds.
    pub async fn silent_for(&mut self, ms: u64) -> bool {
        tokio::time::timeout(std::time::Duration::from_millis(ms), self.received.recv())
            .await
            .is_err()
    }

    expect_fn!(
        expect_initialize,
        "initialize",
        sdk::InitializeRequest,
        sdk::InitializeResponse
    );
    expect_fn!(
        expect_authenticate,
        "authenticate",
        sdk::AuthenticateRequest,
        sdk::AuthenticateResponse
    );
    expect_fn!(
        expect_new_session,
        "session/new",
        sdk::NewSessionRequest,
        sdk::NewSessionResponse
    );
    expect_fn!(
        expect_load_session,
        "session/load",
        sdk::LoadSessionRequest,
        sdk::LoadSessionResponse
    );
    expect_fn!(
        expect_list_sessions,
        "session/list",
        sdk::ListSessionsRequest,
        sdk::ListSessionsResponse
    );
    expect_fn!(
        expect_resume_session,
        "session/resume",
        sdk::ResumeSessionRequest,
        sdk::ResumeSessionResponse
    );
    expect_fn!(
        expect_close_session,
        "session/close",
        sdk::CloseSessionRequest,
        sdk::CloseSessionResponse
    );
    expect_fn!(
        expect_prompt,
        "session/prompt",
        sdk::PromptRequest,
        sdk::PromptResponse
    );
    expect_fn!(
        expect_set_mode,
        "session/set_mode",
        sdk::SetSessionModeRequest,
        sdk::SetSessionModeResponse
    );
    expect_fn!(
        expect_set_config_option,
        "session/set_config_option",
        sdk::SetSessionConfigOptionRequest,
        sdk::SetSessionConfigOptionResponse
    );

    /// Waits for `session/cancel`.
    pub async fn expect_cancel(&mut self) -> sdk::CancelNotification {
        let r = self.next().await;
        assert_eq!(
            r.method, "session/cancel",
            "the SDK agent expected `session/cancel`, got `{}`",
            r.method
        );
        serde_json::from_value(r.params).unwrap()
    }

    /// Sends one `session/update` built with the schema's types.
    pub fn update(&self, session_id: &str, update: sdk::SessionUpdate) {
        let n = sdk::SessionNotification::new(session_id.to_owned(), update);
        self.notify("session/update", serde_json::to_value(n).unwrap());
    }

    /// Sends a notification the SDK agent knows (`session/update`,
    /// `elicitation/complete`).
    pub fn notify(&self, method: &str, params: Value) {
        self.cx
            .control
            .send(json!({"type": "notify", "method": method, "params": params}))
            .expect("the SDK agent stopped");
    }

    /// Sends an agent->client request and waits for the SDK to decode our
    /// answer.
    pub async fn call<Req: AgentRequest>(&self, request: Req) -> CallResult<Req::Response> {
        tokio::time::timeout(WAIT, self.cx.send_request(request).block_task())
            .await
            .expect("timed out waiting for the client's answer")
    }
}

/// Builds the SDK agent once per test binary and returns its path.
fn agent_binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
        let manifest = root.join("tools/sdk-interop-agent/Cargo.toml");
        // Its own target dir: the outer `cargo test` may hold the lock of ours.
        let target = root.join("target/sdk-interop-agent");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let build = |offline: bool| {
            let mut cmd = std::process::Command::new(&cargo);
            cmd.arg("build")
                .arg("--quiet")
                .arg("--manifest-path")
                .arg(&manifest)
                .env("CARGO_TARGET_DIR", &target);
            if offline {
                cmd.arg("--offline");
            }
            cmd.status().is_ok_and(|s| s.success())
        };
        // Offline when the registry cache already holds its crates (CI, the
        // sandbox); a first build on a fresh machine needs the registry.
        assert!(
            build(true) || build(false),
            "building tools/sdk-interop-agent failed"
        );
        target.join("debug/sdk-interop-agent")
    })
    .clone()
}

/// Starts the SDK agent and connects our client to it over its stdio.
pub async fn start(host: Arc<TestHost>) -> (Connection, SdkAgent) {
    let bin = tokio::task::spawn_blocking(agent_binary).await.unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut child = tokio::process::Command::new(bin)
        .env("SDK_AGENT_CONTROL", addr.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the SDK agent");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let conn = Connection::from_streams(stdout, stdin, host, ConnectionOptions::default());

    let (socket, _) = tokio::time::timeout(WAIT, listener.accept())
        .await
        .expect("the SDK agent did not start")
        .unwrap();
    let (read, mut write) = socket.into_split();
    let (control, mut control_rx) = mpsc::unbounded_channel::<Value>();
    tokio::spawn(async move {
        while let Some(line) = control_rx.recv().await {
            let mut s = line.to_string();
            s.push('\n');
            if write.write_all(s.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let cx = AgentCx {
        control,
        pending: Arc::default(),
        next_call: Arc::default(),
    };
    let (tx, received) = mpsc::unbounded_channel();
    let cancelled: Arc<Mutex<HashMap<u64, watch::Sender<bool>>>> = Arc::default();
    let pending = cx.pending.clone();
    let cancels = cancelled.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: Value = serde_json::from_str(&line).unwrap();
            match msg["type"].as_str().unwrap_or("") {
                "received" => {
                    let _ = tx.send(Received {
                        method: msg["method"].as_str().unwrap_or("").to_owned(),
                        params: msg["params"].clone(),
                        id: msg["id"].as_u64(),
                    });
                }
                "cancelled" => {
                    let id = msg["id"].as_u64().unwrap();
                    let mut c = cancels.lock().unwrap();
                    match c.get(&id) {
                        Some(s) => {
                            let _ = s.send(true);
                        }
                        None => {
                            c.insert(id, watch::channel(true).0);
                        }
                    }
                }
                "result" => {
                    let call = msg["call"].as_u64().unwrap();
                    if let Some(tx) = pending.lock().unwrap().remove(&call) {
                        let _ = tx.send(msg);
                    }
                }
                other => panic!("unknown message from the SDK agent `{other}`"),
            }
        }
    });
    (
        conn,
        SdkAgent {
            cx,
            received,
            cancelled,
            _child: child,
        },
    )
}
