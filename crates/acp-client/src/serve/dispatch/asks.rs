//! The tool calls the client asks the user about on its own: a permission
//! request without a tool call to point at, a write inside `.git`, a
//! command when `ask_before_terminal` is on. Built as the schema's
//! `ToolCallUpdate` and decoded through the one decode point of a tool call,
//! like an agent's.

use std::path::Path;

use serde_json::Value;

use crate::policy::permission::PermissionRequestId;
use crate::schema;

/// A v2 permission request with no tool call for its subject: the prompt
/// stands for itself, under an id of its own that no update of the agent
/// can touch.
pub(super) fn untitled_permission(id: PermissionRequestId) -> schema::ToolCallUpdate {
    schema::ToolCallUpdate::new(
        format!("permission-{}", id.0),
        schema::ToolCallUpdateFields::new(),
    )
}

/// An agent's write inside `.git`. `shown` is the path as displayed (a
/// lossy string, so a non-UTF-8 path still encodes).
pub(super) fn git_write(id: PermissionRequestId, shown: &str) -> schema::ToolCallUpdate {
    schema::ToolCallUpdate::new(
        format!("acp-client-git-write-{}", id.0),
        schema::ToolCallUpdateFields::new()
            .title(format!(
                "Write `{shown}` inside .git (hooks and config there run code)"
            ))
            .kind(schema::ToolKind::Edit)
            .status(schema::ToolCallStatus::Pending)
            .locations(vec![schema::ToolCallLocation::new(shown)]),
    )
}

/// A command the agent wants to run in a terminal of the client.
pub(super) fn terminal_run(
    id: PermissionRequestId,
    line: &str,
    cwd: &Path,
) -> schema::ToolCallUpdate {
    schema::ToolCallUpdate::new(
        format!("acp-client-terminal-{}", id.0),
        schema::ToolCallUpdateFields::new()
            .title(format!("Run `{line}` in {}", cwd.display()))
            .kind(schema::ToolKind::Execute)
            .status(schema::ToolCallStatus::Pending)
            // Free-form in the schema (`rawInput` is any JSON): the command
            // line as the user reads it.
            .raw_input(Value::from_iter([("command", line)])),
    )
}

/// The tool call as the JSON an agent would send it, for the decode point.
pub(super) fn encode(call: &schema::ToolCallUpdate) -> crate::error::Result<Value> {
    serde_json::to_value(call).map_err(|e| crate::error::Error::Decode {
        what: "a tool call of the client".into(),
        reason: e.to_string(),
    })
}
