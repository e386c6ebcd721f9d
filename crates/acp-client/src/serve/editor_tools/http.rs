//! MCP's streamable HTTP transport, server side, for the one endpoint
//! `POST /mcp` on 127.0.0.1.
//!
//! A small bounded HTTP/1.1 server on `httparse` (already in the tree
//! through ureq) rather than hyper: the endpoint takes one JSON body with a
//! `Content-Length` and answers one JSON body, so the whole server is a
//! head parser with limits, and hyper plus its runtime glue would add a
//! dozen crates to build for it. What MCP asks of such a server:
//! - `POST` carries one JSON-RPC message; a request is answered `200` with
//!   `application/json`, a notification or response `202` without a body;
//! - `GET` (the server-to-client SSE stream) and `DELETE` (session end) may
//!   be refused with `405`: this server sends no requests of its own and
//!   keeps no MCP session;
//! - the `Origin` header is checked against DNS rebinding (`403`), an
//!   unsupported `MCP-Protocol-Version` is `400`;
//! - here also: the session's secret in `Authorization: Bearer` (`401`
//!   without it), heads over 16 KiB (`431`), bodies over
//!   [`MAX_MESSAGE_BYTES`] (`413`), no `Content-Length` (`411`), idle
//!   connections closed after a while, at most [`MAX_CONNECTIONS`] at once.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio::time::timeout;

use super::{Shared, MAX_MESSAGE_BYTES, PROTOCOL_VERSIONS};

/// The most a request head (request line and headers) may take.
const MAX_HEAD_BYTES: usize = 16 * 1024;
const MAX_HEADERS: usize = 64;
/// How long a kept-alive connection may sit idle, or a head or body take.
const IDLE: Duration = Duration::from_secs(60);
/// How much of a refused request's body is read and dropped, and for how
/// long, so that closing does not reset the connection under the reply.
const MAX_DRAIN_BYTES: usize = 1024 * 1024;
const DRAIN_TIME: Duration = Duration::from_millis(500);

pub(super) async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    let mut connections = JoinSet::new();
    loop {
        let (mut stream, _) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                // EMFILE and friends: wait instead of spinning.
                tracing::warn!("editor MCP server: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        while connections.try_join_next().is_some() {}
        match shared.connections.clone().try_acquire_owned() {
            Ok(permit) => {
                let shared = shared.clone();
                connections.spawn(async move {
                    let _permit = permit;
                    if let Err(e) = connection(stream, &shared).await {
                        tracing::debug!("editor MCP connection ended: {e}");
                    }
                });
            }
            Err(_) => {
                connections.spawn(async move {
                    let reply = Reply::text(
                        503,
                        "too many connections to the editor's MCP server; close some and retry",
                    );
                    let _ = timeout(IDLE, reply.refuse(&mut stream)).await;
                });
            }
        }
    }
}

/// A response to write.
struct Reply {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    extra: &'static str,
}

impl Reply {
    fn text(status: u16, message: &str) -> Self {
        Self {
            status,
            content_type: "text/plain; charset=utf-8",
            body: format!("{message}\n").into_bytes(),
            extra: "",
        }
    }

    async fn write(&self, stream: &mut TcpStream, close: bool) -> std::io::Result<()> {
        let reason = match self.status {
            200 => "OK",
            202 => "Accepted",
            400 => "Bad Request",
            401 => "Unauthorized",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            411 => "Length Required",
            413 => "Content Too Large",
            415 => "Unsupported Media Type",
            431 => "Request Header Fields Too Large",
            _ => "Service Unavailable",
        };
        let mut head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Length: {}\r\n",
            self.status,
            self.body.len()
        );
        if !self.body.is_empty() {
            head.push_str(&format!("Content-Type: {}\r\n", self.content_type));
        }
        head.push_str(self.extra);
        if close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        stream.write_all(&out).await?;
        stream.flush().await
    }

    /// Writes this refusal and closes the connection without a reset: the
    /// request's body (unread) is drained for a moment first, else the
    /// kernel answers it with RST and the client may lose the reply.
    async fn refuse(&self, stream: &mut TcpStream) -> std::io::Result<()> {
        self.write(stream, true).await?;
        stream.shutdown().await?;
        let drain = async {
            let mut sink = [0u8; 8192];
            let mut left = MAX_DRAIN_BYTES;
            while left > 0 {
                match stream.read(&mut sink).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => left = left.saturating_sub(n),
                }
            }
        };
        let _ = timeout(DRAIN_TIME, drain).await;
        Ok(())
    }
}

/// The parts of a request head the server looks at.
#[derive(Debug, Default)]
struct Head {
    method: String,
    path: String,
    content_length: Option<Result<usize, ()>>,
    chunked: bool,
    authorization: Option<String>,
    origin: Option<String>,
    content_type: Option<String>,
    protocol_version: Option<String>,
    expect_continue: bool,
    close: bool,
}

enum ReadHead {
    Head(usize),
    Eof,
    TooLarge,
}

/// Reads until the blank line ending a head; its length with it.
async fn read_head(stream: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<ReadHead> {
    let mut searched: usize = 0;
    loop {
        if let Some(at) = buf[searched.saturating_sub(3)..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
        {
            return Ok(ReadHead::Head(searched.saturating_sub(3) + at + 4));
        }
        searched = buf.len();
        if buf.len() >= MAX_HEAD_BYTES {
            return Ok(ReadHead::TooLarge);
        }
        let mut chunk = [0u8; 4096];
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Ok(ReadHead::Eof);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn parse_head(bytes: &[u8]) -> Result<Head, Reply> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut request = httparse::Request::new(&mut headers);
    match request.parse(bytes) {
        Ok(httparse::Status::Complete(_)) => {}
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Reply::text(431, "too many request headers"))
        }
        _ => return Err(Reply::text(400, "malformed HTTP request")),
    }
    let mut head = Head {
        method: request.method.unwrap_or_default().to_owned(),
        path: request.path.unwrap_or_default().to_owned(),
        close: request.version == Some(0),
        ..Head::default()
    };
    for h in request.headers.iter() {
        let value = String::from_utf8_lossy(h.value).trim().to_owned();
        match h.name.to_ascii_lowercase().as_str() {
            "content-length" => {
                if head.content_length.is_some() {
                    // Two lengths: request smuggling, or a broken client.
                    return Err(Reply::text(400, "more than one Content-Length"));
                }
                head.content_length = Some(value.parse().map_err(|_| ()));
            }
            "transfer-encoding" => head.chunked = true,
            "authorization" => head.authorization = Some(value),
            "origin" => head.origin = Some(value),
            "content-type" => head.content_type = Some(value.to_ascii_lowercase()),
            "mcp-protocol-version" => head.protocol_version = Some(value),
            "expect" => head.expect_continue = value.eq_ignore_ascii_case("100-continue"),
            "connection" => {
                let v = value.to_ascii_lowercase();
                if v.contains("close") {
                    head.close = true;
                } else if v.contains("keep-alive") {
                    head.close = false;
                }
            }
            _ => {}
        }
    }
    Ok(head)
}

/// An `Origin` a page on this machine's loopback could send; anything else
/// is a web page elsewhere trying the port (DNS rebinding).
fn loopback_origin(origin: &str) -> bool {
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => rest.split(':').next().unwrap_or(""),
    };
    matches!(host, "127.0.0.1" | "localhost" | "::1")
}

/// Checks a head before its body is read: an error reply, or the token.
fn admit(head: &Head, shared: &Shared) -> Result<String, Reply> {
    let path = head.path.split('?').next().unwrap_or("");
    if path != "/mcp" {
        return Err(Reply::text(404, "the editor's MCP endpoint is /mcp"));
    }
    if let Some(origin) = &head.origin {
        if !loopback_origin(origin) {
            return Err(Reply::text(403, "requests from web pages are refused"));
        }
    }
    let token = head
        .authorization
        .as_deref()
        .and_then(|a| {
            a.strip_prefix("Bearer ")
                .or_else(|| a.strip_prefix("bearer "))
        })
        .map(str::trim)
        .filter(|t| shared.knows(t));
    let Some(token) = token else {
        let mut reply = Reply::text(
            401,
            "the editor's MCP server needs the session's secret as `Authorization: Bearer <token>`, as given in `mcpServers`",
        );
        reply.extra = "WWW-Authenticate: Bearer\r\n";
        return Err(reply);
    };
    if head.method != "POST" {
        let mut reply = Reply::text(
            405,
            "only POST is served (no SSE stream, no MCP session to delete)",
        );
        reply.extra = "Allow: POST\r\n";
        return Err(reply);
    }
    if let Some(version) = &head.protocol_version {
        if !PROTOCOL_VERSIONS.contains(&version.as_str()) {
            return Err(Reply::text(
                400,
                &format!(
                    "unsupported MCP-Protocol-Version `{version}`; supported: {}",
                    PROTOCOL_VERSIONS.join(", ")
                ),
            ));
        }
    }
    if head.chunked {
        return Err(Reply::text(
            411,
            "send the body with a Content-Length, not chunked",
        ));
    }
    match head.content_length {
        None | Some(Err(())) => return Err(Reply::text(411, "a Content-Length is required")),
        Some(Ok(n)) if n > MAX_MESSAGE_BYTES => {
            return Err(Reply::text(
                413,
                &format!(
                    "the message is over the {MAX_MESSAGE_BYTES}-byte limit; send smaller writes"
                ),
            ))
        }
        Some(Ok(_)) => {}
    }
    if let Some(ct) = &head.content_type {
        if !ct.starts_with("application/json") {
            return Err(Reply::text(415, "the body must be application/json"));
        }
    }
    Ok(token.to_owned())
}

async fn connection(mut stream: TcpStream, shared: &Shared) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(4096);
    loop {
        let head_len = match timeout(IDLE, read_head(&mut stream, &mut buf)).await {
            Err(_) | Ok(Ok(ReadHead::Eof)) => return Ok(()),
            Ok(Err(e)) => return Err(e),
            Ok(Ok(ReadHead::TooLarge)) => {
                return Reply::text(431, "the request head is over 16 KiB")
                    .refuse(&mut stream)
                    .await
            }
            Ok(Ok(ReadHead::Head(n))) => n,
        };
        let head = match parse_head(&buf[..head_len]) {
            Ok(h) => h,
            Err(reply) => return reply.refuse(&mut stream).await,
        };
        buf.drain(..head_len);
        let token = match admit(&head, shared) {
            Ok(t) => t,
            // The body is not read: the connection closes after the reply.
            Err(reply) => return reply.refuse(&mut stream).await,
        };
        let length = match head.content_length {
            Some(Ok(n)) => n,
            _ => 0,
        };
        if head.expect_continue && buf.len() < length {
            stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        }
        let body = async {
            while buf.len() < length {
                let mut chunk = vec![0u8; (length - buf.len()).min(64 * 1024)];
                let n = stream.read(&mut chunk).await?;
                if n == 0 {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            Ok::<_, std::io::Error>(())
        };
        match timeout(IDLE, body).await {
            Ok(r) => r?,
            Err(_) => return Ok(()),
        }
        let body: Vec<u8> = buf.drain(..length).collect();
        let reply = match shared.handle(&token, &body).await {
            Some(answer) => Reply {
                status: 200,
                content_type: "application/json",
                body: answer.encode().into_bytes(),
                extra: "",
            },
            None => Reply {
                status: 202,
                content_type: "",
                body: Vec::new(),
                extra: "",
            },
        };
        reply.write(&mut stream, head.close).await?;
        if head.close {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_origins_pass() {
        assert!(loopback_origin("http://127.0.0.1:1234"));
        assert!(loopback_origin("http://localhost"));
        assert!(loopback_origin("http://[::1]:80"));
        assert!(!loopback_origin("http://evil.example"));
        assert!(!loopback_origin("http://127.0.0.1.evil.example"));
        assert!(!loopback_origin("null"));
    }
}
