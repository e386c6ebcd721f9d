#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use super::*;

/// Hang guard for waits on the watcher; never a timing assertion.
const GUARD: Duration = Duration::from_secs(20);

fn write(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn open(root: &Path) -> FileIndex {
    open_with(root, IndexOptions::default())
}

fn open_with(root: &Path, options: IndexOptions) -> FileIndex {
    let index = FileIndex::open(root.canonicalize().unwrap(), options).unwrap();
    assert!(index.wait_ready(GUARD), "the first walk never finished");
    index
}

fn all(index: &FileIndex) -> Vec<String> {
    let mut files = index.query("", usize::MAX);
    files.sort();
    files
}

/// Waits until `pred` holds for the index (the watcher works in the
/// background); fails with the index content after the guard.
fn wait_for(index: &FileIndex, what: &str, pred: impl Fn(&FileIndex) -> bool) {
    let start = Instant::now();
    while !pred(index) {
        assert!(
            start.elapsed() < GUARD,
            "timed out waiting for {what}; index: {:?}",
            all(index)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn gitignore_is_respected_without_a_git_repository() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "target/\n*.log\n");
    write(root, "src/main.rs", "fn main() {}\n");
    write(root, "target/debug/app", "bin");
    write(root, "build.log", "log");
    write(root, "sub/.gitignore", "local.txt\n");
    write(root, "sub/local.txt", "x");
    write(root, "sub/kept.txt", "x");
    write(root, ".hidden/secret.txt", "x");
    write(root, ".env", "x");
    let index = open(root);
    assert_eq!(all(&index), vec!["src/main.rs", "sub/kept.txt"]);
    assert!(!index.is_truncated());
}

#[test]
fn hidden_files_are_indexed_when_asked_but_never_git() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".github/ci.yml", "x");
    write(root, ".git/HEAD", "ref");
    write(root, "a.txt", "x");
    let options = IndexOptions {
        hidden: true,
        ..IndexOptions::default()
    };
    let index = open_with(root, options);
    assert_eq!(all(&index), vec![".github/ci.yml", "a.txt"]);
}

#[test]
fn a_new_file_is_seen_after_the_watcher_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.txt", "x");
    write(root, "deep/er/b.txt", "x");
    let index = open(root);
    assert!(!index.contains("new.rs"));
    write(root, "new.rs", "x");
    write(root, "deep/er/c.txt", "x");
    wait_for(&index, "new files", |i| {
        i.contains("new.rs") && i.contains("deep/er/c.txt")
    });
    assert_eq!(index.query("new", 5), vec!["new.rs"]);
}

#[test]
fn a_new_directory_is_walked_and_ignored_trees_stay_out() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "out/\n");
    let index = open(root);
    write(root, "pkg/mod/x.rs", "x");
    write(root, "out/gen.rs", "x");
    write(root, "pkg/mod/y.rs", "x");
    wait_for(&index, "the new tree", |i| {
        i.contains("pkg/mod/x.rs") && i.contains("pkg/mod/y.rs")
    });
    // A later change in the new directory is seen too: it is watched.
    write(root, "pkg/mod/z.rs", "x");
    wait_for(&index, "a file in the new tree", |i| {
        i.contains("pkg/mod/z.rs")
    });
    assert!(!index.contains("out/gen.rs"), "{:?}", all(&index));
}

#[test]
fn deleted_and_renamed_files_are_gone() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "keep.txt", "x");
    write(root, "gone.txt", "x");
    write(root, "old.txt", "x");
    write(root, "tree/a/b.txt", "x");
    let index = open(root);
    assert_eq!(
        all(&index),
        vec!["gone.txt", "keep.txt", "old.txt", "tree/a/b.txt"]
    );
    fs::remove_file(root.join("gone.txt")).unwrap();
    fs::rename(root.join("old.txt"), root.join("renamed.txt")).unwrap();
    fs::remove_dir_all(root.join("tree")).unwrap();
    wait_for(&index, "the removals", |i| {
        all(i) == vec!["keep.txt", "renamed.txt"]
    });
}

#[test]
fn editing_gitignore_applies_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "a.txt", "x");
    write(root, "notes.md", "x");
    let index = open(root);
    assert!(index.contains("notes.md"));
    write(root, ".gitignore", "*.md\n");
    wait_for(&index, "notes.md to be ignored", |i| {
        !i.contains("notes.md")
    });
    assert!(index.contains("a.txt"));
}

#[test]
fn the_walk_stops_at_max_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for i in 0..20 {
        write(root, &format!("f{i:02}.txt"), "x");
    }
    let options = IndexOptions {
        max_files: 5,
        ..IndexOptions::default()
    };
    let index = open_with(root, options);
    assert_eq!(index.len(), 5);
    assert!(index.is_truncated());
}

#[test]
fn queries_rank_file_names_first() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "src/main.rs", "x");
    write(root, "src/domain/model.rs", "x");
    write(root, "main/README.md", "x");
    write(root, "docs/remaining.txt", "x");
    let index = open(root);
    assert_eq!(
        index.query("main", 10),
        vec![
            "src/main.rs",
            "main/README.md",
            "docs/remaining.txt",
            "src/domain/model.rs"
        ]
    );
    assert_eq!(index.query("main", 1), vec!["src/main.rs"]);
    assert_eq!(index.query("sdm", 10), vec!["src/domain/model.rs"]);
}

#[test]
fn open_refuses_what_it_cannot_index() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "file.txt", "x");
    let err = FileIndex::open(dir.path().join("file.txt"), IndexOptions::default()).unwrap_err();
    assert!(err.to_string().contains("not a directory"), "{err}");
    let err = FileIndex::open("relative/dir", IndexOptions::default()).unwrap_err();
    assert!(err.to_string().contains("absolute"), "{err}");
}
