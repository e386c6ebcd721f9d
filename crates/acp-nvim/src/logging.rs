//! Logging to the file the plugin names, and a panic hook that logs.
//!
//! stdout is the msgpack channel to Neovim: nothing may ever be printed
//! there, so logs go to `--log-file` (stdpath("log")/acp.log), or to stderr
//! (which Neovim keeps for the plugin's error messages) when no file is given
//! or it cannot be opened.

use std::fs::OpenOptions;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use crate::cli::LogLevel;

/// Installs the global subscriber. Records of the `log` crate (nvim-rs
/// logs through it) are forwarded too. Returns a warning to show the user
/// when the log file could not be opened.
pub fn init(log_file: Option<&Path>, level: LogLevel) -> Option<String> {
    let builder = tracing_subscriber::fmt()
        .with_max_level(level.to_tracing())
        .with_ansi(false)
        .with_target(true);
    let mut warning = None;
    let file = log_file.and_then(|path| match open(path) {
        Ok(f) => Some(f),
        Err(e) => {
            warning = Some(format!(
                "acp.nvim backend cannot write its log file {}: {e}; logging to stderr instead. Check that the directory is writable.",
                path.display()
            ));
            None
        }
    });
    let result = match file {
        Some(f) => builder.with_writer(Mutex::new(f)).try_init(),
        None => builder.with_writer(io::stderr).try_init(),
    };
    if let Err(e) = result {
        // Only possible when a subscriber is already installed (tests).
        eprintln!("acp-nvim: logging not initialised: {e}");
    }
    install_panic_hook();
    warning
}

fn open(path: &Path) -> io::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

/// Logs panics (with their location) before the default hook prints them to
/// stderr, so a crash leaves a trace in the log file the user is pointed to.
fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_else(|| "unknown location".into());
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "non-string panic payload".into());
        tracing::error!(
            "panic at {location}: {message}\n{}",
            std::backtrace::Backtrace::force_capture()
        );
        default(info);
    }));
}
