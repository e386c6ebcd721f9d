//! MCP over stdio, through a bridge: the agent starts the editor's bridge
//! command ([`super::BridgeCommand`]), which connects to the server's unix
//! socket (in a private `0700` directory) and copies its stdin and stdout
//! there ([`run_bridge`]). On the socket: the session's secret on the first
//! line, then newline-delimited JSON-RPC, as MCP's stdio transport.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::timeout;

use super::{Shared, MAX_MESSAGE_BYTES, SOCKET_ENV, TOKEN_ENV};

/// How long a bridge has to send its secret.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);
/// Answers queued for a bridge that stopped reading before it is dropped.
const QUEUED_ANSWERS: usize = 64;

pub(super) async fn serve(listener: UnixListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("editor MCP socket: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        // Over the limit: dropped, so the bridge ends and the agent sees
        // the server gone.
        let Ok(permit) = shared.connections.clone().try_acquire_owned() else {
            continue;
        };
        let shared = shared.clone();
        connections.spawn(async move {
            let _permit = permit;
            if let Err(e) = connection(stream, shared).await {
                tracing::debug!("editor MCP bridge connection ended: {e}");
            }
        });
    }
}

/// One line of at most `limit` bytes (its `\n` stripped); `None` at the
/// end of input, an error for a longer line.
async fn read_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    limit: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let n = reader
        .take(limit as u64 + 1)
        .read_until(b'\n', &mut line)
        .await?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > limit {
        return Err(std::io::Error::other(format!(
            "a message over the {limit}-byte limit"
        )));
    }
    Ok(Some(line))
}

async fn connection(stream: UnixStream, shared: Arc<Shared>) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read);
    let token = match timeout(HELLO_TIMEOUT, read_line(&mut reader, 256)).await {
        Ok(Ok(Some(line))) => String::from_utf8_lossy(&line).trim().to_owned(),
        _ => return Ok(()),
    };
    if !shared.knows(&token) {
        let refusal = super::rpc_error(
            serde_json::Value::Null,
            -32001,
            "the editor's MCP server refused this bridge: its secret is wrong or no longer valid; reopen the chat",
        );
        write
            .write_all(format!("{}\n", refusal.encode()).as_bytes())
            .await?;
        return Ok(());
    }
    let (answers, mut queue) = mpsc::channel::<super::McpReply>(QUEUED_ANSWERS);
    let writer = tokio::spawn(async move {
        while let Some(answer) = queue.recv().await {
            let line = format!("{}\n", answer.encode());
            if write.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
        let _ = write.shutdown().await;
    });
    // Messages are served concurrently: a write waiting on the user must
    // not hold up a `ping`.
    let mut calls = JoinSet::new();
    let result = loop {
        let line = match read_line(&mut reader, MAX_MESSAGE_BYTES).await {
            Ok(Some(line)) => line,
            Ok(None) => break Ok(()),
            Err(e) => {
                let error = super::rpc_error(serde_json::Value::Null, -32600, e.to_string());
                let _ = answers.send(error).await;
                break Err(e);
            }
        };
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        while calls.try_join_next().is_some() {}
        let shared = shared.clone();
        let token = token.clone();
        let answers = answers.clone();
        calls.spawn(async move {
            if let Some(answer) = shared.handle(&token, &line).await {
                let _ = answers.send(answer).await;
            }
        });
    };
    // The bridge's input ended: answer what is running, then close.
    while calls.join_next().await.is_some() {}
    drop(answers);
    let _ = writer.await;
    result
}

/// The bridge: connects to the socket named by [`SOCKET_ENV`], sends the
/// secret of [`TOKEN_ENV`], then copies stdin to the socket and the socket
/// to stdout until either ends. An editor's binary runs this in its bridge
/// mode (the agent starts it as the `editor` stdio MCP server).
pub async fn run_bridge() -> std::io::Result<()> {
    let missing = |name: &str| {
        std::io::Error::other(format!(
            "{name} is not set: this command is the editor's MCP server, started by the agent with the settings the editor gave it, not by hand"
        ))
    };
    let socket = std::env::var_os(SOCKET_ENV).ok_or_else(|| missing(SOCKET_ENV))?;
    let token = std::env::var(TOKEN_ENV).map_err(|_| missing(TOKEN_ENV))?;
    let stream = UnixStream::connect(&socket).await.map_err(|e| {
        std::io::Error::other(format!(
            "could not reach the editor at {}: {e}; the editor's session is gone, reopen the chat",
            std::path::Path::new(&socket).display()
        ))
    })?;
    let (mut from_editor, mut to_editor) = stream.into_split();
    to_editor.write_all(format!("{token}\n").as_bytes()).await?;
    let upstream = tokio::spawn(async move {
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut to_editor).await;
        let _ = to_editor.shutdown().await;
    });
    let mut stdout = tokio::io::stdout();
    let copied = tokio::io::copy(&mut from_editor, &mut stdout).await;
    stdout.flush().await?;
    upstream.abort();
    copied.map(|_| ())
}
