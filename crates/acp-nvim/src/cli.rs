//! Command-line arguments of `acp-nvim`.
//!
//! The plugin starts the backend as `acp-nvim --log-file PATH --log-level
//! LEVEL`; `:checkhealth` runs `acp-nvim --version`.

use std::path::PathBuf;

/// How verbose the log file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogLevel {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
    /// Lifecycle messages (default).
    Info,
    /// Every command and event kind.
    Debug,
    /// Everything, wire traffic included.
    Trace,
}

impl LogLevel {
    fn parse(s: &str) -> Option<LogLevel> {
        Some(match s.to_ascii_lowercase().as_str() {
            "error" => LogLevel::Error,
            "warn" | "warning" => LogLevel::Warn,
            "info" => LogLevel::Info,
            "debug" => LogLevel::Debug,
            "trace" => LogLevel::Trace,
            _ => return None,
        })
    }

    /// The matching `tracing` level.
    pub fn to_tracing(self) -> tracing::Level {
        match self {
            LogLevel::Error => tracing::Level::ERROR,
            LogLevel::Warn => tracing::Level::WARN,
            LogLevel::Info => tracing::Level::INFO,
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Trace => tracing::Level::TRACE,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cli {
    /// Print the version and exit.
    Version,
    /// Print the usage and exit.
    Help,
    /// Run as the stdio bridge of the editor's MCP server (the agent starts
    /// the backend so; see `acp_client::serve::editor_tools::run_bridge`).
    McpBridge,
    /// Serve the parent Neovim over stdio.
    Serve {
        /// Log here; stderr when absent.
        log_file: Option<PathBuf>,
        /// How much to log.
        level: LogLevel,
    },
}

/// The usage text for `--help` and argument errors.
pub const USAGE: &str =
    "usage: acp-nvim [--log-file PATH] [--log-level error|warn|info|debug|trace]
       acp-nvim --version
       acp-nvim --mcp-bridge   (the editor's MCP server over stdio, started by agents)

Started by the acp.nvim Neovim plugin with jobstart(..., {rpc = true}); it
speaks msgpack-RPC on stdin/stdout and is not meant to be run by hand.";

/// Parses the arguments after the program name.
pub fn parse<I: IntoIterator<Item = String>>(args: I) -> Result<Cli, String> {
    let mut log_file = None;
    let mut level = LogLevel::Info;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n.to_owned(), Some(v.to_owned())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("`{name}` needs {what}"))
        };
        match name.as_str() {
            "--version" | "-V" => return Ok(Cli::Version),
            "--help" | "-h" => return Ok(Cli::Help),
            "--mcp-bridge" => return Ok(Cli::McpBridge),
            "--log-file" => log_file = Some(PathBuf::from(value("a path")?)),
            "--log-level" => {
                let v = value("a level")?;
                level = LogLevel::parse(&v).ok_or_else(|| {
                    format!("unknown log level `{v}`; use error, warn, info, debug or trace")
                })?;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Cli::Serve { log_file, level })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parses_what_the_plugin_passes() {
        assert_eq!(
            parse(args(&[
                "--log-file",
                "/tmp/acp.log",
                "--log-level",
                "debug"
            ]))
            .unwrap(),
            Cli::Serve {
                log_file: Some("/tmp/acp.log".into()),
                level: LogLevel::Debug
            }
        );
        assert_eq!(
            parse(args(&["--log-level=trace"])).unwrap(),
            Cli::Serve {
                log_file: None,
                level: LogLevel::Trace
            }
        );
        assert_eq!(
            parse(args(&[])).unwrap(),
            Cli::Serve {
                log_file: None,
                level: LogLevel::Info
            }
        );
    }

    #[test]
    fn version_and_help() {
        assert_eq!(parse(args(&["--version"])).unwrap(), Cli::Version);
        assert_eq!(parse(args(&["-h"])).unwrap(), Cli::Help);
    }

    #[test]
    fn rejects_bad_arguments_with_a_reason() {
        assert!(parse(args(&["--log-level", "loud"]))
            .unwrap_err()
            .contains("loud"));
        assert!(parse(args(&["--log-file"])).unwrap_err().contains("a path"));
        assert!(parse(args(&["--frob"])).unwrap_err().contains("--frob"));
    }
}
