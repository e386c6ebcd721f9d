//! The bundled demo scenario plays to the end against a client that allows
//! everything, and respects a client that rejects.

#![allow(clippy::unwrap_used)]

mod common;

use common::{refuse, Answer, Driver};
use serde_json::{json, Value};

/// A client that allows everything and gives plausible answers.
fn generous(writes: &mut Vec<Value>) -> impl FnMut(&str, &Value) -> Answer + '_ {
    move |method, params| match method {
        "fs/read_text_file" => Ok(json!({"content": "# My project\n\nIt does things.\n"})),
        "fs/write_text_file" => {
            writes.push(params.clone());
            Ok(json!({}))
        }
        "session/request_permission" => {
            Ok(json!({"outcome": {"outcome": "selected", "optionId": "allow_once"}}))
        }
        "terminal/create" => Ok(json!({"terminalId": "term-1"})),
        "terminal/wait_for_exit" => Ok(json!({"exitCode": 0})),
        "terminal/output" => Ok(json!({"output": "total 0\n", "truncated": false})),
        "terminal/release" => Ok(json!({})),
        other => panic!("the demo called {other}"),
    }
}

#[test]
fn demo_runs_to_end_turn_when_the_client_allows_everything() {
    let mut agent = Driver::demo();
    let init = agent.initialize();
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    let cwd = agent.cwd();
    let session = agent.ok("session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert_eq!(
        session["modes"]["availableModes"].as_array().unwrap().len(),
        2
    );
    let options = session["configOptions"].as_array().unwrap();
    assert!(options.iter().any(|o| o["category"] == "model"));
    let session = session["sessionId"].as_str().unwrap().to_owned();

    let commands = agent.next_message();
    let names: Vec<&str> = commands["params"]["update"]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["plan", "explain", "test", "ask", "delegate"]);

    let mut writes = Vec::new();
    let turn = agent.prompt(&session, "hello", &mut generous(&mut writes));
    assert_eq!(turn.stop_reason, "end_turn");
    let text = turn.text();
    assert!(!text.contains("EXPECTATION FAILED"), "{text}");
    assert!(text.contains("# Hello from the fake agent"), "{text}");
    assert!(turn.of_kind("agent_thought_chunk").len() > 1);

    // The plan moves forward: each entry ends completed, none goes back.
    let plans = turn.of_kind("plan");
    assert!(plans.len() >= 3);
    let last = plans.last().unwrap()["entries"].as_array().unwrap().clone();
    assert!(last.iter().all(|e| e["status"] == "completed"));
    assert_eq!(plans[0]["entries"][0]["status"], "in_progress");

    let kinds: Vec<String> = turn
        .of_kind("tool_call")
        .iter()
        .map(|c| c["kind"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kinds, ["read", "edit", "edit", "execute"]);
    // The on-disk edit of the demo project's hello.lua: there is none here,
    // so it fails and creates nothing.
    let hello = turn
        .of_kind("tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == "edit-hello-1")
        .unwrap();
    assert_eq!(hello["status"], "failed");
    assert!(!std::path::Path::new(&cwd).join("hello.lua").exists());
    let requests = turn.requests();
    assert_eq!(
        requests,
        [
            "fs/read_text_file",
            "session/request_permission",
            "fs/write_text_file",
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    assert_eq!(writes.len(), 1);
    assert_eq!(writes[0]["path"], format!("{cwd}/acp-demo.txt"));
    let read = &turn
        .messages
        .iter()
        .find(|m| m["method"] == "fs/read_text_file")
        .unwrap();
    assert_eq!(read["params"]["path"], format!("{cwd}/README.md"));
    let updates = turn.of_kind("tool_call_update");
    assert!(updates.iter().any(|u| u["content"][0]["content"]["text"]
        .as_str()
        .is_some_and(|t| t.contains("# My project"))));
    assert_eq!(turn.of_kind("usage_update").len(), 1);
    assert_eq!(turn.of_kind("session_info_update").len(), 1);
}

#[test]
fn demo_writes_nothing_when_the_edit_is_rejected() {
    let mut agent = Driver::demo();
    let session = agent.session();
    let turn = agent.prompt(&session, "hello", &mut |method: &str,
                                                     _: &Value|
     -> Answer {
        match method {
            "fs/read_text_file" => Err((-32002, "no such file".to_owned())),
            "session/request_permission" => {
                Ok(json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}))
            }
            "terminal/create" => Ok(json!({"terminalId": "t"})),
            "terminal/wait_for_exit" => Ok(json!({"exitCode": 0})),
            "terminal/output" => Ok(json!({"output": "", "truncated": false})),
            "terminal/release" => Ok(json!({})),
            other => panic!("the demo called {other} after a rejection"),
        }
    });
    assert_eq!(turn.stop_reason, "end_turn");
    assert!(!turn.requests().contains(&"fs/write_text_file".to_owned()));
    assert!(turn.text().contains("left your files alone"));
    assert!(turn.text().contains("There is no `README.md` here"));
}

#[test]
fn demo_answers_slash_commands_briefly() {
    let mut agent = Driver::demo();
    let session = agent.session();
    agent.next_message();
    let turn = agent.prompt(&session, "/plan add a feature", &mut refuse);
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.of_kind("plan").len(), 1);
    assert!(turn.text().starts_with("Here is a plan."));
    let turn = agent.prompt(&session, "/explain the parser", &mut refuse);
    assert!(turn.text().contains("/explain the parser"));
    let turn = agent.prompt(&session, "/test", &mut refuse);
    assert!(turn.text().contains("42"));
    // `/delegate` shows the protocol of November 2026.
    let turn = agent.prompt(&session, "/delegate a feature", &mut refuse);
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.of_kind("plan_update").len(), 2);
    assert_eq!(turn.of_kind("subagent_update").len(), 2);
    assert_eq!(turn.of_kind("session_message").len(), 1);
    // `/ask` asks a form; the answer shapes the reply.
    let mut answer = |method: &str, params: &Value| -> Answer {
        assert_eq!(method, "elicitation/create");
        assert_eq!(params["mode"], "form");
        assert_eq!(
            params["requestedSchema"]["required"],
            json!(["greeting", "language"])
        );
        Ok(
            json!({"action": "accept", "content": {"greeting": "Bonjour", "language": "fr", "shout": true}}),
        )
    };
    let turn = agent.prompt(&session, "/ask", &mut answer);
    assert_eq!(
        turn.text(),
        "Thanks! I would write Bonjour (fr), shout: true."
    );
    let mut decline = |_: &str, _: &Value| -> Answer { Ok(json!({"action": "decline"})) };
    let turn = agent.prompt(&session, "/ask", &mut decline);
    assert_eq!(turn.text(), "No greeting then.");
}

#[test]
fn each_demo_turn_uses_fresh_tool_call_ids_and_each_run_fresh_session_ids() {
    let mut agent = Driver::demo();
    agent.initialize();
    let cwd = agent.cwd();
    let session = agent.ok("session/new", json!({"cwd": cwd, "mcpServers": []}));
    let session = session["sessionId"].as_str().unwrap().to_owned();
    assert!(
        session.starts_with("demo-") && session != "demo-1",
        "{session}"
    );
    agent.next_message();
    let ids = |turn: &common::Turn| -> Vec<String> {
        turn.of_kind("tool_call")
            .iter()
            .map(|c| c["toolCallId"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut writes = Vec::new();
    let first = agent.prompt(&session, "hello", &mut generous(&mut writes));
    let second = agent.prompt(&session, "hello again", &mut generous(&mut writes));
    let (first, second) = (ids(&first), ids(&second));
    assert!(!first.is_empty());
    assert!(
        first.iter().all(|id| !second.contains(id)),
        "{first:?} {second:?}"
    );
}
