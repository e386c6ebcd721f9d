use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::session::update::ToolContent;

fn decode(update: Value, disk: Option<&str>) -> V2Notification {
    let params = json!({"sessionId": "s1", "update": update}).to_string();
    let disk = disk.map(str::to_owned);
    decode_v2_notification(&params, &move |_: &SessionId, _: &Path| disk.clone()).unwrap()
}

fn updates(n: V2Notification) -> Vec<SessionUpdate> {
    match n {
        V2Notification::Updates { updates, .. } => updates,
        other => panic!("not updates: {other:?}"),
    }
}

fn tool_content(update: Value, disk: Option<&str>) -> Vec<ToolContent> {
    match updates(decode(update, disk)).pop() {
        Some(SessionUpdate::ToolCallUpdate(f)) => f.content.unwrap(),
        other => panic!("not a tool call: {other:?}"),
    }
}

#[test]
fn terminal_updates_become_the_terminal_state_v1_agents_report() {
    let u = updates(decode(
        json!({"sessionUpdate": "terminal_update", "terminalId": "term-1", "command": "make test",
               "cwd": "/w", "output": {"data": "aGVsbG8K"}}),
        None,
    ));
    assert_eq!(
        u,
        vec![SessionUpdate::TerminalUpdate(TerminalMeta {
            terminal_id: "term-1".into(),
            output: Some("hello\n".into()),
            replace_output: true,
            command: Some("make test".into()),
            exit: None,
        })]
    );
    let u = updates(decode(
        json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "term-1", "data": "d29ybGQ="}),
        None,
    ));
    assert_eq!(
        u,
        vec![SessionUpdate::TerminalUpdate(TerminalMeta {
            terminal_id: "term-1".into(),
            output: Some("world".into()),
            ..TerminalMeta::default()
        })]
    );
    let u = updates(decode(
        json!({"sessionUpdate": "terminal_update", "terminalId": "term-1",
               "exitStatus": {"exitCode": 2, "signal": null}}),
        None,
    ));
    let SessionUpdate::TerminalUpdate(meta) = &u[0] else {
        panic!("{u:?}")
    };
    assert_eq!(meta.exit.as_ref().unwrap().exit_code, Some(2));
    assert_eq!(meta.output, None, "no output field: unchanged");
}

#[test]
fn hostile_terminal_updates_drop_what_is_wrong() {
    // No terminal id: an error (the update is ignored with a warning).
    let params = json!({"sessionId": "s1", "update": {"sessionUpdate": "terminal_update"}});
    assert!(decode_v2_notification(&params.to_string(), &|_, _| None).is_err());
    // Output that is not base64 is dropped, the rest kept.
    let u = updates(decode(
        json!({"sessionUpdate": "terminal_update", "terminalId": "t", "command": "ls", "output": {"data": "%%%"}}),
        None,
    ));
    let SessionUpdate::TerminalUpdate(meta) = &u[0] else {
        panic!("{u:?}")
    };
    assert_eq!((meta.output.as_deref(), meta.replace_output), (None, false));
    assert_eq!(meta.command.as_deref(), Some("ls"));
    // Bytes that are not UTF-8 show as U+FFFD.
    let u = updates(decode(
        json!({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "/w=="}),
        None,
    ));
    let SessionUpdate::TerminalUpdate(meta) = &u[0] else {
        panic!("{u:?}")
    };
    assert_eq!(meta.output.as_deref(), Some("\u{fffd}"));
    assert_eq!(base64_decode("YQ"), Some(b"a".to_vec()));
    assert_eq!(base64_decode("Y"), None);
}

#[test]
fn message_upserts_carry_the_whole_content_and_null_clears_it() {
    let u = updates(decode(
        json!({"sessionUpdate": "agent_message", "messageId": "m1", "content": [{"type": "text", "text": "whole"}]}),
        None,
    ));
    assert_eq!(
        u,
        vec![SessionUpdate::MessageUpsert(MessageUpsert {
            kind: MessageKind::Agent,
            message_id: "m1".into(),
            content: Some(vec![Content::text("whole")]),
        })]
    );
    let u = updates(decode(
        json!({"sessionUpdate": "agent_thought", "messageId": "m2", "content": null}),
        None,
    ));
    assert_eq!(
        u,
        vec![SessionUpdate::MessageUpsert(MessageUpsert {
            kind: MessageKind::Thought,
            message_id: "m2".into(),
            content: Some(Vec::new()),
        })]
    );
    // Content omitted or of the wrong type leaves the message unchanged;
    // no id, nothing to upsert.
    for update in [
        json!({"sessionUpdate": "agent_message", "messageId": "m1"}),
        json!({"sessionUpdate": "agent_message", "messageId": "m1", "content": "text"}),
        json!({"sessionUpdate": "agent_message", "content": [{"type": "text", "text": "x"}]}),
    ] {
        assert!(updates(decode(update, None)).is_empty());
    }
}

#[test]
fn a_v2_diff_becomes_v1_diff_content_with_both_texts() {
    let diff = json!({"type": "diff", "changes": [{"operation": "modify", "path": "/w/a.txt"}],
        "patch": {"format": "git_patch", "text": "diff --git /w/a.txt /w/a.txt\n--- /w/a.txt\n+++ /w/a.txt\n@@ -1 +1 @@\n-old\n+new\n"}});
    let content = tool_content(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "content": [diff]}),
        Some("new\n"),
    );
    assert_eq!(
        content,
        vec![ToolContent::Diff {
            path: "/w/a.txt".into(),
            old_text: Some("old\n".into()),
            new_text: "new\n".into(),
        }]
    );
}

#[test]
fn a_v2_diff_whose_texts_cannot_be_recovered_shows_its_patch() {
    let text_of = |c: &[ToolContent]| match c {
        [ToolContent::Content { content }] => content.as_text().unwrap().to_owned(),
        other => panic!("not one text: {other:?}"),
    };
    let diff = |patch: &str| {
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "content": [
            {"type": "diff", "changes": [{"operation": "modify", "path": "/w/a.txt"}],
             "patch": {"format": "git_patch", "text": patch}}]})
    };
    // The file is outside the workspace or unreadable: the reader gives nothing.
    let c = tool_content(diff("@@ -1 +1 @@\n-old\n+new\n"), None);
    assert_eq!(text_of(&c), "```diff\n@@ -1 +1 @@\n-old\n+new\n```");
    // A malformed patch.
    let c = tool_content(diff("@@ -1,9 +1,9 @@\n-old\n"), Some("old\n"));
    assert!(text_of(&c).contains("-old"));
    // A huge one is cut, not parsed.
    let huge = format!("@@ -1 +1 @@\n-a\n+{}\n", "x".repeat(patch::MAX_PATCH_BYTES));
    let c = tool_content(diff(&huge), Some("a\n"));
    assert!(text_of(&c).contains("more bytes of patch not shown"));
    // No patch at all: the changed paths.
    let c = tool_content(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "content": [
            {"type": "diff", "changes": [{"operation": "move", "oldPath": "/w/a", "path": "/w/b"}]}]}),
        None,
    );
    assert_eq!(text_of(&c), "move /w/b");
}

#[test]
fn the_v1_items_a_v2_tool_call_becomes_are_the_literals_they_replace() {
    assert_eq!(cleared("kind"), json!("other"));
    assert_eq!(cleared("status"), json!("pending"));
    assert_eq!(cleared("title"), json!(""));
    assert_eq!(cleared("content"), json!([]));
    assert_eq!(cleared("locations"), json!([]));
    assert_eq!(
        text_item("a patch".into()),
        json!({"type": "content", "content": {"type": "text", "text": "a patch"}})
    );
    let mut tool_call = json!({"toolCallId": "t", "kind": null, "status": null, "title": null})
        .as_object()
        .unwrap()
        .clone();
    clear_nulls(&mut tool_call, &|_: &Path| None);
    assert_eq!(
        Value::Object(tool_call),
        json!({"toolCallId": "t", "kind": "other", "status": "pending", "title": ""})
    );
}
