//! What the fake agent keeps across processes (`sessionStore`, `authFile`,
//! the `--login` command) and the `{{mcpServers}}` placeholder.

#![allow(clippy::unwrap_used)]

mod common;

use std::process::Command;

use common::{refuse, Driver};
use serde_json::{json, Value};

fn with_store(dir: &std::path::Path) -> Value {
    json!({
        "sessionStore": dir.join("store.json"),
        "replayUserMessages": true,
        "modes": {"currentModeId": "ask", "availableModes": [
            {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]},
        "turns": [{"steps": [{"type": "text", "text": "answer to {{prompt}}", "chunkSize": 3}]}]
    })
}

#[test]
fn a_session_store_survives_the_process() {
    let store_dir = tempfile::tempdir().unwrap();
    let scenario = with_store(store_dir.path());
    let mut first = Driver::inline(scenario.clone());
    let session = first.session();
    let turn = first.prompt(&session, "hello", &mut refuse);
    assert_eq!(turn.text(), "answer to hello");
    first.ok(
        "session/set_mode",
        json!({"sessionId": session, "modeId": "code"}),
    );
    let cwd = first.cwd();
    drop(first);

    let mut second = Driver::inline(scenario);
    second.initialize();
    let listed = second.ok("session/list", json!({}));
    assert_eq!(listed["sessions"][0]["sessionId"], session.as_str());
    assert_eq!(listed["sessions"][0]["title"], "hello");
    let id = second.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    );
    let (replayed, response) = second.until_response(&id, &mut refuse);
    let text: String = replayed
        .iter()
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .map(|m| m["params"]["update"]["content"]["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "answer to hello");
    assert_eq!(
        replayed[0]["params"]["update"]["sessionUpdate"],
        "user_message_chunk"
    );
    assert_eq!(
        response["result"]["modes"]["currentModeId"], "code",
        "the mode chosen before the restart"
    );
}

#[test]
fn a_crash_keeps_what_was_said() {
    let store_dir = tempfile::tempdir().unwrap();
    let mut scenario = with_store(store_dir.path());
    scenario["turns"] = json!([{"steps": [
        {"type": "text", "text": "before the crash"},
        {"type": "crash", "code": 3}
    ]}]);
    let mut first = Driver::inline(scenario.clone());
    let session = first.session();
    first.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    assert_eq!(first.wait_exit().code(), Some(3));
    let cwd = first.cwd();

    let mut second = Driver::inline(scenario);
    second.initialize();
    let id = second.request(
        "session/load",
        json!({"sessionId": session, "cwd": cwd, "mcpServers": []}),
    );
    let (replayed, _) = second.until_response(&id, &mut refuse);
    assert!(
        replayed
            .iter()
            .any(|m| m["params"]["update"]["content"]["text"] == "before the crash"),
        "{replayed:?}"
    );
}

#[test]
fn login_writes_the_auth_file_and_the_next_process_needs_no_authenticate() {
    let dir = tempfile::tempdir().unwrap();
    let auth_file = dir.path().join("logged-in");
    let scenario = json!({
        "authRequired": true,
        "authFile": auth_file,
        "initialize": {"authMethods": [
            {"id": "term", "name": "Terminal login", "type": "terminal", "args": ["--login"]}]}
    });
    let mut before = Driver::inline(scenario.clone());
    before.initialize();
    let cwd = before.cwd();
    let response = before.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert_eq!(response["error"]["code"], -32000, "{response}");

    let path = acp_testkit::write_scenario(dir.path(), &scenario);
    let out = Command::new(acp_testkit::fake_agent_bin())
        .arg("--scenario")
        .arg(&path)
        .arg("--login")
        .env("ACP_FAKE_LOGIN_USER", "ada")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "acp-fake-agent: logged in as ada\n"
    );
    assert_eq!(std::fs::read_to_string(&auth_file).unwrap(), "ada");

    let mut after = Driver::inline(scenario);
    after.initialize();
    let cwd = after.cwd();
    let session = after.ok("session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert!(session["sessionId"].is_string());
}

#[test]
fn login_without_an_auth_file_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = acp_testkit::write_scenario(dir.path(), &json!({}));
    let out = Command::new(acp_testkit::fake_agent_bin())
        .arg("--scenario")
        .arg(&path)
        .arg("--login")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("authFile"));
}

#[test]
fn the_mcp_servers_of_the_session_fill_their_placeholder() {
    let mut agent = Driver::inline(json!({
        "turns": [{"steps": [{"type": "text", "text": "mcp: {{mcpServers}}"}]}]
    }));
    agent.initialize();
    let cwd = agent.cwd();
    let servers = json!([{"name": "files", "command": "/bin/mcp-files", "args": [], "env": []}]);
    let session = agent.ok("session/new", json!({"cwd": cwd, "mcpServers": servers}));
    let turn = agent.prompt(session["sessionId"].as_str().unwrap(), "x", &mut refuse);
    assert_eq!(turn.text(), format!("mcp: {servers}"));
}

#[test]
fn logout_when_advertised_requires_a_new_login() {
    let dir = tempfile::tempdir().unwrap();
    let auth_file = dir.path().join("logged-in");
    let mut agent = Driver::inline(json!({
        "authRequired": true,
        "authFile": auth_file,
        "initialize": {"agentCapabilities": {"auth": {"logout": {}}}}
    }));
    agent.initialize();
    agent.ok("authenticate", json!({"methodId": "fake-login"}));
    assert!(auth_file.exists());
    agent.ok("logout", json!({}));
    assert!(!auth_file.exists());
    let cwd = agent.cwd();
    let response = agent.call("session/new", json!({"cwd": cwd, "mcpServers": []}));
    assert_eq!(response["error"]["code"], -32000, "{response}");

    let mut bare = Driver::inline(json!({}));
    bare.initialize();
    assert_eq!(bare.call("logout", json!({}))["error"]["code"], -32601);
}
