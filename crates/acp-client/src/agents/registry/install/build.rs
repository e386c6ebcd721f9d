//! Building one version of an agent from its distribution: a binary archive
//! (download, check, unpack), an npm package (`npm install --prefix`) or a
//! PyPI package (a virtualenv), and running the package managers.

use super::*;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

impl Installer {
    pub(super) fn install_binary(
        &self,
        b: &mut Build<'_>,
        target: &BinaryTarget,
    ) -> Result<Launch> {
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

    pub(super) fn install_npm(
        &self,
        b: &mut Build<'_>,
        dist: &PackageDistribution,
    ) -> Result<Launch> {
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

    pub(super) fn install_python(
        &self,
        b: &mut Build<'_>,
        dist: &PackageDistribution,
    ) -> Result<Launch> {
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
    pub(super) fn which(&self, program: &str) -> Option<PathBuf> {
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
