//! Elicitation end to end: the scripted fake agent (a real subprocess) asks
//! forms and URLs tied to a session, a tool call, or one of our requests
//! (`authenticate`); the editor answers accept, decline or cancel, or a
//! cancelled turn answers for it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use acp_client::edits::host::HostCapabilities;
use acp_client::error::RequestId;
use acp_client::policy::elicitation::{
    ElicitationMode, ElicitationResponse, ElicitationScope, FieldKind,
};
use acp_client::{ClientEvent, Connection, ConnectionOptions, SessionParams};
use serde_json::{json, Map, Value};
use support::{
    agent_text, connect, fake_agent, text, wait_event, Peer, PermissionMode, TestHost, WAIT,
};
use tokio::sync::mpsc;

type Asked = support::Elicited;

fn both_modes() -> HostCapabilities {
    HostCapabilities {
        elicitation_form: true,
        elicitation_url: true,
        ..HostCapabilities::default()
    }
}

struct Setup {
    conn: Connection,
    asked: mpsc::UnboundedReceiver<Asked>,
    events: mpsc::UnboundedReceiver<ClientEvent>,
    dir: tempfile::TempDir,
}

async fn spawn(scenario: Value, caps: HostCapabilities) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = acp_testkit::write_scenario(dir.path(), &scenario);
    let (host, events) = TestHost::with_caps(caps, PermissionMode::Pick("allow_once"));
    let asked = host.take_elicitations();
    let conn = Connection::spawn(
        &fake_agent(&path, dir.path()),
        host,
        ConnectionOptions::default(),
    )
    .unwrap();
    conn.initialize().await.unwrap();
    Setup {
        conn,
        asked,
        events,
        dir,
    }
}

/// Opens a session rooted in the setup's directory.
async fn open(s: &Setup) -> acp_client::session::update::SessionId {
    s.conn
        .new_session(SessionParams::new(s.dir.path()))
        .await
        .unwrap()
        .session_id
}

/// Sends a prompt; the turn runs while the test answers.
fn start_turn(
    s: &Setup,
    sid: &acp_client::session::update::SessionId,
) -> tokio::task::JoinHandle<acp_client::Result<acp_client::StopReason>> {
    let conn = s.conn.clone();
    let sid = sid.clone();
    tokio::spawn(async move { conn.prompt(&sid, vec![text("go")]).await })
}

async fn next_ask(s: &mut Setup) -> Asked {
    tokio::time::timeout(WAIT, s.asked.recv())
        .await
        .expect("no elicitation reached the editor")
        .unwrap()
}

fn form_step(extra: Value) -> Value {
    let mut step = json!({
        "type": "elicit",
        "message": "Where to deploy?",
        "requestedSchema": {
            "type": "object",
            "properties": {
                "target": {"type": "string", "enum": ["prod", "dev"], "title": "Target"},
                "replicas": {"type": "integer", "minimum": 1, "maximum": 3},
                "notify": {"type": "boolean", "default": true}
            },
            "required": ["target"]
        }
    });
    for (k, v) in extra.as_object().unwrap() {
        step[k] = v.clone();
    }
    step
}

fn content(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[tokio::test]
async fn a_form_tied_to_a_tool_call_is_answered_with_validated_content() {
    let steps = json!([
        {"type": "toolCall", "toolCallId": "deploy-1", "title": "Deploy the app", "kind": "execute"},
        form_step(json!({"toolCallId": "deploy-1", "onAccept": [{"type": "text", "text": " go {{elicitation}}"}]}))
    ]);
    let mut s = spawn(json!({"turns": [{"steps": steps}]}), both_modes()).await;
    let sid = open(&s).await;
    let turn = start_turn(&s, &sid);

    let (req, answer) = next_ask(&mut s).await;
    assert_eq!(req.message, "Where to deploy?");
    assert_eq!(
        req.scope,
        ElicitationScope::Session {
            session_id: sid.clone(),
            tool_call_id: Some("deploy-1".into()),
            tool_title: Some("Deploy the app".into()),
        }
    );
    let ElicitationMode::Form { schema } = &req.mode else {
        panic!("not a form: {req:?}");
    };
    let names: Vec<&str> = schema.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["target", "replicas", "notify"], "wire order kept");
    assert!(matches!(
        schema.fields[0].kind,
        FieldKind::String {
            choices: Some(_),
            ..
        }
    ));
    // What an editor does before answering: an invalid answer is refused
    // with every problem named, so the user can fix it.
    let err = schema
        .validate(&content(json!({"replicas": 7})))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`Target` is required") && err.contains("at most 3"),
        "{err}"
    );
    let ok = schema
        .validate(&content(json!({"target": "dev", "replicas": 2})))
        .unwrap();
    answer
        .send(ElicitationResponse::Accept { content: ok })
        .unwrap();

    tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let t = agent_text(&s.conn, &sid);
    assert!(
        t.contains(r#"elicitation: accept {"target":"dev","replicas":2}"#),
        "{t}"
    );
    assert!(t.contains(r#"go {"target":"dev","replicas":2}"#), "{t}");
}

#[tokio::test]
async fn decline_and_cancel_reach_the_agent_and_pick_their_branches() {
    let steps = json!([
        form_step(json!({"onDecline": [{"type": "text", "text": " [declined]"}]})),
        form_step(json!({"onCancel": [{"type": "text", "text": " [cancelled]"}]}))
    ]);
    let mut s = spawn(json!({"turns": [{"steps": steps}]}), both_modes()).await;
    let sid = open(&s).await;
    let turn = start_turn(&s, &sid);
    let (_, answer) = next_ask(&mut s).await;
    answer.send(ElicitationResponse::Decline).unwrap();
    let (_, answer) = next_ask(&mut s).await;
    answer.send(ElicitationResponse::Cancel).unwrap();
    tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let t = agent_text(&s.conn, &sid);
    assert!(t.contains("elicitation: decline [declined]"), "{t}");
    assert!(t.contains("elicitation: cancel [cancelled]"), "{t}");
}

#[tokio::test]
async fn content_that_does_not_fit_the_form_is_never_sent() {
    let mut s = spawn(
        json!({"turns": [{"steps": [form_step(json!({}))]}]}),
        both_modes(),
    )
    .await;
    let sid = open(&s).await;
    let turn = start_turn(&s, &sid);
    let (_, answer) = next_ask(&mut s).await;
    answer
        .send(ElicitationResponse::Accept {
            content: content(json!({"target": "staging"})),
        })
        .unwrap();
    let warning = wait_event(&mut s.events, |e| {
        matches!(e, ClientEvent::ProtocolWarning { .. })
    })
    .await;
    let ClientEvent::ProtocolWarning { message } = warning else {
        unreachable!()
    };
    assert!(
        message.contains("`Target` must be one of `prod`, `dev`"),
        "{message}"
    );
    tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let t = agent_text(&s.conn, &sid);
    assert!(t.contains("elicitation: cancel"), "{t}");
    assert!(!t.contains("staging"), "{t}");
}

#[tokio::test]
async fn a_url_elicitation_is_accepted_and_then_completed_by_the_agent() {
    let step = json!({
        "type": "elicit", "mode": "url", "message": "Authorize the deploy",
        "url": "https://example.com/authorize?x=1", "elicitationId": "auth-7",
        "completeAfterMs": 10
    });
    let mut s = spawn(json!({"turns": [{"steps": [step]}]}), both_modes()).await;
    let sid = open(&s).await;
    let turn = start_turn(&s, &sid);
    let (req, answer) = next_ask(&mut s).await;
    let ElicitationMode::Url {
        elicitation_id,
        url,
    } = &req.mode
    else {
        panic!("not a url elicitation: {req:?}");
    };
    assert_eq!(url, "https://example.com/authorize?x=1");
    assert_eq!(elicitation_id.0, "auth-7");
    answer
        .send(ElicitationResponse::Accept {
            content: Map::new(),
        })
        .unwrap();
    let done = wait_event(&mut s.events, |e| {
        matches!(e, ClientEvent::ElicitationCompleted { .. })
    })
    .await;
    let ClientEvent::ElicitationCompleted {
        elicitation_id,
        scope,
    } = done
    else {
        unreachable!()
    };
    assert_eq!(elicitation_id.0, "auth-7");
    assert_eq!(scope.session_id(), Some(&sid));
    tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(agent_text(&s.conn, &sid).contains("elicitation: accept"));
}

#[tokio::test]
async fn cancelling_the_turn_cancels_its_open_elicitation() {
    let step = form_step(json!({}));
    let mut s = spawn(json!({"turns": [{"steps": [step]}]}), both_modes()).await;
    let sid = open(&s).await;
    let turn = start_turn(&s, &sid);
    let (req, _unanswered) = next_ask(&mut s).await;
    s.conn.cancel(&sid).unwrap();
    let closed = wait_event(&mut s.events, |e| {
        matches!(e, ClientEvent::ElicitationCancelled { .. })
    })
    .await;
    let ClientEvent::ElicitationCancelled { id, scope } = closed else {
        unreachable!()
    };
    assert_eq!(id, req.id);
    assert_eq!(scope.session_id(), Some(&sid));
    let stop = tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(stop.as_str(), "cancelled");
    let t = agent_text(&s.conn, &sid);
    assert!(t.contains("elicitation: cancel"), "{t}");
}

fn auth_scenario() -> Value {
    json!({
        "authRequired": true,
        "initialize": {"authMethods": [{"id": "fake-login", "name": "Fake login"}]},
        "authElicitation": {
            "mode": "form",
            "message": "Pick an account",
            "requestedSchema": {"type": "object", "properties": {"account": {"type": "string", "format": "email"}}, "required": ["account"]}
        }
    })
}

#[tokio::test]
async fn a_request_scoped_form_during_authenticate_decides_the_login() {
    let mut s = spawn(auth_scenario(), both_modes()).await;
    let conn = s.conn.clone();
    let login = tokio::spawn(async move { conn.authenticate("fake-login").await });
    let (req, answer) = next_ask(&mut s).await;
    assert!(
        matches!(
            req.scope,
            ElicitationScope::Request {
                request_id: RequestId::Number(_)
            }
        ),
        "{:?}",
        req.scope
    );
    assert_eq!(req.message, "Pick an account");
    answer.send(ElicitationResponse::Decline).unwrap();
    let err = tokio::time::timeout(WAIT, login)
        .await
        .unwrap()
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("`decline`"), "{err}");

    let conn = s.conn.clone();
    let login = tokio::spawn(async move { conn.authenticate("fake-login").await });
    let (_, answer) = next_ask(&mut s).await;
    answer
        .send(ElicitationResponse::Accept {
            content: content(json!({"account": "ada@example.com"})),
        })
        .unwrap();
    tokio::time::timeout(WAIT, login)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    open(&s).await;
}

#[tokio::test]
async fn unknown_modes_and_modes_not_served_are_errors_never_prompts() {
    let steps = json!([
        {"type": "elicit", "mode": "_telepathy", "message": "think of a number"},
        {"type": "elicit", "mode": "url", "message": "open", "url": "https://x.org", "elicitationId": "u"}
    ]);
    let caps = HostCapabilities {
        elicitation_form: true,
        ..HostCapabilities::default()
    };
    let mut s = spawn(json!({"turns": [{"steps": steps}]}), caps).await;
    let sid = open(&s).await;
    s.conn.prompt(&sid, vec![text("x")]).await.unwrap();
    let t = agent_text(&s.conn, &sid);
    assert!(
        t.contains("elicitation error -32602: invalid parameters: elicitation mode `_telepathy` is not supported; this client supports `form` only"),
        "{t}"
    );
    assert!(t.contains("elicitation mode `url` is not supported"), "{t}");
    assert!(s.asked.try_recv().is_err(), "the editor was never asked");
}

#[tokio::test]
async fn an_editor_without_elicitation_neither_advertises_nor_serves_it() {
    let steps = json!([form_step(json!({}))]);
    let mut s = spawn(
        json!({"turns": [{"steps": steps}]}),
        HostCapabilities::default(),
    )
    .await;
    let sid = open(&s).await;
    s.conn.prompt(&sid, vec![text("x")]).await.unwrap();
    assert!(agent_text(&s.conn, &sid).contains("elicitation error -32601"));
    assert!(s.asked.try_recv().is_err());
}

#[tokio::test]
async fn initialize_advertises_both_modes() {
    let (host, _rx) =
        TestHost::with_caps(both_modes(), support::PermissionMode::Pick("allow_once"));
    // TestHost does not serve elicitation; only the advertisement is checked.
    let (conn, mut peer): (Connection, Peer) = connect(host);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let req = peer.accept_initialize(json!({})).await;
    init.await.unwrap().unwrap();
    assert_eq!(
        req["params"]["clientCapabilities"]["elicitation"],
        json!({"form": {}, "url": {}})
    );
}

#[tokio::test]
async fn a_request_scoped_elicitation_closes_when_its_request_is_answered() {
    let (host, mut events) = TestHost::with_caps(both_modes(), PermissionMode::Pick("allow_once"));
    let mut asked = host.take_elicitations();
    let (client_side, agent_side) = tokio::io::duplex(1 << 20);
    let (cr, cw) = tokio::io::split(client_side);
    let (ar, aw) = tokio::io::split(agent_side);
    let conn = Connection::from_streams(cr, cw, host, ConnectionOptions::default());
    let mut peer = Peer::from_halves(ar, aw);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    let req = peer.recv().await;
    peer.respond(
        &req["id"],
        json!({"protocolVersion": 1, "agentCapabilities": {}, "authMethods": [{"id": "a", "name": "A"}]}),
    )
    .await;
    init.await.unwrap().unwrap();
    let c = conn.clone();
    let login = tokio::spawn(async move { c.authenticate("a").await });
    let auth = peer.recv().await;
    assert_eq!(auth["method"], "authenticate");
    peer.send(json!({
        "jsonrpc": "2.0", "id": "e1", "method": "elicitation/create",
        "params": {"mode": "url", "message": "Log in", "requestId": auth["id"],
                   "url": "https://example.com/login", "elicitationId": "login-1"}
    }))
    .await;
    let (req, _unanswered) = tokio::time::timeout(WAIT, asked.recv())
        .await
        .unwrap()
        .unwrap();
    // The agent finished the login some other way: the question is moot.
    peer.respond(&auth["id"], json!({})).await;
    login.await.unwrap().unwrap();
    let closed = wait_event(&mut events, |e| {
        matches!(e, ClientEvent::ElicitationCancelled { .. })
    })
    .await;
    assert!(matches!(closed, ClientEvent::ElicitationCancelled { id, .. } if id == req.id));
    let reply = peer.recv_until(|m| m["id"] == "e1").await;
    assert_eq!(reply["result"], json!({"action": "cancel"}));
}

#[tokio::test]
async fn a_subagents_question_is_asked_with_the_childs_session_and_answered() {
    // ACP subagents: a child's elicitation carries the child's session id;
    // the client serves it in the parent's workspace like the parent's own.
    let steps = json!([
        {"type": "subagent", "childId": "child-1", "title": "Asker", "state": "requires_action"},
        {"type": "asSession", "childId": "child-1", "steps": [
            form_step(json!({"onDecline": [{"type": "text", "text": " [child declined]"}]}))
        ]}
    ]);
    let mut s = spawn(json!({"turns": [{"steps": steps}]}), both_modes()).await;
    let sid = open(&s).await;
    let turn = start_turn(&s, &sid);
    let (req, answer) = next_ask(&mut s).await;
    assert_eq!(
        req.scope.session_id().map(|id| id.0.to_string()).as_deref(),
        Some("child-1")
    );
    answer.send(ElicitationResponse::Decline).unwrap();
    tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let child = agent_text(
        &s.conn,
        &acp_client::session::update::SessionId::new("child-1"),
    );
    assert!(
        child.contains("elicitation: decline [child declined]"),
        "{child}"
    );
    // Not in the parent's answer.
    assert!(!agent_text(&s.conn, &sid).contains("declined"));
}
