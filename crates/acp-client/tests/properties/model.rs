//! Reference models and invariant checks shared by the proptest harnesses
//! (`tests/properties.rs`) and the libFuzzer targets (`fuzz/`), so both
//! campaigns judge the code by the same rules.
//!
//! Everything here is synchronous: the codec is driven with a no-op waker
//! over an in-memory reader that never blocks, so one case costs
//! microseconds and needs no runtime.
#![allow(dead_code)]

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use acp_client::session::update::{decode_session_notification, SessionUpdate, ToolCallId};
use acp_client::session::{Entry, SessionState};
use acp_client::wire::Incoming;
use acp_client::wire::LineReader;
use acp_client::Error;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, ReadBuf};

/// The codec's documented slack: its buffer never grows past the limit plus
/// one read chunk (64 KiB) plus the `\r` of a pending `\r\n`.
pub const CODEC_SLACK: usize = 64 * 1024 + 1;

/// An in-memory source that hands out its bytes in the given read sizes
/// (cycled) and, when `interrupt` is set, answers every other poll with
/// `Pending`, so the driver can drop the `next_line` future mid-line.
pub struct ChunkedReader<'a> {
    data: &'a [u8],
    pos: usize,
    sizes: Vec<usize>,
    next_size: usize,
    interrupt: bool,
    pending_next: bool,
    /// Bytes handed out so far, readable while the codec owns the reader.
    pub consumed: Rc<Cell<usize>>,
}

impl<'a> ChunkedReader<'a> {
    /// `sizes` of 0 are read as 1; an empty list reads everything at once.
    pub fn new(data: &'a [u8], sizes: Vec<usize>, interrupt: bool) -> Self {
        Self {
            data,
            pos: 0,
            sizes,
            next_size: 0,
            interrupt,
            pending_next: interrupt,
            consumed: Rc::default(),
        }
    }
}

impl AsyncRead for ChunkedReader<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.interrupt {
            this.pending_next = !this.pending_next;
            if !this.pending_next {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
        }
        let size = match this.sizes.get(this.next_size) {
            Some(&s) => {
                this.next_size = (this.next_size + 1) % this.sizes.len();
                s.max(1)
            }
            None => usize::MAX,
        };
        let n = size.min(this.data.len() - this.pos).min(buf.remaining());
        buf.put_slice(&this.data[this.pos..this.pos + n]);
        this.pos += n;
        this.consumed.set(this.pos);
        Poll::Ready(Ok(()))
    }
}

/// What splitting `data` on `\n` should give: each line (without `\n` and
/// one `\r` before it) with the offset just past it, and whether a line
/// longer than `limit` stopped the stream.
pub fn reference_lines(data: &[u8], limit: usize) -> (Vec<(Vec<u8>, usize)>, bool) {
    let mut lines = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let (mut line, end) = match data[pos..].iter().position(|&b| b == b'\n') {
            Some(n) => (&data[pos..pos + n], pos + n + 1),
            None => (&data[pos..], data.len()),
        };
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        if line.len() > limit {
            return (lines, true);
        }
        lines.push((line.to_vec(), end));
        pos = end;
    }
    (lines, false)
}

/// Runs a [`LineReader`] over `data` split into `sizes` reads and checks it
/// against [`reference_lines`]: same lines, same failure, failure and EOF
/// sticky, and never more than the limit plus [`CODEC_SLACK`] bytes read
/// and not yet returned. With `interrupt`, every other read is `Pending`
/// and the `next_line` future is dropped there, which must lose nothing.
pub fn check_codec(data: &[u8], limit: usize, sizes: Vec<usize>, interrupt: bool) {
    let (expected, too_long) = reference_lines(data, limit);
    let source = ChunkedReader::new(data, sizes, interrupt);
    let consumed = source.consumed.clone();
    let mut reader = LineReader::new(source, limit);
    let mut cx = Context::from_waker(Waker::noop());
    let mut got = 0usize;
    let mut failed = false;
    // Every poll makes progress (a read, a result, or one `Pending`), so
    // this bound only guards against a reader that spins.
    for _ in 0..(data.len() * 4 + 16) {
        let result = {
            let fut = pin!(reader.next_line());
            match fut.poll(&mut cx) {
                Poll::Pending => continue, // the future is dropped here
                Poll::Ready(r) => r.map(|line| line.map(<[u8]>::to_vec)),
            }
        };
        match result {
            Ok(Some(line)) => {
                assert!(!failed, "a line after LineTooLong");
                let (want, _) = expected
                    .get(got)
                    .unwrap_or_else(|| panic!("extra line {line:?}"));
                assert_eq!(&line, want, "line {got} differs");
                got += 1;
            }
            Ok(None) => {
                assert!(!too_long, "EOF instead of LineTooLong");
                assert_eq!(got, expected.len(), "EOF before every line was returned");
                let again = pin!(reader.next_line()).poll(&mut cx);
                assert!(matches!(again, Poll::Ready(Ok(None))), "EOF is not sticky");
                return;
            }
            Err(Error::LineTooLong { limit: l }) => {
                assert_eq!(l, limit);
                assert!(too_long, "LineTooLong on a stream without a long line");
                assert_eq!(got, expected.len(), "LineTooLong before earlier lines");
                if failed {
                    return;
                }
                // One more call below: it must fail the same way.
                failed = true;
            }
            Err(other) => panic!("unexpected error {other}"),
        }
        let returned_end = got.checked_sub(1).map_or(0, |i| expected[i].1);
        let unreturned = consumed.get() - returned_end;
        assert!(
            unreturned <= limit.saturating_add(CODEC_SLACK),
            "{unreturned} bytes read and not returned with a {limit}-byte limit"
        );
    }
    panic!("the codec did not finish {} bytes", data.len());
}

/// Checks what a session model built from any updates must hold: no id has
/// two entries in one turn (a `tool_call` reusing the id of an ended turn is
/// a new entry), the index of an id is its latest entry, and every id the
/// updates named has an entry.
pub fn check_session(state: &SessionState, ids_seen: &HashSet<ToolCallId>) {
    let mut ids_in_entries = HashSet::new();
    let mut in_turn = HashSet::new();
    let mut latest = HashMap::new();
    for (index, entry) in state.entries().iter().enumerate() {
        match entry {
            Entry::UserMessage(_) => in_turn.clear(),
            Entry::ToolCall(tc) => {
                assert!(
                    in_turn.insert(tc.id.clone()),
                    "tool call {} has two entries in one turn",
                    tc.id
                );
                ids_in_entries.insert(tc.id.clone());
                latest.insert(tc.id.clone(), index);
            }
            _ => {}
        }
    }
    for (id, index) in &latest {
        assert_eq!(
            state.tool_call_index(id),
            Some(*index),
            "index of tool call {id} is stale"
        );
        assert_eq!(state.tool_call(id).map(|t| &t.id), Some(id));
    }
    assert_eq!(&ids_in_entries, ids_seen, "tool call entries != ids sent");
}

/// Feeds `data` to the decoders and the session model the way the
/// connection does, one line at a time: each line is decoded as a JSON-RPC
/// message, and `session/update` params (or, failing that, the line itself)
/// as a session notification applied to one model. A line `!cancel` marks
/// unfinished tool calls cancelled, as `Connection::cancel` does. Checks
/// [`check_session`] after every update; returns the model.
pub fn feed_session(data: &[u8]) -> SessionState {
    let mut state = SessionState::new("fuzz".into());
    let mut ids_seen = HashSet::new();
    for line in data.split(|&b| b == b'\n') {
        if line == b"!cancel" {
            state.cancel_unfinished_tool_calls();
            check_session(&state, &ids_seen);
            continue;
        }
        let params: Option<Box<RawValue>> = match Incoming::decode(line) {
            Ok(Incoming::Notification { params, .. }) | Ok(Incoming::Request { params, .. }) => {
                params
            }
            _ => serde_json::from_slice::<Box<RawValue>>(line).ok(),
        };
        let Some(params) = params else { continue };
        let Ok(notification) = decode_session_notification(&params) else {
            continue;
        };
        if let SessionUpdate::ToolCall(f) | SessionUpdate::ToolCallUpdate(f) = &notification.update
        {
            ids_seen.insert(f.tool_call_id.clone());
        }
        state.apply(notification.update);
        check_session(&state, &ids_seen);
    }
    state
}

/// Runs every decoder on every line of `data`; they may fail but never
/// panic. Returns how many lines decoded as JSON-RPC messages.
pub fn feed_decoders(data: &[u8]) -> usize {
    let mut decoded = 0;
    for line in data.split(|&b| b == b'\n') {
        if let Ok(incoming) = Incoming::decode(line) {
            decoded += 1;
            if let Incoming::Notification {
                params: Some(p), ..
            }
            | Incoming::Request {
                params: Some(p), ..
            } = &incoming
            {
                let _ = decode_session_notification(p);
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(p.get()) {
                    let _ = acp_client::session::update::decode_tool_call_fields(&v["toolCall"]);
                    let _ = acp_client::session::update::decode_tool_call_fields(&v["update"]);
                }
            }
        }
        if let Ok(raw) = serde_json::from_slice::<Box<RawValue>>(line) {
            let _ = decode_session_notification(&raw);
        }
    }
    decoded
}
