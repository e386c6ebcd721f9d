//! User edits in a reviewed file: typing outside, next to and inside the
//! agent's hunks, and accepting some lines of a hunk.

use super::*;

#[test]
fn user_typing_outside_hunks_is_not_taken_for_the_agent() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\nd\ne\n"), "a\nB\nc\nd\ne\n");
    let id = ids(&t)[0];
    // The user adds a line at the end and changes "d".
    t.record_user_edit(path(), Some("a\nB\nc\nd user\ne\nuser\n"));
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("a\nb\nc\nd user\ne\nuser\n"));
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].id, id);
    // Rejecting the agent's hunk keeps the user's lines.
    assert_eq!(
        t.reject_hunk(path(), id).unwrap(),
        write("a\nb\nc\nd user\ne\nuser\n")
    );
}

#[test]
fn a_line_typed_next_to_a_hunk_stays_outside_it() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\n"), "a\nB\nc\n");
    let id = ids(&t)[0];
    t.record_user_edit(path(), Some("a\nabove\nB\nbelow\nc\n"));
    let r = review(&t);
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].id, id);
    assert_eq!(r.hunks[0].new_start, 2);
    assert_eq!(
        t.reject_file(path()).unwrap(),
        write("a\nabove\nb\nbelow\nc\n")
    );
}

#[test]
fn user_typing_inside_a_hunk_joins_it() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\n"), "a\nB1\nB2\nc\n");
    let id = ids(&t)[0];
    t.record_user_edit(path(), Some("a\nB1\nuser\nB2\nc\n"));
    let r = review(&t);
    assert_eq!(r.hunks.len(), 1);
    assert_ne!(r.hunks[0].id, id);
    assert_eq!(r.hunks[0].old_lines, lines("b\n"));
    assert_eq!(r.hunks[0].new_lines, lines("B1\nuser\nB2\n"));
}

#[test]
fn a_user_deletion_across_a_hunk_deletes_the_lines_around_it_from_the_baseline() {
    // Another chat's reject removed this agent's line and the lines around
    // it (that agent's, this review's baseline): those are gone for good,
    // not this agent's deletion, so rejecting here must not bring them back
    // (data-safety seed 562451862, case 978).
    let mut t = EditTracker::new();
    t.record_write(
        path(),
        Some("base\na2\na3\nu7\n"),
        "base\na2\nmine\na3\nu7\n",
    );
    t.record_user_edit(path(), Some("base\nu7\n"));
    assert_eq!(t.review(path()), None);
    // Only the lines outside the hunk: the hunk's line deleted with them
    // leaves nothing to review, and the baseline keeps the user's lines.
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\nd\n"), "a\nb\nmine\nc\nd\nagent\n");
    t.record_user_edit(path(), Some("a\nd\nagent\n"));
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("a\nd\n"));
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].new_lines, lines("agent\n"));
    assert_eq!(t.reject_file(path()).unwrap(), write("a\nd\n"));
}

#[test]
fn user_edits_next_to_an_agent_deletion_keep_the_deletion() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\nd\n"), "a\nd\n");
    let id = ids(&t)[0];
    // The user rewrites the line just above the deleted lines, then the one
    // just below them.
    t.record_user_edit(path(), Some("A\nd\n"));
    t.record_user_edit(path(), Some("A\nD\n"));
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("A\nb\nc\nD\n"));
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].id, id);
    // Typing a new line where the lines were deleted keeps it outside too.
    t.record_user_edit(path(), Some("A\nnew\nD\n"));
    let r = review(&t);
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].id, id);
    assert_eq!(t.reject_file(path()).unwrap(), write("A\nb\nc\nnew\nD\n"));
}

#[test]
fn user_lines_that_restore_an_agent_deletion_undo_it_once() {
    // The baseline holds the user's unsaved "u" (reported earlier); the
    // agent's next text, computed from the disk, lacks it, so it reads as an
    // agent deletion. The buffer still has "u": that undoes the deletion,
    // and the baseline must not get "u" a second time.
    let mut t = EditTracker::new();
    t.record_write(path(), Some("b\n"), "b\nagent\n");
    t.record_user_edit(path(), Some("u\nb\nagent\n"));
    assert_eq!(review(&t).baseline.as_deref(), Some("u\nb\n"));
    t.record_write(path(), None, "b\nagent\nmore\n");
    assert_eq!(review(&t).hunks[0].old_lines, lines("u\n"));
    t.record_user_edit(path(), Some("u\nb\nagent\nmore\n"));
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("u\nb\n"));
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].new_lines, lines("agent\nmore\n"));
    // Lines typed around the restored ones are the user's too.
    t.record_write(path(), None, "b\nagent\nmore\n");
    t.record_user_edit(path(), Some("p\nu\nq\nb\nagent\nmore\n"));
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("p\nu\nq\nb\n"));
    assert_eq!(t.reject_file(path()).unwrap(), write("p\nu\nq\nb\n"));
}

#[test]
fn accepting_lines_takes_them_not_their_whole_hunk() {
    // One agent hunk holds a line the user typed between the agent's lines
    // (it joined the hunk); accepting that line leaves the agent's lines
    // under review, and a reject then takes only those.
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\n"), "a\nA1\nA2\nb\n");
    t.record_user_edit(path(), Some("a\nA1\nmine\nA2\nb\n"));
    assert_eq!(review(&t).hunks.len(), 1);
    t.accept_lines(path(), 2, 3).unwrap();
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("a\nmine\nb\n"));
    assert_eq!(r.hunks.len(), 2);
    assert_eq!(t.reject_file(path()).unwrap(), write("a\nmine\nb\n"));
}

#[test]
fn accepting_part_of_a_replacement_keeps_the_replaced_lines_reviewable() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nx\nb\n"), "a\nA1\nkept\nb\n");
    // "kept" is not the hunk's first line: the old line stays before it.
    t.accept_lines(path(), 2, 3).unwrap();
    assert_eq!(review(&t).baseline.as_deref(), Some("a\nx\nkept\nb\n"));
    assert_eq!(t.reject_file(path()).unwrap(), write("a\nx\nkept\nb\n"));
    // The hunk's first line: the old line goes after it.
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nx\nb\n"), "a\nkept\nA2\nb\n");
    t.accept_lines(path(), 1, 2).unwrap();
    assert_eq!(review(&t).baseline.as_deref(), Some("a\nkept\nx\nb\n"));
    // Covering the whole hunk accepts it as accept_hunk does.
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nx\nb\n"), "a\nX\nb\n");
    t.accept_lines(path(), 0, 3).unwrap();
    assert!(t.is_empty());
}

#[test]
fn accepting_lines_takes_the_deletions_at_their_edges_only() {
    let mut t = EditTracker::new();
    // Deletions stand at line 1 ("d1" gone) and line 2 ("d2" gone), and an
    // insertion at line 3.
    t.record_write(path(), Some("a\nd1\nb\nd2\nc\n"), "a\nb\nc\nnew\n");
    assert_eq!(review(&t).hunks.len(), 3);
    // Lines [1, 2) ("b"): the deletions at 1 and at 2 are at its edges.
    t.accept_lines(path(), 1, 2).unwrap();
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("a\nb\nc\n"));
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].new_lines, lines("new\n"));
    // An empty range away from every hunk accepts nothing.
    t.accept_lines(path(), 1, 1).unwrap();
    assert_eq!(review(&t).hunks.len(), 1);
}

#[test]
fn one_user_change_across_an_agent_deletion_joins_it() {
    // Which of the user's lines stood above the deleted lines is unknown,
    // so the whole change is reviewed with the deletion.
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\nc\nd\n"), "a\nd\n");
    t.record_user_edit(path(), Some("A\nD\n"));
    let r = review(&t);
    assert_eq!(r.baseline.as_deref(), Some("a\nb\nc\nd\n"));
    assert_eq!(r.hunks.len(), 1);
    assert_eq!(r.hunks[0].new_lines, lines("A\nD\n"));
}

#[test]
fn user_edits_that_undo_the_agent_end_the_review() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\n"), "b\n");
    assert_eq!(t.record_user_edit(path(), Some("a\n")), None);
    assert!(t.is_empty());
}

#[test]
fn user_edits_of_a_new_file_keep_it_new() {
    let mut t = EditTracker::new();
    t.record_write(path(), None, "agent\n");
    let s = t.record_user_edit(path(), Some("agent!\n")).unwrap();
    assert_eq!(s.status, FileStatus::Created);
    assert_eq!(t.reject_file(path()).unwrap(), RejectOutcome::Delete);
}

#[test]
fn user_edits_of_untracked_or_deleted_files() {
    let mut t = EditTracker::new();
    assert_eq!(t.record_user_edit(path(), Some("x\n")), None);
    assert!(t.is_empty());
    t.record_write(path(), Some("a\n"), "b\n");
    assert_eq!(t.record_user_edit(path(), None), None);
    assert!(t.is_empty());
}

#[test]
fn a_user_deletion_on_both_sides_of_an_agent_deletion_is_the_users() {
    // The lines right above and below the agent's deletion go in one
    // deletion (another chat's reject removed that agent's lines there):
    // they leave the baseline, and a reject brings back only the line the
    // agent deleted (data-safety seed 762722601, case 731).
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\np\nx\nq\nb\n"), "a\np\nq\nb\n");
    t.record_user_edit(path(), Some("a\nb\n"));
    assert_eq!(review(&t).baseline.as_deref(), Some("a\nx\nb\n"));
    assert_eq!(t.reject_file(path()).unwrap(), write("a\nx\nb\n"));
}

#[test]
fn an_agent_write_from_its_older_view_does_not_take_a_conflict_block_for_its_own() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("b1\nb2\n"), "b1\nb2\na1\n");
    t.record_user_edit(path(), Some("b1\nu\nb2\na1\n"));
    // A second chat's write opened a conflict block in the buffer.
    t.record_user_edit(
        path(),
        Some("b1\n<<<<<<< buffer\nu\n=======\nother\n>>>>>>> agent\nb2\na1\n"),
    );
    // The agent writes from its view of the file, which has the other
    // chat's line and none of the block; then edits the disk again.
    t.record_write(
        path(),
        Some("b1\nother\nb2\na1\n"),
        "b1\nother\na2\nb2\na1\n",
    );
    t.record_write(path(), None, "b1\nother\na8\na2\nb2\na1\n");
    // The user resolves the block, keeping their line.
    t.record_user_edit(path(), Some("b1\nu\na8\na2\nb2\na1\n"));
    // Every line the agent added goes, and no marker comes back.
    assert_eq!(t.reject_file(path()).unwrap(), write("b1\nu\nb2\n"));
}

#[test]
fn a_line_the_user_typed_and_the_agent_wrote_back_is_not_the_agents() {
    let mut t = EditTracker::new();
    t.record_write(path(), Some("a\nb\n"), "a\nb\nfirst\n");
    t.record_user_edit(path(), Some("a\nuser\nb\nfirst\n"));
    // The agent read the unsaved buffer; its write's base is the lines its
    // two views share, which lack the user's line its content has.
    t.record_write(path(), Some("a\nb\nfirst\n"), "a\nuser\nb\nfirst\nsecond\n");
    let r = review(&t);
    assert!(
        r.hunks
            .iter()
            .all(|h| !h.new_lines.contains(&"user\n".to_owned())),
        "the user's line is in an agent hunk: {:?}",
        r.hunks
    );
    assert_eq!(t.reject_file(path()).unwrap(), write("a\nuser\nb\n"));
}

#[test]
fn a_line_the_user_saved_that_an_agent_writes_from_an_older_view_stays_the_users() {
    // Seed 250035408, case 918: the agent's view (its own last write) is
    // older than the text it writes, which holds a line the user saved
    // since ("u3"); review's text also holds two lines the user typed
    // since, which the write lacks.
    let mut t = EditTracker::new();
    t.record_write(path(), Some("b1\nb2\nb3\n"), "b1\na1\nb2\nb3\n");
    t.record_write(path(), Some("b1\na1\nb2\nb3\n"), "b1\na1\nb2\nb3\na3\n");
    t.record_user_edit(path(), Some("b1\na1\nb2\nb3\nu3\na3\n"));
    t.record_user_edit(path(), Some("b1\nother\nb2\nu1\nb3\nu3\nu2\na3\n"));
    t.record_write(
        path(),
        Some("b1\na1\nb2\nb3\na3\n"),
        "b1\nother\na5\nb2\nb3\nu3\na3\n",
    );
    let r = review(&t);
    assert!(
        r.hunks
            .iter()
            .all(|h| !h.new_lines.contains(&"u3\n".to_owned())),
        "the user's saved line is in an agent hunk: {:?}",
        r.hunks
    );
    // The buffer keeps the two typed lines the write lacked.
    t.record_user_edit(path(), Some("b1\nother\na5\nb2\nu1\nb3\nu3\nu2\na3\n"));
    assert_eq!(
        t.reject_file(path()).unwrap(),
        write("b1\nb2\nu1\nb3\nu3\nu2\n")
    );
}
