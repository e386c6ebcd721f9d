//! Streamed text: message and thought chunks, and the bursts the
//! throughput benchmarks read.

use std::time::Duration;

use serde_json::json;

use super::{Flow, Player};
use crate::wire::ChunkLine;

impl Player<'_> {
    pub(super) fn stream(
        &self,
        kind: &str,
        text: &str,
        chunk_size: Option<usize>,
        delay_ms: u64,
        message_id: Option<String>,
    ) -> Flow {
        let mut line = ChunkLine::new(&self.session_id, kind, message_id.as_deref());
        for (i, chunk) in chunks(text, chunk_size).enumerate() {
            if i > 0 && delay_ms > 0 && self.cancel.sleep(Duration::from_millis(delay_ms)) {
                return Flow::End("cancelled".to_owned());
            }
            // One line, one write per chunk, as an agent streams.
            self.agent
                .notify_rendered(&self.session_id, line.render(chunk), || {
                    let mut update = json!({
                        "sessionUpdate": kind,
                        "content": { "type": "text", "text": chunk },
                    });
                    if let Some(id) = &message_id {
                        update["messageId"] = json!(id);
                    }
                    update
                });
        }
        Flow::Next
    }

    /// `count` identical chunks, serialized once and written under one lock
    /// with one flush: this drives the client's throughput benchmarks.
    pub(super) fn burst(&self, count: usize, bytes: usize, thought: bool) {
        let text: String = (0..bytes)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let kind = if thought {
            "agent_thought_chunk"
        } else {
            "agent_message_chunk"
        };
        let line = ChunkLine::new(&self.session_id, kind, None)
            .render(&text)
            .to_vec();
        if self.agent.scenario.record_history {
            let update =
                json!({ "sessionUpdate": kind, "content": { "type": "text", "text": text } });
            self.agent.record(&self.session_id, &vec![update; count]);
        }
        let mut out = self.agent.out.lock();
        for _ in 0..count {
            out.bytes(&line);
        }
        out.flush();
    }
}

/// Splits text into chunks of `size` characters (never inside a character),
/// borrowed from `text`. No size (or 0) means one chunk; empty text means no
/// chunk.
pub fn chunks(text: &str, size: Option<usize>) -> impl Iterator<Item = &str> {
    let size = size.filter(|&s| s > 0).unwrap_or(usize::MAX);
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let end = rest
            .char_indices()
            .nth(size)
            .map_or(rest.len(), |(at, _)| at);
        let (chunk, tail) = rest.split_at(end);
        rest = tail;
        Some(chunk)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn chunks_split_on_characters() {
        let split = |text, size| chunks(text, size).collect::<Vec<_>>();
        assert_eq!(split("héllo", Some(2)), ["hé", "ll", "o"]);
        assert_eq!(split("héllo", Some(5)), ["héllo"]);
        assert_eq!(split("abc", None), ["abc"]);
        assert_eq!(split("abc", Some(0)), ["abc"]);
        assert!(split("", Some(3)).is_empty());
    }
}
