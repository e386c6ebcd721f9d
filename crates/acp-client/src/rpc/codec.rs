//! Newline-delimited framing of the agent's stdout, with a hard line limit.
//!
//! ACP sends one JSON-RPC message per line. [`LineReader`] splits the byte
//! stream into lines and nothing more: it does not decode UTF-8 or JSON (that
//! is [`crate::rpc`]'s job), so odd bytes reach the decoder untouched and are
//! reported there with context.
//!
//! The limit exists because an agent that never sends a newline (a crashed
//! agent dumping binary, a wrapper printing a banner without a newline, or a
//! plain bug) would otherwise make us buffer its whole output in memory.

use std::fmt;
use std::io::ErrorKind;

use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::Error;

/// The default limit for one line (one JSON-RPC message): 64 MiB.
///
/// Large enough for prompts and tool results that embed images or whole
/// files as base64, small enough that a runaway agent cannot exhaust memory.
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

/// How much we try to read per `read` call when the buffer has to grow.
const READ_CHUNK: usize = 64 * 1024;

/// Below this much free space we make room before reading, so that reads
/// stay large and syscalls few.
const MIN_READ: usize = 4 * 1024;

/// Splits a byte stream into lines of at most a fixed number of bytes.
///
/// Lines are returned as slices into the reader's own buffer, so the common
/// case (many lines per `read`) copies nothing; only the unfinished line at
/// the end of a read is moved to the front of the buffer before the next read.
/// The buffer never holds more than the limit plus one read chunk (64 KiB).
pub struct LineReader<R> {
    inner: R,
    /// Bytes read and not yet returned start at `start`; `buf.len()` is the
    /// end of the data read so far.
    buf: Vec<u8>,
    start: usize,
    /// `buf[start..scanned]` is known to hold no `\n`, so a long line is
    /// scanned once, not once per read.
    scanned: usize,
    max_line_bytes: usize,
    state: State,
    #[cfg(test)]
    peak_capacity: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Reading,
    /// The source is exhausted and every line was returned.
    Eof,
    /// A line exceeded the limit; the stream cannot be resynchronised
    /// reliably (the rest of that line is not a message), so we stop.
    TooLong,
}

impl<R> fmt::Debug for LineReader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineReader")
            .field("buffered", &(self.buf.len() - self.start))
            .field("max_line_bytes", &self.max_line_bytes)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Wraps `inner`; lines longer than `max_line_bytes` (not counting the
    /// `\n` or `\r\n` terminator) are an error.
    pub fn new(inner: R, max_line_bytes: usize) -> Self {
        Self {
            inner,
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            max_line_bytes,
            state: State::Reading,
            #[cfg(test)]
            peak_capacity: 0,
        }
    }

    /// The next line, without its `\n` and without a `\r` right before it.
    ///
    /// Returns `Ok(None)` at end of input. A last line that is not terminated
    /// by a newline is still returned as a line. Empty lines are returned as
    /// empty slices (callers skip them). The bytes are passed through as
    /// they came, valid UTF-8 or not.
    ///
    /// A line longer than the limit fails with [`Error::LineTooLong`] as soon
    /// as the limit is crossed, without reading the rest of the line; every
    /// later call fails the same way. An I/O error from the source is
    /// returned as [`Error::Io`] and leaves the reader as it was.
    ///
    /// Cancel safety: dropping the future between reads loses no data, since
    /// everything read is kept in the reader's buffer.
    pub async fn next_line(&mut self) -> Result<Option<&[u8]>, Error> {
        loop {
            match self.state {
                State::Reading => {}
                State::Eof => return Ok(None),
                State::TooLong => return Err(self.too_long()),
            }

            let unscanned = &self.buf[self.scanned..];
            // memchr scans a word at a time; a byte loop was 7% of the
            // backend's instructions while an agent streams (bench/fixes.md section 10).
            if let Some(offset) = memchr::memchr(b'\n', unscanned) {
                let newline = self.scanned + offset;
                let line_start = self.start;
                self.start = newline + 1;
                self.scanned = self.start;
                return self.finish_line(line_start, newline).map(Some);
            }
            self.scanned = self.buf.len();
            if self.pending_exceeds_limit() {
                return Err(self.fail());
            }

            self.make_room();
            let read = match self.inner.read_buf(&mut self.buf).await {
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::Io(e)),
            };
            if read == 0 {
                self.state = State::Eof;
                if self.start == self.buf.len() {
                    return Ok(None);
                }
                let line_start = self.start;
                let end = self.buf.len();
                self.start = end;
                self.scanned = end;
                return self.finish_line(line_start, end).map(Some);
            }
        }
    }

    /// Strips a trailing `\r` from `buf[start..end]`, checks the limit and
    /// returns the line.
    #[allow(clippy::result_large_err)] // `Error`'s size is the crate's choice (error.rs).
    fn finish_line(&mut self, start: usize, end: usize) -> Result<&[u8], Error> {
        let end = if end > start && self.buf[end - 1] == b'\r' {
            end - 1
        } else {
            end
        };
        if end - start > self.max_line_bytes {
            return Err(self.fail());
        }
        Ok(&self.buf[start..end])
    }

    /// True when the unterminated bytes at the end of the buffer are already
    /// too many for one line. One byte over is still fine if it is a `\r`
    /// that the next byte may turn into a `\r\n` terminator.
    fn pending_exceeds_limit(&self) -> bool {
        let pending = self.buf.len() - self.start;
        if pending <= self.max_line_bytes {
            return false;
        }
        !(pending - 1 == self.max_line_bytes && self.buf.last() == Some(&b'\r'))
    }

    /// Ensures the buffer has room for a reasonably large read, moving the
    /// unfinished line to the front or growing the buffer (never past
    /// limit + one chunk) as needed.
    fn make_room(&mut self) {
        if self.start == self.buf.len() {
            // Everything was returned: reuse the buffer from the front, no copy.
            self.buf.clear();
            self.start = 0;
            self.scanned = 0;
        }
        if self.buf.capacity() - self.buf.len() >= MIN_READ {
            return;
        }
        if self.start > 0 {
            // Only the unfinished line moves: at most once per read.
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        let len = self.buf.len();
        if self.buf.capacity() - len < MIN_READ {
            // The pending line is at most limit + 1 bytes here (we checked),
            // so the cap always leaves room for at least one chunk.
            let cap_limit = self.max_line_bytes.saturating_add(READ_CHUNK + 1);
            let target = (self.buf.capacity().saturating_mul(2))
                .max(len.saturating_add(READ_CHUNK))
                .min(cap_limit)
                .max(len + 1);
            self.buf.reserve_exact(target - len);
        }
        #[cfg(test)]
        {
            self.peak_capacity = self.peak_capacity.max(self.buf.capacity());
        }
    }

    /// Marks the reader as failed and frees its buffer.
    fn fail(&mut self) -> Error {
        self.state = State::TooLong;
        self.buf = Vec::new();
        self.start = 0;
        self.scanned = 0;
        self.too_long()
    }

    fn too_long(&self) -> Error {
        Error::LineTooLong {
            limit: self.max_line_bytes,
        }
    }

    /// The largest buffer capacity the reader ever had.
    #[cfg(test)]
    fn peak_capacity(&self) -> usize {
        self.peak_capacity
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::ReadBuf;

    use super::*;

    /// Serves fixed chunks, one per `read` call (each cut to the caller's
    /// buffer size if needed).
    struct Chunked {
        chunks: Vec<Vec<u8>>,
        next: usize,
        offset: usize,
    }

    impl Chunked {
        fn new(chunks: Vec<Vec<u8>>) -> Self {
            Self {
                chunks,
                next: 0,
                offset: 0,
            }
        }

        fn bytes_one_at_a_time(data: &[u8]) -> Self {
            Self::new(data.iter().map(|&b| vec![b]).collect())
        }
    }

    impl AsyncRead for Chunked {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let this = &mut *self;
            while this.next < this.chunks.len() && this.offset == this.chunks[this.next].len() {
                this.next += 1;
                this.offset = 0;
            }
            if let Some(chunk) = this.chunks.get(this.next) {
                let n = buf.remaining().min(chunk.len() - this.offset);
                buf.put_slice(&chunk[this.offset..this.offset + n]);
                this.offset += n;
            }
            Poll::Ready(Ok(()))
        }
    }

    /// An endless-looking line: `len` bytes of `a` then `\n`, generated on
    /// the fly, counting how much was served.
    struct LongLine {
        len: usize,
        served: usize,
    }

    impl AsyncRead for LongLine {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let total = self.len + 1;
            let n = buf.remaining().min(total - self.served);
            let mut chunk = vec![b'a'; n];
            if self.served + n == total {
                if let Some(last) = chunk.last_mut() {
                    *last = b'\n';
                }
            }
            buf.put_slice(&chunk);
            self.served += n;
            Poll::Ready(Ok(()))
        }
    }

    async fn collect<R: AsyncRead + Unpin>(mut reader: LineReader<R>) -> Vec<Vec<u8>> {
        let mut lines = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap() {
            lines.push(line.to_vec());
        }
        lines
    }

    /// Covers CRLF, empty lines, a lone `\r` inside a line, invalid UTF-8,
    /// and a last line without a newline.
    const SAMPLE: &[u8] = b"{\"a\":1}\n\r\n\nx\ry\r\n\xff\xfe\x80 raw\n{\"b\":2}\r\nlast";

    fn sample_lines() -> Vec<Vec<u8>> {
        vec![
            b"{\"a\":1}".to_vec(),
            b"".to_vec(),
            b"".to_vec(),
            b"x\ry".to_vec(),
            b"\xff\xfe\x80 raw".to_vec(),
            b"{\"b\":2}".to_vec(),
            b"last".to_vec(),
        ]
    }

    #[tokio::test]
    async fn one_byte_at_a_time_gives_the_same_lines() {
        let reader = LineReader::new(Chunked::bytes_one_at_a_time(SAMPLE), 1024);
        assert_eq!(collect(reader).await, sample_lines());
    }

    #[tokio::test]
    async fn every_split_into_three_reads_gives_the_same_lines() {
        for i in 0..=SAMPLE.len() {
            for j in i..=SAMPLE.len() {
                let chunks = vec![
                    SAMPLE[..i].to_vec(),
                    SAMPLE[i..j].to_vec(),
                    SAMPLE[j..].to_vec(),
                ];
                let reader = LineReader::new(Chunked::new(chunks), 1024);
                assert_eq!(collect(reader).await, sample_lines(), "split at {i}, {j}");
            }
        }
    }

    #[tokio::test]
    async fn eof_mid_line_returns_the_partial_line_then_none() {
        let mut reader = LineReader::new(&b"one\ntw"[..], 1024);
        assert_eq!(reader.next_line().await.unwrap(), Some(&b"one"[..]));
        assert_eq!(reader.next_line().await.unwrap(), Some(&b"tw"[..]));
        assert_eq!(reader.next_line().await.unwrap(), None);
        assert_eq!(reader.next_line().await.unwrap(), None);
    }

    #[tokio::test]
    async fn empty_input_and_trailing_newline_give_no_extra_line() {
        assert!(collect(LineReader::new(&b""[..], 16)).await.is_empty());
        assert_eq!(
            collect(LineReader::new(&b"a\n"[..], 16)).await,
            vec![b"a".to_vec()]
        );
    }

    #[tokio::test]
    async fn line_exactly_at_the_limit_is_accepted_with_any_terminator() {
        let limit = 10;
        let line = vec![b'x'; limit];
        for terminator in [&b"\n"[..], b"\r\n"] {
            let mut data = line.clone();
            data.extend_from_slice(terminator);
            data.extend_from_slice(b"next\n");
            let all_at_once = LineReader::new(&data[..], limit);
            let byte_wise = LineReader::new(Chunked::bytes_one_at_a_time(&data), limit);
            assert_eq!(
                collect(all_at_once).await,
                vec![line.clone(), b"next".to_vec()]
            );
            assert_eq!(
                collect(byte_wise).await,
                vec![line.clone(), b"next".to_vec()]
            );
        }
        // Unterminated at EOF, and a CR that only looks like a terminator start.
        for data in [line.clone(), [&line[..], b"\r"].concat()] {
            let all_at_once = LineReader::new(&data[..], limit);
            let byte_wise = LineReader::new(Chunked::bytes_one_at_a_time(&data), limit);
            assert_eq!(collect(all_at_once).await, vec![line.clone()]);
            assert_eq!(collect(byte_wise).await, vec![line.clone()]);
        }
    }

    #[tokio::test]
    async fn line_one_over_the_limit_fails_and_stays_failed() {
        let limit = 10;
        for data in [
            b"xxxxxxxxxxx\n".to_vec(),
            b"xxxxxxxxxxx\r\n".to_vec(),
            b"xxxxxxxxxxx".to_vec(),
            b"ok\nxxxxxxxxxx\r\r\n".to_vec(),
        ] {
            assert_too_long(&mut LineReader::new(&data[..], limit), limit).await;
            let byte_wise = Chunked::bytes_one_at_a_time(&data);
            assert_too_long(&mut LineReader::new(byte_wise, limit), limit).await;
        }
    }

    async fn assert_too_long<R: AsyncRead + Unpin>(reader: &mut LineReader<R>, limit: usize) {
        loop {
            match reader.next_line().await {
                Ok(Some(line)) => assert!(line.len() <= limit, "returned an over-long line"),
                Ok(None) => panic!("reached EOF without LineTooLong"),
                Err(Error::LineTooLong { limit: l }) => {
                    assert_eq!(l, limit);
                    break;
                }
                Err(e) => panic!("unexpected error {e}"),
            }
        }
        assert!(matches!(
            reader.next_line().await,
            Err(Error::LineTooLong { .. })
        ));
    }

    #[tokio::test]
    async fn huge_line_fails_early_without_growing_past_limit_plus_chunk() {
        let limit = 1024 * 1024;
        let mut reader = LineReader::new(
            LongLine {
                len: limit * 10,
                served: 0,
            },
            limit,
        );
        assert!(matches!(
            reader.next_line().await,
            Err(Error::LineTooLong { .. })
        ));
        let bound = limit + READ_CHUNK + 1;
        assert!(
            reader.peak_capacity() <= bound,
            "buffer grew to {} bytes, bound is {bound}",
            reader.peak_capacity()
        );
        // It stopped reading soon after crossing the limit.
        assert!(reader.inner.served <= bound, "read {}", reader.inner.served);
        assert_eq!(reader.buf.capacity(), 0, "buffer freed after the error");
    }

    #[tokio::test]
    async fn lines_longer_than_a_chunk_and_many_short_lines_survive_buffer_reuse() {
        let mut data = Vec::new();
        let mut expected = Vec::new();
        for i in 0..5000usize {
            let line = if i % 997 == 0 {
                vec![b'0' + (i % 10) as u8; 3 * READ_CHUNK + i]
            } else {
                format!("{{\"id\":{i}}}").into_bytes()
            };
            data.extend_from_slice(&line);
            data.push(b'\n');
            expected.push(line);
        }
        let reader = LineReader::new(&data[..], DEFAULT_MAX_LINE_BYTES);
        assert_eq!(collect(reader).await, expected);

        // Odd-sized reads cut lines and terminators everywhere.
        let chunks = data.chunks(7919).map(<[u8]>::to_vec).collect();
        let reader = LineReader::new(Chunked::new(chunks), DEFAULT_MAX_LINE_BYTES);
        assert_eq!(collect(reader).await, expected);
    }

    #[tokio::test]
    async fn io_errors_are_reported() {
        struct Broken;
        impl AsyncRead for Broken {
            fn poll_read(
                self: Pin<&mut Self>,
                _cx: &mut Context<'_>,
                _buf: &mut ReadBuf<'_>,
            ) -> Poll<std::io::Result<()>> {
                Poll::Ready(Err(std::io::Error::new(ErrorKind::BrokenPipe, "gone")))
            }
        }
        let mut reader = LineReader::new(Broken, 16);
        assert!(matches!(reader.next_line().await, Err(Error::Io(_))));
    }
}
