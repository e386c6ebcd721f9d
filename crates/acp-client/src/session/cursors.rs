//! Session cursors (unstable `cursor_update`): places in a session's
//! history that the agent names, and where `session/fork` may start a new
//! session. A rewind forks at the cursor right before the user message of
//! the turn it goes back to, when the agent offers one.

use agent_client_protocol_schema::v1 as schema;
use schema::{CursorAnchor, CursorAnchorPosition};

use super::Entry;

/// One cursor as its updates left it.
#[derive(Debug, Clone, PartialEq)]
struct Cursor {
    id: String,
    anchor: CursorAnchor,
    fork: bool,
}

/// The cursors of one session, in announcement order.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Cursors(Vec<Cursor>);

/// Most cursors kept per session: an agent announcing more loses its
/// oldest (a hostile agent must not grow this without bound).
const MAX_CURSORS: usize = 4096;

impl Cursors {
    /// Applies a `cursor_update`. The first update of a cursor must carry
    /// its anchor (one without is dropped); the anchor never changes after.
    pub(crate) fn update(&mut self, id: String, anchor: Option<CursorAnchor>, fork: Option<bool>) {
        if let Some(c) = self.0.iter_mut().find(|c| c.id == id) {
            if let Some(fork) = fork {
                c.fork = fork;
            }
            return;
        }
        let Some(anchor) = anchor else {
            tracing::debug!(cursor = %id, "cursor_update of an unknown cursor without an anchor; dropped");
            return;
        };
        if self.0.len() >= MAX_CURSORS {
            self.0.remove(0);
        }
        self.0.push(Cursor {
            id,
            anchor,
            fork: fork.unwrap_or(false),
        });
    }

    /// The cursor that forks the session right before its `prompt`-th user
    /// message (from 1): its history then holds exactly the turns before.
    /// `None` when the agent named no such cursor, or it does not fork now.
    pub(crate) fn fork_before_prompt(&self, entries: &[Entry], prompt: usize) -> Option<String> {
        let target = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e, Entry::UserMessage(_)))
            .nth(prompt.checked_sub(1)?)
            .map(|(i, _)| i)?;
        self.0
            .iter()
            .rev()
            .find(|c| c.fork && cut(entries, &c.anchor) == Some(target))
            .map(|c| c.id.clone())
    }
}

/// The index of the first entry after the cursor (the history before it is
/// `entries[..cut]`); `None` when its anchor is not an entry held here.
fn cut(entries: &[Entry], anchor: &CursorAnchor) -> Option<usize> {
    let (index, position) = match anchor {
        CursorAnchor::UserMessage(a) => {
            (message(entries, &a.message_id.0, Kind::User)?, &a.position)
        }
        CursorAnchor::AgentMessage(a) => {
            (message(entries, &a.message_id.0, Kind::Agent)?, &a.position)
        }
        CursorAnchor::AgentThought(a) => (
            message(entries, &a.message_id.0, Kind::Thought)?,
            &a.position,
        ),
        CursorAnchor::ToolCall(a) => (
            entries
                .iter()
                .position(|e| matches!(e, Entry::ToolCall(t) if t.id == a.tool_call_id))?,
            &a.position,
        ),
        _ => return None,
    };
    match position {
        CursorAnchorPosition::Before => Some(index),
        CursorAnchorPosition::After => Some(index + 1),
        _ => None,
    }
}

enum Kind {
    User,
    Agent,
    Thought,
}

fn message(entries: &[Entry], id: &str, kind: Kind) -> Option<usize> {
    entries.iter().position(|e| {
        let m = match (e, &kind) {
            (Entry::UserMessage(m), Kind::User)
            | (Entry::AgentMessage(m), Kind::Agent)
            | (Entry::Thought(m), Kind::Thought) => m,
            _ => return false,
        };
        m.message_id.as_deref() == Some(id)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::session::Message;
    use serde_json::json;

    fn msg(id: &str) -> Message {
        Message {
            message_id: Some(id.to_owned()),
            content: Vec::new(),
        }
    }

    /// Two turns: u1, a1, u2, a2.
    fn entries() -> Vec<Entry> {
        vec![
            Entry::UserMessage(msg("u1")),
            Entry::AgentMessage(msg("a1")),
            Entry::UserMessage(msg("u2")),
            Entry::AgentMessage(msg("a2")),
        ]
    }

    fn anchor(v: serde_json::Value) -> Option<CursorAnchor> {
        Some(serde_json::from_value(v).unwrap())
    }

    #[test]
    fn a_cursor_before_the_prompt_or_after_the_turn_before_forks_there() {
        let e = entries();
        let mut c = Cursors::default();
        c.update(
            "before-u2".into(),
            anchor(json!({"type": "user_message", "messageId": "u2", "position": "before"})),
            Some(true),
        );
        assert_eq!(c.fork_before_prompt(&e, 2).as_deref(), Some("before-u2"));
        assert_eq!(c.fork_before_prompt(&e, 1), None, "no cursor before u1");
        let mut c = Cursors::default();
        c.update(
            "after-a1".into(),
            anchor(json!({"type": "agent_message", "messageId": "a1", "position": "after"})),
            Some(true),
        );
        assert_eq!(c.fork_before_prompt(&e, 2).as_deref(), Some("after-a1"));
    }

    #[test]
    fn hostile_or_withdrawn_cursors_do_not_fork() {
        let e = entries();
        let mut c = Cursors::default();
        // No anchor on its first update: dropped, later updates too.
        c.update("x".into(), None, Some(true));
        // A cursor that does not fork, one in the middle of turn 1, one
        // whose anchor names no entry, one of an unknown anchor type.
        c.update(
            "no-fork".into(),
            anchor(json!({"type": "user_message", "messageId": "u2", "position": "before"})),
            None,
        );
        c.update(
            "mid".into(),
            anchor(json!({"type": "agent_message", "messageId": "a1", "position": "before"})),
            Some(true),
        );
        c.update(
            "ghost".into(),
            anchor(json!({"type": "user_message", "messageId": "nope", "position": "before"})),
            Some(true),
        );
        c.update(
            "odd".into(),
            anchor(json!({"type": "_vendor", "where": 2})),
            Some(true),
        );
        assert_eq!(c.fork_before_prompt(&e, 2), None);
        // Fork capability given, then cleared (`capabilities: null`).
        c.update("no-fork".into(), None, Some(true));
        assert_eq!(c.fork_before_prompt(&e, 2).as_deref(), Some("no-fork"));
        c.update("no-fork".into(), None, Some(false));
        assert_eq!(c.fork_before_prompt(&e, 2), None);
        assert_eq!(c.fork_before_prompt(&e, 0), None);
        assert_eq!(c.fork_before_prompt(&e, 9), None);
    }

    #[test]
    fn an_agent_flooding_cursors_keeps_the_newest() {
        let mut c = Cursors::default();
        for i in 0..MAX_CURSORS + 10 {
            c.update(
                format!("c{i}"),
                anchor(json!({"type": "user_message", "messageId": "u2", "position": "before"})),
                Some(true),
            );
        }
        assert_eq!(c.0.len(), MAX_CURSORS);
        assert_eq!(
            c.fork_before_prompt(&entries(), 2).as_deref(),
            Some(format!("c{}", MAX_CURSORS + 9).as_str())
        );
    }
}
