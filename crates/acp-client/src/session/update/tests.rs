use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::decode::{decode_fast_for_test, decode_general_for_test};
use super::*;
use crate::Error;

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
// Shapes from the seed documents (/work/shared/seeds): each `session/update`
// example, decoded as a client receiving it would.

/// 000: flat update with the draft name and a `text` field.
#[test]
fn seed_agent_message_text_update() {
    let n = decode(json!({
        "sessionId": "sess_abc123",
        "sessionUpdate": "agent_message_text_update",
        "text": "I'll analyze..."
    }));
    assert_eq!(
        n.update,
        SessionUpdate::AgentMessageChunk(text_chunk("I'll analyze...", None))
    );
    let n = decode(
        json!({"sessionId": "s", "sessionUpdate": "agent_thought_text_update",
                          "text": "hmm"}),
    );
    assert_eq!(
        n.update,
        SessionUpdate::AgentThoughtChunk(text_chunk("hmm", None))
    );
}

/// 000: flat `tool_call_update` that announces the call.
#[test]
fn seed_flat_tool_call_update() {
    let n = decode(json!({
        "sessionId": "sess_abc123",
        "sessionUpdate": "tool_call_update",
        "toolCallId": "tc_001",
        "title": "Reading auth.py",
        "kind": "read",
        "status": "pending"
    }));
    let mut expected = ToolCallFields::new("tc_001");
    expected.title = Some("Reading auth.py".into());
    expected.kind = Some(ToolKind::Read);
    expected.status = Some(ToolStatus::Pending);
    assert_eq!(n.update, SessionUpdate::ToolCallUpdate(expected));
}

/// 000: `current_mode_update` with `modeId`, flat and wrapped.
#[test]
fn seed_current_mode_update_mode_id() {
    let expected = SessionUpdate::CurrentModeUpdate {
        current_mode_id: "normal".into(),
    };
    assert_eq!(
        decode(
            json!({"sessionId": "s", "sessionUpdate": "current_mode_update",
                      "modeId": "normal"})
        )
        .update,
        expected
    );
    assert_eq!(
        wrapped(json!({"sessionUpdate": "current_mode_update", "modeId": "normal"})),
        expected
    );
}

/// 000: flat `plan`.
#[test]
fn seed_flat_plan() {
    let n = decode(json!({
        "sessionId": "sess_abc123",
        "sessionUpdate": "plan",
        "entries": [
            {"content": "Read existing auth implementation", "priority": "high", "status": "completed"},
            {"content": "Identify security vulnerabilities", "priority": "high", "status": "in_progress"},
            {"content": "Implement OAuth2 flow", "priority": "medium", "status": "pending"},
            {"content": "Add unit tests", "priority": "low", "status": "pending"}
        ]
    }));
    let SessionUpdate::Plan { entries } = n.update else {
        panic!("{n:?}")
    };
    assert_eq!(entries.len(), 4);
    assert_eq!(entries[1].status, "in_progress");
    assert_eq!(entries[3].priority, "low");
}

/// 000: `available_commands_update` with `commands`.
#[test]
fn seed_available_commands_legacy_field() {
    assert_eq!(
        wrapped(json!({"sessionUpdate": "available_commands_update",
                       "commands": [{"name": "plan", "description": "Make a plan"}]})),
        SessionUpdate::AvailableCommandsUpdate {
            available_commands: vec![schema::AvailableCommand::new("plan", "Make a plan")]
        }
    );
}

/// 001: params with only `content`: no discriminator at all.
#[test]
fn seed_content_without_update() {
    let params = json!({"sessionId": "550e8400-...",
                        "content": [{"type": "text", "text": "The architecture..."}]});
    let n = decode(params.clone());
    assert_eq!(
        n.update,
        SessionUpdate::Unknown {
            kind: String::new(),
            raw: params
        }
    );
}

/// 002: `message` with a role and a list of blocks; and the standard shapes.
#[test]
fn seed_message_with_role() {
    let update = wrapped(json!({"sessionUpdate": "message", "role": "assistant",
        "content": [{"type": "text", "text": "I'll analyze this file for you..."}]}));
    assert_eq!(
        update,
        SessionUpdate::AgentMessageChunk(text_chunk("I'll analyze this file for you...", None))
    );
    let update = wrapped(json!({"sessionUpdate": "message", "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}));
    assert_eq!(
        update,
        SessionUpdate::UserMessageChunk(text_chunk("ab", None))
    );
    // Mixed blocks cannot be one chunk: kept whole.
    assert_unknown(
        &wrapped(
            json!({"sessionUpdate": "message", "role": "assistant", "content": [
            {"type": "text", "text": "a"}, {"type": "image", "data": "", "mimeType": "image/png"}]}),
        ),
        "message",
    );
}

#[test]
fn seed_standard_tool_call_sequence() {
    let call = wrapped(
        json!({"sessionUpdate": "tool_call", "toolCallId": "call_001",
        "title": "Reading configuration file", "kind": "read", "status": "pending"}),
    );
    assert!(matches!(&call, SessionUpdate::ToolCall(f) if f.kind == Some(ToolKind::Read)));
    let done = wrapped(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_001",
        "status": "completed", "content": [{"type": "content", "content":
            {"type": "text", "text": "File read successfully. Found 3 issues."}}]}),
    );
    let SessionUpdate::ToolCallUpdate(f) = done else {
        panic!("{done:?}")
    };
    assert_eq!(f.status, Some(ToolStatus::Completed));
    assert_eq!(
        f.content,
        Some(vec![ToolContent::Content {
            content: Content::text("File read successfully. Found 3 issues.")
        }])
    );
}

/// 003: tool call content `{type: "content", content: {text}}` (no block type).
#[test]
fn seed_untyped_text_in_tool_content() {
    let update = wrapped(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "call_xyz",
        "status": "completed", "content": [{"type": "content", "content": {"text": "done"}}]}),
    );
    let SessionUpdate::ToolCallUpdate(f) = update else {
        panic!("{update:?}")
    };
    assert_eq!(
        f.content,
        Some(vec![ToolContent::Content {
            content: Content::text("done")
        }])
    );
}

/// 003: permission request `toolCall` with `rawInput` only.
#[test]
fn seed_permission_tool_call() {
    let f = decode_tool_call_fields(&json!({"toolCallId": "call_xyz", "title": "Edit `auth.ts`",
        "rawInput": {"file_path": "/src/auth.ts", "old_string": "a", "new_string": "b"}}))
    .unwrap();
    assert_eq!(f.title.as_deref(), Some("Edit `auth.ts`"));
    assert!(f.raw_input.is_some());
    assert_eq!(f.content, None);
}

/// 004: `kind` instead of `sessionUpdate`, with several odd payloads.
#[test]
fn seed_kind_discriminator() {
    // Role-less `message` with a string: ambiguous, kept whole.
    assert_unknown(
        &wrapped(json!({"kind": "message", "content": "Hello"})),
        "message",
    );

    // Thought with a non-block content: the chunk is known, its content is not.
    let thought = json!({"thought": "I need to analyze the function first..."});
    assert_eq!(
        wrapped(json!({"kind": "agent_thought_chunk", "content": thought.clone()})),
        SessionUpdate::AgentThoughtChunk(ContentChunk {
            content: Content::Unknown(thought),
            message_id: None
        })
    );

    // A message wrapper inside the chunk's content is unwrapped.
    assert_eq!(
        wrapped(
            json!({"kind": "agent_message_chunk", "content": {"role": "assistant",
            "content": [{"type": "text", "text": "I'll refactor this function by..."}]}})
        ),
        SessionUpdate::AgentMessageChunk(text_chunk("I'll refactor this function by...", None))
    );

    // Tool calls and plans nested under `content`: no top-level id/entries.
    assert_unknown(
        &wrapped(
            json!({"kind": "tool_call", "content": {"toolCallId": "call_123",
            "type": "function", "function": {"name": "read_file", "arguments": "{}"}}}),
        ),
        "tool_call",
    );
    assert_unknown(
        &wrapped(
            json!({"kind": "tool_call_update", "content": {"toolCallId": "call_123",
            "output": "defmodule Main do..."}}),
        ),
        "tool_call_update",
    );
    assert_unknown(
        &wrapped(json!({"kind": "plan", "content": {"steps": ["1. Analyze current code"]}})),
        "plan",
    );
}

// ---------------------------------------------------------------------------
// Garbage never panics.

const WORDS: &[&str] = &[
    "agent_message_chunk",
    "user_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "message",
    "agent_message_text_update",
    "text",
    "image",
    "resource",
    "resource_link",
    "audio",
    "diff",
    "terminal",
    "content",
    "assistant",
    "user",
    "pending",
    "completed",
    "",
    "select",
    "boolean",
    "édition",
    "\u{0}",
];
const KEYS: &[&str] = &[
    "sessionId",
    "update",
    "sessionUpdate",
    "kind",
    "content",
    "type",
    "text",
    "messageId",
    "toolCallId",
    "title",
    "status",
    "locations",
    "rawInput",
    "path",
    "oldText",
    "newText",
    "terminalId",
    "entries",
    "priority",
    "role",
    "used",
    "size",
    "cost",
    "availableCommands",
    "commands",
    "configOptions",
    "currentModeId",
    "modeId",
    "updatedAt",
    "data",
    "mimeType",
    "uri",
    "name",
    "description",
    "line",
    "id",
    "currentValue",
    "options",
    "annotations",
    "_meta",
];

/// A small deterministic generator (xorshift) of JSON values biased towards
/// the field names and discriminators the decoder looks at.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    /// Half the time well-typed, half the time anything.
    fn maybe(&mut self, typed: Value) -> Value {
        if self.next().is_multiple_of(2) {
            typed
        } else {
            self.value(2)
        }
    }

    /// An update object with a known-ish discriminator and its fields, each
    /// present or not, well-typed or not.
    fn update_object(&mut self) -> Value {
        let mut map = serde_json::Map::new();
        map.insert("sessionUpdate".into(), json!(self.pick(WORDS)));
        let block_type = self.pick(WORDS);
        let item_type = self.pick(&["content", "diff", "terminal", "text", "x"]);
        let candidates = [
            (
                "content",
                json!({"type": block_type, "text": "t", "data": "", "mimeType": "m"}),
            ),
            ("toolCallId", json!(self.pick(&["a", "b", "c"]))),
            ("status", json!(self.pick(WORDS))),
            ("kind", json!(self.pick(WORDS))),
            ("title", json!("title")),
            (
                "entries",
                json!([{"content": "c", "priority": "high", "status": "pending"}]),
            ),
            ("used", json!(self.next() % 100)),
            ("size", json!(self.next() % 100)),
            ("currentModeId", json!("m")),
            ("title", json!(null)),
            (
                "availableCommands",
                json!([{"name": "n", "description": "d"}]),
            ),
            (
                "configOptions",
                json!([{"id": "i", "name": "n", "type": "boolean", "currentValue": true}]),
            ),
            ("role", json!(self.pick(&["user", "assistant"]))),
            ("locations", json!([{"path": "/p", "line": 3}])),
            ("messageId", json!(self.pick(&["m1", "m2"]))),
        ];
        for (key, typed) in candidates {
            if self.next().is_multiple_of(2) {
                let v = if key == "content" && self.next().is_multiple_of(2) {
                    json!([{"type": item_type, "path": "/p", "newText": "n", "terminalId": "t",
                            "content": {"type": "text", "text": "x"}}])
                } else {
                    self.maybe(typed)
                };
                map.insert(key.into(), v);
            }
        }
        Value::Object(map)
    }

    fn value(&mut self, depth: u32) -> Value {
        let choice = if depth == 0 {
            self.next() % 5
        } else {
            self.next() % 8
        };
        match choice {
            0 => Value::Null,
            1 => Value::Bool(self.next().is_multiple_of(2)),
            2 => match self.next() % 4 {
                0 => json!(self.next() % 1000),
                1 => json!(-((self.next() % 1000) as i64)),
                2 => json!(u64::MAX - self.next() % 3),
                _ => json!((self.next() % 1000) as f64 / 7.0),
            },
            3 | 4 => Value::String(self.pick(WORDS).to_owned()),
            5 => Value::Array(
                (0..self.next() % 4)
                    .map(|_| self.value(depth - 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..self.next() % 6)
                    .map(|_| (self.pick(KEYS).to_owned(), self.value(depth - 1)))
                    .collect(),
            ),
        }
    }
}

#[test]
fn random_values_never_panic_the_decoders() {
    let mut gen = Gen(0x9E37_79B9_7F4A_7C15);
    let mut state = crate::session::SessionState::new(SessionId::new("s"));
    let mut known = 0;
    for i in 0..20_000 {
        let v = gen.value(4);
        let _ = decode_tool_call_fields(&v);
        let _ = decode_content(v.clone());
        let _ = decode_str(&v.to_string());

        // With a usable envelope, decoding must succeed whatever the update.
        let update = if i % 2 == 0 {
            gen.update_object()
        } else {
            v.clone()
        };
        for params in [
            json!({"sessionId": "s", "update": update.clone()}),
            match update {
                Value::Object(mut map) => {
                    map.insert("sessionId".into(), json!("s"));
                    Value::Object(map)
                }
                other => json!({"sessionId": "s", "content": other}),
            },
        ] {
            let n = decode_str(&params.to_string()).unwrap_or_else(|e| panic!("{params}: {e}"));
            if !matches!(n.update, SessionUpdate::Unknown { .. }) {
                known += 1;
            }
            let _ = state.apply(n.update);
        }
    }
    // The generator must reach the typed decoders, not only the Unknown path.
    assert!(known > 2_000, "only {known} updates decoded as known kinds");
}

// ---------------------------------------------------------------------------
// The borrowed fast path for tool calls must decode exactly like the general
// path, and give way to it for anything it cannot decode the same.

/// Asserts the fast path takes `params` and agrees with the general path.
fn assert_fast_agrees(params: &str) -> SessionNotification {
    let fast = decode_fast_for_test(params).unwrap_or_else(|| panic!("fast path taken: {params}"));
    let general = decode_general_for_test(params).expect("general path decodes");
    assert_eq!(fast, general, "{params}");
    fast
}

#[test]
fn fast_path_takes_tool_calls_and_agrees_with_general_path() {
    let lines = [
        // The shape of a running command's output (benches/transport.rs).
        r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"call-1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"line 1: ok\n"}}]}}"#,
        r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}}"#,
        r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c\u0031","title":"Edit `a.rs`","name":"edit_file","kind":"edit","status":"pending","content":[{"type":"diff","path":"/a.rs","oldText":"a","newText":"b"},{"type":"diff","path":"/n.rs","oldText":null,"newText":"n"},{"type":"diff","path":"/m.rs","newText":"m"},{"type":"terminal","terminalId":"term-1"}],"locations":[{"path":"/a.rs","line":4},{"uri":"x"}],"rawInput":{"cmd":["ls"]},"rawOutput":null}}"#,
        r#"{"update":{"toolCallId":"c","sessionUpdate":"tool_call_update","content":[],"locations":null,"title":null,"kind":"teleport","status":"paused","rawOutput":"done"},"sessionId":"s","_meta":{}}"#,
    ];
    for line in lines {
        assert_fast_agrees(line);
    }
    let n = assert_fast_agrees(lines[2]);
    assert_eq!(n.session_id, SessionId::new("s"));
    let SessionUpdate::ToolCall(f) = n.update else {
        panic!("{n:?}")
    };
    assert_eq!(f.tool_call_id, ToolCallId::new("c1"));
    assert_eq!(f.content.map(|c| c.len()), Some(4));
    assert_eq!(
        f.locations,
        Some(vec![schema::ToolCallLocation::new("/a.rs").line(4)])
    );
}

#[test]
fn fast_path_declines_tool_calls_it_cannot_decode_the_same() {
    let declined = [
        // Number id: the general path turns it into text.
        json!({"toolCallId": 7}),
        // A single item where a list belongs.
        json!({"toolCallId": "c", "content": {"type": "terminal", "terminalId": "t"}}),
        // Items kept whole as Unknown, or blocks the schema decodes.
        json!({"toolCallId": "c", "content": [{"type": "hologram"}]}),
        json!({"toolCallId": "c", "content": [{"type": "diff", "path": "/a", "oldText": 7, "newText": "b"}]}),
        json!({"toolCallId": "c", "content": [{"type": "diff", "newText": "b"}]}),
        json!({"toolCallId": "c", "content": [{"type": "text", "text": "bare block"}]}),
        json!({"toolCallId": "c", "content": [{"type": "content", "content": {"type": "image", "data": "AA", "mimeType": "image/png"}}]}),
        json!({"toolCallId": "c", "content": [{"type": "content", "content": {"type": "text", "text": "x", "annotations": {"priority": 1.0}}}]}),
        json!({"toolCallId": "c", "content": [{"type": "content", "content": "bare string"}]}),
        // Fields of odd types, dropped one by one by the general path.
        json!({"toolCallId": "c", "title": 5}),
        json!({"toolCallId": "c", "locations": {"path": "/a"}}),
    ];
    for mut update in declined {
        update["sessionUpdate"] = json!("tool_call_update");
        let params = json!({"sessionId": "s", "update": update}).to_string();
        assert!(decode_fast_for_test(&params).is_none(), "{params}");
        decode_general_for_test(&params).expect("general path decodes");
    }
    // Duplicate keys: a `Value` keeps the last one, the typed pass refuses.
    let dup = r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"pending","status":"completed"}}"#;
    assert!(decode_fast_for_test(dup).is_none());
    let n = decode_str(dup).unwrap();
    let SessionUpdate::ToolCallUpdate(f) = n.update else {
        panic!("{n:?}")
    };
    assert_eq!(f.status, Some(ToolStatus::Completed));
}

// ---------------------------------------------------------------------------
// The one-pass decode of a whole `session/update` line must decode what it
// takes exactly as the envelope (`Incoming::decode`) and then the params do,
// and leave every other line to them.

/// The general path of a line: the envelope, then its params.
fn decode_line_general(line: &str) -> Result<SessionNotification, String> {
    match crate::rpc::Incoming::decode(line.as_bytes()) {
        Ok(crate::rpc::Incoming::Notification {
            method,
            params: Some(params),
        }) if method == crate::rpc::methods::SESSION_UPDATE => {
            decode_general_for_test(params.get()).map_err(|e| e.to_string())
        }
        Ok(other) => Err(format!("not a session/update with params: {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn line_path_takes_streamed_lines_and_agrees_with_the_general_path() {
    let chunk = r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a \"b\"\n"}}}"#;
    let tool = r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}}"#;
    let lines = [
        format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{chunk}}}"#),
        format!(r#"{{"params":{chunk},"method":"session/update","jsonrpc":"2.0"}}"#),
        format!(r#"{{"method":"session/update","params":{tool}}}"#),
        format!(
            r#"{{"jsonrpc":null,"id":null,"method":"session\/update","params":{chunk},"_meta":{{"a":[1]}}}}"#
        ),
        // A notification with a `result` or `error` is still a notification.
        format!(
            r#"{{"method":"session/update","result":5,"error":{{"code":1}},"params":{chunk}}}  "#
        ),
    ];
    for line in &lines {
        let fast = decode_session_update_line(line.as_bytes())
            .unwrap_or_else(|| panic!("line path taken: {line}"));
        assert_eq!(Ok(fast), decode_line_general(line), "{line}");
    }
}

#[test]
fn line_path_leaves_every_other_line_to_the_envelope() {
    let chunk = r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#;
    let plan = r#"{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}"#;
    let lines = [
        // A request, a response, another method.
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"session/update","params":{chunk}}}"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{"x":1}}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","method":"session/updates","params":{chunk}}}"#),
        // Framing the envelope rejects: a version, an escaped version (not
        // borrowable there), duplicate keys, a trailing value, no object.
        format!(r#"{{"jsonrpc":"1.0","method":"session/update","params":{chunk}}}"#),
        format!(r#"{{"jsonrpc":"2\u002e0","method":"session/update","params":{chunk}}}"#),
        format!(r#"{{"method":"session/update","params":{chunk},"params":{chunk}}}"#),
        format!(r#"{{"method":"session/update","method":"session/update","params":{chunk}}}"#),
        format!(r#"{{"method":"session/update","result":1,"result":2,"params":{chunk}}}"#),
        format!(r#"{{"method":"session/update","params":{chunk}}} 1"#),
        format!(r#"["2.0",null,"session/update",{chunk}]"#),
        // No params, and params the one pass does not take.
        r#"{"method":"session/update","params":null}"#.to_owned(),
        r#"{"method":"session/update"}"#.to_owned(),
        format!(r#"{{"method":"session/update","params":{plan}}}"#),
    ];
    for line in &lines {
        assert!(
            decode_session_update_line(line.as_bytes()).is_none(),
            "{line}"
        );
    }
}

mod fast_path_properties {
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    use super::super::decode::{decode_fast_for_test, decode_general_for_test};

    /// Strings with the characters that need escapes or look like JSON.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z_]{0,8}",
            "[ -~]{0,12}",
            Just("\n\"\\\u{e9}\u{1F600}".to_owned()),
        ]
    }

    /// Any small JSON value, weighted towards the odd types a field may have.
    fn odd() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            text().prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                proptest::collection::btree_map("[a-z]{1,4}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A field's value: usually well-formed, sometimes absent, null or odd.
    fn field(good: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Option<Value>> {
        prop_oneof![
            6 => good.prop_map(Some),
            2 => Just(None),
            1 => Just(Some(Value::Null)),
            1 => odd().prop_map(Some),
        ]
        .boxed()
    }

    fn block() -> BoxedStrategy<Value> {
        prop_oneof![
            6 => text().prop_map(|t| json!({"type": "text", "text": t})),
            1 => text().prop_map(|t| json!({"type": "text", "text": t, "annotations": {"priority": 0.5}})),
            1 => text().prop_map(|t| json!({"type": "text", "text": t, "annotations": null, "_meta": null})),
            1 => Just(json!({"type": "image", "data": "AA", "mimeType": "image/png"})),
            1 => text().prop_map(Value::from),
            1 => odd(),
        ]
        .boxed()
    }

    fn tool_item() -> BoxedStrategy<Value> {
        prop_oneof![
            6 => block().prop_map(|b| json!({"type": "content", "content": b})),
            2 => (text(), field(text().prop_map(Value::from)), field(text().prop_map(Value::from)))
                .prop_map(|(path, old, new)| {
                    let mut item = json!({"type": "diff", "path": path});
                    if let Some(old) = old { item["oldText"] = old; }
                    if let Some(new) = new { item["newText"] = new; }
                    item
                }),
            1 => field(text().prop_map(Value::from)).prop_map(|id| match id {
                Some(id) => json!({"type": "terminal", "terminalId": id}),
                None => json!({"type": "terminal"}),
            }),
            1 => block(),
            1 => odd(),
        ]
        .boxed()
    }

    fn update() -> impl Strategy<Value = Value> {
        let kind = prop_oneof![
            4 => Just(json!("tool_call_update")),
            2 => Just(json!("tool_call")),
            2 => Just(json!("agent_message_chunk")),
            1 => Just(json!("user_message_chunk")),
            1 => Just(json!("plan")),
            1 => odd(),
        ];
        let tool_status = prop_oneof![
            Just("pending"),
            Just("in_progress"),
            Just("completed"),
            Just("failed"),
            Just("paused")
        ];
        (
            field(kind),
            field(text().prop_map(Value::from)),
            field(text().prop_map(Value::from)),
            field(tool_status.prop_map(Value::from)),
            field(prop_oneof![
                proptest::collection::vec(tool_item(), 0..4).prop_map(Value::from),
                block(),
            ]),
            field(
                proptest::collection::vec(
                    prop_oneof![text().prop_map(|p| json!({"path": p, "line": 3})), odd()],
                    0..3,
                )
                .prop_map(Value::from),
            ),
            field(odd()),
            field(text().prop_map(Value::from)),
        )
            .prop_map(
                |(kind, id, title, status, content, locations, raw, message_id)| {
                    let mut u = Map::new();
                    for (key, value) in [
                        ("sessionUpdate", kind),
                        ("toolCallId", id),
                        ("title", title),
                        ("status", status),
                        ("content", content),
                        ("locations", locations),
                        ("rawInput", raw),
                        ("messageId", message_id),
                    ] {
                        if let Some(value) = value {
                            u.insert(key.to_owned(), value);
                        }
                    }
                    Value::Object(u)
                },
            )
    }

    /// One member of a JSON-RPC envelope, as text: the usual values, odd
    /// ones, and keys the envelope knows or not.
    fn member() -> impl Strategy<Value = (String, String)> {
        let params = (update(), field(text().prop_map(Value::from))).prop_map(|(update, sid)| {
            let mut params = json!({"update": update});
            if let Some(sid) = sid {
                params["sessionId"] = sid;
            }
            params.to_string()
        });
        prop_oneof![
            4 => params.prop_map(|p| ("params".to_owned(), p)),
            3 => prop_oneof![
                6 => Just(r#""session/update""#.to_owned()),
                1 => Just(r#""session\/update""#.to_owned()),
                1 => Just(r#""session/prompt""#.to_owned()),
                1 => Just("null".to_owned()),
            ].prop_map(|m| ("method".to_owned(), m)),
            2 => prop_oneof![
                4 => Just(r#""2.0""#.to_owned()),
                1 => Just(r#""2\u002e0""#.to_owned()),
                1 => Just(r#""1.0""#.to_owned()),
                1 => Just("null".to_owned()),
                1 => Just("2".to_owned()),
            ].prop_map(|v| ("jsonrpc".to_owned(), v)),
            1 => prop_oneof![Just("null"), Just("1"), Just(r#""a""#), Just("1.5")]
                .prop_map(|v| ("id".to_owned(), v.to_owned())),
            1 => (prop_oneof![Just("result"), Just("error"), Just("_meta")], odd())
                .prop_map(|(k, v)| (k.to_owned(), v.to_string())),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whenever the one pass over a whole line decodes, the envelope and
        /// then the params decode the same.
        #[test]
        fn line_path_decodes_like_the_envelope_then_the_params(
            members in proptest::collection::vec(member(), 0..6),
        ) {
            let body: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let line = format!("{{{}}}", body.join(","));
            if let Some(fast) = crate::session::update::decode_session_update_line(line.as_bytes()) {
                prop_assert_eq!(Ok(fast), super::decode_line_general(&line));
            }
        }

        /// Streamed text chunks always take the one pass.
        #[test]
        fn chunk_lines_take_the_line_path(
            sid in text(),
            t in text(),
            message_id in proptest::option::of(text()),
        ) {
            let mut update = json!({"sessionUpdate": "agent_message_chunk",
                                    "content": {"type": "text", "text": t}});
            if let Some(id) = message_id {
                update["messageId"] = json!(id);
            }
            let line = json!({"jsonrpc": "2.0", "method": "session/update",
                              "params": {"sessionId": sid, "update": update}}).to_string();
            let fast = crate::session::update::decode_session_update_line(line.as_bytes());
            prop_assert!(fast.is_some(), "{}", line);
            prop_assert_eq!(fast.ok_or_else(String::new), super::decode_line_general(&line));
        }

        /// Whenever the fast path decodes, the general path decodes the
        /// same; and well-formed tool calls do take the fast path.
        #[test]
        fn fast_path_decodes_like_the_general_path(update in update(), sid in field(text().prop_map(Value::from))) {
            let mut params = json!({"update": update});
            if let Some(sid) = sid {
                params["sessionId"] = sid;
            }
            let line = params.to_string();
            if let Some(fast) = decode_fast_for_test(&line) {
                prop_assert_eq!(Ok(fast), decode_general_for_test(&line).map_err(|e| e.to_string()));
            }
        }

        #[test]
        fn well_formed_tool_calls_take_the_fast_path(
            id in text(),
            texts in proptest::collection::vec(text(), 0..4),
            update_kind in prop_oneof![Just("tool_call"), Just("tool_call_update")],
        ) {
            let content: Vec<Value> = texts
                .iter()
                .map(|t| json!({"type": "content", "content": {"type": "text", "text": t}}))
                .collect();
            let line = json!({"sessionId": "s", "update": {
                "sessionUpdate": update_kind, "toolCallId": id, "status": "in_progress",
                "content": content}})
            .to_string();
            let fast = decode_fast_for_test(&line);
            prop_assert!(fast.is_some(), "{}", line);
            prop_assert_eq!(fast.ok_or(()), decode_general_for_test(&line).map_err(|_| ()));
        }
    }
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
