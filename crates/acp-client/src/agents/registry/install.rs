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

    fn install_binary(&self, b: &mut Build<'_>, target: &BinaryTarget) -> Result<Launch> {
        let cmd_rel = archive::safe_relative(Path::new(&target.cmd))
            .filter(|p| !p.as_os_str().is_empty())
            .ok_or_else(|| {
                Error::Registry(format!(
                    "{}'s registry entry names the command `{}`, which is outside its archive; it cannot be installed",
                    b.agent.name, target.cmd
                ))
            })?;
        // A registry answer could name any URL: a plain http:// archive can
        // be swapped on the way (issue #25), a file:// one reads this
        // machine. Only https unless the user's own index is not https.
        if !self.options.insecure_urls && !target.archive.starts_with("https://") {
            return Err(Error::Registry(format!(
                "{}'s registry entry downloads from `{}`, which is not an https:// URL; it was not installed (only a registry URL you set yourself to http:// or a local file allows that)",
                b.agent.name, target.archive
            )));
        }
        if target.sha256.is_none() && !self.options.allow_unverified {
            return Err(Error::Registry(format!(
                "{}'s registry entry gives no SHA-256 checksum for its archive, so the download cannot be verified; it was not installed (install it anyway only if you trust {})",
                b.agent.name, target.archive
            )));
        }
        let download_dir = b.tmp.join(".download");
        std::fs::create_dir(&download_dir).map_err(|e| io_err("create", &download_dir, e))?;
        let file_name = target
            .archive
            .split(['?', '#'])
            .next()
            .and_then(|u| u.rsplit('/').next())
            .filter(|n| !n.is_empty() && *n != "." && *n != "..")
            .unwrap_or("archive");
        let archive_path = download_dir.join(file_name);
        let label = format!("downloading {} {}", b.agent.name, b.agent.version);
        (b.progress)(Progress::step(label.clone()));
        let downloaded = download::download(
            &target.archive,
            !self.options.insecure_urls,
            &archive_path,
            b.cancel,
            &mut |done, total| {
                (b.progress)(Progress {
                    message: label.clone(),
                    done: Some(done),
                    total,
                })
            },
        )?;
        if let Some(size) = target.size {
            if downloaded.bytes != size {
                return Err(Error::Registry(format!(
                    "the download of {} has {} bytes, the registry says {size}; it was not installed (try again later)",
                    target.archive, downloaded.bytes
                )));
            }
        }
        if let Some(expected) = &target.sha256 {
            if !expected.eq_ignore_ascii_case(&downloaded.sha256) {
                return Err(Error::Registry(format!(
                    "the download of {} does not match the registry's SHA-256 (got {}, expected {expected}); it was not installed",
                    target.archive, downloaded.sha256
                )));
            }
        }
        let program = b.tmp.join(&cmd_rel);
        match Format::of_url(&target.archive) {
            Format::Raw => {
                if let Some(dir) = program.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| io_err("create", dir, e))?;
                }
                std::fs::rename(&archive_path, &program)
                    .map_err(|e| io_err("install", &program, e))?;
            }
            format => {
                (b.progress)(Progress::step(format!(
                    "unpacking {} {}",
                    b.agent.name, b.agent.version
                )));
                archive::extract(&archive_path, format, b.tmp, b.cancel)?;
            }
        }
        std::fs::remove_dir_all(&download_dir).map_err(|e| io_err("remove", &download_dir, e))?;
        if !program.is_file() {
            return Err(Error::Registry(format!(
                "the archive of {} has no `{}` (the command its registry entry names); it was not installed",
                b.agent.name, target.cmd
            )));
        }
        make_executable(&program)?;
        let mut cmd = vec![b.final_dir.join(&cmd_rel).to_string_lossy().into_owned()];
        cmd.extend(target.args.iter().cloned());
        Ok((cmd, target.env.clone()))
    }

    fn install_npm(&self, b: &mut Build<'_>, dist: &PackageDistribution) -> Result<Launch> {
        let npm = self.which("npm").ok_or_else(|| {
            Error::Registry(format!(
                "{} needs npm (Node.js); install Node.js and try again",
                b.agent.name
            ))
        })?;
        (b.progress)(Progress::step(format!("npm install {}", dist.package)));
        let mut command = Command::new(npm);
        command
            .arg("install")
            .arg("--prefix")
            .arg(b.tmp)
            .args([
                "--no-audit",
                "--no-fund",
                "--no-update-notifier",
                "--loglevel=error",
            ])
            .arg(&dist.package);
        self.run(&b.agent.name, &mut command, b.cancel)?;
        // `npm install` records the package in <prefix>/package.json: that
        // is the one whose executable to run (node_modules/.bin also holds
        // its dependencies' executables).
        let manifest = read_json(&b.tmp.join("package.json"))?;
        let names: Vec<String> = manifest
            .get("dependencies")
            .and_then(|d| d.as_object())
            .map(|d| d.keys().cloned().collect())
            .unwrap_or_default();
        let [name] = names.as_slice() else {
            return Err(Error::Registry(format!(
                "npm installed {} but did not record which package it is; it was not installed",
                dist.package
            )));
        };
        let bin = match &dist.cmd {
            Some(cmd) => cmd.clone(),
            None => npm_bin(name, &read_json(&b.tmp.join("node_modules").join(name).join("package.json"))?)
                .ok_or_else(|| {
                    Error::Registry(format!(
                        "the npm package {name} has no single executable to run, and {}'s registry entry names none; it was not installed",
                        b.agent.name
                    ))
                })?,
        };
        let rel = Path::new("node_modules").join(".bin").join(&bin);
        if !b.tmp.join(&rel).exists() {
            return Err(Error::Registry(format!(
                "the npm package {name} has no executable `{bin}`; it was not installed"
            )));
        }
        let mut cmd = vec![b.final_dir.join(rel).to_string_lossy().into_owned()];
        cmd.extend(dist.args.iter().cloned());
        Ok((cmd, dist.env.clone()))
    }

    fn install_python(&self, b: &mut Build<'_>, dist: &PackageDistribution) -> Result<Launch> {
        let venv = b.tmp.join("venv");
        let spec = pip_spec(&dist.package);
        if let Some(uv) = self.which("uv") {
            (b.progress)(Progress::step(format!(
                "creating a virtualenv for {}",
                b.agent.name
            )));
            let mut command = Command::new(&uv);
            command.args(["venv", "--quiet"]).arg(&venv);
            self.run(&b.agent.name, &mut command, b.cancel)?;
            (b.progress)(Progress::step(format!("uv pip install {spec}")));
            let mut command = Command::new(&uv);
            command
                .args(["pip", "install", "--quiet", "--python"])
                .arg(venv.join("bin").join("python"))
                .arg(&spec);
            self.run(&b.agent.name, &mut command, b.cancel)?;
        } else {
            let python = self.which("python3").ok_or_else(|| {
                Error::Registry(format!(
                    "{} needs uv or Python 3; install one of them and try again",
                    b.agent.name
                ))
            })?;
            (b.progress)(Progress::step(format!(
                "creating a virtualenv for {}",
                b.agent.name
            )));
            let mut command = Command::new(python);
            command.args(["-m", "venv"]).arg(&venv);
            self.run(&b.agent.name, &mut command, b.cancel)?;
            (b.progress)(Progress::step(format!("pip install {spec}")));
            let mut command = Command::new(venv.join("bin").join("python"));
            command
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--disable-pip-version-check",
                    "--no-input",
                    "--quiet",
                ])
                .arg(&spec);
            self.run(&b.agent.name, &mut command, b.cancel)?;
        }
        let script = dist
            .cmd
            .clone()
            .unwrap_or_else(|| python_name(&dist.package));
        if archive::safe_relative(Path::new(&script)).is_none_or(|p| p.components().count() != 1) {
            return Err(Error::Registry(format!(
                "{}'s registry entry names the command `{script}`, which is not a script name",
                b.agent.name
            )));
        }
        if !venv.join("bin").join(&script).is_file() {
            return Err(Error::Registry(format!(
                "the Python package {} has no command `{script}`; it was not installed",
                dist.package
            )));
        }
        // Scripts' `#!` lines name the temporary directory; run them with
        // the virtualenv's interpreter instead (which finds its environment
        // from its own path, so the rename keeps it working).
        let bin = b.final_dir.join("venv").join("bin");
        let mut cmd = vec![
            bin.join("python").to_string_lossy().into_owned(),
            bin.join(&script).to_string_lossy().into_owned(),
        ];
        cmd.extend(dist.args.iter().cloned());
        Ok((cmd, dist.env.clone()))
    }

    /// `program` found on the installer's PATH.
    fn which(&self, program: &str) -> Option<PathBuf> {
        let path = self
            .options
            .path
            .clone()
            .or_else(|| std::env::var_os("PATH"))?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|p| is_executable(p))
    }

    /// Runs an install step: its own process group (killed on cancel),
    /// output kept as a tail for the error message.
    fn run(&self, agent: &str, command: &mut Command, cancel: &CancelToken) -> Result<()> {
        let shown = std::iter::once(command.get_program())
            .chain(command.get_args())
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.options.env {
            command.env(k, v);
        }
        if let Some(path) = &self.options.path {
            command.env("PATH", path);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        tracing::info!(command = %shown, "installing {agent}");
        let mut child = command.spawn().map_err(|e| Error::InstallCommand {
            agent: agent.to_owned(),
            command: shown.clone(),
            status: format!("could not start: {e}"),
            output_tail: String::new(),
        })?;
        let tail = Arc::new(parking_lot::Mutex::new(OutputTail::default()));
        let readers: Vec<_> = [
            child
                .stdout
                .take()
                .map(|r| Box::new(r) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|r| Box::new(r) as Box<dyn Read + Send>),
        ]
        .into_iter()
        .flatten()
        .map(|mut r| {
            let tail = tail.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = r.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    tail.lock().push(&buf[..n]);
                }
            })
        })
        .collect();
        let status = loop {
            if cancel.is_cancelled() {
                kill_group(&mut child);
                let _ = child.wait();
                for r in readers {
                    let _ = r.join();
                }
                return Err(Error::Cancelled);
            }
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) => std::thread::sleep(Duration::from_millis(50)),
                Err(e) => {
                    kill_group(&mut child);
                    return Err(Error::InstallCommand {
                        agent: agent.to_owned(),
                        command: shown,
                        status: format!("could not be waited for: {e}"),
                        output_tail: String::new(),
                    });
                }
            }
        };
        for r in readers {
            let _ = r.join();
        }
        if status.success() {
            return Ok(());
        }
        let output_tail = tail.lock().text();
        let status = match status.code() {
            Some(code) => format!("exited with code {code}"),
            None => "was killed".to_owned(),
        };
        Err(Error::InstallCommand {
            agent: agent.to_owned(),
            command: shown,
            status,
            output_tail,
        })
    }
}

fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        if let Ok(pid) = i32::try_from(child.id()) {
            // SAFETY: kill(2) on the process group this child leads.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
    }
    let _ = child.kill();
}

/// The last lines of a command's output.
#[derive(Default)]
struct OutputTail {
    bytes: Vec<u8>,
}

impl OutputTail {
    const LIMIT: usize = 4096;

    fn push(&mut self, data: &[u8]) {
        self.bytes.extend_from_slice(data);
        if self.bytes.len() > 2 * Self::LIMIT {
            let cut = self.bytes.len() - Self::LIMIT;
            self.bytes.drain(..cut);
        }
    }

    fn text(&self) -> String {
        let start = self.bytes.len().saturating_sub(Self::LIMIT);
        let text = String::from_utf8_lossy(&self.bytes[start..]);
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    let bytes = std::fs::read(path).map_err(|e| io_err("read", path, e))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| Error::Registry(format!("{} is not valid JSON: {e}", path.display())))
}

/// The executable of an npm package: its only `bin`, or the one named like
/// the package (npx's rule).
fn npm_bin(name: &str, manifest: &serde_json::Value) -> Option<String> {
    let unscoped = name.rsplit('/').next().unwrap_or(name);
    match manifest.get("bin")? {
        serde_json::Value::String(_) => Some(unscoped.to_owned()),
        serde_json::Value::Object(bins) if bins.len() == 1 => bins.keys().next().cloned(),
        serde_json::Value::Object(bins) => bins.contains_key(unscoped).then(|| unscoped.to_owned()),
        _ => None,
    }
}

/// A `uvx` package spec for pip: `pkg@1.2` becomes `pkg==1.2`; paths and
/// other specs are kept.
fn pip_spec(package: &str) -> String {
    if package.contains('/') || package.contains("==") {
        return package.to_owned();
    }
    match package.split_once('@') {
        Some((name, version))
            if !name.is_empty() && version.starts_with(|c: char| c.is_ascii_digit()) =>
        {
            format!("{name}=={version}")
        }
        _ => package.to_owned(),
    }
}

/// The command a PyPI package installs under its own name (uvx's rule):
/// the package name without version or extras; for a wheel or sdist path,
/// the name in the file name.
fn python_name(package: &str) -> String {
    let base = package.rsplit('/').next().unwrap_or(package);
    if base.ends_with(".whl") || base.ends_with(".tar.gz") || base.ends_with(".zip") {
        let name = base.split('-').next().unwrap_or(base);
        return name.replace('_', "-");
    }
    let end = base
        .find(['@', '=', '<', '>', '~', '!', '[', ' '])
        .unwrap_or(base.len());
    base[..end].to_owned()
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

fn make_executable(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let meta = path.metadata().map_err(|e| io_err("read", path, e))?;
        let mode = meta.permissions().mode() | 0o755;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| io_err("make executable", path, e))?;
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn npm_executables_follow_npx() {
        assert_eq!(
            npm_bin("@s/tool", &json!({"bin": "cli.js"})).as_deref(),
            Some("tool")
        );
        assert_eq!(
            npm_bin("x", &json!({"bin": {"only": "a.js"}})).as_deref(),
            Some("only")
        );
        assert_eq!(
            npm_bin("x", &json!({"bin": {"x": "a.js", "y": "b.js"}})).as_deref(),
            Some("x")
        );
        assert_eq!(
            npm_bin("x", &json!({"bin": {"a": "a.js", "b": "b.js"}})),
            None
        );
        assert_eq!(npm_bin("x", &json!({})), None);
    }

    #[test]
    fn pypi_specs_and_names() {
        assert_eq!(pip_spec("mistral-vibe@2.0.2"), "mistral-vibe==2.0.2");
        assert_eq!(pip_spec("pkg==1"), "pkg==1");
        assert_eq!(
            pip_spec("/tmp/a-1.0-py3-none-any.whl"),
            "/tmp/a-1.0-py3-none-any.whl"
        );
        assert_eq!(python_name("mistral-vibe@2.0.2"), "mistral-vibe");
        assert_eq!(python_name("pkg[extra]==1"), "pkg");
        assert_eq!(
            python_name("/tmp/tiny_agent-1.0-py3-none-any.whl"),
            "tiny-agent"
        );
    }

    #[test]
    fn versions_must_be_plain_directory_names() {
        assert!(valid_version("1.0.0-beta.2+build.5"));
        assert!(!valid_version("../1.0.0"));
        assert!(!valid_version("1.0/2"));
        assert!(!valid_version(".."));
    }

    #[test]
    fn a_second_installer_of_the_same_agent_is_refused_while_the_first_holds_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = Installer::new(dir.path(), InstallOptions::default());
        let b = Installer::new(dir.path(), InstallOptions::default());
        let held = a.lock("x").unwrap();
        let e = b.lock("x").err().unwrap();
        assert!(e.to_string().contains("another editor"), "{e}");
        assert!(b.lock("y").is_ok(), "other agents are not held");
        drop(held);
        assert!(b.lock("x").is_ok());
    }

    #[test]
    fn output_tail_keeps_the_last_lines() {
        let mut t = OutputTail::default();
        for i in 0..100 {
            t.push(format!("line {i}\n").as_bytes());
        }
        let text = t.text();
        assert!(text.ends_with("line 99"));
        assert_eq!(text.lines().count(), 20);
    }
}
