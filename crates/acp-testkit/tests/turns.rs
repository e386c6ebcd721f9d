//! Prompt turns: turn selection, streaming, updates, permissions, client
//! calls with expectations, terminals, disk edits, cancellation, late updates.

#![allow(clippy::unwrap_used)]

mod common;

use common::{choose, refuse, Answer, Driver};
use serde_json::{json, Value};

fn one_turn(steps: Value) -> Driver {
    Driver::inline(json!({"turns": [{"steps": steps}]}))
}

#[test]
fn streamed_turn_arrives_in_chunks_of_the_given_size() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("stream"));
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut refuse);
    assert_eq!(turn.stop_reason, "end_turn");
    let text = "Streaming works: one chunk at a time, in order, with nothing lost.";
    assert_eq!(turn.text(), text);
    let chunks = turn.of_kind("agent_message_chunk");
    assert_eq!(chunks.len(), text.len().div_ceil(5));
    for chunk in &chunks {
        assert!(chunk["content"]["text"].as_str().unwrap().chars().count() <= 5);
        assert_eq!(chunk["messageId"], "m1");
    }
    let thoughts = turn.of_kind("agent_thought_chunk");
    assert_eq!(thoughts.len(), 3);
    for message in &turn.messages {
        assert_eq!(message["params"]["sessionId"], session.as_str());
    }
}

#[test]
fn turns_are_picked_by_match_then_in_cycle_then_echo() {
    let mut agent = Driver::inline(json!({"turns": [
        {"steps": [{"type": "text", "text": "first"}]},
        {"match": "weather", "steps": [{"type": "text", "text": "sunny"}]},
        {"startsWith": "/plan", "steps": [{"type": "text", "text": "planning"}]},
        {"steps": [{"type": "text", "text": "second"}]}
    ]}));
    let session = agent.session();
    let texts: Vec<String> = ["a", "the weather?", "b", "/plan x", "c", "x /plan"]
        .iter()
        .map(|p| agent.prompt(&session, p, &mut refuse).text())
        .collect();
    assert_eq!(
        texts,
        ["first", "sunny", "second", "planning", "first", "second"]
    );

    let mut echo = Driver::inline(json!({"turns": [
        {"match": "zzz", "steps": [{"type": "text", "text": "no"}]}
    ]}));
    let session = echo.session();
    assert_eq!(
        echo.prompt(&session, "say this back", &mut refuse).text(),
        "say this back"
    );
}

#[test]
fn stop_reasons_come_from_the_turn_or_a_step() {
    let mut agent = Driver::inline(json!({"turns": [
        {"match": "a", "stopReason": "max_tokens", "steps": []},
        {"match": "b", "stopReason": "max_tokens", "steps": [
            {"type": "stopReason", "value": "future_reason"}]}
    ]}));
    let session = agent.session();
    assert_eq!(
        agent.prompt(&session, "a", &mut refuse).stop_reason,
        "max_tokens"
    );
    assert_eq!(
        agent.prompt(&session, "b", &mut refuse).stop_reason,
        "future_reason"
    );
}

#[test]
fn update_steps_send_their_updates() {
    let mut agent = one_turn(json!([
        {"type": "toolCall", "toolCallId": "t1", "title": "Read a", "kind": "read",
         "status": "pending", "locations": [{"path": "{{cwd}}/a"}]},
        {"type": "toolCall", "toolCallId": "t1", "title": "Read a again"},
        {"type": "toolCallUpdate", "toolCallId": "t1", "status": "completed",
         "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}]},
        {"type": "plan", "entries": [{"content": "x", "priority": "high", "status": "pending"}]},
        {"type": "commands", "availableCommands": [{"name": "test", "description": "Test"}]},
        {"type": "usage", "used": 10, "size": 100},
        {"type": "sessionInfo", "title": "Named", "updatedAt": null},
        {"type": "mode", "modeId": "code"},
        {"type": "update", "update": {"sessionUpdate": "future_kind", "x": "{{sessionId}}"}}
    ]));
    let session = agent.session();
    let cwd = agent.cwd();
    let turn = agent.prompt(&session, "go", &mut refuse);
    assert_eq!(
        turn.updates(),
        vec![
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a",
                   "kind": "read", "status": "pending", "locations": [{"path": format!("{cwd}/a")}]}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a again"}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
                   "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}]}),
            json!({"sessionUpdate": "plan",
                   "entries": [{"content": "x", "priority": "high", "status": "pending"}]}),
            json!({"sessionUpdate": "available_commands_update",
                   "availableCommands": [{"name": "test", "description": "Test"}]}),
            json!({"sessionUpdate": "usage_update", "used": 10, "size": 100}),
            json!({"sessionUpdate": "session_info_update", "title": "Named", "updatedAt": null}),
            json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"}),
            json!({"sessionUpdate": "future_kind", "x": session}),
        ]
    );
    // The session_info title reaches session/list.
    let listed = agent.ok("session/list", json!({}));
    assert_eq!(listed["sessions"][0]["title"], "Named");
}

#[test]
fn updates_can_name_an_unknown_session() {
    let mut agent = one_turn(json!([
        {"type": "update", "sessionId": "ghost",
         "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "boo"}}}
    ]));
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut refuse);
    assert_eq!(turn.messages.len(), 1);
    assert_eq!(turn.messages[0]["params"]["sessionId"], "ghost");
}

fn permission_turn(agent: &mut Driver, option: &'static str) -> common::Turn {
    let session = agent.session();
    agent.prompt(&session, "edit", &mut choose(option))
}

#[test]
fn permission_allow_runs_the_allow_branch() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("permission"));
    let turn = permission_turn(&mut agent, "allow_once");
    assert_eq!(turn.stop_reason, "end_turn");
    let request = turn
        .messages
        .iter()
        .find(|m| m["method"] == "session/request_permission")
        .unwrap();
    assert_eq!(request["params"]["toolCall"]["toolCallId"], "edit-1");
    let kinds: Vec<&str> = request["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["allow_once", "allow_always", "reject_once", "reject_always"]
    );
    assert_eq!(turn.text(), "permission: allow_onceallowed");
    let last = turn.of_kind("tool_call_update");
    assert_eq!(last[0]["status"], "completed");
}

#[test]
fn permission_reject_and_cancelled_run_their_branches() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("permission"));
    let turn = permission_turn(&mut agent, "reject_always");
    assert_eq!(turn.text(), "permission: reject_alwaysrejected");
    assert_eq!(turn.of_kind("tool_call_update")[0]["status"], "failed");

    let mut agent = Driver::spawn(&acp_testkit::scenario("permission"));
    let turn = permission_turn(&mut agent, "cancelled");
    assert_eq!(turn.text(), "permission: cancelledcancelled");
    assert_eq!(turn.stop_reason, "end_turn");
}

#[test]
fn permission_branches_by_option_id_and_reports_bad_outcomes() {
    let scenario = json!({"turns": [{"steps": [
        {"type": "requestPermission", "report": false,
         "toolCall": {"title": "Run rm"},
         "options": [{"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                     {"optionId": "no", "name": "No", "kind": "reject_once"}],
         "on": {"yes": [{"type": "text", "text": "chose {{permission}}"}]}}
    ]}]});
    let mut agent = Driver::inline(scenario.clone());
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut choose("yes"));
    assert_eq!(turn.text(), "chose yes");
    let request = &turn.messages[0];
    assert_eq!(request["params"]["toolCall"]["toolCallId"], "permission-1");

    let mut agent = Driver::inline(scenario);
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut choose("maybe"));
    assert_eq!(turn.stop_reason, "refusal");
    assert!(
        turn.text().starts_with("EXPECTATION FAILED: "),
        "{}",
        turn.text()
    );
    assert!(turn.text().contains("maybe"));
}

#[test]
fn cancel_while_asking_permission_ends_the_turn_cancelled() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("permission"));
    let session = agent.session();
    let id = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "edit"}]}),
    );
    let request = loop {
        let message = agent.next_message();
        if message["method"] == "session/request_permission" {
            break message;
        }
    };
    agent.notify("session/cancel", json!({"sessionId": session}));
    agent.send(&json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"outcome": {"outcome": "cancelled"}}}));
    let (rest, response) = agent.until_response(&id, &mut refuse);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let texts: Vec<&Value> = rest
        .iter()
        .map(|m| &m["params"]["update"]["content"]["text"])
        .collect();
    assert_eq!(texts, [&json!("permission: cancelled")]);
}

fn fs_scenario() -> Value {
    json!({"turns": [{"steps": [
        {"type": "call", "method": "fs/read_text_file",
         "params": {"path": "{{cwd}}/notes.txt", "line": 2, "limit": 1},
         "expect": {"contains": {"content": "hello"}}, "saveAs": "notes"},
        {"type": "call", "method": "fs/write_text_file",
         "params": {"path": "{{cwd}}/copy.txt", "content": "{{notes.content}}"},
         "expect": {"ok": true}},
        {"type": "text", "text": "copied"}
    ]}]})
}

#[test]
fn fs_calls_pass_their_expectations() {
    let mut agent = Driver::inline(fs_scenario());
    let session = agent.session();
    let cwd = agent.cwd();
    let mut calls = Vec::new();
    let turn = agent.prompt(&session, "go", &mut |method: &str,
                                                  params: &Value|
     -> Answer {
        calls.push((method.to_owned(), params.clone()));
        match method {
            "fs/read_text_file" => Ok(json!({"content": "hello world"})),
            _ => Ok(json!({})),
        }
    });
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(turn.text(), "copied");
    assert_eq!(
        calls[0],
        (
            "fs/read_text_file".to_owned(),
            json!({"sessionId": session, "path": format!("{cwd}/notes.txt"), "line": 2, "limit": 1})
        )
    );
    assert_eq!(
        calls[1].1["content"], "hello world",
        "saved results feed later steps"
    );
}

#[test]
fn fs_calls_report_failed_expectations_and_refuse() {
    let mut agent = Driver::inline(fs_scenario());
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut |_: &str, _: &Value| -> Answer {
        Err((-32002, "no such file".to_owned()))
    });
    assert_eq!(turn.stop_reason, "refusal");
    assert_eq!(
        turn.requests(),
        ["fs/read_text_file"],
        "the turn stops at the failure"
    );
    let text = turn.text();
    assert!(
        text.starts_with(
            "EXPECTATION FAILED: fs/read_text_file: expected a result, got error -32002"
        ),
        "{text}"
    );
}

#[test]
fn call_branches_on_ok_and_error_and_checks_error_codes() {
    let mut agent = one_turn(json!([
        {"type": "call", "method": "terminal/output", "params": {"terminalId": "nope"},
         "expect": {"error": -32002}, "saveAs": "out",
         "onOk": [{"type": "text", "text": "ok"}],
         "onError": [{"type": "text", "text": "error {{out.error.code}}: {{out.error.message}}"}]}
    ]));
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut |_: &str, _: &Value| -> Answer {
        Err((-32002, "unknown terminal".to_owned()))
    });
    assert_eq!(turn.text(), "error -32002: unknown terminal");
    assert_eq!(turn.stop_reason, "end_turn");
}

fn terminal_client(exit_code: u64) -> impl FnMut(&str, &Value) -> Answer {
    move |method, params| {
        assert!(params["sessionId"].as_str().is_some_and(|s| !s.is_empty()));
        match method {
            "terminal/create" => {
                assert_eq!(params["command"], "ls");
                assert_eq!(params["args"], json!(["-la"]));
                Ok(json!({"terminalId": "term-7"}))
            }
            "terminal/wait_for_exit" => Ok(json!({"exitCode": exit_code, "signal": null})),
            "terminal/output" => Ok(json!({"output": "file.txt\n", "truncated": false,
                                         "exitStatus": {"exitCode": exit_code}})),
            "terminal/release" => Ok(json!({})),
            other => panic!("unexpected {other}"),
        }
    }
}

#[test]
fn run_terminal_embeds_the_terminal_and_cleans_up() {
    let steps = json!([
        {"type": "runTerminal", "command": "ls", "args": ["-la"], "toolCallId": "sh",
         "expect": {"exitCode": 0, "outputContains": "file.txt"}, "saveAs": "ls"},
        {"type": "text", "text": "{{ls.output}}"}
    ]);
    let mut agent = one_turn(steps.clone());
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut terminal_client(0));
    assert_eq!(turn.stop_reason, "end_turn");
    assert_eq!(
        turn.requests(),
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/output",
            "terminal/release"
        ]
    );
    let call = &turn.of_kind("tool_call")[0];
    assert_eq!(call["toolCallId"], "sh");
    assert_eq!(call["kind"], "execute");
    assert_eq!(
        call["content"],
        json!([{"type": "terminal", "terminalId": "term-7"}])
    );
    assert_eq!(turn.of_kind("tool_call_update")[0]["status"], "completed");
    assert_eq!(turn.text(), "file.txt\n");

    let mut agent = one_turn(steps);
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut terminal_client(2));
    assert_eq!(turn.stop_reason, "refusal");
    assert_eq!(turn.of_kind("tool_call_update")[0]["status"], "failed");
    assert!(
        turn.text().contains("expected the command to exit with 0"),
        "{}",
        turn.text()
    );
}

#[test]
fn cancel_during_a_terminal_kills_it() {
    let mut agent = one_turn(json!([{"type": "runTerminal", "command": "sleep", "args": ["100"]}]));
    let session = agent.session();
    let id = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    let mut wait_id = Value::Null;
    let mut methods = Vec::new();
    let response = loop {
        let message = agent.next_message();
        if message.get("method").is_none() {
            break message;
        }
        let method = message["method"].as_str().unwrap().to_owned();
        let reply = match method.as_str() {
            "terminal/create" => Some(json!({"terminalId": "t"})),
            // Held back: the command "runs" until killed.
            "terminal/wait_for_exit" => {
                wait_id = message["id"].clone();
                agent.notify("session/cancel", json!({"sessionId": session}));
                None
            }
            "terminal/kill" => {
                agent.send(&json!({"jsonrpc": "2.0", "id": wait_id,
                    "result": {"exitCode": null, "signal": "SIGKILL"}}));
                Some(json!({}))
            }
            "terminal/output" => Some(json!({"output": "", "truncated": false})),
            "terminal/release" => Some(json!({})),
            _ => None,
        };
        methods.push(method);
        if let (Some(result), Some(req)) = (reply, message.get("id")) {
            agent.send(&json!({"jsonrpc": "2.0", "id": req, "result": result}));
        }
    };
    assert_eq!(response["id"], id);
    assert_eq!(response["result"]["stopReason"], "cancelled");
    let requests: Vec<&str> = methods
        .iter()
        .map(String::as_str)
        .filter(|m| m.starts_with("terminal/"))
        .collect();
    assert_eq!(
        requests,
        [
            "terminal/create",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/output",
            "terminal/release"
        ]
    );
}

#[test]
fn write_disk_edits_the_file_and_reports_a_diff() {
    let mut agent = one_turn(json!([
        {"type": "writeDisk", "path": "sub/out.txt", "content": "new\n"},
        {"type": "writeDisk", "path": "{{cwd}}/old.txt", "content": "changed\n", "toolCallId": "e2"}
    ]));
    std::fs::write(agent.dir.path().join("old.txt"), "before\n").unwrap();
    let session = agent.session();
    let cwd = agent.cwd();
    let turn = agent.prompt(&session, "go", &mut refuse);
    assert_eq!(
        std::fs::read_to_string(agent.dir.path().join("sub/out.txt")).unwrap(),
        "new\n"
    );
    assert_eq!(
        std::fs::read_to_string(agent.dir.path().join("old.txt")).unwrap(),
        "changed\n"
    );
    let calls = turn.of_kind("tool_call");
    assert_eq!(calls[0]["kind"], "edit");
    assert_eq!(
        calls[0]["content"],
        json!([{"type": "diff", "path": format!("{cwd}/sub/out.txt"), "oldText": null, "newText": "new\n"}])
    );
    assert_eq!(calls[1]["toolCallId"], "e2");
    assert_eq!(calls[1]["content"][0]["oldText"], "before\n");
    let updates = turn.of_kind("tool_call_update");
    assert!(updates.iter().all(|u| u["status"] == "completed"));
}

#[test]
fn replace_disk_edits_one_snippet_and_reports_the_snippets() {
    let mut agent = one_turn(json!([
        {"type": "replaceDisk", "path": "a.txt", "old": "two\n", "new": "TWO\n", "toolCallId": "r1"},
        {"type": "replaceDisk", "path": "a.txt", "old": "x", "new": "y", "toolCallId": "r2"},
        {"type": "replaceDisk", "path": "missing.txt", "old": "a", "new": "b", "toolCallId": "r3"}
    ]));
    std::fs::write(agent.dir.path().join("a.txt"), "one\ntwo\nx x\n").unwrap();
    let session = agent.session();
    let cwd = agent.cwd();
    let turn = agent.prompt(&session, "go", &mut refuse);
    // r1 replaced its snippet; r2's occurs twice and r3's file is missing:
    // both left the disk alone.
    assert_eq!(
        std::fs::read_to_string(agent.dir.path().join("a.txt")).unwrap(),
        "one\nTWO\nx x\n"
    );
    assert!(!agent.dir.path().join("missing.txt").exists());
    let calls = turn.of_kind("tool_call");
    assert_eq!(
        calls[0]["content"],
        json!([{"type": "diff", "path": format!("{cwd}/a.txt"), "oldText": "two\n", "newText": "TWO\n"}])
    );
    let updates = turn.of_kind("tool_call_update");
    let statuses: Vec<&str> = updates
        .iter()
        .map(|u| u["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["completed", "failed", "failed"]);
}

#[test]
fn wait_for_cancel_ends_the_turn_cancelled() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("cancel"));
    let session = agent.session();
    // Twice: a cancelled session takes the next prompt as usual.
    for _ in 0..2 {
        let id = agent.request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
        );
        let first = agent.next_message();
        assert_eq!(first["params"]["update"]["content"]["text"], "working...");
        agent.notify("session/cancel", json!({"sessionId": session}));
        let (rest, response) = agent.until_response(&id, &mut refuse);
        assert!(rest.is_empty(), "{rest:?}");
        assert_eq!(response["result"]["stopReason"], "cancelled");
    }
}

#[test]
fn sleep_is_cut_short_by_cancel() {
    let mut agent = one_turn(json!([
        {"type": "text", "text": "sleeping"},
        {"type": "sleep", "ms": 600000},
        {"type": "text", "text": "never"}
    ]));
    let session = agent.session();
    let id = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    agent.next_message();
    agent.notify("session/cancel", json!({"sessionId": session}));
    let (_, response) = agent.until_response(&id, &mut refuse);
    assert_eq!(response["result"]["stopReason"], "cancelled");
}

#[test]
fn late_updates_arrive_after_the_response() {
    let mut agent = one_turn(json!([
        {"type": "text", "text": "now"},
        {"type": "late", "delayMs": 20, "steps": [
            {"type": "toolCallUpdate", "toolCallId": "t", "status": "completed"},
            {"type": "text", "text": "later"}]}
    ]));
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut refuse);
    assert_eq!(turn.text(), "now");
    let late: Vec<Value> = (0..2).map(|_| agent.next_message()).collect();
    assert_eq!(
        late[0]["params"]["update"]["sessionUpdate"],
        "tool_call_update"
    );
    assert_eq!(late[1]["params"]["update"]["content"]["text"], "later");
    assert_eq!(late[1]["params"]["sessionId"], session.as_str());
}

#[test]
fn concurrent_requests_are_sent_at_once_and_all_answered() {
    let mut agent = one_turn(json!([
        {"type": "concurrentRequests", "count": 6, "method": "fs/read_text_file",
         "params": {"path": "{{cwd}}/a"}, "expect": {"ok": true}}
    ]));
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut |_: &str, _: &Value| -> Answer {
        Ok(json!({"content": ""}))
    });
    assert_eq!(turn.stop_reason, "end_turn");
    let ids: std::collections::HashSet<String> = turn
        .messages
        .iter()
        .filter(|m| m.get("id").is_some())
        .map(|m| m["id"].to_string())
        .collect();
    assert_eq!(ids.len(), 6);
    assert_eq!(turn.text(), "concurrent requests: 6/6 answered");
}

#[test]
fn cancel_own_request_sends_cancel_request_for_it() {
    let mut agent = one_turn(json!([
        {"type": "cancelOwnRequest", "method": "fs/read_text_file",
         "params": {"path": "{{cwd}}/big"}, "expect": {"error": -32800}}
    ]));
    let session = agent.session();
    let id = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    let request = agent.next_message();
    assert_eq!(request["method"], "fs/read_text_file");
    let cancel = agent.next_message();
    assert_eq!(cancel["method"], "$/cancel_request");
    assert_eq!(cancel["params"]["requestId"], request["id"]);
    agent.send(&json!({"jsonrpc": "2.0", "id": request["id"],
        "error": {"code": -32800, "message": "cancelled"}}));
    let (rest, response) = agent.until_response(&id, &mut refuse);
    assert_eq!(response["result"]["stopReason"], "end_turn");
    assert_eq!(
        rest[0]["params"]["update"]["content"]["text"],
        "cancel_request: answered with error -32800"
    );
}

#[test]
fn burst_sends_count_chunks_of_bytes() {
    let mut agent = one_turn(json!([{"type": "burst", "count": 500, "bytes": 64}]));
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut refuse);
    let chunks = turn.of_kind("agent_message_chunk");
    assert_eq!(chunks.len(), 500);
    for chunk in chunks {
        let text = chunk["content"]["text"].as_str().unwrap();
        assert_eq!(text.len(), 64);
        assert!(text.starts_with("abcdefghijklmnopqrstuvwxyzabc"));
    }
}

#[test]
fn throughput_scenario_sends_a_megabyte_per_prompt() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("throughput"));
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut refuse);
    assert_eq!(turn.text().len(), 1_000_000);
}

#[test]
fn prompt_steps_play_the_steps_the_prompt_carries() {
    let mut agent = Driver::inline(json!({"turns": [
        {"startsWith": "steps:", "steps": [{"type": "promptSteps"}]}
    ]}));
    let session = agent.session();
    let turn = agent.prompt(
        &session,
        r#"steps: [{"type": "text", "text": "in {{cwd}}"}, {"type": "writeDisk", "path": "p.txt", "content": "x\n", "diff": false}]"#,
        &mut refuse,
    );
    assert_eq!(turn.text(), format!("in {}", agent.cwd()));
    assert_eq!(
        std::fs::read_to_string(agent.dir.path().join("p.txt")).unwrap(),
        "x\n"
    );
    assert!(turn.of_kind("tool_call")[0].get("content").is_none());

    // Not a step list, or a list with a bad step: a failed expectation.
    for bad in [
        "steps: none",
        "steps: [1, 2",
        r#"steps: [{"type": "txet"}]"#,
    ] {
        let turn = agent.prompt(&session, bad, &mut refuse);
        assert_eq!(turn.stop_reason, "refusal", "{bad}");
        assert!(
            turn.text().starts_with("EXPECTATION FAILED: promptSteps"),
            "{bad}: {}",
            turn.text()
        );
    }
}

#[test]
fn wait_for_file_holds_the_turn_through_a_cancel_until_the_file_exists() {
    let mut agent = one_turn(json!([
        {"type": "text", "text": "stuck"},
        {"type": "waitForFile", "path": "release"},
        {"type": "text", "text": "never: cancelled before"}
    ]));
    let session = agent.session();
    let id = agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    assert_eq!(
        agent.next_message()["params"]["update"]["content"]["text"],
        "stuck"
    );
    agent.notify("session/cancel", json!({"sessionId": session}));
    // The cancel is read and ignored: the agent still answers other requests
    // and sends nothing for the turn until the file appears.
    let other = agent.call("no/such_method", json!({}));
    assert_eq!(other["error"]["code"], -32601);
    std::fs::write(agent.dir.path().join("release"), "").unwrap();
    let (rest, response) = agent.until_response(&id, &mut refuse);
    assert!(rest.is_empty(), "{rest:?}");
    assert_eq!(response["result"]["stopReason"], "cancelled");
}

#[test]
fn tool_call_burst_sends_a_call_and_a_completion_per_tool() {
    let mut agent = one_turn(json!([{"type": "toolCallBurst", "count": 300, "idPrefix": "b"}]));
    let session = agent.session();
    let turn = agent.prompt(&session, "go", &mut refuse);
    let calls = turn.of_kind("tool_call");
    let updates = turn.of_kind("tool_call_update");
    assert_eq!((calls.len(), updates.len()), (300, 300));
    assert_eq!(calls[0]["toolCallId"], "b1");
    assert_eq!(calls[0]["status"], "in_progress");
    assert_eq!(calls[299]["toolCallId"], "b300");
    assert_eq!(updates[299]["toolCallId"], "b300");
    assert_eq!(updates[299]["status"], "completed");
    assert_eq!(
        updates[299]["content"][0]["content"]["text"],
        "step 300: ok"
    );
}

#[test]
fn timed_calls_send_count_requests_one_at_a_time_and_save_percentiles() {
    let mut agent = one_turn(json!([
        {"type": "timedCalls", "count": 5, "method": "fs/read_text_file",
         "params": {"path": "{{cwd}}/a", "line": 2, "limit": 1}, "saveAs": "t"},
        {"type": "text", "text": "{{t.count}} {{t.errors}} {{t.p50Us}}"}
    ]));
    let session = agent.session();
    let mut calls = 0;
    let turn = agent.prompt(&session, "go", &mut |method: &str,
                                                  params: &Value|
     -> Answer {
        calls += 1;
        assert_eq!(method, "fs/read_text_file");
        assert_eq!(params["line"], 2);
        // The third one fails: counted, and the loop goes on.
        if calls == 3 {
            Err((-32002, "gone".to_owned()))
        } else {
            Ok(json!({"content": "x\n"}))
        }
    });
    assert_eq!(calls, 5);
    let text = turn.text();
    let parts: Vec<&str> = text.split(' ').collect();
    assert_eq!(&parts[..2], &["5", "1"], "{text}");
    assert!(parts[2].parse::<u64>().is_ok(), "{text}");
}
