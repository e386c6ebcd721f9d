//! The parts of the session model only ACP v2 agents drive: message upserts
//! by id, the terminals they run and report by id, and the echo of a prompt
//! a v2 agent acknowledges with a message id. v1 never sends these, so a v1
//! session never enters this code.

use std::collections::HashMap;

use super::{AgentTerminal, Entry, SessionChange, SessionState, ToolCallState};
use crate::session::update::{
    Content, MessageKind, MessageUpsert, TerminalMeta, ToolCallFields, ToolCallId, ToolContent,
};

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests;

/// Terminals reported before any tool call showed them, kept at most this
/// many per session (a hostile agent could invent ids forever).
const MAX_PENDING_TERMINALS: usize = 64;

/// The v2 terminals of a session: which tool call shows each one, or its
/// state while no tool call does yet.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Terminals {
    by_id: HashMap<String, Link>,
    pending: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Link {
    /// Shown by this tool call; its state lives there.
    Call(ToolCallId),
    /// No tool call shows it yet.
    Pending(AgentTerminal),
}

impl Terminals {
    /// Links the terminals a tool call's content shows to it; one reported
    /// before (the agent may announce the terminal first) becomes the
    /// call's terminal with the output it already had.
    pub(super) fn attach(&mut self, tc: &mut ToolCallState) {
        for item in &tc.content {
            let ToolContent::Terminal { terminal_id } = item else {
                continue;
            };
            let link = Link::Call(tc.id.clone());
            match self.by_id.insert(terminal_id.clone(), link) {
                Some(Link::Pending(state)) => {
                    self.pending -= 1;
                    tc.agent_terminal = Some(state);
                }
                Some(Link::Call(_)) | None => {}
            }
        }
    }
}

impl SessionState {
    /// A v2 terminal's new state: applied to the tool call showing it as a
    /// v1 `_meta` terminal is, or kept until one does.
    pub(super) fn apply_terminal(&mut self, meta: TerminalMeta) -> Vec<SessionChange> {
        let terminals = &mut self.terminals;
        match terminals.by_id.get_mut(&meta.terminal_id) {
            Some(Link::Call(id)) => {
                let mut fields = ToolCallFields::new(id.clone());
                fields.terminal_meta = Some(meta);
                vec![self.upsert_tool_call(fields)]
            }
            Some(Link::Pending(state)) => {
                state.apply(meta);
                Vec::new()
            }
            None if terminals.pending >= MAX_PENDING_TERMINALS => {
                tracing::debug!(
                    "dropping terminal `{}`: {MAX_PENDING_TERMINALS} terminals wait for a tool call already",
                    meta.terminal_id
                );
                Vec::new()
            }
            None => {
                let mut state = AgentTerminal {
                    terminal_id: meta.terminal_id.clone(),
                    ..AgentTerminal::default()
                };
                let id = meta.terminal_id.clone();
                state.apply(meta);
                terminals.by_id.insert(id, Link::Pending(state));
                terminals.pending += 1;
                Vec::new()
            }
        }
    }

    /// A v2 message upsert: the message with that id and kind gets the new
    /// content whole (the spec: it replaces earlier content, chunks
    /// included); an unknown id with content is a new message. An upsert
    /// without content, or an empty one for an unknown id, shows nothing
    /// (its chunks create the message).
    pub(super) fn upsert_message(&mut self, upsert: MessageUpsert) -> Vec<SessionChange> {
        let MessageUpsert {
            kind,
            message_id,
            content,
        } = upsert;
        let Some(content) = content else {
            return Vec::new();
        };
        self.echo = None;
        let found = self.entries.iter().rposition(|e| {
            message_of(kind, e).is_some_and(|m| m.message_id.as_deref() == Some(&message_id))
        });
        let Some(index) = found else {
            if content.is_empty() {
                return Vec::new();
            }
            let message = super::Message {
                message_id: Some(message_id),
                content,
            };
            let entry = match kind {
                MessageKind::User => Entry::UserMessage(message),
                MessageKind::Agent => Entry::AgentMessage(message),
                MessageKind::Thought => Entry::Thought(message),
            };
            return vec![self.push(entry)];
        };
        let Some(entry) = self.entries.get_mut(index) else {
            return Vec::new();
        };
        match entry {
            Entry::UserMessage(m) | Entry::AgentMessage(m) | Entry::Thought(m) => {
                if m.content == content {
                    return Vec::new();
                }
                m.content = content;
            }
            _ => return Vec::new(),
        }
        vec![SessionChange::MessageReplaced {
            index,
            entry: entry.clone(),
        }]
    }

    /// Gives the prompt recorded last the id the agent acknowledged it with
    /// (a v2 `session/prompt` answer), unless its echo gave it one already.
    pub fn acknowledge_prompt(&mut self, message_id: String) {
        let last_prompt = self.entries.iter_mut().rev().find_map(|e| match e {
            Entry::UserMessage(m) => Some(m),
            _ => None,
        });
        if let Some(m) = last_prompt {
            if m.message_id.is_none() {
                m.message_id = Some(message_id);
            }
        }
    }

    /// Whether a v2 `user_message` upsert repeats a prompt already shown:
    /// the user message with its id, or the prompt recorded last while it
    /// has no id (which then takes this one), with the same content.
    pub fn take_prompt_echo(&mut self, message_id: &Option<String>, content: &[Content]) -> bool {
        let mut last_prompt = true;
        for entry in self.entries.iter_mut().rev() {
            let Entry::UserMessage(m) = entry else {
                continue;
            };
            if m.content == content {
                match (&m.message_id, message_id) {
                    (Some(a), Some(b)) if a == b => return true,
                    (None, _) if last_prompt => {
                        m.message_id.clone_from(message_id);
                        self.echo = None;
                        return true;
                    }
                    _ => {}
                }
            }
            last_prompt = false;
        }
        false
    }
}

/// The message of an entry of this kind.
fn message_of(kind: MessageKind, entry: &Entry) -> Option<&super::Message> {
    match (kind, entry) {
        (MessageKind::User, Entry::UserMessage(m))
        | (MessageKind::Agent, Entry::AgentMessage(m))
        | (MessageKind::Thought, Entry::Thought(m)) => Some(m),
        _ => None,
    }
}
