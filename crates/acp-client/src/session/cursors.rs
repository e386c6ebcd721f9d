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
