//! The decode point of ACP v2 `session/update`s: each becomes the same typed
//! [`SessionUpdate`]s a v1 agent's updates become (so the session model and
//! the editor do not know which version they talk), or an [`AgentState`]
//! for `state_update`, which ends a v2 turn.
//!
//! v2 updates are upserts with patch semantics: an omitted field is
//! unchanged, `null` clears it, a value replaces it; the first
//! `tool_call_update` of an id creates the tool call (claude-agent-acp
//! 0.101.0 sends no `tool_call` at all). The v1 model keeps "absent =
//! unchanged", so a `null` becomes the cleared value (`[]`, `""`, the
//! default kind and status) here.

use serde_json::{json, Map, Value};

use super::decode::decode_value_notification;
use super::{ContentChunk, SessionId, SessionUpdate};
use crate::error::Error;

/// What the agent's foreground work is doing (`state_update`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum AgentState {
    /// Working.
    Running,
    /// Blocked on the user (a permission request follows).
    RequiresAction,
    /// The work ended: the turn's stop reason and token usage.
    Idle {
        /// The wire name (`end_turn`, ...), when the agent sent one.
        stop_reason: Option<String>,
        usage: Option<Value>,
    },
    /// `unknown` or a newer state, by its wire name.
    Other(String),
}

/// One v2 `session/update`, decoded.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum V2Notification {
    /// Updates for the session model, in order.
    Updates {
        session_id: SessionId,
        updates: Vec<SessionUpdate>,
    },
    /// A `user_message` upsert: the whole content of the message (empty
    /// when it sent none). Kept apart from the chunks so the session layer
    /// can tell the echo of a prompt it recorded from a new message.
    UserMessage {
        session_id: SessionId,
        message_id: Option<String>,
        content: Vec<super::Content>,
    },
    /// A `state_update`.
    State {
        session_id: SessionId,
        state: AgentState,
    },
}

fn params_error(reason: String) -> Error {
    Error::Decode {
        what: "a v2 `session/update`".into(),
        reason,
    }
}

/// Decodes the params of a v2 `session/update`.
pub(crate) fn decode_v2_notification(params: &str) -> Result<V2Notification, Error> {
    let value: Value = serde_json::from_str(params).map_err(|e| params_error(e.to_string()))?;
    let session_id = match value.get("sessionId") {
        Some(Value::String(s)) => SessionId::new(s.as_str()),
        _ => {
            return Err(params_error(
                "there is no `sessionId` string, so the update cannot be routed to a session"
                    .into(),
            ))
        }
    };
    let Some(Value::Object(update)) = value.get("update") else {
        return Err(params_error("there is no `update` object".into()));
    };
    let kind = update
        .get("sessionUpdate")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let message_id = update
        .get("messageId")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let updates = match kind {
        "state_update" => {
            return Ok(V2Notification::State {
                session_id,
                state: decode_state(update),
            })
        }
        // A message upsert: its `content` (when present) is the message's
        // whole text, appended as chunks of that message id (a replay sends
        // `content: []` and then the chunks).
        "user_message" => {
            let content = match update.get("content") {
                Some(Value::Array(blocks)) => {
                    blocks.iter().cloned().map(super::decode_content).collect()
                }
                _ => Vec::new(),
            };
            return Ok(V2Notification::UserMessage {
                session_id,
                message_id,
                content,
            });
        }
        "agent_message" => {
            let blocks = match update.get("content") {
                Some(Value::Array(blocks)) => blocks.clone(),
                _ => Vec::new(),
            };
            blocks
                .into_iter()
                .map(|block| {
                    SessionUpdate::AgentMessageChunk(ContentChunk {
                        content: super::decode_content(block),
                        message_id: message_id.clone(),
                    })
                })
                .collect()
        }
        "tool_call" | "tool_call_update" => {
            let mut tool_call = update.clone();
            clear_nulls(&mut tool_call);
            // An upsert: the model creates an unknown id from its first update.
            tool_call.insert("sessionUpdate".into(), json!("tool_call_update"));
            vec![
                decode_value_notification(json!({
                    "sessionId": session_id,
                    "update": tool_call,
                }))?
                .update,
            ]
        }
        "config_option_update" => {
            let mut value = value.clone();
            if let Some(update) = value.get_mut("update") {
                config_options_to_v1(update);
            }
            vec![decode_value_notification(value)?.update]
        }
        // Every other kind has the v1 shape (chunks with a `messageId`,
        // plans, commands, config options, usage...) or is kept whole as
        // `Unknown` (`terminal_update`).
        _ => vec![decode_value_notification(value.clone())?.update],
    };
    Ok(V2Notification::Updates {
        session_id,
        updates,
    })
}

fn decode_state(update: &Map<String, Value>) -> AgentState {
    match update.get("state").and_then(Value::as_str) {
        Some("running") => AgentState::Running,
        Some("requires_action") => AgentState::RequiresAction,
        Some("idle") => AgentState::Idle {
            stop_reason: update
                .get("stopReason")
                .and_then(Value::as_str)
                .map(str::to_owned),
            usage: update.get("usage").filter(|u| u.is_object()).cloned(),
        },
        Some(other) => AgentState::Other(other.to_owned()),
        None => AgentState::Other(String::new()),
    }
}

/// A v2 tool call upsert in the v1 model's terms: `null` becomes the
/// cleared value, and a v2 diff (`changes` plus an optional `git_patch`,
/// no old or new text) becomes a text block with the patch. Also the
/// decode point of the tool call of a v2 permission request's subject.
pub(crate) fn clear_nulls(tool_call: &mut Map<String, Value>) {
    for (key, cleared) in [
        ("content", json!([])),
        ("locations", json!([])),
        ("title", json!("")),
        ("kind", json!("other")),
        ("status", json!("pending")),
    ] {
        if tool_call.get(key).is_some_and(Value::is_null) {
            tool_call.insert(key.into(), cleared);
        }
    }
    if let Some(Value::Array(items)) = tool_call.get_mut("content") {
        for item in items.iter_mut() {
            if let Some(text) = v2_diff_text(item) {
                *item = json!({"type": "content", "content": {"type": "text", "text": text}});
            }
        }
    }
}

/// The text shown for a v2 diff: its patch in a `diff` fence, or the list
/// of changed paths when the agent sent no patch.
fn v2_diff_text(item: &Value) -> Option<String> {
    if item.get("type").and_then(Value::as_str) != Some("diff") {
        return None;
    }
    let changes = item.get("changes")?.as_array()?;
    if let Some(patch) = item
        .get("patch")
        .and_then(|p| p.get("text"))
        .and_then(Value::as_str)
    {
        return Some(format!("```diff\n{}\n```", patch.trim_end_matches('\n')));
    }
    let paths: Vec<String> = changes
        .iter()
        .filter_map(|c| {
            let path = c.get("path").and_then(Value::as_str)?;
            let op = c
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or("change");
            Some(format!("{op} {path}"))
        })
        .collect();
    Some(paths.join("\n"))
}

/// v2 config options in their v1 shape: the id is `configId` on v2
/// (claude-agent-acp 0.101.0's `session/new` answer), `id` on v1. Applied
/// to the `configOptions` of a session answer, a `set_config_option`
/// answer and a `config_option_update`.
pub(crate) fn config_options_to_v1(holder: &mut Value) {
    let Some(Value::Array(options)) = holder.get_mut("configOptions") else {
        return;
    };
    for option in options.iter_mut().filter_map(Value::as_object_mut) {
        if !option.contains_key("id") {
            if let Some(id) = option.remove("configId") {
                option.insert("id".into(), id);
            }
        }
    }
}
