//! The ACP agent registry: what agents exist and how to install them.
//!
//! The protocol project publishes one JSON index of agents (repository
//! `agentclientprotocol/registry`, format in its `FORMAT.md`): each agent
//! has an id, a name, a version, a description and `distribution` entries
//! saying how to get it: an npm package (`npx`), a PyPI package (`uvx`) or
//! per-platform binary archives (`binary`).
//!
//! This module loads that index ([`load`]): from the network, cached on disk
//! with its fetch time, and from the cache (or a snapshot bundled with the
//! editor plugin) when offline. Parsing is lenient: an agent that does not
//! parse is skipped with a note, a distribution kind this client does not
//! know (or one that does not parse) is kept as raw JSON, unknown fields are
//! kept. [`install`] puts agents into a directory the editor owns.
//!
//! Nothing here is editor-specific: the editor gives the directories.
//! Every function blocks (downloads, subprocesses): call them from a
//! blocking task.

pub mod archive;
mod cancel;
pub mod download;
pub mod install;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// Where the registry publishes its index (the registry's README).
pub const DEFAULT_URL: &str =
    "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json";

/// True when the index URL `url` is not https: since the default one is,
/// the user set it (a local mirror, a test server), and its archives may
/// then come over plain http or from files too
/// ([`install::InstallOptions::insecure_urls`]).
pub fn user_index_is_plain(url: &str) -> bool {
    !url.starts_with("https://")
}

/// The largest index accepted, far above the real one (tens of kilobytes).
const MAX_INDEX_BYTES: u64 = 16 * 1024 * 1024;

/// An npm (`npx`) or PyPI (`uvx`) distribution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageDistribution {
    /// Package spec, with an optional version: `@scope/pkg@1.2.3`,
    /// `pkg==1.0`, or a path to a local tarball or wheel.
    pub package: String,
    /// The executable of the package to run; the package's own when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmd: Option<String>,
    /// Arguments the agent needs to speak ACP.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment the agent needs.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Fields this client does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One platform's binary archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinaryTarget {
    /// URL of the archive (`.zip`, `.tar.gz`, `.tgz`, `.tar.bz2`, `.tbz2`,
    /// `.tar`) or of the raw executable.
    pub archive: String,
    /// The executable, relative to the extracted archive (`./codex-acp`).
    pub cmd: String,
    /// Arguments the agent needs to speak ACP.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment the agent needs.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Hex SHA-256 of the archive, checked when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Size of the archive in bytes, checked when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Fields this client does not know.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How an agent can be installed. Kinds and platforms that did not parse
/// are kept in `other`, untouched.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Distribution {
    /// The npm package.
    pub npx: Option<PackageDistribution>,
    /// The PyPI package.
    pub uvx: Option<PackageDistribution>,
    /// Binary archives by platform (`linux-x86_64`, `darwin-aarch64`...).
    pub binary: BTreeMap<String, BinaryTarget>,
    /// Distribution kinds (or binary platforms, as `binary.<platform>`)
    /// this client does not know or could not parse.
    pub other: Map<String, Value>,
}

impl Distribution {
    fn from_json(v: &Value) -> Self {
        let mut d = Distribution::default();
        let Some(map) = v.as_object() else {
            return d;
        };
        for (kind, value) in map {
            match kind.as_str() {
                "npx" | "uvx" => {
                    match serde_json::from_value::<PackageDistribution>(value.clone()) {
                        Ok(p) if kind == "npx" => d.npx = Some(p),
                        Ok(p) => d.uvx = Some(p),
                        Err(_) => {
                            d.other.insert(kind.clone(), value.clone());
                        }
                    }
                }
                "binary" => match value.as_object() {
                    Some(targets) => {
                        for (platform, t) in targets {
                            match serde_json::from_value::<BinaryTarget>(t.clone()) {
                                Ok(t) => {
                                    d.binary.insert(platform.clone(), t);
                                }
                                Err(_) => {
                                    d.other.insert(format!("binary.{platform}"), t.clone());
                                }
                            }
                        }
                    }
                    None => {
                        d.other.insert(kind.clone(), value.clone());
                    }
                },
                _ => {
                    d.other.insert(kind.clone(), value.clone());
                }
            }
        }
        d
    }

    /// The kinds this client can install on `platform`, best first: a
    /// binary needs nothing else, npm and PyPI packages need their tools.
    pub fn kinds(&self, platform: Option<&str>) -> Vec<DistributionKind> {
        let mut kinds = Vec::new();
        if platform.is_some_and(|p| self.binary.contains_key(p)) {
            kinds.push(DistributionKind::Binary);
        }
        if self.npx.is_some() {
            kinds.push(DistributionKind::Npx);
        }
        if self.uvx.is_some() {
            kinds.push(DistributionKind::Uvx);
        }
        kinds
    }
}

/// The three ways the registry distributes agents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DistributionKind {
    /// A downloaded archive or executable.
    Binary,
    /// An npm package (installed with `npm install --prefix`).
    Npx,
    /// A PyPI package (installed into a virtualenv).
    Uvx,
}

impl DistributionKind {
    /// The registry's name of the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            DistributionKind::Binary => "binary",
            DistributionKind::Npx => "npx",
            DistributionKind::Uvx => "uvx",
        }
    }
}

/// One agent of the registry.
#[derive(Debug, Clone, PartialEq)]
pub struct RegistryAgent {
    /// Unique id (`claude-acp`, `gemini`...): also the name the editor
    /// starts it by.
    pub id: String,
    /// Display name.
    pub name: String,
    /// The version the distribution entries install.
    pub version: String,
    /// One line about the agent.
    pub description: String,
    /// Where to read about it (`website`, else `repository`).
    pub homepage: Option<String>,
    /// How to install it.
    pub distribution: Distribution,
    /// Every field of the entry, as published.
    pub raw: Map<String, Value>,
}

impl RegistryAgent {
    fn from_json(v: &Value) -> std::result::Result<Self, String> {
        let map = v.as_object().ok_or("an entry is not a JSON object")?;
        let text = |k: &str| map.get(k).and_then(Value::as_str).map(str::to_owned);
        let id = text("id").ok_or("an entry has no `id`")?;
        let version = text("version").ok_or_else(|| format!("`{id}` has no `version`"))?;
        Ok(RegistryAgent {
            name: text("name").unwrap_or_else(|| id.clone()),
            description: text("description").unwrap_or_default(),
            homepage: text("website").or_else(|| text("repository")),
            distribution: map
                .get("distribution")
                .map(Distribution::from_json)
                .unwrap_or_default(),
            raw: map.clone(),
            id,
            version,
        })
    }
}

/// The parsed index.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Registry {
    /// The index format's version, when given.
    pub version: Option<String>,
    /// Every agent that parsed, in the index's order.
    pub agents: Vec<RegistryAgent>,
    /// Why some entries were skipped (one sentence each).
    pub skipped: Vec<String>,
}

impl Registry {
    /// Parses an index. Only a document that is not a JSON object with an
    /// `agents` list is an error; bad entries are skipped and noted.
    pub fn parse(bytes: &[u8]) -> Result<Self> {
        let doc: Value = serde_json::from_slice(bytes).map_err(|e| Error::Decode {
            what: "the agent registry".into(),
            reason: e.to_string(),
        })?;
        let agents = doc
            .get("agents")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::Decode {
                what: "the agent registry".into(),
                reason: "it has no `agents` list".into(),
            })?;
        let mut registry = Registry {
            version: doc
                .get("version")
                .and_then(Value::as_str)
                .map(str::to_owned),
            ..Registry::default()
        };
        for entry in agents {
            match RegistryAgent::from_json(entry) {
                Ok(agent) => registry.agents.push(agent),
                Err(reason) => registry.skipped.push(reason),
            }
        }
        Ok(registry)
    }

    /// The agent with this id.
    pub fn agent(&self, id: &str) -> Option<&RegistryAgent> {
        self.agents.iter().find(|a| a.id == id)
    }
}

/// The registry's name of this machine's platform (`linux-x86_64`), or
/// `None` on a platform the registry has no binaries for.
pub fn current_platform() -> Option<&'static str> {
    use std::env::consts::{ARCH, OS};
    Some(match (OS, ARCH) {
        ("linux", "x86_64") => "linux-x86_64",
        ("linux", "aarch64") => "linux-aarch64",
        ("macos", "x86_64") => "darwin-x86_64",
        ("macos", "aarch64") => "darwin-aarch64",
        ("windows", "x86_64") => "windows-x86_64",
        ("windows", "aarch64") => "windows-aarch64",
        _ => return None,
    })
}

/// Where the index comes from and where its copies live.
#[derive(Debug, Clone)]
pub struct RegistrySource {
    /// The published index: `https://`, `http://`, `file://` or a path.
    pub url: String,
    /// Where the last fetched index is kept (`registry.json` in it).
    pub cache_dir: PathBuf,
    /// A snapshot shipped with the editor plugin, the last resort offline.
    pub bundled: Option<PathBuf>,
    /// A cached index younger than this is used without asking the network.
    pub max_age: Duration,
}

impl RegistrySource {
    /// The published index, cached in `cache_dir` for an hour.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Self {
        Self {
            url: DEFAULT_URL.to_owned(),
            cache_dir: cache_dir.into(),
            bundled: None,
            max_age: Duration::from_secs(3600),
        }
    }

    fn cache_file(&self) -> PathBuf {
        self.cache_dir.join("registry.json")
    }

    /// When the last fetch failed, so that a listing soon after does not
    /// wait for the network to fail again.
    fn failure_file(&self) -> PathBuf {
        self.cache_dir.join("registry.failed")
    }
}

/// How long a failed fetch stands before a listing asks the network again
/// (`LoadMode::Refresh` always asks).
pub const FAILURE_RETRY: Duration = Duration::from_secs(300);

/// The remembered failure of the index's URL: when, if younger than
/// [`FAILURE_RETRY`].
#[derive(Debug, Serialize, Deserialize)]
struct FailureFile {
    url: String,
    failed_at: u64,
}

fn read_failure(source: &RegistrySource) -> Option<u64> {
    let bytes = std::fs::read(source.failure_file()).ok()?;
    let failure: FailureFile = serde_json::from_slice(&bytes).ok()?;
    let age = now_secs().checked_sub(failure.failed_at)?;
    (failure.url == source.url && age < FAILURE_RETRY.as_secs()).then_some(failure.failed_at)
}

fn write_failure(source: &RegistrySource) {
    let failure = FailureFile {
        url: source.url.clone(),
        failed_at: now_secs(),
    };
    let written = serde_json::to_vec(&failure)
        .map_err(|e| Error::Registry(e.to_string()))
        .and_then(|text| install::write_atomic(&source.failure_file(), &text));
    if let Err(e) = written {
        tracing::warn!("agent registry failure not remembered: {e}");
    }
}

/// A message on one line: the editor shows it in its command line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// How much [`load`] may use the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadMode {
    /// A fresh cache is enough; else fetch, falling back to the copies.
    Cached,
    /// Fetch first (the user asked for the newest); fall back to the copies.
    Refresh,
    /// Never touch the network: the cache, else the bundled snapshot.
    Offline,
}

/// Which copy of the index [`load`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Fetched just now.
    Network,
    /// The cached copy.
    Cache,
    /// The snapshot bundled with the plugin.
    Bundled,
}

/// A loaded index and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The index.
    pub registry: Registry,
    /// Which copy it is.
    pub origin: Origin,
    /// When it was fetched (seconds since the Unix epoch), for the network
    /// and the cache.
    pub fetched_at: Option<u64>,
    /// Why a copy was used instead of the network, as a sentence.
    pub warning: Option<String>,
}

/// The cache file: the index as published, with its URL and fetch time.
#[derive(Debug, Serialize, Deserialize)]
struct CacheFile {
    url: String,
    fetched_at: u64,
    registry: Value,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn read_cache(source: &RegistrySource) -> Option<(Registry, u64)> {
    let bytes = std::fs::read(source.cache_file()).ok()?;
    let cache: CacheFile = serde_json::from_slice(&bytes).ok()?;
    if cache.url != source.url {
        // A cache of another index (the user changed `url`) is no copy of
        // this one.
        return None;
    }
    let registry = Registry::parse(cache.registry.to_string().as_bytes()).ok()?;
    Some((registry, cache.fetched_at))
}

fn write_cache(source: &RegistrySource, bytes: &[u8], fetched_at: u64) -> Result<()> {
    let registry: Value = serde_json::from_slice(bytes).map_err(|e| Error::Decode {
        what: "the agent registry".into(),
        reason: e.to_string(),
    })?;
    let cache = CacheFile {
        url: source.url.clone(),
        fetched_at,
        registry,
    };
    let text = serde_json::to_vec(&cache).map_err(|e| Error::Registry(e.to_string()))?;
    install::write_atomic(&source.cache_file(), &text)
}

/// Loads the index: see [`LoadMode`]. When the network fails, the cached
/// copy is used, else the bundled snapshot, each with a `warning` saying
/// why; with neither, the error names the URL and the network's answer.
pub fn load(source: &RegistrySource, mode: LoadMode) -> Result<Loaded> {
    let cached = read_cache(source);
    if mode == LoadMode::Cached {
        if let Some((registry, fetched_at)) = &cached {
            let age = now_secs().saturating_sub(*fetched_at);
            if age < source.max_age.as_secs() {
                return Ok(Loaded {
                    registry: registry.clone(),
                    origin: Origin::Cache,
                    fetched_at: Some(*fetched_at),
                    warning: None,
                });
            }
        }
    }
    let recent_failure = (mode == LoadMode::Cached)
        .then(|| read_failure(source))
        .flatten();
    let failure = if mode == LoadMode::Offline {
        "working offline".to_owned()
    } else if let Some(failed_at) = recent_failure {
        // Offline, every listing waited seconds for the network to fail
        // again: a recent failure stands for a while.
        format!(
            "registry unreachable {}, :Acp agents update retries",
            ago(failed_at)
        )
    } else {
        match fetch(source) {
            Ok(loaded) => {
                let _ = std::fs::remove_file(source.failure_file());
                return Ok(loaded);
            }
            Err(e) => {
                tracing::warn!(url = %source.url, "agent registry not fetched: {e}");
                write_failure(source);
                // The download error names the URL already.
                format!(
                    "could not fetch the agent registry: {}",
                    one_line(&e.to_string())
                )
            }
        }
    };
    if let Some((registry, fetched_at)) = cached {
        // Which list first: an editor may show one line, cut to its width.
        let warning = (mode != LoadMode::Offline)
            .then(|| format!("using the copy fetched {}: {failure}", ago(fetched_at)));
        if let Some(w) = &warning {
            // The editor shows a short notice and points to the log.
            tracing::warn!("agent registry: {w}");
        }
        return Ok(Loaded {
            registry,
            origin: Origin::Cache,
            fetched_at: Some(fetched_at),
            warning,
        });
    }
    if let Some(bundled) = &source.bundled {
        if let Ok(bytes) = std::fs::read(bundled) {
            let registry = Registry::parse(&bytes)?;
            let warning =
                format!("using the list bundled with the plugin (may be out of date): {failure}");
            tracing::warn!("agent registry: {warning}");
            return Ok(Loaded {
                registry,
                origin: Origin::Bundled,
                fetched_at: None,
                warning: Some(warning),
            });
        }
    }
    Err(Error::Registry(format!(
        "{failure}, and there is no saved copy of the agent registry; check your network connection (or the registry URL) and try again"
    )))
}

fn fetch(source: &RegistrySource) -> Result<Loaded> {
    let bytes = download::fetch_bytes(&source.url, MAX_INDEX_BYTES)?;
    let registry = Registry::parse(&bytes)?;
    let fetched_at = now_secs();
    if let Err(e) = write_cache(source, &bytes, fetched_at) {
        tracing::warn!("agent registry not cached: {e}");
    }
    Ok(Loaded {
        registry,
        origin: Origin::Network,
        fetched_at: Some(fetched_at),
        warning: None,
    })
}

/// "3 minutes ago", for messages.
fn ago(secs: u64) -> String {
    let age = now_secs().saturating_sub(secs);
    match age {
        0..=119 => "just now".to_owned(),
        120..=7199 => format!("{} minutes ago", age / 60),
        7200..=172_799 => format!("{} hours ago", age / 3600),
        _ => format!("{} days ago", age / 86_400),
    }
}

/// True when `id` is a safe directory name for an installed agent:
/// lowercase letters, digits, `-`, `_` and `.`, not starting with a dot
/// (the registry allows `^[a-z][a-z0-9-]*$`).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_' | '.'))
}

/// Compares two versions number by number (`0.10.0` > `0.9.3`); a version
/// that is not dotted numbers compares as text.
pub fn version_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let parts = |v: &str| -> Option<Vec<u64>> {
        v.split(['-', '+'])
            .next()?
            .split('.')
            .map(|p| p.parse().ok())
            .collect()
    };
    match (parts(a), parts(b)) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.cmp(b)),
        _ => a.cmp(b),
    }
}

/// The directory an agent's versions go into.
pub fn agent_dir(root: &Path, id: &str) -> PathBuf {
    root.join(id)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_kinds_bad_entries_and_fields_are_kept_or_noted() {
        let doc = json!({
            "version": "1.0.0",
            "agents": [
                {"id": "a", "name": "A", "version": "1.2.3", "description": "d",
                 "future": 1,
                 "distribution": {
                    "npx": {"package": "@s/a@1.2.3", "args": ["--acp"], "cmd": "a"},
                    "docker": {"image": "x"},
                    "uvx": {"args": ["no package"]},
                    "binary": {
                        "linux-x86_64": {"archive": "https://x/a.tar.gz", "cmd": "./a", "sha256": "ab"},
                        "plan9-mips": {"nope": true}
                    }
                 }},
                {"name": "no id"},
                "not an object",
                {"id": "b", "version": "0.1.0", "distribution": {}}
            ]
        });
        let r = Registry::parse(doc.to_string().as_bytes()).unwrap();
        assert_eq!(r.agents.len(), 2);
        assert_eq!(r.skipped.len(), 2);
        let a = r.agent("a").unwrap();
        assert_eq!(a.raw["future"], 1);
        let npx = a.distribution.npx.as_ref().unwrap();
        assert_eq!(npx.args, vec!["--acp"]);
        assert!(a.distribution.uvx.is_none());
        assert!(a.distribution.other.contains_key("uvx"));
        assert!(a.distribution.other.contains_key("docker"));
        assert!(a.distribution.other.contains_key("binary.plan9-mips"));
        assert_eq!(
            a.distribution.binary["linux-x86_64"].sha256.as_deref(),
            Some("ab")
        );
        assert_eq!(
            a.distribution.kinds(Some("linux-x86_64")),
            vec![DistributionKind::Binary, DistributionKind::Npx]
        );
        assert_eq!(
            a.distribution.kinds(Some("darwin-aarch64")),
            vec![DistributionKind::Npx]
        );
        let b = r.agent("b").unwrap();
        assert_eq!(b.name, "b");
        assert!(b.distribution.kinds(Some("linux-x86_64")).is_empty());
    }

    #[test]
    fn a_document_without_agents_is_an_error() {
        assert!(Registry::parse(b"{}").is_err());
        assert!(Registry::parse(b"not json").is_err());
    }

    #[test]
    fn versions_compare_by_number() {
        use std::cmp::Ordering::*;
        assert_eq!(version_cmp("0.10.0", "0.9.3"), Greater);
        assert_eq!(version_cmp("1.0.0", "1.0.0"), Equal);
        assert_eq!(version_cmp("1.0.0-beta", "1.0.1"), Less);
    }

    #[test]
    fn ids_that_could_leave_the_directory_are_refused() {
        assert!(valid_id("claude-acp"));
        assert!(!valid_id("../x"));
        assert!(!valid_id(".hidden"));
        assert!(!valid_id("a/b"));
        assert!(!valid_id(""));
    }
}
