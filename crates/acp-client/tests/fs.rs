//! The workspace sandbox and disk fs, against real files in a temp dir.
#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use acp_client::edits::fs::{
    read_text_file, write_text_file_atomic, Workspace, DEFAULT_MAX_READ_BYTES,
};
use acp_client::error::codes;
use acp_client::Error;

/// A workspace root and a sibling directory outside it.
struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("project");
    let outside = base.join("secret");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("key.txt"), "hunter2\n").unwrap();
    Fixture {
        _dir: dir,
        root,
        outside,
    }
}

async fn read(path: &Path, line: Option<u32>, limit: Option<u32>) -> Result<String, Error> {
    read_text_file(path, line, limit, DEFAULT_MAX_READ_BYTES).await
}

#[test]
fn relative_path_is_invalid_params() {
    let f = fixture();
    let ws = Workspace::new(vec![f.root.clone()]);
    let err = ws.resolve(Path::new("src/main.rs")).unwrap_err();
    assert!(matches!(err, Error::RelativePath { .. }));
    assert_eq!(err.to_rpc_error().code, codes::INVALID_PARAMS);
}

#[test]
fn dotdot_escape_is_outside_the_workspace() {
    let f = fixture();
    let ws = Workspace::new(vec![f.root.clone()]);
    let err = ws
        .resolve(&f.root.join("src/../../secret/key.txt"))
        .unwrap_err();
    match &err {
        Error::OutsideWorkspace { path, roots } => {
            assert_eq!(path, &f.outside.join("key.txt"));
            assert_eq!(roots, &vec![f.root.clone()]);
        }
        other => panic!("expected OutsideWorkspace, got {other:?}"),
    }
    assert_eq!(err.to_rpc_error().code, codes::RESOURCE_NOT_FOUND);
    // `..` that stays inside is fine and normalized away.
    assert_eq!(
        ws.resolve(&f.root.join("src/../src/./main.rs")).unwrap(),
        f.root.join("src/main.rs")
    );
}

#[test]
fn file_symlink_pointing_outside_is_caught() {
    let f = fixture();
    symlink(f.outside.join("key.txt"), f.root.join("innocent.txt")).unwrap();
    let ws = Workspace::new(vec![f.root.clone()]);
    assert!(matches!(
        ws.resolve(&f.root.join("innocent.txt")),
        Err(Error::OutsideWorkspace { .. })
    ));
}

#[test]
fn symlinked_parent_dir_pointing_outside_is_caught_also_for_new_files() {
    let f = fixture();
    symlink(&f.outside, f.root.join("vendor")).unwrap();
    let ws = Workspace::new(vec![f.root.clone()]);
    for p in ["vendor/key.txt", "vendor/new/deeper/file.txt"] {
        assert!(
            matches!(
                ws.resolve(&f.root.join(p)),
                Err(Error::OutsideWorkspace { .. })
            ),
            "{p} should be outside"
        );
    }
}

#[test]
fn dangling_symlink_to_outside_is_caught() {
    let f = fixture();
    symlink(f.outside.join("not-yet.txt"), f.root.join("trap.txt")).unwrap();
    let ws = Workspace::new(vec![f.root.clone()]);
    assert!(matches!(
        ws.resolve(&f.root.join("trap.txt")),
        Err(Error::OutsideWorkspace { .. })
    ));
}

#[test]
fn symlink_inside_the_workspace_resolves_to_its_target() {
    let f = fixture();
    std::fs::write(f.root.join("src/lib.rs"), "x").unwrap();
    symlink(f.root.join("src"), f.root.join("alias")).unwrap();
    let ws = Workspace::new(vec![f.root.clone()]);
    assert_eq!(
        ws.resolve(&f.root.join("alias/lib.rs")).unwrap(),
        f.root.join("src/lib.rs")
    );
}

#[test]
fn root_reached_through_a_symlink_still_contains_its_files() {
    let f = fixture();
    let link = f.outside.join("project-link");
    symlink(&f.root, &link).unwrap();
    let ws = Workspace::new(vec![link.clone()]);
    assert_eq!(ws.roots(), std::slice::from_ref(&f.root));
    assert_eq!(
        ws.resolve(&link.join("src/a.rs")).unwrap(),
        f.root.join("src/a.rs")
    );
}

#[tokio::test]
async fn allowed_extra_path_outside_the_roots_works() {
    let f = fixture();
    let mut ws = Workspace::new(vec![f.root.clone()]);
    let key = f.outside.join("key.txt");
    assert!(ws.resolve(&key).is_err());
    ws.allow(key.clone());
    let resolved = ws.resolve(&key).unwrap();
    assert_eq!(read(&resolved, None, None).await.unwrap(), "hunter2\n");
    // An exact file allows only that file.
    assert!(ws.resolve(&f.outside.join("other.txt")).is_err());
    // A directory allows its tree.
    ws.allow(f.outside.clone());
    assert!(ws.resolve(&f.outside.join("other.txt")).is_ok());
}

#[tokio::test]
async fn reads_lines_from_disk() {
    let f = fixture();
    let path = f.root.join("a.txt");
    std::fs::write(&path, "one\r\ntwo\r\nthree").unwrap();
    assert_eq!(read(&path, Some(2), Some(1)).await.unwrap(), "two\r\n");
    assert_eq!(read(&path, Some(3), None).await.unwrap(), "three");
    assert_eq!(
        read(&path, None, None).await.unwrap(),
        "one\r\ntwo\r\nthree"
    );
    assert_eq!(read(&path, Some(1), Some(0)).await.unwrap(), "");
    let err = read(&path, Some(4), None).await.unwrap_err();
    assert_eq!(err.to_rpc_error().code, codes::INVALID_PARAMS);
    assert!(err.to_string().contains("has 3 lines"), "{err}");
}

#[tokio::test]
async fn missing_file_is_resource_not_found() {
    let f = fixture();
    let err = read(&f.root.join("nope.txt"), None, None)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::NotFound(_)), "{err:?}");
    assert_eq!(err.to_rpc_error().code, codes::RESOURCE_NOT_FOUND);
}

#[tokio::test]
async fn non_utf8_is_an_error() {
    let f = fixture();
    let path = f.root.join("latin1.txt");
    std::fs::write(&path, b"caf\xe9\n").unwrap();
    assert!(matches!(
        read(&path, None, None).await,
        Err(Error::NotUtf8 { .. })
    ));
}

#[tokio::test]
async fn whole_read_beyond_the_cap_fails() {
    let f = fixture();
    let path = f.root.join("big.txt");
    std::fs::write(&path, "0123456789\n".repeat(100)).unwrap();
    assert!(matches!(
        read_text_file(&path, None, None, 500).await,
        Err(Error::FileTooLarge { limit: 500, .. })
    ));
    assert_eq!(
        read_text_file(&path, Some(3), Some(2), 500).await.unwrap(),
        "0123456789\n0123456789\n"
    );
}

#[tokio::test]
async fn devices_fifos_and_directories_are_refused_without_hanging() {
    let f = fixture();
    let fifo = f.root.join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);

    for (path, what) in [
        (PathBuf::from("/dev/zero"), "character device"),
        (fifo, "FIFO"),
        (f.root.join("src"), "directory"),
    ] {
        // Hang guard only: refusal must come from metadata, not a read.
        let res = tokio::time::timeout(Duration::from_secs(30), read(&path, None, None))
            .await
            .expect("reading a special file hung");
        match res {
            Err(Error::NotRegularFile { what: w, .. }) => assert_eq!(w, what),
            other => panic!("{}: expected NotRegularFile, got {other:?}", path.display()),
        }
    }
}

#[tokio::test]
async fn write_creates_missing_parent_dirs() {
    let f = fixture();
    let ws = Workspace::new(vec![f.root.clone()]);
    let path = ws.resolve(&f.root.join("new/nested/dir/file.rs")).unwrap();
    let old = write_text_file_atomic(&path, "fn main() {}\n")
        .await
        .unwrap();
    assert_eq!(old, None);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "fn main() {}\n");
}

#[tokio::test]
async fn replace_returns_old_content_keeps_mode_and_leaves_no_temp_files() {
    let f = fixture();
    let path = f.root.join("src/main.rs");
    std::fs::write(&path, "old\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();

    let old = write_text_file_atomic(&path, "new\n").await.unwrap();
    assert_eq!(old.as_deref(), Some("old\n"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o640);
    let names: Vec<_> = std::fs::read_dir(f.root.join("src"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("main.rs")]);
}

#[tokio::test]
async fn replacing_non_utf8_content_returns_none_and_still_writes() {
    let f = fixture();
    let path = f.root.join("bin.dat");
    std::fs::write(&path, b"\xff\xfe").unwrap();
    assert_eq!(write_text_file_atomic(&path, "text").await.unwrap(), None);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "text");
}

#[tokio::test]
async fn write_refuses_a_symlink_target_and_leaves_the_outside_file_alone() {
    let f = fixture();
    let link = f.root.join("link.txt");
    symlink(f.outside.join("key.txt"), &link).unwrap();
    let err = write_text_file_atomic(&link, "pwned").await.unwrap_err();
    assert!(
        matches!(
            err,
            Error::NotRegularFile {
                what: "symbolic link",
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        std::fs::read_to_string(f.outside.join("key.txt")).unwrap(),
        "hunter2\n"
    );
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
}

#[tokio::test]
async fn write_refuses_a_directory() {
    let f = fixture();
    assert!(matches!(
        write_text_file_atomic(&f.root.join("src"), "x").await,
        Err(Error::NotRegularFile {
            what: "directory",
            ..
        })
    ));
}

#[tokio::test]
async fn a_file_with_a_name_of_250_bytes_can_be_written() {
    // Issue #25, S13: the longest legal names (255 bytes on ext4) failed
    // with ENAMETOOLONG because the temporary name was longer still.
    let f = fixture();
    let name = "n".repeat(250);
    let path = f.root.join(&name);
    write_text_file_atomic(&path, "first\n").await.unwrap();
    write_text_file_atomic(&path, "second\n").await.unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "second\n");
    let left: Vec<_> = std::fs::read_dir(&f.root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.as_encoded_bytes() != name.as_bytes() && n != "src")
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
}

#[tokio::test]
async fn skipping_to_a_line_of_a_huge_file_without_newlines_is_bounded() {
    // Issue #25, S5: `line = 2` of a 5 GB sparse file (one line of NULs)
    // scanned all of it, 16 s a read. The scan now stops at a bound and
    // says why; set_len makes the file without writing it.
    let f = fixture();
    let path = f.root.join("sparse.bin");
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(5 << 30).unwrap();
    drop(file);
    let e = read(&path, Some(2), Some(10)).await.unwrap_err();
    let text = e.to_string();
    assert!(text.contains("first") && text.contains("MiB"), "{text}");
    assert_eq!(e.to_rpc_error().code, codes::INVALID_PARAMS);
}
