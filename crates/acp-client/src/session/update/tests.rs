use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::decode::{decode_fast_for_test, decode_general_for_test};
use super::*;
use crate::Error;

mod fast_path;
mod garbage;
mod seeds;

fn decode(params: Value) -> SessionNotification {
    decode_str(&params.to_string()).expect("decodes")
}

#[allow(clippy::result_large_err)] // `Error`'s size is the crate's choice (error.rs).
fn decode_str(params: &str) -> Result<SessionNotification, Error> {
    let raw = RawValue::from_string(params.to_owned()).expect("valid JSON");
    decode_session_notification(&raw)
}

fn wrapped(update: Value) -> SessionUpdate {
    decode(json!({"sessionId": "s1", "update": update})).update
}

fn text_chunk(text: &str, message_id: Option<&str>) -> ContentChunk {
    ContentChunk {
        content: Content::text(text),
        message_id: message_id.map(str::to_owned),
    }
}

fn assert_unknown(update: &SessionUpdate, expected_kind: &str) {
    match update {
        SessionUpdate::Unknown { kind, raw } => {
            assert_eq!(kind, expected_kind);
            assert!(raw.is_object(), "raw update kept: {raw}");
        }
        other => panic!("expected Unknown({expected_kind}), got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Standard shapes.

#[test]
fn agent_message_chunk_with_text() {
    let n = decode(json!({
        "sessionId": "sess_abc123def456",
        "update": {"sessionUpdate": "agent_message_chunk",
                   "content": {"type": "text", "text": "Analyzing code..."}}
    }));
    assert_eq!(n.session_id, SessionId::new("sess_abc123def456"));
    assert_eq!(
        n.update,
        SessionUpdate::AgentMessageChunk(text_chunk("Analyzing code...", None))
    );
}

#[test]
fn chunk_kinds_and_message_id() {
    for (kind, make) in [
        (
            "agent_message_chunk",
            SessionUpdate::AgentMessageChunk as fn(ContentChunk) -> SessionUpdate,
        ),
        ("agent_thought_chunk", SessionUpdate::AgentThoughtChunk),
        ("user_message_chunk", SessionUpdate::UserMessageChunk),
    ] {
        let update = wrapped(json!({"sessionUpdate": kind, "messageId": "m1",
                                    "content": {"type": "text", "text": "hi"}}));
        assert_eq!(update, make(text_chunk("hi", Some("m1"))), "{kind}");
    }
}

#[test]
fn fast_path_takes_plain_text_chunks_and_agrees_with_general_path() {
    let lines = [
        r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"plain"}}}"#,
        r#"{"update":{"content":{"text":"esc \"q\" \n \u00e9","type":"text"},"sessionUpdate":"agent_thought_chunk","messageId":"m\/1"},"sessionId":"s\u0031"}"#,
        r#"{"sessionId":"s","update":{"sessionUpdate":"user_message_chunk","messageId":null,"content":{"type":"text","text":""},"_meta":{"x":1}}}"#,
    ];
    for line in lines {
        let fast = decode_fast_for_test(line).expect("hot path taken");
        let general = decode_general_for_test(line).expect("general path decodes");
        assert_eq!(fast, general, "{line}");
    }
    let n = decode_str(lines[1]).unwrap();
    assert_eq!(n.session_id, SessionId::new("s1"));
    assert_eq!(
        n.update,
        SessionUpdate::AgentThoughtChunk(text_chunk("esc \"q\" \n é", Some("m/1")))
    );
}

#[test]
fn fast_path_declines_what_it_cannot_keep_whole() {
    let annotated = json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "x", "annotations": {"priority": 0.5}}}})
    .to_string();
    assert!(decode_fast_for_test(&annotated).is_none());
    let n = decode_str(&annotated).unwrap();
    let SessionUpdate::AgentMessageChunk(chunk) = n.update else {
        panic!("{n:?}")
    };
    let Content::Known(schema::ContentBlock::Text(t)) = chunk.content else {
        panic!("{chunk:?}")
    };
    assert_eq!(t.annotations.and_then(|a| a.priority), Some(0.5));

    let image = json!({"sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
        "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}}})
    .to_string();
    assert!(decode_fast_for_test(&image).is_none());
    let n = decode_str(&image).unwrap();
    assert!(matches!(
        n.update,
        SessionUpdate::AgentMessageChunk(ContentChunk {
            content: Content::Known(schema::ContentBlock::Image(_)),
            ..
        })
    ));
}

#[test]
fn unknown_update_kind_is_kept_whole() {
    let update = json!({"sessionUpdate": "notice", "level": "info", "message": "hello"});
    let decoded = wrapped(update.clone());
    assert_eq!(
        decoded,
        SessionUpdate::Unknown {
            kind: "notice".into(),
            raw: update
        }
    );
}

#[test]
fn unknown_content_block_type_keeps_the_chunk() {
    let block = json!({"type": "hologram", "frames": 3});
    let update = wrapped(json!({"sessionUpdate": "agent_message_chunk", "content": block.clone()}));
    assert_eq!(
        update,
        SessionUpdate::AgentMessageChunk(ContentChunk {
            content: Content::Unknown(block),
            message_id: None
        })
    );
}

#[test]
fn known_kind_missing_required_fields_becomes_unknown() {
    assert_unknown(
        &wrapped(json!({"sessionUpdate": "agent_message_chunk"})),
        "agent_message_chunk",
    );
    assert_unknown(
        &wrapped(json!({"sessionUpdate": "tool_call", "title": "x"})),
        "tool_call",
    );
    assert_unknown(
        &wrapped(json!({"sessionUpdate": "plan", "entries": "soon"})),
        "plan",
    );
    assert_unknown(
        &wrapped(json!({"sessionUpdate": "usage_update", "used": 5})),
        "usage_update",
    );
    assert_unknown(
        &wrapped(json!({"sessionUpdate": "current_mode_update", "currentModeId": 3})),
        "current_mode_update",
    );
}

#[test]
fn tool_call_with_every_field() {
    let update = wrapped(json!({
        "sessionUpdate": "tool_call",
        "toolCallId": "call_xyz",
        "title": "Edit `auth.ts`",
        "kind": "edit",
        "status": "pending",
        "rawInput": {"file_path": "/src/auth.ts"},
        "rawOutput": null,
        "content": [
            {"type": "diff", "path": "/src/auth.ts", "oldText": "a", "newText": "b"},
            {"type": "diff", "path": "/src/new.ts", "oldText": null, "newText": "n"},
            {"type": "diff", "path": "/src/new2.ts", "newText": "m"},
            {"type": "terminal", "terminalId": "term-1"},
            {"type": "content", "content": {"type": "text", "text": "ok"}},
        ],
        "locations": [{"path": "/src/auth.ts", "line": 42}],
    }));
    let SessionUpdate::ToolCall(f) = update else {
        panic!("{update:?}")
    };
    assert_eq!(f.tool_call_id, ToolCallId::new("call_xyz"));
    assert_eq!(f.title.as_deref(), Some("Edit `auth.ts`"));
    assert_eq!(f.kind, Some(ToolKind::Edit));
    assert_eq!(f.status, Some(ToolStatus::Pending));
    assert_eq!(f.raw_input, Some(json!({"file_path": "/src/auth.ts"})));
    assert_eq!(f.raw_output, None);
    assert_eq!(
        f.content.unwrap(),
        vec![
            ToolContent::Diff {
                path: "/src/auth.ts".into(),
                old_text: Some("a".into()),
                new_text: "b".into()
            },
            ToolContent::Diff {
                path: "/src/new.ts".into(),
                old_text: None,
                new_text: "n".into()
            },
            ToolContent::Diff {
                path: "/src/new2.ts".into(),
                old_text: None,
                new_text: "m".into()
            },
            ToolContent::Terminal {
                terminal_id: "term-1".into()
            },
            ToolContent::Content {
                content: Content::text("ok")
            },
        ]
    );
    assert_eq!(
        f.locations.unwrap(),
        vec![schema::ToolCallLocation::new("/src/auth.ts").line(42)]
    );
}

#[test]
fn tool_call_unknown_kind_status_and_items_are_kept() {
    let odd_item = json!({"type": "hologram", "x": 1});
    let odd_diff = json!({"type": "diff", "path": "/a", "oldText": 7, "newText": "b"});
    let no_path = json!({"type": "diff", "newText": "b"});
    let update = wrapped(json!({
        "sessionUpdate": "tool_call_update", "toolCallId": "t",
        "kind": "teleport", "status": "cancelled",
        "content": [odd_item.clone(), odd_diff.clone(), no_path.clone()],
        "locations": [{"uri": "file:///a"}, {"path": "/b"}],
    }));
    let SessionUpdate::ToolCallUpdate(f) = update else {
        panic!("{update:?}")
    };
    assert_eq!(f.kind, Some(ToolKind::Unknown("teleport".into())));
    assert_eq!(f.status, Some(ToolStatus::Cancelled));
    assert_eq!(
        f.content.unwrap(),
        vec![
            ToolContent::Unknown { raw: odd_item },
            // An oldText that is neither text nor null must not read as "new file".
            ToolContent::Unknown { raw: odd_diff },
            ToolContent::Unknown { raw: no_path },
        ]
    );
    // The location without a path is left out; the good one stays.
    assert_eq!(
        f.locations.unwrap(),
        vec![schema::ToolCallLocation::new("/b")]
    );

    let update = wrapped(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t",
                                "status": "paused"}),
    );
    let SessionUpdate::ToolCallUpdate(f) = update else {
        panic!("{update:?}")
    };
    assert_eq!(f.status, Some(ToolStatus::Unknown("paused".into())));
    assert!(!f.status.unwrap().is_finished());
}

#[test]
fn tool_call_update_only_changed_fields() {
    let update = wrapped(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_001",
                                "status": "in_progress"}),
    );
    let mut expected = ToolCallFields::new("call_001");
    expected.status = Some(ToolStatus::InProgress);
    assert_eq!(update, SessionUpdate::ToolCallUpdate(expected));
}

#[test]
fn decode_tool_call_fields_is_lenient_but_needs_an_id() {
    let f = decode_tool_call_fields(&json!({"toolCallId": 17, "title": 5,
        "content": {"type": "terminal", "terminalId": "t1"}}))
    .unwrap();
    assert_eq!(f.tool_call_id, ToolCallId::new("17"));
    assert_eq!(f.title, None);
    assert_eq!(
        f.content,
        Some(vec![ToolContent::Terminal {
            terminal_id: "t1".into()
        }])
    );
    // A bare content block where the `content` wrapper belongs.
    let f = decode_tool_call_fields(&json!({"toolCallId": "a",
        "content": [{"type": "text", "text": "t"}]}))
    .unwrap();
    assert_eq!(
        f.content,
        Some(vec![ToolContent::Content {
            content: Content::text("t")
        }])
    );

    for bad in [
        json!({"title": "x"}),
        json!({"toolCallId": null}),
        json!("t1"),
    ] {
        let err = decode_tool_call_fields(&bad).unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{bad}: {err}");
    }
}

#[test]
fn plan_keeps_unknown_status_and_missing_fields() {
    let update = wrapped(json!({"sessionUpdate": "plan", "entries": [
        {"content": "a", "priority": "high", "status": "blocked"},
        {"content": "b"},
        "c",
        42,
    ]}));
    assert_eq!(
        update,
        SessionUpdate::Plan {
            entries: vec![
                PlanEntry {
                    content: "a".into(),
                    priority: "high".into(),
                    status: "blocked".into()
                },
                PlanEntry {
                    content: "b".into(),
                    priority: String::new(),
                    status: String::new()
                },
                PlanEntry {
                    content: "c".into(),
                    priority: String::new(),
                    status: String::new()
                },
            ]
        }
    );
}

#[test]
fn session_info_absent_null_and_set() {
    let info = |update: Value| match wrapped(update) {
        SessionUpdate::SessionInfoUpdate(info) => info,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        info(json!({"sessionUpdate": "session_info_update", "title": "T"})),
        SessionInfo {
            title: Some(Some("T".into())),
            updated_at: None
        }
    );
    assert_eq!(
        info(
            json!({"sessionUpdate": "session_info_update", "title": null,
                    "updatedAt": "2025-01-01T00:00:00Z"})
        ),
        SessionInfo {
            title: Some(None),
            updated_at: Some(Some("2025-01-01T00:00:00Z".into()))
        }
    );
    assert_eq!(
        info(json!({"sessionUpdate": "session_info_update"})),
        SessionInfo::default()
    );
}

#[test]
fn usage_modes_commands_and_config_options() {
    assert_eq!(
        wrapped(
            json!({"sessionUpdate": "usage_update", "used": 10, "size": 100,
                       "cost": {"amount": 0.5, "currency": "USD"}})
        ),
        SessionUpdate::UsageUpdate(Usage {
            used: 10,
            size: 100,
            cost: Some(json!({"amount": 0.5, "currency": "USD"}))
        })
    );
    assert_eq!(
        wrapped(json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"})),
        SessionUpdate::CurrentModeUpdate {
            current_mode_id: "plan".into()
        }
    );
    assert_eq!(
        wrapped(
            json!({"sessionUpdate": "available_commands_update", "availableCommands": [
                {"name": "web", "description": "Search", "input": {"hint": "query"}},
                {"name": "broken"},
            ]})
        ),
        SessionUpdate::AvailableCommandsUpdate {
            available_commands: vec![schema::AvailableCommand::new("web", "Search").input(
                schema::AvailableCommandInput::Unstructured(schema::UnstructuredCommandInput::new(
                    "query"
                ))
            )]
        }
    );
    let update = wrapped(
        json!({"sessionUpdate": "config_option_update", "configOptions": [
            {"id": "model", "name": "Model", "category": "model", "type": "select",
             "currentValue": "m1", "options": [{"value": "m1", "name": "M1"}]},
            {"id": "dial", "name": "Dial", "type": "dial", "currentValue": 3},
            {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": true},
        ]}),
    );
    let SessionUpdate::ConfigOptionUpdate { config_options } = update else {
        panic!("{update:?}")
    };
    let ids: Vec<_> = config_options.iter().map(|o| o.id.0.to_string()).collect();
    assert_eq!(
        ids,
        ["model", "fast"],
        "the option of unknown type is left out"
    );
}

#[test]
fn envelope_errors() {
    for params in [
        "[]",
        "\"x\"",
        "null",
        r#"{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#,
        r#"{"sessionId":7,"update":{"sessionUpdate":"plan","entries":[]}}"#,
    ] {
        let err = decode_str(params).unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{params}: {err}");
    }
}

#[test]
fn update_that_is_not_an_object_is_unknown() {
    let n = decode(json!({"sessionId": "s", "update": "hello"}));
    assert_eq!(
        n.update,
        SessionUpdate::Unknown {
            kind: String::new(),
            raw: json!({"sessionId": "s", "update": "hello"})
        }
    );
}

#[test]
fn decode_content_leniency() {
    assert_eq!(decode_content(json!("plain")), Content::text("plain"));
    assert_eq!(
        decode_content(json!({"text": "untyped"})),
        Content::text("untyped")
    );
    let odd = json!({"type": "hologram"});
    assert_eq!(decode_content(odd.clone()), Content::Unknown(odd));
    // A known type with a missing required field is kept, not dropped.
    let bad_image = json!({"type": "image", "mimeType": "image/png"});
    assert_eq!(
        decode_content(bad_image.clone()),
        Content::Unknown(bad_image)
    );
    assert_eq!(decode_content(json!(3)), Content::Unknown(json!(3)));
}

// ---------------------------------------------------------------------------
// November 2026: agent-run terminals in `_meta`, plan operations, subagents.

#[test]
fn codex_terminal_meta_is_decoded_and_never_taken_by_the_fast_path() {
    // codex-acp 2.6.0: the output of a command it runs itself, only in `_meta`.
    let line = json!({"sessionId": "s", "update": {"sessionUpdate": "tool_call_update",
        "toolCallId": "c1", "_meta": {"terminal_output_delta": {"terminal_id": "t9", "data": "ran\n"}}}})
    .to_string();
    // The fast path would drop `_meta` (and the output with it).
    assert!(decode_fast_for_test(&line).is_none());
    let SessionUpdate::ToolCallUpdate(f) = decode_str(&line).unwrap().update else {
        panic!()
    };
    assert_eq!(
        f.terminal_meta,
        Some(TerminalMeta {
            terminal_id: "t9".into(),
            output: Some("ran\n".into()),
            exit: None,
            ..TerminalMeta::default()
        })
    );
    let f = match wrapped(
        json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "ls",
        "content": [{"type": "terminal", "terminalId": "t9"}],
        "_meta": {"terminal_info": {"terminal_id": "t9", "cwd": "/w"}}}),
    ) {
        SessionUpdate::ToolCall(f) => f,
        other => panic!("{other:?}"),
    };
    assert_eq!(f.terminal_meta.unwrap().terminal_id, "t9");
    let SessionUpdate::ToolCallUpdate(f) = wrapped(json!({"sessionUpdate": "tool_call_update",
        "toolCallId": "c1", "status": "completed",
        "_meta": {"terminal_exit": {"terminal_id": "t9", "exit_code": 2, "signal": null}}}))
    else {
        panic!()
    };
    let meta = f.terminal_meta.unwrap();
    assert_eq!(meta.exit.unwrap().exit_code, Some(2));
    assert_eq!(meta.output, None);
    // Hostile shapes: no terminal id, or a number where text belongs.
    for odd in [
        json!({"terminal_output_delta": {"data": "x"}}),
        json!({"terminal_output_delta": "x"}),
        json!("meta"),
    ] {
        let SessionUpdate::ToolCallUpdate(f) = wrapped(json!({"sessionUpdate": "tool_call_update",
            "toolCallId": "c1", "_meta": odd}))
        else {
            panic!()
        };
        assert_eq!(f.terminal_meta, None);
    }
}

#[test]
fn plan_update_items_markdown_and_removed() {
    let SessionUpdate::PlanUpdate(p) = wrapped(json!({"sessionUpdate": "plan_update",
        "plan": {"type": "items", "planId": "p1",
            "entries": [{"content": "a", "priority": "high", "status": "pending"}]}}))
    else {
        panic!()
    };
    assert_eq!(p.plan_id, "p1");
    assert!(matches!(&p.body, PlanBody::Items { entries } if entries[0].content == "a"));
    let SessionUpdate::PlanUpdate(p) = wrapped(json!({"sessionUpdate": "plan_update",
        "plan": {"type": "markdown", "planId": "p2", "content": "# Plan\n- x", "path": "/w/PLAN.md"}}))
    else {
        panic!()
    };
    assert_eq!(
        p.body,
        PlanBody::Markdown {
            content: "# Plan\n- x".into(),
            path: Some("/w/PLAN.md".into())
        }
    );
    // A relative path is no file to open (the spec requires absolute).
    let SessionUpdate::PlanUpdate(p) = wrapped(json!({"sessionUpdate": "plan_update",
        "plan": {"type": "markdown", "planId": "p2", "content": "x", "path": "../../etc/passwd"}}))
    else {
        panic!()
    };
    assert!(matches!(p.body, PlanBody::Markdown { path: None, .. }));
    assert_eq!(
        wrapped(json!({"sessionUpdate": "plan_removed", "planId": "p1"})),
        SessionUpdate::PlanRemoved {
            plan_id: "p1".into()
        }
    );
    // An unknown plan type keeps the update whole.
    assert_unknown(
        &wrapped(json!({"sessionUpdate": "plan_update", "plan": {"type": "graph", "planId": "p"}})),
        "plan_update",
    );
}

#[test]
fn subagent_update_is_a_patch() {
    let SessionUpdate::SubagentUpdate(p) = wrapped(json!({"sessionUpdate": "subagent_update",
        "sessionId": "child", "title": "Explore", "description": null,
        "state": {"state": "idle", "stopReason": "end_turn"},
        "capabilities": {"cancel": {}}}))
    else {
        panic!()
    };
    assert_eq!(p.session_id, "child");
    assert_eq!(p.title, Some(Some("Explore".into())));
    assert_eq!(p.description, Some(None));
    assert_eq!(
        p.state,
        Some(Some(SubagentState {
            state: "idle".into(),
            stop_reason: Some("end_turn".into())
        }))
    );
    assert_eq!(p.can_cancel, Some(true));
    assert_eq!(p.cwd, None);
    let SessionUpdate::SubagentUpdate(p) = wrapped(json!({"sessionUpdate": "subagent_update",
        "sessionId": "child", "capabilities": null}))
    else {
        panic!()
    };
    assert_eq!(p.can_cancel, Some(false));
    assert_eq!(p.title, None);
}

#[test]
fn session_message_and_chunk() {
    let SessionUpdate::SessionMessage(m) = wrapped(json!({"sessionUpdate": "session_message",
        "messageId": "m1", "senderSessionId": "s", "recipientSessionId": "child",
        "content": [{"type": "text", "text": "look at"}]}))
    else {
        panic!()
    };
    assert_eq!(m.recipient_session_id, Some(Some("child".into())));
    assert_eq!(m.content.unwrap()[0].as_text(), Some("look at"));
    assert_eq!(
        wrapped(
            json!({"sessionUpdate": "session_message_chunk", "messageId": "m1",
            "content": {"type": "text", "text": " x"}})
        ),
        SessionUpdate::SessionMessageChunk {
            message_id: "m1".into(),
            content: Content::text(" x")
        }
    );
}
