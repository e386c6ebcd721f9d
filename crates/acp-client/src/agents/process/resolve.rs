//! Finding the agent's executable before spawning it.
//!
//! `exec` failures only say "No such file or directory", which users cannot
//! act on (was it the program? the interpreter in its `#!` line? the cwd?).
//! Resolving first lets the error name what is missing and where we looked.

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::AgentCommand;

/// Why the program could not be resolved: the `reason` of [`crate::Error::Spawn`].
pub(super) type Reason = String;

/// The absolute path of the program `cmd` names.
///
/// A program containing `/` is a path, taken relative to the command's cwd
/// (as if a shell had `cd`-ed there first). Anything else is looked up on
/// the PATH the agent will see: the command's `PATH` override if it has
/// one, else ours.
pub(super) fn program(cmd: &AgentCommand) -> Result<PathBuf, Reason> {
    if cmd.program.is_empty() {
        return Err("the agent command is empty; set the program to run".into());
    }
    let base = match &cmd.cwd {
        Some(cwd) => {
            if !cwd.is_dir() {
                return Err(format!(
                    "the working directory `{}` does not exist or is not a directory; create it or choose another",
                    cwd.display()
                ));
            }
            cwd.clone()
        }
        None => std::env::current_dir().map_err(|e| {
            format!("cannot determine the current directory ({e}); set the agent's cwd explicitly")
        })?,
    };

    if cmd.program.contains('/') {
        let path = base.join(&cmd.program);
        return match check_executable(&path) {
            Candidate::Executable => Ok(path),
            Candidate::NotExecutable => Err(not_executable(&path)),
            Candidate::Missing => Err(format!(
                "`{}` does not exist; check the program path in the agent command",
                path.display()
            )),
        };
    }

    let path_var = effective_path(cmd);
    let mut not_runnable = None;
    for dir in std::env::split_paths(&path_var) {
        // An empty PATH entry means the current directory (POSIX).
        let dir = if dir.as_os_str().is_empty() {
            base.clone()
        } else {
            base.join(dir)
        };
        let candidate = dir.join(&cmd.program);
        match check_executable(&candidate) {
            Candidate::Executable => return Ok(candidate),
            Candidate::NotExecutable => {
                not_runnable.get_or_insert(candidate);
            }
            Candidate::Missing => {}
        }
    }
    Err(match not_runnable {
        Some(path) => not_executable(&path),
        None => format!(
            "`{}` was not found on PATH ({}); install it, or give its full path in the agent command",
            cmd.program,
            path_var.to_string_lossy()
        ),
    })
}

/// The PATH the child will run with.
fn effective_path(cmd: &AgentCommand) -> OsString {
    match cmd.env.iter().rev().find(|(k, _)| k == "PATH") {
        Some((_, v)) => OsString::from(v),
        None => std::env::var_os("PATH").unwrap_or_default(),
    }
}

enum Candidate {
    Executable,
    NotExecutable,
    Missing,
}

fn check_executable(path: &Path) -> Candidate {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => {
            Candidate::Executable
        }
        Ok(_) => Candidate::NotExecutable,
        Err(_) => Candidate::Missing,
    }
}

fn not_executable(path: &Path) -> Reason {
    format!(
        "`{}` is not an executable file; make it executable (chmod +x) or run it through its interpreter",
        path.display()
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use std::fs;

    use super::*;

    fn script(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, "#!/bin/sh\n").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn finds_programs_on_the_overridden_path_first() {
        let dir = tempfile::tempdir().unwrap();
        let agent = script(dir.path(), "my-agent", 0o755);
        let cmd = AgentCommand::new("my-agent").env("PATH", dir.path().to_str().unwrap());
        assert_eq!(program(&cmd).unwrap(), agent);
        assert!(program(&AgentCommand::new("my-agent")).is_err());
    }

    #[test]
    fn skips_non_executable_matches_and_names_them_when_nothing_else_fits() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        let plain = script(first.path(), "tool", 0o644);
        let path = std::env::join_paths([first.path(), second.path()]).unwrap();
        let cmd = AgentCommand::new("tool").env("PATH", path.to_str().unwrap());
        let reason = program(&cmd).unwrap_err();
        assert!(reason.contains(&plain.display().to_string()), "{reason}");
        assert!(reason.contains("chmod +x"), "{reason}");

        let runnable = script(second.path(), "tool", 0o700);
        assert_eq!(program(&cmd).unwrap(), runnable);
    }

    #[test]
    fn relative_paths_are_taken_from_the_command_cwd() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("bin")).unwrap();
        let agent = script(&dir.path().join("bin"), "agent", 0o755);
        let cmd = AgentCommand::new("./bin/agent").cwd(dir.path());
        assert_eq!(program(&cmd).unwrap(), dir.path().join("./bin/agent"));
        assert!(agent.exists());

        let missing = AgentCommand::new("./bin/nope").cwd(dir.path());
        assert!(program(&missing).unwrap_err().contains("does not exist"));
    }

    #[test]
    fn a_missing_cwd_and_an_empty_command_are_explained() {
        let cmd = AgentCommand::new("sh").cwd("/nonexistent/acp-test-dir");
        assert!(program(&cmd)
            .unwrap_err()
            .contains("/nonexistent/acp-test-dir"));
        assert!(program(&AgentCommand::new(""))
            .unwrap_err()
            .contains("empty"));
    }

    #[test]
    fn directories_are_not_programs() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("agent")).unwrap();
        let cmd = AgentCommand::new("agent").env("PATH", dir.path().to_str().unwrap());
        assert!(program(&cmd).is_err());
    }
}
