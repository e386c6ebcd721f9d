//! initialize, authentication, sessions (new, list, load, resume, close,
//! delete), modes and config options.

#![allow(clippy::unwrap_used)]

mod common;

use common::{refuse, Driver};
use serde_json::{json, Value};

#[test]
fn fake_agent_bin_is_this_package_binary() {
    let bin = acp_testkit::fake_agent_bin();
    assert_eq!(
        bin,
        std::path::PathBuf::from(env!("CARGO_BIN_EXE_acp-fake-agent"))
    );
    assert!(bin.is_file());
}

#[test]
fn initialize_advertises_everything_by_default() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("echo"));
    let result = agent.initialize();
    assert_eq!(result["protocolVersion"], 1);
    let caps = &result["agentCapabilities"];
    assert_eq!(caps["loadSession"], true);
    assert_eq!(caps["promptCapabilities"]["image"], true);
    assert_eq!(caps["promptCapabilities"]["embeddedContext"], true);
    for cap in ["list", "resume", "close", "delete"] {
        assert_eq!(caps["sessionCapabilities"][cap], json!({}), "{cap}");
    }
    assert_eq!(result["authMethods"], json!([]));
    assert_eq!(result["agentInfo"]["name"], "acp-fake-agent");
}

#[test]
fn initialize_answers_what_the_scenario_says() {
    let mut agent = Driver::inline(json!({
        "initialize": {
            "protocolVersion": 7,
            "agentCapabilities": {"loadSession": false},
            "agentInfo": {"name": "custom", "version": "9"}
        }
    }));
    let result = agent.initialize();
    assert_eq!(result["protocolVersion"], 7);
    assert_eq!(result["agentCapabilities"], json!({"loadSession": false}));
    assert_eq!(result["agentInfo"]["name"], "custom");
    // Methods the agent did not advertise are answered -32601.
    let cwd = agent.cwd();
    for method in [
        "session/load",
        "session/list",
        "session/resume",
        "session/close",
    ] {
        let response = agent.call(method, json!({"sessionId": "x", "cwd": cwd}));
        assert_eq!(response["error"]["code"], -32601, "{method}: {response}");
    }
}

#[test]
fn unknown_requests_get_32601_and_unknown_notifications_are_ignored() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("echo"));
    agent.initialize();
    agent.notify("vendor/whatever", json!({"x": 1}));
    let id = agent.request("vendor/custom_method", json!({}));
    let (before, response) = agent.until_response(&id, &mut refuse);
    assert_eq!(response["error"]["code"], -32601);
    assert!(
        before.is_empty(),
        "the notification was answered: {before:?}"
    );
    let response = agent.call(
        "session/new",
        json!({"cwd": "relative/dir", "mcpServers": []}),
    );
    assert_eq!(response["error"]["code"], -32602, "{response}");
}

#[test]
fn lines_that_are_not_json_rpc_get_error_answers() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("echo"));
    agent.send_raw(b"this is not json\n");
    let reply = agent.next_message();
    assert_eq!(reply["error"]["code"], -32700);
    assert_eq!(reply["id"], Value::Null);
    agent.send(&json!({"jsonrpc": "2.0", "id": 42, "hello": "world"}));
    let reply = agent.next_message();
    assert_eq!(reply["error"]["code"], -32600);
    assert_eq!(reply["id"], 42);
}

#[test]
fn auth_required_then_authenticate() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("auth"));
    let init = agent.initialize();
    assert_eq!(init["authMethods"][0]["id"], "fake-login");
    let cwd = agent.cwd();
    let response = agent.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert_eq!(response["error"]["code"], -32000, "{response}");
    // Unknown ids and terminal methods do not log in.
    for method_id in ["nope", "fake-terminal"] {
        let response = agent.call("authenticate", json!({"methodId": method_id}));
        assert_eq!(response["error"]["code"], -32602, "{response}");
    }
    let response = agent.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert_eq!(response["error"]["code"], -32000);
    agent.ok("authenticate", json!({"methodId": "fake-login"}));
    let session = agent.ok("session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert!(session["sessionId"].is_string());
}

fn modes_and_options() -> Value {
    json!({
        "modes": {"currentModeId": "ask", "availableModes": [
            {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]},
        "configOptions": [
            {"id": "model", "name": "Model", "category": "model", "type": "select",
             "currentValue": "small", "options": [
                {"value": "small", "name": "Small"}, {"value": "large", "name": "Large"}]},
            {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": false}
        ]
    })
}

#[test]
fn session_new_returns_modes_and_config_options() {
    let mut agent = Driver::inline(modes_and_options());
    agent.initialize();
    let cwd = agent.cwd();
    let result = agent.ok("session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert_eq!(result["sessionId"], "fake-session-1");
    assert_eq!(result["modes"]["currentModeId"], "ask");
    assert_eq!(result["configOptions"][0]["category"], "model");
}

#[test]
fn set_mode_answers_and_sends_current_mode_update() {
    let mut agent = Driver::inline(modes_and_options());
    let session = agent.session();
    let result = agent.ok(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "code"}),
    );
    assert_eq!(result, json!({}));
    let update = agent.next_message();
    assert_eq!(update["method"], "session/update");
    assert_eq!(update["params"]["sessionId"], session.as_str());
    assert_eq!(
        update["params"]["update"],
        json!({"sessionUpdate": "current_mode_update", "currentModeId": "code"})
    );
    let response = agent.call(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "nope"}),
    );
    assert_eq!(response["error"]["code"], -32602);
    // The mode sticks: resuming the session reports it.
    let cwd = agent.cwd();
    let resumed = agent.ok("session/resume", json!({"sessionId": session, "cwd": cwd}));
    assert_eq!(resumed["modes"]["currentModeId"], "code");
}

#[test]
fn set_config_option_answers_the_complete_list_and_sends_an_update() {
    let mut agent = Driver::inline(modes_and_options());
    let session = agent.session();
    let result = agent.ok(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "large"}),
    );
    let options = result["configOptions"].as_array().unwrap();
    assert_eq!(options.len(), 2);
    assert_eq!(options[0]["currentValue"], "large");
    assert_eq!(options[1]["currentValue"], false);
    let update = agent.next_message();
    assert_eq!(
        update["params"]["update"]["sessionUpdate"],
        "config_option_update"
    );
    assert_eq!(
        update["params"]["update"]["configOptions"],
        result["configOptions"]
    );

    let result = agent.ok(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "fast", "type": "boolean", "value": true}),
    );
    assert_eq!(result["configOptions"][1]["currentValue"], true);
    agent.next_message();
    let response = agent.call(
        "session/set_config_option",
        json!({"sessionId": session, "configId": "model", "value": "huge"}),
    );
    assert_eq!(response["error"]["code"], -32602);
}

fn list_ids(result: &Value) -> Vec<String> {
    result["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn list_pages_with_next_cursor() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("sessions"));
    agent.initialize();
    let mut ids = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let result = agent.ok("session/list", json!({"cursor": cursor}));
        pages += 1;
        ids.extend(list_ids(&result));
        match result.get("nextCursor") {
            Some(next) => cursor = next.clone(),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(
        ids,
        ["stored-1", "stored-2", "stored-3", "stored-4", "stored-5"]
    );

    let filtered = agent.ok("session/list", json!({"cwd": "/projects/beta"}));
    assert_eq!(list_ids(&filtered), ["stored-3", "stored-4"]);
    assert_eq!(filtered["sessions"][0]["title"], "Write docs");
    assert_eq!(filtered["sessions"][0]["updatedAt"], "2025-01-12T09:00:00Z");
    assert!(filtered.get("nextCursor").is_none());

    let response = agent.call("session/list", json!({"cursor": "garbage"}));
    assert_eq!(response["error"]["code"], -32602);
}

#[test]
fn load_replays_a_stored_history_before_answering() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("sessions"));
    agent.initialize();
    let id = agent.request(
        "session/load",
        json!({"sessionId": "stored-1", "cwd": "/projects/alpha", "mcpServers": []}),
    );
    let (before, response) = agent.until_response(&id, &mut refuse);
    let kinds: Vec<&str> = before
        .iter()
        .map(|m| {
            assert_eq!(m["params"]["sessionId"], "stored-1");
            m["params"]["update"]["sessionUpdate"].as_str().unwrap()
        })
        .collect();
    assert_eq!(
        kinds,
        ["user_message_chunk", "agent_message_chunk", "tool_call"]
    );
    assert_eq!(response["result"]["modes"]["currentModeId"], "ask");

    let response = agent.call(
        "session/load",
        json!({"sessionId": "missing", "cwd": "/projects/alpha", "mcpServers": []}),
    );
    assert_eq!(response["error"]["code"], -32002);
}

#[test]
fn load_replays_exactly_the_live_updates() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("stream"));
    let session = agent.session();
    let first = agent.prompt(&session, "one", &mut refuse);
    let second = agent.prompt(&session, "two", &mut refuse);
    let mut live = first.updates();
    live.extend(second.updates());
    assert!(live.len() > 10);

    let cwd = agent.cwd();
    let id = agent.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    );
    let (replayed, response) = agent.until_response(&id, &mut refuse);
    assert!(response.get("result").is_some(), "{response}");
    let replayed: Vec<Value> = replayed
        .iter()
        .map(|m| m["params"]["update"].clone())
        .collect();
    assert_eq!(replayed, live);
}

#[test]
fn replay_user_messages_adds_the_prompts() {
    let mut agent = Driver::inline(json!({"replayUserMessages": true}));
    let session = agent.session();
    let turn = agent.prompt(&session, "hello there", &mut refuse);
    assert_eq!(turn.text(), "hello there");
    let cwd = agent.cwd();
    let id = agent.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    );
    let (replayed, _) = agent.until_response(&id, &mut refuse);
    let kinds: Vec<&str> = replayed
        .iter()
        .map(|m| m["params"]["update"]["sessionUpdate"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["user_message_chunk", "agent_message_chunk"]);
    assert_eq!(
        replayed[0]["params"]["update"]["content"],
        json!({"type": "text", "text": "hello there"})
    );
}

#[test]
fn resume_answers_without_replay_and_live_sessions_are_listed() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("stream"));
    let session = agent.session();
    agent.prompt(&session, "name me", &mut refuse);
    let cwd = agent.cwd();
    let listed = agent.ok("session/list", json!({"cwd": cwd}));
    assert_eq!(list_ids(&listed), [session.as_str()]);
    assert_eq!(listed["sessions"][0]["title"], "name me");

    // The next message after the answer is the answer to `list`: no replay.
    agent.ok("session/resume", json!({"sessionId": session, "cwd": cwd}));
    let listed = agent.ok("session/list", json!({}));
    assert_eq!(list_ids(&listed).len(), 1);
}

#[test]
fn close_keeps_the_session_listed_and_delete_removes_it() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("echo"));
    let session = agent.session();
    agent.ok("session/close", json!({"sessionId": session}));
    let response = agent.call(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
    );
    assert_eq!(response["error"]["code"], -32002, "{response}");
    assert_eq!(
        list_ids(&agent.ok("session/list", json!({}))),
        [session.as_str()]
    );

    let cwd = agent.cwd();
    agent.ok("session/resume", json!({"sessionId": session, "cwd": cwd}));
    assert_eq!(agent.prompt(&session, "back", &mut refuse).text(), "back");

    agent.ok("session/delete", json!({"sessionId": session}));
    assert!(list_ids(&agent.ok("session/list", json!({}))).is_empty());
    let response = agent.call("session/resume", json!({"sessionId": session, "cwd": cwd}));
    assert_eq!(response["error"]["code"], -32002);
}

#[test]
fn session_start_steps_follow_the_answer() {
    let mut agent = Driver::inline(json!({
        "sessionStart": [{"type": "commands", "availableCommands": [
            {"name": "plan", "description": "Plan"}]}]
    }));
    let session = agent.session();
    let update = agent.next_message();
    assert_eq!(update["params"]["sessionId"], session.as_str());
    assert_eq!(
        update["params"]["update"]["sessionUpdate"],
        "available_commands_update"
    );
    assert_eq!(
        update["params"]["update"]["availableCommands"][0]["name"],
        "plan"
    );
}

#[test]
fn every_bundled_scenario_starts() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let mut agent = Driver::spawn(&path);
        let response = agent.call("initialize", json!({"protocolVersion": 1}));
        assert_eq!(
            response["result"]["protocolVersion"],
            1,
            "{}",
            path.display()
        );
        count += 1;
    }
    assert!(count >= 5);
}
