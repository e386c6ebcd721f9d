//! Draining the agent's stderr: a bounded tail for error messages, and
//! per-line debug logging.
//!
//! The drain must never fall behind: an agent blocks as soon as its stderr
//! pipe (64 KiB on Linux) is full, and chatty agents log a lot at INFO level.
//! So the drain only copies bytes into a fixed ring and, when debug logging
//! for [`LOG_TARGET`] is on, logs each line cut to [`LOG_LINE_MAX`] bytes.

use std::sync::Arc;

use parking_lot::Mutex;

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

/// The `tracing` target under which stderr lines are logged.
pub(super) const LOG_TARGET: &str = "acp::agent_stderr";

/// At most this many bytes of one stderr line are logged.
const LOG_LINE_MAX: usize = 1024;

/// Bytes read from the pipe per `read` call.
const READ_SIZE: usize = 64 * 1024;

/// The newest `limit` bytes of a stream.
#[derive(Debug)]
pub(super) struct Tail {
    /// Ring storage, allocated on first use and never larger than `limit`.
    ring: Vec<u8>,
    limit: usize,
    /// Next write position in `ring` once it is full.
    pos: usize,
    /// True once older bytes were dropped, so the first bytes may be the
    /// middle of a UTF-8 character.
    trimmed: bool,
}

impl Tail {
    pub(super) fn new(limit: usize) -> Self {
        Self {
            ring: Vec::new(),
            limit,
            pos: 0,
            trimmed: false,
        }
    }

    pub(super) fn push(&mut self, mut data: &[u8]) {
        if data.len() > self.limit {
            self.trimmed = true;
            data = &data[data.len() - self.limit..];
        }
        if self.ring.capacity() == 0 && !data.is_empty() {
            self.ring.reserve_exact(self.limit);
        }
        // Fill phase: the ring grows until it reaches the limit.
        let room = self.limit - self.ring.len();
        if room > 0 {
            let n = room.min(data.len());
            self.ring.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.is_empty() {
            return;
        }
        // Full: overwrite the oldest bytes, in at most two copies.
        self.trimmed = true;
        let first = data.len().min(self.limit - self.pos);
        self.ring[self.pos..self.pos + first].copy_from_slice(&data[..first]);
        let rest = data.len() - first;
        self.ring[..rest].copy_from_slice(&data[first..]);
        self.pos = (self.pos + data.len()) % self.limit;
    }

    /// The kept bytes, oldest first.
    pub(super) fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.ring.len());
        if self.ring.len() < self.limit {
            out.extend_from_slice(&self.ring);
        } else {
            out.extend_from_slice(&self.ring[self.pos..]);
            out.extend_from_slice(&self.ring[..self.pos]);
        }
        out
    }

    /// The kept bytes as text, starting at a character boundary.
    pub(super) fn text(&self) -> String {
        let bytes = self.bytes();
        let mut start = 0;
        if self.trimmed {
            // Skip the continuation bytes of a character whose start was cut off.
            while start < bytes.len().min(3) && bytes[start] & 0b1100_0000 == 0b1000_0000 {
                start += 1;
            }
        }
        String::from_utf8_lossy(&bytes[start..]).into_owned()
    }
}

/// Reads stderr until EOF, feeding the tail and the log.
pub(super) async fn drain(mut stderr: ChildStderr, tail: Arc<Mutex<Tail>>, agent: String) {
    let mut buf = vec![0u8; READ_SIZE];
    let mut log = LineLog::new(agent);
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!(target: LOG_TARGET, agent = %log.agent, "stopped reading stderr: {e}");
                break;
            }
        };
        let chunk = &buf[..n];
        tail.lock().push(chunk);
        if tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG) {
            log.feed(chunk);
        } else {
            log.reset();
        }
    }
    log.flush();
}

/// Splits stderr into lines for logging, keeping at most [`LOG_LINE_MAX`]
/// bytes of each.
#[derive(Debug)]
pub(super) struct LineLog {
    agent: String,
    line: Vec<u8>,
    /// Bytes of the current line beyond `LOG_LINE_MAX` that were not kept.
    dropped: usize,
}

impl LineLog {
    pub(super) fn new(agent: String) -> Self {
        Self {
            agent,
            line: Vec::with_capacity(LOG_LINE_MAX),
            dropped: 0,
        }
    }

    pub(super) fn feed(&mut self, mut chunk: &[u8]) {
        while let Some(newline) = chunk.iter().position(|&b| b == b'\n') {
            self.keep(&chunk[..newline]);
            self.emit();
            chunk = &chunk[newline + 1..];
        }
        self.keep(chunk);
    }

    /// Logs an unterminated last line.
    pub(super) fn flush(&mut self) {
        if !self.line.is_empty() || self.dropped > 0 {
            self.emit();
        }
    }

    fn reset(&mut self) {
        self.line.clear();
        self.dropped = 0;
    }

    fn keep(&mut self, part: &[u8]) {
        let n = (LOG_LINE_MAX - self.line.len()).min(part.len());
        self.line.extend_from_slice(&part[..n]);
        self.dropped += part.len() - n;
    }

    fn emit(&mut self) {
        if self.line.last() == Some(&b'\r') && self.dropped == 0 {
            self.line.pop();
        }
        if !self.line.is_empty() || self.dropped > 0 {
            let text = String::from_utf8_lossy(&self.line);
            if self.dropped > 0 {
                tracing::debug!(target: LOG_TARGET, agent = %self.agent,
                    "{text}... ({} more bytes not logged)", self.dropped);
            } else {
                tracing::debug!(target: LOG_TARGET, agent = %self.agent, "{text}");
            }
        }
        self.reset();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use std::io::Write;

    use super::*;

    /// What a naive "keep the last `limit` bytes" would keep.
    fn model(stream: &[u8], limit: usize) -> &[u8] {
        &stream[stream.len().saturating_sub(limit)..]
    }

    #[test]
    fn tail_keeps_exactly_the_newest_bytes_for_any_chunking() {
        let stream: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        for limit in [0, 1, 7, 64, 1000, 6000] {
            for chunk_size in [1, 3, 7, 64, 999, 5000] {
                let mut tail = Tail::new(limit);
                let mut written = 0;
                for chunk in stream.chunks(chunk_size) {
                    tail.push(chunk);
                    written += chunk.len();
                    assert_eq!(
                        tail.bytes(),
                        model(&stream[..written], limit),
                        "limit {limit}, chunk {chunk_size}, after {written} bytes"
                    );
                    assert!(tail.ring.capacity() <= limit);
                }
            }
        }
    }

    #[test]
    fn tail_text_starts_at_a_character_boundary() {
        let mut tail = Tail::new(101);
        tail.push("é".repeat(500).as_bytes());
        let text = tail.text();
        assert!(!text.contains('\u{fffd}'), "{text:?}");
        assert_eq!(text, "é".repeat(50));

        // Untrimmed tails are shown as they are.
        let mut tail = Tail::new(64);
        tail.push("crash: ünicode\n".as_bytes());
        assert_eq!(tail.text(), "crash: ünicode\n");
    }

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn captured_log(feed: impl FnOnce(&mut LineLog)) -> String {
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::DEBUG)
            .with_ansi(false)
            .without_time()
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let mut log = LineLog::new("fake-agent".into());
            feed(&mut log);
        });
        let bytes = out.0.lock().clone();
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn log_has_one_entry_per_line_and_cuts_huge_lines() {
        let huge = vec![b'x'; 100_000];
        let output = captured_log(|log| {
            log.feed(b"INFO starting\r\nINFO rea");
            log.feed(b"dy\n\n");
            for part in huge.chunks(4096) {
                log.feed(part);
            }
            log.feed(b"\nlast words");
            log.flush();
        });
        let lines: Vec<&str> = output.lines().collect();
        assert_eq!(lines.len(), 4, "{output}");
        // The formatter puts fields after the message.
        assert!(lines[0].contains("INFO starting agent="), "{}", lines[0]);
        assert!(lines[1].contains("INFO ready agent="), "{}", lines[1]);
        assert!(
            lines[2].len() < LOG_LINE_MAX + 200,
            "logged {} bytes",
            lines[2].len()
        );
        assert!(lines[2].contains(&format!(
            "({} more bytes not logged)",
            100_000 - LOG_LINE_MAX
        )));
        assert!(lines[3].contains("last words agent="), "{}", lines[3]);
        assert!(lines
            .iter()
            .all(|l| l.contains("acp::agent_stderr") && l.contains("agent=fake-agent")));
    }
}
