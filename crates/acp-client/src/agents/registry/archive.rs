//! Unpacking downloaded agent archives into a directory the install owns.
//!
//! An archive is agent-controlled data (a compromised release, a hostile
//! mirror), so unpacking promises, whatever the archive holds:
//!
//! - Nothing is created or written outside the target directory. Names that
//!   are absolute or climb with `..` are refused; no entry is ever written
//!   through a symbolic link (a link as a parent of a later entry is refused,
//!   a link in the place of a file is replaced, not followed); every link is
//!   resolved against what was actually extracted, following the links it
//!   passes through, both when it is made and once the archive is complete
//!   (a later link can change where an earlier one leads), and a link that
//!   leads outside fails the install. A textual check of each link alone is
//!   not enough: `a -> .` then `a/b -> ..` each look harmless.
//! - The unpacked bytes are bounded ([`Limits`]): relative to the archive's
//!   size (real agent binaries compress 2-5x; a decompression bomb 1000x),
//!   absolutely, and in entries. The bound counts decompressed bytes as they
//!   are read, so a huge tar header extension (a GNU long name) is caught
//!   before it is held in memory, and a hard link copies count like files.
//!
//! Failing leaves partial files in the target; the installer builds in a
//! temporary directory it removes (install.rs).

use std::cell::Cell;
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use super::cancel::CancelToken;
use crate::error::{Error, Result};

/// The archive formats of the registry's `binary` distributions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.zip`
    Zip,
    /// `.tar.gz`, `.tgz`
    TarGz,
    /// `.tar.bz2`, `.tbz2`
    TarBz2,
    /// `.tar`
    Tar,
    /// Anything else: the executable itself.
    Raw,
}

impl Format {
    /// The format named by the end of `url` (query and fragment ignored).
    pub fn of_url(url: &str) -> Format {
        let path = url
            .split(['?', '#'])
            .next()
            .unwrap_or(url)
            .to_ascii_lowercase();
        if path.ends_with(".zip") {
            Format::Zip
        } else if path.ends_with(".tar.gz") || path.ends_with(".tgz") {
            Format::TarGz
        } else if path.ends_with(".tar.bz2") || path.ends_with(".tbz2") {
            Format::TarBz2
        } else if path.ends_with(".tar") {
            Format::Tar
        } else {
            Format::Raw
        }
    }
}

/// Bounds on what one archive may unpack to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Unpacked bytes allowed per byte of archive. Agent binaries compress
    /// 2-5x (codex-acp's tar.gz: 3.1x), text-heavy Node bundles up to ~10x.
    pub ratio: u64,
    /// Bytes any archive may unpack to whatever its ratio, so that a small
    /// archive of a script is not held to 100x its few kilobytes.
    pub floor: u64,
    /// Bytes no archive may unpack beyond, whatever its size.
    pub absolute: u64,
    /// Entries (files, directories, links) an archive may hold.
    pub entries: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            ratio: 100,
            floor: 32 << 20,
            absolute: 1 << 30,
            entries: 50_000,
        }
    }
}

impl Limits {
    /// The unpacked bytes allowed for an archive of `archive_bytes`: for a
    /// 1 MB archive 100 MB, for a 20 MB one the 1 GiB cap.
    pub fn bytes_for(&self, archive_bytes: u64) -> u64 {
        archive_bytes
            .saturating_mul(self.ratio)
            .max(self.floor)
            .min(self.absolute)
    }
}

/// `path` as a relative path of plain names (`./` parts dropped), or `None`
/// when it is absolute or climbs with `..`.
pub fn safe_relative(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::Normal(name) => out.push(name),
            Component::CurDir => {}
            Component::ParentDir | Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// The symbolic links followed while resolving one path, at most (Linux's
/// own limit is 40).
const MAX_LINK_HOPS: usize = 40;

/// True when the link `link` (relative to `root`, already on disk) leads to
/// a place inside `root`, resolving it as the kernel would against what is
/// on disk now: each link met on the way is followed, `..` after a link
/// climbs from where the link led. Parts that do not exist yet are taken
/// as plain names (nothing will be extracted after the final check).
fn link_resolves_inside(root: &Path, link: &Path) -> bool {
    // The place reached so far, as names below the root.
    let mut at: Vec<OsString> = match link.parent() {
        Some(p) => p.iter().map(|c| c.to_owned()).collect(),
        None => Vec::new(),
    };
    let Ok(target) = fs::read_link(root.join(link)) else {
        return false;
    };
    // Components still to walk, the next one last.
    let mut todo: Vec<PathBuf> = Vec::new();
    if !push_components(&target, &mut todo) {
        return false;
    }
    let mut hops = 1;
    while let Some(c) = todo.pop() {
        if c.as_os_str() == ".." {
            if at.pop().is_none() {
                return false;
            }
            continue;
        }
        at.push(c.into_os_string());
        let here: PathBuf = root.join(at.iter().collect::<PathBuf>());
        let is_link = fs::symlink_metadata(&here).is_ok_and(|m| m.file_type().is_symlink());
        if is_link {
            hops += 1;
            if hops > MAX_LINK_HOPS {
                return false;
            }
            let Ok(next) = fs::read_link(&here) else {
                return false;
            };
            at.pop();
            if !push_components(&next, &mut todo) {
                return false;
            }
        }
    }
    true
}

/// Pushes `target`'s components onto `todo` (last first); false for an
/// absolute target, which leaves the root by definition.
fn push_components(target: &Path, todo: &mut Vec<PathBuf>) -> bool {
    let mut parts = Vec::new();
    for c in target.components() {
        match c {
            Component::Normal(name) => parts.push(PathBuf::from(name)),
            Component::ParentDir => parts.push(PathBuf::from("..")),
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    todo.extend(parts.into_iter().rev());
    true
}

fn unsafe_entry(name: &Path) -> Error {
    Error::Registry(format!(
        "the archive contains the entry `{}`, which points outside its directory; it was not installed (the archive is broken or malicious)",
        name.display()
    ))
}

fn through_link(name: &Path, link: &Path) -> Error {
    Error::Registry(format!(
        "the archive contains the entry `{}`, which would be written through its symbolic link `{}`; it was not installed (the archive is broken or malicious)",
        name.display(),
        link.display()
    ))
}

fn corrupt(e: impl std::fmt::Display) -> Error {
    Error::Registry(format!(
        "the downloaded archive is corrupt ({e}); try again, and report it to the agent's authors if it persists"
    ))
}

fn io_err(path: &Path, e: io::Error) -> Error {
    Error::Registry(format!("could not write {}: {e}", path.display()))
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes.div_ceil(1 << 20))
}

/// What one extraction has used of its [`Limits`].
struct Budget {
    archive_bytes: u64,
    max_bytes: u64,
    absolute: u64,
    max_entries: u64,
    /// Decompressed bytes read so far (shared with the counting reader).
    read: Rc<Cell<u64>>,
    entries: u64,
}

impl Budget {
    fn new(archive_bytes: u64, limits: &Limits) -> Self {
        Self {
            archive_bytes,
            max_bytes: limits.bytes_for(archive_bytes),
            absolute: limits.absolute,
            max_entries: limits.entries,
            read: Rc::new(Cell::new(0)),
            entries: 0,
        }
    }

    fn over(&self) -> bool {
        self.read.get() > self.max_bytes
    }

    fn too_large(&self) -> Error {
        Error::Registry(format!(
            "the archive ({} bytes) unpacks to more than {} ({}x its size, or the {} cap); it was not installed: it is broken or a decompression bomb",
            self.archive_bytes,
            mib(self.max_bytes),
            self.max_bytes / self.archive_bytes.max(1),
            mib(self.absolute),
        ))
    }

    /// Counts one more entry.
    fn entry(&mut self) -> Result<()> {
        self.entries += 1;
        if self.entries > self.max_entries {
            return Err(Error::Registry(format!(
                "the archive holds more than {} entries; it was not installed: it is broken or malicious",
                self.max_entries
            )));
        }
        Ok(())
    }

    /// Counts `n` bytes not read through [`Counted`] (hard link copies).
    fn add(&self, n: u64) -> Result<()> {
        self.read.set(self.read.get().saturating_add(n));
        if self.over() {
            return Err(self.too_large());
        }
        Ok(())
    }

    /// The error for a failed read: the bound when it was passed (the
    /// counting reader's error surfaces through the tar and zip crates),
    /// else a corrupt archive.
    fn read_err(&self, e: impl std::fmt::Display) -> Error {
        if self.over() {
            self.too_large()
        } else {
            corrupt(e)
        }
    }
}

/// A reader that fails once more than `max` bytes went through it.
struct Counted<R> {
    inner: R,
    read: Rc<Cell<u64>>,
    max: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.read.get() > self.max {
            return Err(io::Error::other("the unpacked size limit was passed"));
        }
        // Never more than one byte past the bound, so that the bound is
        // what is read, not the buffer size.
        let room = self.max + 1 - self.read.get();
        let len = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..len])?;
        self.read.set(self.read.get() + n as u64);
        if self.read.get() > self.max {
            return Err(io::Error::other("the unpacked size limit was passed"));
        }
        Ok(n)
    }
}

/// Unpacks `archive` (in `format`) into `dest`, which exists, within the
/// default [`Limits`].
pub fn extract(archive: &Path, format: Format, dest: &Path, cancel: &CancelToken) -> Result<()> {
    extract_with(archive, format, dest, cancel, &Limits::default())
}

/// Unpacks `archive` (in `format`) into `dest`, which exists, within
/// `limits`.
pub fn extract_with(
    archive: &Path,
    format: Format,
    dest: &Path,
    cancel: &CancelToken,
    limits: &Limits,
) -> Result<()> {
    let file = File::open(archive).map_err(|e| io_err(archive, e))?;
    let size = file.metadata().map_err(|e| io_err(archive, e))?.len();
    let mut budget = Budget::new(size, limits);
    let mut links = Vec::new();
    let counted = |inner| Counted {
        inner,
        read: budget.read.clone(),
        max: budget.max_bytes,
    };
    match format {
        Format::Zip => extract_zip(file, dest, cancel, &mut budget, &mut links),
        Format::TarGz => {
            let r = counted(Box::new(flate2::read::MultiGzDecoder::new(file)) as Box<dyn Read>);
            extract_tar(r, dest, cancel, &mut budget, &mut links)
        }
        Format::TarBz2 => {
            let r = counted(Box::new(bzip2::read::MultiBzDecoder::new(file)) as Box<dyn Read>);
            extract_tar(r, dest, cancel, &mut budget, &mut links)
        }
        Format::Tar => {
            let r = counted(Box::new(file) as Box<dyn Read>);
            extract_tar(r, dest, cancel, &mut budget, &mut links)
        }
        Format::Raw => Err(Error::Registry("a raw executable is not an archive".into())),
    }?;
    // A link made later may have changed where an earlier one leads
    // (`b -> a/..`, then `a -> .`): every link is resolved again.
    for link in &links {
        if !link_resolves_inside(dest, link) {
            return Err(unsafe_entry(link));
        }
    }
    Ok(())
}

/// Makes the parent directories of `rel` under `dest`, refusing to pass
/// through a symbolic link or a file: `entry` is the archive's name for the
/// error.
fn prepare_parent(dest: &Path, rel: &Path, entry: &Path) -> Result<()> {
    let mut at = dest.to_path_buf();
    let mut shown = PathBuf::new();
    let parents: Vec<_> = rel.parent().map(|p| p.iter().collect()).unwrap_or_default();
    for name in parents {
        at.push(name);
        shown.push(name);
        match fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => return Err(through_link(entry, &shown)),
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(corrupt(format!(
                    "`{}` is both a file and a directory",
                    shown.display()
                )))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::create_dir(&at).map_err(|e| io_err(&at, e))?;
            }
            Err(e) => return Err(io_err(&at, e)),
        }
    }
    Ok(())
}

/// Clears the place of a new file or link at `out`: an earlier entry of the
/// same name (a file or a link, never followed) is removed, as tar does.
fn clear_place(out: &Path, entry: &Path) -> Result<()> {
    match fs::symlink_metadata(out) {
        Ok(m) if m.is_dir() => Err(corrupt(format!(
            "`{}` is both a directory and a file",
            entry.display()
        ))),
        Ok(_) => fs::remove_file(out).map_err(|e| io_err(out, e)),
        Err(_) => Ok(()),
    }
}

/// Makes the directory `rel`.
fn make_dir(dest: &Path, rel: &Path, entry: &Path) -> Result<()> {
    prepare_parent(dest, rel, entry)?;
    let out = dest.join(rel);
    match fs::symlink_metadata(&out) {
        Ok(m) if m.file_type().is_symlink() => Err(through_link(entry, rel)),
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(corrupt(format!(
            "`{}` is both a file and a directory",
            entry.display()
        ))),
        Err(_) => fs::create_dir(&out).map_err(|e| io_err(&out, e)),
    }
}

/// Writes the file `rel` from `data`, a new file (never through a link).
fn make_file(dest: &Path, rel: &Path, entry: &Path, data: &mut dyn Read) -> Result<File> {
    prepare_parent(dest, rel, entry)?;
    let out = dest.join(rel);
    clear_place(&out, entry)?;
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&out)
        .map_err(|e| io_err(&out, e))?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match data.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(corrupt(e)),
        };
        file.write_all(&buf[..n]).map_err(|e| io_err(&out, e))?;
    }
    Ok(file)
}

/// Makes the link `rel -> target`, refused (and removed) when it leads
/// outside `dest` as things are on disk now.
fn make_link(
    dest: &Path,
    rel: &Path,
    entry: &Path,
    target: &Path,
    links: &mut Vec<PathBuf>,
) -> Result<()> {
    if target.is_absolute() {
        return Err(unsafe_entry(entry));
    }
    prepare_parent(dest, rel, entry)?;
    let out = dest.join(rel);
    clear_place(&out, entry)?;
    symlink(target, &out)?;
    if !link_resolves_inside(dest, rel) {
        let _ = fs::remove_file(&out);
        return Err(unsafe_entry(entry));
    }
    links.push(rel.to_path_buf());
    Ok(())
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // Owner may always read and write; the rest as archived, never setuid.
    let mode = (mode & 0o777) | 0o600;
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).map_err(|e| io_err(path, e))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> Result<()> {
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, link).map_err(|e| io_err(link, e))
}

#[cfg(not(unix))]
fn symlink(_target: &Path, link: &Path) -> Result<()> {
    Err(Error::Registry(format!(
        "the archive holds a symbolic link ({}), which this platform cannot create",
        link.display()
    )))
}

fn extract_tar(
    reader: impl Read,
    dest: &Path,
    cancel: &CancelToken,
    budget: &mut Budget,
    links: &mut Vec<PathBuf>,
) -> Result<()> {
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().map_err(|e| budget.read_err(e))? {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let mut entry = entry.map_err(|e| budget.read_err(e))?;
        budget.entry()?;
        // The raw bytes, not `path()`, which may already have dropped parts.
        let name = PathBuf::from(String::from_utf8_lossy(&entry.path_bytes()).into_owned());
        let rel = safe_relative(&name).ok_or_else(|| unsafe_entry(&name))?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            make_dir(dest, &rel, &name)?;
        } else if kind.is_symlink() {
            let target = entry
                .link_name()
                .map_err(corrupt)?
                .ok_or_else(|| corrupt("a link without a target"))?
                .into_owned();
            make_link(dest, &rel, &name, &target, links)?;
        } else if kind.is_hard_link() {
            let target = entry
                .link_name()
                .map_err(corrupt)?
                .ok_or_else(|| corrupt("a link without a target"))?
                .into_owned();
            let target = safe_relative(&target).ok_or_else(|| unsafe_entry(&name))?;
            // Copied, not linked: the source must be a file extracted here,
            // reached without passing through a link.
            prepare_parent(dest, &target, &name)?;
            let source = dest.join(&target);
            let meta = fs::symlink_metadata(&source).map_err(|_| {
                corrupt(format!(
                    "`{}` links to `{}`, which is not in the archive before it",
                    name.display(),
                    target.display()
                ))
            })?;
            if !meta.is_file() {
                return Err(unsafe_entry(&name));
            }
            budget.add(meta.len())?;
            let mut from = File::open(&source).map_err(|e| io_err(&source, e))?;
            make_file(dest, &rel, &name, &mut from)?;
            set_mode(&dest.join(&rel), entry.header().mode().unwrap_or(0o644))?;
        } else if kind.is_file() || kind == tar::EntryType::Continuous {
            let mode = entry.header().mode().unwrap_or(0o644);
            make_file(dest, &rel, &name, &mut entry).map_err(|e| match e {
                e if budget.over() => {
                    drop(e);
                    budget.too_large()
                }
                e => e,
            })?;
            set_mode(&dest.join(&rel), mode)?;
        }
        // Devices, fifos and the like have no place in an agent: skipped.
    }
    Ok(())
}

/// The longest symbolic link target read from a zip (PATH_MAX).
const MAX_LINK_TARGET: u64 = 4096;

fn extract_zip(
    file: File,
    dest: &Path,
    cancel: &CancelToken,
    budget: &mut Budget,
    links: &mut Vec<PathBuf>,
) -> Result<()> {
    let mut archive = zip::ZipArchive::new(file).map_err(corrupt)?;
    if archive.len() as u64 > budget.max_entries {
        return Err(Error::Registry(format!(
            "the archive holds {} entries, more than the {} allowed; it was not installed: it is broken or malicious",
            archive.len(),
            budget.max_entries
        )));
    }
    for i in 0..archive.len() {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let entry = archive.by_index(i).map_err(corrupt)?;
        budget.entry()?;
        let name = PathBuf::from(entry.name());
        let rel = safe_relative(&name).ok_or_else(|| unsafe_entry(&name))?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        let mode = entry.unix_mode();
        let is_dir = entry.is_dir();
        let is_link = entry.is_symlink();
        // Sizes in a zip's directory are the archive's claims: the bytes
        // are counted as they are decompressed.
        let mut data = Counted {
            inner: entry,
            read: budget.read.clone(),
            max: budget.max_bytes,
        };
        if is_dir {
            make_dir(dest, &rel, &name)?;
        } else if is_link {
            let mut target = Vec::new();
            (&mut data)
                .take(MAX_LINK_TARGET + 1)
                .read_to_end(&mut target)
                .map_err(|e| budget.read_err(e))?;
            if target.len() as u64 > MAX_LINK_TARGET {
                return Err(corrupt(format!(
                    "the link `{}` has a target longer than {MAX_LINK_TARGET} bytes",
                    name.display()
                )));
            }
            let target = PathBuf::from(String::from_utf8_lossy(&target).into_owned());
            make_link(dest, &rel, &name, &target, links)?;
        } else {
            make_file(dest, &rel, &name, &mut data).map_err(|e| match e {
                e if budget.over() => {
                    drop(e);
                    budget.too_large()
                }
                e => e,
            })?;
            set_mode(&dest.join(&rel), mode.unwrap_or(0o644))?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_the_url() {
        assert_eq!(Format::of_url("https://x/a.tar.gz?x=1"), Format::TarGz);
        assert_eq!(Format::of_url("https://x/a.TGZ"), Format::TarGz);
        assert_eq!(Format::of_url("https://x/a.tbz2"), Format::TarBz2);
        assert_eq!(Format::of_url("https://x/a.zip"), Format::Zip);
        assert_eq!(Format::of_url("https://x/agent"), Format::Raw);
    }

    #[test]
    fn climbing_or_absolute_names_are_unsafe() {
        assert_eq!(
            safe_relative(Path::new("./a/b")),
            Some(PathBuf::from("a/b"))
        );
        assert_eq!(safe_relative(Path::new("a/../../b")), None);
        assert_eq!(safe_relative(Path::new("/etc/passwd")), None);
    }

    fn tar_with(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, data) in entries {
            let mut h = tar::Header::new_gnu();
            // Written raw: the tar crate refuses to build `..` names.
            h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            h.set_size(data.len() as u64);
            h.set_mode(0o755);
            h.set_entry_type(tar::EntryType::Regular);
            h.set_cksum();
            out.extend_from_slice(h.as_bytes());
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.resize(out.len() + 1024, 0);
        out
    }

    #[test]
    fn a_tar_with_a_climbing_entry_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("d");
        fs::create_dir(&dest).unwrap();
        let tar = dir.path().join("a.tar");
        fs::write(&tar, tar_with(&[("ok", b"1"), ("../evil", b"2")])).unwrap();
        let e = extract(&tar, Format::Tar, &dest, &CancelToken::new()).unwrap_err();
        assert!(e.to_string().contains("`../evil`"), "{e}");
        assert!(!dir.path().join("evil").exists());
    }

    #[test]
    fn a_zip_with_a_climbing_entry_is_refused() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("d");
        fs::create_dir(&dest).unwrap();
        let path = dir.path().join("a.zip");
        let mut w = zip::ZipWriter::new(File::create(&path).unwrap());
        let opts = zip::write::SimpleFileOptions::default();
        w.start_file("agent", opts).unwrap();
        w.write_all(b"x").unwrap();
        w.start_file("../../evil", opts).unwrap();
        w.write_all(b"y").unwrap();
        w.finish().unwrap();
        let e = extract(&path, Format::Zip, &dest, &CancelToken::new()).unwrap_err();
        assert!(e.to_string().contains("outside its directory"), "{e}");
        assert!(!dir.path().join("evil").exists());
    }

    #[test]
    fn zip_and_tar_bz2_unpack_with_modes() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let zpath = dir.path().join("a.zip");
        let mut w = zip::ZipWriter::new(File::create(&zpath).unwrap());
        let opts = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
        w.start_file("bin/agent", opts).unwrap();
        w.write_all(b"#!/bin/sh\n").unwrap();
        w.finish().unwrap();
        let dest = dir.path().join("z");
        fs::create_dir(&dest).unwrap();
        extract(&zpath, Format::Zip, &dest, &CancelToken::new()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dest.join("bin/agent"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o111, 0o111);
        }

        let bpath = dir.path().join("a.tar.bz2");
        let mut enc =
            bzip2::write::BzEncoder::new(File::create(&bpath).unwrap(), bzip2::Compression::fast());
        enc.write_all(&tar_with(&[("./x/agent", b"hi")])).unwrap();
        enc.finish().unwrap();
        let dest = dir.path().join("b");
        fs::create_dir(&dest).unwrap();
        extract(&bpath, Format::TarBz2, &dest, &CancelToken::new()).unwrap();
        assert_eq!(fs::read(dest.join("x/agent")).unwrap(), b"hi");
    }
}
