//! Lenient, typed `session/update` payloads.
//!
//! The official schema types reject a whole message when one closed enum has
//! a value they do not know (a new `sessionUpdate` kind, content block type,
//! tool status...). Agents keep adding such values during v1, so this module
//! decodes in two steps: peek at the discriminator, decode known shapes with
//! the official types, and keep everything else as raw JSON in an `Unknown`
//! variant that an editor can still show.

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
    pub session_id: SessionId,
    pub update: SessionUpdate,
}

/// The payload of a `session/update`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionUpdate {
    UserMessageChunk(ContentChunk),
    AgentMessageChunk(ContentChunk),
    AgentThoughtChunk(ContentChunk),
    /// A new tool call (all fields that the agent sent).
    ToolCall(ToolCallFields),
    /// Changed fields of an existing tool call.
    ToolCallUpdate(ToolCallFields),
    /// The complete plan; replaces the previous one.
    Plan {
        entries: Vec<PlanEntry>,
    },
    AvailableCommandsUpdate {
        #[serde(rename = "availableCommands")]
        available_commands: Vec<schema::AvailableCommand>,
    },
    CurrentModeUpdate {
        #[serde(rename = "currentModeId")]
        current_mode_id: String,
    },
    ConfigOptionUpdate {
        #[serde(rename = "configOptions")]
        config_options: Vec<schema::SessionConfigOption>,
    },
    SessionInfoUpdate(SessionInfo),
    UsageUpdate(Usage),
    /// An update kind this client does not know, kept whole.
    Unknown {
        kind: String,
        raw: Value,
    },
}

/// A streamed piece of a message or thought.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContentChunk {
    pub content: Content,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
}

/// A content block, or raw JSON for a block type this client does not know.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Content {
    Known(schema::ContentBlock),
    Unknown(Value),
}

impl Content {
    /// The text of a text block; `None` for every other block.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Known(schema::ContentBlock::Text(t)) => Some(&t.text),
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
    pub tool_call_id: ToolCallId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<ToolContent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<schema::ToolCallLocation>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
}

/// The category of a tool call; unknown kinds keep their name.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    Other,
    Unknown(String),
}

impl ToolCallFields {
    /// Fields with only the id set.
    pub fn new(tool_call_id: impl Into<ToolCallId>) -> Self {
        Self {
            tool_call_id: tool_call_id.into(),
            title: None,
            kind: None,
            status: None,
            content: None,
            locations: None,
            raw_input: None,
            raw_output: None,
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
    Pending,
    InProgress,
    Completed,
    Failed,
    Cancelled,
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
pub enum ToolContent {
    Content {
        content: Content,
    },
    #[serde(rename_all = "camelCase")]
    Diff {
        path: std::path::PathBuf,
        old_text: Option<String>,
        new_text: String,
    },
    #[serde(rename_all = "camelCase")]
    Terminal {
        terminal_id: String,
    },
    /// A content type this client does not know, kept whole.
    Unknown {
        raw: Value,
    },
}

/// One plan entry. Statuses and priorities are kept as their wire names so a
/// new value never drops the entry (the official type drops it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanEntry {
    pub content: String,
    pub priority: String,
    pub status: String,
}

/// `session_info_update`: `None` = unchanged, `Some(None)` = cleared.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Option<String>>,
}

/// `usage_update`: tokens used and context size, with the cost when known.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub used: u64,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}
