//! Line-based three-way merge, for agent edits to buffers with unsaved user
//! edits.
//!
//! When an agent changes a file on disk (Claude edits files itself and only
//! reports diffs) while the user has unsaved edits in a buffer of that file,
//! reloading the buffer would throw the user's typing away, and saving the
//! buffer would throw the agent's edit away. [`merge3`] combines both:
//!
//! - `base`: the file content the agent changed from (what the buffer held
//!   when it was last in sync with disk);
//! - `ours`: the buffer, with the user's unsaved edits;
//! - `theirs`: the agent's new content.
//!
//! Changes on one side only are taken as they are. Changes on both sides
//! that overlap, or that insert at the same place, become a [`Conflict`]
//! that keeps both sides. A line inserted right above or right below the
//! lines the other side rewrote is no conflict: it stays above or below
//! their replacement, as it stood against the base; a conflict where both sides made the same change is no conflict,
//! nor is one where one side is the other plus lines of its own (an agent
//! that read the unsaved buffer and added to it): the longer side is taken.
//! Nothing the user typed is dropped silently: every line of `ours` that
//! the merge does not keep is in a conflict's `ours` side.
//!
//! Lines keep their terminators, so CRLF files and files without a final
//! newline merge byte for byte.
//!
//! # Example
//!
//! ```
//! use acp_client::edits::merge::{merge3, ConflictLabels};
//!
//! let base = "fn a() {}\n\nfn b() {}\n";
//! let ours = "fn a() { user(); }\n\nfn b() {}\n"; // unsaved buffer
//! let theirs = "fn a() {}\n\nfn b() { agent(); }\n"; // agent's write
//! let merged = merge3(base, ours, theirs);
//! assert_eq!(
//!     merged.clean_text().as_deref(),
//!     Some("fn a() { user(); }\n\nfn b() { agent(); }\n")
//! );
//!
//! // Both changed the same line: a conflict that keeps both.
//! let merged = merge3("x = 1\n", "x = 2\n", "x = 3\n");
//! assert_eq!(merged.conflict_count(), 1);
//! assert_eq!(
//!     merged.render(&ConflictLabels::default()),
//!     "<<<<<<< buffer\nx = 2\n=======\nx = 3\n>>>>>>> agent\n"
//! );
//! ```

use serde::Serialize;

use crate::edits::diff::{changes, join_lines, split_lines, Change};

/// The result of [`merge3`]: the merged file as a sequence of regions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MergeResult {
    /// Clean text and conflicts, in file order. Two clean regions are never
    /// adjacent.
    pub regions: Vec<MergeRegion>,
}

/// One region of a [`MergeResult`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MergeRegion {
    /// Lines both sides agree on (or that only one side changed).
    Clean {
        /// The lines, each with its terminator (the file's last line may
        /// have none).
        lines: Vec<String>,
    },
    /// Both sides changed the same lines differently.
    Conflict(Conflict),
}

/// A region that both sides changed differently. All three sides are kept
/// whole; lines carry their terminators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Conflict {
    /// The lines of the base that both sides replaced.
    pub base: Vec<String>,
    /// What `ours` (the user's buffer) has there.
    pub ours: Vec<String>,
    /// What `theirs` (the agent's content) has there.
    pub theirs: Vec<String>,
}

/// Marker labels for [`MergeResult::render`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConflictLabels {
    /// Text after `<<<<<<<`.
    pub ours: String,
    /// Text after `>>>>>>>`.
    pub theirs: String,
    /// When set, the base is rendered too, after `|||||||` and this label
    /// (the `diff3` conflict style).
    pub base: Option<String>,
}

impl Default for ConflictLabels {
    /// `buffer` for the user's side, `agent` for the agent's, no base.
    fn default() -> Self {
        Self {
            ours: "buffer".to_owned(),
            theirs: "agent".to_owned(),
            base: None,
        }
    }
}

impl MergeResult {
    /// True when there is no conflict.
    pub fn is_clean(&self) -> bool {
        self.conflict_count() == 0
    }

    /// The number of conflicts.
    pub fn conflict_count(&self) -> usize {
        self.conflicts().count()
    }

    /// The conflicts, in file order.
    pub fn conflicts(&self) -> impl Iterator<Item = &Conflict> {
        self.regions.iter().filter_map(|r| match r {
            MergeRegion::Conflict(c) => Some(c),
            MergeRegion::Clean { .. } => None,
        })
    }

    /// The merged text when there is no conflict.
    pub fn clean_text(&self) -> Option<String> {
        if !self.is_clean() {
            return None;
        }
        let mut out = String::new();
        for region in &self.regions {
            if let MergeRegion::Clean { lines } = region {
                out.push_str(&join_lines(lines));
            }
        }
        Some(out)
    }

    /// The merged text with every conflict written out between git-style
    /// markers (`<<<<<<<`, optional `|||||||`, `=======`, `>>>>>>>`), for a
    /// buffer the user resolves by hand. Marker lines use the line ending of
    /// the file's first line; a side whose last line has no terminator gets
    /// one before the next marker.
    pub fn render(&self, labels: &ConflictLabels) -> String {
        let eol = self.line_ending();
        let mut out = String::new();
        let marker = |out: &mut String, sign: &str, label: &str| {
            out.push_str(sign);
            if !label.is_empty() {
                out.push(' ');
                out.push_str(label);
            }
            out.push_str(eol);
        };
        let side = |out: &mut String, lines: &[String]| {
            out.push_str(&join_lines(lines));
            if !out.is_empty() && !out.ends_with('\n') {
                out.push_str(eol);
            }
        };
        for region in &self.regions {
            match region {
                MergeRegion::Clean { lines } => out.push_str(&join_lines(lines)),
                MergeRegion::Conflict(c) => {
                    // The clean text before a conflict may end without a
                    // newline only if it is the file's last line, which a
                    // conflict cannot follow; guard anyway.
                    if !out.is_empty() && !out.ends_with('\n') {
                        out.push_str(eol);
                    }
                    marker(&mut out, "<<<<<<<", &labels.ours);
                    side(&mut out, &c.ours);
                    if let Some(base) = &labels.base {
                        marker(&mut out, "|||||||", base);
                        side(&mut out, &c.base);
                    }
                    marker(&mut out, "=======", "");
                    side(&mut out, &c.theirs);
                    marker(&mut out, ">>>>>>>", &labels.theirs);
                }
            }
        }
        out
    }

    /// `"\r\n"` when the first terminated line of the result uses it.
    fn line_ending(&self) -> &'static str {
        for region in &self.regions {
            let (first, second): (&[String], &[String]) = match region {
                MergeRegion::Clean { lines } => (lines, &[]),
                MergeRegion::Conflict(c) => (&c.ours, &c.theirs),
            };
            if let Some(line) = first.iter().chain(second).find(|l| l.ends_with('\n')) {
                return if line.ends_with("\r\n") { "\r\n" } else { "\n" };
            }
        }
        "\n"
    }
}

/// Merges `ours` and `theirs`, two descendants of `base`, line by line.
///
/// See the [module documentation](self) for the rules. Properties the tests
/// check on random edits: `merge3(b, b, t) == t`, `merge3(b, o, b) == o`,
/// `merge3(b, x, x) == x`, edits in disjoint regions merge cleanly, and
/// every line of `ours` that is not in `base` is in the result or in a
/// conflict's `ours` side.
pub fn merge3(base: &str, ours: &str, theirs: &str) -> MergeResult {
    let base_lines = split_lines(base);
    let ours_lines = split_lines(ours);
    let theirs_lines = split_lines(theirs);

    let mut edits: Vec<Edit<'_>> = Vec::new();
    for (side, lines) in [(Side::Ours, &ours_lines), (Side::Theirs, &theirs_lines)] {
        for change in changes(&base_lines, lines) {
            edits.push(Edit {
                side,
                change,
                lines: lines.as_slice(),
            });
        }
    }
    // Insertions sort before the changes that start where they insert, so a
    // group always starts at its lowest base line.
    edits.sort_by_key(|e| (e.change.old.start, e.change.old.end));

    let mut out = Builder::default();
    let mut cursor = 0;
    let mut i = 0;
    while i < edits.len() {
        let lo = edits[i].change.old.start;
        let mut hi = edits[i].change.old.end;
        let mut j = i + 1;
        while j < edits.len()
            && (touches(lo, hi, &edits[j].change) || echoes(&edits[i..j], &edits[j], lo, hi))
        {
            hi = hi.max(edits[j].change.old.end);
            j += 1;
        }
        let group = &edits[i..j];
        out.clean(&base_lines[cursor..lo]);

        let ours_part = side_text(group, Side::Ours, &base_lines, lo, hi);
        let theirs_part = side_text(group, Side::Theirs, &base_lines, lo, hi);
        match (ours_part, theirs_part) {
            (Some(o), None) => out.clean(&o),
            (None, Some(t)) => out.clean(&t),
            (Some(o), Some(t)) if o == t => out.clean(&o),
            (Some(o), Some(t)) if extends(&base_lines[lo..hi], &o, &t) => out.clean(&t),
            (Some(o), Some(t)) if extends(&base_lines[lo..hi], &t, &o) => out.clean(&o),
            (Some(o), Some(t)) => out.conflict(Conflict {
                base: to_owned(&base_lines[lo..hi]),
                ours: to_owned(&o),
                theirs: to_owned(&t),
            }),
            // A group holds at least one edit, so at least one side is set.
            (None, None) => out.clean(&base_lines[lo..hi]),
        }
        cursor = hi;
        i = j;
    }
    out.clean(&base_lines[cursor..]);
    out.finish()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Ours,
    Theirs,
}

/// One side's change against the base.
struct Edit<'a> {
    side: Side,
    change: Change,
    /// All lines of that side; `change.new` indexes into them.
    lines: &'a [&'a str],
}

/// True when `change` must be merged together with the group spanning base
/// lines `lo..hi` (sorted by start, so `change` starts at or after `lo`).
///
/// Overlapping ranges touch, and so do two insertions at one place: the
/// order of the two sides' new lines there is a guess. An insertion at
/// either edge of the other side's changed range does not touch it: the
/// inserted lines sit before (or after) a base line the other side
/// replaced, and they go before (or after) its replacement. Claude
/// (claude-agent-acp) rewriting `hello world` while the user has typed a
/// line below it is that case, and a conflict there hid both edits behind
/// markers. Two changed ranges that only meet (`..4` and `4..`) do not touch
/// either: each replaces its own lines.
fn touches(lo: usize, hi: usize, change: &Change) -> bool {
    let start = change.old.start;
    let is_insertion = change.old.is_empty();
    start < hi || (start == hi && is_insertion && lo == hi)
}

/// True when `next`, an edit at the edge of `group` (base lines `lo..hi`)
/// that does not touch it, has lines the other side's change there already
/// has at that edge: an insertion right below a replacement that ends with
/// the inserted lines, or one right above a replacement that starts with
/// them. Side by side they would show those lines twice; the group takes
/// `next` so the merge sees both (the other side then usually extends this
/// one, else it is a conflict). An agent whose view of the file we missed
/// (it read the unsaved buffer some other way) and wrote it back with its
/// change does this against the disk's base.
fn echoes<'a>(group: &[Edit<'a>], next: &Edit<'a>, lo: usize, hi: usize) -> bool {
    fn new_lines<'a>(e: &Edit<'a>) -> &'a [&'a str] {
        &e.lines[e.change.new.clone()]
    }
    let start = next.change.old.start;
    if start != hi {
        return false;
    }
    if next.change.old.is_empty() {
        // Below a replacement of the other side ending at `hi`.
        return group.iter().any(|e| {
            e.side != next.side
                && e.change.old.end == hi
                && !e.change.old.is_empty()
                && new_lines(e).ends_with(new_lines(next))
        });
    }
    // A replacement starting where the group's insertions are (`lo == hi`).
    lo == hi
        && group.iter().any(|e| {
            e.side != next.side
                && e.change.old.is_empty()
                && new_lines(next).starts_with(new_lines(e))
        })
}

/// True when `longer` is `shorter` plus lines of its own, and `shorter`
/// only added lines to `base`: every line of `shorter` is in `longer`, in
/// order, and `shorter` removed no line of `base`. Taking `longer` then loses
/// nothing of either side. An agent that read the buffer (unsaved lines
/// included, as `fs/read_text_file` serves it) and wrote it back with a line
/// added produces exactly this against the disk's base; a conflict there
/// would show the user's own lines twice. A side that removed or rewrote
/// base lines still conflicts: keeping the other side would drop that
/// change silently.
fn extends(base: &[&str], shorter: &[&str], longer: &[&str]) -> bool {
    let count = |lines: &[&str], line: &str| lines.iter().filter(|l| **l == line).count();
    if base
        .iter()
        .any(|line| count(shorter, line) < count(base, line))
    {
        return false;
    }
    let mut rest = longer.iter();
    shorter.iter().all(|line| rest.any(|l| l == line))
}

/// What `side` has for base lines `lo..hi`, or `None` when that side did
/// not change them. Edits of one side never touch each other (a diff puts
/// an unchanged line between changes), so they apply in order.
fn side_text<'a>(
    group: &[Edit<'a>],
    side: Side,
    base: &[&'a str],
    lo: usize,
    hi: usize,
) -> Option<Vec<&'a str>> {
    let mut edits = group.iter().filter(|e| e.side == side).peekable();
    edits.peek()?;
    let mut out = Vec::new();
    let mut cursor = lo;
    for edit in edits {
        out.extend_from_slice(&base[cursor..edit.change.old.start]);
        out.extend_from_slice(&edit.lines[edit.change.new.clone()]);
        cursor = edit.change.old.end;
    }
    out.extend_from_slice(&base[cursor..hi]);
    Some(out)
}

fn to_owned(lines: &[&str]) -> Vec<String> {
    lines.iter().map(|l| (*l).to_owned()).collect()
}

/// Collects regions, joining adjacent clean ones and dropping empty ones.
#[derive(Default)]
struct Builder {
    regions: Vec<MergeRegion>,
}

impl Builder {
    fn clean(&mut self, lines: &[&str]) {
        if lines.is_empty() {
            return;
        }
        if let Some(MergeRegion::Clean { lines: last }) = self.regions.last_mut() {
            last.extend(lines.iter().map(|l| (*l).to_owned()));
            return;
        }
        self.regions.push(MergeRegion::Clean {
            lines: to_owned(lines),
        });
    }

    fn conflict(&mut self, conflict: Conflict) {
        self.regions.push(MergeRegion::Conflict(conflict));
    }

    fn finish(self) -> MergeResult {
        MergeResult {
            regions: self.regions,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    fn clean(base: &str, ours: &str, theirs: &str) -> String {
        let merged = merge3(base, ours, theirs);
        merged
            .clean_text()
            .unwrap_or_else(|| panic!("expected a clean merge, got {merged:?}"))
    }

    fn lines(text: &str) -> Vec<String> {
        split_lines(text).into_iter().map(str::to_owned).collect()
    }

    #[test]
    fn one_sided_changes_are_taken_whole() {
        let base = "a\nb\nc\n";
        assert_eq!(clean(base, base, "a\nB\nc\n"), "a\nB\nc\n");
        assert_eq!(clean(base, "a\nb\nc\nd\n", base), "a\nb\nc\nd\n");
        assert_eq!(clean(base, base, base), base);
    }

    #[test]
    fn changes_in_different_places_both_apply() {
        let base = "1\n2\n3\n4\n5\n";
        assert_eq!(
            clean(base, "1\nuser\n3\n4\n5\n", "1\n2\n3\n4\nagent\n"),
            "1\nuser\n3\n4\nagent\n"
        );
        // Neighbouring lines that each side replaces do not conflict.
        assert_eq!(
            clean(base, "1\nU\n3\n4\n5\n", "1\n2\nA\n4\n5\n"),
            "1\nU\nA\n4\n5\n"
        );
    }

    #[test]
    fn same_change_on_both_sides_is_clean() {
        let base = "a\nb\n";
        assert_eq!(clean(base, "a\nx\n", "a\nx\n"), "a\nx\n");
    }

    #[test]
    fn overlapping_changes_conflict_and_keep_both_sides() {
        let merged = merge3("a\nb\nc\n", "a\nuser\nc\n", "a\nagent\nc\n");
        assert_eq!(
            merged.regions,
            vec![
                MergeRegion::Clean {
                    lines: lines("a\n")
                },
                MergeRegion::Conflict(Conflict {
                    base: lines("b\n"),
                    ours: lines("user\n"),
                    theirs: lines("agent\n"),
                }),
                MergeRegion::Clean {
                    lines: lines("c\n")
                },
            ]
        );
        assert!(!merged.is_clean());
        assert_eq!(merged.clean_text(), None);
    }

    #[test]
    fn insertions_at_the_same_place_conflict() {
        let merged = merge3("a\nb\n", "a\nuser\nb\n", "a\nagent\nb\n");
        assert_eq!(merged.conflict_count(), 1);
        let c = merged.conflicts().next().unwrap();
        assert!(c.base.is_empty());
        assert_eq!(c.ours, lines("user\n"));
        assert_eq!(c.theirs, lines("agent\n"));
    }

    #[test]
    fn insertion_at_the_edge_of_a_change_stays_on_its_side() {
        // The user types a line right above the line the agent rewrites...
        assert_eq!(
            clean("a\nb\nc\n", "a\nuser\nb\nc\n", "a\nB\nc\n"),
            "a\nuser\nB\nc\n"
        );
        // ...and right below it.
        assert_eq!(
            clean("a\nb\nc\n", "a\nb\nuser\nc\n", "a\nB\nc\n"),
            "a\nB\nuser\nc\n"
        );
        // The agent's side inserting at the edge of the user's rewrite.
        assert_eq!(
            clean("a\nb\nc\n", "a\nB\nc\n", "a\nb\nagent\nc\n"),
            "a\nB\nagent\nc\n"
        );
        // claude-agent-acp rewrote the only line of a file whose buffer had
        // an unsaved line below it (found by `make agents`).
        assert_eq!(
            clean(
                "hello world\n",
                "hello world\nunsaved line\n",
                "hello ACP\n"
            ),
            "hello ACP\nunsaved line\n"
        );
        // A replacement that grew into a block keeps the user's line after
        // the whole block, and one at the top of the file before it.
        assert_eq!(
            clean("x\ny\n", "x\ny\nmine\n", "x\nY1\nY2\n"),
            "x\nY1\nY2\nmine\n"
        );
        assert_eq!(
            clean("x\ny\n", "mine\nx\ny\n", "X1\nX2\ny\n"),
            "mine\nX1\nX2\ny\n"
        );
    }

    #[test]
    fn an_insertion_the_other_side_already_has_at_that_edge_is_not_doubled() {
        // The agent read the unsaved buffer (a line below `hello world`)
        // without us knowing and wrote it back with its change: against the
        // disk, the user's line and the agent's copy of it would both stay.
        let merged = merge3(
            "hello world\n",
            "hello world\nunsaved line\n",
            "hello ACP\nunsaved line\n",
        );
        assert_eq!(merged.conflict_count(), 1);
        // The same above a replacement.
        let merged = merge3("a\nb\n", "mine\na\nb\n", "mine\nA\nb\n");
        assert_eq!(merged.conflict_count(), 1);
        // Different lines at the edge are simply kept on their side.
        assert_eq!(
            clean("a\nb\n", "mine\na\nb\n", "other\nA\nb\n"),
            "mine\nother\nA\nb\n"
        );
    }

    #[test]
    fn a_deletion_next_to_an_insertion_keeps_the_insertion() {
        // The agent deletes the line the user typed below: the typed line
        // stays (nothing the user typed is dropped).
        assert_eq!(
            clean("a\nb\nc\n", "a\nb\nuser\nc\n", "a\nc\n"),
            "a\nuser\nc\n"
        );
    }

    #[test]
    fn a_change_bridging_two_changes_makes_one_conflict() {
        let base = "1\n2\n3\n4\n5\n";
        let ours = "1\nA\n3\nB\n5\n";
        let theirs = "1\nX\nX\nX\n5\n";
        let merged = merge3(base, ours, theirs);
        assert_eq!(merged.conflict_count(), 1);
        let c = merged.conflicts().next().unwrap();
        assert_eq!(c.base, lines("2\n3\n4\n"));
        assert_eq!(c.ours, lines("A\n3\nB\n"));
        assert_eq!(c.theirs, lines("X\nX\nX\n"));
    }

    #[test]
    fn crlf_and_missing_final_newline_survive() {
        let base = "a\r\nb\r\nc";
        assert_eq!(clean(base, "A\r\nb\r\nc", "a\r\nb\r\nC"), "A\r\nb\r\nC");
        // The user appends after a last line without newline while the agent
        // edits the first line.
        assert_eq!(clean("a\nb", "a\nb\nc", "x\nb"), "x\nb\nc");
    }

    #[test]
    fn empty_inputs() {
        assert_eq!(clean("", "", ""), "");
        assert_eq!(clean("", "", "new\n"), "new\n");
        assert_eq!(clean("old\n", "old\n", ""), "");
        assert_eq!(merge3("", "mine\n", "theirs\n").conflict_count(), 1);
        assert!(merge3("", "", "").regions.is_empty());
    }

    #[test]
    fn a_side_that_adds_to_the_other_sides_insertion_is_taken() {
        // The agent read the unsaved buffer (the user's two new lines) and
        // wrote it back with a line of its own between them.
        let base = "a\nz\n";
        let ours = "a\nmine 1\nmine 2\nz\n";
        let theirs = "a\nmine 1\nagent\nmine 2\nz\n";
        assert_eq!(clean(base, ours, theirs), theirs);
        // And the other way round: the user typed more after the agent's
        // insertion.
        assert_eq!(clean(base, theirs, ours), theirs);
        // Without every line of the shorter side, still a conflict.
        assert_eq!(
            merge3(base, ours, "a\nmine 1\nagent\nz\n").conflict_count(),
            1
        );
        // A side that rewrote base lines still conflicts with a longer one.
        assert_eq!(
            merge3("a\nb\nz\n", "a\nB\nz\n", "a\nB\nagent\nz\n").conflict_count(),
            1
        );
    }

    #[test]
    fn deletion_against_an_edit_conflicts() {
        let merged = merge3("a\nb\nc\n", "a\nb edited\nc\n", "a\nc\n");
        let c = merged.conflicts().next().unwrap();
        assert_eq!(c.ours, lines("b edited\n"));
        assert!(c.theirs.is_empty());
    }

    #[test]
    fn render_writes_markers_and_terminates_unterminated_sides() {
        let merged = merge3("a\nb", "a\nmine", "a\ntheirs");
        assert_eq!(
            merged.render(&ConflictLabels::default()),
            "a\n<<<<<<< buffer\nmine\n=======\ntheirs\n>>>>>>> agent\n"
        );
        let labels = ConflictLabels {
            ours: "yours".into(),
            theirs: "claude".into(),
            base: Some("before".into()),
        };
        assert_eq!(
            merge3("x\r\n", "y\r\n", "z\r\n").render(&labels),
            "<<<<<<< yours\r\ny\r\n||||||| before\r\nx\r\n=======\r\nz\r\n>>>>>>> claude\r\n"
        );
        // A clean result renders as itself.
        assert_eq!(
            merge3("a\n", "a\nb\n", "a\n").render(&ConflictLabels::default()),
            "a\nb\n"
        );
    }

    #[test]
    fn empty_conflict_side_renders_as_nothing() {
        let merged = merge3("a\nb\nc\n", "a\nb2\nc\n", "a\nc\n");
        assert_eq!(
            merged.render(&ConflictLabels::default()),
            "a\n<<<<<<< buffer\nb2\n=======\n>>>>>>> agent\nc\n"
        );
    }

    #[test]
    fn serializes_regions_with_a_type_tag() {
        let merged = merge3("a\n", "b\n", "c\n");
        let json = serde_json::to_value(&merged).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"regions": [
                {"type": "conflict", "base": ["a\n"], "ours": ["b\n"], "theirs": ["c\n"]}
            ]})
        );
    }
}
