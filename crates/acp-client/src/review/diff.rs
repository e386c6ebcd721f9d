//! Line splitting and line diffs, shared by edit review and [`crate::merge`].
//!
//! Lines keep their terminators (`"a\r\n"`, `"b\n"`, or a last `"c"` with
//! none), so joining lines gives back the exact bytes: CRLF files, files
//! without a trailing newline and empty files round-trip without any
//! normalisation. The price is that a change of line ending is a change of
//! the line, which is what it is on disk.

use std::ops::Range;
use std::time::{Duration, Instant};

use similar::{capture_diff_slices_deadline, Algorithm, DiffTag};

/// How long one diff may search for a minimal result. Past this the diff is
/// still correct, only coarser; it bounds the worst case (a large file
/// rewritten end to end) so a review never stalls the editor.
const DIFF_DEADLINE: Duration = Duration::from_millis(500);

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
/// Patience diff: it anchors on lines that occur once on each side, which
/// keeps hunks of source code aligned with what a person changed (a moved
/// closing brace does not drag neighbouring functions into the hunk).
pub(crate) fn changes(old: &[&str], new: &[&str]) -> Vec<Change> {
    let deadline = Instant::now().checked_add(DIFF_DEADLINE);
    let ops = capture_diff_slices_deadline(Algorithm::Patience, old, new, deadline);
    let mut out: Vec<Change> = Vec::new();
    let mut open: Option<Change> = None;
    for op in ops {
        let (tag, old_range, new_range) = op.as_tag_tuple();
        if tag == DiffTag::Equal {
            if let Some(change) = open.take() {
                out.push(change);
            }
            continue;
        }
        match open.as_mut() {
            // Several non-equal ops in a row (a delete then an insert) are one
            // region for a reader.
            Some(change) => {
                change.old.end = old_range.end;
                change.new.end = new_range.end;
            }
            None => {
                open = Some(Change {
                    old: old_range,
                    new: new_range,
                })
            }
        }
    }
    out.extend(open);
    out
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
