//! The replies built from the schema crate's types are byte for byte the
//! JSON the hand-written `json!` literals sent before.

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

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
