//! The `session/update` examples of the seed documents (/work/shared/seeds),
//! decoded as a client receiving them would.

use super::*;

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
