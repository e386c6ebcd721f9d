//! [`SessionChange`]: what one update changed in the model, for an editor
//! that renders incrementally.

use super::*;

/// A fine-grained change to a session model, for incremental rendering. See
/// the [module documentation](crate::session) for the serialized form.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "change",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
pub enum SessionChange {
    /// A new entry, appended at `index`.
    EntryAdded {
        /// Position of the entry.
        index: usize,
        /// The entry as it is now.
        entry: Entry,
    },
    /// A chunk appended to the message or thought at `index`.
    TextAppended {
        /// Position of the message.
        index: usize,
        /// The appended chunk (not the whole message).
        content: Content,
        /// The chunk's message id, when it had one; a message that had no
        /// id takes this one.
        #[serde(skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
    },
    /// The message or thought at `index` was replaced whole (a v2 message
    /// upsert).
    MessageReplaced {
        /// Position of the message.
        index: usize,
        /// The entry as it is now.
        entry: Entry,
    },
    /// The tool call at `index` changed.
    ToolCallChanged {
        /// Position of the tool call.
        index: usize,
        /// Its complete new state.
        tool_call: ToolCallState,
    },
    /// The plan was replaced.
    PlanReplaced {
        /// The whole new plan.
        entries: Vec<PlanEntry>,
    },
    /// One plan of several was created or replaced (`plan_update`).
    PlanUpdated {
        /// The plan, whole.
        plan: PlanDocument,
    },
    /// A plan was removed (`plan_removed` for a plan this session has).
    PlanRemoved {
        /// The plan's id.
        plan_id: String,
    },
    /// A child session was announced or changed; its whole known state.
    SubagentChanged {
        /// The child.
        subagent: Subagent,
    },
    /// A change of a child session's own model (its messages, thoughts,
    /// tool calls...), shown inside the parent's chat. Indexes in `change`
    /// are the child's.
    Child {
        /// The child's session id.
        session_id: String,
        /// The child's change.
        child_change: Box<SessionChange>,
    },
    /// The message between sessions at `index` changed; its whole state.
    SessionMessageChanged {
        /// Position of the message entry.
        index: usize,
        /// The message now.
        message: SessionMessage,
    },
    /// The active mode changed.
    ModeChanged {
        /// The mode now active.
        current_mode_id: String,
    },
    /// The available modes were set (from a session response).
    ModesChanged {
        /// The mode now active.
        current_mode_id: String,
        /// Every mode the agent offers.
        available_modes: Vec<schema::SessionMode>,
    },
    /// The configuration options were replaced.
    ConfigOptionsChanged {
        /// The complete option list.
        config_options: Vec<schema::SessionConfigOption>,
    },
    /// The slash commands were replaced.
    CommandsChanged {
        /// The complete command list.
        available_commands: Vec<schema::AvailableCommand>,
    },
    /// Context usage changed.
    UsageChanged {
        /// The latest usage.
        usage: Usage,
    },
    /// The agent sent a notice (not kept: notices are not history).
    Notice {
        /// `info`, `warning`, `error` or another severity.
        severity: String,
        /// Stands alone.
        title: String,
        /// Detail.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
    },
    /// A context compaction was created or changed; its whole state.
    CompactionChanged {
        /// The compaction's id.
        id: String,
        /// `in_progress`, `completed`, `failed`, `cancelled`, or another.
        status: String,
        /// The retained summary so far.
        summary: Vec<Content>,
        /// Why it failed.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// The agent reported the tokens a turn used (the prompt response's
    /// `usage`, unstable in ACP); emitted just before the turn ends.
    TurnUsage {
        /// The counts.
        usage: TurnUsage,
    },
    /// Session info changed.
    InfoChanged {
        /// The title now (none when cleared or never set).
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// The last activity time now.
        #[serde(skip_serializing_if = "Option::is_none")]
        updated_at: Option<String>,
    },
}
