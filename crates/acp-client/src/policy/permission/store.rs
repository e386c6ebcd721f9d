//! The state file of persisted "always" answers: one JSON file per project
//! in a directory the editor names (the library picks no location of its
//! own), written atomically.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::subject::normalize_lexically;

/// A remembered "always" answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Remembered {
    /// The user chose an `allow_always` option.
    Allow,
    /// The user chose a `reject_always` option.
    Reject,
}

/// Where persisted decisions go, once [`super::PermissionPolicy::persist_in`] ran.
#[derive(Debug)]
pub(super) struct Persistence {
    pub(super) file: PathBuf,
    pub(super) project_root: PathBuf,
}

/// The state file's format.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StateFile {
    pub(super) version: u32,
    pub(super) project_root: String,
    pub(super) decisions: Vec<StoredDecision>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct StoredDecision {
    pub(super) tool_kind: String,
    pub(super) subject: String,
    pub(super) decision: Remembered,
}

pub(super) const STATE_VERSION: u32 = 1;

/// A state file as read from disk.
pub(super) enum ParsedState {
    Current(StateFile),
    /// Written by a newer version in this format version.
    Newer(u64),
}

/// Decodes a state file, checking the version before the rest so a file
/// from a newer version is reported as such, not as corrupt.
pub(super) fn parse(bytes: &[u8]) -> Result<ParsedState, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    match value.get("version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(STATE_VERSION) => serde_json::from_value(value)
            .map(ParsedState::Current)
            .map_err(|e| e.to_string()),
        Some(v) if v > u64::from(STATE_VERSION) => Ok(ParsedState::Newer(v)),
        Some(v) => Err(format!("unknown format version {v}")),
        None => Err("no format version".to_owned()),
    }
}

/// The project root as the key of its state file: absolute, `..` and
/// symlinks resolved, so every spelling of the same directory shares one file.
pub(super) fn canonical_root(project_root: &Path) -> PathBuf {
    let absolute = std::path::absolute(project_root).unwrap_or_else(|_| project_root.to_owned());
    crate::path::CanonicalPath::resolve(&absolute)
        .map(crate::path::CanonicalPath::into_path_buf)
        .unwrap_or_else(|_| normalize_lexically(&absolute))
}

/// `<dir>/<hash of the canonical root>.json`.
pub(super) fn file_in(dir: &Path, canonical_root: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    // FNV-1a: tiny and stable across Rust versions, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canonical_root.as_os_str().as_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    dir.join(format!("{hash:016x}.json"))
}
