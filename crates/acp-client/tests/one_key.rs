//! One record per file (issue 24): an agent's path and an editor's path
//! that spell one file differently (through a symlinked directory, through
//! `dir/..`) key one review and one buffer-sync record, because both go
//! through the one resolution ([`CanonicalPath::resolve`]) before they key
//! anything.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use acp_client::edits::buffer_sync::{BufferText, OnDisk};
use acp_client::path::CanonicalPath;
use acp_client::{ClientEvent, StopReason};
use serde_json::json;
use support::*;

#[tokio::test]
async fn an_agent_write_through_a_symlinked_dir_and_an_editor_report_through_dotdot_are_one_file() {
    let mut s = start(
        &[],
        json!([{ "steps": [{ "type": "call", "method": "fs/write_text_file",
            "params": { "path": "{{cwd}}/link/a.txt", "content": "one\nTWO\nthree\n" },
            "expect": { "ok": true } }] }]),
    )
    .await;
    std::fs::create_dir_all(s.root.join("real/sub")).unwrap();
    std::fs::write(s.root.join("real/a.txt"), "one\ntwo\nthree\n").unwrap();
    std::os::unix::fs::symlink(s.root.join("real"), s.root.join("link")).unwrap();
    let file = s.root.join("real/a.txt");
    // The editor's name for the buffer: the same file, another spelling.
    let editors = s.root.join("real/sub/../a.txt");

    let stop = tokio::time::timeout(WAIT * 3, s.conn.prompt(&s.sid, vec![text("go")]))
        .await
        .expect("turn timed out")
        .unwrap();
    assert_eq!(stop, StopReason::EndTurn);
    let edited = wait_event(&mut s.rx, |e| matches!(e, ClientEvent::FileEdited(_))).await;
    let ClientEvent::FileEdited(edit) = edited else {
        unreachable!()
    };
    // The agent's spelling was resolved once, at the workspace gate.
    assert_eq!(edit.path, file);

    // The sync: what the agent wrote (its newest view, the base of its next
    // write) is found by the editor's spelling, and the editor's report
    // lands in that same record.
    let key = CanonicalPath::resolve(&editors).unwrap();
    assert_eq!(key, edit.path);
    assert_eq!(
        s._host.sync.files().seen(&s.sid, &key).as_deref(),
        Some("one\nTWO\nthree\n")
    );
    let mine = "one\nTWO\nthree\nmine\n";
    s._host
        .sync
        .user_reported(
            &key,
            BufferText {
                text: mine.into(),
                version: 4,
            },
            OnDisk::No,
        )
        .await;
    let state = s._host.sync.state(&edit.path).expect("one record");
    assert_eq!(
        state.buffer.map(|b| (b.text.to_string(), b.version)),
        Some((mine.to_owned(), 4))
    );

    // Review: the editor's report of its buffer (dot-dot spelling) is the
    // user's edit of the file the agent wrote (symlink spelling), not a
    // second file.
    let summary = s
        .conn
        .review(&s.sid)
        .record_user_edit(&editors, Some(mine), false)
        .unwrap()
        .expect("the agent's file is under review");
    assert_eq!(summary.path, file);
    let files = s.conn.review(&s.sid).files();
    assert_eq!(files.len(), 1, "{files:?}");
    let review = s.conn.review(&s.sid).file(&editors).unwrap();
    assert_eq!(review.baseline.as_deref(), Some("one\ntwo\nthree\nmine\n"));
    assert_eq!(review.hunks.len(), 1);
    assert_eq!(review.hunks[0].new_lines, vec!["TWO\n"]);
    // Every spelling finds it.
    assert!(s.conn.review(&s.sid).contains(&s.root.join("link/a.txt")));
    assert!(s.conn.review(&s.sid).contains(&file));
}
