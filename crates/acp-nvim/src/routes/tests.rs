//! Tests of the routing of events to chats (routes.rs).
#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::path::Path;

use acp_client::agents::process::ExitInfo;
use acp_client::edits::host::FileEdit;
use acp_client::policy::permission::{OptionKind, PermissionOption};
use acp_client::session::update::ToolCallFields;
use acp_client::session::SessionChange;
use serde_json::{json, Value as Json};

use super::*;

fn sid(s: &str) -> SessionId {
    SessionId::new(s)
}

fn chat(s: &str) -> ChatId {
    ChatId(s.into())
}

fn mode(session: &str, mode: &str) -> ClientEvent {
    ClientEvent::Session {
        session_id: sid(session),
        change: SessionChange::ModeChanged {
            current_mode_id: mode.into(),
        },
    }
}

/// A permission request with an allow and a reject option (shared with
/// the host's tests).
pub(crate) fn permission(session: &str, id: u64) -> PermissionRequest {
    PermissionRequest {
        id: PermissionRequestId(id),
        session_id: sid(session),
        tool_call: ToolCallFields::new("tool-1"),
        options: vec![
            PermissionOption {
                option_id: "yes".into(),
                name: "Allow".into(),
                kind: OptionKind::AllowOnce,
            },
            PermissionOption {
                option_id: "no".into(),
                name: "Reject".into(),
                kind: OptionKind::RejectOnce,
            },
        ],
    }
}

fn started(c: &str) -> Event {
    Event::Warning {
        chat_id: Some(chat(c)),
        message: "started".into(),
    }
}

#[test]
fn session_events_are_routed_to_their_chat() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.register(sid("s1"), chat("a"), None, &mut out);
    r.register(sid("s2"), chat("b"), None, &mut out);
    r.translate(mode("s2", "plan"), &mut out);
    r.translate(mode("s1", "code"), &mut out);
    assert_eq!(
        out,
        vec![
            Event::Session {
                chat_id: chat("b"),
                change: SessionChange::ModeChanged {
                    current_mode_id: "plan".into(),
                },
            },
            Event::Session {
                chat_id: chat("a"),
                change: SessionChange::ModeChanged {
                    current_mode_id: "code".into(),
                },
            },
        ]
    );
}

#[test]
fn events_before_registration_follow_session_started_in_order() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.translate(mode("s1", "one"), &mut out);
    r.translate(mode("other", "x"), &mut out);
    r.translate(mode("s1", "two"), &mut out);
    assert!(out.is_empty());
    r.register(sid("s1"), chat("a"), Some(started("a")), &mut out);
    let kinds: Vec<Json> = out.iter().map(Event::json_view).collect();
    assert_eq!(kinds[0]["message"], "started");
    assert_eq!(kinds[1]["change"]["current_mode_id"], "one");
    assert_eq!(kinds[2]["change"]["current_mode_id"], "two");
    assert_eq!(out.len(), 3);
    // The other session's event is still held for it.
    out.clear();
    r.register(sid("other"), chat("b"), None, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].chat_id(), Some(&chat("b")));
}

#[test]
fn late_events_of_a_closed_session_are_dropped() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.register(sid("s1"), chat("a"), None, &mut out);
    r.unregister(&sid("s1"), &chat("a"));
    r.translate(mode("s1", "late"), &mut out);
    assert!(out.is_empty());
    assert!(r.held.is_empty());
}

#[test]
fn a_close_that_ends_after_the_session_was_loaded_again_keeps_the_new_route() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.register(sid("s1"), chat("a"), None, &mut out);
    // Chat b loads s1 while chat a's close is still in flight.
    r.register(sid("s1"), chat("b"), None, &mut out);
    r.unregister(&sid("s1"), &chat("a"));
    r.translate(mode("s1", "replayed"), &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].chat_id(), Some(&chat("b")));
}

#[test]
fn held_events_are_bounded() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    for i in 0..HELD_MAX + 10 {
        r.translate(mode("never", &i.to_string()), &mut out);
    }
    assert_eq!(r.held.len(), HELD_MAX);
    r.register(sid("never"), chat("a"), None, &mut out);
    assert_eq!(out.len(), HELD_MAX);
    // The oldest ones were dropped, the newest kept.
    assert_eq!(out[0].json_view()["change"]["current_mode_id"], "10");
}

#[test]
fn agent_exit_reaches_every_chat_of_the_agent() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.register(sid("s1"), chat("a"), None, &mut out);
    r.register(sid("s2"), chat("b"), None, &mut out);
    r.translate(
        ClientEvent::AgentExited {
            status: ExitInfo {
                code: Some(3),
                signal: None,
            },
            stderr_tail: "boom\n".into(),
        },
        &mut out,
    );
    assert_eq!(
        out,
        vec![
            Event::AgentExited {
                chat_id: chat("a"),
                status: "exit code 3".into(),
                stderr_tail: "boom\n".into()
            },
            Event::AgentExited {
                chat_id: chat("b"),
                status: "exit code 3".into(),
                stderr_tail: "boom\n".into()
            },
        ]
    );
}

#[test]
fn permission_requests_and_cancellations_use_backend_ids() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.register(sid("s1"), chat("a"), None, &mut out);
    r.prompt_ids.insert(PermissionRequestId(1), PromptId(41));
    r.route(
        Item::Permission {
            request: permission("s1", 1),
            prompt: PromptId(41),
        },
        &mut out,
    );
    r.translate(
        ClientEvent::PermissionCancelled {
            id: PermissionRequestId(1),
            session_id: sid("s1"),
        },
        &mut out,
    );
    let j: Vec<Json> = out.iter().map(Event::json_view).collect();
    assert_eq!(j[0]["type"], "permission_request");
    assert_eq!(j[0]["request_id"], 41);
    assert_eq!(j[0]["chat_id"], "a");
    assert_eq!(j[0]["tool_call"]["tool_call_id"], "tool-1");
    assert_eq!(
        j[0]["options"][0],
        json!({"option_id": "yes", "name": "Allow", "kind": "allow_once"})
    );
    assert_eq!(
        j[1],
        json!({"type": "permission_cancelled", "chat_id": "a", "request_id": 41})
    );
    assert!(r.prompt_ids.is_empty());
}

#[test]
fn auto_answers_name_the_chosen_option() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.register(sid("s1"), chat("a"), None, &mut out);
    r.translate(
        ClientEvent::PermissionAutoAnswered {
            request: permission("s1", 2),
            decision: PermissionDecision::Selected {
                option_id: "yes".into(),
            },
        },
        &mut out,
    );
    let j = out[0].json_view();
    assert_eq!(j["type"], "permission_auto");
    assert_eq!(j["option"]["option_id"], "yes");
    assert_eq!(j["tool_call"]["tool_call_id"], "tool-1");
}

#[test]
fn terminal_events_gain_the_chat() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.register(sid("s1"), chat("a"), None, &mut out);
    r.translate(
        ClientEvent::Terminal(TerminalEvent::Output {
            session_id: sid("s1"),
            terminal_id: "term-1".into(),
            data: "hi\n".into(),
            truncated: false,
        }),
        &mut out,
    );
    assert_eq!(
        out[0].json_view(),
        json!({"type": "terminal", "chat_id": "a", "kind": "output", "session_id": "s1", "terminal_id": "term-1", "data": "hi\n", "truncated": false})
    );
}

#[test]
fn file_edits_say_where_the_write_went() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.register(sid("s1"), chat("a"), None, &mut out);
    let edit = |path: &str, applied| {
        ClientEvent::FileEdited(FileEdit {
            session_id: sid("s1"),
            path: acp_client::path::CanonicalPath::resolve(Path::new(path)).unwrap(),
            old_content: None,
            new_content: "x".into(),
            applied,
        })
    };
    let merged = WriteOutcome::MergedUnsaved {
        seen: None,
        buffer: "x\nmine\n".into(),
    };
    r.translate(edit("/p/a.rs", merged), &mut out);
    r.translate(edit("/p/b.rs", WriteOutcome::Disk), &mut out);
    r.translate(
        edit("/p/c.rs", WriteOutcome::Waiting { seen: None }),
        &mut out,
    );
    let flags: Vec<(bool, bool, bool)> = out
        .iter()
        .map(|e| match e {
            Event::FileEdited {
                buffer_updated,
                kept_unsaved,
                waiting,
                ..
            } => (*buffer_updated, *kept_unsaved, *waiting),
            other => panic!("not a file edit: {other:?}"),
        })
        .collect();
    assert_eq!(
        flags,
        [
            (false, true, false),
            (false, false, false),
            (false, true, true)
        ]
    );
}

#[test]
fn only_the_first_protocol_warnings_are_shown() {
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    for i in 0..10 {
        r.translate(
            ClientEvent::ProtocolWarning {
                message: format!("bad line {i}"),
            },
            &mut out,
        );
    }
    assert_eq!(out.len(), WARNINGS_SHOWN);
    let last = out.last().unwrap().json_view();
    assert!(last["message"].as_str().unwrap().contains(":Acp log"));
    assert!(last["message"]
        .as_str()
        .unwrap()
        .starts_with("agent demo: "));
}

#[test]
fn review_changes_reach_the_chat_with_a_snake_case_summary_and_the_review() {
    use acp_client::edits::hunks::{EditTracker, FileStatus, FileSummary};
    let mut tracker = EditTracker::new();
    tracker.record_write(
        &acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap(),
        None,
        "a\nb\r\n",
    );
    let mut r = Routes::new("demo");
    let mut out = Vec::new();
    r.register(sid("s1"), chat("a"), None, &mut out);
    assert_eq!(r.session_of(&chat("a")), Some(sid("s1")));
    assert_eq!(r.session_of(&chat("b")), None);
    r.translate(
        ClientEvent::ReviewChanged {
            session_id: sid("s1"),
            file: FileSummary {
                path: acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap(),
                status: FileStatus::Created,
                hunks: 1,
                added: 2,
                removed: 0,
                first_line: Some(0),
            },
            review: tracker
                .review(&acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap()),
        },
        &mut out,
    );
    let id = tracker
        .review(&acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap())
        .unwrap()
        .hunks[0]
        .id
        .get();
    let view = out[0].json_view();
    let revision = view["revision"].as_u64().unwrap();
    assert_eq!(
        view,
        json!({"type": "review_changed", "chat_id": "a", "path": "/p/a.rs",
               "summary": {"path": "/p/a.rs", "status": "created", "hunks": 1, "added": 2, "removed": 0, "first_line": 0},
               "review": {"path": "/p/a.rs", "status": "created", "current": "a\nb\r\n",
                          "hunks": [{"id": id, "old_start": 0, "old_lines": [], "new_start": 0, "new_lines": ["a", "b"]}]},
               "revision": revision})
    );
    // The next one is newer: Lua drops an older review that comes late.
    r.translate(
        ClientEvent::ReviewChanged {
            session_id: sid("s1"),
            file: tracker
                .summary(&acp_client::path::CanonicalPath::resolve(Path::new("/p/a.rs")).unwrap())
                .unwrap(),
            review: None,
        },
        &mut out,
    );
    assert!(out[1].json_view()["revision"].as_u64().unwrap() > revision);
}
