//! Installing registry agents into a directory the editor owns.
//!
//! Layout under the root: `<id>/<version>/` holds one installed version,
//! `<id>/installed.json` says which one is current and how to start it.
//! A version is built in a temporary `<id>/.tmp-*` directory and renamed
//! into place only when complete, so a failed, cancelled or killed install
//! leaves no half-installed version behind (leftover temporaries are
//! removed by the next install of the agent).
//!
//! npm packages go through `npm install --prefix` (never a global install,
//! never `npx` at each start); PyPI packages into a virtualenv (made by `uv`
//! when it is on PATH, else `python3 -m venv` and pip); binaries are
//! downloaded, checked (size, and SHA-256 when the registry gives one),
//! unpacked and made executable.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::archive::{self, Format};

mod build;

pub use super::cancel::CancelToken;
use super::{
    download, valid_id, BinaryTarget, DistributionKind, PackageDistribution, RegistryAgent,
};
use crate::error::{Error, Result};

/// An installed agent: what `<id>/installed.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstalledAgent {
    /// The registry id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// The installed version.
    pub version: String,
    /// How it was installed.
    pub kind: DistributionKind,
    /// Program (absolute path) and arguments that start the agent.
    pub cmd: Vec<String>,
    /// Environment the agent needs.
    pub env: BTreeMap<String, String>,
    /// The version's directory.
    pub dir: PathBuf,
    /// When it was installed (seconds since the Unix epoch).
    pub installed_at: u64,
}

/// A step of an install, for a progress display.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Progress {
    /// What is happening, as a short phrase ("downloading codex-acp 0.9.2").
    pub message: String,
    /// Bytes downloaded so far, during a download.
    pub done: Option<u64>,
    /// Bytes to download, when the server said.
    pub total: Option<u64>,
}

impl Progress {
    fn step(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            done: None,
            total: None,
        }
    }
}

/// Settings of an [`Installer`].
#[derive(Debug, Clone)]
pub struct InstallOptions {
    /// The binary platform to install for; this machine's when `None`.
    pub platform: Option<String>,
    /// Extra environment for `npm` and `pip` (a registry mirror, a proxy).
    pub env: Vec<(String, String)>,
    /// Where `npm`, `uv` and `python3` are looked up; the process's `PATH`
    /// when `None`.
    pub path: Option<OsString>,
    /// Accept binary archives from `http://`, `file://` and plain-path URLs
    /// (otherwise only `https://`, also after redirects). Set it only when
    /// the user chose a registry index that is itself not https (a local
    /// mirror, a test server): [`super::user_index_is_plain`].
    pub insecure_urls: bool,
    /// Install a binary whose registry entry gives no SHA-256 (otherwise
    /// refused before downloading, see [`Installer::unverified`]): set it
    /// once the user was told and agreed.
    pub allow_unverified: bool,
}

impl Default for InstallOptions {
    fn default() -> Self {
        Self {
            platform: super::current_platform().map(str::to_owned),
            env: Vec::new(),
            path: None,
            insecure_urls: false,
            allow_unverified: false,
        }
    }
}

/// Installs, lists and removes agents under one root directory.
#[derive(Debug, Clone)]
pub struct Installer {
    root: PathBuf,
    options: InstallOptions,
}

const MANIFEST: &str = "installed.json";
const TMP_PREFIX: &str = ".tmp-";

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Registry(format!("could not {what} {}: {e}", path.display()))
}

/// Writes `bytes` to `path` through a temporary file and a rename, so a
/// reader never sees half a file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| io_err("create", dir, e))?;
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| io_err("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_err("write", path, e))
}

/// One version being built: what the per-kind installers share.
struct Build<'a> {
    agent: &'a RegistryAgent,
    /// The temporary directory it is built in.
    tmp: &'a Path,
    /// Where it will be once complete (paths in its command point there).
    final_dir: &'a Path,
    cancel: &'a CancelToken,
    progress: &'a mut dyn FnMut(Progress),
}

/// The program, arguments and environment of a built agent.
type Launch = (Vec<String>, BTreeMap<String, String>);

/// An agent's install lock, released when dropped (the file closes).
struct AgentLock {
    _file: std::fs::File,
}

/// True when `version` is a safe directory name: letters, digits and
/// `.-+_`, not starting with a dot.
fn valid_version(version: &str) -> bool {
    !version.is_empty()
        && version.len() <= 128
        && !version.starts_with('.')
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+' | '_'))
}

/// Removes a temporary directory unless the install completed.
struct TempDir {
    path: PathBuf,
    keep: bool,
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if !self.keep {
            if let Err(e) = std::fs::remove_dir_all(&self.path) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(dir = %self.path.display(), "temporary install directory left: {e}");
                }
            }
        }
    }
}

impl Installer {
    /// An installer for agents under `root` (created when needed).
    pub fn new(root: impl Into<PathBuf>, options: InstallOptions) -> Self {
        Self {
            root: root.into(),
            options,
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The installed agent `id`, if any.
    pub fn installed_agent(&self, id: &str) -> Result<Option<InstalledAgent>> {
        if !valid_id(id) {
            return Ok(None);
        }
        let path = self.root.join(id).join(MANIFEST);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err("read", &path, e)),
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::Registry(format!(
                "{} is damaged ({e}); reinstall the agent {id}",
                path.display()
            ))
        })
    }

    /// Every installed agent, by id. Damaged manifests are skipped (and
    /// logged): they do not hide the others.
    pub fn installed(&self) -> Result<Vec<InstalledAgent>> {
        let entries = match std::fs::read_dir(&self.root) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err("read", &self.root, e)),
        };
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            match self.installed_agent(&name) {
                Ok(Some(a)) => out.push(a),
                Ok(None) => {}
                Err(e) => tracing::warn!("{e}"),
            }
        }
        out.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(out)
    }

    /// Removes every version of `id`. False when it was not installed.
    pub fn remove(&self, id: &str) -> Result<bool> {
        if !valid_id(id) {
            return Err(Error::Registry(format!("`{id}` is not an agent id")));
        }
        let dir = self.root.join(id);
        if !dir.exists() {
            return Ok(false);
        }
        let _lock = self.lock(id)?;
        // The manifest first: from here on the agent is not installed, even
        // if deleting its files fails halfway.
        let manifest = dir.join(MANIFEST);
        if let Err(e) = std::fs::remove_file(&manifest) {
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(io_err("remove", &manifest, e));
            }
        }
        std::fs::remove_dir_all(&dir).map_err(|e| io_err("remove", &dir, e))?;
        Ok(true)
    }

    /// The kind [`install`](Self::install) would use for `agent`: a binary
    /// for this platform, else npm when `npm` is on PATH, else PyPI when
    /// `uv` or `python3` is. The error says what to install.
    pub fn choose(&self, agent: &RegistryAgent) -> Result<DistributionKind> {
        let kinds = agent.distribution.kinds(self.options.platform.as_deref());
        for kind in &kinds {
            let usable = match kind {
                DistributionKind::Binary => true,
                DistributionKind::Npx => self.which("npm").is_some(),
                DistributionKind::Uvx => {
                    self.which("uv").is_some() || self.which("python3").is_some()
                }
            };
            if usable {
                return Ok(*kind);
            }
        }
        let mut needs = Vec::new();
        if agent.distribution.npx.is_some() {
            needs.push("Node.js (npm)".to_owned());
        }
        if agent.distribution.uvx.is_some() {
            needs.push("uv or Python 3".to_owned());
        }
        if needs.is_empty() {
            let platforms: Vec<&str> = agent
                .distribution
                .binary
                .keys()
                .map(String::as_str)
                .collect();
            return Err(Error::Registry(format!(
                "{} has no build for this machine ({}); it is published for: {}",
                agent.name,
                self.options
                    .platform
                    .as_deref()
                    .unwrap_or("an unknown platform"),
                if platforms.is_empty() {
                    "nothing this client can install".to_owned()
                } else {
                    platforms.join(", ")
                }
            )));
        }
        Err(Error::Registry(format!(
            "{} needs {} to be installed; install it, make sure it is on PATH, and try again",
            agent.name,
            needs.join(" or ")
        )))
    }

    /// True when [`install`](Self::install) would install `agent` from a
    /// binary archive its registry entry gives no SHA-256 for: the download
    /// cannot be verified, and the user must be told before installing.
    pub fn unverified(&self, agent: &RegistryAgent) -> bool {
        self.choose(agent)
            .is_ok_and(|k| k == DistributionKind::Binary)
            && self
                .options
                .platform
                .as_deref()
                .and_then(|p| agent.distribution.binary.get(p))
                .is_some_and(|t| t.sha256.is_none())
    }

    /// Installs `agent`'s registry version (replacing any installed one),
    /// reporting steps to `progress`. On error or cancel nothing of the new
    /// version is kept and the installed one, if any, still works.
    pub fn install(
        &self,
        agent: &RegistryAgent,
        cancel: &CancelToken,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<InstalledAgent> {
        let result = self.install_version(agent, cancel, progress);
        if result.is_err() && valid_id(&agent.id) {
            // A first install that failed leaves no empty agent directory
            // (remove_dir only removes an empty one).
            let _ = std::fs::remove_dir(self.root.join(&agent.id));
        }
        result
    }

    fn install_version(
        &self,
        agent: &RegistryAgent,
        cancel: &CancelToken,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<InstalledAgent> {
        if !valid_id(&agent.id) {
            return Err(Error::Registry(format!(
                "the registry entry `{}` has an id that is not a safe directory name; it cannot be installed",
                agent.id
            )));
        }
        if !valid_version(&agent.version) {
            return Err(Error::Registry(format!(
                "{} has the version `{}`, which is not a safe directory name; it cannot be installed",
                agent.name, agent.version
            )));
        }
        let kind = self.choose(agent)?;
        let _lock = self.lock(&agent.id)?;
        let agent_dir = self.root.join(&agent.id);
        std::fs::create_dir_all(&agent_dir).map_err(|e| io_err("create", &agent_dir, e))?;
        self.remove_leftovers(&agent_dir);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let tmp = TempDir {
            path: agent_dir.join(format!(
                "{TMP_PREFIX}{}-{}-{nanos}",
                agent.version,
                std::process::id()
            )),
            keep: false,
        };
        std::fs::create_dir(&tmp.path).map_err(|e| io_err("create", &tmp.path, e))?;
        let final_dir = agent_dir.join(&agent.version);
        let mut build = Build {
            agent,
            tmp: &tmp.path,
            final_dir: &final_dir,
            cancel,
            progress: &mut *progress,
        };
        let result = match kind {
            DistributionKind::Binary => {
                let platform = self.options.platform.as_deref().unwrap_or_default();
                let target = &agent.distribution.binary[platform];
                self.install_binary(&mut build, target)
            }
            DistributionKind::Npx => {
                let dist =
                    agent.distribution.npx.as_ref().ok_or_else(|| {
                        Error::Registry(format!("{} has no npm package", agent.name))
                    })?;
                self.install_npm(&mut build, dist)
            }
            DistributionKind::Uvx => {
                let dist = agent.distribution.uvx.as_ref().ok_or_else(|| {
                    Error::Registry(format!("{} has no PyPI package", agent.name))
                })?;
                self.install_python(&mut build, dist)
            }
        };
        let (cmd, env) = result.map_err(|e| match e {
            Error::Cancelled => Error::InstallCancelled {
                agent: agent.name.clone(),
            },
            e => e,
        })?;
        if cancel.is_cancelled() {
            return Err(Error::InstallCancelled {
                agent: agent.name.clone(),
            });
        }
        progress(Progress::step(format!(
            "finishing {} {}",
            agent.name, agent.version
        )));
        // Reinstalling the same version: move the old one aside first (a
        // rename cannot replace a non-empty directory).
        let aside = agent_dir.join(format!("{TMP_PREFIX}old-{}-{nanos}", agent.version));
        let had_old = final_dir.exists();
        if had_old {
            std::fs::rename(&final_dir, &aside).map_err(|e| io_err("replace", &final_dir, e))?;
        }
        if let Err(e) = std::fs::rename(&tmp.path, &final_dir) {
            if had_old {
                let _ = std::fs::rename(&aside, &final_dir);
            }
            return Err(io_err("install into", &final_dir, e));
        }
        let mut tmp = tmp;
        tmp.keep = true;
        let installed = InstalledAgent {
            id: agent.id.clone(),
            name: agent.name.clone(),
            version: agent.version.clone(),
            kind,
            cmd,
            env,
            dir: final_dir.clone(),
            installed_at: now_secs(),
        };
        let text = serde_json::to_vec_pretty(&installed)
            .map_err(|e| Error::Registry(format!("could not record the install: {e}")))?;
        write_atomic(&agent_dir.join(MANIFEST), &text)?;
        // Older versions go once the manifest names the new one.
        self.remove_other_versions(&agent_dir, &agent.version);
        Ok(installed)
    }

    /// Holds `<root>/.locks/<id>.lock` while the agent's directory changes,
    /// so that two editors never build into (or clean up) the same agent
    /// at once. The lock goes with the file handle, also when the holder
    /// is killed.
    fn lock(&self, id: &str) -> Result<AgentLock> {
        let dir = self.root.join(".locks");
        std::fs::create_dir_all(&dir).map_err(|e| io_err("create", &dir, e))?;
        let path = dir.join(format!("{id}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io_err("open", &path, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::io::AsRawFd;
            // SAFETY: flock(2) on a descriptor this function owns.
            let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
            if rc != 0 {
                return Err(Error::Registry(format!(
                    "{id} is being installed or removed by another editor; wait until it is done and try again"
                )));
            }
        }
        Ok(AgentLock { _file: file })
    }

    /// Removes temporaries of installs that were killed or cancelled.
    fn remove_leftovers(&self, agent_dir: &Path) {
        let Ok(entries) = std::fs::read_dir(agent_dir) else {
            return;
        };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(TMP_PREFIX) {
                let path = entry.path();
                if path.is_dir() {
                    let _ = std::fs::remove_dir_all(&path);
                } else {
                    let _ = std::fs::remove_file(&path);
                }
            }
        }
    }

    fn remove_other_versions(&self, agent_dir: &Path, keep: &str) {
        let Ok(entries) = std::fs::read_dir(agent_dir) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name != keep && name != MANIFEST && path.is_dir() {
                if let Err(e) = std::fs::remove_dir_all(&path) {
                    tracing::warn!(dir = %path.display(), "old agent version left: {e}");
                }
            }
        }
    }
}
