//! Edit review and three-way merge through the public API: end-to-end flows
//! as an editor drives them, and property tests on random edits.

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::collections::HashSet;
use std::path::Path;

use acp_client::edits::hunks::{
    EditTracker, FileReview, Hunk, HunkId, RejectOutcome, ToolDiffPlacement,
};
use acp_client::edits::merge::{merge3, ConflictLabels, MergeRegion, MergeResult};
use acp_client::path::CanonicalPath;
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;

const FILE: &str = "/project/src/app.py";

/// The file's key, made once as the edit layer makes it.
fn path() -> &'static CanonicalPath {
    static PATH: std::sync::LazyLock<CanonicalPath> =
        std::sync::LazyLock::new(|| CanonicalPath::resolve(Path::new(FILE)).unwrap());
    &PATH
}

fn split(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_owned).collect()
}

fn content(outcome: RejectOutcome) -> String {
    match outcome {
        RejectOutcome::Write { content } => content,
        RejectOutcome::Delete => panic!("expected content to write, got a delete"),
    }
}

// --- Flows -----------------------------------------------------------------

/// Claude edits on disk and reports snippets; the user reviews hunk by hunk
/// while the agent keeps going.
#[test]
fn claude_style_snippet_edits_reviewed_hunk_by_hunk() {
    let mut t = EditTracker::new();
    let v0 = "import os\n\ndef main():\n    print('hi')\n\nmain()\n";
    let v1 = "import os\n\ndef main():\n    print('hello')\n\nmain()\n";
    assert_eq!(
        t.record_tool_diff(path(), Some("print('hi')"), "print('hello')", Some(v1)),
        ToolDiffPlacement::Snippet
    );
    let v2 = "import os\nimport sys\n\ndef main():\n    print('hello')\n\nmain()\n";
    assert_eq!(
        t.record_tool_diff(
            path(),
            Some("import os\n"),
            "import os\nimport sys\n",
            Some(v2)
        ),
        ToolDiffPlacement::Tracked
    );
    let review = t.review(path()).unwrap();
    assert_eq!(review.baseline.as_deref(), Some(v0));
    assert_eq!(review.hunks.len(), 2);
    let (import, print) = (review.hunks[0].id, review.hunks[1].id);

    // Keep the import, drop the print change.
    t.accept_hunk(path(), import).unwrap();
    let written = content(t.reject_hunk(path(), print).unwrap());
    assert_eq!(
        written,
        "import os\nimport sys\n\ndef main():\n    print('hi')\n\nmain()\n"
    );
    assert!(t.is_empty());
}

/// The agent changes a file whose buffer has unsaved edits: the editor
/// merges instead of reloading, and the user's typing survives.
#[test]
fn agent_edit_merged_into_an_unsaved_buffer() {
    let mut t = EditTracker::new();
    let disk = "a = 1\nb = 2\nc = 3\nd = 4\n";
    let buffer = "a = 1\nb = 2  # user note\nc = 3\nd = 4\n"; // unsaved
    let agent = "a = 1\nb = 2\nc = 3\nd = 40\n";
    t.record_write(path(), Some(disk), agent);

    let merged = merge3(disk, buffer, agent);
    let text = merged.clean_text().unwrap();
    assert_eq!(text, "a = 1\nb = 2  # user note\nc = 3\nd = 40\n");
    // The buffer now differs from the agent's content by the user's edit.
    t.record_user_edit(path(), Some(&text));
    let review = t.review(path()).unwrap();
    assert_eq!(review.hunks.len(), 1);
    assert_eq!(review.hunks[0].new_lines, split("d = 40\n"));
    // Rejecting the agent's hunk keeps the user's note.
    assert_eq!(
        content(t.reject_hunk(path(), review.hunks[0].id).unwrap()),
        "a = 1\nb = 2  # user note\nc = 3\nd = 4\n"
    );
}

/// Overlapping edits become a conflict rendered with markers, both sides
/// intact.
#[test]
fn overlapping_buffer_and_agent_edits_render_as_a_conflict() {
    let merged = merge3("x\ny\nz\n", "x\nY user\nz\n", "x\nY agent\nz\n");
    assert_eq!(merged.conflict_count(), 1);
    let labels = ConflictLabels {
        ours: "unsaved".into(),
        theirs: "claude".into(),
        base: Some("before".into()),
    };
    assert_eq!(
        merged.render(&labels),
        "x\n<<<<<<< unsaved\nY user\n||||||| before\ny\n=======\nY agent\n>>>>>>> claude\nz\n"
    );
}

// --- Helpers for the properties --------------------------------------------

/// Applies hunks (all from one review) to the baseline.
fn apply(baseline: &[String], hunks: &[&Hunk]) -> Vec<String> {
    let mut out = baseline.to_vec();
    let mut sorted = hunks.to_vec();
    sorted.sort_by_key(|h| std::cmp::Reverse(h.old_start));
    for h in sorted {
        out.splice(h.old_range(), h.new_lines.iter().cloned());
    }
    out
}

fn lines_of(text: Option<&str>) -> Vec<String> {
    text.map(split).unwrap_or_default()
}

/// A file as lines from a small alphabet (so lines repeat, as `}` and blank
/// lines do in code), mostly LF with some CRLF, sometimes without a final
/// newline.
fn text() -> impl Strategy<Value = String> {
    (
        prop::collection::vec((0..6usize, prop::bool::weighted(0.1)), 0..14),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(lines, no_final_newline)| {
            let words = ["a", "b", "c", "}", "", "fn x() {"];
            let mut s: String = lines
                .iter()
                .map(|&(w, crlf)| format!("{}{}", words[w], if crlf { "\r\n" } else { "\n" }))
                .collect();
            if no_final_newline && !s.is_empty() {
                s.pop();
                if s.ends_with('\r') {
                    s.pop();
                }
            }
            s
        })
}

/// One per-line operation of a random edit.
#[derive(Debug, Clone)]
enum Op {
    Keep,
    Delete,
    Replace(Vec<String>),
    InsertBefore(Vec<String>),
}

fn op(new_line: BoxedStrategy<String>) -> impl Strategy<Value = Op> {
    let lines = prop::collection::vec(new_line, 1..3);
    prop_oneof![
        6 => Just(Op::Keep),
        1 => Just(Op::Delete),
        1 => lines.clone().prop_map(Op::Replace),
        1 => lines.prop_map(Op::InsertBefore),
    ]
}

/// `ops[i]` applies to line `i`; the last op (past the end) may only insert.
fn edit(base: &[String], ops: &[Op]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        let line = base.get(i);
        match (op, line) {
            (Op::Keep, Some(l)) => out.push(l.clone()),
            (Op::Delete, _) | (Op::Keep, None) => {}
            (Op::Replace(new), Some(_)) | (Op::Replace(new), None) => {
                out.extend(new.iter().cloned())
            }
            (Op::InsertBefore(new), l) => {
                out.extend(new.iter().cloned());
                out.extend(l.cloned());
            }
        }
    }
    out
}

/// A base text and an edited version of it.
fn base_and_edit(new_line: BoxedStrategy<String>) -> impl Strategy<Value = (String, String)> {
    text().prop_flat_map(move |base| {
        let n = split(&base).len() + 1;
        let ops = prop::collection::vec(op(new_line.clone()), n..=n);
        (Just(base), ops).prop_map(|(base, ops)| {
            let edited = edit(&split(&base), &ops).concat();
            (base, edited)
        })
    })
}

fn alphabet_line() -> BoxedStrategy<String> {
    prop_oneof![
        Just("a\n".to_owned()),
        Just("}\n".to_owned()),
        Just("\n".to_owned()),
        Just("new\n".to_owned()),
        Just("z\r\n".to_owned()),
    ]
    .boxed()
}

/// What a decision sequence does: `true` accepts.
fn decisions() -> impl Strategy<Value = Vec<(usize, bool)>> {
    prop::collection::vec((0..64usize, any::<bool>()), 0..12)
}

fn all_lines(merged: &MergeResult) -> (Vec<String>, Vec<String>) {
    let (mut result, mut conflict_ours) = (Vec::new(), Vec::new());
    for region in &merged.regions {
        match region {
            MergeRegion::Clean { lines } => result.extend(lines.iter().cloned()),
            MergeRegion::Conflict(c) => conflict_ours.extend(c.ours.iter().cloned()),
        }
    }
    (result, conflict_ours)
}

fn config() -> ProptestConfig {
    // Modest by default: CI has 2 cores and the whole suite must stay fast.
    // `PROPTEST_CASES=5000` runs a deeper search by hand.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(96);
    ProptestConfig {
        cases,
        // Failing inputs are saved beside this file, to be replayed first.
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

// --- Hunk properties -------------------------------------------------------

proptest! {
    #![proptest_config(config())]

    /// Hunks are a correct edit script: they sit where they claim, and
    /// applying all of them to the baseline gives the current content.
    #[test]
    fn hunks_rebuild_the_current_content((base, new) in base_and_edit(alphabet_line())) {
        let mut t = EditTracker::new();
        t.record_write(path(), Some(&base), &new);
        let Some(review) = t.review(path()) else {
            prop_assert_eq!(&base, &new);
            return Ok(());
        };
        let (old_lines, new_lines) = (lines_of(review.baseline.as_deref()), lines_of(review.current.as_deref()));
        for h in &review.hunks {
            prop_assert_eq!(&old_lines[h.old_range()], &h.old_lines[..]);
            prop_assert_eq!(&new_lines[h.new_range()], &h.new_lines[..]);
        }
        let all: Vec<&Hunk> = review.hunks.iter().collect();
        prop_assert_eq!(apply(&old_lines, &all).concat(), new);
    }

    /// Rejecting every hunk, in any order, gives the baseline back exactly.
    #[test]
    fn rejecting_all_hunks_restores_the_baseline(
        (base, new) in base_and_edit(alphabet_line()),
        order in prop::collection::vec(0..64usize, 16),
        created in prop::bool::weighted(0.2),
    ) {
        let mut t = EditTracker::new();
        let baseline = (!created).then_some(base.as_str());
        if t.record_write(path(), baseline, &new).is_none() {
            return Ok(());
        }
        let mut last = None;
        let mut picks = order.into_iter();
        while let Some(review) = t.review(path()) {
            if review.hunks.is_empty() {
                last = Some(t.reject_file(path()).unwrap());
                break;
            }
            let pick = picks.next().unwrap_or(0) % review.hunks.len();
            last = Some(t.reject_hunk(path(), review.hunks[pick].id).unwrap());
        }
        let expected = match baseline {
            Some(b) => RejectOutcome::Write { content: b.to_owned() },
            None => RejectOutcome::Delete,
        };
        prop_assert_eq!(last, Some(expected));
        prop_assert!(t.is_empty());
    }

    /// Accepting and rejecting hunks in any order ends with exactly the
    /// accepted hunks applied, and hunk ids never change under decisions.
    #[test]
    fn decisions_in_any_order_are_consistent(
        (base, new) in base_and_edit(alphabet_line()),
        steps in decisions(),
    ) {
        let mut t = EditTracker::new();
        if t.record_write(path(), Some(&base), &new).is_none() {
            return Ok(());
        }
        let initial: FileReview = t.review(path()).unwrap();
        let mut accepted: Vec<HunkId> = Vec::new();
        let mut written = new.clone();
        for (pick, accept) in steps {
            let Some(review) = t.review(path()) else { break };
            for h in &review.hunks {
                let first = initial.hunk(h.id);
                prop_assert!(first.is_some(), "hunk {} appeared from nowhere", h.id);
                let first = first.unwrap();
                prop_assert_eq!(&first.old_lines, &h.old_lines);
                prop_assert_eq!(&first.new_lines, &h.new_lines);
            }
            if review.hunks.is_empty() {
                break;
            }
            let id = review.hunks[pick % review.hunks.len()].id;
            if accept {
                t.accept_hunk(path(), id).unwrap();
                accepted.push(id);
            } else {
                written = content(t.reject_hunk(path(), id).unwrap());
            }
        }
        // Settle the rest: accept them, so the result is the current content.
        for h in t.review(path()).map(|r| r.hunks).unwrap_or_default() {
            accepted.push(h.id);
        }
        t.accept_all();
        let chosen: Vec<&Hunk> = initial.hunks.iter().filter(|h| accepted.contains(&h.id)).collect();
        let expected = apply(&split(&base), &chosen).concat();
        prop_assert_eq!(written, expected);
    }

    /// After the user edits a file under review, the hunks still rebuild
    /// exactly what the user has, and every line is either unchanged from
    /// the baseline or shown in a hunk: nothing is hidden.
    #[test]
    fn user_edits_keep_the_review_consistent(
        (base, agent) in base_and_edit(alphabet_line()),
        user_ops in prop::collection::vec(op(user_line()), 16),
    ) {
        let mut t = EditTracker::new();
        if t.record_write(path(), Some(&base), &agent).is_none() {
            return Ok(());
        }
        let agent_lines = split(&agent);
        let mut ops = user_ops;
        ops.resize(agent_lines.len() + 1, Op::Keep);
        let user = edit(&agent_lines, &ops).concat();
        let Some(summary) = t.record_user_edit(path(), Some(&user)) else {
            return Ok(());
        };
        let review = t.review(path()).unwrap();
        prop_assert_eq!(summary.hunks, review.hunks.len());
        prop_assert_eq!(review.current.as_deref(), Some(user.as_str()));
        let old_lines = lines_of(review.baseline.as_deref());
        let new_lines = split(&user);
        for h in &review.hunks {
            prop_assert_eq!(&old_lines[h.old_range()], &h.old_lines[..]);
            prop_assert_eq!(&new_lines[h.new_range()], &h.new_lines[..]);
        }
        let all: Vec<&Hunk> = review.hunks.iter().collect();
        prop_assert_eq!(apply(&old_lines, &all).concat(), user);
    }

    /// An accepted hunk stays accepted and the others keep their ids when
    /// the agent edits elsewhere in the file.
    #[test]
    fn ids_survive_agent_edits_elsewhere(
        n in 3..20usize,
        ops in prop::collection::vec(0..4u8, 20),
        accept in prop::collection::vec(any::<bool>(), 20),
    ) {
        // Unique lines, so the diff has one right answer.
        let base: Vec<String> = (0..n).map(|i| format!("line {i}\n")).collect();
        let mut current = Vec::new();
        for (i, line) in base.iter().enumerate() {
            // The last line stays, so an append is always a separate hunk.
            match if i + 1 == n { 0 } else { ops[i] } {
                1 => {}
                2 => current.push(format!("changed {i}\n")),
                3 => {
                    current.push(format!("inserted {i}\n"));
                    current.push(line.clone());
                }
                _ => current.push(line.clone()),
            }
        }
        let mut t = EditTracker::new();
        if t.record_write(path(), Some(&base.concat()), &current.concat()).is_none() {
            return Ok(());
        }
        let hunks = t.review(path()).unwrap().hunks;
        let mut kept = Vec::new();
        for (h, &yes) in hunks.iter().zip(&accept) {
            if yes {
                t.accept_hunk(path(), h.id).unwrap();
            } else {
                kept.push(h.clone());
            }
        }
        let before = current.concat();
        current.push("appended\n".to_owned());
        // `old` matters when every hunk was accepted and the file left review.
        t.record_write(path(), Some(&before), &current.concat());
        let after = t.review(path()).unwrap().hunks;
        prop_assert_eq!(after.len(), kept.len() + 1);
        for (before, now) in kept.iter().zip(&after) {
            prop_assert_eq!(before.id, now.id);
            prop_assert_eq!(&before.new_lines, &now.new_lines);
        }
        prop_assert_eq!(&after[after.len() - 1].new_lines, &vec!["appended\n".to_owned()]);
    }
}

// --- Merge properties ------------------------------------------------------

/// A user's line: never in the base, and unique.
fn user_line() -> BoxedStrategy<String> {
    prop_oneof![
        3 => (0..1000u32).prop_map(|i| format!("user {i}\n")),
        1 => alphabet_line(),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn unchanged_ours_takes_theirs((base, theirs) in base_and_edit(alphabet_line())) {
        prop_assert_eq!(merge3(&base, &base, &theirs).clean_text(), Some(theirs));
    }

    #[test]
    fn unchanged_theirs_takes_ours((base, ours) in base_and_edit(alphabet_line())) {
        prop_assert_eq!(merge3(&base, &ours, &base).clean_text(), Some(ours));
    }

    #[test]
    fn the_same_edit_on_both_sides_is_clean((base, both) in base_and_edit(alphabet_line())) {
        prop_assert_eq!(merge3(&base, &both, &both).clean_text(), Some(both));
    }

    /// No line the user typed is ever lost silently: it is in the merged
    /// text or in a conflict's `ours` side.
    #[test]
    fn no_user_line_is_lost(
        (base, ours) in base_and_edit(user_line()),
        theirs_ops in prop::collection::vec(op(alphabet_line()), 16),
    ) {
        let base_lines = split(&base);
        let mut ops = theirs_ops;
        ops.truncate(base_lines.len() + 1);
        let theirs = edit(&base_lines, &ops).concat();
        let merged = merge3(&base, &ours, &theirs);
        let (result, conflict_ours) = all_lines(&merged);
        let base_set: HashSet<&String> = base_lines.iter().collect();
        for line in split(&ours) {
            if !base_set.contains(&line) {
                prop_assert!(
                    result.contains(&line) || conflict_ours.contains(&line),
                    "user line {:?} lost: base {:?} ours {:?} theirs {:?} -> {:?}",
                    line, base, ours, theirs, merged
                );
            }
        }
        // The rendering with markers holds every user line too.
        let rendered = merge3(&base, &ours, &theirs).render(&ConflictLabels::default());
        for line in split(&ours) {
            if !base_set.contains(&line) {
                let bare = line.trim_end_matches(['\n', '\r']);
                prop_assert!(rendered.contains(bare));
            }
        }
    }

    /// Edits in disjoint regions (separated by at least one untouched line)
    /// always merge cleanly, with both applied.
    #[test]
    fn disjoint_edits_merge_cleanly(
        n in 2..16usize,
        split_at in 0..16usize,
        user_ops in prop::collection::vec(op(user_line()), 17),
        agent_ops in prop::collection::vec(op((0..1000u32).prop_map(|i| format!("agent {i}\n")).boxed()), 17),
    ) {
        // Unique base lines; line `k` is the untouched separator.
        let base: Vec<String> = (0..n).map(|i| format!("base {i}\n")).collect();
        let k = split_at % n;
        // The user edits lines before k (and may insert right before k); the
        // agent edits lines after k (and may insert right after k).
        let user: Vec<Op> = user_ops
            .iter()
            .take(n + 1)
            .enumerate()
            .map(|(i, op)| match op {
                _ if i < k => op.clone(),
                Op::InsertBefore(_) if i == k => op.clone(),
                _ => Op::Keep,
            })
            .collect();
        let agent: Vec<Op> = agent_ops
            .iter()
            .take(n + 1)
            .enumerate()
            .map(|(i, op)| if i > k { op.clone() } else { Op::Keep })
            .collect();
        let both: Vec<Op> = user[..=k].iter().chain(&agent[k + 1..]).cloned().collect();
        let ours = edit(&base, &user).concat();
        let theirs = edit(&base, &agent).concat();
        let expected = edit(&base, &both).concat();
        let merged = merge3(&base.concat(), &ours, &theirs);
        prop_assert_eq!(merged.clean_text(), Some(expected));
    }
}
