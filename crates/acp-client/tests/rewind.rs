//! Rewind through the public API, against the fake agent as a process:
//! three turns write through `fs/write_text_file`, create, edit and delete
//! files on disk; rewinding to before turn 2 gives back exactly the state
//! after turn 1, with the checkpoints kept per turn and bounded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::{Path, PathBuf};

use acp_client::edits::checkpoint::Checkpoints;
use acp_client::edits::hunks::FileSummary;
use acp_client::{ClientEvent, SessionParams};
use serde_json::{json, Value};
use support::*;
use tokio::sync::mpsc::UnboundedReceiver;

async fn turn(s: &Setup, prompt: &str) {
    tokio::time::timeout(WAIT * 3, s.conn.prompt(&s.sid, vec![text(prompt)]))
        .await
        .expect("turn timed out")
        .unwrap();
}

async fn review_changed(
    rx: &mut UnboundedReceiver<ClientEvent>,
    path: &Path,
    mut pred: impl FnMut(&FileSummary) -> bool,
) {
    wait_event(
        rx,
        |e| matches!(e, ClientEvent::ReviewChanged { file, .. } if file.path == path && pred(file)),
    )
    .await;
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok()
}

/// Turn 1 writes a.txt through `fs/*`; turn 2 writes it again and creates
/// new.txt on disk; turn 3 edits b.txt on disk and deletes h.txt.
fn three_turns() -> Value {
    json!([
        { "steps": [{ "type": "call", "method": "fs/write_text_file",
            "params": { "path": "{{cwd}}/a.txt", "content": "one\nTWO\nthree\n" },
            "expect": { "ok": true } }] },
        { "steps": [
            { "type": "call", "method": "fs/write_text_file",
              "params": { "path": "{{cwd}}/a.txt", "content": "one\nTWO\nthree\nfour\n" },
              "expect": { "ok": true } },
            { "type": "writeDisk", "path": "new.txt", "content": "hello\n" }
        ] },
        { "steps": [
            { "type": "writeDisk", "path": "b.txt", "content": "alpha\nBETA\n" },
            { "type": "toolCall", "toolCallId": "rm", "title": "rm h.txt", "kind": "delete",
              "status": "pending", "rawInput": { "path": "{{cwd}}/h.txt" } },
            { "type": "requestPermission", "toolCall": { "toolCallId": "rm" }, "report": false,
              "onAllow": [{ "type": "runTerminal", "command": "rm", "args": ["{{cwd}}/h.txt"] }] }
        ] }
    ])
}

async fn run_three_turns() -> Setup {
    let mut s = start(
        &[
            ("a.txt", "one\ntwo\nthree\n"),
            ("b.txt", "alpha\nbeta\n"),
            ("h.txt", "precious\n"),
        ],
        three_turns(),
    )
    .await;
    let (a, new, b, h) = (
        s.root.join("a.txt"),
        s.root.join("new.txt"),
        s.root.join("b.txt"),
        s.root.join("h.txt"),
    );
    turn(&s, "first: edit a\nmore lines").await;
    review_changed(&mut s.rx, &a, |f| f.hunks > 0).await;
    turn(&s, "second").await;
    review_changed(&mut s.rx, &new, |f| f.hunks > 0).await;
    turn(&s, "third").await;
    review_changed(&mut s.rx, &b, |f| f.hunks > 0).await;
    review_changed(&mut s.rx, &h, |f| f.hunks > 0).await;
    assert_eq!(read(&h), None);
    s
}

#[tokio::test]
async fn each_turn_keeps_the_files_it_touched_with_its_prompt() {
    let s = run_three_turns().await;
    let turns = s.conn.review(&s.sid).turns();
    let labels: Vec<&str> = turns.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(labels, ["first: edit a", "second", "third"]);
    let names = |i: usize| -> Vec<PathBuf> { turns[i].files.clone() };
    assert_eq!(names(0), [s.root.join("a.txt")]);
    assert_eq!(names(1), [s.root.join("a.txt"), s.root.join("new.txt")]);
    assert_eq!(names(2), [s.root.join("b.txt"), s.root.join("h.txt")]);
}

#[tokio::test]
async fn rewinding_to_before_turn_two_gives_exactly_the_state_after_turn_one() {
    let mut s = run_three_turns().await;
    let root = s.root.clone();
    let review = s.conn.review(&s.sid);

    // The preview changes nothing.
    let plan = review.rewind_plan(2.into()).await.unwrap();
    let planned: Vec<(PathBuf, Option<&str>)> = plan
        .files
        .iter()
        .map(|f| (f.path.clone(), f.then.as_deref()))
        .collect();
    assert_eq!(
        planned,
        [
            (root.join("a.txt"), Some("one\nTWO\nthree\n")),
            (root.join("b.txt"), Some("alpha\nbeta\n")),
            (root.join("h.txt"), Some("precious\n")),
            (root.join("new.txt"), None),
        ]
    );
    assert_eq!(read(&root.join("new.txt")).as_deref(), Some("hello\n"));

    let done = review.rewind(2.into()).await.unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!(done.removed, [root.join("new.txt")]);
    assert_eq!(
        read(&root.join("a.txt")).as_deref(),
        Some("one\nTWO\nthree\n")
    );
    assert_eq!(read(&root.join("b.txt")).as_deref(), Some("alpha\nbeta\n"));
    assert_eq!(read(&root.join("h.txt")).as_deref(), Some("precious\n"));
    assert_eq!(read(&root.join("new.txt")), None);

    // Turn 1's edit stays under review, the rewound ones leave it.
    let files: Vec<PathBuf> = review.files().into_iter().map(|f| f.path.into()).collect();
    assert_eq!(files, [root.join("a.txt")]);
    let a = review.file(&root.join("a.txt")).unwrap();
    assert_eq!(a.baseline.as_deref(), Some("one\ntwo\nthree\n"));
    assert_eq!(a.current.as_deref(), Some("one\nTWO\nthree\n"));

    // Turn 2 and later are gone; the next turn is 2 again.
    let turns: Vec<u32> = review.turns().iter().map(|t| t.turn.get()).collect();
    assert_eq!(turns, [1]);
    // The rewind's own writes are not taken for agent edits by the watcher.
    s.conn
        .review(&s.sid)
        .record_user_edit(&root.join("a.txt"), Some("one\nTWO\nthree\n"), true)
        .unwrap();
    while let Ok(e) = s.rx.try_recv() {
        if let ClientEvent::ReviewChanged { file, .. } = e {
            if file.path == root.join("b.txt") {
                assert_eq!(file.hunks, 0, "b.txt came back under review");
            }
        }
    }
}

#[tokio::test]
async fn a_user_save_between_turns_survives_a_rewind_to_the_later_turn() {
    let mut s = start(
        &[("a.txt", "one\ntwo\n")],
        json!([
            // Through `fs/*`: no watcher of turn 1 is left to race the save.
            { "steps": [{ "type": "call", "method": "fs/write_text_file",
                "params": { "path": "{{cwd}}/a.txt", "content": "one\ntwo\nagent1\n" },
                "expect": { "ok": true } }] },
            { "steps": [{ "type": "writeDisk", "path": "a.txt", "content": "user\none\ntwo\nagent1\nagent2\n" }] }
        ]),
    )
    .await;
    let a = s.root.join("a.txt");
    turn(&s, "1").await;
    review_changed(&mut s.rx, &a, |f| f.hunks > 0).await;
    // Saved as editors save (a new file renamed over the old): a write in
    // place could be seen half done by the watcher of turn 1.
    let tmp = s.root.join(".a.txt.swp");
    std::fs::write(&tmp, "user\none\ntwo\nagent1\n").unwrap();
    std::fs::rename(&tmp, &a).unwrap();
    s.conn
        .review(&s.sid)
        .record_user_edit(&a, Some("user\none\ntwo\nagent1\n"), true)
        .unwrap();
    turn(&s, "2").await;
    review_changed(&mut s.rx, &a, |f| f.added == 2).await;
    s.conn.review(&s.sid).rewind(2.into()).await.unwrap();
    assert_eq!(read(&a).as_deref(), Some("user\none\ntwo\nagent1\n"));
}

#[tokio::test]
async fn checkpoints_saved_and_adopted_by_another_session_can_still_rewind() {
    let s = run_three_turns().await;
    let saved = s.conn.review(&s.sid).checkpoints().to_json();
    // The chat goes on in a new session (after a restart, or a rewind that
    // could not fork): it adopts the saved checkpoints.
    let other = s
        .conn
        .new_session(SessionParams::new(&s.root))
        .await
        .unwrap()
        .session_id;
    let mut store = Checkpoints::from_json(&saved).unwrap();
    // A hostile save naming a file outside the workspace loses that file.
    let outside = Checkpoints::from_json(
        &saved.replace(&*s.root.join("b.txt").to_string_lossy(), "/etc/passwd"),
    )
    .unwrap();
    s.conn
        .review(&other)
        .adopt_checkpoints(outside.clone())
        .unwrap();
    let files: Vec<PathBuf> = s.conn.review(&other).turns()[2].files.clone();
    assert_eq!(files, [s.root.join("h.txt")]);
    store.retain_files(|_| true);
    s.conn.review(&other).adopt_checkpoints(store).unwrap();
    let done = s.conn.review(&other).rewind(3.into()).await.unwrap();
    assert_eq!(done.restored, [s.root.join("b.txt"), s.root.join("h.txt")]);
    assert_eq!(read(&s.root.join("h.txt")).as_deref(), Some("precious\n"));
    assert_eq!(
        read(&s.root.join("a.txt")).as_deref(),
        Some("one\nTWO\nthree\nfour\n")
    );
}

#[tokio::test]
async fn a_turn_that_does_not_exist_is_refused_and_changes_nothing() {
    let s = run_three_turns().await;
    let e = s.conn.review(&s.sid).rewind(9.into()).await.unwrap_err();
    assert!(e.to_string().contains("from 1 to 3"), "{e}");
    assert_eq!(read(&s.root.join("new.txt")).as_deref(), Some("hello\n"));
    assert_eq!(s.conn.review(&s.sid).turns().len(), 3);
}

#[tokio::test]
async fn a_line_the_user_saved_after_the_agents_last_change_survives_a_rewind() {
    let mut s = start(
        &[("a.txt", "one\ntwo\n")],
        json!([
            { "steps": [{ "type": "call", "method": "fs/write_text_file",
                "params": { "path": "{{cwd}}/a.txt", "content": "one\ntwo\nagent1\n" },
                "expect": { "ok": true } }] },
            { "steps": [{ "type": "call", "method": "fs/write_text_file",
                "params": { "path": "{{cwd}}/a.txt", "content": "one\ntwo\nagent1\nagent2\n" },
                "expect": { "ok": true } }] }
        ]),
    )
    .await;
    let a = s.root.join("a.txt");
    turn(&s, "1").await;
    turn(&s, "2").await;
    review_changed(&mut s.rx, &a, |f| f.added == 2).await;
    // The user saves a line of their own after the agent's last write.
    let saved = "user\none\ntwo\nagent1\nagent2\n";
    let tmp = s.root.join(".a.txt.swp");
    std::fs::write(&tmp, saved).unwrap();
    std::fs::rename(&tmp, &a).unwrap();
    s.conn
        .review(&s.sid)
        .record_user_edit(&a, Some(saved), true)
        .unwrap();
    // The preview shows the merge, not the checkpoint taken whole.
    let plan = s.conn.review(&s.sid).rewind_plan(2.into()).await.unwrap();
    assert_eq!(
        plan.files[0].then.as_deref(),
        Some("user\none\ntwo\nagent1\n")
    );
    let done = s.conn.review(&s.sid).rewind(2.into()).await.unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!(read(&a).as_deref(), Some("user\none\ntwo\nagent1\n"));
    // Again to before turn 1: still the user's line, not the agent's.
    s.conn.review(&s.sid).rewind(1.into()).await.unwrap();
    assert_eq!(read(&a).as_deref(), Some("user\none\ntwo\n"));
}

#[tokio::test]
async fn a_line_the_user_saved_between_two_rewound_turns_survives() {
    let mut s = start(
        &[("a.txt", "one\ntwo\n")],
        json!([
            { "steps": [{ "type": "call", "method": "fs/write_text_file",
                "params": { "path": "{{cwd}}/a.txt", "content": "one\ntwo\nagent1\n" },
                "expect": { "ok": true } }] },
            // The agent read the file again: its write holds the user's line.
            { "steps": [{ "type": "call", "method": "fs/write_text_file",
                "params": { "path": "{{cwd}}/a.txt", "content": "user\none\ntwo\nagent1\nagent2\n" },
                "expect": { "ok": true } }] }
        ]),
    )
    .await;
    let a = s.root.join("a.txt");
    turn(&s, "1").await;
    review_changed(&mut s.rx, &a, |f| f.added == 1).await;
    // Between the two turns the user saves a line of their own.
    let saved = "user\none\ntwo\nagent1\n";
    let tmp = s.root.join(".a.txt.swp");
    std::fs::write(&tmp, saved).unwrap();
    std::fs::rename(&tmp, &a).unwrap();
    s.conn
        .review(&s.sid)
        .record_user_edit(&a, Some(saved), true)
        .unwrap();
    turn(&s, "2").await;
    review_changed(&mut s.rx, &a, |f| f.added >= 1).await;
    // Both turns undone, the saved line kept (it went back with turn 2).
    let plan = s.conn.review(&s.sid).rewind_plan(1.into()).await.unwrap();
    assert_eq!(plan.files[0].then.as_deref(), Some("user\none\ntwo\n"));
    let done = s.conn.review(&s.sid).rewind(1.into()).await.unwrap();
    assert!(done.failed.is_empty(), "{:?}", done.failed);
    assert_eq!(read(&a).as_deref(), Some("user\none\ntwo\n"));
}
