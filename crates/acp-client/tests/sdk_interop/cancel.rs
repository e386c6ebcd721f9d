//! Cancelling a turn (`session/cancel`) and a single request
//! (`$/cancel_request`), in both directions.

use acp_client::policy::permission::PermissionDecision;
use acp_client::session::update::{Content, ToolStatus};
use acp_client::session::{Entry, Message};
use acp_client::{ClientEvent, StopReason};
use agent_client_protocol_schema::v1 as sdk;
use agent_client_protocol_schema::v1::ErrorCode;

use super::sdk_agent::start;
use super::support::{wait_event, PermissionMode, TestHost, WAIT};
use super::{all_caps, chunk, open_session, start_turn, text};

#[tokio::test]
async fn cancel_reaches_the_agent_and_the_turn_ends_once_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::with_caps(all_caps(), PermissionMode::Manual(ptx));
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let (turn, _req, responder) = start_turn(&conn, &mut agent, &sid, vec![text("go")]).await;

    agent.update(
        "sess-1",
        sdk::SessionUpdate::ToolCall(
            sdk::ToolCall::new("t1", "Delete target/")
                .kind(sdk::ToolKind::Delete)
                .status(sdk::ToolCallStatus::Pending),
        ),
    );
    let cx = agent.cx.clone();
    let permission = tokio::spawn(async move {
        cx.send_request(sdk::RequestPermissionRequest::new(
            "sess-1",
            sdk::ToolCallUpdate::new("t1", sdk::ToolCallUpdateFields::new()),
            vec![sdk::PermissionOption::new(
                "ok",
                "Allow",
                sdk::PermissionOptionKind::AllowOnce,
            )],
        ))
        .block_task()
        .await
    });
    // The user sees the prompt, merged with the tool call, and does not
    // answer; the turn is cancelled instead.
    let (request, _never_answered) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(request.tool_call.title.as_deref(), Some("Delete target/"));
    conn.cancel(&sid).unwrap();

    let cancel = agent.expect_cancel().await;
    assert_eq!(cancel.session_id.0.as_ref(), "sess-1");
    // The pending permission request was answered `cancelled`, which their
    // type decodes.
    let response = tokio::time::timeout(WAIT, permission)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(response.outcome, sdk::RequestPermissionOutcome::Cancelled);
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::PermissionCancelled { .. })
    })
    .await;
    let status = conn
        .with_session(&sid, |s| s.tool_call(&"t1".into()).unwrap().status.clone())
        .unwrap();
    assert_eq!(status, ToolStatus::Cancelled);

    // Updates after the cancel still apply; the turn ends with their stop
    // reason, once.
    agent.update(
        "sess-1",
        sdk::SessionUpdate::AgentMessageChunk(chunk("Stopped.")),
    );
    responder
        .respond(sdk::PromptResponse::new(sdk::StopReason::Cancelled))
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::Cancelled);
    let last = conn
        .with_session(&sid, |s| s.entries().last().cloned())
        .unwrap();
    assert_eq!(
        last,
        Some(Entry::AgentMessage(Message {
            message_id: None,
            content: vec![Content::text("Stopped.")],
        }))
    );
    assert!(
        agent.silent_for(200).await,
        "nothing else reaches the agent"
    );
}

#[tokio::test]
async fn cancel_request_works_in_both_directions() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::with_caps(all_caps(), PermissionMode::Manual(ptx));
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;

    // The agent withdraws a permission request with `$/cancel_request`:
    // the editor's prompt is closed and their side gets -32800.
    let sent = agent.cx.send_request(sdk::RequestPermissionRequest::new(
        "sess-1",
        sdk::ToolCallUpdate::new(
            "t1",
            sdk::ToolCallUpdateFields::new().title("Run ls".to_owned()),
        ),
        vec![sdk::PermissionOption::new(
            "ok",
            "Allow",
            sdk::PermissionOptionKind::AllowOnce,
        )],
    ));
    let (request, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(request.tool_call.title.as_deref(), Some("Run ls"));
    sent.cancel().unwrap();
    let err = tokio::time::timeout(WAIT, sent.block_task())
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.code, ErrorCode::RequestCancelled, "{err:?}");
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::PermissionCancelled { .. })
    })
    .await;
    // The editor answering late changes nothing.
    let _ = answer.send(PermissionDecision::Selected {
        option_id: "ok".into(),
    });

    // We withdraw a request whose caller gave up (the same path a timeout
    // takes): their responder sees the cancellation of exactly that request.
    let c = conn.clone();
    let s = sid.clone();
    let call = tokio::spawn(async move { c.set_mode(&s, "code").await });
    let (_req, responder) = agent.expect_set_mode().await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let cancellation = responder.cancellation();
    tokio::time::timeout(WAIT, cancellation.cancelled())
        .await
        .expect("the SDK agent never saw our $/cancel_request");
    // Their late answer is dropped quietly; the connection keeps working.
    responder
        .respond_with_error(sdk::Error::request_cancelled())
        .unwrap();
    let c = conn.clone();
    let s = sid.clone();
    let call = tokio::spawn(async move { c.set_mode(&s, "ask").await });
    let (req, responder) = agent.expect_set_mode().await;
    assert_eq!(req.mode_id.0.as_ref(), "ask");
    responder
        .respond(sdk::SetSessionModeResponse::new())
        .unwrap();
    call.await.unwrap().unwrap();
    assert!(!conn.is_closed());
}
