//! Plan, modes, options, commands, usage, info, unknown kinds, and the
//! update kinds agents added in November 2026.

use super::*;

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
