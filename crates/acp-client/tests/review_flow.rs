//! Edit review wired into the connection, against the fake agent as a
//! process: agent edits through `fs/write_text_file`, through diffs of tool
//! calls, and on disk with no diff at all end up under review; accept and
//! reject act on disk. Tests wait for `ReviewChanged` events, never sleep.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;

use acp_client::edits::hunks::{FileStatus, FileSummary, RejectOutcome};
use acp_client::session::update::SessionId;
use acp_client::{ClientEvent, Error, StopReason};
use serde_json::{json, Value};
use support::*;
use tokio::sync::mpsc::UnboundedReceiver;

async fn turn(s: &Setup, prompt: &str) -> StopReason {
    turn_in(s, &s.sid, prompt).await
}

/// One turn of session `sid` of the setup's agent.
async fn turn_in(s: &Setup, sid: &SessionId, prompt: &str) -> StopReason {
    tokio::time::timeout(WAIT * 3, s.conn.prompt(sid, vec![text(prompt)]))
        .await
        .expect("turn timed out")
        .unwrap()
}

/// Waits for a `ReviewChanged` of `path` whose summary satisfies `pred`.
async fn review_changed(
    rx: &mut UnboundedReceiver<ClientEvent>,
    path: &Path,
    mut pred: impl FnMut(&FileSummary) -> bool,
) -> FileSummary {
    match wait_event(
        rx,
        |e| matches!(e, ClientEvent::ReviewChanged { file, .. } if file.path == path && pred(file)),
    )
    .await
    {
        ClientEvent::ReviewChanged { file, .. } => file,
        _ => unreachable!(),
    }
}

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn an_fs_write_shows_hunks() {
    let mut s = start(
        &[("a.txt", "one\ntwo\nthree\n")],
        json!([{ "steps": [{ "type": "call", "method": "fs/write_text_file",
            "params": { "path": "{{cwd}}/a.txt", "content": "one\nTWO\nthree\n" },
            "expect": { "ok": true } }] }]),
    )
    .await;
    let path = s.root.join("a.txt");
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    let summary = review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    assert_eq!((summary.status, summary.hunks), (FileStatus::Modified, 1));
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(review.baseline.as_deref(), Some("one\ntwo\nthree\n"));
    assert_eq!(review.hunks[0].old_lines, vec!["two\n"]);
    assert_eq!(review.hunks[0].new_lines, vec!["TWO\n"]);
    assert_eq!(s.conn.review(&s.sid).files(), vec![summary]);
}

#[tokio::test]
async fn a_disk_edit_with_diff_content_is_tracked_after_completion() {
    let mut s = start(
        &[("b.txt", "alpha\nbeta\n")],
        json!([{ "steps": [{ "type": "writeDisk", "path": "b.txt", "content": "alpha\nBETA\ngamma\n" }] }]),
    )
    .await;
    let path = s.root.join("b.txt");
    turn(&s, "go").await;
    review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(review.baseline.as_deref(), Some("alpha\nbeta\n"));
    assert_eq!(review.current.as_deref(), Some("alpha\nBETA\ngamma\n"));
    assert_eq!(review.hunks.len(), 1);
    assert_eq!(review.hunks[0].new_lines, vec!["BETA\n", "gamma\n"]);
}

#[tokio::test]
async fn a_disk_edit_without_diff_is_caught_by_the_watcher_during_the_turn() {
    // The agent names the file, asks permission, then writes it with no diff
    // and waits: only the watcher can see the edit before the turn ends.
    let mut s = start(
        &[("c.txt", "keep\nold\n")],
        json!([{ "steps": [
            { "type": "toolCall", "toolCallId": "e1", "title": "Edit c.txt", "kind": "edit",
              "status": "pending", "locations": [{ "path": "{{cwd}}/c.txt" }] },
            { "type": "requestPermission", "toolCall": { "toolCallId": "e1" }, "report": false,
              "onAllow": [{ "type": "writeDisk", "path": "c.txt", "content": "keep\nnew\n",
                            "toolCallId": "e1", "diff": false }] },
            { "type": "waitForCancel" }
        ] }]),
    )
    .await;
    let path = s.root.join("c.txt");
    let conn = s.conn.clone();
    let sid = s.sid.clone();
    let prompt = tokio::spawn(async move { conn.prompt(&sid, vec![text("go")]).await });
    let summary = review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    assert_eq!((summary.added, summary.removed), (1, 1));
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(review.baseline.as_deref(), Some("keep\nold\n"));
    // The turn is still running: the watcher saw it, not the end-of-turn check.
    assert!(!prompt.is_finished());
    s.conn.cancel(&s.sid).unwrap();
    let stop = tokio::time::timeout(WAIT, prompt).await.unwrap().unwrap();
    assert_eq!(stop.unwrap(), StopReason::Cancelled);
}

/// The agent truncates t.txt, announces the edit and writes it 50 ms later
/// (the client's read in between sees it empty), then edits it again. A
/// "before" of "" would make a reject empty the file; the first edit cannot
/// be reviewed, the second is, against the first's text. `keeps_time`: the
/// truncated file shows its old time, as Linux can right after a
/// truncation, so it looks empty since before the turn (the file was
/// written an hour before it).
async fn torn_then_edited(keeps_time: bool) {
    let mut s = start(
        &[("t.txt", "orig\n")],
        json!([{ "steps": [
            { "type": "writeDisk", "path": "t.txt", "content": "one\n", "diff": false,
              "toolCallId": "t1", "tornMs": 50, "tornKeepsTime": keeps_time },
            { "type": "sleep", "ms": 400 },
            { "type": "writeDisk", "path": "t.txt", "content": "one\ntwo\n", "diff": false,
              "toolCallId": "t2" }
        ] }]),
    )
    .await;
    let path = s.root.join("t.txt");
    if keeps_time {
        // A file made just now is within the clock slack of the prompt.
        set_modified_hour_ago(&path);
    }
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(review.baseline.as_deref(), Some("one\n"));
    assert_eq!(review.current.as_deref(), Some("one\ntwo\n"));
}

#[tokio::test]
async fn a_file_caught_half_written_at_its_first_mention_never_gets_that_as_its_before() {
    torn_then_edited(false).await;
}

#[tokio::test]
async fn a_file_caught_truncated_with_its_old_time_is_looked_at_again() {
    // The client looks again after the debounce and finds the write.
    torn_then_edited(true).await;
}

fn set_modified_hour_ago(path: &Path) {
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(hour_ago)
        .unwrap();
}

#[tokio::test]
async fn a_buffer_with_unsaved_edits_keeps_the_disk_text_from_the_prompt_as_before_of_a_torn_rewrite(
) {
    // The demo's hello.lua: the user typed an unsaved line, the agent
    // rewrites the file in place and is caught truncated, with the file's
    // old time, twice (it writes 300 ms later). The disk text the prompt
    // went out with is the before, so the user's line merges cleanly
    // instead of a whole-file conflict against "".
    let mut s = start(
        &[("h.lua", "a\nb\n")],
        json!([{ "steps": [
            { "type": "writeDisk", "path": "h.lua", "content": "A\nb\n", "diff": false,
              "toolCallId": "h1", "tornMs": 300, "tornKeepsTime": true }
        ] }]),
    )
    .await;
    let path = s.root.join("h.lua");
    set_modified_hour_ago(&path);
    s._host.sync.turn_started(
        &s.sid,
        vec![acp_client::edits::buffer_sync::BufferAtPrompt {
            path: acp_client::path::CanonicalPath::resolve(&path).unwrap(),
            text: "a\nb\nmine\n".into(),
            version: 2,
            disk: Some("a\nb\n".into()),
        }],
    );
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    let summary = review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    assert_eq!((summary.added, summary.removed), (1, 1));
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(review.baseline.as_deref(), Some("a\nb\n"));
    assert_eq!(review.current.as_deref(), Some("A\nb\n"));
}

/// The agent truncates w.txt and writes it `stall_ms` later; the watcher's
/// debounce (100 ms) fires while the file is empty, and the empty file is
/// looked at again, so no review ever shows every line deleted.
async fn stalled_rewrite(stall_ms: u64) {
    let mut s = start(
        &[("w.txt", "a\nb\n")],
        json!([{ "steps": [
            { "type": "toolCall", "toolCallId": "w1", "title": "Edit w.txt", "kind": "edit",
              "status": "in_progress", "locations": [{ "path": "{{cwd}}/w.txt" }] },
            { "type": "sleep", "ms": 300 },
            { "type": "writeDisk", "path": "w.txt", "content": "a\nB\n", "diff": false,
              "toolCallId": "w1", "tornMs": stall_ms },
            { "type": "sleep", "ms": 400 }
        ] }]),
    )
    .await;
    let path = s.root.join("w.txt");
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    let last = review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    assert_eq!(
        (last.added, last.removed),
        (1, 1),
        "the first review shown is the edit"
    );
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(review.baseline.as_deref(), Some("a\nb\n"));
    assert_eq!(review.current.as_deref(), Some("a\nB\n"));
}

#[tokio::test]
async fn a_rewrite_stalled_after_its_truncation_is_not_shown_as_emptying_the_file() {
    stalled_rewrite(150).await;
}

#[tokio::test]
async fn a_rewrite_stalled_past_two_looks_is_not_shown_as_emptying_the_file() {
    // A busy machine (three data-safety runs on two cores) stalled a writer
    // past the watcher's one second look: the file is looked at up to five
    // times.
    stalled_rewrite(450).await;
}

#[tokio::test]
async fn a_diff_completed_while_its_file_is_rewritten_in_place_is_read_once_written() {
    // The completion of the agent's edit is read while the file is being
    // rewritten in place: truncated, written 250 ms later (data-safety seed
    // 250035408, case 72, under load: the user's :w of a file the agent had
    // just created; the empty read reloaded the buffer empty). The empty
    // file is looked at again until it is written.
    let mut s = start(
        &[("w.txt", "a\nb\n")],
        json!([{ "steps": [
            { "type": "waitForFile", "path": "go" },
            { "type": "toolCall", "toolCallId": "w1", "title": "Edit w.txt", "kind": "edit",
              "status": "completed",
              "content": [{ "type": "diff", "path": "{{cwd}}/w.txt",
                            "oldText": "a\nb\n", "newText": "a\nB\n" }] },
            { "type": "sleep", "ms": 600 }
        ] }]),
    )
    .await;
    let path = s.root.join("w.txt");
    let conn = s.conn.clone();
    let sid = s.sid.clone();
    let prompt = tokio::spawn(async move { conn.prompt(&sid, vec![text("go")]).await });
    let file = std::fs::File::create(&path).unwrap();
    std::fs::write(s.root.join("go"), "").unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    std::io::Write::write_all(&mut &file, b"a\nB\n").unwrap();
    let first = review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    assert_eq!(
        (first.added, first.removed),
        (1, 1),
        "the first review shown is the edit, not the file emptied"
    );
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(review.current.as_deref(), Some("a\nB\n"));
    let stop = tokio::time::timeout(WAIT, prompt).await.unwrap().unwrap();
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
}

/// A turn that waits for the test to write `x.txt` (as an agent writing
/// before the client could read it), then names the file with no diff, then
/// edits `y.txt` with a diff (an event to wait for).
/// A buffer without unsaved edits, as a prompt goes out with it.
fn unmodified(path: &Path, text: &str) -> acp_client::edits::buffer_sync::BufferAtPrompt {
    acp_client::edits::buffer_sync::BufferAtPrompt {
        path: acp_client::path::CanonicalPath::resolve(path).unwrap(),
        text: text.into(),
        version: 1,
        disk: None,
    }
}

fn written_before_announced() -> Value {
    json!([{ "steps": [
        { "type": "waitForFile", "path": "go" },
        { "type": "toolCall", "toolCallId": "e1", "title": "Edit x.txt", "kind": "edit",
          "status": "completed", "locations": [{ "path": "{{cwd}}/x.txt" }] },
        { "type": "writeDisk", "path": "y.txt", "content": "y2\n" }
    ] }])
}

#[tokio::test]
async fn an_edit_written_before_its_tool_call_is_reviewed_against_the_editors_copy() {
    let mut s = start(
        &[("x.txt", "keep\nold\n"), ("y.txt", "y1\n")],
        written_before_announced(),
    )
    .await;
    let (x, y) = (s.root.join("x.txt"), s.root.join("y.txt"));
    // The editor had x.txt open, unmodified, when the prompt was sent.
    s._host
        .sync
        .turn_started(&s.sid, vec![unmodified(&x, "keep\nold\n")]);
    let conn = s.conn.clone();
    let sid = s.sid.clone();
    let prompt = tokio::spawn(async move { conn.prompt(&sid, vec![text("go")]).await });
    // The "agent" writes x.txt during the turn, before naming it.
    std::fs::write(&x, "keep\nnew\n").unwrap();
    std::fs::write(s.root.join("go"), "").unwrap();
    // x.txt is read after the watcher's debounce, so y.txt's review may
    // come first.
    let (mut x_summary, mut y_seen) = (None, false);
    while x_summary.is_none() || !y_seen {
        let e = wait_event(
            &mut s.rx,
            |e| matches!(e, ClientEvent::ReviewChanged { file, .. } if file.hunks > 0),
        )
        .await;
        if let ClientEvent::ReviewChanged { file, .. } = e {
            if file.path == x {
                x_summary = Some(file);
            } else if file.path == y {
                y_seen = true;
            }
        }
    }
    let summary = x_summary.unwrap();
    assert_eq!((summary.added, summary.removed), (1, 1));
    let review = s.conn.review(&s.sid).file(&x).unwrap();
    assert_eq!(review.baseline.as_deref(), Some("keep\nold\n"));
    assert_eq!(review.current.as_deref(), Some("keep\nnew\n"));
    let stop = tokio::time::timeout(WAIT, prompt).await.unwrap().unwrap();
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
}

#[tokio::test]
async fn a_stale_editor_copy_of_a_file_not_written_during_the_turn_is_ignored() {
    let mut s = start(
        &[("x.txt", "keep\nnew\n"), ("y.txt", "y1\n")],
        written_before_announced(),
    )
    .await;
    let (x, y) = (s.root.join("x.txt"), s.root.join("y.txt"));
    // x.txt changed an hour ago; the editor's buffer still shows the text
    // from before (it had not reloaded): that change is not the agent's.
    set_modified_hour_ago(&x);
    s._host
        .sync
        .turn_started(&s.sid, vec![unmodified(&x, "keep\nold\n")]);
    std::fs::write(s.root.join("go"), "").unwrap();
    assert_eq!(turn(&s, "go").await, StopReason::EndTurn);
    // y.txt is edited after x.txt was named: once it is under review, x.txt
    // would be too if it were taken for an agent edit.
    review_changed(&mut s.rx, &y, |f| f.hunks > 0).await;
    assert_eq!(s.conn.review(&s.sid).file(&x), None);
    assert_eq!(s.conn.review(&s.sid).files().len(), 1);
}

#[tokio::test]
async fn rejecting_one_hunk_of_three_restores_exactly_that_hunk() {
    let before = lines(9);
    let after = before
        .replace("line 1\n", "LINE 1\n")
        .replace("line 5\n", "LINE 5\n")
        .replace("line 9\n", "LINE 9\n");
    let mut s = start(
        &[("d.txt", &before)],
        json!([{ "steps": [{ "type": "writeDisk", "path": "d.txt", "content": after }] }]),
    )
    .await;
    let path = s.root.join("d.txt");
    turn(&s, "go").await;
    review_changed(&mut s.rx, &path, |f| f.hunks == 3).await;
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    let ids: Vec<_> = review.hunks.iter().map(|h| h.id).collect();

    let outcome = s
        .conn
        .review(&s.sid)
        .reject_hunk(&path, ids[1])
        .await
        .unwrap();
    let expected = after.replace("LINE 5\n", "line 5\n");
    assert_eq!(
        outcome,
        RejectOutcome::Write {
            content: expected.clone()
        }
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), expected);
    let summary = review_changed(&mut s.rx, &path, |f| f.hunks == 2).await;
    assert_eq!(summary.first_line, Some(0));
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(
        review.hunks.iter().map(|h| h.id).collect::<Vec<_>>(),
        vec![ids[0], ids[2]]
    );
}

#[tokio::test]
async fn an_accepted_hunk_stays_accepted_when_the_agent_edits_elsewhere() {
    let before = lines(9);
    let first = before
        .replace("line 1\n", "LINE 1\n")
        .replace("line 9\n", "LINE 9\n");
    let second = first.replace("line 5\n", "LINE 5\n");
    let mut s = start(
        &[("e.txt", &before)],
        json!([
            { "match": "first", "steps": [{ "type": "writeDisk", "path": "e.txt", "content": first }] },
            { "match": "second", "steps": [{ "type": "writeDisk", "path": "e.txt", "content": second }] }
        ]),
    )
    .await;
    let path = s.root.join("e.txt");
    turn(&s, "first").await;
    review_changed(&mut s.rx, &path, |f| f.hunks == 2).await;
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    let (accepted, kept) = (review.hunks[0].id, review.hunks[1].id);
    s.conn.review(&s.sid).accept_hunk(&path, accepted).unwrap();
    review_changed(&mut s.rx, &path, |f| f.hunks == 1).await;

    turn(&s, "second").await;
    review_changed(&mut s.rx, &path, |f| f.hunks == 2).await;
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert!(review.hunks.iter().all(|h| h.new_start != 0), "{review:?}");
    assert_eq!(review.hunks[1].id, kept);
    assert_eq!(review.hunks[0].new_lines, vec!["LINE 5\n"]);
}

#[tokio::test]
async fn a_file_rejected_mid_turn_is_not_taken_for_a_new_agent_edit() {
    // While the turn runs, the watcher watches f.txt; the client's own
    // restore must not come back as an agent edit.
    let mut s = start(
        &[("f.txt", "original\n")],
        json!([
            { "match": "edit", "steps": [
                { "type": "writeDisk", "path": "f.txt", "content": "changed\n" },
                { "type": "waitForCancel" }
            ] },
            { "match": "other", "steps": [{ "type": "writeDisk", "path": "g.txt", "content": "g\n" }] }
        ]),
    )
    .await;
    let path = s.root.join("f.txt");
    let conn = s.conn.clone();
    let sid = s.sid.clone();
    let prompt = tokio::spawn(async move { conn.prompt(&sid, vec![text("edit")]).await });
    review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    let outcome = s.conn.review(&s.sid).reject_file(&path).await.unwrap();
    assert_eq!(
        outcome,
        RejectOutcome::Write {
            content: "original\n".into()
        }
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "original\n");
    review_changed(&mut s.rx, &path, |f| f.hunks == 0).await;
    s.conn.cancel(&s.sid).unwrap();
    tokio::time::timeout(WAIT, prompt)
        .await
        .unwrap()
        .unwrap()
        .unwrap();

    // The next turn's edit is recorded after everything the first turn left.
    turn(&s, "other").await;
    let other = s.root.join("g.txt");
    let mut saw_f = false;
    wait_event(&mut s.rx, |e| match e {
        ClientEvent::ReviewChanged { file, .. } => {
            saw_f |= file.path == path;
            file.path == other
        }
        _ => false,
    })
    .await;
    assert!(!saw_f, "the client's restore was recorded as an agent edit");
    let files: Vec<_> = s
        .conn
        .review(&s.sid)
        .files()
        .into_iter()
        .map(|f| f.path)
        .collect();
    assert_eq!(files, vec![other]);
}

#[tokio::test]
async fn rejecting_a_new_file_returns_delete_and_delete_removes_it() {
    let mut s = start(
        &[("kept.txt", "x\n")],
        json!([{ "steps": [{ "type": "writeDisk", "path": "new.txt", "content": "hello\n" }] }]),
    )
    .await;
    let path = s.root.join("new.txt");
    turn(&s, "go").await;
    let summary = review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    assert_eq!(summary.status, FileStatus::Created);

    let outcome = s.conn.review(&s.sid).reject_file(&path).await.unwrap();
    assert_eq!(outcome, RejectOutcome::Delete);
    // Nothing is deleted until the caller confirms.
    assert!(path.exists());
    let settled = review_changed(&mut s.rx, &path, |f| f.hunks == 0).await;
    assert_eq!(settled.status, FileStatus::Created);
    // Only a file whose creation was rejected can be deleted this way.
    let other = s.root.join("kept.txt");
    assert!(matches!(
        s.conn.review(&s.sid).delete_file(&other).await,
        Err(Error::NotFound(_))
    ));
    assert!(other.exists());
    s.conn.review(&s.sid).delete_file(&path).await.unwrap();
    assert!(!path.exists());
    assert!(s.conn.review(&s.sid).files().is_empty());
}

#[tokio::test]
async fn a_deleted_file_rejected_is_restored() {
    let mut s = start(
        &[("h.txt", "precious\n")],
        json!([{ "steps": [
            { "type": "toolCall", "toolCallId": "rm", "title": "rm h.txt", "kind": "delete",
              "status": "pending", "rawInput": { "path": "{{cwd}}/h.txt" } },
            { "type": "requestPermission", "toolCall": { "toolCallId": "rm" }, "report": false,
              "onAllow": [{ "type": "runTerminal", "command": "rm", "args": ["{{cwd}}/h.txt"] }] }
        ] }]),
    )
    .await;
    let path = s.root.join("h.txt");
    turn(&s, "go").await;
    let summary = review_changed(&mut s.rx, &path, |f| f.hunks > 0).await;
    assert_eq!(summary.status, FileStatus::Deleted);
    assert!(!path.exists());
    let outcome = s.conn.review(&s.sid).reject_file(&path).await.unwrap();
    assert_eq!(
        outcome,
        RejectOutcome::Write {
            content: "precious\n".into()
        }
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious\n");
}

#[tokio::test]
async fn paths_outside_the_workspace_are_refused() {
    let s = start(&[], json!([])).await;
    let outside = s.root.parent().unwrap().join("elsewhere.txt");
    assert_eq!(s.conn.review(&s.sid).file(&outside), None);
    assert!(matches!(
        s.conn.review(&s.sid).reject_file(&outside).await,
        Err(Error::OutsideWorkspace { .. })
    ));
    assert!(matches!(
        s.conn.review(&s.sid).accept_file(&outside),
        Err(Error::OutsideWorkspace { .. })
    ));
    assert!(matches!(
        s.conn.review(&s.sid).delete_file(&outside).await,
        Err(Error::OutsideWorkspace { .. })
    ));
    assert!(matches!(
        s.conn
            .review(&s.sid)
            .record_user_edit(&outside, Some("x"), false),
        Err(Error::OutsideWorkspace { .. })
    ));
}

#[tokio::test]
async fn accept_all_and_user_edits_emit_events() {
    let mut s = start(
        &[("i.txt", "a\nb\nc\n")],
        json!([{ "steps": [{ "type": "writeDisk", "path": "i.txt", "content": "a\nB\nc\n" }] }]),
    )
    .await;
    let path = s.root.join("i.txt");
    turn(&s, "go").await;
    review_changed(&mut s.rx, &path, |f| f.hunks == 1).await;
    // The user types a line far from the agent's hunk: not the agent's.
    let summary = s
        .conn
        .review(&s.sid)
        .record_user_edit(&path, Some("a\nB\nc\nmine\n"), false)
        .unwrap()
        .unwrap();
    assert_eq!((summary.hunks, summary.added), (1, 1));
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(review.baseline.as_deref(), Some("a\nb\nc\nmine\n"));

    assert_eq!(
        s.conn.review(&s.sid).accept_all().unwrap(),
        vec![path.clone()]
    );
    review_changed(&mut s.rx, &path, |f| f.hunks == 0).await;
    assert!(s.conn.review(&s.sid).files().is_empty());
}

#[tokio::test]
async fn unsaved_typing_is_not_the_disk_so_a_later_look_at_the_disk_records_nothing() {
    // The demo agent edits hello.lua on disk while its buffer has an unsaved
    // line; the editor merges and reports the buffer (unsaved), and the
    // tracker looks at the disk again at the end of the turn. Taken for the
    // disk's text, the report made that look record the agent "deleting"
    // the user's line, drawn as its deletion in the buffer.
    let mut s = start(
        &[("i.txt", "a\nb\n"), ("z.txt", "z\n")],
        json!([
            { "steps": [
                { "type": "writeDisk", "path": "i.txt", "content": "a\nB\n" },
                { "type": "waitForCancel" }
            ] },
            { "steps": [{ "type": "writeDisk", "path": "z.txt", "content": "Z\n" }] }
        ]),
    )
    .await;
    let path = s.root.join("i.txt");
    let conn = s.conn.clone();
    let sid = s.sid.clone();
    let prompt = tokio::spawn(async move { conn.prompt(&sid, vec![text("go")]).await });
    review_changed(&mut s.rx, &path, |f| f.hunks == 1).await;
    s.conn
        .review(&s.sid)
        .record_user_edit(&path, Some("a\nB\nmine\n"), false)
        .unwrap();
    // The end of this turn reads i.txt again; the next turn's edit of z.txt
    // is recorded after that (one worker, in order).
    s.conn.cancel(&s.sid).unwrap();
    let _ = tokio::time::timeout(WAIT, prompt).await.unwrap().unwrap();
    turn(&s, "again").await;
    review_changed(&mut s.rx, &s.root.join("z.txt"), |f| f.hunks == 1).await;
    let review = s.conn.review(&s.sid).file(&path).unwrap();
    assert_eq!(review.current.as_deref(), Some("a\nB\nmine\n"));
    assert_eq!(review.hunks.len(), 1, "{review:?}");
}

#[tokio::test]
async fn a_blind_write_keeps_a_line_saved_after_the_files_first_mention() {
    // Issue 24: the agent names the file in its tool call (it read it with
    // its own tools), the user saves a line into it while the agent asks to
    // write, and the agent writes the whole file from what it read. No
    // buffer had the file when the prompt went out, so the text at the
    // file's first mention is the base: the saved line stays. Before the
    // fix the base was the disk (the user's save), and the write replaced
    // the saved line without a word.
    let (ptx, mut prompts) = tokio::sync::mpsc::unbounded_channel();
    let s = start_with_permission(
        &[("blind.txt", "one\ntwo\n")],
        json!([{ "steps": [{ "type": "requestPermission",
            "toolCall": { "toolCallId": "w1", "title": "Write blind.txt", "kind": "edit",
                "status": "pending", "locations": [{ "path": "{{cwd}}/blind.txt" }] },
            "onAllow": [{ "type": "call", "method": "fs/write_text_file",
                "params": { "path": "{{cwd}}/blind.txt", "content": "one\ntwo\nagent\n" },
                "expect": { "ok": true } }] }] }]),
        PermissionMode::Manual(ptx),
    )
    .await;
    let path = s.root.join("blind.txt");
    let conn = s.conn.clone();
    let sid = s.sid.clone();
    let prompt = tokio::spawn(async move { conn.prompt(&sid, vec![text("go")]).await });
    let (request, answer) = next_prompt(&mut prompts).await;
    // The user's save, from a buffer opened after the prompt and closed.
    std::fs::write(&path, "one\nmine\ntwo\n").unwrap();
    let allow = request
        .options
        .iter()
        .find(|o| o.kind.as_str() == "allow_once")
        .unwrap();
    choose(answer, &allow.option_id);
    let stop = tokio::time::timeout(WAIT * 3, prompt)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stop.unwrap(), StopReason::EndTurn);
    assert!(!agent_text(&s.conn, &s.sid).contains("EXPECTATION FAILED"));
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "one\nmine\ntwo\nagent\n"
    );
}

/// Two sessions of one agent on `name`: the first's prompt "first" writes
/// `first` into the file, the second's prompt "second" writes `second`.
/// The first turn has run and its review holds one hunk; returns the setup,
/// the file and the second session.
async fn two_writers(
    name: &str,
    initial: &str,
    first: &str,
    second: &str,
) -> (
    Setup,
    std::path::PathBuf,
    acp_client::session::update::SessionId,
) {
    let write = |match_: &str, content: &str| {
        json!({ "match": match_, "steps": [{ "type": "call", "method": "fs/write_text_file",
            "params": { "path": format!("{{{{cwd}}}}/{name}"), "content": content },
            "expect": { "ok": true } }] })
    };
    let mut s = start(
        &[(name, initial)],
        json!([write("first", first), write("second", second)]),
    )
    .await;
    let path = s.root.join(name);
    let other = s
        .conn
        .new_session(acp_client::SessionParams::new(&s.root))
        .await
        .unwrap()
        .session_id;
    turn(&s, "first").await;
    review_changed(&mut s.rx, &path, |f| f.hunks == 1).await;
    (s, path, other)
}

#[tokio::test]
async fn a_reject_in_one_chat_is_learned_by_the_other_chat_before_its_own_reject() {
    // Two sessions of one agent write one file, each adding a line. The
    // first chat's reject removes its line; the second chat's reject must
    // then remove only its own, not restore the first agent's rejected
    // line from the text it had before that reject (data-safety seed
    // 562451862, case 978: `:Acp reject all` sent to both chats).
    let (s, path, other) =
        two_writers("two.txt", "one\ntwo\n", "one\nA\ntwo\n", "one\nA\ntwo\nB\n").await;
    turn_in(&s, &other, "second").await;
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\nA\ntwo\nB\n");
    s.conn.review(&s.sid).reject_all().await.unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\nB\n");
    s.conn.review(&other).reject_all().await.unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "one\ntwo\n");
}

#[tokio::test]
async fn two_chats_rejecting_all_leave_only_the_users_lines() {
    // The second agent's line lands amid the first agent's lines: the first
    // chat's reject deletes them all, and the second chat's review must take
    // that as the end of its hunk, not as its agent deleting the first
    // agent's lines, which its reject then restored (data-safety seed
    // 562451862, case 978).
    let (s, path, other) = two_writers(
        "t.txt",
        "base\n",
        "base\na2\na3\na7\n",
        "base\na2\na1007\na3\na7\nu7\n",
    )
    .await;
    std::fs::write(&path, "base\na2\na3\na7\nu7\n").unwrap();
    s.conn
        .review(&s.sid)
        .record_user_edit(&path, Some("base\na2\na3\na7\nu7\n"), true)
        .unwrap();
    turn_in(&s, &other, "second").await;
    s.conn.review(&s.sid).reject_all().await.unwrap();
    // The first chat's hunk holds the second agent's line amid its own:
    // shown as its, it goes with them.
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "base\nu7\n");
    s.conn.review(&other).reject_all().await.unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "base\nu7\n");
}
