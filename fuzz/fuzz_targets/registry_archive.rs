//! The registry unpacker (`registry::archive`) on crafted archives. Input
//! layout: byte 0 picks the format (tar, tar.gz, tar.bz2, zip), the rest is
//! the archive. Checks, whatever the archive: no panic; nothing is created
//! outside the target directory (it sits two levels below a scratch root,
//! which must hold nothing else afterwards); the bytes written stay within
//! the limits; on success every link in the target resolves inside it.
#![no_main]

use std::fs;
use std::path::{Path, PathBuf};

use acp_client::agents::registry::archive::{extract_with, Format, Limits};
use acp_client::agents::registry::install::CancelToken;
use libfuzzer_sys::fuzz_target;

const LIMITS: Limits = Limits {
    ratio: 100,
    floor: 1 << 20,
    absolute: 4 << 20,
    entries: 200,
};

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        out.push(p.clone());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            walk(&p, out);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&kind, archive)) = data.split_first() else {
        return;
    };
    let format = match kind % 4 {
        0 => Format::Tar,
        1 => Format::TarGz,
        2 => Format::TarBz2,
        _ => Format::Zip,
    };
    let root = tempfile::tempdir().expect("scratch directory");
    let dest = root.path().join("a/b/dest");
    fs::create_dir_all(&dest).expect("target directory");
    let file = root.path().join("archive");
    fs::write(&file, archive).expect("archive file");
    let result = extract_with(&file, format, &dest, &CancelToken::new(), &LIMITS);
    fs::remove_file(&file).expect("archive removed");

    let mut all = Vec::new();
    walk(root.path(), &mut all);
    let mut written = 0u64;
    for p in &all {
        if p.starts_with(&dest) {
            if let Ok(m) = p.symlink_metadata() {
                if m.is_file() {
                    written += m.len();
                }
            }
        } else {
            assert!(
                dest.starts_with(p),
                "created outside the target: {}",
                p.display()
            );
        }
    }
    let allowed = LIMITS.bytes_for(archive.len() as u64);
    assert!(written <= allowed, "wrote {written} bytes, allowed {allowed}");
    if result.is_ok() {
        let top = dest.canonicalize().expect("target resolves");
        for p in all.iter().filter(|p| p.starts_with(&dest)) {
            if p.symlink_metadata().is_ok_and(|m| m.file_type().is_symlink()) {
                if let Ok(real) = p.canonicalize() {
                    assert!(real.starts_with(&top), "{} leads outside", p.display());
                }
            }
        }
    }
});
