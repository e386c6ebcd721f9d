//! The replies built from the schema crate's types are byte for byte the
//! JSON the hand-written `json!` literals sent before.

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::path::Path;

use serde_json::json;

use super::{decision_to_wire, to_reply};
use crate::policy::permission::PermissionDecision;
use crate::schema;

fn same(built: serde_json::Value, before: serde_json::Value) {
    assert_eq!(
        serde_json::to_string(&built).unwrap(),
        serde_json::to_string(&before).unwrap()
    );
}

#[test]
fn replies_keep_their_wire_bytes() {
    same(
        decision_to_wire(&PermissionDecision::Selected {
            option_id: "allow".into(),
        })
        .unwrap(),
        json!({ "outcome": { "outcome": "selected", "optionId": "allow" } }),
    );
    same(
        decision_to_wire(&PermissionDecision::Cancelled).unwrap(),
        json!({ "outcome": { "outcome": "cancelled" } }),
    );
    same(
        to_reply(&schema::ReadTextFileResponse::new("a\nb")).unwrap(),
        json!({ "content": "a\nb" }),
    );
    same(
        to_reply(&schema::WriteTextFileResponse::new()).unwrap(),
        json!({}),
    );
    same(
        to_reply(&schema::CreateTerminalResponse::new(
            schema::TerminalId::from("t-7".to_owned()),
        ))
        .unwrap(),
        json!({ "terminalId": "t-7" }),
    );
    same(
        to_reply(&schema::KillTerminalResponse::new()).unwrap(),
        json!({}),
    );
    same(
        to_reply(&schema::ReleaseTerminalResponse::new()).unwrap(),
        json!({}),
    );
}

#[test]
fn terminal_replies_leave_out_an_unset_exit_and_send_its_nulls() {
    use crate::tools::terminal::{TerminalExit, TerminalOutput};
    let running = TerminalOutput {
        output: "hi".into(),
        truncated: false,
        exit_status: None,
    };
    same(
        to_reply(&running).unwrap(),
        json!({ "output": "hi", "truncated": false }),
    );
    let exited = TerminalOutput {
        output: "hi".into(),
        truncated: true,
        exit_status: Some(TerminalExit {
            exit_code: Some(0),
            signal: None,
        }),
    };
    same(
        to_reply(&exited).unwrap(),
        json!({ "output": "hi", "truncated": true, "exitStatus": { "exitCode": 0, "signal": null } }),
    );
    let killed = TerminalExit {
        exit_code: None,
        signal: Some("SIGKILL".into()),
    };
    same(
        to_reply(&killed).unwrap(),
        json!({ "exitCode": null, "signal": "SIGKILL" }),
    );
}

#[test]
fn the_clients_own_asks_decode_as_their_literals_did() {
    use super::asks;
    use crate::policy::permission::PermissionRequestId;
    use crate::session::update::decode_tool_call_fields;
    let id = PermissionRequestId(3);
    same(
        asks::encode(&asks::untitled_permission(id)).unwrap(),
        json!({ "toolCallId": "permission-3" }),
    );
    let git = asks::encode(&asks::git_write(id, "/w/.git/config")).unwrap();
    let before = json!({
        "toolCallId": "acp-client-git-write-3",
        "title": "Write `/w/.git/config` inside .git (hooks and config there run code)",
        "kind": "edit",
        "status": "pending",
        "locations": [{ "path": "/w/.git/config" }],
    });
    assert_eq!(git, before);
    assert_eq!(
        decode_tool_call_fields(&git).unwrap(),
        decode_tool_call_fields(&before).unwrap()
    );
    let run = asks::encode(&asks::terminal_run(id, "make test", Path::new("/w"))).unwrap();
    let before = json!({
        "toolCallId": "acp-client-terminal-3",
        "title": "Run `make test` in /w",
        "kind": "execute",
        "status": "pending",
        "rawInput": { "command": "make test" },
    });
    assert_eq!(run, before);
    assert_eq!(
        decode_tool_call_fields(&run).unwrap(),
        decode_tool_call_fields(&before).unwrap()
    );
}
