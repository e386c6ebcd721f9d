use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::*;
use crate::session::update::decode_session_notification;

mod changes;
mod state;

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
