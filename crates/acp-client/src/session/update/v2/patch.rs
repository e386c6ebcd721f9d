//! A v2 diff (`changes` plus a `git_patch`) turned into v1's diff content
//! (path, old text, new text), so a v2 agent's edit shows, opens and is
//! reviewed like a v1 agent's. The patch alone gives both texts of an added
//! or deleted file; for a modified one the other side is the file on disk:
//! the patch applied backwards to it when the agent already wrote it
//! (claude-agent-acp 0.101.0 reports its edits after making them), forwards
//! when it has not (a permission request's subject). A file whose texts
//! cannot be recovered keeps its patch as text.

use std::path::Path;

/// Patches bigger than this are shown as text (cut), never parsed.
pub(crate) const MAX_PATCH_BYTES: usize = 1024 * 1024;

/// How much of a patch too big to parse the chat gets.
const SHOWN_PATCH_BYTES: usize = 64 * 1024;

/// One line of a hunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Both,
    Old,
    New,
}

#[derive(Debug, Default)]
struct Hunk<'a> {
    old_start: usize,
    new_start: usize,
    lines: Vec<(Side, &'a str)>,
    /// `\ No newline at end of file` after the old side's last line.
    old_no_eol: bool,
    new_no_eol: bool,
}

/// The part of a patch about one file.
#[derive(Debug, Default)]
pub(crate) struct FilePatch<'a> {
    /// Before; `None` for an added file (`/dev/null`).
    pub old_path: Option<String>,
    /// After; `None` for a deleted file.
    pub new_path: Option<String>,
    hunks: Vec<Hunk<'a>>,
    binary: bool,
    /// The section's text, for the fallback.
    pub text: &'a str,
    saw_old: bool,
}

/// The two texts of one file, as v1's `diff` content has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Texts {
    pub path: String,
    pub old_text: Option<String>,
    pub new_text: String,
}

/// Splits a patch into its files; `None` when it is malformed (a hunk whose
/// line counts do not match its lines, a bad hunk header).
pub(crate) fn parse(text: &str) -> Option<Vec<FilePatch<'_>>> {
    let mut files: Vec<FilePatch> = Vec::new();
    let mut start = 0;
    let mut lines = LineIter { text, at: 0 };
    while let Some((at, line)) = lines.next() {
        let new_section = line.starts_with("diff --git ")
            || (line.starts_with("--- ") && files.last().is_none_or(|f| f.saw_old));
        if new_section || files.is_empty() {
            if let Some(last) = files.last_mut() {
                last.text = &text[start..at];
            }
            start = at;
            files.push(FilePatch::default());
        }
        let file = files.last_mut()?;
        if let Some(rest) = line.strip_prefix("--- ") {
            file.saw_old = true;
            file.old_path = path_of(rest)?;
        } else if let Some(rest) = line.strip_prefix("+++ ") {
            file.new_path = path_of(rest)?;
        } else if let Some(rest) = line
            .strip_prefix("rename from ")
            .or_else(|| line.strip_prefix("copy from "))
        {
            file.old_path = path_of(rest)?;
        } else if let Some(rest) = line
            .strip_prefix("rename to ")
            .or_else(|| line.strip_prefix("copy to "))
        {
            file.new_path = path_of(rest)?;
        } else if line.starts_with("Binary files ") || line == "GIT binary patch" {
            file.binary = true;
        } else if line.starts_with("@@ ") {
            let hunk = read_hunk(line, &mut lines)?;
            file.hunks.push(hunk);
        }
        // Other header lines (index, modes, similarity) say nothing the
        // texts need.
    }
    if let Some(last) = files.last_mut() {
        last.text = &text[start..];
    }
    Some(files)
}

struct LineIter<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Iterator for LineIter<'a> {
    /// The line's byte offset and the line without its `\n`.
    type Item = (usize, &'a str);
    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.text.len() {
            return None;
        }
        let rest = &self.text[self.at..];
        let line = rest.split('\n').next().unwrap_or_default();
        let at = self.at;
        self.at += line.len() + 1;
        Some((at, line))
    }
}

/// `@@ -a[,b] +c[,d] @@` and exactly the lines it counts.
fn read_hunk<'a>(header: &str, lines: &mut LineIter<'a>) -> Option<Hunk<'a>> {
    let mut parts = header.split(' ');
    let (old_start, mut old_left) = range(parts.nth(1)?.strip_prefix('-')?)?;
    let (new_start, mut new_left) = range(parts.next()?.strip_prefix('+')?)?;
    let mut hunk = Hunk {
        old_start,
        new_start,
        ..Hunk::default()
    };
    let mut last = Side::Both;
    while old_left > 0 || new_left > 0 {
        let (_, line) = lines.next()?;
        let (side, body) = match line.as_bytes().first() {
            Some(b' ') => (Side::Both, &line[1..]),
            // Some tools strip the space of an empty context line.
            None => (Side::Both, line),
            Some(b'-') => (Side::Old, &line[1..]),
            Some(b'+') => (Side::New, &line[1..]),
            Some(b'\\') => {
                mark_no_eol(&mut hunk, last);
                continue;
            }
            _ => return None,
        };
        match side {
            Side::Both => {
                old_left = old_left.checked_sub(1)?;
                new_left = new_left.checked_sub(1)?;
            }
            Side::Old => old_left = old_left.checked_sub(1)?,
            Side::New => new_left = new_left.checked_sub(1)?,
        }
        hunk.lines.push((side, body));
        last = side;
    }
    // The marker after the hunk's last line.
    let mut peek = LineIter {
        text: lines.text,
        at: lines.at,
    };
    if peek.next().is_some_and(|(_, l)| l.starts_with('\\')) {
        lines.next();
        mark_no_eol(&mut hunk, last);
    }
    Some(hunk)
}

fn mark_no_eol(hunk: &mut Hunk, last: Side) {
    match last {
        Side::Old => hunk.old_no_eol = true,
        Side::New => hunk.new_no_eol = true,
        Side::Both => {
            hunk.old_no_eol = true;
            hunk.new_no_eol = true;
        }
    }
}

/// `a` or `a,b` (a count of 1 when omitted).
fn range(s: &str) -> Option<(usize, usize)> {
    match s.split_once(',') {
        Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
        None => Some((s.parse().ok()?, 1)),
    }
}

/// A path of a `---`/`+++`/rename line: `None` for `/dev/null`; Git's
/// quoting undone; an unreadable quoted path is a malformed patch.
fn path_of(raw: &str) -> Option<Option<String>> {
    // A trailing tab separates a timestamp (plain unified diffs).
    let raw = raw.split('\t').next().unwrap_or(raw);
    if raw == "/dev/null" {
        return Some(None);
    }
    let Some(quoted) = raw.strip_prefix('"') else {
        return Some(Some(raw.to_owned()));
    };
    let quoted = quoted.strip_suffix('"')?;
    let mut bytes = Vec::with_capacity(quoted.len());
    let mut it = quoted.bytes();
    while let Some(b) = it.next() {
        if b != b'\\' {
            bytes.push(b);
            continue;
        }
        let e = it.next()?;
        bytes.push(match e {
            b'n' => b'\n',
            b't' => b'\t',
            b'"' | b'\\' => e,
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'r' => b'\r',
            b'v' => 11,
            b'0'..=b'3' => {
                let d = |c: Option<u8>| c.filter(|c| (b'0'..=b'7').contains(c)).map(|c| c - b'0');
                (e - b'0') * 64 + d(it.next())? * 8 + d(it.next())?
            }
            _ => return None,
        });
    }
    String::from_utf8(bytes).ok().map(Some)
}

/// The hunks applied to `base` (backwards: the new side replaced by the old
/// one); `None` when a hunk's lines are not in the text.
fn apply(base: &str, hunks: &[Hunk], backwards: bool) -> Option<String> {
    let base_eol = base.is_empty() || base.ends_with('\n');
    let body = base.strip_suffix('\n').unwrap_or(base);
    let lines: Vec<&str> = if base.is_empty() {
        Vec::new()
    } else {
        body.split('\n').collect()
    };
    let (from_side, to_side) = if backwards {
        (Side::New, Side::Old)
    } else {
        (Side::Old, Side::New)
    };
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut cursor = 0;
    let mut eol = base_eol;
    for hunk in hunks {
        let from: Vec<&str> = side_lines(hunk, from_side);
        let to: Vec<&str> = side_lines(hunk, to_side);
        let start = if backwards {
            hunk.new_start
        } else {
            hunk.old_start
        };
        // A hunk that adds to an empty side starts after line `start`.
        let expected = if from.is_empty() {
            start
        } else {
            start.saturating_sub(1)
        };
        let at = find(&lines, &from, expected, cursor)?;
        out.extend_from_slice(lines.get(cursor..at)?);
        out.extend_from_slice(&to);
        cursor = at + from.len();
        if cursor == lines.len() {
            let to_no_eol = if backwards {
                hunk.old_no_eol
            } else {
                hunk.new_no_eol
            };
            eol = !to_no_eol;
        }
    }
    out.extend_from_slice(lines.get(cursor..)?);
    let mut text = out.join("\n");
    if eol && !out.is_empty() {
        text.push('\n');
    }
    Some(text)
}

fn side_lines<'a>(hunk: &Hunk<'a>, side: Side) -> Vec<&'a str> {
    hunk.lines
        .iter()
        .filter(|(s, _)| *s == Side::Both || *s == side)
        .map(|(_, l)| *l)
        .collect()
}

/// Where `needle` is in `lines` at or after `from`, nearest `expected`
/// first (an agent's line numbers may be off, as `patch` allows).
fn find(lines: &[&str], needle: &[&str], expected: usize, from: usize) -> Option<usize> {
    let fits = |at: usize| at >= from && lines.get(at..at + needle.len()) == Some(needle);
    if fits(expected) {
        return Some(expected);
    }
    let last = lines.len().checked_sub(needle.len())?;
    (1..=last.max(expected))
        .flat_map(|d| [expected.checked_sub(d), expected.checked_add(d)])
        .flatten()
        .find(|&at| at <= last && fits(at))
}

/// The texts of one file of the patch. `read` gives a file's text on disk
/// (inside the workspace, not too big); `done` says the agent reported the
/// edit as made, so the disk more likely holds the new text.
pub(crate) fn texts(
    file: &FilePatch,
    read: &dyn Fn(&Path) -> Option<String>,
    done: bool,
) -> Option<Texts> {
    if file.binary || file.hunks.is_empty() {
        return None;
    }
    let absolute = |p: &Option<String>| p.as_ref().filter(|p| Path::new(p).is_absolute()).cloned();
    match (absolute(&file.old_path), absolute(&file.new_path)) {
        (None, Some(path)) if file.old_path.is_none() => Some(Texts {
            path,
            old_text: None,
            new_text: apply("", &file.hunks, false)?,
        }),
        (Some(path), None) if file.new_path.is_none() => Some(Texts {
            path,
            old_text: Some(apply("", &file.hunks, true)?),
            new_text: String::new(),
        }),
        (Some(old_path), Some(new_path)) => {
            let made = || {
                let disk = read(Path::new(&new_path))?;
                let old = apply(&disk, &file.hunks, true)?;
                Some((old, disk))
            };
            let not_made = || {
                let disk = read(Path::new(&old_path))?;
                let new = apply(&disk, &file.hunks, false)?;
                Some((disk, new))
            };
            let (old, new) = if done {
                made().or_else(not_made)?
            } else {
                not_made().or_else(made)?
            };
            Some(Texts {
                path: new_path,
                old_text: Some(old),
                new_text: new,
            })
        }
        _ => None,
    }
}

/// A patch too big to parse, cut for the chat.
pub(crate) fn cut(patch: &str) -> String {
    if patch.len() <= SHOWN_PATCH_BYTES {
        return patch.to_owned();
    }
    let mut end = SHOWN_PATCH_BYTES;
    while !patch.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}\n… ({} more bytes of patch not shown)",
        &patch[..end],
        patch.len() - end
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
