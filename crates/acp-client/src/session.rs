//! The editor-agnostic session model, built only from updates.
//!
//! A [`SessionState`] holds what a chat view shows: the entries (messages,
//! thoughts, tool calls, updates of unknown kinds) in arrival order, the
//! plan, modes, config options, commands, usage and session info. Every
//! mutation returns the [`SessionChange`]s an editor needs to render
//! incrementally; applying those changes in order to an empty view rebuilds
//! exactly [`SessionState::entries`].
//!
//! The model has no notion of turns: an update that arrives after the prompt
//! response ("late update") is applied like any other, and tool calls are
//! found by id wherever they are.
//!
//! # Serialized form of [`SessionChange`] (a public contract)
//!
//! Changes are sent to the Lua UI and written as JSONL, so their JSON form is
//! stable. Every change is an object with a `"change"` tag; field names are
//! camelCase; optional fields that are unset are omitted (never `null`).
//! Indexes are 0-based positions in the entry list and never shift (entries
//! are only appended).
//!
//! | `change` | fields | meaning |
//! |---|---|---|
//! | `entry_added` | `index`, `entry` | a new entry at `index` (always the end) |
//! | `text_appended` | `index`, `content`, `messageId?` | a chunk appended to the message at `index`: if `content` and the message's last block are both text blocks without annotations, the text continues that block, otherwise `content` is a new block; a message without id takes `messageId` |
//! | `tool_call_changed` | `index`, `toolCall` | the complete new state of the tool call at `index` |
//! | `plan_replaced` | `entries` | the whole plan (`[{content, priority, status}]`) |
//! | `mode_changed` | `currentModeId` | the active mode |
//! | `modes_changed` | `currentModeId`, `availableModes` | modes set from a session response |
//! | `config_options_changed` | `configOptions` | the complete option list (schema form) |
//! | `commands_changed` | `availableCommands` | the complete slash command list (schema form) |
//! | `usage_changed` | `usage` (`{used, size, cost?}`) | context usage |
//! | `info_changed` | `title?`, `updatedAt?` | the session info after the change (absent = none) |
//! | `plan_updated` | `plan` (`{planId, format: "items", entries}` or `{planId, format: "markdown", content, path?}`) | one plan of several (`plan_update`), whole |
//! | `plan_removed` | `planId` | a plan this session had went away |
//! | `subagent_changed` | `subagent` (`{sessionId, title?, description?, state?, canCancel, cwd?, toolCallId?}`) | a child session's whole known state |
//! | `child` | `sessionId`, `childChange` | a change of a child session's own model (indexes are the child's) |
//! | `session_message_changed` | `index`, `message` | a message between sessions, whole |
//!
//! An `entry` is tagged by `"type"`:
//! - `user_message`, `agent_message`, `thought`: `{content: [block], messageId?}`,
//!   blocks in the ACP content block form (unknown blocks as sent);
//! - `tool_call`: `{id, title, name?, kind, status, content: [item], locations:
//!   [{path, line?}], rawInput?, rawOutput?}` where an item is
//!   `{type: "content", content}`, `{type: "diff", path, oldText?, newText}`
//!   (no `oldText` = new file), `{type: "terminal", terminalId}` or
//!   `{type: "unknown", raw}`; `kind` and `status` are wire names (unknown
//!   ones kept, plus the client-side status `cancelled`);
//! - `session_message`: `{messageId, senderSessionId?, recipientSessionId?, content}`;
//! - `unknown`: `{kind, raw}`, an update kind this client does not know.
//!
//! A prompt the client recorded ([`SessionState::push_user_prompt`]) that
//! the agent echoes back as `user_message_chunk`s is not added twice: the
//! echo only gives the local entry its `messageId`.
//!
//! Example: `{"change":"text_appended","index":3,"content":{"type":"text","text":"Hi"}}`.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::schema;
use crate::session::update::{
    Content, ContentChunk, PlanDocument, PlanEntry, SessionId, SessionInfo, SessionMessagePatch,
    SessionUpdate, SubagentPatch, SubagentState, TerminalExit, TerminalMeta, ToolCallFields,
    ToolCallId, ToolContent, ToolKind, ToolStatus, Usage,
};

/// The newest output of an agent-run terminal kept per tool call: what the
/// chat shows, like a client terminal's tail.
pub const AGENT_TERMINAL_TAIL: usize = 64 * 1024;

mod change;
mod cursors;
mod entry;
#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests;
pub mod update;
mod v2;

pub use change::SessionChange;
pub use entry::{AgentTerminal, Entry, Message, SessionMessage, Subagent, ToolCallState};

/// Title of a tool call the model only knows from an update or a permission
/// request (some agents send those before the `tool_call`).
pub const PLACEHOLDER_TITLE: &str = "Tool call";

/// Which message entry a chunk belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Speaker {
    User,
    Agent,
    Thought,
}

impl Speaker {
    fn entry(self, message: Message) -> Entry {
        match self {
            Speaker::User => Entry::UserMessage(message),
            Speaker::Agent => Entry::AgentMessage(message),
            Speaker::Thought => Entry::Thought(message),
        }
    }

    fn message_mut(self, entry: &mut Entry) -> Option<&mut Message> {
        match (self, entry) {
            (Speaker::User, Entry::UserMessage(m))
            | (Speaker::Agent, Entry::AgentMessage(m))
            | (Speaker::Thought, Entry::Thought(m)) => Some(m),
            _ => None,
        }
    }
}

/// The state of one session, built from its updates.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionState {
    session_id: SessionId,
    entries: Vec<Entry>,
    /// Tool call id -> entry index, so updates are O(1) in a long session.
    tool_calls: HashMap<ToolCallId, usize>,
    /// Entry indexes of tool calls not finished, for cancellation; ordered so
    /// the cancel changes come out in entry order.
    unfinished: BTreeSet<usize>,
    /// Index of the entry that started the current turn (the last user
    /// message): a `tool_call` whose id belongs to an earlier turn is a new
    /// call, not an update of the old one.
    turn_start: usize,
    plan: Vec<PlanEntry>,
    current_mode_id: Option<String>,
    available_modes: Vec<schema::SessionMode>,
    config_options: Vec<schema::SessionConfigOption>,
    available_commands: Vec<schema::AvailableCommand>,
    usage: Option<Usage>,
    title: Option<String>,
    updated_at: Option<String>,
    /// Context compactions by id, in the order they started.
    compactions: Vec<Compaction>,
    /// Plans of `plan_update`, in the order they appeared.
    plans: Vec<PlanDocument>,
    /// Children announced by `subagent_update`, in announcement order.
    subagents: Vec<Subagent>,
    /// Message id -> entry index of messages between sessions.
    session_messages: HashMap<String, usize>,
    /// The prompt the client recorded last, while the agent has not said
    /// anything since: an echo of it as `user_message_chunk`s is the same
    /// message, not a second one. `(entry index, text still to be echoed)`.
    echo: Option<(usize, String)>,
    /// The terminals v2 agents report by id, and the tool calls showing them.
    terminals: v2::Terminals,
    /// Places in the history the agent can fork at (`cursor_update`).
    cursors: cursors::Cursors,
}

/// Token counts of a turn, from the prompt response's `usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub struct TurnUsage {
    /// All tokens.
    pub total: u64,
    /// Input tokens.
    pub input: u64,
    /// Output tokens.
    pub output: u64,
    /// Reasoning tokens, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought: Option<u64>,
    /// Tokens read from the cache, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_read: Option<u64>,
    /// Tokens written to the cache, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_write: Option<u64>,
}

impl TurnUsage {
    /// Decodes `{totalTokens, inputTokens, outputTokens, thoughtTokens?,
    /// cachedReadTokens?, cachedWriteTokens?}`; `None` without the three
    /// required counts.
    pub fn decode(v: &serde_json::Value) -> Option<Self> {
        let n = |k: &str| v.get(k).and_then(serde_json::Value::as_u64);
        Some(TurnUsage {
            total: n("totalTokens")?,
            input: n("inputTokens")?,
            output: n("outputTokens")?,
            thought: n("thoughtTokens"),
            cached_read: n("cachedReadTokens"),
            cached_write: n("cachedWriteTokens"),
        })
    }
}

/// One context compaction as the session knows it.
#[derive(Debug, Clone, PartialEq)]
struct Compaction {
    id: String,
    status: String,
    summary: Vec<Content>,
    error: Option<String>,
}

impl SessionState {
    /// An empty session.
    pub fn new(session_id: SessionId) -> Self {
        Self {
            session_id,
            entries: Vec::new(),
            tool_calls: HashMap::new(),
            unfinished: BTreeSet::new(),
            turn_start: 0,
            plan: Vec::new(),
            current_mode_id: None,
            available_modes: Vec::new(),
            config_options: Vec::new(),
            available_commands: Vec::new(),
            usage: None,
            title: None,
            updated_at: None,
            compactions: Vec::new(),
            plans: Vec::new(),
            subagents: Vec::new(),
            session_messages: HashMap::new(),
            echo: None,
            terminals: v2::Terminals::default(),
            cursors: cursors::Cursors::default(),
        }
    }

    /// Applies one update and says what changed (nothing, for an update
    /// that changes nothing, such as an empty `session_info_update`).
    pub fn apply(&mut self, update: SessionUpdate) -> Vec<SessionChange> {
        if !matches!(update, SessionUpdate::UserMessageChunk(_)) {
            self.echo = None;
        }
        match update {
            SessionUpdate::UserMessageChunk(chunk) => match self.take_echo(&chunk) {
                Some(changes) => changes,
                None => self.append_chunk(Speaker::User, chunk),
            },
            SessionUpdate::AgentMessageChunk(chunk) => self.append_chunk(Speaker::Agent, chunk),
            SessionUpdate::AgentThoughtChunk(chunk) => self.append_chunk(Speaker::Thought, chunk),
            // A `tool_call` for a known id of this turn updates it (agents
            // resend them); one for an id of an ended turn starts a new call
            // (the demo agent and scripted agents reuse ids across turns, and
            // the second turn then drew into the first turn's blocks).
            SessionUpdate::ToolCall(fields) => {
                if self
                    .tool_calls
                    .get(&fields.tool_call_id)
                    .is_some_and(|&index| index < self.turn_start)
                {
                    self.tool_calls.remove(&fields.tool_call_id);
                }
                vec![self.upsert_tool_call(fields)]
            }
            SessionUpdate::ToolCallUpdate(fields) => vec![self.upsert_tool_call(fields)],
            SessionUpdate::Plan { entries } => {
                self.plan = entries.clone();
                vec![SessionChange::PlanReplaced { entries }]
            }
            SessionUpdate::AvailableCommandsUpdate { available_commands } => {
                self.available_commands = available_commands.clone();
                vec![SessionChange::CommandsChanged { available_commands }]
            }
            SessionUpdate::CurrentModeUpdate { current_mode_id } => {
                self.set_current_mode(current_mode_id)
            }
            SessionUpdate::ConfigOptionUpdate { config_options } => {
                self.set_config_options(config_options)
            }
            SessionUpdate::SessionInfoUpdate(info) => self.apply_info(info),
            SessionUpdate::UsageUpdate(usage) => {
                self.usage = Some(usage.clone());
                vec![SessionChange::UsageChanged { usage }]
            }
            SessionUpdate::Notice(n) => vec![SessionChange::Notice {
                severity: n.severity,
                title: n.title,
                description: n.description,
            }],
            SessionUpdate::CompactionUpdate {
                id,
                status,
                summary,
                error,
            } => {
                let c = self.compaction_mut(&id);
                c.status = status;
                if let Some(summary) = summary {
                    c.summary = summary;
                }
                c.error = error;
                vec![Self::compaction_change(c)]
            }
            SessionUpdate::CursorUpdate {
                cursor_id,
                anchor,
                fork,
            } => {
                self.cursors.update(cursor_id, anchor, fork);
                Vec::new()
            }
            SessionUpdate::CompactionSummaryChunk { id, content } => {
                let c = self.compaction_mut(&id);
                match (c.summary.last_mut(), &content) {
                    // Text continues the last text block, as message chunks do.
                    (
                        Some(Content::Known(schema::ContentBlock::Text(last))),
                        Content::Known(schema::ContentBlock::Text(more)),
                    ) => last.text.push_str(&more.text),
                    _ => c.summary.push(content),
                }
                vec![Self::compaction_change(c)]
            }
            SessionUpdate::PlanUpdate(plan) => {
                match self.plans.iter_mut().find(|p| p.plan_id == plan.plan_id) {
                    Some(old) => *old = plan.clone(),
                    None => self.plans.push(plan.clone()),
                }
                vec![SessionChange::PlanUpdated { plan }]
            }
            SessionUpdate::PlanRemoved { plan_id } => {
                // The spec: a removal of an unknown id is ignored.
                let before = self.plans.len();
                self.plans.retain(|p| p.plan_id != plan_id);
                if self.plans.len() == before {
                    return Vec::new();
                }
                vec![SessionChange::PlanRemoved { plan_id }]
            }
            SessionUpdate::SubagentUpdate(patch) => {
                let i = match self
                    .subagents
                    .iter()
                    .position(|s| s.session_id == patch.session_id)
                {
                    Some(i) => i,
                    None => {
                        let tool_call_id = self.tool_call_linking(&patch.session_id);
                        self.subagents.push(Subagent {
                            session_id: patch.session_id.clone(),
                            tool_call_id,
                            ..Subagent::default()
                        });
                        self.subagents.len() - 1
                    }
                };
                self.subagents[i].apply(patch);
                vec![SessionChange::SubagentChanged {
                    subagent: self.subagents[i].clone(),
                }]
            }
            SessionUpdate::SessionMessage(patch) => self.upsert_session_message(patch, None),
            SessionUpdate::SessionMessageChunk {
                message_id,
                content,
            } => self.upsert_session_message(
                SessionMessagePatch {
                    message_id,
                    ..SessionMessagePatch::default()
                },
                Some(content),
            ),
            SessionUpdate::MessageUpsert(upsert) => self.upsert_message(upsert),
            SessionUpdate::TerminalUpdate(meta) => self.apply_terminal(meta),
            SessionUpdate::Unknown { kind, raw } => vec![self.push(Entry::Unknown { kind, raw })],
        }
    }

    /// The id of a tool call whose content links to `session_id`.
    fn tool_call_linking(&self, session_id: &str) -> Option<String> {
        self.entries.iter().rev().find_map(|e| match e {
            Entry::ToolCall(tc) => tc
                .content
                .iter()
                .any(|c| matches!(c, ToolContent::Session { session_id: s } if s == session_id))
                .then(|| tc.id.0.to_string()),
            _ => None,
        })
    }

    fn upsert_session_message(
        &mut self,
        patch: SessionMessagePatch,
        chunk: Option<Content>,
    ) -> Vec<SessionChange> {
        let index = match self.session_messages.get(&patch.message_id) {
            Some(&i) => i,
            None => {
                let index = self.entries.len();
                self.entries.push(Entry::SessionMessage(SessionMessage {
                    message_id: patch.message_id.clone(),
                    ..SessionMessage::default()
                }));
                self.session_messages
                    .insert(patch.message_id.clone(), index);
                index
            }
        };
        let Some(Entry::SessionMessage(m)) = self.entries.get_mut(index) else {
            return Vec::new();
        };
        if let Some(sender) = patch.sender_session_id {
            m.sender_session_id = sender;
        }
        if let Some(recipient) = patch.recipient_session_id {
            m.recipient_session_id = recipient;
        }
        if let Some(content) = patch.content {
            m.content = content;
        }
        if let Some(content) = chunk {
            match (m.content.last_mut(), content.as_plain_text()) {
                (Some(Content::Known(schema::ContentBlock::Text(last))), Some(text)) => {
                    last.text.push_str(text)
                }
                _ => m.content.push(content),
            }
        }
        vec![SessionChange::SessionMessageChanged {
            index,
            message: m.clone(),
        }]
    }

    /// A `user_message_chunk` that repeats the prompt this client recorded
    /// (agents that echo the prompt, with a `messageId` the local entry did
    /// not have): the local entry takes the id and nothing is added.
    fn take_echo(&mut self, chunk: &ContentChunk) -> Option<Vec<SessionChange>> {
        let (index, rest) = self.echo.as_mut()?;
        let text = chunk.content.as_text().unwrap_or_default();
        if text.is_empty() || !rest.starts_with(text) {
            // Not the prompt: a message of its own, not glued to the prompt.
            self.echo = None;
            return Some(vec![self.push(Entry::UserMessage(Message {
                message_id: chunk.message_id.clone(),
                content: vec![chunk.content.clone()],
            }))]);
        }
        rest.drain(..text.len());
        let index = *index;
        if rest.is_empty() {
            self.echo = None;
        }
        if let (Some(id), Some(Entry::UserMessage(m))) =
            (&chunk.message_id, self.entries.get_mut(index))
        {
            if m.message_id.is_none() {
                m.message_id = Some(id.clone());
            }
        }
        Some(Vec::new())
    }

    /// The compaction `id`, created (`in_progress`) when new: a summary
    /// chunk may come before its `compaction_update`.
    fn compaction_mut(&mut self, id: &str) -> &mut Compaction {
        let i = match self.compactions.iter().position(|c| c.id == id) {
            Some(i) => i,
            None => {
                self.compactions.push(Compaction {
                    id: id.to_owned(),
                    status: "in_progress".into(),
                    summary: Vec::new(),
                    error: None,
                });
                self.compactions.len() - 1
            }
        };
        &mut self.compactions[i]
    }

    fn compaction_change(c: &Compaction) -> SessionChange {
        SessionChange::CompactionChanged {
            id: c.id.clone(),
            status: c.status.clone(),
            summary: c.summary.clone(),
            error: c.error.clone(),
        }
    }

    /// Records the user's prompt (the client knows it; agents don't echo
    /// it). Always a new entry: two prompts in a row are two messages.
    pub fn push_user_prompt(&mut self, content: Vec<Content>) -> Vec<SessionChange> {
        let text: String = content.iter().filter_map(Content::as_text).collect();
        let change = self.push(Entry::UserMessage(Message {
            message_id: None,
            content,
        }));
        self.echo = (!text.is_empty()).then(|| (self.entries.len() - 1, text));
        vec![change]
    }

    /// Marks every tool call that has not finished as cancelled (on
    /// `session/cancel`). Later updates from the agent still apply.
    pub fn cancel_unfinished_tool_calls(&mut self) -> Vec<SessionChange> {
        let unfinished = std::mem::take(&mut self.unfinished);
        unfinished
            .into_iter()
            .filter_map(|index| match self.entries.get_mut(index) {
                Some(Entry::ToolCall(tc)) => {
                    tc.status = ToolStatus::Cancelled;
                    Some(SessionChange::ToolCallChanged {
                        index,
                        tool_call: tc.clone(),
                    })
                }
                _ => None,
            })
            .collect()
    }

    /// Sets the modes from a `session/new`, `session/load` or
    /// `session/resume` response.
    pub fn set_modes(&mut self, modes: schema::SessionModeState) -> Vec<SessionChange> {
        let current_mode_id = modes.current_mode_id.0.to_string();
        self.current_mode_id = Some(current_mode_id.clone());
        self.available_modes = modes.available_modes.clone();
        vec![SessionChange::ModesChanged {
            current_mode_id,
            available_modes: modes.available_modes,
        }]
    }

    /// Sets the active mode (a `current_mode_update`, or a successful
    /// `session/set_mode`).
    pub fn set_current_mode(&mut self, current_mode_id: String) -> Vec<SessionChange> {
        self.current_mode_id = Some(current_mode_id.clone());
        vec![SessionChange::ModeChanged { current_mode_id }]
    }

    /// Replaces the config options (from a session response, a
    /// `session/set_config_option` reply or a `config_option_update`).
    pub fn set_config_options(
        &mut self,
        config_options: Vec<schema::SessionConfigOption>,
    ) -> Vec<SessionChange> {
        self.config_options = config_options.clone();
        vec![SessionChange::ConfigOptionsChanged { config_options }]
    }

    /// The session's id.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// Every entry, in arrival order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The session cursor that forks this session right before its
    /// `prompt`-th user message (from 1), when the agent offers one.
    pub fn fork_cursor_before_prompt(&self, prompt: usize) -> Option<String> {
        self.cursors.fork_before_prompt(&self.entries, prompt)
    }

    /// The latest state of a tool call.
    pub fn tool_call(&self, id: &ToolCallId) -> Option<&ToolCallState> {
        match self.entries.get(*self.tool_calls.get(id)?) {
            Some(Entry::ToolCall(tc)) => Some(tc),
            _ => None,
        }
    }

    /// The entry index of a tool call.
    pub fn tool_call_index(&self, id: &ToolCallId) -> Option<usize> {
        self.tool_calls.get(id).copied()
    }

    /// Merged view for a permission request: what the session knows about
    /// the tool call, overlaid with the request's fields (the request wins
    /// where it has a field). For an unknown tool call, the request's fields.
    pub fn merged_tool_call(&self, fields: &ToolCallFields) -> ToolCallFields {
        match self.tool_call(&fields.tool_call_id) {
            Some(known) => {
                let mut merged = known.clone();
                merged.apply(fields.clone());
                merged.to_fields()
            }
            None => fields.clone(),
        }
    }

    /// The current plan (empty until the agent sends one).
    pub fn plan(&self) -> &[PlanEntry] {
        &self.plan
    }

    /// The plans of `plan_update`, in the order they appeared.
    pub fn plans(&self) -> &[PlanDocument] {
        &self.plans
    }

    /// The child sessions announced so far.
    pub fn subagents(&self) -> &[Subagent] {
        &self.subagents
    }

    /// A child session announced by this session.
    pub fn subagent(&self, session_id: &str) -> Option<&Subagent> {
        self.subagents.iter().find(|s| s.session_id == session_id)
    }

    /// The active mode, when known.
    pub fn current_mode(&self) -> Option<&str> {
        self.current_mode_id.as_deref()
    }

    /// The modes the agent offers.
    pub fn available_modes(&self) -> &[schema::SessionMode] {
        &self.available_modes
    }

    /// The configuration options and their values.
    pub fn config_options(&self) -> &[schema::SessionConfigOption] {
        &self.config_options
    }

    /// The slash commands the agent offers.
    pub fn available_commands(&self) -> &[schema::AvailableCommand] {
        &self.available_commands
    }

    /// The latest context usage.
    pub fn usage(&self) -> Option<&Usage> {
        self.usage.as_ref()
    }

    /// The session's title.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }

    /// The time of the session's last activity (ISO 8601, as sent).
    pub fn updated_at(&self) -> Option<&str> {
        self.updated_at.as_deref()
    }

    fn push(&mut self, entry: Entry) -> SessionChange {
        let index = self.entries.len();
        if matches!(entry, Entry::UserMessage(_)) {
            self.turn_start = index;
        }
        self.entries.push(entry.clone());
        SessionChange::EntryAdded { index, entry }
    }

    /// Appends to the last entry when it is the same speaker's message and
    /// the message ids do not differ; otherwise starts a new entry.
    fn append_chunk(&mut self, speaker: Speaker, chunk: ContentChunk) -> Vec<SessionChange> {
        let ContentChunk {
            content,
            message_id,
        } = chunk;
        let last = self.entries.len().checked_sub(1);
        if let Some((index, message)) = last.and_then(|index| {
            let message = speaker.message_mut(self.entries.get_mut(index)?)?;
            Some((index, message))
        }) {
            let same_message = match (&message.message_id, &message_id) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            if same_message {
                if message.message_id.is_none() {
                    message.message_id.clone_from(&message_id);
                }
                message.append(content.clone());
                return vec![SessionChange::TextAppended {
                    index,
                    content,
                    message_id,
                }];
            }
        }
        vec![self.push(speaker.entry(Message {
            message_id,
            content: vec![content],
        }))]
    }

    fn upsert_tool_call(&mut self, fields: ToolCallFields) -> SessionChange {
        if let Some(&index) = self.tool_calls.get(&fields.tool_call_id) {
            if let Some(Entry::ToolCall(tc)) = self.entries.get_mut(index) {
                tc.apply(fields);
                self.terminals.attach(tc);
                let tool_call = tc.clone();
                self.track_status(index, &tool_call.status);
                return SessionChange::ToolCallChanged { index, tool_call };
            }
        }
        // Unknown id: the `tool_call` itself, or an update/permission that
        // came first (some agents send those before the `tool_call`).
        let mut tc = ToolCallState::placeholder(fields.tool_call_id.clone());
        tc.apply(fields);
        self.terminals.attach(&mut tc);
        let index = self.entries.len();
        self.tool_calls.insert(tc.id.clone(), index);
        self.track_status(index, &tc.status);
        self.push(Entry::ToolCall(tc))
    }

    fn track_status(&mut self, index: usize, status: &ToolStatus) {
        if status.is_finished() {
            self.unfinished.remove(&index);
        } else {
            self.unfinished.insert(index);
        }
    }

    fn apply_info(&mut self, info: SessionInfo) -> Vec<SessionChange> {
        let SessionInfo { title, updated_at } = info;
        if title.is_none() && updated_at.is_none() {
            return Vec::new();
        }
        if let Some(title) = title {
            self.title = title;
        }
        if let Some(updated_at) = updated_at {
            self.updated_at = updated_at;
        }
        vec![SessionChange::InfoChanged {
            title: self.title.clone(),
            updated_at: self.updated_at.clone(),
        }]
    }
}
