//! The requests built from the schema crate's types are byte for byte the
//! JSON the hand-written `json!` literals sent before (keys in the same
//! order: serde_json keeps insertion order in this workspace).

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::path::Path;

use serde_json::json;

use super::to_params;
use crate::schema;

fn sid() -> schema::SessionId {
    schema::SessionId::from("s-1".to_owned())
}

fn same(built: serde_json::Value, before: serde_json::Value) {
    assert_eq!(
        serde_json::to_string(&built).unwrap(),
        serde_json::to_string(&before).unwrap()
    );
}

#[test]
fn requests_keep_their_wire_bytes() {
    same(
        to_params(&schema::AuthenticateRequest::new("login".to_owned())).unwrap(),
        json!({ "methodId": "login" }),
    );
    same(to_params(&schema::LogoutRequest::new()).unwrap(), json!({}));
    same(
        to_params(&schema::CloseSessionRequest::new(sid())).unwrap(),
        json!({ "sessionId": "s-1" }),
    );
    same(
        to_params(&schema::DeleteSessionRequest::new(sid())).unwrap(),
        json!({ "sessionId": "s-1" }),
    );
    same(
        to_params(&schema::SetSessionModeRequest::new(
            sid(),
            "plan".to_owned(),
        ))
        .unwrap(),
        json!({ "sessionId": "s-1", "modeId": "plan" }),
    );
    let content = vec![schema::ContentBlock::from("hi")];
    same(
        to_params(&schema::PromptRequest::new(sid(), content.clone())).unwrap(),
        json!({ "sessionId": "s-1", "prompt": content }),
    );
    same(
        to_params(&schema::CancelNotification::new(sid())).unwrap(),
        json!({ "sessionId": "s-1" }),
    );
}

#[test]
fn session_list_leaves_out_what_is_not_given() {
    let list = |cwd: Option<&Path>, cursor: Option<&str>| {
        to_params(
            &schema::ListSessionsRequest::new()
                .cwd(cwd.map(Path::to_path_buf))
                .cursor(cursor.map(str::to_owned)),
        )
        .unwrap()
    };
    same(list(None, None), json!({}));
    same(
        list(Some(Path::new("/w")), Some("c2")),
        json!({ "cwd": "/w", "cursor": "c2" }),
    );
    same(list(None, Some("c2")), json!({ "cursor": "c2" }));
}
