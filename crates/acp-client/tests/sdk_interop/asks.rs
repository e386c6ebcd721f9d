//! What the SDK agent asks the user: permission requests and
//! elicitations, answered in every way the client offers.

use acp_client::policy::permission::{OptionKind, PermissionDecision};
use acp_client::session::update::ToolKind;
use acp_client::{ClientEvent, HostCapabilities, SessionParams, StopReason};
use agent_client_protocol_schema::v1 as sdk;
use agent_client_protocol_schema::ProtocolVersion;
use serde_json::json;

use super::sdk_agent::start;
use super::support::{wait_event, PermissionMode, TestHost, WAIT};
use super::{all_caps, open_session, start_turn, text};

#[tokio::test]
async fn permission_decisions_decode_as_their_response() {
    let dir = tempfile::tempdir().unwrap();
    let (ptx, mut prx) = tokio::sync::mpsc::unbounded_channel();
    let (host, mut rx) = TestHost::with_caps(all_caps(), PermissionMode::Manual(ptx));
    let (conn, mut agent) = start(host).await;
    let sid = open_session(&conn, &mut agent, sdk::AgentCapabilities::new(), dir.path()).await;
    let (turn, _req, responder) = start_turn(&conn, &mut agent, &sid, vec![text("go")]).await;

    let options = vec![
        sdk::PermissionOption::new("yes", "Allow", sdk::PermissionOptionKind::AllowOnce),
        sdk::PermissionOption::new(
            "always",
            "Always allow",
            sdk::PermissionOptionKind::AllowAlways,
        ),
        sdk::PermissionOption::new("no", "Reject", sdk::PermissionOptionKind::RejectOnce),
        sdk::PermissionOption::new(
            "never",
            "Always reject",
            sdk::PermissionOptionKind::RejectAlways,
        ),
    ];
    let ask = |id: &str, command: &str| {
        sdk::RequestPermissionRequest::new(
            "sess-1",
            sdk::ToolCallUpdate::new(
                id.to_owned(),
                sdk::ToolCallUpdateFields::new()
                    .title(format!("Run {command}"))
                    .name("shell".to_owned())
                    .kind(sdk::ToolKind::Execute)
                    .raw_input(json!({ "command": command })),
            ),
            options.clone(),
        )
    };

    // Selected.
    let cx = agent.cx.clone();
    let request = ask("t1", "make");
    let call = tokio::spawn(async move { cx.send_request(request).block_task().await });
    let (request, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(request.session_id.0.as_ref(), "sess-1");
    assert_eq!(request.tool_call.tool_call_id.0.as_ref(), "t1");
    assert_eq!(request.tool_call.title.as_deref(), Some("Run make"));
    assert_eq!(request.tool_call.name.as_deref(), Some("shell"));
    assert_eq!(request.tool_call.kind, Some(ToolKind::Execute));
    assert_eq!(
        request.tool_call.raw_input,
        Some(json!({"command": "make"}))
    );
    let seen: Vec<(&str, &str, OptionKind)> = request
        .options
        .iter()
        .map(|o| (o.option_id.as_str(), o.name.as_str(), o.kind.clone()))
        .collect();
    assert_eq!(
        seen,
        [
            ("yes", "Allow", OptionKind::AllowOnce),
            ("always", "Always allow", OptionKind::AllowAlways),
            ("no", "Reject", OptionKind::RejectOnce),
            ("never", "Always reject", OptionKind::RejectAlways),
        ]
    );
    answer
        .send(PermissionDecision::Selected {
            option_id: "yes".into(),
        })
        .unwrap();
    let response = tokio::time::timeout(WAIT, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        response.outcome,
        sdk::RequestPermissionOutcome::Selected(sdk::SelectedPermissionOutcome::new("yes"))
    );

    // Dismissed by the user.
    let cx = agent.cx.clone();
    let request = ask("t2", "rm -rf build");
    let call = tokio::spawn(async move { cx.send_request(request).block_task().await });
    let (_request, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    answer.send(PermissionDecision::Cancelled).unwrap();
    let response = tokio::time::timeout(WAIT, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(response.outcome, sdk::RequestPermissionOutcome::Cancelled);

    // "Always allow" is remembered for the same command: the next request
    // is answered without asking, with their allow_once option.
    let cx = agent.cx.clone();
    let request = ask("t3", "cargo test");
    let call = tokio::spawn(async move { cx.send_request(request).block_task().await });
    let (_request, answer) = tokio::time::timeout(WAIT, prx.recv())
        .await
        .unwrap()
        .unwrap();
    answer
        .send(PermissionDecision::Selected {
            option_id: "always".into(),
        })
        .unwrap();
    let response = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(
        response.unwrap().outcome,
        sdk::RequestPermissionOutcome::Selected(sdk::SelectedPermissionOutcome::new("always"))
    );
    let response = agent.call(ask("t4", "cargo test")).await.unwrap();
    assert_eq!(
        response.outcome,
        sdk::RequestPermissionOutcome::Selected(sdk::SelectedPermissionOutcome::new("yes"))
    );
    wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::PermissionAutoAnswered { .. })
    })
    .await;
    assert!(prx.try_recv().is_err(), "the user must not be asked again");

    responder
        .respond(sdk::PromptResponse::new(sdk::StopReason::EndTurn))
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::EndTurn);
}

#[tokio::test]
async fn elicitations_from_the_sdk_agent_round_trip_in_both_modes_and_scopes() {
    let dir = tempfile::tempdir().unwrap();
    let caps = HostCapabilities {
        elicitation_form: true,
        elicitation_url: true,
        ..all_caps()
    };
    let (host, mut rx) = TestHost::with_caps(caps, PermissionMode::Pick("allow_once"));
    let mut asked = host.take_elicitations();
    let (conn, mut agent) = start(host).await;

    // The SDK decodes our advertisement into its typed capabilities.
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let (req, responder) = agent.expect_initialize().await;
    let elicitation = req
        .client_capabilities
        .elicitation
        .clone()
        .expect("advertised");
    assert!(elicitation.form.is_some() && elicitation.url.is_some());
    responder
        .respond(sdk::InitializeResponse::new(ProtocolVersion::V1))
        .unwrap();
    init.await.unwrap().unwrap();
    let c = conn.clone();
    let cwd = dir.path().to_path_buf();
    let new = tokio::spawn(async move { c.new_session(SessionParams::new(cwd)).await });
    let (_req, responder) = agent.expect_new_session().await;
    responder
        .respond(sdk::NewSessionResponse::new("sess-1"))
        .unwrap();
    let sid = new.await.unwrap().unwrap().session_id;

    // A form tied to the session, built with the SDK's schema builders.
    let schema = sdk::ElicitationSchema::new()
        .string("name", true)
        .integer("age", 0, 150, false)
        .boolean("subscribe", false);
    let form = sdk::ElicitationFormMode::new(sdk::ElicitationSessionScope::new("sess-1"), schema);
    let call = agent.call(sdk::CreateElicitationRequest::new(form, "Who are you?"));
    let answer = async {
        let (req, tx) = tokio::time::timeout(WAIT, asked.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(req.message, "Who are you?");
        assert_eq!(req.scope.session_id(), Some(&sid));
        let acp_client::policy::elicitation::ElicitationMode::Form { schema } = &req.mode else {
            panic!("not a form: {req:?}");
        };
        let content = schema
            .validate(
                json!({"name": "Ada", "age": 36, "subscribe": true})
                    .as_object()
                    .unwrap(),
            )
            .unwrap();
        tx.send(acp_client::policy::elicitation::ElicitationResponse::Accept { content })
            .unwrap();
    };
    let (response, ()) = tokio::join!(call, answer);
    let sdk::ElicitationAction::Accept(accept) = response.unwrap().action else {
        panic!("not accepted");
    };
    let content = accept.content.unwrap();
    assert_eq!(
        content["name"],
        sdk::ElicitationContentValue::String("Ada".into())
    );
    assert_eq!(content["age"], sdk::ElicitationContentValue::Integer(36));
    assert_eq!(
        content["subscribe"],
        sdk::ElicitationContentValue::Boolean(true)
    );

    // A URL scoped to a request, declined.
    let url = sdk::ElicitationUrlMode::new(
        sdk::ElicitationRequestScope::new(sdk::RequestId::Number(99)),
        "e-1",
        "https://example.com/consent",
    );
    let call = agent.call(sdk::CreateElicitationRequest::new(url, "Consent"));
    let answer = async {
        let (req, tx) = tokio::time::timeout(WAIT, asked.recv())
            .await
            .unwrap()
            .unwrap();
        assert!(req.scope.session_id().is_none());
        tx.send(acp_client::policy::elicitation::ElicitationResponse::Decline)
            .unwrap();
    };
    let (response, ()) = tokio::join!(call, answer);
    assert!(matches!(
        response.unwrap().action,
        sdk::ElicitationAction::Decline
    ));

    // A URL tied to the session, accepted, then completed by the agent.
    let url = sdk::ElicitationUrlMode::new(
        sdk::ElicitationSessionScope::new("sess-1"),
        "e-2",
        "https://example.com/pay",
    );
    let call = agent.call(sdk::CreateElicitationRequest::new(url, "Pay"));
    let answer = async {
        let (_req, tx) = tokio::time::timeout(WAIT, asked.recv())
            .await
            .unwrap()
            .unwrap();
        tx.send(
            acp_client::policy::elicitation::ElicitationResponse::Accept {
                content: serde_json::Map::new(),
            },
        )
        .unwrap();
    };
    let (response, ()) = tokio::join!(call, answer);
    assert!(matches!(
        response.unwrap().action,
        sdk::ElicitationAction::Accept(_)
    ));
    agent.notify(
        "elicitation/complete",
        json!(sdk::CompleteElicitationNotification::new("e-2")),
    );
    let done = wait_event(&mut rx, |e| {
        matches!(e, ClientEvent::ElicitationCompleted { .. })
    })
    .await;
    assert!(matches!(
        done,
        ClientEvent::ElicitationCompleted { elicitation_id, .. } if elicitation_id.0 == "e-2"
    ));
}
