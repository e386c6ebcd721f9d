//! Rebuilding a file's content from before an agent edit, from a tool
//! call's `diff` content.
//!
//! The protocol says `oldText`/`newText` are the file's content, but
//! claude-agent-acp reports its `Edit` tool as the replaced snippet only
//! (`old_string` -> `new_string`), after it already changed the file on
//! disk itself. Given the file as it is now, the snippet is enough to
//! rebuild the content before the edit when the new snippet occurs exactly
//! once.

/// The content before the edit, or `None` when the edit cannot be placed
/// with certainty: the new snippet is empty (a pure deletion leaves no trace
/// to find), absent (the file changed again since) or occurs more than once
/// (a `replace_all` edit, or text that was there before).
pub(super) fn content_before(old_text: &str, new_text: &str, on_disk: &str) -> Option<String> {
    if new_text.is_empty() {
        return None;
    }
    let at = on_disk.find(new_text)?;
    // Search again from the next character, so that overlapping matches
    // ("aa" twice in "aaa") count as ambiguous too.
    let step = new_text.chars().next().map_or(1, char::len_utf8);
    if on_disk[at + step..].contains(new_text) {
        return None;
    }
    let mut before = String::with_capacity(on_disk.len() - new_text.len() + old_text.len());
    before.push_str(&on_disk[..at]);
    before.push_str(old_text);
    before.push_str(&on_disk[at + new_text.len()..]);
    Some(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_snippet_is_put_back() {
        assert_eq!(
            content_before("b = 1", "b = 2", "a\nb = 2\nc\n").as_deref(),
            Some("a\nb = 1\nc\n")
        );
        // An insertion snippet: old text empty.
        assert_eq!(
            content_before("", "new line\n", "a\nnew line\nb\n").as_deref(),
            Some("a\nb\n")
        );
    }

    #[test]
    fn ambiguous_or_missing_snippets_are_not_placed() {
        assert_eq!(content_before("x", "y", "y\ny\n"), None);
        assert_eq!(content_before("x", "y", "z\n"), None);
        assert_eq!(content_before("gone\n", "", "a\n"), None);
    }

    #[test]
    fn overlapping_occurrences_count_as_ambiguous() {
        assert_eq!(content_before("b", "aa", "aaa"), None);
        assert_eq!(content_before("b", "éé", "xéééx"), None);
        assert_eq!(content_before("b", "éé", "xééx").as_deref(), Some("xbx"));
    }
}
