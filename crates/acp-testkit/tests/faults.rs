//! Misbehaviour on purpose: crashes, initialize faults, garbage on stdout,
//! stderr floods, grandchildren, an agent that stops reading.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{refuse, Driver};
use serde_json::{json, Value};

#[test]
fn crash_mid_turn_exits_with_its_code_and_stderr() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("crash"));
    let session = agent.session();
    agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    let update = agent.next_message();
    assert_eq!(
        update["params"]["update"]["content"]["text"],
        "about to crash"
    );
    let status = agent.wait_exit();
    assert_eq!(status.code(), Some(3));
    agent.wait_stderr("fatal: the fake agent crashed on purpose");
    assert_eq!(
        agent.try_next_line(Duration::from_secs(5)),
        None,
        "nothing after the crash"
    );
}

#[test]
fn initialize_can_exit_before_answering() {
    let mut agent = Driver::inline(json!({"initialize": {
        "fault": {"type": "exit", "stderr": "error: no config file", "code": 5}}}));
    agent.request("initialize", json!({"protocolVersion": 1}));
    assert_eq!(agent.wait_exit().code(), Some(5));
    agent.wait_stderr("error: no config file");
}

#[test]
fn initialize_can_be_left_unanswered() {
    let mut agent = Driver::inline(json!({"initialize": {"fault": {"type": "never"}}}));
    agent.request("initialize", json!({"protocolVersion": 1}));
    // Requests are handled in order, so an answer to initialize would come
    // before this one.
    let id = agent.request("vendor/ping", json!({}));
    let reply = agent.next_message();
    assert_eq!(reply["id"], id);
    assert_eq!(reply["error"]["code"], -32601);
}

#[test]
fn initialize_can_be_answered_late() {
    let mut agent = Driver::inline(json!({"initialize": {"fault": {"type": "delay", "ms": 1000}}}));
    let init = agent.request("initialize", json!({"protocolVersion": 1}));
    let ping = agent.request("vendor/ping", json!({}));
    assert_eq!(agent.next_message()["id"], ping);
    let reply = agent.next_message();
    assert_eq!(reply["id"], init);
    assert_eq!(reply["result"]["protocolVersion"], 1);
}

#[test]
fn raw_output_steps_write_exactly_their_bytes() {
    let mut agent = Driver::inline(json!({"turns": [{"steps": [
        {"type": "rawLine", "line": "garbage that is not json"},
        {"type": "rawBytes", "hex": "ff fe 41"},
        {"type": "rawBytes", "hex": "7b7d", "newline": false},
        {"type": "rawLine", "line": ""},
        {"type": "json", "value": {"hello": "world"}},
        {"type": "json", "value": {"jsonrpc": "2.0", "id": 99999, "result": {}}},
        {"type": "oversizedLine", "bytes": 100000},
        {"type": "oversizedLine", "bytes": 3000, "json": false},
        {"type": "text", "text": "done"}
    ]}]}));
    let session = agent.session();
    agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    assert_eq!(agent.next_line(), b"garbage that is not json\n");
    assert_eq!(agent.next_line(), b"\xff\xfeA\n");
    assert_eq!(agent.next_line(), b"{}\n");
    assert_eq!(agent.next_message(), json!({"hello": "world"}));
    assert_eq!(
        agent.next_message(),
        json!({"jsonrpc": "2.0", "id": 99999, "result": {}})
    );
    let big = agent.next_line();
    assert_eq!(big.len(), 100_001);
    let big: Value = serde_json::from_slice(&big).unwrap();
    assert_eq!(
        big["params"]["update"]["sessionUpdate"],
        "agent_message_chunk"
    );
    let mut plain = vec![b'x'; 3000];
    plain.push(b'\n');
    assert_eq!(agent.next_line(), plain);
    assert_eq!(
        agent.next_message()["params"]["update"]["content"]["text"],
        "done"
    );
    assert_eq!(agent.next_message()["result"]["stopReason"], "end_turn");
}

#[test]
fn flood_stderr_writes_that_many_bytes_and_the_turn_goes_on() {
    let mut agent = Driver::inline(json!({"turns": [{"steps": [
        {"type": "floodStderr", "bytes": 1000000},
        {"type": "text", "text": "after the flood"}
    ]}]}));
    let session = agent.session();
    let before = agent.stderr().len();
    let turn = agent.prompt(&session, "go", &mut refuse);
    assert_eq!(turn.text(), "after the flood");
    // The flood is in the pipe before the text is sent, but the driver's
    // stderr reader may still be draining it (CI caught it at 937,122 bytes).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut seen = agent.wait_stderr("stderr flood").len();
    while seen < before + 1_000_000 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
        seen = agent.stderr().len();
    }
    assert!(seen >= before + 1_000_000, "{seen} bytes");
}

#[cfg(target_os = "linux")]
#[test]
fn spawn_grandchild_reports_a_live_pid() {
    let mut agent = Driver::inline(json!({"turns": [{"steps": [{"type": "spawnGrandchild"}]}]}));
    let session = agent.session();
    agent.prompt(&session, "go", &mut refuse);
    let pid: u32 = loop {
        let stderr = agent.wait_stderr("grandchild pid: ");
        let rest = stderr.split("grandchild pid: ").nth(1).unwrap();
        // Only a complete line holds the whole pid.
        if let Some((pid, _)) = rest.split_once('\n') {
            break pid.trim().parse().unwrap();
        }
    };
    // Killed however the test ends, so no `sleep` outlives it.
    struct Reap(u32);
    impl Drop for Reap {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill")
                .arg(self.0.to_string())
                .status();
        }
    }
    let _reap = Reap(pid);
    // Right after spawn the child may still be inside exec, with no
    // command line yet.
    let deadline = std::time::Instant::now() + common::HANG_GUARD;
    let cmdline = loop {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
        if !cmdline.is_empty() || std::time::Instant::now() > deadline {
            break cmdline;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(cmdline, b"sleep\x001000\x00");
}

#[test]
fn stop_reading_stdin_leaves_later_requests_unread() {
    let mut agent = Driver::inline(json!({"turns": [{"steps": [
        {"type": "stopReadingStdin"},
        {"type": "text", "text": "deaf now"}
    ]}]}));
    let session = agent.session();
    assert_eq!(agent.prompt(&session, "go", &mut refuse).text(), "deaf now");
    agent.request("vendor/ping", json!({}));
    // Absence can only be shown by waiting; a reading agent answers at once.
    assert_eq!(agent.try_next_line(Duration::from_millis(500)), None);
}

#[test]
fn ignore_cancel_hangs_the_turn() {
    let mut agent = Driver::inline(json!({"turns": [{"steps": [
        {"type": "waitForCancel", "ignoreCancel": true}
    ]}]}));
    let session = agent.session();
    agent.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}),
    );
    agent.notify("session/cancel", json!({"sessionId": session}));
    let ping = agent.request("vendor/ping", json!({}));
    assert_eq!(agent.next_message()["id"], ping);
    // Absence can only be shown by waiting; a cancelled turn answers at once.
    assert_eq!(agent.try_next_line(Duration::from_millis(500)), None);
}

#[test]
fn closing_stdin_ends_the_agent() {
    let mut agent = Driver::spawn(&acp_testkit::scenario("echo"));
    agent.initialize();
    agent.close_stdin();
    assert_eq!(agent.wait_exit().code(), Some(0));
}

#[test]
fn a_bad_scenario_exits_2_and_says_where() {
    let mut agent = Driver::inline(json!({"turns": [{"steps": [{"type": "txet"}]}]}));
    assert_eq!(agent.wait_exit().code(), Some(2));
    agent.wait_stderr("turns[0].steps[0]");
}
