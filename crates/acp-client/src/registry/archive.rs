//! Unpacking downloaded agent archives, refusing any entry that would land
//! outside the target directory (`../` paths, absolute paths, links
//! pointing out).

use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use super::install::CancelToken;
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

/// True when a link at `link` (relative to the root) pointing to `target`
/// stays inside the root.
fn link_stays_inside(link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let mut depth: Vec<&std::ffi::OsStr> = Vec::new();
    let parent = link.parent().unwrap_or(Path::new(""));
    for c in parent.components().chain(target.components()) {
        match c {
            Component::Normal(name) => depth.push(name),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

fn unsafe_entry(name: &Path) -> Error {
    Error::Registry(format!(
        "the archive contains the entry `{}`, which points outside its directory; it was not installed (the archive is broken or malicious)",
        name.display()
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

/// Unpacks `archive` (in `format`) into `dest`, which exists.
pub fn extract(archive: &Path, format: Format, dest: &Path, cancel: &CancelToken) -> Result<()> {
    let file = File::open(archive).map_err(|e| io_err(archive, e))?;
    match format {
        Format::Zip => extract_zip(file, dest, cancel),
        Format::TarGz => extract_tar(flate2::read::MultiGzDecoder::new(file), dest, cancel),
        Format::TarBz2 => extract_tar(bzip2::read::MultiBzDecoder::new(file), dest, cancel),
        Format::Tar => extract_tar(file, dest, cancel),
        Format::Raw => Err(Error::Registry("a raw executable is not an archive".into())),
    }
}

fn create_parent(path: &Path) -> Result<()> {
    match path.parent() {
        Some(p) => fs::create_dir_all(p).map_err(|e| io_err(p, e)),
        None => Ok(()),
    }
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

fn extract_tar(reader: impl Read, dest: &Path, cancel: &CancelToken) -> Result<()> {
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().map_err(corrupt)? {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let mut entry = entry.map_err(corrupt)?;
        // The raw bytes, not `path()`, which may already have dropped parts.
        let name = PathBuf::from(String::from_utf8_lossy(&entry.path_bytes()).into_owned());
        let rel = safe_relative(&name).ok_or_else(|| unsafe_entry(&name))?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        let out = dest.join(&rel);
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            fs::create_dir_all(&out).map_err(|e| io_err(&out, e))?;
        } else if kind.is_symlink() {
            let target = entry
                .link_name()
                .map_err(corrupt)?
                .ok_or_else(|| corrupt("a link without a target"))?
                .into_owned();
            if !link_stays_inside(&rel, &target) {
                return Err(unsafe_entry(&name));
            }
            create_parent(&out)?;
            symlink(&target, &out)?;
        } else if kind.is_hard_link() {
            let target = entry
                .link_name()
                .map_err(corrupt)?
                .ok_or_else(|| corrupt("a link without a target"))?
                .into_owned();
            let target = safe_relative(&target).ok_or_else(|| unsafe_entry(&name))?;
            create_parent(&out)?;
            fs::copy(dest.join(&target), &out).map_err(|e| io_err(&out, e))?;
        } else if kind.is_file() || kind == tar::EntryType::Continuous {
            create_parent(&out)?;
            let mode = entry.header().mode().unwrap_or(0o644);
            let mut file = File::create(&out).map_err(|e| io_err(&out, e))?;
            io::copy(&mut entry, &mut file).map_err(corrupt)?;
            set_mode(&out, mode)?;
        }
        // Devices, fifos and the like have no place in an agent: skipped.
    }
    Ok(())
}

fn extract_zip(file: File, dest: &Path, cancel: &CancelToken) -> Result<()> {
    let mut archive = zip::ZipArchive::new(file).map_err(corrupt)?;
    for i in 0..archive.len() {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let mut entry = archive.by_index(i).map_err(corrupt)?;
        let name = PathBuf::from(entry.name());
        let rel = safe_relative(&name).ok_or_else(|| unsafe_entry(&name))?;
        if rel.as_os_str().is_empty() {
            continue;
        }
        let out = dest.join(&rel);
        let mode = entry.unix_mode();
        if entry.is_dir() {
            fs::create_dir_all(&out).map_err(|e| io_err(&out, e))?;
        } else if entry.is_symlink() {
            let mut target = String::new();
            entry.read_to_string(&mut target).map_err(corrupt)?;
            let target = PathBuf::from(target);
            if !link_stays_inside(&rel, &target) {
                return Err(unsafe_entry(&name));
            }
            create_parent(&out)?;
            symlink(&target, &out)?;
        } else {
            create_parent(&out)?;
            let mut file = File::create(&out).map_err(|e| io_err(&out, e))?;
            io::copy(&mut entry, &mut file).map_err(corrupt)?;
            set_mode(&out, mode.unwrap_or(0o644))?;
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

    #[test]
    fn links_must_stay_inside() {
        assert!(link_stays_inside(Path::new("bin/a"), Path::new("../lib/a")));
        assert!(!link_stays_inside(Path::new("bin/a"), Path::new("../../a")));
        assert!(!link_stays_inside(Path::new("a"), Path::new("/bin/sh")));
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
