use std::path::Path;
use std::sync::LazyLock;

use super::*;

mod user_edits;

const P: &str = "/w/src/main.rs";

/// A file's key, as the edit layer makes it (`/w` does not exist, so it
/// resolves as written).
fn cp(path: &str) -> CanonicalPath {
    CanonicalPath::resolve(Path::new(path)).unwrap()
}

fn path() -> &'static CanonicalPath {
    static PATH: LazyLock<CanonicalPath> = LazyLock::new(|| cp(P));
    &PATH
}

fn review(t: &EditTracker) -> FileReview {
    t.review(path()).expect("file under review")
}

fn ids(t: &EditTracker) -> Vec<HunkId> {
    review(t).hunks.iter().map(|h| h.id).collect()
}

fn write(content: &str) -> RejectOutcome {
    RejectOutcome::Write {
        content: content.to_owned(),
    }
}

fn lines(text: &str) -> Vec<String> {
    diff::split_lines(text)
        .into_iter()
        .map(str::to_owned)
        .collect()
}

// --- Recording -----------------------------------------------------------

#[test]
fn a_write_shows_hunks_between_old_and_new() {
    let mut t = EditTracker::new();
    let summary = t
        .record_write(path(), Some("a\nb\nc\nd\n"), "a\nB\nc\nd\ne\n")
        .unwrap();
    assert_eq!(summary.status, FileStatus::Modified);
    assert_eq!((summary.hunks, summary.added, summary.removed), (2, 2, 1));
    assert_eq!(summary.first_line, Some(1));

    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("a\nb\nc\nd\n"));
    assert_eq!(r.current.as_deref(), Some("a\nB\nc\nd\ne\n"));
    let h = &r.hunks;
    assert_eq!((h[0].old_start, h[0].new_start), (1, 1));
    assert_eq!(h[0].old_lines, lines("b\n"));
    assert_eq!(h[0].new_lines, lines("B\n"));
    assert_eq!((h[1].old_start, h[1].new_start), (4, 4));
    assert!(h[1].old_lines.is_empty());
    assert_eq!(h[1].new_lines, lines("e\n"));
    assert_ne!(h[0].id, h[1].id);
}

#[test]
fn a_write_that_changes_nothing_is_not_tracked() {
    let mut t = EditTracker::new();
    assert_eq!(t.record_write(path(), Some("same\n"), "same\n"), None);
    assert!(t.is_empty());
    assert_eq!(t.review(path()), None);
}

#[test]
fn repeated_edits_keep_the_first_baseline() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("one\n"), "two\n");
    // The second write's `old` is whatever the agent saw; the baseline stays.
    t.record_write(path(), Some("two\n"), "three\n");
    t.record_write(path(), Some("something else\n"), "four\n");
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("one\n"));
    assert_eq!(r.current.as_deref(), Some("four\n"));
    assert_eq!(r.hunks.len(), 1);
}

#[test]
fn writing_the_baseline_back_ends_the_review() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\n"), "b\n");
    assert_eq!(t.record_write(path(), None, "a\n"), None);
    assert!(!t.contains(path()));
}

#[test]
fn a_new_file_is_created_and_rejecting_it_deletes_it() {
    let mut t = EditTracker::new();
    let s = t.record_write(path(), None, "fn main() {}\n").unwrap();
    assert_eq!(s.status, FileStatus::Created);
    let r = review(&t);
    assert_eq!(r.baseline, None);
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].old_lines, Vec::<String>::new());
    assert_eq!(t.reject_file(path()).unwrap(), RejectOutcome::Delete);
    assert!(t.is_empty());
}

#[test]
fn rejecting_the_only_hunk_of_a_new_file_deletes_it() {
    let mut t = EditTracker::new();
    t.record_write(path(), None, "x\n");
    let id = ids(&t)[0];
    assert_eq!(t.reject_hunk(path(), id).unwrap(), RejectOutcome::Delete);
    assert!(t.is_empty());
}

#[test]
fn an_empty_new_file_has_no_hunks_but_is_still_reviewed() {
    let mut t = EditTracker::new();
    let s = t.record_write(path(), None, "").unwrap();
    assert_eq!(
        (s.status, s.hunks, s.first_line),
        (FileStatus::Created, 0, None)
    );
    assert_eq!(
        t.reject_all(),
        vec![FileRejection {
            path: path().to_owned(),
            outcome: RejectOutcome::Delete
        }]
    );
    t.record_write(path(), None, "");
    t.accept_file(path()).unwrap();
    assert!(t.is_empty());
}

#[test]
fn a_deleted_file_is_restored_on_reject() {
    let mut t = EditTracker::new();
    let s = t.record_delete(path(), "keep me\r\n").unwrap();
    assert_eq!((s.status, s.hunks, s.removed), (FileStatus::Deleted, 1, 1));
    let id = ids(&t)[0];
    assert_eq!(t.reject_hunk(path(), id).unwrap(), write("keep me\r\n"));
    assert!(t.is_empty());
}

#[test]
fn accepting_the_hunk_of_a_deleted_file_accepts_the_deletion() {
    let mut t = EditTracker::new();
    t.record_delete(path(), "gone\n");
    let id = ids(&t)[0];
    t.accept_hunk(path(), id).unwrap();
    assert!(t.is_empty());
    // An empty file deleted: no hunk, still a decision to make.
    let s = t.record_delete(path(), "").unwrap();
    assert_eq!((s.status, s.hunks), (FileStatus::Deleted, 0));
    assert_eq!(t.reject_file(path()).unwrap(), write(""));
}

#[test]
fn a_file_created_then_deleted_leaves_nothing() {
    let mut t = EditTracker::new();
    t.record_write(path(), None, "tmp\n");
    assert_eq!(t.record_delete(path(), "tmp\n"), None);
    assert!(t.is_empty());
}

#[test]
fn a_file_deleted_then_rewritten_is_modified() {
    let mut t = EditTracker::new();
    t.record_delete(path(), "a\nb\n");
    let s = t.record_write(path(), None, "a\nc\n").unwrap();
    assert_eq!((s.status, s.hunks), (FileStatus::Modified, 1));
}

// --- Line endings ----------------------------------------------------------

#[test]
fn a_missing_final_newline_is_reviewed_and_restored_exactly() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb"), "a\nb\n");
    let r = review(&t);
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].old_lines, vec!["b".to_owned()]);
    assert_eq!(r.hunks[0].new_lines, vec!["b\n".to_owned()]);
    assert_eq!(t.reject_hunk(path(), r.hunks[0].id).unwrap(), write("a\nb"));
}

#[test]
fn crlf_content_comes_back_byte_for_byte() {
    let mut t = EditTracker::new();
    let base = "one\r\ntwo\r\nthree\r\nfour\r\n";
    t.record_write(path(), Some(base), "one\r\nTWO\r\nthree\r\nFOUR\r\n");
    let [first, second] = ids(&t)[..] else {
        panic!("two hunks expected")
    };
    assert_eq!(
        t.reject_hunk(path(), second).unwrap(),
        write("one\r\nTWO\r\nthree\r\nfour\r\n")
    );
    assert_eq!(t.reject_hunk(path(), first).unwrap(), write(base));
    assert_eq!(strip_line_ending("x\r\n"), "x");
    assert_eq!(strip_line_ending("x\n"), "x");
    assert_eq!(strip_line_ending("x"), "x");
}

#[test]
fn an_agent_that_rewrites_line_endings_changes_every_line() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\r\nb\r\n"), "a\nb\n");
    assert_eq!(review(&t).hunks.len(), 1);
    assert_eq!(t.reject_file(path()).unwrap(), write("a\r\nb\r\n"));
}

// --- Decisions -------------------------------------------------------------

#[test]
fn accepting_a_hunk_moves_it_into_the_baseline() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\nd\ne\n"), "a\nB\nc\nD\nD2\ne\n");
    let [first, second] = ids(&t)[..] else {
        panic!("two hunks expected")
    };
    t.accept_hunk(path(), first).unwrap();
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("a\nB\nc\nd\ne\n"));
    assert_eq!(r.current.as_deref(), Some("a\nB\nc\nD\nD2\ne\n"));
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].id, second);
    assert_eq!((r.hunks[0].old_start, r.hunks[0].new_start), (3, 3));
}

#[test]
fn rejecting_a_hunk_keeps_the_others_and_shifts_them() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\nd\n"), "a\nx\ny\nb\nc\nD\n");
    let [first, second] = ids(&t)[..] else {
        panic!("two hunks expected")
    };
    assert_eq!(t.reject_hunk(path(), first).unwrap(), write("a\nb\nc\nD\n"));
    let r = review(&t);
    assert_eq!(r.current.as_deref(), Some("a\nb\nc\nD\n"));
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].id, second);
    assert_eq!(r.hunks[0].new_start, 3);
    assert_eq!(r.hunks[0].new_lines, lines("D\n"));
}

#[test]
fn accepted_hunks_stay_accepted_when_the_agent_edits_elsewhere() {
    let mut t = EditTracker::new();
    let base = "1\n2\n3\n4\n5\n6\n7\n";
    t.record_write(path(), Some(base), "1\nTWO\n3\n4\nFIVE\n6\n7\n");
    let [two, five] = ids(&t)[..] else {
        panic!("two hunks expected")
    };
    t.accept_hunk(path(), two).unwrap();
    // The agent adds a line at the top: positions move, contents do not.
    t.record_write(path(), None, "0\n1\nTWO\n3\n4\nFIVE\n6\n7\n");
    let r = review(&t);
    assert_eq!(r.hunks.len(), 2);
    assert_eq!(r.hunks[0].new_lines, lines("0\n"));
    assert_eq!(r.hunks[1].id, five);
    assert_eq!(r.hunks[1].new_start, 5);
    assert!(r.hunks.iter().all(|h| h.id != two));
}

#[test]
fn a_hunk_the_agent_edits_again_gets_a_new_id() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\n"), "a\nB\nc\n");
    let old = ids(&t)[0];
    t.record_write(path(), None, "a\nBB\nc\n");
    let new = ids(&t)[0];
    assert_ne!(old, new);
    let err = t.accept_hunk(path(), old).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)));
    assert!(err.to_string().contains("refresh the review"), "{err}");
    // The stale id never comes back, even for the same lines.
    t.record_write(path(), None, "a\nB\nc\n");
    assert!(!ids(&t).contains(&old));
}

#[test]
fn reject_then_a_new_agent_edit() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\nd\n"), "a\nB\nc\nD\n");
    let [first, second] = ids(&t)[..] else {
        panic!("two hunks expected")
    };
    let RejectOutcome::Write { content } = t.reject_hunk(path(), first).unwrap() else {
        panic!("write expected")
    };
    assert_eq!(content, "a\nb\nc\nD\n");
    // The agent reads the file again and edits the first line.
    t.record_write(path(), Some(&content), "A\nb\nc\nD\n");
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("a\nb\nc\nd\n"));
    assert_eq!(r.hunks.len(), 2);
    assert_eq!(r.hunks[0].new_lines, lines("A\n"));
    assert_eq!(r.hunks[1].id, second);
}

#[test]
fn a_fully_rejected_file_starts_a_fresh_review_on_the_next_edit() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\n"), "b\n");
    assert_eq!(t.reject_file(path()).unwrap(), write("a\n"));
    assert!(t.is_empty());
    // The user edited and saved in between; the agent's next edit starts
    // from that, which becomes the new baseline.
    t.record_write(path(), Some("a user\n"), "c\n");
    assert_eq!(review(&t).baseline.as_deref(), Some("a user\n"));
}

#[test]
fn partial_accept_then_reject_the_rest_keeps_only_the_accepted() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\nd\ne\n"), "A\nb\nC\nd\nE\n");
    let h = ids(&t);
    t.accept_hunk(path(), h[1]).unwrap();
    assert_eq!(t.reject_file(path()).unwrap(), write("a\nb\nC\nd\ne\n"));
}

#[test]
fn accepting_every_hunk_ends_the_review() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\n"), "A\nb\nC\n");
    for id in ids(&t) {
        t.accept_hunk(path(), id).unwrap();
    }
    assert!(t.is_empty());
}

#[test]
fn session_wide_decisions_cover_every_file() {
    let mut t = EditTracker::new();
    let (a, b, c) = (&cp("/w/a"), &cp("/w/b"), &cp("/w/c"));
    t.record_write(b, Some("1\n"), "2\n");
    t.record_write(a, None, "new\n");
    t.record_delete(c, "old\n");
    let files: Vec<_> = t.files().into_iter().map(|s| (s.path, s.status)).collect();
    assert_eq!(
        files,
        vec![
            (a.to_owned(), FileStatus::Created),
            (b.to_owned(), FileStatus::Modified),
            (c.to_owned(), FileStatus::Deleted),
        ]
    );
    assert_eq!(
        t.reject_all(),
        vec![
            FileRejection {
                path: a.to_owned(),
                outcome: RejectOutcome::Delete
            },
            FileRejection {
                path: b.to_owned(),
                outcome: write("1\n")
            },
            FileRejection {
                path: c.to_owned(),
                outcome: write("old\n")
            },
        ]
    );
    assert!(t.is_empty());

    t.record_write(a, None, "new\n");
    t.record_write(b, Some("1\n"), "2\n");
    assert_eq!(t.accept_all(), vec![a.to_owned(), b.to_owned()]);
    assert!(t.is_empty());
}

#[test]
fn decisions_on_unknown_files_or_hunks_are_errors() {
    let mut t = EditTracker::new();
    let err = t.reject_file(path()).unwrap_err();
    assert!(matches!(err, Error::NotFound(_)));
    assert!(
        err.to_string().contains("no agent edits under review"),
        "{err}"
    );
    t.record_write(path(), Some("a\n"), "b\n");
    assert!(t.reject_hunk(path(), HunkId::from(999)).is_err());
    // A failed decision changes nothing.
    assert_eq!(review(&t).current.as_deref(), Some("b\n"));
}

#[test]
fn forget_drops_a_file_without_a_decision() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\n"), "b\n");
    assert!(t.forget(path()));
    assert!(!t.forget(path()));
    assert!(t.is_empty());
}

#[test]
fn hunk_ids_are_unique_across_files() {
    let mut t = EditTracker::new();
    t.record_write(&cp("/w/a"), Some("x\n"), "y\n");
    t.record_write(&cp("/w/b"), Some("x\n"), "y\n");
    let a = t.review(&cp("/w/a")).unwrap().hunks[0].id;
    let b = t.review(&cp("/w/b")).unwrap().hunks[0].id;
    assert_ne!(a, b);
    assert!(t.accept_hunk(&cp("/w/a"), b).is_err());
}

// --- Lookup ----------------------------------------------------------------

#[test]
fn hunk_at_finds_the_hunk_under_a_line() {
    let mut t = EditTracker::new();
    // Line 1 replaced by two lines, line 3 deleted, last line deleted.
    t.record_write(path(), Some("a\nb\nc\nd\ne\nf\n"), "a\nB1\nB2\nc\ne\n");
    let r = review(&t);
    assert_eq!(r.hunks.len(), 3);
    assert_eq!(r.hunk_at(0), None);
    assert_eq!(r.hunk_at(1).map(|h| h.id), Some(r.hunks[0].id));
    assert_eq!(r.hunk_at(2).map(|h| h.id), Some(r.hunks[0].id));
    assert_eq!(r.hunk_at(3), None);
    // "d" stood before "e" (line 4); "f" stood after the last line.
    assert_eq!(r.hunk_at(4).map(|h| h.id), Some(r.hunks[1].id));
    assert_eq!(r.hunks[2].new_start, 5);
    assert_eq!(
        r.hunk(r.hunks[2].id).map(|h| h.old_lines.clone()),
        Some(lines("f\n"))
    );
    assert_eq!(r.hunks[1].old_range(), 3..4);
    assert_eq!(r.hunks[0].new_range(), 1..3);
}

#[test]
fn hunk_at_finds_a_deletion_at_the_end_of_the_file() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\n"), "a\n");
    let r = review(&t);
    assert_eq!(r.hunk_at(0).map(|h| h.id), Some(r.hunks[0].id));
}

// --- Tool call diffs -------------------------------------------------------

#[test]
fn a_whole_file_tool_diff_is_a_write() {
    let mut t = EditTracker::new();
    let placed = t.record_tool_diff(path(), Some("old\n"), "new\n", Some("new\n"));
    assert_eq!(placed, ToolDiffPlacement::WholeFile);
    assert_eq!(review(&t).baseline.as_deref(), Some("old\n"));
    let placed = t.record_tool_diff(&cp("/w/new"), None, "x\n", Some("x\n"));
    assert_eq!(placed, ToolDiffPlacement::WholeFile);
    assert_eq!(
        t.summary(&cp("/w/new")).unwrap().status,
        FileStatus::Created
    );
}

#[test]
fn a_snippet_tool_diff_rebuilds_the_content_before() {
    // claude-agent-acp's Edit tool: old_string/new_string only.
    let mut t = EditTracker::new();
    let disk = "fn a() {\n    one();\n    two();\n}\n";
    let placed = t.record_tool_diff(path(), Some("    1();\n"), "    one();\n", Some(disk));
    assert_eq!(placed, ToolDiffPlacement::Snippet);
    let r = review(&t);
    assert_eq!(
        r.baseline.as_deref(),
        Some("fn a() {\n    1();\n    two();\n}\n")
    );
    assert_eq!(r.current.as_deref(), Some(disk));
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].new_start, 1);
}

#[test]
fn a_snippet_after_earlier_edits_uses_the_disk() {
    let mut t = EditTracker::new();
    t.record_tool_diff(path(), Some("a = 1"), "a = 2", Some("a = 2\nb = 1\n"));
    // A second edit whose snippet also occurs elsewhere: the file is under
    // review, so the disk content is enough.
    let placed = t.record_tool_diff(path(), Some("b = 1"), "= 2", Some("a = 2\nb = 2\n"));
    assert_eq!(placed, ToolDiffPlacement::Tracked);
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("a = 1\nb = 1\n"));
    assert_eq!(r.current.as_deref(), Some("a = 2\nb = 2\n"));
}

#[test]
fn tool_diffs_that_cannot_be_placed_record_nothing() {
    let mut t = EditTracker::new();
    // Ambiguous, missing, deletion-only, and not on disk.
    for (old, new, disk) in [
        (Some("x"), "y", Some("y y")),
        (Some("x"), "y", Some("z")),
        (Some("x"), "", Some("z")),
        (Some("x"), "y", None),
        (None, "y", Some("y and more")),
    ] {
        assert_eq!(
            t.record_tool_diff(path(), old, new, disk),
            ToolDiffPlacement::NotPlaced
        );
    }
    assert!(t.is_empty());
    // A tracked file that is gone from disk: the watcher reports deletions.
    t.record_write(path(), Some("a\n"), "b\n");
    assert_eq!(
        t.record_tool_diff(path(), None, "b\n", None),
        ToolDiffPlacement::NotPlaced
    );
    assert_eq!(review(&t).current.as_deref(), Some("b\n"));
}

#[test]
fn the_same_edit_reported_twice_is_recorded_once() {
    // An agent that writes through fs/* and also reports the diff.
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\n"), "b\n");
    let before = review(&t);
    assert_eq!(
        t.record_tool_diff(path(), Some("a\n"), "b\n", Some("b\n")),
        ToolDiffPlacement::Tracked
    );
    assert_eq!(review(&t), before);
}

// --- Wire form -------------------------------------------------------------

#[test]
fn review_types_serialize_in_camel_case() {
    let mut t = EditTracker::new();
    t.record_write(path(), None, "x\n");
    let json = serde_json::to_value(review(&t)).unwrap();
    let id = ids(&t)[0].get();
    assert_eq!(
        json,
        serde_json::json!({
            "path": P, "status": "created", "baseline": null, "current": "x\n",
            "hunks": [{"id": id, "oldStart": 0, "oldLines": [], "newStart": 0, "newLines": ["x\n"]}]
        })
    );
    assert_eq!(
        serde_json::to_value(RejectOutcome::Delete).unwrap(),
        serde_json::json!({"action": "delete"})
    );
    let back: HunkId = serde_json::from_value(serde_json::json!(id)).unwrap();
    assert_eq!(back, ids(&t)[0]);
}

#[test]
fn undo_then_redo_of_an_agent_edit_brings_its_review_back() {
    let mut t = EditTracker::new();
    let p = &cp("/w/u.txt");
    // The agent's line merged into the user's unsaved text.
    t.record_write(p, Some("mine\nl2\n"), "mine\nagent\n");
    let before = t.review(p).unwrap();
    // Undo: the buffer is the user's text again; nothing to review.
    assert_eq!(t.record_user_edit(p, Some("mine\nl2\n")), None);
    assert!(!t.contains(p));
    // Redo: the agent's line is back, and so is its hunk.
    let summary = t.record_user_edit(p, Some("mine\nagent\n")).unwrap();
    assert_eq!(summary.hunks, 1);
    let after = t.review(p).unwrap();
    assert_eq!(after.baseline, before.baseline);
    assert_eq!(after.hunks, before.hunks);
}

#[test]
fn redo_after_an_undo_into_a_resolved_conflict_comes_back_to_nothing_under_review() {
    // Data-safety seed 61500616, case 33: the user resolved a conflict to
    // their side and typed; Neovim undid both in one step, then redid them.
    let mut t = EditTracker::new();
    let p = &cp("/w/c.txt");
    t.record_write(p, Some("a\nb\n"), "a\nagent\nb\n");
    let block = "a\n<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nb\n";
    assert!(t.record_user_edit(p, Some(block)).is_some());
    assert_eq!(
        t.record_user_edit(p, Some("a\nmine\nb\n")),
        None,
        "resolved"
    );
    let typed = "a\nmine\ntyped\nb\n";
    assert_eq!(t.record_user_edit(p, Some(typed)), None);
    assert!(
        t.record_user_edit(p, Some(block)).is_some(),
        "undo: the conflict's review is back"
    );
    assert_eq!(
        t.record_user_edit(p, Some(typed)),
        None,
        "redo: nothing under review again, not the markers as a hunk: {:?}",
        t.review(p)
    );
}

#[test]
fn a_decision_is_final_for_undo() {
    let mut t = EditTracker::new();
    let p = &cp("/w/d.txt");
    t.record_write(p, Some("a\n"), "b\n");
    t.accept_file(p).unwrap();
    // The user's undo of an accepted edit is the user's own change.
    assert_eq!(t.record_user_edit(p, Some("a\n")), None);
    assert_eq!(t.record_user_edit(p, Some("b\n")), None);
    assert!(!t.contains(p));
}

#[test]
fn undo_then_redo_after_a_decision_on_another_hunk_keeps_the_hunks_left() {
    let mut t = EditTracker::new();
    let p = &cp("/w/h.txt");
    t.record_write(p, Some("a\nb\nc\nd\n"), "A\nb\nc\nD\n");
    let first = t.review(p).unwrap().hunks[0].id;
    t.accept_hunk(p, first).unwrap();
    let left = t.review(p).unwrap().hunks;
    assert_eq!(left.len(), 1);
    // Undo of the agent's other line, then redo.
    t.record_user_edit(p, Some("A\nb\nc\nd\n"));
    assert!(!t.contains(p));
    t.record_user_edit(p, Some("A\nb\nc\nD\n"));
    assert_eq!(
        t.review(p).unwrap().hunks,
        left,
        "the hunk left is back, the accepted one is not"
    );
}
