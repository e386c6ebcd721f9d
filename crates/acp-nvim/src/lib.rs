//! The Neovim backend of acp.nvim (`acp-nvim`).
//!
//! The Lua plugin starts one backend per Neovim with
//! `jobstart({bin, ...}, {rpc = true})`. The backend speaks msgpack-RPC on
//! its stdin/stdout (through nvim-rs), owns every agent process and session
//! (through acp-client), and reports to Lua with batched events. The
//! contract with the Lua side is `doc/protocol.md`.
//!
//! Data flow:
//! - Lua -> [`handler`] (decode once into a [`command::Command`]) ->
//!   [`backend`] (route by chat) -> [`chat`] tasks -> acp-client.
//! - acp-client -> [`host`] (session id -> chat id) -> [`batcher`] (one
//!   `nvim_exec_lua` per frame) -> Lua.
//! - Buffer-aware `fs/*` of the agent: [`host`] -> [`editor`] -> Lua `acp.edits.fs`.
//! - `@` completion: [`handler`] -> [`files`] (a file index per workspace,
//!   answered without the command loop).
//!
//! What it does not do: render anything, or decide anything the user should
//! decide. Traffic can be seen with `--log-level trace` in the log file.

#![warn(missing_docs)]

pub mod agents;
pub mod backend;
pub mod batcher;
pub mod channel;
pub mod chat;
pub mod cli;
pub mod command;
pub mod editor;
pub mod elicitation;
pub mod files;
pub mod handler;
pub mod host;
pub mod listing;
pub mod logging;
pub mod mcp;
pub mod msgpack;
pub mod prompts;
pub mod protocol;
pub mod registry;
pub mod review;
pub mod review_queue;
mod rewind;
pub mod routes;
mod session_settings;
pub mod transcript;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::agents::Shared;
use crate::backend::{Backend, Routed};
use crate::batcher::EventQueue;
use crate::editor::{Editor, NvimEditor};
use crate::handler::{HelloInfo, NvimHandler};
use crate::prompts::Prompts;
use crate::protocol::Event;
use crate::review_queue::Decisions;
use crate::transcript::Transcripts;

/// How long the agents get to stop when Neovim is gone.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// Serves the parent Neovim on stdin/stdout until it goes away (stdin EOF)
/// or the process gets SIGTERM/SIGINT, then stops every agent.
/// `startup_warning` is shown to the user once the channel is up.
pub async fn serve(
    log_file: Option<PathBuf>,
    startup_warning: Option<String>,
) -> std::io::Result<()> {
    let (events, events_rx) = EventQueue::new();
    // The batcher hands each finished batch to the transcript recorder.
    let transcripts = Transcripts::new();
    let (tx, rx) = mpsc::unbounded_channel();
    let prompts = Arc::new(Prompts::new());
    let handler = NvimHandler::new(tx.clone(), events.clone(), HelloInfo::new(log_file))
        .with_prompts(prompts.clone());
    let (nvim, io) = channel::connect_parent(handler)?;
    // nvim-rs writes to its own duplicate of fd 1. Point fd 1 itself at
    // stderr, so that a stray print anywhere in the process cannot corrupt
    // the msgpack stream.
    redirect_stdout_to_stderr();

    let editor: Arc<dyn Editor> = Arc::new(NvimEditor::new(nvim));
    let batcher = batcher::spawn(events_rx, editor.clone(), Some(transcripts.clone()))?;
    let backend = Backend::new(Shared {
        events: events.clone(),
        editor,
        prompts,
        decisions: Decisions::new(),
    })
    .with_transcripts(transcripts.clone());
    let backend = tokio::spawn(backend.run(rx));
    if let Some(message) = startup_warning {
        events.push(Event::Warning {
            chat_id: None,
            message,
        });
    }
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        pid = std::process::id(),
        "acp-nvim serving"
    );

    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        r = io => match r {
            Ok(Ok(())) => tracing::info!("Neovim closed the channel"),
            Ok(Err(e)) if e.is_reader_error() => tracing::info!("Neovim closed the channel: {e}"),
            Ok(Err(e)) => tracing::error!("msgpack-RPC channel failed: {e}"),
            Err(e) => tracing::error!("msgpack-RPC task failed: {e}"),
        },
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
        _ = int.recv() => tracing::info!("SIGINT: stopping"),
    }

    let (ack, done) = oneshot::channel();
    if tx.send(Routed::Shutdown(Some(ack))).is_ok()
        && tokio::time::timeout(EXIT_WAIT, done).await.is_err()
    {
        tracing::warn!("agents did not stop within {EXIT_WAIT:?}");
    }
    drop(tx);
    drop(events);
    backend.abort();
    batcher.stop();
    transcripts.flush_all();
    Ok(())
}

#[cfg(unix)]
fn redirect_stdout_to_stderr() {
    // SAFETY: dup2 on the process's own standard descriptors; no Rust object
    // owns fd 1 (std's stdout handle writes to the fd number, which stays
    // valid), and nvim-rs holds its own duplicate of the original.
    let rc = unsafe { libc::dup2(libc::STDERR_FILENO, libc::STDOUT_FILENO) };
    if rc < 0 {
        tracing::warn!(
            "could not point stdout at stderr: {}",
            std::io::Error::last_os_error()
        );
    }
}
