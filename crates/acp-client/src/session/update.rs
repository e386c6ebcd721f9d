//! Lenient, typed `session/update` payloads.
//!
//! The official schema types reject a whole message when one closed enum has
//! a value they do not know (a new `sessionUpdate` kind, content block type,
//! tool status...). Agents keep adding such values during v1, so this module
//! decodes in two steps: peek at the discriminator, decode known shapes with
//! the official types, and keep everything else as raw JSON in an `Unknown`
//! variant that an editor can still show.
//!
//! Entry points: [`decode_session_notification`] for `session/update` params,
//! [`decode_session_update_line`] for a whole streamed line in one pass,
//! [`decode_tool_call_fields`] for one tool call object (also the `toolCall`
//! of a permission request), [`decode_content`] for one content block.

mod decode;
#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests;
pub(crate) mod v2;

pub(crate) use decode::decode_declined_session_notification;
pub use decode::{
    decode_content, decode_session_notification, decode_session_update_line,
    decode_tool_call_fields,
};

use agent_client_protocol_schema::v1 as schema;
use serde::Serialize;
use serde_json::Value;

/// The id of an agent session.
pub use schema::SessionId;
/// The id of a tool call within a session.
pub use schema::ToolCallId;

/// One `session/update` notification, decoded.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionNotification {
    /// The session the update belongs to.
    pub session_id: SessionId,
    /// What changed.
    pub update: SessionUpdate,
}

/// The payload of a `session/update`.
///
/// Decoded by [`decode_session_notification`], which maps the legacy names
/// seen in the wild (`agent_message_text_update`, `message` with a `role`,
/// `kind` instead of `sessionUpdate`, `modeId`, `commands`) onto these
/// variants and keeps everything else in [`SessionUpdate::Unknown`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionUpdate {
    /// A piece of a user message (agents send these when replaying a loaded session).
    UserMessageChunk(ContentChunk),
    /// A piece of the agent's answer.
    AgentMessageChunk(ContentChunk),
    /// A piece of the agent's reasoning.
    AgentThoughtChunk(ContentChunk),
    /// A new tool call (all fields that the agent sent).
    ToolCall(ToolCallFields),
    /// Changed fields of an existing tool call.
    ToolCallUpdate(ToolCallFields),
    /// The complete plan; replaces the previous one.
    Plan {
        /// Every entry of the new plan, in order.
        entries: Vec<PlanEntry>,
    },
    /// The slash commands the agent offers now (the whole list). Commands
    /// that do not match the schema are left out (and logged).
    AvailableCommandsUpdate {
        /// The commands.
        #[serde(rename = "availableCommands")]
        available_commands: Vec<schema::AvailableCommand>,
    },
    /// The agent switched to another mode.
    CurrentModeUpdate {
        /// The id of the mode now active.
        #[serde(rename = "currentModeId")]
        current_mode_id: String,
    },
    /// The complete set of configuration options and their values. Options
    /// that do not match the schema (a new option `type`) are left out (and
    /// logged).
    ConfigOptionUpdate {
        /// The options.
        #[serde(rename = "configOptions")]
        config_options: Vec<schema::SessionConfigOption>,
    },
    /// Session metadata (title, last activity) changed.
    SessionInfoUpdate(SessionInfo),
    /// Context window usage (and cost) changed.
    UsageUpdate(Usage),
    /// Information for the user that is not part of the history
    /// (`notice`; sent only to clients advertising `session.notices`).
    Notice(Notice),
    /// A context compaction was created or changed (`compaction_update`;
    /// sent only to clients advertising `session.compaction`).
    CompactionUpdate {
        /// The compaction's id.
        id: String,
        /// `in_progress`, `completed`, `failed`, `cancelled` (others kept).
        status: String,
        /// The retained summary, when the update replaces it.
        summary: Option<Vec<Content>>,
        /// Why it failed.
        error: Option<String>,
    },
    /// A session cursor was announced or changed (`cursor_update`; sent
    /// only to clients advertising `session.cursors`): a place in the
    /// history the agent may fork at.
    CursorUpdate {
        /// The agent's id of the cursor.
        cursor_id: String,
        /// Where it is; only on its first update (then fixed).
        anchor: Option<schema::CursorAnchor>,
        /// Whether `session/fork` accepts it now; `None`: unchanged.
        fork: Option<bool>,
    },
    /// A block appended to a compaction's summary (`compaction_summary_chunk`).
    CompactionSummaryChunk {
        /// The compaction's id.
        id: String,
        /// The appended block.
        content: Content,
    },
    /// One plan of several, by id, replaced whole (`plan_update`; sent only
    /// to clients advertising `clientCapabilities.plan`).
    PlanUpdate(PlanDocument),
    /// A plan went away (`plan_removed`).
    PlanRemoved {
        /// The plan's id.
        plan_id: String,
    },
    /// A child session of this one was announced or changed
    /// (`subagent_update`; sent only to clients advertising
    /// `clientCapabilities.subagents`).
    SubagentUpdate(SubagentPatch),
    /// An upsert of a message between sessions (`session_message`).
    SessionMessage(SessionMessagePatch),
    /// A block appended to a message between sessions (`session_message_chunk`).
    SessionMessageChunk {
        /// The message.
        message_id: String,
        /// The appended block.
        content: Content,
    },
    /// A message upserted whole by its id (v2 `user_message`,
    /// `agent_message`, `agent_thought`): its content replaces what the
    /// message had, chunks included; later chunks of the id append.
    MessageUpsert(MessageUpsert),
    /// The state of a terminal the agent runs itself, by its id (v2
    /// `terminal_update` and `terminal_output_chunk`): it reaches the tool
    /// call whose content shows that terminal, as a v1 agent's `_meta`
    /// terminal does.
    TerminalUpdate(TerminalMeta),
    /// An update kind this client does not know, or a known kind whose
    /// required fields are missing, kept whole so an editor can still show it.
    Unknown {
        /// The wire discriminator (`sessionUpdate`, or the legacy `kind`);
        /// empty when the update had none.
        kind: String,
        /// The update object (for an update sent without the `update`
        /// wrapper: the whole params object).
        raw: Value,
    },
}

/// A streamed piece of a message or thought.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentChunk {
    /// The piece of content.
    pub content: Content,
    /// Groups chunks of one message, when the agent sends it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// Whose message a [`MessageUpsert`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MessageKind {
    /// The user's (a prompt).
    User,
    /// The agent's answer.
    Agent,
    /// The agent's reasoning.
    Thought,
}

/// A message upsert: the whole content of the message `message_id`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageUpsert {
    /// Whose message.
    pub kind: MessageKind,
    /// The message's id.
    pub message_id: String,
    /// The new content, replacing the old (`Some(vec![])` clears it);
    /// `None` leaves it unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<Content>>,
}

/// A content block, or raw JSON for a block type this client does not know.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
// Boxing the block would cost an allocation per streamed chunk to save stack
// space the hot path does not miss.
#[allow(clippy::large_enum_variant)]
pub enum Content {
    /// A block of a type the official schema knows.
    Known(schema::ContentBlock),
    /// Anything else, kept whole.
    Unknown(Value),
}

impl Content {
    /// A plain text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Known(schema::ContentBlock::Text(schema::TextContent::new(text)))
    }

    /// The text of a text block; `None` for every other block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Known(schema::ContentBlock::Text(t)) => Some(&t.text),
            _ => None,
        }
    }

    /// The text of a text block without annotations or `_meta`: the only
    /// blocks that can be joined with the next chunk without losing
    /// anything.
    pub fn as_plain_text(&self) -> Option<&str> {
        match self {
            Content::Known(schema::ContentBlock::Text(t))
                if t.annotations.is_none() && t.meta.is_none() =>
            {
                Some(&t.text)
            }
            _ => None,
        }
    }

    /// [`as_plain_text`](Self::as_plain_text), to append to it.
    pub fn as_plain_text_mut(&mut self) -> Option<&mut String> {
        match self {
            Content::Known(schema::ContentBlock::Text(t))
                if t.annotations.is_none() && t.meta.is_none() =>
            {
                Some(&mut t.text)
            }
            _ => None,
        }
    }
}

/// Tool call fields as sent by the agent. In a `tool_call` every field the
/// agent sent is set; in a `tool_call_update` only the changed ones.
/// `content` and `locations` replace the previous lists when present.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallFields {
    /// Which tool call.
    pub tool_call_id: ToolCallId,
    /// Human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Programmatic name of the tool (stable v1 field, e.g. `edit_file`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Category of the tool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    /// Execution status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    /// Produced content (text, diffs, terminals); replaces the old list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolContent>>,
    /// Files the tool touches; replaces the old list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<schema::ToolCallLocation>>,
    /// The tool's raw input, as the agent sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    /// The tool's raw output, as the agent sent it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
    /// Command output the agent ran itself and reports in `_meta`
    /// (`terminal_info`, `terminal_output(_delta)`, `terminal_exit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terminal_meta: Option<TerminalMeta>,
}

/// What one tool call update says in `_meta` about a terminal the agent runs
/// itself. codex-acp 2.6.0 embeds `{type: "terminal", terminalId}` for a
/// terminal the client never created and sends its output only this way
/// (the convention Zed introduced: `terminal_info`, `terminal_output`,
/// `terminal_exit`; codex-acp's `terminal_output_delta` for clients that
/// advertise `_meta.terminal_output_delta`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TerminalMeta {
    /// The agent's terminal id.
    pub terminal_id: String,
    /// Output to append (`terminal_output` and `terminal_output_delta`
    /// both append: each carries only the new bytes), or to replace all
    /// output before it with when [`replace_output`](Self::replace_output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    /// `output` is a whole snapshot (v2 `terminal_update.output`), not
    /// new bytes.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub replace_output: bool,
    /// The command line, when the agent reports it (v2 `command`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command exited (`terminal_exit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<TerminalExit>,
}

/// How an agent-run command ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TerminalExit {
    /// The exit code, when it exited normally.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// The signal that ended it, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
}

/// A `plan_update`: one plan, by id, as a checklist or a Markdown document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanDocument {
    /// The plan's id (several plans can coexist).
    pub plan_id: String,
    /// The plan.
    #[serde(flatten)]
    pub body: PlanBody,
}

/// The content of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "format", rename_all = "snake_case")]
pub enum PlanBody {
    /// A checklist (`type: "items"`).
    Items {
        /// Every entry, in order.
        entries: Vec<PlanEntry>,
    },
    /// The whole plan as Markdown (`type: "markdown"`).
    Markdown {
        /// The Markdown text.
        content: String,
        /// The absolute path of the plan's file, when it has one.
        #[serde(skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
}

/// A `subagent_update`: `None` = unchanged, `Some(None)` = cleared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentPatch {
    /// The child session's id.
    pub session_id: String,
    /// The parent's display title for the child.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Option<String>>,
    /// What the child is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<Option<String>>,
    /// `running`, `idle`, `requires_action`, `unknown` (others kept).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<Option<SubagentState>>,
    /// Whether the client may cancel the child (`capabilities.cancel`);
    /// `Some(false)` when the capabilities were cleared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub can_cancel: Option<bool>,
    /// The child's working directory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<Option<String>>,
}

/// The work state of a child session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentState {
    /// `running`, `idle`, `requires_action`, `unknown` or a newer value.
    pub state: String,
    /// Why an idle child stopped, when reported.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// A `session_message`: `None` = unchanged, `Some(None)` = cleared.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMessagePatch {
    /// The message's id in this session's transcript.
    pub message_id: String,
    /// The sending session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_session_id: Option<Option<String>>,
    /// The receiving session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recipient_session_id: Option<Option<String>>,
    /// The whole content, replacing the old one (`Some(vec![])` clears it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<Content>>,
}

/// The category of a tool call; unknown kinds keep their name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolKind {
    /// Reading files or data.
    Read,
    /// Modifying files.
    Edit,
    /// Deleting files.
    Delete,
    /// Moving or renaming files.
    Move,
    /// Searching.
    Search,
    /// Running a command.
    Execute,
    /// Internal reasoning.
    Think,
    /// Fetching external data.
    Fetch,
    /// Switching the session mode.
    SwitchMode,
    /// Anything else (the default).
    Other,
    /// A kind this client does not know, with its wire name.
    Unknown(String),
}

impl ToolCallFields {
    /// Fields with only the id set.
    pub fn new(tool_call_id: impl Into<ToolCallId>) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            title: None,
            name: None,
            kind: None,
            status: None,
            content: None,
            locations: None,
            raw_input: None,
            raw_output: None,
            terminal_meta: None,
        }
    }
}

impl ToolKind {
    /// Parses the wire name; never fails.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "read" => ToolKind::Read,
            "edit" => ToolKind::Edit,
            "delete" => ToolKind::Delete,
            "move" => ToolKind::Move,
            "search" => ToolKind::Search,
            "execute" => ToolKind::Execute,
            "think" => ToolKind::Think,
            "fetch" => ToolKind::Fetch,
            "switch_mode" => ToolKind::SwitchMode,
            "other" => ToolKind::Other,
            other => ToolKind::Unknown(other.to_owned()),
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            ToolKind::Read => "read",
            ToolKind::Edit => "edit",
            ToolKind::Delete => "delete",
            ToolKind::Move => "move",
            ToolKind::Search => "search",
            ToolKind::Execute => "execute",
            ToolKind::Think => "think",
            ToolKind::Fetch => "fetch",
            ToolKind::SwitchMode => "switch_mode",
            ToolKind::Other => "other",
            ToolKind::Unknown(s) => s,
        }
    }
}

impl Serialize for ToolKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The status of a tool call. `Cancelled` is set by the client when a turn is
/// cancelled (and is sent by some v2-draft agents); unknown statuses keep
/// their name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolStatus {
    /// Not started (waiting for input or permission).
    Pending,
    /// Running.
    InProgress,
    /// Finished successfully.
    Completed,
    /// Finished with an error.
    Failed,
    /// Stopped because the turn was cancelled.
    Cancelled,
    /// A status this client does not know, with its wire name. Counts as
    /// unfinished.
    Unknown(String),
}

impl ToolStatus {
    /// Parses the wire name; never fails.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "pending" => ToolStatus::Pending,
            "in_progress" => ToolStatus::InProgress,
            "completed" => ToolStatus::Completed,
            "failed" => ToolStatus::Failed,
            "cancelled" => ToolStatus::Cancelled,
            other => ToolStatus::Unknown(other.to_owned()),
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            ToolStatus::Pending => "pending",
            ToolStatus::InProgress => "in_progress",
            ToolStatus::Completed => "completed",
            ToolStatus::Failed => "failed",
            ToolStatus::Cancelled => "cancelled",
            ToolStatus::Unknown(s) => s,
        }
    }

    /// True once the tool call will not change any more.
    pub fn is_finished(&self) -> bool {
        matches!(
            self,
            ToolStatus::Completed | ToolStatus::Failed | ToolStatus::Cancelled
        )
    }
}

impl Serialize for ToolStatus {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// One item of a tool call's `content`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // As `Content`.
pub enum ToolContent {
    /// A regular content block.
    Content {
        /// The block.
        content: Content,
    },
    /// A file modification.
    #[serde(rename_all = "camelCase")]
    Diff {
        /// Absolute path of the file.
        path: std::path::PathBuf,
        /// The text before; `None` for a new file (wire `null` or absent;
        /// omitted when serialized).
        #[serde(skip_serializing_if = "Option::is_none")]
        old_text: Option<String>,
        /// The text after.
        new_text: String,
    },
    /// A client terminal whose output is shown live (or a terminal the
    /// agent runs itself and reports in `_meta`, see [`TerminalMeta`]).
    #[serde(rename_all = "camelCase")]
    Terminal {
        /// The id returned by `terminal/create`.
        terminal_id: String,
    },
    /// A display-only link to another session, such as the subagent the
    /// tool call started.
    #[serde(rename_all = "camelCase")]
    Session {
        /// The referenced session.
        session_id: String,
    },
    /// A content type this client does not know, or a known one missing a
    /// required field, kept whole.
    Unknown {
        /// The item as sent.
        raw: Value,
    },
}

/// One plan entry. Statuses and priorities are kept as their wire names so a
/// new value never drops the entry (the official type drops it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanEntry {
    /// What the step is.
    pub content: String,
    /// `high`, `medium`, `low`, or a newer value; empty when the agent sent none.
    pub priority: String,
    /// `pending`, `in_progress`, `completed`, or a newer value; empty when
    /// the agent sent none.
    pub status: String,
}

/// `session_info_update`: `None` = unchanged, `Some(None)` = cleared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session's title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Option<String>>,
    /// ISO 8601 time of the last activity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Option<String>>,
}

/// A `notice`: fire-and-forget information for the user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Notice {
    /// `info`, `warning` or `error` (others kept as sent).
    pub severity: String,
    /// A title that stands alone.
    pub title: String,
    /// Detail or guidance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `usage_update`: tokens used and context size, with the cost when known.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Tokens currently in the context window.
    pub used: u64,
    /// Size of the context window in tokens.
    pub size: u64,
    /// Cumulative cost as sent (`{amount, currency}` in v1), kept as JSON.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}
