//! The protocol of November 2026 against the scripted fake agent: the
//! client system prompt, plan operations, subagent sessions, and what the
//! newest agents send (codex-acp 2.6.0's `_meta` terminals, echoed prompts,
//! extension notifications).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::sync::Arc;

use acp_client::session::update::{PlanBody, SessionId};
use acp_client::session::{Entry, SessionChange};
use acp_client::{
    ClientEvent, Connection, ConnectionOptions, Error, SessionParams, SessionStarted, StopReason,
    SystemPrompt, SystemPromptMode,
};
use serde_json::{json, Value};
use support::*;

struct Setup {
    conn: Connection,
    host: Arc<TestHost>,
    dir: tempfile::TempDir,
}

async fn spawn(scenario: Value, permission: PermissionMode) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = acp_testkit::write_scenario(dir.path(), &scenario);
    let (host, _rx) = TestHost::new(permission);
    let conn = Connection::spawn(
        &fake_agent(&path, dir.path()),
        host.clone(),
        ConnectionOptions::default(),
    )
    .unwrap();
    conn.initialize().await.unwrap();
    Setup { conn, host, dir }
}

async fn open(s: &Setup, system_prompt: Option<SystemPrompt>) -> SessionStarted {
    let mut params = SessionParams::new(s.dir.path());
    params.system_prompt = system_prompt;
    s.conn.new_session(params).await.unwrap()
}

async fn turn(s: &Setup, sid: &SessionId, prompt: &str) -> StopReason {
    tokio::time::timeout(WAIT * 3, s.conn.prompt(sid, vec![text(prompt)]))
        .await
        .expect("turn timed out")
        .unwrap()
}

fn prompt(mode: SystemPromptMode, text: &str) -> Option<SystemPrompt> {
    Some(SystemPrompt {
        mode,
        text: text.into(),
    })
}

fn with_caps(caps: Value, steps: Value) -> Value {
    json!({"initialize": {"agentCapabilities": caps}, "turns": [{"steps": steps}]})
}

/// The changes the host saw for `sid`, children's unwrapped one level and
/// tagged with the child's id.
fn changes(host: &TestHost, sid: &SessionId) -> Vec<(Option<String>, SessionChange)> {
    host.events()
        .into_iter()
        .filter_map(|e| match e {
            ClientEvent::Session { session_id, change } if &session_id == sid => Some(change),
            _ => None,
        })
        .map(|c| match c {
            SessionChange::Child {
                session_id,
                child_change,
            } => (Some(session_id), *child_change),
            other => (None, other),
        })
        .collect()
}

#[tokio::test]
async fn the_system_prompt_reaches_an_agent_that_advertises_it() {
    let caps = json!({"sessionCapabilities": {"systemPrompt": {}}});
    let s = spawn(
        with_caps(caps, json!([{"type": "systemPrompt"}])),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let started = open(&s, prompt(SystemPromptMode::Append, "Answer in French.")).await;
    assert_eq!(started.system_prompt_skipped, None);
    turn(&s, &started.session_id, "hi").await;
    assert_eq!(
        agent_text(&s.conn, &started.session_id),
        "system prompt (append): Answer in French."
    );
    // `override` where only `append` is advertised: not sent (the agent
    // would refuse the session), and the user is told why.
    let started = open(&s, prompt(SystemPromptMode::Override, "Be terse.")).await;
    let why = started.system_prompt_skipped.unwrap();
    assert!(why.contains("append"), "{why}");
    turn(&s, &started.session_id, "hi").await;
    assert_eq!(
        agent_text(&s.conn, &started.session_id),
        "system prompt: none"
    );
}

#[tokio::test]
async fn override_is_sent_only_where_advertised_and_never_to_other_agents() {
    let caps = json!({"sessionCapabilities": {"systemPrompt": {"mode": {"override": {}}}}});
    let s = spawn(
        with_caps(caps, json!([{"type": "systemPrompt"}])),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let started = open(&s, prompt(SystemPromptMode::Override, "Be terse.")).await;
    assert_eq!(started.system_prompt_skipped, None);
    turn(&s, &started.session_id, "hi").await;
    assert_eq!(
        agent_text(&s.conn, &started.session_id),
        "system prompt (override): Be terse."
    );

    // An agent without the capability refuses a session carrying one: the
    // client must not send it, and says so.
    let s = spawn(
        with_caps(json!({}), json!([{"type": "systemPrompt"}])),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let started = open(&s, prompt(SystemPromptMode::Append, "Be terse.")).await;
    let why = started.system_prompt_skipped.unwrap();
    assert!(
        why.contains("does not take a client system prompt"),
        "{why}"
    );
    turn(&s, &started.session_id, "hi").await;
    assert_eq!(
        agent_text(&s.conn, &started.session_id),
        "system prompt: none"
    );
}

#[tokio::test]
async fn a_malformed_system_prompt_capability_counts_as_not_advertised() {
    // `systemPrompt: true` is not the object the schema says: no system
    // prompt is sent, and the rest of the capabilities still decode.
    let caps = json!({"loadSession": true, "sessionCapabilities": {"systemPrompt": true}});
    let s = spawn(
        with_caps(caps, json!([{"type": "systemPrompt"}])),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let info = s.conn.agent_info().unwrap();
    assert!(info.capabilities.load_session);
    let started = open(&s, prompt(SystemPromptMode::Append, "Be terse.")).await;
    assert!(started.system_prompt_skipped.is_some());
    turn(&s, &started.session_id, "hi").await;
    assert_eq!(
        agent_text(&s.conn, &started.session_id),
        "system prompt: none"
    );

    // `override: true` instead of `{}`: only `append` is taken.
    let caps = json!({"sessionCapabilities": {"systemPrompt": {"mode": {"override": true}}}});
    let s = spawn(
        with_caps(caps, json!([{"type": "systemPrompt"}])),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let started = open(&s, prompt(SystemPromptMode::Override, "Be terse.")).await;
    let why = started.system_prompt_skipped.unwrap();
    assert!(why.contains("append"), "{why}");
    let started = open(&s, prompt(SystemPromptMode::Append, "Be terse.")).await;
    assert_eq!(started.system_prompt_skipped, None);
}

#[tokio::test]
async fn codex_meta_terminal_output_is_kept_in_its_tool_call() {
    let s = spawn(
        with_caps(
            json!({}),
            json!([{"type": "agentTerminal", "toolCallId": "cmd", "command": "echo ran > ran.txt && ls",
                "output": ["ran.txt\n", "src\n"], "exitCode": 0}]),
        ),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let sid = open(&s, None).await.session_id;
    turn(&s, &sid, "run it").await;
    let tc = s
        .conn
        .with_session(&sid, |st| st.tool_call(&"cmd".into()).cloned())
        .unwrap()
        .unwrap();
    let t = tc.agent_terminal.expect("the output is kept");
    assert_eq!(t.output, "ran.txt\nsrc\n");
    assert_eq!(t.exit.unwrap().exit_code, Some(0));
    assert_eq!(tc.status.as_str(), "completed");
}

#[tokio::test]
async fn plans_by_id_update_in_place_and_go_away() {
    let s = spawn(
        with_caps(
            json!({}),
            json!([
                {"type": "planUpdate", "planId": "a", "entries": [{"content": "step", "priority": "high", "status": "pending"}]},
                {"type": "planUpdate", "planId": "b", "markdown": "# Plan\n\n- one", "path": "/tmp/PLAN.md"},
                {"type": "planUpdate", "planId": "a", "entries": [{"content": "step", "priority": "high", "status": "completed"}]},
                {"type": "planRemoved", "planId": "b"},
                {"type": "planRemoved", "planId": "never-sent"}
            ]),
        ),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let sid = open(&s, None).await.session_id;
    turn(&s, &sid, "plan").await;
    let plans = s.conn.with_session(&sid, |st| st.plans().to_vec()).unwrap();
    assert_eq!(plans.len(), 1);
    assert!(
        matches!(&plans[0].body, PlanBody::Items { entries } if entries[0].status == "completed")
    );
    let removed: Vec<_> = changes(&s.host, &sid)
        .into_iter()
        .filter_map(|(_, c)| match c {
            SessionChange::PlanRemoved { plan_id } => Some(plan_id),
            _ => None,
        })
        .collect();
    // The removal of an id never sent is ignored, as the spec requires.
    assert_eq!(removed, vec!["b".to_owned()]);
}

fn subagent_steps() -> Value {
    json!([
        {"type": "text", "text": "Delegating. "},
        {"type": "subagent", "childId": "child-1", "toolCallId": "task-1", "title": "Explore",
            "description": "Find the bug", "state": "running", "cancel": true},
        {"type": "sessionMessage", "messageId": "m1", "sender": "{{sessionId}}", "recipient": "child-1",
            "text": "Look in src/"},
        {"type": "asSession", "childId": "child-1", "steps": [
            {"type": "thought", "text": "searching"},
            {"type": "text", "text": "CHILD TEXT"},
            {"type": "toolCall", "toolCallId": "c-read", "title": "Read src/lib.rs", "kind": "read", "status": "completed"},
            {"type": "requestPermission", "toolCall": {"toolCallId": "c-edit", "title": "Edit src/lib.rs", "kind": "edit"}}
        ]},
        {"type": "subagent", "childId": "child-1", "state": "idle", "stopReason": "end_turn"},
        {"type": "text", "text": "Done."}
    ])
}

#[tokio::test]
async fn a_subagent_streams_into_its_own_block_and_asks_like_the_parent() {
    let s = spawn(
        with_caps(json!({}), subagent_steps()),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let sid = open(&s, None).await.session_id;
    turn(&s, &sid, "find the bug").await;
    // The child's text is never glued into the parent's answer.
    assert_eq!(agent_text(&s.conn, &sid), "Delegating. \nDone.");
    let all = changes(&s.host, &sid);
    let child: Vec<&SessionChange> = all
        .iter()
        .filter(|(c, _)| c.as_deref() == Some("child-1"))
        .map(|(_, c)| c)
        .collect();
    let child_text: Vec<String> = child
        .iter()
        .filter_map(|c| match c {
            SessionChange::EntryAdded {
                entry: Entry::AgentMessage(m),
                ..
            } => Some(m.text()),
            _ => None,
        })
        .collect();
    // Its text, then the report of the permission it asked for.
    assert_eq!(child_text, vec!["CHILD TEXT", "permission: allow_once"]);
    assert!(child.iter().any(|c| matches!(c,
        SessionChange::EntryAdded { entry: Entry::ToolCall(t), .. } if t.id.0.as_ref() == "c-read")));
    // The announcement, linked to the tool call that started it.
    let last = all
        .iter()
        .filter_map(|(_, c)| match c {
            SessionChange::SubagentChanged { subagent } => Some(subagent.clone()),
            _ => None,
        })
        .next_back()
        .unwrap();
    assert_eq!(last.title.as_deref(), Some("Explore"));
    assert_eq!(last.tool_call_id.as_deref(), Some("task-1"));
    assert_eq!(last.state.unwrap().state, "idle");
    // The message between sessions.
    assert!(all.iter().any(|(_, c)| matches!(c,
        SessionChange::SessionMessageChanged { message, .. }
            if message.recipient_session_id.as_deref() == Some("child-1"))));
    // The child's permission request was answered like the parent's.
    let child_text = s
        .conn
        .with_session(&SessionId::new("child-1"), |st| {
            st.entries()
                .iter()
                .filter_map(|e| match e {
                    Entry::AgentMessage(m) => Some(m.text()),
                    _ => None,
                })
                .collect::<String>()
        })
        .unwrap();
    assert!(
        child_text.contains("permission: allow"),
        "the child got its answer: {child_text}"
    );
}

#[tokio::test]
async fn a_subagent_is_cancelled_only_when_the_agent_allows_it() {
    let s = spawn(
        with_caps(
            json!({}),
            json!([
                {"type": "subagent", "childId": "may", "title": "A", "cancel": true},
                {"type": "subagent", "childId": "may-not", "title": "B"}
            ]),
        ),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let sid = open(&s, None).await.session_id;
    turn(&s, &sid, "go").await;
    s.conn.cancel(&SessionId::new("may")).unwrap();
    match s.conn.cancel(&SessionId::new("may-not")) {
        Err(Error::SubagentCancelNotAllowed { session }) => assert_eq!(session, "may-not"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn load_replays_subagents_with_their_nesting() {
    let s = spawn(
        json!({"initialize": {"agentCapabilities": {"loadSession": true}},
            "recordHistory": true, "turns": [{"steps": subagent_steps()}]}),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let sid = open(&s, None).await.session_id;
    turn(&s, &sid, "find the bug").await;
    let live: Vec<(Option<String>, SessionChange)> = changes(&s.host, &sid)
        .into_iter()
        .filter(|(c, _)| c.is_some())
        .collect();
    s.conn.close_session(&sid).await.unwrap();
    s.host.events.lock().unwrap().clear();
    s.conn
        .load_session(&sid, SessionParams::new(s.dir.path()))
        .await
        .unwrap();
    let replayed: Vec<(Option<String>, SessionChange)> = changes(&s.host, &sid)
        .into_iter()
        .filter(|(c, _)| c.is_some())
        .collect();
    // Everything the child showed live comes back under the child (the
    // permission's report included), in the same order.
    let text_of = |v: &[(Option<String>, SessionChange)]| {
        v.iter()
            .filter_map(|(_, c)| match c {
                SessionChange::EntryAdded {
                    entry: Entry::AgentMessage(m),
                    ..
                } => Some(m.text()),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(text_of(&live), text_of(&replayed));
    assert!(!text_of(&replayed).is_empty());
    assert_eq!(agent_text(&s.conn, &sid), "Delegating. \nDone.");
}

#[tokio::test]
async fn an_echoed_prompt_and_extension_notifications_change_nothing() {
    let s = spawn(
        with_caps(
            json!({}),
            json!([
                {"type": "update", "update": {"sessionUpdate": "user_message_chunk", "messageId": "u-1",
                    "content": {"type": "text", "text": "fix the bug"}}},
                {"type": "json", "value": {"jsonrpc": "2.0", "method": "_auth/status_update",
                    "params": {"status": "ok"}}},
                {"type": "text", "text": "ok"}
            ]),
        ),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let sid = open(&s, None).await.session_id;
    assert_eq!(turn(&s, &sid, "fix the bug").await, StopReason::EndTurn);
    let users: Vec<(String, Option<String>)> = s
        .conn
        .with_session(&sid, |st| {
            st.entries()
                .iter()
                .filter_map(|e| match e {
                    Entry::UserMessage(m) => Some((m.text(), m.message_id.clone())),
                    _ => None,
                })
                .collect()
        })
        .unwrap();
    assert_eq!(
        users,
        vec![("fix the bug".to_owned(), Some("u-1".to_owned()))]
    );
    assert!(
        !s.host
            .events()
            .iter()
            .any(|e| matches!(e, ClientEvent::ProtocolWarning { .. })),
        "an extension notification is no warning"
    );
}

#[tokio::test]
async fn an_agent_cannot_make_a_session_the_client_opened_into_a_subagent() {
    let s = spawn(
        with_caps(
            json!({}),
            json!([
                // Hostile: "announce" the other open session, and the parent itself.
                {"type": "subagent", "childId": "fake-session-2", "title": "stolen"},
                {"type": "subagent", "childId": "{{sessionId}}", "title": "myself"},
                {"type": "asSession", "childId": "fake-session-2", "steps": [{"type": "text", "text": "for B"}]}
            ]),
        ),
        PermissionMode::Pick("allow_once"),
    )
    .await;
    let a = open(&s, None).await.session_id;
    let b = open(&s, None).await.session_id;
    assert_eq!(b.0.as_ref(), "fake-session-2");
    turn(&s, &a, "go").await;
    // B's updates stay B's: shown in B's chat, not in A's as a child.
    assert_eq!(agent_text(&s.conn, &b), "for B");
    assert!(changes(&s.host, &a)
        .iter()
        .all(|(child, _)| child.is_none()));
    // And cancelling B is still an ordinary cancel.
    s.conn.cancel(&b).unwrap();
}
