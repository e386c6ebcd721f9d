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

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Default cap on the bytes one read returns (64 MiB): a whole-file read of
/// a huge or endless file fails instead of eating memory.
pub const DEFAULT_MAX_READ_BYTES: usize = 64 * 1024 * 1024;

/// How many symbolic links one path may pass through, as Linux's `MAXSYMLINKS`.
const MAX_SYMLINK_FOLLOWS: u32 = 40;

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
    /// Makes one `lstat` (and `readlink` per symlink) per component: cheap,
    /// but blocking, like any path check.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf> {
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
        let resolved = resolve_symlinks(path)?;
        if self.contains(&resolved) {
            Ok(resolved)
        } else {
            Err(Error::OutsideWorkspace {
                path: resolved,
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
    match resolve_symlinks(&absolute) {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "could not resolve workspace path; using it as written");
            absolute
        }
    }
}

/// One step left to walk while resolving a path.
enum Step {
    Parent,
    Name(OsString),
}

fn push_steps_front(queue: &mut VecDeque<Step>, path: &Path) {
    let steps: Vec<Step> = path
        .components()
        .filter_map(|c| match c {
            Component::ParentDir => Some(Step::Parent),
            Component::Normal(n) => Some(Step::Name(n.to_owned())),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect();
    for step in steps.into_iter().rev() {
        queue.push_front(step);
    }
}

/// Walks an absolute path component by component like the kernel does:
/// `..` goes to the parent of what was resolved so far (so `link/..` is the
/// parent of the link's target, not the directory holding the link), and
/// every existing symlink is replaced by its target. Components that do not
/// exist are appended as written. A dangling symlink is followed too, so a
/// write that would create its target is checked against the target.
pub(crate) fn resolve_symlinks(path: &Path) -> Result<PathBuf> {
    let mut out = PathBuf::from("/");
    let mut queue = VecDeque::new();
    push_steps_front(&mut queue, path);
    let mut follows = 0;
    while let Some(step) = queue.pop_front() {
        match step {
            Step::Parent => {
                out.pop();
            }
            Step::Name(name) => {
                let candidate = out.join(&name);
                let is_link = std::fs::symlink_metadata(&candidate)
                    .map(|m| m.file_type().is_symlink())
                    // Missing, or not searchable: the kernel could not follow
                    // anything there either, so treat it as a plain name.
                    .unwrap_or(false);
                if !is_link {
                    out = candidate;
                    continue;
                }
                follows += 1;
                if follows > MAX_SYMLINK_FOLLOWS {
                    return Err(Error::InvalidParams(format!(
                        "path `{}` passes through too many symbolic links (a loop?)",
                        path.display()
                    )));
                }
                let target = std::fs::read_link(&candidate).map_err(|source| Error::FileIo {
                    path: candidate.clone(),
                    action: "read the symbolic link",
                    source,
                })?;
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                push_steps_front(&mut queue, &target);
            }
        }
    }
    Ok(out)
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

fn file_kind(ft: std::fs::FileType) -> &'static str {
    if ft.is_dir() {
        "directory"
    } else if ft.is_symlink() {
        "symbolic link"
    } else if ft.is_fifo() {
        "FIFO"
    } else if ft.is_char_device() {
        "character device"
    } else if ft.is_block_device() {
        "block device"
    } else if ft.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

fn io_error(path: &Path, action: &'static str, source: io::Error) -> Error {
    if source.kind() == io::ErrorKind::NotFound {
        return Error::NotFound(format!("file `{}` does not exist", path.display()));
    }
    if source.raw_os_error() == Some(libc::ELOOP) {
        // O_NOFOLLOW on a final component that is a symlink.
        return Error::NotRegularFile {
            path: path.to_owned(),
            what: "symbolic link",
        };
    }
    Error::FileIo {
        path: path.to_owned(),
        action,
        source,
    }
}

/// Opens an existing regular file for reading without following a final
/// symlink and without blocking: a FIFO or device is refused from its
/// metadata, and opened non-blocking in case it was swapped in between, so
/// neither a FIFO with no writer nor `/dev/zero` can hang a read.
fn open_regular(path: &Path) -> Result<File> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| io_error(path, "read", e))?;
    if !meta.file_type().is_file() {
        return Err(Error::NotRegularFile {
            path: path.to_owned(),
            what: file_kind(meta.file_type()),
        });
    }
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| io_error(path, "open", e))?;
    let meta = file.metadata().map_err(|e| io_error(path, "read", e))?;
    if !meta.file_type().is_file() {
        return Err(Error::NotRegularFile {
            path: path.to_owned(),
            what: file_kind(meta.file_type()),
        });
    }
    Ok(file)
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

/// Names temp files uniquely within this process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A short name no other temp file of ours is likely to have: 64 random
/// bits from std's per-process hash keys, the time and a counter.
fn temp_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(TEMP_COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    format!(".acp-{:016x}.tmp", h.finish())
}

/// Creates a fresh temp file next to `path` (same directory, so the final
/// rename is atomic), hidden and clearly ours if a crash leaves it behind.
/// The name is short and fixed in length (`.acp-<16 hex>.tmp`, 25 bytes),
/// never derived from the target's: a target with a 250-byte name (legal,
/// up to 255) would otherwise get a temp name too long to create
/// (ENAMETOOLONG, issue #25 S13).
fn create_temp_beside(dir: &Path, mode: u32) -> Result<(File, PathBuf)> {
    let mut last_err = None;
    for _ in 0..16 {
        let tmp = dir.join(temp_name());
        match OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(io_error(&tmp, "create a temporary file in", e)),
        }
    }
    Err(Error::FileIo {
        path: dir.to_owned(),
        action: "create a temporary file in",
        source: last_err.unwrap_or_else(|| io::Error::other("no free temporary name")),
    })
}

/// Reads the content a write is about to replace, for edit review. Gives
/// `None` (and logs why) when it is unreadable, larger than
/// [`DEFAULT_MAX_READ_BYTES`] or not UTF-8: the write itself still goes ahead.
fn read_old_content(path: &Path) -> Option<String> {
    let file = match open_regular(path) {
        Ok(f) => f,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "could not read the content a write replaces");
            return None;
        }
    };
    let mut bytes = Vec::new();
    let cap = DEFAULT_MAX_READ_BYTES as u64;
    if let Err(e) = file.take(cap + 1).read_to_end(&mut bytes) {
        tracing::warn!(path = %path.display(), error = %e, "could not read the content a write replaces");
        return None;
    }
    if bytes.len() as u64 > cap {
        tracing::warn!(path = %path.display(), "the file a write replaces is too large to keep for review");
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(s) => Some(s),
        Err(_) => {
            tracing::warn!(path = %path.display(), "the file a write replaces is not UTF-8; no old content for review");
            None
        }
    }
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

/// [`write_text_file_atomic`] on the calling thread. `want_old` skips
/// reading the previous content when the caller does not need it.
pub(crate) fn write_atomic_blocking(
    path: &Path,
    content: &[u8],
    want_old: bool,
) -> Result<Option<String>> {
    let (Some(dir), Some(_)) = (path.parent(), path.file_name()) else {
        return Err(Error::InvalidParams(format!(
            "`{}` does not name a file",
            path.display()
        )));
    };
    std::fs::create_dir_all(dir).map_err(|source| Error::FileIo {
        path: dir.to_owned(),
        action: "create the directory",
        source,
    })?;

    // lstat, not stat: the rename below replaces the final component itself,
    // so a symlink there would be silently turned into a file. The caller
    // resolved symlinks, so one here appeared since: refuse it.
    let (old_mode, old_content) = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_file() => {
            let old = if want_old {
                read_old_content(path)
            } else {
                None
            };
            (Some(meta.permissions().mode() & 0o7777), old)
        }
        Ok(meta) => {
            return Err(Error::NotRegularFile {
                path: path.to_owned(),
                what: file_kind(meta.file_type()),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => (None, None),
        Err(e) => return Err(io_error(path, "inspect", e)),
    };

    // A new file gets the usual 0o666 minus umask; a replaced one starts
    // private and receives the old bits with fchmod (which ignores umask).
    let (mut tmp_file, tmp_path) = create_temp_beside(dir, old_mode.map_or(0o666, |_| 0o600))?;
    let written = (|| -> io::Result<()> {
        tmp_file.write_all(content)?;
        if let Some(mode) = old_mode {
            tmp_file.set_permissions(Permissions::from_mode(mode))?;
        }
        // Data on disk before the rename makes it visible: a crash leaves
        // either the old file or the complete new one, never a truncated one.
        tmp_file.sync_all()?;
        drop(tmp_file);
        std::fs::rename(&tmp_path, path)
    })();
    if let Err(source) = written {
        if let Err(e) = std::fs::remove_file(&tmp_path) {
            tracing::warn!(path = %tmp_path.display(), error = %e, "could not remove temporary file");
        }
        return Err(Error::FileIo {
            path: path.to_owned(),
            action: "write",
            source,
        });
    }
    // Make the rename itself durable. Some filesystems cannot fsync a
    // directory; the data is safe either way, so only log.
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(dir = %dir.display(), error = %e, "could not fsync directory after rename");
    }
    Ok(old_content)
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
        // link/.. is a (the parent of the target), not root.
        assert_eq!(
            resolve_symlinks(&root.join("link/../x")).unwrap(),
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
