//! Hostile registry archives (issue #25, rows G2 and G3): what a
//! compromised release or mirror can put in an agent's archive, unpacked by
//! `registry::archive`. Each archive is crafted here, small on disk.
#![allow(clippy::unwrap_used)]

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use acp_client::agents::registry::archive::{extract, Format};
use acp_client::agents::registry::install::{CancelToken, InstallOptions, Installer};

/// One tar entry, written by hand (the tar crate refuses `..` names and
/// links through links).
enum Entry<'a> {
    File(&'a str, &'a [u8]),
    Dir(&'a str),
    Symlink(&'a str, &'a str),
    HardLink(&'a str, &'a str),
}

fn header(name: &str, kind: tar::EntryType, size: u64, link: &str) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
    h.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
    h.set_size(size);
    h.set_mode(0o755);
    h.set_entry_type(kind);
    h.set_cksum();
    h
}

fn tar(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in entries {
        let (h, data): (_, &[u8]) = match e {
            Entry::File(n, d) => (header(n, tar::EntryType::Regular, d.len() as u64, ""), d),
            Entry::Dir(n) => (header(n, tar::EntryType::Directory, 0, ""), b""),
            Entry::Symlink(n, t) => (header(n, tar::EntryType::Symlink, 0, t), b""),
            Entry::HardLink(n, t) => (header(n, tar::EntryType::Link, 0, t), b""),
        };
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(data);
        out.resize(out.len().div_ceil(512) * 512, 0);
    }
    out.resize(out.len() + 1024, 0);
    out
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(bytes).unwrap();
    enc.finish().unwrap()
}

/// A target directory three levels below a temporary root, so that an
/// escape up to three levels lands in the root, where it is looked for.
struct Place {
    root: tempfile::TempDir,
    dest: PathBuf,
}

impl Place {
    fn new() -> Place {
        let root = tempfile::tempdir().unwrap();
        let dest = root.path().join("agents/x/.tmp-1");
        fs::create_dir_all(&dest).unwrap();
        Place { root, dest }
    }

    fn unpack(&self, name: &str, bytes: &[u8], format: Format) -> acp_client::Result<()> {
        let archive = self.root.path().join(name);
        fs::write(&archive, bytes).unwrap();
        let result = extract(&archive, format, &self.dest, &CancelToken::new());
        fs::remove_file(&archive).unwrap();
        result
    }

    /// Every path under the root but outside the target (the directories
    /// leading to it excepted).
    fn outside(&self) -> Vec<PathBuf> {
        let mut found = Vec::new();
        walk(self.root.path(), &self.dest, &mut found);
        found.retain(|p| !self.dest.starts_with(p));
        found
    }
}

fn walk(dir: &Path, skip: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p == skip {
            continue;
        }
        out.push(p.clone());
        if e.file_type().unwrap().is_dir() {
            walk(&p, skip, out);
        }
    }
}

fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    for e in fs::read_dir(dir).unwrap().flatten() {
        let m = e.path().symlink_metadata().unwrap();
        total += if m.is_dir() {
            bytes_under(&e.path())
        } else {
            m.len()
        };
    }
    total
}

#[test]
fn a_chain_of_links_cannot_write_outside_the_install() {
    // The archive: every link passes a textual check, together
    // they lead three levels up.
    let p = Place::new();
    let archive = tar(&[
        Entry::Symlink("a", "."),
        Entry::Symlink("a/b", ".."),
        Entry::Symlink("a/b/c", ".."),
        Entry::Symlink("a/b/c/d", ".."),
        Entry::File("a/b/c/d/escaped", b"owned"),
    ]);
    let e = p.unpack("a.tar", &archive, Format::Tar).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(p.outside(), Vec::<PathBuf>::new());
}

#[test]
fn a_link_retargeted_by_a_later_link_is_refused() {
    // `b -> a/..` is inside while `a` is a name; `a -> .` then makes it
    // lead to the parent of the install.
    let p = Place::new();
    let archive = tar(&[
        Entry::Symlink("b", "a/.."),
        Entry::Symlink("a", "."),
        Entry::File("ok", b"1"),
    ]);
    let e = p.unpack("a.tar", &archive, Format::Tar).unwrap_err();
    assert!(e.to_string().contains("`b`"), "{e}");
}

#[test]
fn a_hard_link_cannot_copy_a_file_from_outside_in() {
    let p = Place::new();
    fs::write(p.root.path().join("agents/x/secret"), b"private").unwrap();
    let archive = tar(&[
        Entry::Symlink("a", "."),
        Entry::Symlink("a/b", ".."),
        Entry::HardLink("stolen", "a/b/secret"),
    ]);
    let e = p.unpack("a.tar", &archive, Format::Tar).unwrap_err();
    assert!(!e.to_string().is_empty());
    assert!(!p.dest.join("stolen").exists());
    // Through a link that only climbs once resolved.
    let p = Place::new();
    fs::write(p.root.path().join("agents/x/secret"), b"private").unwrap();
    let archive = tar(&[
        Entry::Dir("d"),
        Entry::Symlink("d/up", ".."),
        Entry::Symlink("d/up2", "up/.."),
        Entry::HardLink("stolen", "d/up2/secret"),
    ]);
    let e = p.unpack("a.tar", &archive, Format::Tar).unwrap_err();
    assert!(!e.to_string().is_empty());
    assert!(!p.dest.join("stolen").exists());
}

#[test]
fn a_zip_link_chain_cannot_write_outside_the_install() {
    let p = Place::new();
    let path = p.root.path().join("a.zip");
    let mut w = zip::ZipWriter::new(File::create(&path).unwrap());
    let opts = zip::write::SimpleFileOptions::default();
    w.add_symlink("a", ".", opts).unwrap();
    w.add_symlink("a/b", "..", opts).unwrap();
    w.add_symlink("a/b/c", "..", opts).unwrap();
    w.start_file("a/b/c/escaped", opts).unwrap();
    w.write_all(b"owned").unwrap();
    w.finish().unwrap();
    let bytes = fs::read(&path).unwrap();
    fs::remove_file(&path).unwrap();
    let e = p.unpack("a.zip", &bytes, Format::Zip).unwrap_err();
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(p.outside(), Vec::<PathBuf>::new());
}

#[test]
fn links_inside_the_archive_still_work() {
    // What real archives do: `bin/agent -> ../lib/agent`, a versioned
    // library name, a directory link used only by the agent at run time.
    let p = Place::new();
    let archive = tar(&[
        Entry::Dir("lib"),
        Entry::File("lib/agent-1.2", b"#!/bin/sh\n"),
        Entry::Symlink("lib/agent", "agent-1.2"),
        Entry::Symlink("bin/agent", "../lib/agent"),
        Entry::Symlink("current", "lib"),
        Entry::HardLink("agent-copy", "lib/agent-1.2"),
    ]);
    p.unpack("a.tar.gz", &gzip(&archive), Format::TarGz)
        .unwrap();
    assert_eq!(fs::read(p.dest.join("bin/agent")).unwrap(), b"#!/bin/sh\n");
    assert_eq!(fs::read(p.dest.join("agent-copy")).unwrap(), b"#!/bin/sh\n");
    assert!(p
        .dest
        .join("current")
        .symlink_metadata()
        .unwrap()
        .is_symlink());
}

/// A .tar.gz of one file of `size` zero bytes, as concatenated gzip
/// members (which gzip and the unpacker accept): 1 GiB in about 1 MB.
fn gzip_bomb(size: u64) -> Vec<u8> {
    const CHUNK: usize = 1 << 20;
    let h = header("agent", tar::EntryType::Regular, size, "");
    let mut out = gzip(h.as_bytes());
    let chunk = gzip(&vec![0u8; CHUNK]);
    for _ in 0..size / CHUNK as u64 {
        out.extend_from_slice(&chunk);
    }
    out.extend_from_slice(&gzip(&[0u8; 1024]));
    out
}

#[test]
fn a_decompression_bomb_stops_early_with_a_clear_error() {
    let p = Place::new();
    let bomb = gzip_bomb(1 << 30);
    assert!(bomb.len() < 2 << 20, "{}", bomb.len());
    let e = p.unpack("a.tar.gz", &bomb, Format::TarGz).unwrap_err();
    let written = bytes_under(&p.dest);
    assert!(written < 256 << 20, "{written} bytes were written");
    assert!(e.to_string().contains("decompression bomb"), "{e}");
}

#[test]
fn an_archive_of_too_many_entries_is_refused() {
    let p = Place::new();
    let names: Vec<String> = (0..60_000).map(|i| format!("d{}/{i}", i % 100)).collect();
    let entries: Vec<Entry<'_>> = names.iter().map(|n| Entry::File(n, b"")).collect();
    let e = p
        .unpack("a.tar.gz", &gzip(&tar(&entries)), Format::TarGz)
        .unwrap_err();
    assert!(e.to_string().contains("entries"), "{e}");
}

#[test]
fn many_hard_links_to_one_file_count_every_copy() {
    // One 1 MiB file and 300 hard links to it: 300 MiB from a tiny
    // archive, the links copied (never linked) by the unpacker.
    let p = Place::new();
    let big = vec![0u8; 1 << 20];
    let names: Vec<String> = (0..300).map(|i| format!("l{i}")).collect();
    let mut entries = vec![Entry::File("big", &big)];
    entries.extend(names.iter().map(|n| Entry::HardLink(n, "big")));
    let archive = gzip(&tar(&entries));
    let e = p.unpack("a.tar.gz", &archive, Format::TarGz).unwrap_err();
    assert!(e.to_string().contains("decompression bomb"), "{e}");
    assert!(bytes_under(&p.dest) < 256 << 20);
}

/// A registry agent with one binary archive for this machine.
fn agent_with(archive: &str, sha256: Option<&str>) -> acp_client::agents::registry::RegistryAgent {
    let platform = acp_client::agents::registry::current_platform().unwrap();
    let mut target = serde_json::json!({ "archive": archive, "cmd": "./agent" });
    if let Some(sha) = sha256 {
        target["sha256"] = sha.into();
    }
    let doc = serde_json::json!({
        "version": "1.0.0",
        "agents": [{
            "id": "hostile", "name": "Hostile", "version": "1.0.0",
            "description": "crafted", "distribution": { "binary": { platform: target } }
        }]
    });
    let registry =
        acp_client::agents::registry::Registry::parse(doc.to_string().as_bytes()).unwrap();
    registry.agent("hostile").unwrap().clone()
}

fn installer(root: &Path, options: InstallOptions) -> Installer {
    Installer::new(root, options)
}

#[test]
fn a_plain_http_archive_is_refused_from_an_https_registry() {
    let dir = tempfile::tempdir().unwrap();
    // Port 9 (discard): nothing would answer; the URL must be refused
    // before any connection.
    let agent = agent_with("http://127.0.0.1:9/agent.tar.gz", Some(&"0".repeat(64)));
    let e = installer(dir.path(), InstallOptions::default())
        .install(&agent, &CancelToken::new(), &mut |_| {})
        .unwrap_err();
    assert!(e.to_string().contains("https://"), "{e}");
    assert!(!dir.path().join("hostile").exists());
}

#[test]
fn a_binary_without_a_checksum_needs_the_users_consent() {
    let dir = tempfile::tempdir().unwrap();
    let agent = agent_with("https://127.0.0.1:9/agent.tar.gz", None);
    let inst = installer(dir.path(), InstallOptions::default());
    assert!(inst.unverified(&agent));
    let e = inst
        .install(&agent, &CancelToken::new(), &mut |_| {})
        .unwrap_err();
    assert!(e.to_string().contains("SHA-256"), "{e}");
    assert!(!dir.path().join("hostile").exists());
}

#[test]
fn a_bomb_install_leaves_nothing_behind() {
    // The user's own plain index (a local mirror) allows file:// archives.
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("agent.tar.gz");
    fs::write(&archive, gzip_bomb(1 << 30)).unwrap();
    let agent = agent_with(&format!("file://{}", archive.display()), None);
    let root = dir.path().join("agents");
    let options = InstallOptions {
        insecure_urls: true,
        allow_unverified: true,
        ..InstallOptions::default()
    };
    let e = installer(&root, options)
        .install(&agent, &CancelToken::new(), &mut |_| {})
        .unwrap_err();
    assert!(e.to_string().contains("decompression bomb"), "{e}");
    assert!(
        !root.join("hostile").exists(),
        "the partial install was kept"
    );
}

#[test]
fn the_fuzz_seeds_unpack_without_escaping() {
    // fuzz/seeds/archives (made by fuzz/seeds/archives.py): byte 0 is the
    // format, as the `registry_archive` fuzz target reads them.
    let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/archives");
    let mut count = 0;
    for seed in fs::read_dir(&seeds).unwrap().flatten() {
        let data = fs::read(seed.path()).unwrap();
        let format = match data[0] % 4 {
            0 => Format::Tar,
            1 => Format::TarGz,
            2 => Format::TarBz2,
            _ => Format::Zip,
        };
        let p = Place::new();
        let result = p.unpack("seed", &data[1..], format);
        let name = seed.file_name().to_string_lossy().into_owned();
        assert_eq!(p.outside(), Vec::<PathBuf>::new(), "{name}");
        // Only the plain and zeros seeds are harmless archives.
        let harmless = name.starts_with("plain") || name.starts_with("zeros");
        assert_eq!(result.is_ok(), harmless, "{name}: {result:?}");
        count += 1;
    }
    assert!(count >= 20, "{count} seeds");
}
