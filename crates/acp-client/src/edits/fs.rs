//! `fs/*`: the workspace sandbox and disk-backed reads and writes.
//!
//! [`Workspace::resolve`] is the one gate every agent-supplied path goes
//! through: it makes the path absolute and symlink-free and checks that it
//! lies inside the session's roots. [`read_text_file`] and
//! [`write_text_file_atomic`] then serve the request from disk when the
//! editor has no buffer for the path; [`slice_lines`] applies the same
//! `line`/`limit` rules to text an editor returned whole.
//!
//! # Line rules (`fs/read_text_file`)
//!
//! - A line is everything up to and including its `\n`; the last line may
//!   lack one. Line endings are returned as they are in the file (`\r\n`
//!   stays `\r\n`), so concatenating every line gives the file back.
//! - `line` is 1-based; `None` and `0` both mean line 1 (agents send `0`
//!   when they mean "from the start").
//! - `limit` counts lines; `None` means "to the end", `0` returns an empty
//!   string (after `line` was checked).
//! - `line` past the last line is an error naming the line count. A file
//!   ending in `\n` has as many lines as it has `\n`s, so `line` = count + 1
//!   is past the end too. Line 1 is always valid, so reading an empty file
//!   returns an empty string.
//!
//! Unix only: the disk functions rely on `O_NOFOLLOW`, `O_NONBLOCK` and
//! permission bits.

// `Error`'s size is the crate's choice (error.rs); boxing it here would
// only move the cost.
#![allow(clippy::result_large_err)]

use std::io::{self, BufRead, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

pub use crate::disk::DEFAULT_MAX_READ_BYTES;
use crate::disk::{io_error, open_regular, write_atomic_blocking};
use crate::error::{Error, Result};
use crate::path::CanonicalPath;

/// The directories a session may touch: its cwd plus `additionalDirectories`,
/// plus paths the editor's policy explicitly allows (exact files or
/// directory trees).
#[derive(Debug, Clone, Default)]
pub struct Workspace {
    roots: Vec<PathBuf>,
    allowed: Vec<PathBuf>,
}

impl Workspace {
    /// A workspace with these roots. Each root is made absolute (against the
    /// current directory) and its symlinks are resolved once, here, so a
    /// cwd reached through a symlink still contains the paths inside it.
    pub fn new(roots: Vec<PathBuf>) -> Self {
        Self {
            roots: roots.iter().map(|r| normalize_trusted(r)).collect(),
            allowed: Vec::new(),
        }
    }

    /// Also allow `path` (a file, or a directory and everything under it),
    /// for example a file the editor's policy lets agents read outside the
    /// project. Normalized like the roots.
    pub fn allow(&mut self, path: PathBuf) {
        self.allowed.push(normalize_trusted(&path));
    }

    /// The normalized roots, in the order given.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The normalized extra paths added with [`Workspace::allow`].
    pub fn allowed(&self) -> &[PathBuf] {
        &self.allowed
    }

    /// Validates an agent-supplied path and returns it normalized.
    ///
    /// The path must be absolute ([`Error::RelativePath`]) and free of NUL
    /// bytes ([`Error::InvalidParams`]). `.` and `..` are resolved and every
    /// symbolic link on the way is followed, the way the kernel would walk
    /// the path; components that do not exist yet are kept as written, so a
    /// write to a new nested path resolves through its deepest existing
    /// ancestor and a symlinked parent pointing elsewhere is followed too.
    /// The result must lie inside a root or an allowed path, else
    /// [`Error::OutsideWorkspace`] names the resolved path.
    ///
    /// The walk is [`CanonicalPath::resolve`]'s, so the result is the key
    /// of the file's state everywhere in the edit layer. Makes one `lstat`
    /// (and `readlink` per symlink) per component: cheap, but blocking,
    /// like any path check.
    pub fn resolve(&self, path: &Path) -> Result<CanonicalPath> {
        if path.as_os_str().as_bytes().contains(&0) {
            return Err(Error::InvalidParams(format!(
                "path `{}` contains a NUL byte",
                path.display()
            )));
        }
        if !path.is_absolute() {
            return Err(Error::RelativePath {
                path: path.to_owned(),
            });
        }
        let resolved = CanonicalPath::resolve(path)?;
        if self.contains(&resolved) {
            Ok(resolved)
        } else {
            Err(Error::OutsideWorkspace {
                path: resolved.into_path_buf(),
                roots: self.roots.clone(),
            })
        }
    }

    /// True when an already resolved path lies inside a root or an allowed
    /// path. Comparison is by whole components: `/a/bc` is not inside `/a/b`.
    pub fn contains(&self, resolved: &Path) -> bool {
        self.roots
            .iter()
            .chain(&self.allowed)
            .any(|base| resolved.starts_with(base))
    }
}

/// Normalizes a path the editor supplied (root or allowed path): relative
/// paths are taken against the current directory. Never fails: a path that
/// cannot be resolved is kept as written, which only ever narrows access.
fn normalize_trusted(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
    match CanonicalPath::resolve(&absolute) {
        Ok(p) => p.into_path_buf(),
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "could not resolve workspace path; using it as written");
            absolute
        }
    }
}

/// The most bytes a read skips while looking for its first line: `line = 2`
/// of a 5 GB file of one line (a sparse file, a binary) scanned it all, 16 s
/// a read (issue #25, S5). 1 GiB is a few hundred ms from the page cache
/// and still lets an agent page through large logs.
const MAX_SKIP_BYTES: u64 = 1 << 30;

/// The longest a read may spend skipping to its first line (a slow or
/// network file system, where the byte bound is not enough).
const MAX_SKIP_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// Why a line slice failed, before a path is attached.
#[derive(Debug)]
enum SliceError {
    PastEnd {
        line: u64,
        count: u64,
    },
    TooLarge,
    /// Skipping to `line` passed [`MAX_SKIP_BYTES`] or [`MAX_SKIP_TIME`]
    /// after `scanned` bytes.
    SkipBound {
        line: u64,
        scanned: u64,
    },
    Io(io::Error),
}

impl From<io::Error> for SliceError {
    fn from(e: io::Error) -> Self {
        SliceError::Io(e)
    }
}

fn past_end_message(line: u64, count: u64, what: &str) -> String {
    let plural = if count == 1 { "" } else { "s" };
    format!("line {line} is past the end of {what}, which has {count} line{plural}; ask for a line between 1 and {count}")
}

fn skip_bound_message(line: u64, scanned: u64, what: &str) -> String {
    format!(
        "line {line} of {what} was not found within its first {} MiB (it has very long lines or is not text); read it from the start with `limit`, or inspect it with a terminal command",
        scanned.div_ceil(1 << 20)
    )
}

/// Streams the requested lines out of `reader`. Lines before `line` are
/// skipped without being stored (at most [`MAX_SKIP_BYTES`] of them, for
/// at most [`MAX_SKIP_TIME`]), and reading stops as soon as `limit` lines
/// were collected, so the work is proportional to what was asked for.
fn take_lines<R: BufRead>(
    reader: &mut R,
    line: Option<u32>,
    limit: Option<u32>,
    max_bytes: usize,
) -> Result<Vec<u8>, SliceError> {
    let start = u64::from(line.unwrap_or(1).max(1));

    // Skip the lines before `start`; `partial` is true while inside a line
    // whose newline has not been seen yet.
    let mut skipped = 0u64;
    let mut partial = false;
    let mut scanned = 0u64;
    let began = std::time::Instant::now();
    while skipped < start - 1 {
        if scanned > MAX_SKIP_BYTES || began.elapsed() > MAX_SKIP_TIME {
            return Err(SliceError::SkipBound {
                line: start,
                scanned,
            });
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Err(SliceError::PastEnd {
                line: start,
                count: skipped + u64::from(partial),
            });
        }
        match memchr::memchr(b'\n', buf) {
            Some(i) => {
                reader.consume(i + 1);
                scanned += i as u64 + 1;
                skipped += 1;
                partial = false;
            }
            None => {
                let n = buf.len();
                reader.consume(n);
                scanned += n as u64;
                partial = true;
            }
        }
    }
    if start > 1 && reader.fill_buf()?.is_empty() {
        return Err(SliceError::PastEnd {
            line: start,
            count: start - 1,
        });
    }

    let mut out = Vec::new();
    let mut taken = 0u32;
    while limit.is_none_or(|l| taken < l) {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (chunk_len, ends_line) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if out.len() + chunk_len > max_bytes {
            return Err(SliceError::TooLarge);
        }
        out.extend_from_slice(&buf[..chunk_len]);
        reader.consume(chunk_len);
        if ends_line {
            taken += 1;
        }
    }
    Ok(out)
}

/// Applies the `line`/`limit` rules of the module docs to text an editor
/// returned whole (for example a buffer's content). Pure; never truncates
/// for size.
pub fn slice_lines(text: &str, line: Option<u32>, limit: Option<u32>) -> Result<String> {
    let mut reader = text.as_bytes();
    match take_lines(&mut reader, line, limit, usize::MAX) {
        // Whole lines of valid UTF-8 are valid UTF-8: lines end at an ASCII `\n`.
        Ok(bytes) => String::from_utf8(bytes)
            .map_err(|_| Error::InvalidParams("line slice split a character".to_owned())),
        Err(SliceError::SkipBound { line, scanned }) => Err(Error::InvalidParams(
            skip_bound_message(line, scanned, "the file"),
        )),
        Err(SliceError::PastEnd { line, count }) => Err(Error::InvalidParams(past_end_message(
            line, count, "the file",
        ))),
        Err(SliceError::TooLarge) | Err(SliceError::Io(_)) => Err(Error::InvalidParams(
            "reading in-memory text failed".to_owned(),
        )),
    }
}

/// Counts the bytes actually pulled from the file, so tests can prove that a
/// limited read of a huge file touches only its beginning.
struct CountingReader<R> {
    inner: R,
    bytes: u64,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// [`read_text_file`] on the calling thread; also reports how many bytes
/// were read from disk.
fn read_text_file_blocking(
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
    max_bytes: usize,
) -> (Result<String>, u64) {
    let file = match open_regular(path) {
        Ok(f) => f,
        Err(e) => return (Err(e), 0),
    };
    // 64 KiB reads: a skip through a large file makes 8x fewer syscalls.
    let mut reader = BufReader::with_capacity(
        64 * 1024,
        CountingReader {
            inner: file,
            bytes: 0,
        },
    );
    let result =
        match take_lines(&mut reader, line, limit, max_bytes) {
            Ok(bytes) => String::from_utf8(bytes).map_err(|_| Error::NotUtf8 {
                path: path.to_owned(),
            }),
            Err(SliceError::PastEnd { line, count }) => Err(Error::InvalidParams(
                past_end_message(line, count, &format!("`{}`", path.display())),
            )),
            Err(SliceError::SkipBound { line, scanned }) => Err(Error::InvalidParams(
                skip_bound_message(line, scanned, &format!("`{}`", path.display())),
            )),
            Err(SliceError::TooLarge) => Err(Error::FileTooLarge {
                path: path.to_owned(),
                limit: max_bytes,
            }),
            Err(SliceError::Io(e)) => Err(io_error(path, "read", e)),
        };
    (result, reader.get_ref().bytes)
}

/// Reads lines of a file from disk with ACP semantics (see the module docs
/// for the `line`/`limit` rules).
///
/// The read streams: it stops as soon as `limit` lines were collected, so
/// 50 lines of a 2 GB file read a few buffers. The returned text never
/// exceeds `max_bytes` ([`DEFAULT_MAX_READ_BYTES`] is a good default);
/// beyond it the read fails with [`Error::FileTooLarge`], so an enormous
/// whole-file read cannot exhaust memory. Only regular files are read:
/// directories, FIFOs, devices, sockets and a final symlink component are
/// refused with [`Error::NotRegularFile`] without blocking (pass the path
/// through [`Workspace::resolve`] first, which resolves symlinks). A missing
/// file is [`Error::NotFound`]; text that is not UTF-8 is [`Error::NotUtf8`].
/// Runs on tokio's blocking pool.
pub async fn read_text_file(
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
    max_bytes: usize,
) -> Result<String> {
    let owned = path.to_owned();
    tokio::task::spawn_blocking(move || read_text_file_blocking(&owned, line, limit, max_bytes).0)
        .await
        .map_err(|e| Error::FileIo {
            path: path.to_owned(),
            action: "read",
            source: io::Error::other(e.to_string()),
        })?
}

/// The directories above `path` that do not exist, nearest first: what
/// writing `path` creates.
pub fn missing_dirs(path: &Path) -> Vec<PathBuf> {
    path.ancestors()
        .skip(1)
        .take_while(|dir| !dir.as_os_str().is_empty() && std::fs::symlink_metadata(dir).is_err())
        .map(Path::to_path_buf)
        .collect()
}

/// Writes `content` to `path` atomically and returns what it replaced.
///
/// Missing parent directories are created. The text goes to a temp file in
/// the same directory, is fsynced, then renamed over the target, so a crash
/// mid-write leaves the old file or the new one, never a truncated file. An
/// existing file's permission bits are kept (its owner becomes the writing
/// user, and hard links to it keep the old content, as with any
/// rename-based save).
///
/// Returns the previous content, `None` when the file did not exist, or
/// when its old content is not UTF-8 or larger than
/// [`DEFAULT_MAX_READ_BYTES`] (logged). Refuses with
/// [`Error::NotRegularFile`] when the target is a directory, FIFO, device or
/// a symbolic link: the caller resolved symlinks with
/// [`Workspace::resolve`], so a link there appeared since and might point
/// outside the workspace. Runs on tokio's blocking pool.
pub async fn write_text_file_atomic(path: &Path, content: &str) -> Result<Option<String>> {
    let owned = path.to_owned();
    let content = content.to_owned();
    tokio::task::spawn_blocking(move || write_atomic_blocking(&owned, content.as_bytes(), true))
        .await
        .map_err(|e| Error::FileIo {
            path: path.to_owned(),
            action: "write",
            source: io::Error::other(e.to_string()),
        })?
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Write;

    fn slice(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
        slice_lines(text, line, limit).unwrap()
    }

    #[test]
    fn first_and_last_lines() {
        let t = "one\ntwo\nthree\n";
        assert_eq!(slice(t, Some(1), Some(1)), "one\n");
        assert_eq!(slice(t, Some(3), Some(1)), "three\n");
        assert_eq!(slice(t, Some(3), None), "three\n");
        assert_eq!(slice(t, Some(2), Some(100)), "two\nthree\n");
        assert_eq!(slice(t, None, None), t);
        assert_eq!(slice(t, None, Some(2)), "one\ntwo\n");
    }

    #[test]
    fn file_without_trailing_newline_keeps_its_last_line() {
        let t = "one\ntwo";
        assert_eq!(slice(t, Some(2), None), "two");
        assert_eq!(slice(t, Some(2), Some(5)), "two");
        assert_eq!(slice(t, None, None), t);
        let err = slice_lines(t, Some(3), None).unwrap_err().to_string();
        assert!(
            err.contains("line 3") && err.contains("has 2 lines"),
            "{err}"
        );
    }

    #[test]
    fn crlf_line_endings_are_preserved() {
        let t = "a\r\nb\r\nc\r\n";
        assert_eq!(slice(t, Some(2), Some(1)), "b\r\n");
        assert_eq!(slice(t, Some(2), None), "b\r\nc\r\n");
    }

    #[test]
    fn limit_zero_is_empty_but_line_is_still_checked() {
        assert_eq!(slice("a\nb\n", Some(2), Some(0)), "");
        assert!(slice_lines("a\nb\n", Some(5), Some(0)).is_err());
    }

    #[test]
    fn line_zero_means_line_one() {
        assert_eq!(slice("a\nb\n", Some(0), Some(1)), "a\n");
    }

    #[test]
    fn line_after_trailing_newline_is_past_the_end() {
        let err = slice_lines("a\nb\n", Some(3), None).unwrap_err();
        assert!(matches!(err, Error::InvalidParams(_)));
        assert!(err.to_string().contains("has 2 lines"), "{err}");
        assert!(slice_lines("a\nb\n", Some(9), Some(1)).is_err());
    }

    #[test]
    fn empty_text_reads_as_empty_from_line_one_only() {
        assert_eq!(slice("", None, None), "");
        assert_eq!(slice("", Some(1), Some(3)), "");
        let err = slice_lines("", Some(2), None).unwrap_err().to_string();
        assert!(err.contains("has 0 lines"), "{err}");
    }

    #[test]
    fn blank_lines_count() {
        assert_eq!(slice("\n\nx\n", Some(2), Some(2)), "\nx\n");
        assert_eq!(slice("\n", Some(1), None), "\n");
        assert!(slice_lines("\n", Some(2), None).is_err());
    }

    #[test]
    fn multibyte_text_is_sliced_on_lines() {
        assert_eq!(slice("héllo\nwörld\n", Some(2), None), "wörld\n");
    }

    #[test]
    fn byte_cap_applies_to_the_returned_text() {
        let mut r = "abcdef\nghi\n".as_bytes();
        assert!(matches!(
            take_lines(&mut r, None, None, 8),
            Err(SliceError::TooLarge)
        ));
        let mut r = "abcdef\nghi\n".as_bytes();
        assert_eq!(take_lines(&mut r, None, Some(1), 8).unwrap(), b"abcdef\n");
        let mut r = "abcdef\nghi\n".as_bytes();
        assert_eq!(take_lines(&mut r, Some(2), None, 4).unwrap(), b"ghi\n");
    }

    #[test]
    fn limited_read_of_a_huge_sparse_file_reads_only_its_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.txt");
        let mut f = File::create(&path).unwrap();
        for i in 1..=20 {
            writeln!(f, "line {i}").unwrap();
        }
        f.set_len(1 << 30).unwrap();
        drop(f);

        let (text, bytes) =
            read_text_file_blocking(&path, Some(1), Some(10), DEFAULT_MAX_READ_BYTES);
        let expected: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        assert_eq!(text.unwrap(), expected);
        assert!(bytes <= 64 * 1024, "read {bytes} bytes for 10 lines");

        // The tail is one 1 GB line of NULs: a whole read hits the cap
        // after reading about the cap, not the gigabyte.
        let cap = 1024 * 1024;
        let (text, bytes) = read_text_file_blocking(&path, None, None, cap);
        assert!(matches!(text, Err(Error::FileTooLarge { limit, .. }) if limit == cap));
        assert!(
            bytes <= 2 * cap as u64,
            "read {bytes} bytes with a {cap}-byte cap"
        );
    }

    #[test]
    fn skipping_lines_does_not_read_past_the_requested_ones() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.txt");
        let mut f = File::create(&path).unwrap();
        for i in 1..=2000 {
            writeln!(f, "line {i}").unwrap();
        }
        f.set_len(1 << 30).unwrap();
        drop(f);
        let (text, bytes) =
            read_text_file_blocking(&path, Some(1990), Some(2), DEFAULT_MAX_READ_BYTES);
        assert_eq!(text.unwrap(), "line 1990\nline 1991\n");
        assert!(bytes <= 64 * 1024, "read {bytes} bytes");
    }

    #[test]
    fn resolve_follows_dotdot_after_a_symlink_like_the_kernel() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::os::unix::fs::symlink(root.join("a/b"), root.join("link")).unwrap();
        let ws = Workspace::new(vec![root.clone()]);
        // link/.. is a (the parent of the target), not root.
        assert_eq!(
            ws.resolve(&root.join("link/../x")).unwrap().as_path(),
            root.join("a/x")
        );
    }

    #[test]
    fn symlink_loops_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(root.join("b"), root.join("a")).unwrap();
        std::os::unix::fs::symlink(root.join("a"), root.join("b")).unwrap();
        let ws = Workspace::new(vec![root.clone()]);
        assert!(matches!(
            ws.resolve(&root.join("a/x")),
            Err(Error::InvalidParams(_))
        ));
    }

    #[test]
    fn nul_bytes_are_refused() {
        let ws = Workspace::new(vec![PathBuf::from("/")]);
        let path = PathBuf::from(std::ffi::OsStr::from_bytes(b"/tmp/a\0b"));
        assert!(matches!(ws.resolve(&path), Err(Error::InvalidParams(_))));
    }

    #[test]
    fn roots_match_whole_components_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let ws = Workspace::new(vec![root.join("proj")]);
        let sibling = root.join("project2/file");
        assert!(matches!(
            ws.resolve(&sibling),
            Err(Error::OutsideWorkspace { .. })
        ));
    }
}
