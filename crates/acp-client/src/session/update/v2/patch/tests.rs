use std::path::Path;

use super::*;

fn no_disk(_: &Path) -> Option<String> {
    None
}

fn one(patch: &str, disk: Option<&str>, done: bool) -> Option<Texts> {
    let files = parse(patch).expect("the patch parses");
    assert_eq!(files.len(), 1, "{files:?}");
    let disk = disk.map(str::to_owned);
    texts(&files[0], &move |_: &Path| disk.clone(), done)
}

const MODIFY: &str = "diff --git /w/a.txt /w/a.txt\nindex 1..2 100644\n--- /w/a.txt\n+++ /w/a.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n";

#[test]
fn a_modified_file_made_on_disk_gets_its_old_text_back() {
    let t = one(MODIFY, Some("one\nTWO\nthree\n"), true).unwrap();
    assert_eq!(t.path, "/w/a.txt");
    assert_eq!(t.old_text.as_deref(), Some("one\ntwo\nthree\n"));
    assert_eq!(t.new_text, "one\nTWO\nthree\n");
}

#[test]
fn a_modified_file_not_made_yet_gets_its_new_text() {
    let t = one(MODIFY, Some("one\ntwo\nthree\n"), false).unwrap();
    assert_eq!(t.old_text.as_deref(), Some("one\ntwo\nthree\n"));
    assert_eq!(t.new_text, "one\nTWO\nthree\n");
    // Reported done but not on disk yet: the other way still fits.
    let t = one(MODIFY, Some("one\ntwo\nthree\n"), true).unwrap();
    assert_eq!(t.new_text, "one\nTWO\nthree\n");
}

#[test]
fn hunks_find_their_lines_when_the_numbers_are_off_and_keep_the_rest() {
    let patch =
        "--- /w/a\n+++ /w/a\n@@ -1,2 +1,2 @@\n x\n-y\n+Y\n@@ -40,1 +40,2 @@\n z\n+after z\n";
    let disk = "head\nx\ny\nmid\nz\ntail";
    let t = one(patch, Some(disk), false).unwrap();
    assert_eq!(t.new_text, "head\nx\nY\nmid\nz\nafter z\ntail");
}

#[test]
fn a_file_that_does_not_match_the_patch_gives_no_texts() {
    assert_eq!(one(MODIFY, Some("something else\n"), true), None);
    assert_eq!(one(MODIFY, None, true), None);
}

#[test]
fn added_and_deleted_files_need_no_disk() {
    let added = "diff --git /w/new.txt /w/new.txt\nnew file mode 100644\n--- /dev/null\n+++ /w/new.txt\n@@ -0,0 +1,2 @@\n+hello\n+world\n";
    let files = parse(added).unwrap();
    let t = texts(&files[0], &no_disk, true).unwrap();
    assert_eq!(
        t,
        Texts {
            path: "/w/new.txt".into(),
            old_text: None,
            new_text: "hello\nworld\n".into()
        }
    );
    let deleted =
        "--- /w/old.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-bye\n\\ No newline at end of file\n";
    let files = parse(deleted).unwrap();
    let t = texts(&files[0], &no_disk, true).unwrap();
    assert_eq!(t.old_text.as_deref(), Some("bye"));
    assert_eq!(t.new_text, "");
}

#[test]
fn the_missing_newline_at_the_end_is_kept_on_each_side() {
    let patch = "--- /w/a\n+++ /w/a\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n";
    let t = one(patch, Some("new\n"), true).unwrap();
    assert_eq!(t.old_text.as_deref(), Some("old"));
    assert_eq!(t.new_text, "new\n");
}

#[test]
fn several_files_and_quoted_paths_split_into_sections() {
    let patch = "diff --git /w/a /w/a\n--- /w/a\n+++ /w/a\n@@ -1 +1 @@\n-a\n+A\ndiff --git \"/w/s p\\303\\251\" \"/w/s p\\303\\251\"\n--- \"/w/s p\\303\\251\"\n+++ \"/w/s p\\303\\251\"\n@@ -1 +1 @@\n-b\n+B\n";
    let files = parse(patch).unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[1].new_path.as_deref(), Some("/w/s pé"));
    assert!(files[0].text.starts_with("diff --git /w/a"));
    assert!(files[1].text.contains("+B"));
}

#[test]
fn hostile_patches_are_malformed_or_give_no_texts() {
    // Counts that promise more lines than there are.
    assert!(parse("--- /w/a\n+++ /w/a\n@@ -1,5 +1,5 @@\n x\n").is_none());
    // A bad header.
    assert!(parse("--- /w/a\n+++ /w/a\n@@ -x +1 @@\n-a\n+b\n").is_none());
    // A line that is no hunk line inside a hunk.
    assert!(parse("--- /w/a\n+++ /w/a\n@@ -1,2 +1,2 @@\n-a\n?b\n").is_none());
    // A bad quoted path.
    assert!(parse("--- \"/w/a\\q\"\n+++ /w/a\n").is_none());
    // Relative paths (Git's a/ b/ prefixes, not allowed on v2): no texts.
    let files = parse("--- a/w/x\n+++ b/w/x\n@@ -1 +1 @@\n-a\n+b\n").unwrap();
    assert_eq!(
        texts(&files[0], &|_: &Path| Some("a\n".into()), false),
        None
    );
    // A binary patch has no texts.
    let files = parse("diff --git /w/b /w/b\nBinary files /w/b and /w/b differ\n").unwrap();
    assert_eq!(texts(&files[0], &no_disk, false), None);
    // Empty input: nothing.
    assert!(parse("").unwrap().is_empty());
}

#[test]
fn a_huge_patch_is_cut_for_the_chat() {
    let big = "+é\n".repeat(SHOWN_PATCH_BYTES);
    let shown = cut(&big);
    assert!(shown.len() < SHOWN_PATCH_BYTES + 100);
    assert!(shown.ends_with("more bytes of patch not shown)"));
    assert_eq!(cut("small"), "small");
}
