//! Replay, the change stream, and its serialized form (a public contract).

use super::*;

// ---------------------------------------------------------------------------
// Replay and the change stream.

/// What an editor does with the changes: keeps its own list of entries.
#[derive(Default)]
struct Mirror {
    entries: Vec<Entry>,
}

impl Mirror {
    fn apply(&mut self, change: SessionChange) {
        match change {
            SessionChange::EntryAdded { index, entry } => {
                assert_eq!(index, self.entries.len(), "entries are only appended");
                self.entries.push(entry);
            }
            SessionChange::TextAppended {
                index,
                content,
                message_id,
            } => {
                let (Entry::UserMessage(m) | Entry::AgentMessage(m) | Entry::Thought(m)) =
                    &mut self.entries[index]
                else {
                    panic!("text appended to a non-message entry {index}");
                };
                if m.message_id.is_none() {
                    m.message_id = message_id;
                }
                m.append(content);
            }
            SessionChange::ToolCallChanged { index, tool_call } => {
                assert!(matches!(self.entries[index], Entry::ToolCall(_)));
                self.entries[index] = Entry::ToolCall(tool_call);
            }
            _ => {}
        }
    }
}

/// A session as an agent would stream it: messages, thoughts, tool calls
/// with updates (some before their `tool_call`), plans, odd kinds.
fn recorded_session() -> Vec<String> {
    let mut lines = Vec::new();
    let mut push = |update: Value| {
        lines.push(json!({"sessionId": "s1", "update": update}).to_string());
    };
    push(
        json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "fix the bug"}}),
    );
    for i in 0..50 {
        let id = format!("t{}", i % 7);
        match i % 9 {
            0 | 1 => push(
                json!({"sessionUpdate": "agent_message_chunk", "messageId": format!("m{}", i / 4),
                                 "content": {"type": "text", "text": format!("word{i} ")}}),
            ),
            2 => push(
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
            ),
            3 => push(
                json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": format!("call {i}"),
                             "kind": "edit", "status": "pending",
                             "content": [{"type": "diff", "path": "/a", "oldText": null, "newText": "x"}]}),
            ),
            4 => push(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "in_progress"}),
            ),
            5 => push(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
                             "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}]}),
            ),
            6 => push(
                json!({"sessionUpdate": "plan", "entries": [{"content": "step", "priority": "low", "status": "pending"}]}),
            ),
            7 => push(json!({"sessionUpdate": "brand_new_kind", "n": i})),
            _ => push(json!({"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "image", "data": "AA", "mimeType": "image/png"}})),
        }
    }
    lines
}

fn play(lines: &[String]) -> (SessionState, Vec<SessionChange>) {
    let mut s = state();
    let mut changes = Vec::new();
    for line in lines {
        let raw = RawValue::from_string(line.clone()).unwrap();
        let n = decode_session_notification(&raw).unwrap();
        changes.extend(s.apply(n.update));
    }
    (s, changes)
}

#[test]
fn replay_rebuilds_the_same_state() {
    let lines = recorded_session();
    let (live, live_changes) = play(&lines);
    let (replayed, replayed_changes) = play(&lines);
    assert_eq!(live, replayed);
    assert_eq!(live_changes, replayed_changes);
    // The recording exercised every kind of entry.
    let kinds: std::collections::BTreeSet<_> =
        messages(&live).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["agent", "thought", "tool", "unknown", "user"]
    );
}

#[test]
fn applying_the_changes_rebuilds_the_entries() {
    let (s, changes) = play(&recorded_session());
    let mut mirror = Mirror::default();
    for change in changes {
        mirror.apply(change);
    }
    // Cancellation changes too.
    let mut s = s;
    for change in s.cancel_unfinished_tool_calls() {
        mirror.apply(change);
    }
    assert_eq!(mirror.entries, s.entries());
}

// ---------------------------------------------------------------------------
// The serialized form is a public contract.

#[test]
fn serialized_changes_match_the_documented_form() {
    let mut s = state();
    let added = s.apply(agent_id("Hi", "m1")).remove(0);
    assert_eq!(
        serde_json::to_value(&added).unwrap(),
        json!({"change": "entry_added", "index": 0, "entry": {
            "type": "agent_message", "messageId": "m1",
            "content": [{"type": "text", "text": "Hi"}]}})
    );
    let appended = s.apply(agent(" there")).remove(0);
    assert_eq!(
        serde_json::to_value(&appended).unwrap(),
        json!({"change": "text_appended", "index": 0, "content": {"type": "text", "text": " there"}})
    );
    let appended = s.apply(agent_id("!", "m1")).remove(0);
    assert_eq!(
        serde_json::to_value(&appended).unwrap(),
        json!({"change": "text_appended", "index": 0, "messageId": "m1",
               "content": {"type": "text", "text": "!"}})
    );
    let tool = s
        .apply(SessionUpdate::ToolCall(call("t1", |f| {
            f.title = Some("Write".into());
            f.kind = Some(ToolKind::Edit);
            f.status = Some(ToolStatus::Unknown("queued".into()));
            f.content = Some(vec![
                ToolContent::Diff {
                    path: "/n.rs".into(),
                    old_text: None,
                    new_text: "x".into(),
                },
                ToolContent::Terminal {
                    terminal_id: "term".into(),
                },
            ]);
            f.locations = Some(vec![schema::ToolCallLocation::new("/n.rs").line(3)]);
        })))
        .remove(0);
    assert_eq!(
        serde_json::to_value(&tool).unwrap(),
        json!({"change": "entry_added", "index": 1, "entry": {
            "type": "tool_call", "id": "t1", "title": "Write", "kind": "edit", "status": "queued",
            "content": [{"type": "diff", "path": "/n.rs", "newText": "x"},
                        {"type": "terminal", "terminalId": "term"}],
            "locations": [{"path": "/n.rs", "line": 3}]}})
    );
    let cancelled = s.cancel_unfinished_tool_calls().remove(0);
    let v = serde_json::to_value(&cancelled).unwrap();
    assert_eq!(v["change"], "tool_call_changed");
    assert_eq!(v["index"], 1);
    assert_eq!(v["toolCall"]["status"], "cancelled");

    let cases = [
        (
            SessionChange::PlanReplaced {
                entries: vec![PlanEntry {
                    content: "c".into(),
                    priority: "low".into(),
                    status: "pending".into(),
                }],
            },
            json!({"change": "plan_replaced", "entries": [{"content": "c", "priority": "low", "status": "pending"}]}),
        ),
        (
            SessionChange::ModeChanged {
                current_mode_id: "code".into(),
            },
            json!({"change": "mode_changed", "currentModeId": "code"}),
        ),
        (
            SessionChange::ModesChanged {
                current_mode_id: "ask".into(),
                available_modes: vec![schema::SessionMode::new("ask", "Ask")],
            },
            json!({"change": "modes_changed", "currentModeId": "ask",
                   "availableModes": [{"id": "ask", "name": "Ask"}]}),
        ),
        (
            SessionChange::ConfigOptionsChanged {
                config_options: vec![schema::SessionConfigOption::boolean("f", "Fast", true)],
            },
            json!({"change": "config_options_changed", "configOptions": [
                {"id": "f", "name": "Fast", "type": "boolean", "currentValue": true}]}),
        ),
        (
            SessionChange::CommandsChanged {
                available_commands: vec![schema::AvailableCommand::new("web", "Search")],
            },
            json!({"change": "commands_changed", "availableCommands": [{"name": "web", "description": "Search"}]}),
        ),
        (
            SessionChange::UsageChanged {
                usage: Usage {
                    used: 1,
                    size: 2,
                    cost: None,
                },
            },
            json!({"change": "usage_changed", "usage": {"used": 1, "size": 2}}),
        ),
        (
            SessionChange::InfoChanged {
                title: None,
                updated_at: Some("2025-01-01".into()),
            },
            json!({"change": "info_changed", "updatedAt": "2025-01-01"}),
        ),
        (
            SessionChange::EntryAdded {
                index: 4,
                entry: Entry::Unknown {
                    kind: "notice".into(),
                    raw: json!({"a": 1}),
                },
            },
            json!({"change": "entry_added", "index": 4, "entry": {"type": "unknown", "kind": "notice", "raw": {"a": 1}}}),
        ),
    ];
    for (change, expected) in cases {
        assert_eq!(serde_json::to_value(&change).unwrap(), expected);
    }
}

fn decoded(update: Value) -> SessionUpdate {
    let params = json!({"sessionId": "s", "update": update}).to_string();
    let raw = RawValue::from_string(params).unwrap();
    decode_session_notification(&raw).unwrap().update
}

#[test]
fn notices_are_changes_not_history() {
    let mut s = state();
    let changes = s.apply(decoded(json!({
        "sessionUpdate": "notice", "severity": "warning",
        "title": "Rate limited", "description": "Retrying in 30 s"
    })));
    assert_eq!(
        changes,
        vec![SessionChange::Notice {
            severity: "warning".into(),
            title: "Rate limited".into(),
            description: Some("Retrying in 30 s".into()),
        }]
    );
    assert!(s.entries().is_empty());
    // A notice without a title does not fit the schema: kept as unknown.
    let changes = s.apply(decoded(
        json!({"sessionUpdate": "notice", "severity": "info", "title": ""}),
    ));
    assert!(
        matches!(&changes[0], SessionChange::EntryAdded { entry: Entry::Unknown { kind, .. }, .. } if kind == "notice")
    );
}

#[test]
fn compactions_accumulate_their_summary_and_status() {
    let mut s = state();
    s.apply(decoded(json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"})));
    for piece in ["Kept: ", "the plan."] {
        s.apply(decoded(
            json!({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1",
                               "content": {"type": "text", "text": piece}}),
        ));
    }
    let changes = s.apply(decoded(
        json!({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"}),
    ));
    assert_eq!(
        changes,
        vec![SessionChange::CompactionChanged {
            id: "c1".into(),
            status: "completed".into(),
            summary: vec![Content::text("Kept: the plan.")],
            error: None,
        }]
    );
    let changes = s.apply(decoded(
        json!({"sessionUpdate": "compaction_update", "compactionId": "c2",
                                         "status": "failed", "error": "too big"}),
    ));
    assert!(
        matches!(&changes[0], SessionChange::CompactionChanged { id, error: Some(e), .. } if id == "c2" && e == "too big")
    );
    assert!(
        s.entries().is_empty(),
        "compactions are not transcript entries"
    );
}
