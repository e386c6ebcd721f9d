//! Bounded byte storage that keeps the newest output, and the UTF-8 rules for
//! turning it into text.

use std::collections::VecDeque;

/// Smallest allocation once a buffer holds anything: avoids a string of tiny
/// reallocations for commands that print a line at a time.
const MIN_ALLOCATION: usize = 4096;

/// Bytes bounded by a limit. Over the limit the OLDEST bytes are dropped (ACP
/// truncates terminal output from the beginning) and `truncated` is set.
///
/// Neither the length nor the allocation ever exceeds the limit, however much
/// is pushed: growth is geometric (amortized appends) but capped at the
/// limit, and dropping the front of a `VecDeque` only moves its head.
#[derive(Debug)]
pub(crate) struct TailBuffer {
    bytes: VecDeque<u8>,
    limit: usize,
    truncated: bool,
    capacity_high_water: usize,
}

impl TailBuffer {
    /// An empty buffer that will hold at most `limit` bytes.
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            limit,
            truncated: false,
            capacity_high_water: 0,
        }
    }

    /// Appends `chunk`, dropping the oldest bytes to stay within the limit.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        let dropped = (self.bytes.len() + chunk.len()).saturating_sub(self.limit);
        if dropped > 0 {
            self.truncated = true;
        }
        if dropped >= self.bytes.len() {
            // Everything held so far goes, and maybe the chunk's head too.
            let kept = &chunk[dropped - self.bytes.len()..];
            self.bytes.clear();
            self.append(kept);
        } else {
            self.bytes.drain(..dropped);
            self.append(chunk);
        }
    }

    fn append(&mut self, chunk: &[u8]) {
        let needed = self.bytes.len() + chunk.len();
        let capacity = self.bytes.capacity();
        if needed > capacity {
            // Plain doubling would let a 1 MiB limit allocate 2 MiB: cap the
            // growth at the limit (`needed` never exceeds it, see `push`).
            let target = capacity
                .saturating_mul(2)
                .max(MIN_ALLOCATION)
                .min(self.limit)
                .max(needed);
            self.bytes.reserve_exact(target - self.bytes.len());
        }
        self.bytes.extend(chunk);
        self.capacity_high_water = self.capacity_high_water.max(self.bytes.capacity());
    }

    /// The largest allocation this buffer ever had, in bytes.
    pub(crate) fn capacity_high_water(&self) -> usize {
        self.capacity_high_water
    }

    /// The held output as text, within the limit: see [`decode_tail`].
    pub(crate) fn text(&self) -> (String, bool) {
        let (front, back) = self.bytes.as_slices();
        let mut raw = Vec::with_capacity(self.bytes.len());
        raw.extend_from_slice(front);
        raw.extend_from_slice(back);
        decode_tail(&raw, self.truncated, self.limit)
    }

    /// Empties the buffer, returning its bytes and whether any were dropped
    /// since the last take. Frees the allocation: used for the short-lived
    /// backlog of output events.
    pub(crate) fn take(&mut self) -> (Vec<u8>, bool) {
        let bytes = Vec::from(std::mem::take(&mut self.bytes));
        (bytes, std::mem::replace(&mut self.truncated, false))
    }
}

/// Decodes the newest output for display: when the front was cut, a partial
/// character at the start is skipped (so the text begins on a character
/// boundary and may be a little under the limit); invalid UTF-8 becomes
/// U+FFFD, never an error. Returns the text and whether anything was dropped.
pub(crate) fn decode_tail(raw: &[u8], truncated: bool, limit: usize) -> (String, bool) {
    let start = if truncated {
        leading_continuation_len(raw)
    } else {
        0
    };
    let text = String::from_utf8_lossy(&raw[start..]);
    if text.len() <= limit {
        return (text.into_owned(), truncated);
    }
    // Each invalid byte became a 3-byte U+FFFD and pushed the text over the
    // limit: cut again from the front, at a character boundary.
    let mut cut = text.len() - limit;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    (text[cut..].to_owned(), true)
}

/// How many bytes at the start of `bytes` continue a character that began
/// before them (at most 3: a UTF-8 character is at most 4 bytes).
pub(crate) fn leading_continuation_len(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|b| is_continuation(**b))
        .count()
}

/// How many bytes at the end of `bytes` are the start of a character whose
/// remaining bytes have not arrived yet. Invalid sequences count as complete
/// (they decode to U+FFFD either way).
pub(crate) fn incomplete_tail_len(bytes: &[u8]) -> usize {
    for back in 1..=bytes.len().min(3) {
        let byte = bytes[bytes.len() - back];
        if is_continuation(byte) {
            continue;
        }
        let width = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if width > back { back } else { 0 };
    }
    0
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_everything_under_the_limit() {
        let mut buf = TailBuffer::new(10);
        buf.push(b"abc");
        buf.push(b"def");
        assert_eq!(buf.text(), ("abcdef".to_owned(), false));
    }

    #[test]
    fn drops_the_oldest_bytes_over_the_limit() {
        let mut buf = TailBuffer::new(5);
        buf.push(b"abc");
        buf.push(b"defg");
        assert_eq!(buf.text(), ("cdefg".to_owned(), true));
        buf.push(b"0123456789");
        assert_eq!(buf.text(), ("56789".to_owned(), true));
    }

    #[test]
    fn cut_skips_a_partial_character_at_the_front() {
        let mut buf = TailBuffer::new(5);
        buf.push("aé€".as_bytes()); // 1 + 2 + 3 bytes: the 'a' goes.
        assert_eq!(buf.text(), ("é€".to_owned(), true));
        buf.push(b"x"); // drops the first byte of 'é'.
        assert_eq!(buf.text(), ("€x".to_owned(), true));
    }

    #[test]
    fn allocation_never_exceeds_the_limit() {
        let limit = 100_000;
        let mut buf = TailBuffer::new(limit);
        let chunk = vec![b'a'; 7_000];
        for _ in 0..1_000 {
            buf.push(&chunk);
        }
        assert!(buf.capacity_high_water() <= limit);
        assert_eq!(buf.text().0.len(), limit);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_kept_within_the_limit() {
        let mut buf = TailBuffer::new(4);
        buf.push(b"a\xffb");
        // "a\u{FFFD}b" is 5 bytes: the 'a' is cut to stay within 4.
        assert_eq!(buf.text(), ("\u{FFFD}b".to_owned(), true));
        let mut short = TailBuffer::new(10);
        short.push(b"\xff");
        assert_eq!(short.text(), ("\u{FFFD}".to_owned(), false));
    }

    #[test]
    fn take_empties_and_resets_truncation() {
        let mut buf = TailBuffer::new(2);
        buf.push(b"abc");
        assert_eq!(buf.take(), (b"bc".to_vec(), true));
        buf.push(b"d");
        assert_eq!(buf.take(), (b"d".to_vec(), false));
    }

    #[test]
    fn finds_incomplete_trailing_characters() {
        assert_eq!(incomplete_tail_len(b"abc"), 0);
        assert_eq!(incomplete_tail_len("é".as_bytes()), 0);
        assert_eq!(incomplete_tail_len(&"é".as_bytes()[..1]), 1);
        assert_eq!(incomplete_tail_len(&"€".as_bytes()[..2]), 2);
        assert_eq!(incomplete_tail_len(&"😀".as_bytes()[..3]), 3);
        assert_eq!(incomplete_tail_len("a😀".as_bytes()), 0);
        assert_eq!(incomplete_tail_len(b"\x80\x80\x80"), 0);
        assert_eq!(incomplete_tail_len(b""), 0);
    }
}
