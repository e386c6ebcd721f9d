//! Unit tests of the files' sync state.
#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::path::Path;

use super::*;
use crate::path::CanonicalPath;

/// A file's key (`/w` does not exist, so it resolves as written).
fn cp(path: &str) -> CanonicalPath {
    CanonicalPath::resolve(Path::new(path)).unwrap()
}

fn sid(s: &str) -> SessionId {
    SessionId::new(s)
}

#[test]
fn a_write_back_of_the_unsaved_buffer_the_agent_read_merges_clean() {
    // claude-code-acp 0.16.2: read `hello.txt` from the unsaved buffer,
    // wrote it back with its change.
    let mut s = FileRecords::new();
    let p = &cp("/w/hello.txt");
    let unsaved = "hello world\nunsaved line\n";
    s.reported(
        p,
        BufferText {
            text: unsaved.into(),
            version: 7,
        },
    );
    s.saw(&sid("s"), p, Some(unsaved.into()));
    let base = s.seen(&sid("s"), p).unwrap();
    let i = s.plan(p, &base, "hello ACP\nunsaved line\n", Origin::Write);
    assert_eq!(
        i.merge,
        Some(PlannedMerge {
            version: 7,
            text: "hello ACP\nunsaved line\n".into(),
            conflicts: 0
        })
    );
    assert_eq!(i.revision, 1);
}

#[test]
fn a_restore_keeps_lines_another_chat_wrote_since() {
    // Two chats' reviews of one file (data-safety seed 141793484, case
    // 63): the first chat's review knew "first\nbase\n"; the second
    // agent wrote its line since. The first chat's reject restores
    // "base\n": the unmodified buffer saves the merge, keeping the
    // second agent's line, not the restore whole.
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    s.reported(p, buffer("first\nbase\nsecond\n", 2));
    let i = s.plan(p, "first\nbase\n", "base\n", Origin::Restore);
    assert_eq!(i.saved_text(), "base\nsecond\n");
    s.answered(
        &i,
        &Applied::Saved {
            old_content: Some("first\nbase\nsecond\n".into()),
            version: 3,
        },
    );
    assert_eq!(s.disk(p), Some("base\nsecond\n"));
}

#[test]
fn a_save_after_the_agent_read_is_merged_not_overwritten() {
    // The agent reads the buffer, the user types a line and saves (:w),
    // the agent writes back what it read plus its own line: the save is
    // the user's text, so the base stays what the agent read.
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    let read = "one\ntwo\n";
    s.reported(p, buffer(read, 1));
    s.saw(&sid("s"), p, Some(read.into()));
    s.user_reported(p, buffer("mine\none\ntwo\n", 3), OnDisk::Saved);
    let base = s.base_of_write(&sid("s"), p).unwrap();
    assert_eq!(&*base, read);
    let i = s.plan(p, &base, "one\ntwo\nagent\n", Origin::Write);
    let merge = i.merge.clone().unwrap();
    assert_eq!(
        (merge.version, merge.text.as_str(), merge.conflicts),
        (3, "mine\none\ntwo\nagent\n", 0)
    );
    // An unmodified buffer saves the merge: that is the disk's text now.
    assert_eq!(i.saved_text(), "mine\none\ntwo\nagent\n");
    s.answered(
        &i,
        &Applied::Saved {
            old_content: Some("mine\none\ntwo\n".into()),
            version: 4,
        },
    );
    assert_eq!(s.disk(p), Some("mine\none\ntwo\nagent\n"));
    assert_eq!(s.buffer(p), Some(&buffer("mine\none\ntwo\nagent\n", 4)));
}

#[test]
fn a_write_that_waited_merges_later_against_what_the_agent_saw_not_a_save() {
    // The buffer has open conflict blocks; the user saved it (the
    // blocks and a line of theirs on disk); the agent's write, made from
    // what it saw before, waits, and is merged as a disk edit later.
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    let saved = "<<<<<<< buffer\nmine\n=======\n>>>>>>> agent\nx\nsaved\n";
    s.user_reported(p, buffer(saved, 2), OnDisk::Saved);
    let i = s.plan(p, "x\n", "x\nagent\n", Origin::Write);
    s.answered(&i, &Applied::Waiting);
    let d = s.plan_disk(p).unwrap();
    assert_eq!(d.base.as_deref(), Some("x\n"));
    let merge = d.merge.unwrap();
    assert!(merge.text.contains("mine\n") && merge.text.contains("saved\n"));
    assert!(merge.text.contains("agent\n"));
    // An edit of its own on disk merges against the synced text again.
    assert!(s.disk_changed(p, None, "disk edit\n"));
    assert_eq!(s.plan_disk(p).unwrap().base.as_deref(), Some(saved));
}

#[test]
fn a_disk_edit_over_a_waiting_write_merges_against_what_the_agent_saw() {
    // Data-safety seed 1020918746, case 153: the user saved the buffer with
    // its conflict block and a line of theirs; the agent's blind write
    // waited on the block, then the agent edited its own text on disk.
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    let saved = "mine\nx\n<<<<<<< buffer\nu\n=======\na\n>>>>>>> agent\n";
    s.user_reported(p, buffer(saved, 2), OnDisk::Saved);
    let i = s.plan(p, "x\na\n", "x\na\nagent\n", Origin::Write);
    s.answered(&i, &Applied::Waiting);
    assert!(s.disk_changed(p, Some("x\na\nagent\n"), "x\na\nagent 2\n"));
    let d = s.plan_disk(p).unwrap();
    assert_eq!(d.base.as_deref(), Some("x\na\n"), "what the agent saw");
    let merge = d.merge.unwrap();
    for line in ["mine\n", "u\n", "agent 2\n"] {
        assert!(merge.text.contains(line), "{line:?} in {:?}", merge.text);
    }
}

#[test]
fn a_blind_write_merges_against_the_text_at_the_prompt() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    let q = &cp("/w/b.txt");
    s.turn_started(&sid("s"), vec![(p.clone(), "one\ntwo\n".into())]);
    assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("one\ntwo\n"));
    assert_eq!(s.base_of_write(&sid("other"), p), None);
    // The buffer not known: no merge (the editor answers stale with its
    // text, the user's saved line in it, and the write is planned again).
    let i = s.plan(p, "one\ntwo\n", "one\ntwo\nagent\n", Origin::Write);
    assert_eq!(i.merge, None);
    s.answered(&i, &Applied::Stale(buffer("one\nmine\ntwo\n", 5)));
    let i = s.plan(p, "one\ntwo\n", "one\ntwo\nagent\n", Origin::Write);
    let merge = i.merge.clone().unwrap();
    assert_eq!(
        (merge.version, merge.text.as_str()),
        (5, "one\nmine\ntwo\nagent\n")
    );
    assert_eq!(i.saved_text(), "one\nmine\ntwo\nagent\n");
    // What the agent read wins over the text at the prompt; a newer
    // prompt replaces the texts it carries, others stay; a closed
    // session's go.
    s.saw(&sid("s"), p, Some("read\n".into()));
    assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("read\n"));
    s.turn_started(&sid("s"), vec![(q.clone(), "q\n".into())]);
    s.saw(&sid("s"), p, None);
    assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("one\ntwo\n"));
    assert_eq!(s.base_of_write(&sid("s"), q).as_deref(), Some("q\n"));
    s.drop_session(&sid("s"));
    assert_eq!(s.base_of_write(&sid("s"), q), None);
}

#[test]
fn a_blind_write_merges_against_the_text_at_the_first_mention() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    s.mentioned(&sid("s"), p, "one\ntwo\n");
    // A later mention in the same turn is not the first.
    s.mentioned(&sid("s"), p, "one\nmine\ntwo\n");
    assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("one\ntwo\n"));
    // Only a base: review keeps its own snapshot as the "before".
    assert_eq!(s.text_before_turn(&sid("s"), p), None);
    // With the prompt's text: the lines both hold (found by the in-memory
    // property: another agent's write took the user's line off the disk
    // the agent read at the mention, while the buffer kept it in a
    // conflict block; the prompt's text as the base dropped it).
    s.turn_started(&sid("t"), vec![(p.clone(), "a\nmine\nb\n".into())]);
    s.mentioned(&sid("t"), p, "a\nb\nother\n");
    assert_eq!(s.base_of_write(&sid("t"), p).as_deref(), Some("a\nb\n"));
    // A new turn keeps it as a base until the file is mentioned in it.
    s.age_mentions(&sid("s"));
    assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("one\ntwo\n"));
    s.mentioned(&sid("s"), p, "later\n");
    assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("later\n"));
}

#[test]
fn a_read_and_a_later_mention_that_differ_make_a_base_of_the_lines_both_hold() {
    // The agent read the unsaved buffer (with the user's line), then the
    // disk with its own tools (without it): whichever it writes from, the
    // user's line is not in the base, so the merge keeps it.
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    s.reported(p, buffer("a\nmine\nb\n", 3));
    s.mentioned(&sid("s"), p, "a\nold\nb\n");
    // A read after a mention is its newest view: the read alone.
    s.saw(&sid("s"), p, Some("a\nmine\nb\n".into()));
    assert_eq!(
        s.base_of_write(&sid("s"), p).as_deref(),
        Some("a\nmine\nb\n")
    );
    s.age_mentions(&sid("s"));
    s.mentioned(&sid("s"), p, "a\nb\n");
    let base = s.base_of_write(&sid("s"), p).unwrap();
    assert_eq!(&*base, "a\nb\n");
    let i = s.plan(p, &base, "agent\na\nb\n", Origin::Write);
    assert_eq!(i.merge.unwrap().text, "agent\na\nmine\nb\n");
    // Its own write is its newest view: the mention goes.
    s.saw(&sid("s"), p, Some("agent\na\nb\n".into()));
    assert_eq!(
        s.base_of_write(&sid("s"), p).as_deref(),
        Some("agent\na\nb\n")
    );
}

#[test]
fn the_view_a_write_came_from_is_the_one_nearest_its_text() {
    // The agent read the unsaved buffer, then the disk at a mention: the
    // base is the lines both hold, but its change is counted from the view
    // it wrote from, so the user's line it wrote back is not its own.
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    s.saw(&sid("s"), p, Some("a\nmine\nb\n".into()));
    s.mentioned(&sid("s"), p, "a\nb\n");
    assert_eq!(s.base_of_write(&sid("s"), p).as_deref(), Some("a\nb\n"));
    let from_read = s.view_of_write(&sid("s"), p, "a\nmine\nb\nagent\n");
    assert_eq!(from_read.as_deref(), Some("a\nmine\nb\n"));
    let from_disk = s.view_of_write(&sid("s"), p, "a\nb\nagent\n");
    assert_eq!(from_disk.as_deref(), Some("a\nb\n"));
    // One view: that one; none: nothing known.
    s.saw(&sid("s"), p, Some("a\nmine\nb\n".into()));
    assert_eq!(
        s.view_of_write(&sid("s"), p, "x\n").as_deref(),
        Some("a\nmine\nb\n")
    );
    assert_eq!(s.view_of_write(&sid("t"), p, "x\n"), None);
}

#[test]
fn the_disk_as_base_makes_a_conflict_of_the_users_line() {
    // What the merge was before the agent's view was its base.
    let mut s = FileRecords::new();
    let p = &cp("/w/hello.txt");
    // The user changed the line the agent read from the buffer and
    // changed again.
    s.reported(
        p,
        BufferText {
            text: "hello world!\n".into(),
            version: 7,
        },
    );
    let i = s.plan(p, "hello world\n", "hello ACP!\n", Origin::Write);
    assert_eq!(i.merge.unwrap().conflicts, 1);
    let i = s.plan(p, "hello world!\n", "hello ACP!\n", Origin::Write);
    assert_eq!(i.merge.unwrap().conflicts, 0);
}

#[test]
fn answers_keep_the_buffers_text_and_version() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    // Unknown buffer: no merge to offer; the editor answers stale.
    let i = s.plan(p, "a\nx\n", "b\nx\n", Origin::Write);
    assert_eq!(i.merge, None);
    let now = BufferText {
        text: "a\nx\nmine\n".into(),
        version: 3,
    };
    s.answered(&i, &Applied::Stale(now.clone()));
    assert_eq!(s.buffer(p), Some(&now));
    let i = s.plan(p, "a\nx\n", "b\nx\n", Origin::Write);
    assert_eq!(i.revision, 2);
    let merge = i.merge.clone().unwrap();
    assert_eq!((merge.version, merge.text.as_str()), (3, "b\nx\nmine\n"));
    s.answered(&i, &Applied::Merged { version: 4 });
    assert_eq!(
        s.buffer(p),
        Some(&BufferText {
            text: "b\nx\nmine\n".into(),
            version: 4
        })
    );
    s.answered(&i, &Applied::NoBuffer);
    assert_eq!(s.buffer(p), None);
}

#[test]
fn a_buffer_unsaved_at_the_prompt_is_merged_in_one_instruction() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    let unsaved = |text: &str, version| BufferText {
        text: text.into(),
        version,
    };
    s.reported(p, unsaved("a\nx\nmine\n", 4));
    let merge = s.plan(p, "a\nx\n", "b\nx\n", Origin::Write).merge.unwrap();
    assert_eq!((merge.version, merge.text.as_str()), (4, "b\nx\nmine\n"));
    // A newer version held is kept over an older report (a read answered
    // before an instruction, recorded after it).
    s.reported(p, unsaved("a\nx\nmine 2\n", 6));
    s.reported(p, unsaved("a\nx\nmine\n", 5));
    assert_eq!(s.buffer(p).unwrap().version, 6);
}

#[test]
fn a_disk_edit_that_came_while_a_write_was_on_its_way_stays_pending() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    s.reported(p, buffer("a\n", 2));
    // The agent's disk edit before the write: the write supersedes it.
    assert!(s.disk_changed(p, Some("a\n"), "d1\n"));
    let w = s.plan(p, "a\n", "w\n", Origin::Write);
    s.answered(
        &w,
        &Applied::Saved {
            old_content: Some("a\n".into()),
            version: 3,
        },
    );
    assert_eq!(s.pending(p), None);
    // One after the write was planned is newer than it: it stays, merged
    // on the text the write left.
    let w = s.plan(p, "w\n", "w2\n", Origin::Write);
    assert!(s.disk_changed(p, Some("w2\n"), "d2\n"));
    s.answered(
        &w,
        &Applied::Saved {
            old_content: Some("w\n".into()),
            version: 4,
        },
    );
    assert_eq!(s.pending(p), Some("d2\n"));
    assert_eq!(s.disk(p), Some("w2\n"));
    let i = s.plan_disk(p).unwrap();
    assert_eq!((i.content.as_str(), i.origin), ("d2\n", Origin::Disk));
}

#[test]
fn what_a_session_saw_goes_with_it() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    s.saw(&sid("s1"), p, Some("x\n".into()));
    s.saw(&sid("s2"), p, Some("y\n".into()));
    s.drop_session(&sid("s1"));
    assert_eq!(s.seen(&sid("s1"), p).as_deref(), None);
    assert_eq!(s.seen(&sid("s2"), p).as_deref(), Some("y\n"));
    s.saw(&sid("s2"), p, None);
    assert_eq!(s.seen(&sid("s2"), p).as_deref(), None);
}

fn buffer(text: &str, version: u64) -> BufferText {
    BufferText {
        text: text.into(),
        version,
    }
}

#[test]
fn a_disk_edit_merges_against_the_text_the_buffer_was_last_in_sync_with() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    // An agent write the buffer saved: the disk holds it.
    let i = s.plan(p, "a\nb\nc\n", "a\nB\nc\n", Origin::Write);
    s.answered(
        &i,
        &Applied::Saved {
            old_content: Some("a\nb\nc\n".into()),
            version: 2,
        },
    );
    assert_eq!(s.disk(p), Some("a\nB\nc\n"));
    // The user types; the agent then edits the file on disk itself.
    let r = s.user_reported(p, buffer("mine\na\nB\nc\n", 3), OnDisk::No);
    assert_eq!(
        r,
        Report {
            record: true,
            sync: false
        }
    );
    assert!(s.disk_changed(p, Some("stale before"), "a\nB\nC\n"));
    assert_eq!(s.pending(p), Some("a\nB\nC\n"));
    let i = s.plan_disk(p).unwrap();
    assert_eq!(i.origin, Origin::Disk);
    assert_eq!(i.content, "a\nB\nC\n");
    // Base = the synced disk text, not the `before` review passed.
    assert_eq!(
        i.merge,
        Some(PlannedMerge {
            version: 3,
            text: "mine\na\nB\nC\n".into(),
            conflicts: 0
        })
    );
    s.answered(&i, &Applied::Merged { version: 4 });
    assert_eq!(s.disk(p), Some("a\nB\nC\n"));
    assert_eq!(s.pending(p), None);
    assert_eq!(s.buffer(p), Some(&buffer("mine\na\nB\nC\n", 4)));
    // The same text seen again (the watcher after a diff): nothing to do.
    assert!(!s.disk_changed(p, None, "a\nB\nC\n"));
    assert_eq!(s.plan_disk(p), None);
}

#[test]
fn a_disk_edit_of_a_file_never_synced_uses_the_text_before_it() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    s.user_reported(p, buffer("x\nmine\n", 5), OnDisk::No);
    assert!(s.disk_changed(p, Some("x\n"), "X\n"));
    let merge = s.plan_disk(p).unwrap().merge.unwrap();
    assert_eq!((merge.text.as_str(), merge.conflicts), ("X\nmine\n", 0));
    // No base at all: no merge, and giving up leaves the buffer alone.
    let q = &cp("/w/b.txt");
    s.user_reported(q, buffer("mine\n", 1), OnDisk::No);
    assert!(s.disk_changed(q, None, "agent\n"));
    let i = s.plan_disk(q).unwrap();
    assert_eq!(i.merge, None);
    s.answered(&i, &Applied::Stale(buffer("mine\n", 1)));
    s.gave_up(&i, "");
    assert_eq!(s.pending(q), None);
}

#[test]
fn an_unmodified_buffer_reloads_a_disk_edit_and_is_in_sync_with_it() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    assert!(s.disk_changed(p, Some("a\n"), "b\n"));
    let i = s.plan_disk(p).unwrap();
    // The buffer's text is not known: only an unmodified buffer can
    // take it (a modified one answers stale and gets the merge next).
    assert_eq!(i.merge, None);
    s.answered(&i, &Applied::Reloaded { version: 9 });
    assert_eq!(s.disk(p), Some("b\n"));
    assert_eq!(s.buffer(p), Some(&buffer("b\n", 9)));
    assert_eq!(s.pending(p), None);
}

#[test]
fn a_disk_edit_waits_for_open_conflicts_and_is_planned_after_a_clean_report() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    let blocks = "<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nz\n";
    s.user_reported(p, buffer("old\nz\n", 1), OnDisk::Saved);
    s.user_reported(p, buffer(blocks, 2), OnDisk::No);
    assert!(s.disk_changed(p, None, "agent\nZ\n"));
    let i = s.plan_disk(p).unwrap();
    s.answered(&i, &Applied::Waiting);
    assert_eq!(s.pending(p), Some("agent\nZ\n"));
    // Typing with the blocks still open: recorded (by the reviews that
    // did not record the agent's newer text, which skip it themselves),
    // not planned.
    assert_eq!(
        s.user_reported(p, buffer(&format!("{blocks}typed\n"), 3), OnDisk::No),
        Report {
            record: true,
            sync: false
        }
    );
    // Resolved: planned again, from the synced base.
    assert_eq!(
        s.user_reported(p, buffer("mine\nz\n", 4), OnDisk::No),
        Report {
            record: true,
            sync: true
        }
    );
    let i = s.plan_disk(p).unwrap();
    let merge = i.merge.clone().unwrap();
    assert_eq!((merge.version, merge.conflicts), (4, 1));
    // A newer disk text arriving while this one was out stays pending.
    assert!(s.disk_changed(p, None, "agent\nZ2\n"));
    s.answered(&i, &Applied::Merged { version: 5 });
    assert_eq!(s.disk(p), Some("agent\nZ\n"));
    assert_eq!(s.pending(p), Some("agent\nZ2\n"));
}

#[test]
fn a_report_older_than_the_last_answer_is_not_the_users_edit() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    s.user_reported(p, buffer("a\n", 1), OnDisk::Read);
    s.user_reported(p, buffer("a\nmine\n", 2), OnDisk::No);
    assert!(s.disk_changed(p, None, "A\n"));
    let i = s.plan_disk(p).unwrap();
    s.answered(&i, &Applied::Merged { version: 4 });
    // Typed at 3, merged over at 4: the merge has that text already.
    let late = s.user_reported(p, buffer("a\nmine\nmore\n", 3), OnDisk::No);
    assert!(!late.record);
    assert_eq!(s.buffer(p).unwrap().version, 4);
    // A buffer read anew starts its versions over.
    assert!(!s.user_reported(p, buffer("A\n", 1), OnDisk::Read).record);
    assert!(s.user_reported(p, buffer("A\nx\n", 2), OnDisk::No).record);
}

#[test]
fn a_write_answered_waiting_waits_on_disk_and_a_save_overrides_it() {
    let mut s = FileRecords::new();
    let p = &cp("/w/a.txt");
    s.user_reported(p, buffer("old\n", 1), OnDisk::Read);
    let i = s.plan(p, "old\n", "new\n", Origin::Write);
    s.answered(&i, &Applied::Waiting);
    assert_eq!((s.pending(p), s.disk(p)), (Some("new\n"), Some("old\n")));
    // Not known to conflict yet: a report plans it as a disk edit, even
    // with conflict blocks open (it may merge around them).
    let blocks = "<<<<<<< buffer\nmine\n=======\nold\n>>>>>>> agent\n";
    assert_eq!(
        s.user_reported(p, buffer(blocks, 2), OnDisk::No),
        Report {
            record: true,
            sync: true
        }
    );
    // The user saves over it (Neovim asked whether to): the disk is theirs.
    let r = s.user_reported(p, buffer("mine\n", 3), OnDisk::Saved);
    assert_eq!(
        r,
        Report {
            record: true,
            sync: false
        }
    );
    assert_eq!((s.pending(p), s.disk(p)), (None, Some("mine\n")));
    // A read is the buffer's state, never the user's edit.
    assert!(!s.user_reported(p, buffer("mine\n", 4), OnDisk::Read).record);
    // A restore merged into unsaved edits leaves the disk alone.
    let i = s.plan(p, "mine\n", "restored\n", Origin::Restore);
    s.answered(&i, &Applied::Merged { version: 4 });
    assert_eq!(s.disk(p), Some("mine\n"));
}

/// No buffer: every instruction finds none.
struct NoBuffers;

#[async_trait::async_trait]
impl Buffers for NoBuffers {
    async fn apply(&self, _: &Instruction) -> crate::error::Result<Applied> {
        Ok(Applied::NoBuffer)
    }
}

#[test]
fn a_prompt_embedding_a_new_file_under_a_symlinked_dir_is_keyed_like_the_agents_requests() {
    // The prompt's embedded text is what the agent saw. Keyed by std's
    // canonicalize, a file not on disk yet kept its path as written (the
    // symlinked directory and `..` in it), so the agent's write to the
    // resolved path found no base. Failed before the one normaliser.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("real/sub")).unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    let sync = BufferSync::new(std::sync::Arc::new(NoBuffers));
    let uri = format!("file://{}/link/sub/../new.txt", root.display());
    let resource = crate::schema::EmbeddedResource::new(
        crate::schema::EmbeddedResourceResource::TextResourceContents(
            crate::schema::TextResourceContents::new("typed\n", uri),
        ),
    );
    sync.saw_prompt(
        &sid("s"),
        &[crate::schema::ContentBlock::Resource(resource)],
    );
    let agents_path = crate::path::CanonicalPath::resolve(&root.join("real/new.txt")).unwrap();
    assert_eq!(
        sync.files().seen(&sid("s"), &agents_path).as_deref(),
        Some("typed\n")
    );
}

/// One open buffer that takes every merge planned at its version.
#[derive(Default)]
struct MergingBuffer {
    taken: parking_lot::Mutex<Vec<Instruction>>,
}

#[async_trait::async_trait]
impl Buffers for MergingBuffer {
    async fn apply(&self, instruction: &Instruction) -> crate::error::Result<Applied> {
        self.taken.lock().push(instruction.clone());
        Ok(match &instruction.merge {
            Some(merge) => Applied::Merged {
                version: merge.version + 1,
            },
            None => Applied::NoBuffer,
        })
    }
}

#[tokio::test]
async fn an_agent_write_and_an_editor_report_in_two_spellings_merge_as_one_file() {
    // The agent names the file through a symlinked directory, the editor
    // through `sub/..`: both resolve to one key, so the write is merged into
    // the unsaved buffer the editor reported (keyed by its spelling, the
    // write found no buffer text and the instruction carried no merge).
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("real/sub")).unwrap();
    std::fs::write(root.join("real/a.txt"), "one\ntwo\n").unwrap();
    std::os::unix::fs::symlink(root.join("real"), root.join("link")).unwrap();
    let workspace = crate::edits::fs::Workspace::new(vec![root.clone()]);
    let buffers = std::sync::Arc::new(MergingBuffer::default());
    let sync = BufferSync::new(buffers.clone());

    let editors = CanonicalPath::resolve(&root.join("real/sub/../a.txt")).unwrap();
    // The user's edit (nothing of the agent's waits for the buffer).
    assert!(
        sync.user_reported(&editors, buffer("one\ntwo\nmine\n", 3), OnDisk::No)
            .await
    );
    let agents = workspace.resolve(&root.join("link/a.txt")).unwrap();
    assert_eq!(agents, editors);
    let outcome = sync
        .write(&WriteTextFile {
            session_id: sid("s"),
            path: agents.clone(),
            content: "ONE\ntwo\n".into(),
            kind: WriteKind::Agent,
        })
        .await
        .unwrap();
    assert_eq!(
        outcome,
        WriteOutcome::MergedUnsaved {
            seen: Some("one\ntwo\n".into()),
            buffer: "ONE\ntwo\nmine\n".into(),
        }
    );
    let taken = buffers.taken.lock();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].merge.as_ref().map(|m| m.version), Some(3));
    let state = sync.state(&editors).unwrap();
    assert_eq!(
        state.buffer.map(|b| (b.text.to_string(), b.version)),
        Some(("ONE\ntwo\nmine\n".to_owned(), 4))
    );
}
