//! Whole files on disk, never through a final symlink: opening a regular
//! file without blocking, and the atomic write (temp file, fsync, rename)
//! behind `fs/write_text_file`, a reject, a rewind and the permission
//! store.

// `Error`'s size is the crate's choice (error.rs); boxing it here would
// only move the cost.
#![allow(clippy::result_large_err)]

use std::fs::{File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// Default cap on the bytes one read returns (64 MiB): a whole-file read of
/// a huge or endless file fails instead of eating memory.
pub const DEFAULT_MAX_READ_BYTES: usize = 64 * 1024 * 1024;

pub(crate) fn file_kind(ft: std::fs::FileType) -> &'static str {
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

pub(crate) fn io_error(path: &Path, action: &'static str, source: io::Error) -> Error {
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
pub(crate) fn open_regular(path: &Path) -> Result<File> {
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

/// A whole regular file as text, through [`open_regular`] (never a FIFO
/// or a device, even one swapped in after a check), up to `cap` bytes.
/// The error says why in words: unreadable, larger than `cap`, not UTF-8.
pub(crate) fn read_text_capped(path: &Path, cap: u64) -> std::result::Result<String, String> {
    let file = open_regular(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > cap {
        return Err(format!("larger than {cap} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8".to_owned())
}

/// Reads the content a write is about to replace, for edit review. Gives
/// `None` (and logs why) when it is unreadable, larger than
/// [`DEFAULT_MAX_READ_BYTES`] or not UTF-8: the write itself still goes ahead.
fn read_old_content(path: &Path) -> Option<String> {
    read_text_capped(path, DEFAULT_MAX_READ_BYTES as u64)
        .inspect_err(|e| {
            tracing::warn!(path = %path.display(), error = %e, "no old content of the file a write replaces for review");
        })
        .ok()
}

/// [`crate::edits::fs::write_text_file_atomic`] on the calling thread. `want_old` skips
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_read_refuses_a_fifo_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only creates the node.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        // No writer ever opens it: a blocking open would hang this test.
        assert!(read_text_capped(&fifo, 1024).is_err());
    }

    #[test]
    fn a_capped_read_gives_the_text_and_refuses_what_is_too_large_or_not_utf8() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "abc\n").unwrap();
        assert_eq!(read_text_capped(&path, 4).unwrap(), "abc\n");
        assert_eq!(
            read_text_capped(&path, 3).unwrap_err(),
            "larger than 3 bytes"
        );
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert_eq!(read_text_capped(&path, 4).unwrap_err(), "not UTF-8");
    }
}
