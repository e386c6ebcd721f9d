//! An agent built with the official ACP Rust SDK (`agent-client-protocol`
//! 5), run in-process over in-memory pipes against our `Connection`.
//!
//! The SDK side decodes every request we send into its own typed struct and
//! hands it to the test together with its `Responder`, so the test plays the
//! agent with the SDK's types and asserts on exactly what each side
//! observed. A request the SDK cannot decode never reaches the test, which
//! then fails waiting for it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use acp_client::{Connection, ConnectionOptions};
use agent_client_protocol::v1::{self, schema as sdk};
use agent_client_protocol::{Agent, ByteStreams, Client};
use tokio::sync::{mpsc, oneshot};
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::support::{TestHost, WAIT};

/// A request or notification the SDK agent received and decoded.
// Each is moved through a channel once per test message; size is no concern.
#[allow(clippy::large_enum_variant)]
pub enum Received {
    Initialize(
        sdk::InitializeRequest,
        v1::Responder<sdk::InitializeResponse>,
    ),
    Authenticate(
        sdk::AuthenticateRequest,
        v1::Responder<sdk::AuthenticateResponse>,
    ),
    NewSession(
        sdk::NewSessionRequest,
        v1::Responder<sdk::NewSessionResponse>,
    ),
    LoadSession(
        sdk::LoadSessionRequest,
        v1::Responder<sdk::LoadSessionResponse>,
    ),
    ListSessions(
        sdk::ListSessionsRequest,
        v1::Responder<sdk::ListSessionsResponse>,
    ),
    ResumeSession(
        sdk::ResumeSessionRequest,
        v1::Responder<sdk::ResumeSessionResponse>,
    ),
    CloseSession(
        sdk::CloseSessionRequest,
        v1::Responder<sdk::CloseSessionResponse>,
    ),
    Prompt(sdk::PromptRequest, v1::Responder<sdk::PromptResponse>),
    SetMode(
        sdk::SetSessionModeRequest,
        v1::Responder<sdk::SetSessionModeResponse>,
    ),
    SetConfigOption(
        sdk::SetSessionConfigOptionRequest,
        v1::Responder<sdk::SetSessionConfigOptionResponse>,
    ),
    Cancel(sdk::CancelNotification),
}

impl Received {
    fn name(&self) -> &'static str {
        match self {
            Received::Initialize(..) => "initialize",
            Received::Authenticate(..) => "authenticate",
            Received::NewSession(..) => "session/new",
            Received::LoadSession(..) => "session/load",
            Received::ListSessions(..) => "session/list",
            Received::ResumeSession(..) => "session/resume",
            Received::CloseSession(..) => "session/close",
            Received::Prompt(..) => "session/prompt",
            Received::SetMode(..) => "session/set_mode",
            Received::SetConfigOption(..) => "session/set_config_option",
            Received::Cancel(..) => "session/cancel",
        }
    }
}

/// The agent side: what it received, and its SDK connection for sending
/// notifications and agent->client requests.
pub struct SdkAgent {
    pub cx: v1::ConnectionTo<Client>,
    received: mpsc::UnboundedReceiver<Received>,
}

/// Declares `SdkAgent::$fn`, which waits for the next message and asserts
/// it is a `$variant`.
macro_rules! expect_fn {
    ($fn:ident, $variant:ident, $req:ty, $resp:ty) => {
        pub async fn $fn(&mut self) -> ($req, v1::Responder<$resp>) {
            match self.next().await {
                Received::$variant(req, responder) => (req, responder),
                other => panic!(
                    "the SDK agent expected `{}`, got `{}`",
                    stringify!($variant),
                    other.name()
                ),
            }
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

    /// True when nothing more reached the agent within `ms` milliseconds.
    pub async fn silent_for(&mut self, ms: u64) -> bool {
        tokio::time::timeout(std::time::Duration::from_millis(ms), self.received.recv())
            .await
            .is_err()
    }

    expect_fn!(
        expect_initialize,
        Initialize,
        sdk::InitializeRequest,
        sdk::InitializeResponse
    );
    expect_fn!(
        expect_authenticate,
        Authenticate,
        sdk::AuthenticateRequest,
        sdk::AuthenticateResponse
    );
    expect_fn!(
        expect_new_session,
        NewSession,
        sdk::NewSessionRequest,
        sdk::NewSessionResponse
    );
    expect_fn!(
        expect_load_session,
        LoadSession,
        sdk::LoadSessionRequest,
        sdk::LoadSessionResponse
    );
    expect_fn!(
        expect_list_sessions,
        ListSessions,
        sdk::ListSessionsRequest,
        sdk::ListSessionsResponse
    );
    expect_fn!(
        expect_resume_session,
        ResumeSession,
        sdk::ResumeSessionRequest,
        sdk::ResumeSessionResponse
    );
    expect_fn!(
        expect_close_session,
        CloseSession,
        sdk::CloseSessionRequest,
        sdk::CloseSessionResponse
    );
    expect_fn!(
        expect_prompt,
        Prompt,
        sdk::PromptRequest,
        sdk::PromptResponse
    );
    expect_fn!(
        expect_set_mode,
        SetMode,
        sdk::SetSessionModeRequest,
        sdk::SetSessionModeResponse
    );
    expect_fn!(
        expect_set_config_option,
        SetConfigOption,
        sdk::SetSessionConfigOptionRequest,
        sdk::SetSessionConfigOptionResponse
    );

    /// Waits for `session/cancel`.
    pub async fn expect_cancel(&mut self) -> sdk::CancelNotification {
        match self.next().await {
            Received::Cancel(n) => n,
            other => panic!(
                "the SDK agent expected `session/cancel`, got `{}`",
                other.name()
            ),
        }
    }

    /// Sends one `session/update` built with the SDK's types.
    pub fn update(&self, session_id: &str, update: sdk::SessionUpdate) {
        self.cx
            .send_notification(sdk::SessionNotification::new(session_id.to_owned(), update))
            .expect("the SDK agent could not send a session/update");
    }

    /// Sends an agent->client request and waits for the SDK to decode our
    /// answer (an `Err` is the JSON-RPC error we answered with, or a decode
    /// failure on their side).
    pub async fn call<Req>(&self, request: Req) -> agent_client_protocol::Result<Req::Response>
    where
        Req: agent_client_protocol::JsonRpcRequest,
    {
        tokio::time::timeout(WAIT, self.cx.send_request(request).block_task())
            .await
            .expect("timed out waiting for the client's answer")
    }
}

/// Forwards each decoded request of type `$req` as `Received::$variant`.
macro_rules! forward {
    ($builder:expr, $tx:ident, $variant:ident, $req:ty) => {{
        let tx = $tx.clone();
        $builder.on_receive_request(
            async move |req: $req, responder, _cx| {
                // A closed channel means the test is over; the dropped
                // responder then answers with an error, which nobody reads.
                let _ = tx.send(Received::$variant(req, responder));
                Ok(())
            },
            agent_client_protocol::on_receive_request!(),
        )
    }};
}

/// Starts the SDK agent and connects our client to it over in-memory pipes.
pub async fn start(host: Arc<TestHost>) -> (Connection, SdkAgent) {
    let (client_side, agent_side) = tokio::io::duplex(1 << 20);
    let (client_read, client_write) = tokio::io::split(client_side);
    let (agent_read, agent_write) = tokio::io::split(agent_side);
    let conn = Connection::from_streams(
        client_read,
        client_write,
        host,
        ConnectionOptions::default(),
    );

    let (tx, received) = mpsc::unbounded_channel();
    let builder = Agent.v1().name("sdk-interop-agent");
    let builder = forward!(builder, tx, Initialize, sdk::InitializeRequest);
    let builder = forward!(builder, tx, Authenticate, sdk::AuthenticateRequest);
    let builder = forward!(builder, tx, NewSession, sdk::NewSessionRequest);
    let builder = forward!(builder, tx, LoadSession, sdk::LoadSessionRequest);
    let builder = forward!(builder, tx, ListSessions, sdk::ListSessionsRequest);
    let builder = forward!(builder, tx, ResumeSession, sdk::ResumeSessionRequest);
    let builder = forward!(builder, tx, CloseSession, sdk::CloseSessionRequest);
    let builder = forward!(builder, tx, Prompt, sdk::PromptRequest);
    let builder = forward!(builder, tx, SetMode, sdk::SetSessionModeRequest);
    let builder = forward!(
        builder,
        tx,
        SetConfigOption,
        sdk::SetSessionConfigOptionRequest
    );
    let cancel_tx = tx.clone();
    let builder = builder.on_receive_notification(
        async move |n: sdk::CancelNotification, _cx| {
            let _ = cancel_tx.send(Received::Cancel(n));
            Ok(())
        },
        agent_client_protocol::on_receive_notification!(),
    );

    let (cx_tx, cx_rx) = oneshot::channel();
    let transport = ByteStreams::new(agent_write.compat_write(), agent_read.compat());
    tokio::spawn(
        builder.connect_with(transport, async move |cx: v1::ConnectionTo<Client>| {
            let _ = cx_tx.send(cx.clone());
            // Serve until the client closes its end.
            cx.incoming_closed().await;
            Ok(())
        }),
    );
    let cx = tokio::time::timeout(WAIT, cx_rx)
        .await
        .expect("the SDK agent did not start")
        .expect("the SDK agent stopped before it started");
    (conn, SdkAgent { cx, received })
}
