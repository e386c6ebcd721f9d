//! The msgpack-RPC channel to the parent Neovim: the backend's stdin and
//! stdout.
//!
//! nvim-rs's `new_parent` reads through tokio's `Stdin` and writes through a
//! `tokio::fs::File`: both hand every read and write to the blocking thread
//! pool, one thread hand-off per message each way. Neovim starts the
//! backend with a socket pair for each of stdin and stdout (libuv's
//! `jobstart` pipes), and a shell may give it FIFOs: either is driven by
//! tokio's reactor here. Anything else (a file, a pty) keeps nvim-rs's way.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileTypeExt;

use futures_io::{AsyncRead, AsyncWrite};
use nvim_rs::error::LoopError;
use nvim_rs::{Handler, Neovim};
use tokio::net::unix::pipe;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

/// What the backend writes to Neovim through.
pub type Writer = Box<dyn AsyncWrite + Send + Sync + Unpin>;

/// The channel's read half.
type Reader = Box<dyn AsyncRead + Send + Sync + Unpin>;

/// The task running the channel's I/O loop: its end is Neovim's.
pub type IoLoop = tokio::task::JoinHandle<Result<(), Box<LoopError>>>;

/// The handle nvim-rs gives for the parent Neovim, and its I/O loop
/// (spawned): as `nvim_rs::create::tokio::new_parent`, on the reactor when
/// stdin and stdout are sockets or pipes.
pub fn connect_parent<H>(handler: H) -> std::io::Result<(Neovim<Writer>, IoLoop)>
where
    H: Handler<Writer = Writer> + nvim_rs::create::Spawner,
{
    let (reader, writer) = halves()?;
    let (nvim, io) = Neovim::new(reader, writer, handler);
    Ok((nvim, tokio::spawn(io)))
}

/// Stdin and stdout as the channel's halves: duplicates of the two fds (fd 1
/// is pointed at stderr afterwards, see `serve`). Both are checked before
/// either is made non-blocking: the blocking fallback must not get a
/// non-blocking fd.
fn halves() -> std::io::Result<(Reader, Writer)> {
    let stdin = std::io::stdin().as_fd().try_clone_to_owned()?;
    let stdout = std::io::stdout().as_fd().try_clone_to_owned()?;
    match (kind(&stdin), kind(&stdout)) {
        (Some(Kind::Socket), Some(Kind::Socket)) => {
            let rx = unix_stream(stdin)?;
            let tx = unix_stream(stdout)?;
            tracing::debug!("Neovim's channel: sockets, on the reactor");
            Ok((Box::new(rx.compat()), Box::new(tx.compat_write())))
        }
        (Some(Kind::Fifo), Some(Kind::Fifo)) => {
            let rx = pipe::Receiver::from_owned_fd(stdin)?;
            let tx = pipe::Sender::from_owned_fd(stdout)?;
            tracing::debug!("Neovim's channel: pipes, on the reactor");
            Ok((Box::new(rx.compat()), Box::new(tx.compat_write())))
        }
        _ => {
            tracing::debug!("Neovim's channel: neither sockets nor pipes, on the blocking pool");
            let out = tokio::fs::File::from_std(std::fs::File::from(stdout));
            Ok((
                Box::new(tokio::io::stdin().compat()),
                Box::new(out.compat_write()),
            ))
        }
    }
}

/// What an fd of the channel is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Socket,
    Fifo,
}

fn kind(fd: &OwnedFd) -> Option<Kind> {
    let meta = std::fs::File::from(fd.try_clone().ok()?).metadata().ok()?;
    let ft = meta.file_type();
    if ft.is_socket() {
        Some(Kind::Socket)
    } else if ft.is_fifo() {
        Some(Kind::Fifo)
    } else {
        None
    }
}

fn unix_stream(fd: OwnedFd) -> std::io::Result<tokio::net::UnixStream> {
    let std = std::os::unix::net::UnixStream::from(fd);
    std.set_nonblocking(true)?;
    tokio::net::UnixStream::from_std(std)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;

    #[test]
    fn sockets_and_pipes_go_on_the_reactor_and_nothing_else_does() {
        let (socket, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(kind(&OwnedFd::from(socket)), Some(Kind::Socket));
        let (rx, tx) = std::io::pipe().unwrap();
        assert_eq!(kind(&OwnedFd::from(rx)), Some(Kind::Fifo));
        assert_eq!(kind(&OwnedFd::from(tx)), Some(Kind::Fifo));
        let null = std::fs::File::open("/dev/null").unwrap();
        assert_eq!(kind(&OwnedFd::from(null)), None);
    }
}
