//! Property tests: the line codec, the lenient decoders and the session
//! model under generated input. Each property runs `PROPTEST_CASES` cases
//! (default 256); the whole file takes a few seconds. The libFuzzer targets
//! in `fuzz/` check the same properties (through `properties/model.rs`)
//! for as long as one lets them run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "properties/model.rs"]
mod model;

use std::collections::HashSet;

use acp_client::schema;
use acp_client::session::update::{
    decode_session_notification, Content, ContentChunk, PlanEntry, SessionInfo,
    SessionNotification, SessionUpdate, ToolCallFields, ToolContent, ToolKind, ToolStatus, Usage,
};
use acp_client::session::{Entry, SessionState};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Bytes that matter to the codec, much more often than chance would give.
fn codec_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => Just(b'\n'),
        2 => Just(b'\r'),
        4 => Just(b'a'),
        1 => any::<u8>(),
    ]
}

/// Field names and values the decoders branch on.
const WORDS: &[&str] = &[
    "sessionUpdate",
    "sessionId",
    "update",
    "content",
    "type",
    "text",
    "toolCallId",
    "status",
    "kind",
    "title",
    "entries",
    "agent_message_chunk",
    "user_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "diff",
    "terminal",
    "terminalId",
    "path",
    "oldText",
    "newText",
    "messageId",
    "usage_update",
    "used",
    "size",
    "session_info_update",
    "current_mode_update",
    "currentModeId",
    "modeId",
    "available_commands_update",
    "availableCommands",
    "config_option_update",
    "configOptions",
    "locations",
    "rawInput",
    "rawOutput",
    "image",
    "data",
    "mimeType",
    "resource_link",
    "uri",
    "name",
    "completed",
    "in_progress",
    "execute",
    "role",
    "message",
    "agent_message_text_update",
    "commands",
    "priority",
    "_meta",
    "",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(WORDS).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// Any JSON value, with object keys and strings mostly from [`WORDS`].
fn json_value() -> impl Strategy<Value = Value> {
    json_tree(true)
}

/// Like [`json_value`]; without floats when `floats` is false (serde_json
/// reads floats back to the nearest double, not always the same one).
fn json_tree(floats: bool) -> impl Strategy<Value = Value> {
    let float = if floats { 1 } else { 0 };
    let leaf = prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::from),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        float => (-1e9f64..1e9).prop_map(Value::from),
        2 => word().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((word(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn known_kind() -> impl Strategy<Value = ToolKind> {
    proptest::sample::select(vec![
        "read",
        "edit",
        "delete",
        "move",
        "search",
        "execute",
        "think",
        "fetch",
        "switch_mode",
        "other",
    ])
    .prop_map(ToolKind::from_wire)
}

fn known_status() -> impl Strategy<Value = ToolStatus> {
    proptest::sample::select(vec![
        "pending",
        "in_progress",
        "completed",
        "failed",
        "cancelled",
    ])
    .prop_map(ToolStatus::from_wire)
}

fn text_content() -> impl Strategy<Value = Content> {
    any::<String>().prop_map(Content::text)
}

fn chunk() -> impl Strategy<Value = ContentChunk> {
    (text_content(), proptest::option::of("[a-z0-9-]{1,8}")).prop_map(|(content, message_id)| {
        ContentChunk {
            content,
            message_id,
        }
    })
}

fn tool_content() -> impl Strategy<Value = ToolContent> {
    prop_oneof![
        text_content().prop_map(|content| ToolContent::Content { content }),
        (
            "/[a-z]{1,8}/[a-z]{1,8}",
            proptest::option::of(any::<String>()),
            any::<String>()
        )
            .prop_map(|(path, old_text, new_text)| ToolContent::Diff {
                path: path.into(),
                old_text,
                new_text,
            }),
        "term-[0-9]{1,3}".prop_map(|terminal_id| ToolContent::Terminal { terminal_id }),
    ]
}

/// A JSON value that is not `null` (a `null` raw input reads as absent).
fn raw_json() -> impl Strategy<Value = Option<Value>> {
    proptest::option::of(json_tree(false).prop_filter("null is absent", |v| !v.is_null()))
}

/// Tool call fields with ids from a small pool, so calls and updates meet.
fn tool_fields() -> impl Strategy<Value = ToolCallFields> {
    (
        proptest::sample::select(vec!["t1", "t2", "t3", "t4"]),
        proptest::option::of(any::<String>()),
        proptest::option::of(known_kind()),
        proptest::option::of(known_status()),
        proptest::option::of(proptest::collection::vec(tool_content(), 0..3)),
        raw_json(),
        raw_json(),
    )
        .prop_map(
            |(id, title, kind, status, content, raw_input, raw_output)| {
                let mut f = ToolCallFields::new(id);
                f.title = title;
                f.kind = kind;
                f.status = status;
                f.content = content;
                f.raw_input = raw_input;
                f.raw_output = raw_output;
                f
            },
        )
}

/// Updates of every kind the client knows, in their documented shapes.
fn known_update() -> impl Strategy<Value = SessionUpdate> {
    let plan_entry = (
        any::<String>(),
        proptest::sample::select(vec!["high", "medium", "low"]),
        proptest::sample::select(vec!["pending", "in_progress", "completed"]),
    )
        .prop_map(|(content, priority, status)| PlanEntry {
            content,
            priority: priority.into(),
            status: status.into(),
        });
    prop_oneof![
        chunk().prop_map(SessionUpdate::UserMessageChunk),
        chunk().prop_map(SessionUpdate::AgentMessageChunk),
        chunk().prop_map(SessionUpdate::AgentThoughtChunk),
        tool_fields().prop_map(SessionUpdate::ToolCall),
        tool_fields().prop_map(SessionUpdate::ToolCallUpdate),
        proptest::collection::vec(plan_entry, 0..4)
            .prop_map(|entries| SessionUpdate::Plan { entries }),
        "[a-z]{1,10}"
            .prop_map(|current_mode_id| SessionUpdate::CurrentModeUpdate { current_mode_id }),
        (
            proptest::option::of(proptest::option::of(any::<String>())),
            proptest::option::of(proptest::option::of("2025-0[1-9]-1[0-9]T00:00:00Z")),
        )
            .prop_map(|(title, updated_at)| SessionUpdate::SessionInfoUpdate(
                SessionInfo { title, updated_at }
            )),
        (any::<u64>(), any::<u64>()).prop_map(|(used, size)| SessionUpdate::UsageUpdate(Usage {
            used,
            size,
            cost: None
        })),
    ]
}

/// One step of a session: an update (known or raw JSON) or a cancel.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // Test data; size does not matter.
enum Step {
    Known(SessionUpdate),
    Raw(Value),
    Cancel,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => known_update().prop_map(Step::Known),
        2 => json_value().prop_map(Step::Raw),
        1 => Just(Step::Cancel),
    ]
}

proptest! {
    // Failures print the shrunk input; no regression files in the tree.
    #![proptest_config(ProptestConfig {
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Any byte stream, split into any reads, with any limit, gives the lines
    /// of a plain split on `\n` (one `\r` before it dropped), then EOF or a
    /// sticky `LineTooLong` exactly where a line is over the limit; the codec
    /// never holds more than the limit plus one read chunk.
    #[test]
    fn codec_lines_equal_the_reference_split(
        data in proptest::collection::vec(codec_byte(), 0..512),
        limit in 0usize..48,
        sizes in proptest::collection::vec(1usize..64, 1..5),
        interrupt in any::<bool>(),
    ) {
        model::check_codec(&data, limit, sizes, interrupt);
    }

    /// Lines longer than one read chunk (64 KiB): the limit is still honoured
    /// to the byte, whatever the read sizes.
    /// Arbitrary bytes, line by line, never panic a decoder.
    #[test]
    fn decoders_survive_any_bytes(data in proptest::collection::vec(any::<u8>(), 0..512)) {
        model::feed_decoders(&data);
    }

    /// Arbitrary JSON, as a message, as `session/update` params, as an
    /// update and as a tool call, never panics a decoder; only envelopes
    /// without a `sessionId` fail.
    #[test]
    fn decoders_survive_any_json(v in json_value(), sid in word()) {
        let message = json!({"jsonrpc": "2.0", "method": "session/update",
                             "params": {"sessionId": sid, "update": v}});
        let line = serde_json::to_vec(&message).unwrap();
        model::feed_decoders(&line);
        model::feed_decoders(&serde_json::to_vec(&v).unwrap());
        let params = serde_json::value::to_raw_value(&message["params"]).unwrap();
        let decoded = decode_session_notification(&params);
        prop_assert!(decoded.is_ok(), "a string sessionId always decodes: {:?}", decoded.err());
        let _ = acp_client::session::update::decode_tool_call_fields(&v);
    }

    /// Every update the client can represent in a documented shape survives
    /// encode then decode unchanged.
    #[test]
    fn known_updates_round_trip(update in known_update(), sid in "[a-z0-9-]{1,12}") {
        let original = SessionNotification { session_id: sid.into(), update };
        let raw = serde_json::value::to_raw_value(&original).unwrap();
        let decoded = decode_session_notification(&raw).unwrap();
        prop_assert_eq!(decoded, original);
    }

    /// Any sequence of updates and cancels keeps the model consistent: the
    /// tool call index points at the latest entry of each id, and no id has
    /// two entries in one turn.
    #[test]
    fn session_model_stays_consistent(steps in proptest::collection::vec(step(), 0..32)) {
        let mut state = SessionState::new("s".into());
        let mut ids = HashSet::new();
        for step in steps {
            let update = match step {
                Step::Cancel => {
                    state.cancel_unfinished_tool_calls();
                    model::check_session(&state, &ids);
                    continue;
                }
                Step::Known(u) => u,
                Step::Raw(v) => {
                    let params = json!({"sessionId": "s", "update": v});
                    let raw = serde_json::value::to_raw_value(&params).unwrap();
                    decode_session_notification(&raw).unwrap().update
                }
            };
            if let SessionUpdate::ToolCall(f) | SessionUpdate::ToolCallUpdate(f) = &update {
                ids.insert(f.tool_call_id.clone());
            }
            state.apply(update);
            model::check_session(&state, &ids);
        }
        // After a cancel nothing is left running.
        state.cancel_unfinished_tool_calls();
        for entry in state.entries() {
            if let Entry::ToolCall(tc) = entry {
                prop_assert!(tc.status.is_finished(), "{} still {}", tc.id, tc.status.as_str());
            }
        }
    }
}

proptest! {
    // Each case moves ~100 KB through the checks: a smaller budget.
    #![proptest_config(ProptestConfig {
        cases: ProptestConfig::default().cases / 8,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn codec_honours_large_limits(
        line_len in 60_000usize..140_000,
        limit in 64_000usize..132_000,
        crlf in any::<bool>(),
        size in 1_000usize..200_000,
    ) {
        let mut data = vec![b'x'; line_len];
        data.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        data.extend_from_slice(b"{}\n");
        model::check_codec(&data, limit, vec![size], false);
    }
}

/// The seed corpus of the fuzzers runs through the same checks, so a seed
/// that breaks an invariant fails `cargo test`, not only a fuzz campaign.
#[test]
fn fuzz_seeds_pass_the_session_and_decoder_checks() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/messages");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(model::feed_decoders(&data) > 0);
        model::feed_session(&data);
        files += 1;
    }
    assert!(files > 50, "only {files} seeds in {}", dir.display());
}

/// `schema` is re-exported for callers building content; make sure the
/// content the generators build is the schema's text block.
#[test]
fn generated_text_content_is_a_schema_text_block() {
    assert!(matches!(
        Content::text("x"),
        Content::Known(schema::ContentBlock::Text(_))
    ));
}
