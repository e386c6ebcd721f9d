//! Line splitting and line diffs, shared by edit review and [`crate::edits::merge`].
//!
//! Lines keep their terminators (`"a\r\n"`, `"b\n"`, or a last `"c"` with
//! none), so joining lines gives back the exact bytes: CRLF files, files
//! without a trailing newline and empty files round-trip without any
//! normalisation. The price is that a change of line ending is a change of
//! the line, which is what it is on disk.

use std::hash::Hash;
use std::ops::Range;

use imara_diff::{Algorithm, Diff, InternedInput, TokenSource};

/// Splits `text` into lines that keep their terminators. An empty text has
/// no lines.
pub(crate) fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Concatenates lines back into text.
pub(crate) fn join_lines<S: AsRef<str>>(lines: &[S]) -> String {
    let mut out = String::with_capacity(lines.iter().map(|l| l.as_ref().len()).sum());
    for line in lines {
        out.push_str(line.as_ref());
    }
    out
}

/// One changed region of a line diff: the `old` lines were replaced by the
/// `new` lines. Either range may be empty (pure insertion or deletion), not
/// both. Consecutive changes of one diff are separated by at least one
/// unchanged line, in both sequences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    pub old: Range<usize>,
    pub new: Range<usize>,
}

/// The changed regions between two line sequences, in order.
///
/// Myers diff with git's heuristics, as imara-diff implements it: linear
/// in practice (optimized, a 20,000-line file with 3,000 scattered edits
/// diffs in about a millisecond; imara-diff's histogram algorithm took over
/// half a second on that input, so it is not used). The result is post-processed with the
/// indentation heuristic, so an inserted function is one hunk that starts
/// at its first line, not at the closing brace of the previous one.
pub(crate) fn changes(old: &[&str], new: &[&str]) -> Vec<Change> {
    let Some(input) = interned(old, new) else {
        return whole(old.len(), new.len());
    };
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    diff.postprocess_lines(&input);
    let found = changes_of(&diff);
    if holds(&found, &input.before, &input.after) {
        found
    } else {
        // Never seen; a correct but coarse answer beats a wrong one.
        tracing::warn!(
            "line diff returned an inconsistent result; showing the whole file as changed"
        );
        whole(old.len(), new.len())
    }
}

/// Pairs `(old_index, new_index)` of items that a diff keeps, in order.
/// Used to follow hunks from one review to the next.
pub(crate) fn matches<T: Eq + Hash>(old: &[T], new: &[T]) -> Vec<(usize, usize)> {
    let Some(input) = interned(old, new) else {
        return Vec::new();
    };
    let found = changes_of(&Diff::compute(Algorithm::Myers, &input));
    if !holds(&found, &input.before, &input.after) {
        return Vec::new();
    }
    let mut out = Vec::new();
    let (mut o, mut n) = (0, 0);
    for change in found.iter().chain([&Change {
        old: old.len()..old.len(),
        new: new.len()..new.len(),
    }]) {
        while o < change.old.start {
            out.push((o, n));
            o += 1;
            n += 1;
        }
        (o, n) = (change.old.end, change.new.end);
    }
    out
}

fn changes_of(diff: &Diff) -> Vec<Change> {
    diff.hunks()
        .map(|h| Change {
            old: h.before.start as usize..h.before.end as usize,
            new: h.after.start as usize..h.after.end as usize,
        })
        .collect()
}

/// The inputs as tokens, or `None` when a side is too long for imara-diff
/// (it asserts on 2^31 items; a file that long is one big change).
fn interned<'a, T: Eq + Hash>(old: &'a [T], new: &'a [T]) -> Option<InternedInput<&'a T>> {
    const LIMIT: usize = i32::MAX as usize - 1;
    if old.len() > LIMIT || new.len() > LIMIT {
        return None;
    }
    Some(InternedInput::new(Items(old), Items(new)))
}

/// A slice as a token source.
struct Items<'a, T>(&'a [T]);

impl<'a, T: Eq + Hash> TokenSource for Items<'a, T> {
    type Token = &'a T;
    type Tokenizer = std::slice::Iter<'a, T>;

    fn tokenize(&self) -> Self::Tokenizer {
        self.0.iter()
    }

    fn estimate_tokens(&self) -> u32 {
        u32::try_from(self.0.len()).unwrap_or(u32::MAX)
    }
}

/// Everything replaced by everything.
fn whole(old: usize, new: usize) -> Vec<Change> {
    if old == 0 && new == 0 {
        return Vec::new();
    }
    vec![Change {
        old: 0..old,
        new: 0..new,
    }]
}

/// True when `changes` are non-empty, ordered, separated by at least one
/// kept item, in bounds, and every kept item is equal on both sides.
fn holds<T: PartialEq>(changes: &[Change], old: &[T], new: &[T]) -> bool {
    let (mut o, mut n) = (0, 0);
    let end = Change {
        old: old.len()..old.len(),
        new: new.len()..new.len(),
    };
    for (i, change) in changes.iter().chain([&end]).enumerate() {
        let is_end = i == changes.len();
        let kept_old = change.old.start.checked_sub(o);
        let kept_new = change.new.start.checked_sub(n);
        match (kept_old, kept_new) {
            (Some(a), Some(b)) if a == b && (a > 0 || i == 0 || is_end) => {}
            _ => return false,
        }
        if change.old.end > old.len()
            || change.new.end > new.len()
            || change.old.start > change.old.end
            || change.new.start > change.new.end
            || (!is_end && change.old.is_empty() && change.new.is_empty())
            || old[o..change.old.start] != new[n..change.new.start]
        {
            return false;
        }
        (o, n) = (change.old.end, change.new.end);
    }
    true
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    #[test]
    fn lines_keep_their_terminators() {
        assert_eq!(split_lines("a\nb\r\nc"), vec!["a\n", "b\r\n", "c"]);
        assert_eq!(split_lines("a\n"), vec!["a\n"]);
        assert!(split_lines("").is_empty());
        assert_eq!(split_lines("\n\n"), vec!["\n", "\n"]);
        for text in ["a\nb\r\nc", "", "x\n", "\r\n\r\n"] {
            assert_eq!(join_lines(&split_lines(text)), text);
        }
    }

    #[test]
    fn changes_are_separated_by_unchanged_lines() {
        let old = split_lines("a\nb\nc\nd\ne\n");
        let new = split_lines("a\nB\nc\nd\nE\nf\n");
        assert_eq!(
            changes(&old, &new),
            vec![
                Change {
                    old: 1..2,
                    new: 1..2
                },
                Change {
                    old: 4..5,
                    new: 4..6
                },
            ]
        );
    }

    #[test]
    fn insertion_and_deletion_have_empty_ranges() {
        let old = split_lines("a\nb\n");
        assert_eq!(
            changes(&old, &split_lines("a\nx\nb\n")),
            vec![Change {
                old: 1..1,
                new: 1..2
            }]
        );
        assert_eq!(
            changes(&old, &split_lines("b\n")),
            vec![Change {
                old: 0..1,
                new: 0..0
            }]
        );
        assert!(changes(&old, &old).is_empty());
    }

    /// Rebuilds `new` from `old` and the changes.
    fn apply(old: &[&str], new: &[&str], found: &[Change]) -> String {
        let mut out = String::new();
        let mut at = 0;
        for c in found {
            out.push_str(&join_lines(&old[at..c.old.start]));
            out.push_str(&join_lines(&new[c.new.clone()]));
            at = c.old.end;
        }
        out.push_str(&join_lines(&old[at..]));
        out
    }

    #[test]
    fn repeated_lines_give_consistent_changes() {
        let (a, b) = ("c\nc\n}\nb\n", "c\n}\n\n}\nb\n");
        let (old, new) = (split_lines(a), split_lines(b));
        let found = changes(&old, &new);
        assert_eq!(apply(&old, &new, &found), b);
        for pair in found.windows(2) {
            assert!(pair[0].old.end < pair[1].old.start);
            assert!(pair[0].new.end < pair[1].new.start);
        }
        // Equal lines outside the changes really are equal.
        assert_eq!(
            found,
            vec![Change {
                old: 1..2,
                new: 1..3
            }]
        );
    }

    #[test]
    fn inconsistent_changes_are_detected() {
        let (old, new) = (split_lines("a\nb\n"), split_lines("a\nc\n"));
        let c = |o: Range<usize>, n: Range<usize>| Change { old: o, new: n };
        assert!(holds(&[c(1..2, 1..2)], &old, &new));
        // Claims "a" changed and "b" did not.
        assert!(!holds(&[c(0..1, 0..1)], &old, &new));
        // Out of bounds, touching, unordered.
        assert!(!holds(&[c(1..3, 1..2)], &old, &new));
        assert!(!holds(&[c(0..1, 0..1), c(1..2, 1..2)], &old, &new));
        assert!(!holds(&[c(1..2, 1..2), c(0..1, 0..1)], &old, &new));
        assert!(!holds(&[c(1..1, 1..1), c(1..2, 1..2)], &old, &new));
        assert!(holds(&whole(2, 2), &old, &new));
        assert!(holds(&[], &old, &old));
        assert!(whole(0, 0).is_empty());
    }

    #[test]
    fn matches_pair_up_kept_items_in_order() {
        assert_eq!(
            matches(&["a", "b", "c", "d"], &["x", "a", "c", "d", "y"]),
            vec![(0, 1), (2, 2), (3, 3)]
        );
        assert!(matches::<&str>(&[], &["a"]).is_empty());
        assert_eq!(matches(&[1, 2], &[1, 2]), vec![(0, 0), (1, 1)]);
    }

    #[test]
    fn an_inserted_block_starts_at_its_own_first_line() {
        // Without the indentation heuristic the hunk would start at the
        // first closing brace and end inside the new function.
        let old = split_lines("fn a() {\n}\n\nfn c() {\n}\n");
        let new = split_lines("fn a() {\n}\n\nfn b() {\n}\n\nfn c() {\n}\n");
        let found = changes(&old, &new);
        assert_eq!(found.len(), 1);
        assert_eq!(join_lines(&new[found[0].new.clone()]), "fn b() {\n}\n\n");
    }

    #[test]
    fn a_missing_final_newline_is_a_change_of_the_last_line() {
        let old = split_lines("a\nb");
        let new = split_lines("a\nb\n");
        assert_eq!(
            changes(&old, &new),
            vec![Change {
                old: 1..2,
                new: 1..2
            }]
        );
    }
}
