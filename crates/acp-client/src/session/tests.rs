use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::*;
use crate::session::update::decode_session_notification;

fn state() -> SessionState {
    SessionState::new(SessionId::new("s1"))
}

fn chunk(text: &str, message_id: Option<&str>) -> ContentChunk {
    ContentChunk {
        content: Content::text(text),
        message_id: message_id.map(str::to_owned),
    }
}

fn agent(text: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(chunk(text, None))
}

fn agent_id(text: &str, id: &str) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(chunk(text, Some(id)))
}

fn user(text: &str) -> SessionUpdate {
    SessionUpdate::UserMessageChunk(chunk(text, None))
}

fn thought(text: &str) -> SessionUpdate {
    SessionUpdate::AgentThoughtChunk(chunk(text, None))
}

fn call(id: &str, f: impl FnOnce(&mut ToolCallFields)) -> ToolCallFields {
    let mut fields = ToolCallFields::new(id.to_owned());
    f(&mut fields);
    fields
}

fn messages(s: &SessionState) -> Vec<(&'static str, String)> {
    s.entries()
        .iter()
        .map(|e| match e {
            Entry::UserMessage(m) => ("user", m.text()),
            Entry::AgentMessage(m) => ("agent", m.text()),
            Entry::Thought(m) => ("thought", m.text()),
            Entry::ToolCall(tc) => ("tool", tc.id.0.to_string()),
            Entry::SessionMessage(m) => ("session_message", m.message_id.clone()),
            Entry::Unknown { kind, .. } => ("unknown", kind.clone()),
        })
        .collect()
}

fn pairs(items: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    items.iter().map(|(a, b)| (*a, (*b).to_owned())).collect()
}

fn tc(s: &SessionState, id: &str) -> ToolCallState {
    s.tool_call(&ToolCallId::new(id))
        .cloned()
        .expect("tool call known")
}

// ---------------------------------------------------------------------------
// Messages.

#[test]
fn chunks_of_the_same_kind_merge_into_one_text_block() {
    let mut s = state();
    let first = s.apply(agent("Hel"));
    assert_eq!(
        first,
        vec![SessionChange::EntryAdded {
            index: 0,
            entry: Entry::AgentMessage(Message {
                message_id: None,
                content: vec![Content::text("Hel")]
            })
        }]
    );
    let second = s.apply(agent("lo"));
    assert_eq!(
        second,
        vec![SessionChange::TextAppended {
            index: 0,
            content: Content::text("lo"),
            message_id: None
        }]
    );
    let Entry::AgentMessage(m) = &s.entries()[0] else {
        panic!("{:?}", s.entries())
    };
    assert_eq!(m.content, vec![Content::text("Hello")]);
}

#[test]
fn a_different_speaker_starts_a_new_entry() {
    let mut s = state();
    for u in [
        user("q"),
        agent("a1"),
        agent("a2"),
        thought("t"),
        agent("b"),
        user("q2"),
        user("q3"),
    ] {
        s.apply(u);
    }
    assert_eq!(
        messages(&s),
        pairs(&[
            ("user", "q"),
            ("agent", "a1a2"),
            ("thought", "t"),
            ("agent", "b"),
            ("user", "q2q3"),
        ])
    );
}

#[test]
fn message_ids_split_and_join_messages() {
    let mut s = state();
    s.apply(agent_id("a", "m1"));
    s.apply(agent_id("b", "m1"));
    // A different id starts a new message even from the same speaker.
    let changes = s.apply(agent_id("c", "m2"));
    assert!(matches!(
        changes[..],
        [SessionChange::EntryAdded { index: 1, .. }]
    ));
    // No id on one side: same message, and the entry adopts the id.
    s.apply(agent("d"));
    assert_eq!(messages(&s), pairs(&[("agent", "ab"), ("agent", "cd")]));
    let mut s = state();
    s.apply(agent("x"));
    s.apply(agent_id("y", "m9"));
    s.apply(agent_id("z", "m10"));
    assert_eq!(messages(&s), pairs(&[("agent", "xy"), ("agent", "z")]));
    let Entry::AgentMessage(m) = &s.entries()[0] else {
        panic!()
    };
    assert_eq!(m.message_id.as_deref(), Some("m9"));
}

#[test]
fn non_text_chunks_become_their_own_blocks() {
    let mut s = state();
    let image = Content::Known(schema::ContentBlock::Image(schema::ImageContent::new(
        "AAAA",
        "image/png",
    )));
    let odd = Content::Unknown(json!({"type": "hologram"}));
    s.apply(agent("a"));
    s.apply(SessionUpdate::AgentMessageChunk(ContentChunk {
        content: image.clone(),
        message_id: None,
    }));
    s.apply(agent("b"));
    s.apply(agent("c"));
    s.apply(SessionUpdate::AgentMessageChunk(ContentChunk {
        content: odd.clone(),
        message_id: None,
    }));
    let Entry::AgentMessage(m) = &s.entries()[0] else {
        panic!()
    };
    assert_eq!(
        m.content,
        vec![Content::text("a"), image, Content::text("bc"), odd]
    );
}

#[test]
fn annotated_text_is_not_merged_into_plain_text() {
    let mut s = state();
    let annotated = Content::Known(schema::ContentBlock::Text(
        schema::TextContent::new("!").annotations(schema::Annotations::new().priority(1.0)),
    ));
    s.apply(agent("a"));
    s.apply(SessionUpdate::AgentMessageChunk(ContentChunk {
        content: annotated.clone(),
        message_id: None,
    }));
    let Entry::AgentMessage(m) = &s.entries()[0] else {
        panic!()
    };
    assert_eq!(m.content, vec![Content::text("a"), annotated]);
}

#[test]
fn user_prompt_is_always_a_new_entry() {
    let mut s = state();
    s.apply(user("replayed"));
    let changes = s.push_user_prompt(vec![Content::text("new prompt")]);
    assert!(matches!(
        changes[..],
        [SessionChange::EntryAdded { index: 1, .. }]
    ));
    s.push_user_prompt(vec![Content::text("again")]);
    assert_eq!(
        messages(&s),
        pairs(&[
            ("user", "replayed"),
            ("user", "new prompt"),
            ("user", "again")
        ])
    );
}

#[test]
fn a_million_chunks_stay_one_block() {
    let mut s = state();
    let n = 1_000_000;
    for _ in 0..n {
        s.apply(agent("x"));
    }
    assert_eq!(s.entries().len(), 1);
    let Entry::AgentMessage(m) = &s.entries()[0] else {
        panic!()
    };
    assert_eq!(m.content.len(), 1);
    assert_eq!(m.content[0].as_text().map(str::len), Some(n));
}

// ---------------------------------------------------------------------------
// Tool calls.

#[test]
fn tool_call_is_upserted_by_id() {
    let mut s = state();
    s.apply(agent("let me look"));
    let added = s.apply(SessionUpdate::ToolCall(call("t1", |f| {
        f.title = Some("Read a.rs".into());
        f.kind = Some(ToolKind::Read);
        f.status = Some(ToolStatus::Pending);
        f.raw_input = Some(json!({"path": "/a.rs"}));
    })));
    assert!(matches!(
        &added[..],
        [SessionChange::EntryAdded { index: 1, entry: Entry::ToolCall(tc) }] if tc.title == "Read a.rs"
    ));
    assert_eq!(s.tool_call_index(&ToolCallId::new("t1")), Some(1));

    let changed = s.apply(SessionUpdate::ToolCallUpdate(call("t1", |f| {
        f.status = Some(ToolStatus::Completed);
        f.raw_output = Some(json!("fn main() {}"));
    })));
    let expected = ToolCallState {
        id: ToolCallId::new("t1"),
        title: "Read a.rs".into(),
        name: None,
        kind: ToolKind::Read,
        status: ToolStatus::Completed,
        content: vec![],
        locations: vec![],
        raw_input: Some(json!({"path": "/a.rs"})),
        raw_output: Some(json!("fn main() {}")),
        agent_terminal: None,
    };
    assert_eq!(
        changed,
        vec![SessionChange::ToolCallChanged {
            index: 1,
            tool_call: expected.clone()
        }]
    );
    assert_eq!(tc(&s, "t1"), expected);

    // A repeated `tool_call` for a known id updates it in place.
    s.apply(agent("more"));
    let again = s.apply(SessionUpdate::ToolCall(call("t1", |f| {
        f.title = Some("Read a.rs (again)".into())
    })));
    assert!(matches!(
        again[..],
        [SessionChange::ToolCallChanged { index: 1, .. }]
    ));
    assert_eq!(s.entries().len(), 3);
    assert_eq!(tc(&s, "t1").status, ToolStatus::Completed);
}

#[test]
fn a_tool_call_reusing_an_id_of_an_ended_turn_is_a_new_entry() {
    let mut s = state();
    s.push_user_prompt(vec![Content::text("one")]);
    s.apply(SessionUpdate::ToolCall(call("edit", |f| {
        f.title = Some("Edit (turn 1)".into());
        f.status = Some(ToolStatus::Completed);
    })));
    s.push_user_prompt(vec![Content::text("two")]);
    let added = s.apply(SessionUpdate::ToolCall(call("edit", |f| {
        f.title = Some("Edit (turn 2)".into());
        f.status = Some(ToolStatus::Pending);
    })));
    assert!(
        matches!(&added[..], [SessionChange::EntryAdded { index: 3, .. }]),
        "{added:?}"
    );
    // Updates now go to the new call; the first turn's call keeps its state.
    let changed = s.apply(SessionUpdate::ToolCallUpdate(call("edit", |f| {
        f.status = Some(ToolStatus::Failed);
    })));
    assert!(matches!(
        &changed[..],
        [SessionChange::ToolCallChanged { index: 3, .. }]
    ));
    match &s.entries()[1] {
        Entry::ToolCall(tc) => {
            assert_eq!(tc.title, "Edit (turn 1)");
            assert_eq!(tc.status, ToolStatus::Completed);
        }
        other => panic!("{other:?}"),
    }
    // A replayed user message starts a turn too.
    s.apply(user("three"));
    let replayed = s.apply(SessionUpdate::ToolCall(call("edit", |_| {})));
    assert!(matches!(
        &replayed[..],
        [SessionChange::EntryAdded { index: 5, .. }]
    ));
}

#[test]
fn content_and_locations_replace_other_fields_merge() {
    let mut s = state();
    let text = |t: &str| ToolContent::Content {
        content: Content::text(t),
    };
    s.apply(SessionUpdate::ToolCall(call("t", |f| {
        f.title = Some("Edit".into());
        f.kind = Some(ToolKind::Edit);
        f.content = Some(vec![text("one"), text("two")]);
        f.locations = Some(vec![schema::ToolCallLocation::new("/a")]);
    })));
    s.apply(SessionUpdate::ToolCallUpdate(call("t", |f| {
        f.content = Some(vec![text("three")]);
    })));
    let state = tc(&s, "t");
    assert_eq!(state.content, vec![text("three")]);
    assert_eq!(state.locations, vec![schema::ToolCallLocation::new("/a")]);
    assert_eq!(state.title, "Edit");
    assert_eq!(state.kind, ToolKind::Edit);

    s.apply(SessionUpdate::ToolCallUpdate(call("t", |f| {
        f.locations = Some(vec![]);
    })));
    let state = tc(&s, "t");
    assert_eq!(state.locations, vec![]);
    assert_eq!(state.content, vec![text("three")]);
}

#[test]
fn update_for_unknown_id_creates_a_placeholder() {
    let mut s = state();
    let changes = s.apply(SessionUpdate::ToolCallUpdate(call("ghost", |f| {
        f.status = Some(ToolStatus::InProgress)
    })));
    let expected = ToolCallState {
        status: ToolStatus::InProgress,
        ..ToolCallState::placeholder(ToolCallId::new("ghost"))
    };
    assert_eq!(expected.title, PLACEHOLDER_TITLE);
    assert_eq!(expected.kind, ToolKind::Other);
    assert_eq!(
        changes,
        vec![SessionChange::EntryAdded {
            index: 0,
            entry: Entry::ToolCall(expected)
        }]
    );
    // The real `tool_call` arriving later fills it in.
    s.apply(SessionUpdate::ToolCall(call("ghost", |f| {
        f.title = Some("Run tests".into());
        f.kind = Some(ToolKind::Execute);
    })));
    let state = tc(&s, "ghost");
    assert_eq!(state.title, "Run tests");
    assert_eq!(state.status, ToolStatus::InProgress);
    assert_eq!(s.entries().len(), 1);
}

#[test]
fn unknown_tool_status_is_kept_and_counts_as_unfinished() {
    let mut s = state();
    s.apply(SessionUpdate::ToolCall(call("t", |f| {
        f.status = Some(ToolStatus::Unknown("paused".into()))
    })));
    assert_eq!(tc(&s, "t").status, ToolStatus::Unknown("paused".into()));
    let changes = s.cancel_unfinished_tool_calls();
    assert_eq!(changes.len(), 1);
    assert_eq!(tc(&s, "t").status, ToolStatus::Cancelled);
}

#[test]
fn cancel_marks_only_unfinished_calls_in_entry_order() {
    let mut s = state();
    let status =
        |id: &str, st: ToolStatus| SessionUpdate::ToolCall(call(id, |f| f.status = Some(st)));
    s.apply(status("done", ToolStatus::Completed));
    s.apply(status("running", ToolStatus::InProgress));
    s.apply(status("failed", ToolStatus::Failed));
    s.apply(status("waiting", ToolStatus::Pending));
    // A call that finishes before the cancel is not touched.
    s.apply(status("finishes", ToolStatus::InProgress));
    s.apply(SessionUpdate::ToolCallUpdate(call("finishes", |f| {
        f.status = Some(ToolStatus::Completed)
    })));

    let changes = s.cancel_unfinished_tool_calls();
    let touched: Vec<(usize, String, ToolStatus)> = changes
        .into_iter()
        .map(|c| match c {
            SessionChange::ToolCallChanged { index, tool_call } => {
                (index, tool_call.id.0.to_string(), tool_call.status)
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        touched,
        vec![
            (1, "running".to_owned(), ToolStatus::Cancelled),
            (3, "waiting".to_owned(), ToolStatus::Cancelled),
        ]
    );
    assert_eq!(tc(&s, "done").status, ToolStatus::Completed);
    assert_eq!(tc(&s, "failed").status, ToolStatus::Failed);
    // Nothing left to cancel.
    assert!(s.cancel_unfinished_tool_calls().is_empty());
}

#[test]
fn late_updates_after_cancel_still_apply() {
    let mut s = state();
    s.apply(SessionUpdate::ToolCall(call("t", |f| {
        f.status = Some(ToolStatus::InProgress)
    })));
    s.cancel_unfinished_tool_calls();
    // The agent reports the real outcome after the cancel (and the prompt
    // response): the model takes it, and keeps appending chunks.
    s.apply(SessionUpdate::ToolCallUpdate(call("t", |f| {
        f.status = Some(ToolStatus::Completed)
    })));
    s.apply(agent("late words"));
    assert_eq!(tc(&s, "t").status, ToolStatus::Completed);
    assert_eq!(
        messages(&s),
        pairs(&[("tool", "t"), ("agent", "late words")])
    );
    // A call that goes back to running after a cancel can be cancelled again.
    s.apply(SessionUpdate::ToolCallUpdate(call("t", |f| {
        f.status = Some(ToolStatus::InProgress)
    })));
    assert_eq!(s.cancel_unfinished_tool_calls().len(), 1);
}

#[test]
fn chunk_after_a_tool_call_starts_a_new_message() {
    let mut s = state();
    s.apply(agent("before"));
    s.apply(SessionUpdate::ToolCall(call("t", |_| {})));
    s.apply(agent("after"));
    assert_eq!(
        messages(&s),
        pairs(&[("agent", "before"), ("tool", "t"), ("agent", "after")])
    );
}

#[test]
fn merged_tool_call_overlays_request_fields_on_known_state() {
    let mut s = state();
    s.apply(SessionUpdate::ToolCall(call("t", |f| {
        f.title = Some("Edit a.rs".into());
        f.kind = Some(ToolKind::Edit);
        f.content = Some(vec![ToolContent::Diff {
            path: "/a.rs".into(),
            old_text: Some("a".into()),
            new_text: "b".into(),
        }]);
    })));
    let request = call("t", |f| {
        f.title = Some("Allow edit?".into());
        f.raw_input = Some(json!({"file": "/a.rs"}));
    });
    let merged = s.merged_tool_call(&request);
    assert_eq!(merged.title.as_deref(), Some("Allow edit?"));
    assert_eq!(merged.kind, Some(ToolKind::Edit));
    assert_eq!(merged.raw_input, Some(json!({"file": "/a.rs"})));
    assert_eq!(merged.content.map(|c| c.len()), Some(1));
    // The model itself is not changed by a permission request.
    assert_eq!(tc(&s, "t").title, "Edit a.rs");

    let unknown = call("never-seen", |f| f.title = Some("Run".into()));
    assert_eq!(s.merged_tool_call(&unknown), unknown);
}

#[test]
fn ten_thousand_tool_calls_are_found_by_id() {
    let mut s = state();
    for i in 0..10_000 {
        s.apply(agent("."));
        s.apply(SessionUpdate::ToolCall(call(&format!("t{i}"), |f| {
            f.status = Some(ToolStatus::InProgress)
        })));
    }
    let changes = s.apply(SessionUpdate::ToolCallUpdate(call("t1234", |f| {
        f.status = Some(ToolStatus::Completed)
    })));
    assert!(matches!(
        changes[..],
        [SessionChange::ToolCallChanged { index: 2469, .. }]
    ));
    assert_eq!(s.cancel_unfinished_tool_calls().len(), 9_999);
}

// ---------------------------------------------------------------------------
// Plan, modes, options, commands, usage, info, unknown kinds.

#[test]
fn plan_is_replaced_whole() {
    let mut s = state();
    let entry = |c: &str, st: &str| PlanEntry {
        content: c.into(),
        priority: "high".into(),
        status: st.into(),
    };
    s.apply(SessionUpdate::Plan {
        entries: vec![entry("a", "pending"), entry("b", "pending")],
    });
    let changes = s.apply(SessionUpdate::Plan {
        entries: vec![entry("a", "completed")],
    });
    assert_eq!(
        changes,
        vec![SessionChange::PlanReplaced {
            entries: vec![entry("a", "completed")]
        }]
    );
    assert_eq!(s.plan(), &[entry("a", "completed")]);
    // The plan is not an entry of the conversation.
    assert!(s.entries().is_empty());
}

#[test]
fn modes_config_commands_usage_are_kept() {
    let mut s = state();
    let changes = s.set_modes(schema::SessionModeState::new(
        "ask",
        vec![
            schema::SessionMode::new("ask", "Ask"),
            schema::SessionMode::new("code", "Code"),
        ],
    ));
    assert!(
        matches!(&changes[..], [SessionChange::ModesChanged { current_mode_id, available_modes }]
        if current_mode_id == "ask" && available_modes.len() == 2)
    );
    let changes = s.apply(SessionUpdate::CurrentModeUpdate {
        current_mode_id: "code".into(),
    });
    assert_eq!(
        changes,
        vec![SessionChange::ModeChanged {
            current_mode_id: "code".into()
        }]
    );
    assert_eq!(s.current_mode(), Some("code"));
    assert_eq!(s.available_modes().len(), 2);

    let option = schema::SessionConfigOption::boolean("fast", "Fast", true);
    s.set_config_options(vec![option.clone()]);
    assert_eq!(s.config_options(), std::slice::from_ref(&option));
    s.apply(SessionUpdate::ConfigOptionUpdate {
        config_options: vec![],
    });
    assert!(s.config_options().is_empty());

    let command = schema::AvailableCommand::new("web", "Search the web");
    let changes = s.apply(SessionUpdate::AvailableCommandsUpdate {
        available_commands: vec![command.clone()],
    });
    assert_eq!(
        changes,
        vec![SessionChange::CommandsChanged {
            available_commands: vec![command.clone()]
        }]
    );
    assert_eq!(s.available_commands(), &[command]);

    let usage = Usage {
        used: 5,
        size: 10,
        cost: None,
    };
    s.apply(SessionUpdate::UsageUpdate(usage.clone()));
    assert_eq!(s.usage(), Some(&usage));
    assert!(s.entries().is_empty());
}

#[test]
fn session_info_absent_keeps_null_clears() {
    let mut s = state();
    let info = |title: Option<Option<&str>>, at: Option<Option<&str>>| {
        SessionUpdate::SessionInfoUpdate(SessionInfo {
            title: title.map(|t| t.map(str::to_owned)),
            updated_at: at.map(|t| t.map(str::to_owned)),
        })
    };
    s.apply(info(Some(Some("Title")), Some(Some("2025-01-01"))));
    let changes = s.apply(info(None, Some(Some("2025-01-02"))));
    assert_eq!(
        changes,
        vec![SessionChange::InfoChanged {
            title: Some("Title".into()),
            updated_at: Some("2025-01-02".into())
        }]
    );
    s.apply(info(Some(None), None));
    assert_eq!(s.title(), None);
    assert_eq!(s.updated_at(), Some("2025-01-02"));
    assert!(s.apply(info(None, None)).is_empty());
}

#[test]
fn unknown_update_kinds_are_kept_as_entries() {
    let mut s = state();
    s.apply(agent("a"));
    let raw = json!({"sessionUpdate": "notice", "message": "heads up"});
    let changes = s.apply(SessionUpdate::Unknown {
        kind: "notice".into(),
        raw: raw.clone(),
    });
    let entry = Entry::Unknown {
        kind: "notice".into(),
        raw,
    };
    assert_eq!(
        changes,
        vec![SessionChange::EntryAdded {
            index: 1,
            entry: entry.clone()
        }]
    );
    s.apply(agent("b"));
    assert_eq!(s.entries()[1], entry);
    assert_eq!(
        messages(&s),
        pairs(&[("agent", "a"), ("unknown", "notice"), ("agent", "b")])
    );
}

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

// ---------------------------------------------------------------------------
// November 2026.

#[test]
fn an_echoed_prompt_with_a_message_id_is_the_same_message() {
    let mut s = state();
    s.push_user_prompt(vec![Content::text("fix the bug")]);
    // The agent echoes the prompt in two chunks carrying its id.
    assert!(s
        .apply(SessionUpdate::UserMessageChunk(chunk(
            "fix the ",
            Some("u1")
        )))
        .is_empty());
    assert!(s
        .apply(SessionUpdate::UserMessageChunk(chunk("bug", Some("u1"))))
        .is_empty());
    s.apply(agent("done"));
    assert_eq!(
        messages(&s),
        pairs(&[("user", "fix the bug"), ("agent", "done")])
    );
    let Entry::UserMessage(m) = &s.entries()[0] else {
        panic!()
    };
    assert_eq!(m.message_id.as_deref(), Some("u1"));
    // A replayed user message that differs is still shown.
    s.push_user_prompt(vec![Content::text("again")]);
    s.apply(SessionUpdate::UserMessageChunk(chunk(
        "something else",
        Some("u2"),
    )));
    assert_eq!(messages(&s).len(), 4);
}

#[test]
fn an_agent_run_terminal_accumulates_its_output_in_the_tool_call() {
    let mut s = state();
    let meta = |output: Option<&str>, exit: Option<i64>| TerminalMeta {
        terminal_id: "t1".into(),
        output: output.map(str::to_owned),
        exit: exit.map(|c| TerminalExit {
            exit_code: Some(c),
            signal: None,
        }),
        ..TerminalMeta::default()
    };
    s.apply(SessionUpdate::ToolCall(call("c1", |f| {
        f.content = Some(vec![ToolContent::Terminal {
            terminal_id: "t1".into(),
        }]);
        f.terminal_meta = Some(meta(None, None));
    })));
    s.apply(SessionUpdate::ToolCallUpdate(call("c1", |f| {
        f.terminal_meta = Some(meta(Some("a\n"), None))
    })));
    let changes = s.apply(SessionUpdate::ToolCallUpdate(call("c1", |f| {
        f.terminal_meta = Some(meta(Some("b\n"), Some(0)))
    })));
    let SessionChange::ToolCallChanged { tool_call, .. } = &changes[0] else {
        panic!()
    };
    let t = tool_call.agent_terminal.as_ref().unwrap();
    assert_eq!(t.output, "a\nb\n");
    assert_eq!(t.exit.as_ref().unwrap().exit_code, Some(0));
    // A flood keeps the newest output only, cut at a character boundary.
    let big = "é".repeat(AGENT_TERMINAL_TAIL);
    s.apply(SessionUpdate::ToolCallUpdate(call("c1", |f| {
        f.terminal_meta = Some(meta(Some(&big), None))
    })));
    let t = tc(&s, "c1").agent_terminal.unwrap();
    assert!(t.truncated);
    assert!(t.output.len() <= AGENT_TERMINAL_TAIL);
    assert!(t.output.ends_with('é'));
}

#[test]
fn plans_by_id_replace_in_place_and_unknown_removals_are_ignored() {
    let mut s = state();
    let doc = |id: &str, text: &str| {
        SessionUpdate::PlanUpdate(PlanDocument {
            plan_id: id.into(),
            body: crate::session::update::PlanBody::Markdown {
                content: text.into(),
                path: None,
            },
        })
    };
    s.apply(doc("a", "one"));
    s.apply(doc("b", "two"));
    s.apply(doc("a", "one, revised"));
    assert_eq!(s.plans().len(), 2);
    assert!(s
        .apply(SessionUpdate::PlanRemoved {
            plan_id: "nope".into()
        })
        .is_empty());
    assert_eq!(
        s.apply(SessionUpdate::PlanRemoved {
            plan_id: "a".into()
        }),
        vec![SessionChange::PlanRemoved {
            plan_id: "a".into()
        }]
    );
    assert_eq!(s.plans().len(), 1);
}

#[test]
fn a_subagent_is_linked_to_the_tool_call_that_started_it() {
    let mut s = state();
    s.apply(SessionUpdate::ToolCall(call("task", |f| {
        f.content = Some(vec![ToolContent::Session {
            session_id: "child".into(),
        }]);
    })));
    let patch = |f: fn(&mut SubagentPatch)| {
        let mut p = SubagentPatch {
            session_id: "child".into(),
            ..SubagentPatch::default()
        };
        f(&mut p);
        SessionUpdate::SubagentUpdate(p)
    };
    s.apply(patch(|p| {
        p.title = Some(Some("Explore".into()));
        p.can_cancel = Some(true);
    }));
    let changes = s.apply(patch(|p| {
        p.state = Some(Some(SubagentState {
            state: "idle".into(),
            stop_reason: None,
        }))
    }));
    let SessionChange::SubagentChanged { subagent } = &changes[0] else {
        panic!()
    };
    assert_eq!(subagent.title.as_deref(), Some("Explore"));
    assert_eq!(subagent.tool_call_id.as_deref(), Some("task"));
    assert!(subagent.can_cancel);
    assert_eq!(subagent.state.as_ref().unwrap().state, "idle");
}

#[test]
fn session_messages_merge_upserts_and_chunks() {
    let mut s = state();
    s.apply(SessionUpdate::SessionMessageChunk {
        message_id: "m".into(),
        content: Content::text("look "),
    });
    s.apply(SessionUpdate::SessionMessageChunk {
        message_id: "m".into(),
        content: Content::text("here"),
    });
    let changes = s.apply(SessionUpdate::SessionMessage(SessionMessagePatch {
        message_id: "m".into(),
        recipient_session_id: Some(Some("child".into())),
        ..SessionMessagePatch::default()
    }));
    let SessionChange::SessionMessageChanged { index, message } = &changes[0] else {
        panic!()
    };
    assert_eq!(*index, 0);
    assert_eq!(message.content[0].as_text(), Some("look here"));
    assert_eq!(message.recipient_session_id.as_deref(), Some("child"));
    assert_eq!(s.entries().len(), 1);
}
