//! The entries of a session's transcript: messages, tool calls, agent-run
//! terminals and subagents, as the model keeps them.

use super::*;

/// One item of the conversation, in arrival order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
// Tool calls are a large share of the entries; boxing them would add an
// allocation per tool call and a `Box` to every match on this public enum,
// to save a few hundred bytes per message entry.
#[allow(clippy::large_enum_variant)]
pub enum Entry {
    /// What the user said (recorded by the client, or replayed by the agent).
    UserMessage(Message),
    /// What the agent said.
    AgentMessage(Message),
    /// The agent's visible reasoning.
    Thought(Message),
    /// A tool call and its latest state.
    ToolCall(ToolCallState),
    /// A message between sessions (`session_message`), e.g. the parent's
    /// instructions to a subagent.
    SessionMessage(SessionMessage),
    /// An update of a kind this client does not know, kept for display.
    Unknown {
        /// The update's wire kind (empty when it had none).
        kind: String,
        /// The update as sent.
        raw: Value,
    },
}

/// A message between sessions, as merged from its upserts and chunks.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMessage {
    /// Its id in this session's transcript.
    pub message_id: String,
    /// The sending session, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_session_id: Option<String>,
    /// The receiving session, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipient_session_id: Option<String>,
    /// Its blocks; consecutive text chunks share one block.
    pub content: Vec<Content>,
}

/// A terminal the agent runs itself, as its tool call's `_meta` reported it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentTerminal {
    /// The agent's id for it (the `terminalId` of the tool call content).
    pub terminal_id: String,
    /// The newest output, at most [`AGENT_TERMINAL_TAIL`] bytes.
    pub output: String,
    /// Older output was dropped to keep the tail.
    pub truncated: bool,
    /// How it ended, once it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<TerminalExit>,
    /// The command line, when the agent reported it (v2 agents).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

impl AgentTerminal {
    pub(super) fn apply(&mut self, meta: TerminalMeta) {
        if meta.command.is_some() {
            self.command = meta.command;
        }
        if let Some(output) = meta.output {
            if meta.replace_output {
                self.output.clear();
                self.truncated = false;
            }
            self.output.push_str(&output);
            if self.output.len() > AGENT_TERMINAL_TAIL {
                // Keep the newest output, cut at a character boundary (as
                // client terminals do, see terminal/buffer.rs).
                let mut cut = self.output.len() - AGENT_TERMINAL_TAIL;
                while !self.output.is_char_boundary(cut) {
                    cut += 1;
                }
                self.output.drain(..cut);
                self.truncated = true;
            }
        }
        if meta.exit.is_some() {
            self.exit = meta.exit;
        }
    }
}

/// A child session the agent announced with `subagent_update`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Subagent {
    /// The child's session id.
    pub session_id: String,
    /// The parent's title for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its work state, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<SubagentState>,
    /// The client may cancel its work.
    pub can_cancel: bool,
    /// Where it works, when it is not the parent's cwd.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The tool call of the parent that links to it (`session` content).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Subagent {
    pub(super) fn apply(&mut self, patch: SubagentPatch) {
        if let Some(title) = patch.title {
            self.title = title;
        }
        if let Some(description) = patch.description {
            self.description = description;
        }
        if let Some(state) = patch.state {
            self.state = state;
        }
        if let Some(can_cancel) = patch.can_cancel {
            self.can_cancel = can_cancel;
        }
        if let Some(cwd) = patch.cwd {
            self.cwd = cwd;
        }
    }
}

/// A message or thought: its chunks, with consecutive text merged.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// The agent's id for the message, when it sends one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// The blocks; consecutive plain text chunks share one text block.
    pub content: Vec<Content>,
}

impl Message {
    /// Appends a chunk in amortized O(chunk): plain text continues a trailing
    /// text block, anything else becomes a new block.
    pub(super) fn append(&mut self, content: Content) {
        if let (Some(Content::Known(schema::ContentBlock::Text(last))), Some(text)) =
            (self.content.last_mut(), content.as_plain_text())
        {
            last.text.push_str(text);
            return;
        }
        self.content.push(content);
    }

    /// The text of all text blocks, concatenated.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(Content::as_text).collect()
    }
}

/// The merged state of one tool call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallState {
    /// The tool call's id.
    pub id: ToolCallId,
    /// Title; [`PLACEHOLDER_TITLE`] until the agent sends one.
    pub title: String,
    /// The tool's programmatic name, once the agent sends one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Category; `other` until the agent sends one.
    pub kind: ToolKind,
    /// Status; `pending` until the agent sends one.
    pub status: ToolStatus,
    /// The latest content list.
    pub content: Vec<ToolContent>,
    /// The latest location list.
    pub locations: Vec<schema::ToolCallLocation>,
    /// Raw input, as last sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    /// Raw output, as last sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
    /// The terminal the agent runs itself for this call, from `_meta`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_terminal: Option<AgentTerminal>,
}

impl ToolCallState {
    /// A tool call known only by its id.
    pub fn placeholder(id: ToolCallId) -> Self {
        Self {
            id,
            title: PLACEHOLDER_TITLE.to_owned(),
            name: None,
            kind: ToolKind::Other,
            status: ToolStatus::Pending,
            content: Vec::new(),
            locations: Vec::new(),
            raw_input: None,
            raw_output: None,
            agent_terminal: None,
        }
    }

    /// Applies the fields an update carries: `content` and `locations`
    /// replace the lists, every other present field overwrites, absent
    /// fields keep their value.
    pub fn apply(&mut self, fields: ToolCallFields) {
        let ToolCallFields {
            tool_call_id: _,
            title,
            name,
            kind,
            status,
            content,
            locations,
            raw_input,
            raw_output,
            terminal_meta,
        } = fields;
        if let Some(meta) = terminal_meta {
            match &mut self.agent_terminal {
                // A new terminal id is a new command: its output starts over.
                Some(t) if t.terminal_id == meta.terminal_id => t.apply(meta),
                _ => {
                    let mut t = AgentTerminal {
                        terminal_id: meta.terminal_id.clone(),
                        ..AgentTerminal::default()
                    };
                    t.apply(meta);
                    self.agent_terminal = Some(t);
                }
            }
        }
        if let Some(title) = title {
            self.title = title;
        }
        if name.is_some() {
            self.name = name;
        }
        if let Some(kind) = kind {
            self.kind = kind;
        }
        if let Some(status) = status {
            self.status = status;
        }
        if let Some(content) = content {
            self.content = content;
        }
        if let Some(locations) = locations {
            self.locations = locations;
        }
        if raw_input.is_some() {
            self.raw_input = raw_input;
        }
        if raw_output.is_some() {
            self.raw_output = raw_output;
        }
    }

    /// This state as a complete set of fields.
    pub fn to_fields(&self) -> ToolCallFields {
        ToolCallFields {
            tool_call_id: self.id.clone(),
            title: Some(self.title.clone()),
            name: self.name.clone(),
            kind: Some(self.kind.clone()),
            status: Some(self.status.clone()),
            content: Some(self.content.clone()),
            locations: Some(self.locations.clone()),
            raw_input: self.raw_input.clone(),
            raw_output: self.raw_output.clone(),
            terminal_meta: None,
        }
    }
}
