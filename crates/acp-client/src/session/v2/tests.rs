use super::*;
use crate::session::update::{SessionUpdate, TerminalExit};

fn state() -> SessionState {
    SessionState::new("s1".into())
}

fn terminal(id: &str, f: impl FnOnce(&mut TerminalMeta)) -> SessionUpdate {
    let mut meta = TerminalMeta {
        terminal_id: id.into(),
        ..TerminalMeta::default()
    };
    f(&mut meta);
    SessionUpdate::TerminalUpdate(meta)
}

fn showing(call: &str, term: &str) -> SessionUpdate {
    let mut f = ToolCallFields::new(call.to_owned());
    f.content = Some(vec![ToolContent::Terminal {
        terminal_id: term.into(),
    }]);
    SessionUpdate::ToolCallUpdate(f)
}

fn agent_terminal(s: &SessionState, call: &str) -> AgentTerminal {
    s.tool_call(&call.to_owned().into())
        .unwrap()
        .agent_terminal
        .clone()
        .unwrap()
}

#[test]
fn a_v2_terminal_reaches_the_tool_call_showing_it() {
    let mut s = state();
    s.apply(showing("c1", "t1"));
    let changes = s.apply(terminal("t1", |m| {
        m.command = Some("make".into());
        m.output = Some("a\n".into());
        m.replace_output = true;
    }));
    assert!(
        matches!(&changes[..], [SessionChange::ToolCallChanged { tool_call, .. }] if tool_call.agent_terminal.is_some())
    );
    s.apply(terminal("t1", |m| m.output = Some("b\n".into())));
    let t = agent_terminal(&s, "c1");
    assert_eq!(
        (t.output.as_str(), t.command.as_deref()),
        ("a\nb\n", Some("make"))
    );
    // A snapshot replaces the output; the exit status ends it.
    s.apply(terminal("t1", |m| {
        m.output = Some("all\n".into());
        m.replace_output = true;
        m.exit = Some(TerminalExit {
            exit_code: Some(0),
            signal: None,
        });
    }));
    let t = agent_terminal(&s, "c1");
    assert_eq!(t.output, "all\n");
    assert_eq!(t.exit.unwrap().exit_code, Some(0));
}

#[test]
fn a_terminal_reported_before_its_tool_call_is_kept_until_it_shows() {
    let mut s = state();
    assert!(s
        .apply(terminal("t1", |m| m.output = Some("early\n".into())))
        .is_empty());
    s.apply(terminal("t1", |m| m.output = Some("more\n".into())));
    s.apply(showing("c1", "t1"));
    assert_eq!(agent_terminal(&s, "c1").output, "early\nmore\n");
    // A hostile agent inventing terminal ids: at most so many wait.
    for i in 0..(MAX_PENDING_TERMINALS + 10) {
        s.apply(terminal(&format!("x{i}"), |m| m.output = Some("x".into())));
    }
    assert_eq!(s.terminals.pending, MAX_PENDING_TERMINALS);
}

fn upsert(kind: MessageKind, id: &str, text: Option<&str>) -> SessionUpdate {
    SessionUpdate::MessageUpsert(MessageUpsert {
        kind,
        message_id: id.into(),
        content: text.map(|t| vec![Content::text(t)]),
    })
}

#[test]
fn a_message_upsert_replaces_the_message_with_that_id() {
    let mut s = state();
    s.apply(upsert(MessageKind::Agent, "m1", Some("draft")));
    s.apply(SessionUpdate::AgentMessageChunk(
        crate::session::update::ContentChunk {
            content: Content::text(" more"),
            message_id: Some("m1".into()),
        },
    ));
    s.apply(upsert(MessageKind::Thought, "m2", Some("thinking")));
    let changes = s.apply(upsert(MessageKind::Agent, "m1", Some("final")));
    assert!(
        matches!(
            &changes[..],
            [SessionChange::MessageReplaced { index: 0, .. }]
        ),
        "{changes:?}"
    );
    assert_eq!(s.entries().len(), 2, "replaced, not appended");
    match &s.entries()[0] {
        Entry::AgentMessage(m) => assert_eq!(m.text(), "final"),
        other => panic!("{other:?}"),
    }
    // Unchanged content, no content, or an empty new message: nothing.
    assert!(s
        .apply(upsert(MessageKind::Agent, "m1", Some("final")))
        .is_empty());
    assert!(s.apply(upsert(MessageKind::Agent, "m1", None)).is_empty());
    assert!(s
        .apply(SessionUpdate::MessageUpsert(MessageUpsert {
            kind: MessageKind::Agent,
            message_id: "new".into(),
            content: Some(Vec::new()),
        }))
        .is_empty());
    // The same id of another kind is another message.
    s.apply(upsert(MessageKind::User, "m1", Some("user text")));
    assert_eq!(s.entries().len(), 3);
}
