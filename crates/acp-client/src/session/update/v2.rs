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

use std::path::Path;

use serde_json::{Map, Value};

use super::decode::{decode_update, decode_value_notification};
use super::{
    Content, MessageKind, MessageUpsert, SessionId, SessionUpdate, TerminalExit, TerminalMeta,
};
use crate::error::Error;
use crate::schema;

mod patch;
#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests;

/// Reads a file a v2 diff names, to recover its other side: the text on
/// disk when the file is inside the session's workspace and not too big.
pub(crate) type DiskReader<'a> = &'a dyn Fn(&SessionId, &Path) -> Option<String>;

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
    /// A `user_message` upsert with its content. Kept apart so the session
    /// layer can tell the echo of a prompt it recorded from a new message.
    UserMessage {
        session_id: SessionId,
        message_id: String,
        content: Vec<Content>,
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

/// Decodes the params of a v2 `session/update`; `read` gives the disk side
/// of a diff (see [`DiskReader`]).
pub(crate) fn decode_v2_notification(
    params: &str,
    read: DiskReader,
) -> Result<V2Notification, Error> {
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
        // Message upserts: `content` replaces the message's whole content
        // (chunks included), omitted leaves it, `null` clears it.
        "user_message" | "agent_message" | "agent_thought" => {
            let content = match update.get("content") {
                Some(Value::Array(blocks)) => Some(
                    blocks
                        .iter()
                        .cloned()
                        .map(super::decode_content)
                        .collect::<Vec<_>>(),
                ),
                Some(Value::Null) => Some(Vec::new()),
                // Absent, or of the wrong type (the schema: default on error).
                _ => None,
            };
            let (Some(message_id), Some(content)) = (message_id, content) else {
                return Ok(V2Notification::Updates {
                    session_id,
                    updates: Vec::new(),
                });
            };
            let kind = match kind {
                "user_message" => {
                    return Ok(V2Notification::UserMessage {
                        session_id,
                        message_id,
                        content,
                    })
                }
                "agent_message" => MessageKind::Agent,
                _ => MessageKind::Thought,
            };
            vec![SessionUpdate::MessageUpsert(MessageUpsert {
                kind,
                message_id,
                content: Some(content),
            })]
        }
        "terminal_update" | "terminal_output_chunk" => {
            vec![SessionUpdate::TerminalUpdate(decode_terminal(
                kind, update,
            )?)]
        }
        "tool_call" | "tool_call_update" => {
            let mut tool_call = update.clone();
            clear_nulls(&mut tool_call, &|path| read(&session_id, path));
            // An upsert: the model creates an unknown id from its first update.
            tool_call.insert("sessionUpdate".into(), "tool_call_update".into());
            vec![decode_update(Value::Object(tool_call))]
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
        // `Unknown`.
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

/// A v2 `terminal_update` (an upsert: `output` is a whole snapshot) or
/// `terminal_output_chunk` (bytes appended), as the terminal state a v1
/// agent reports in a tool call's `_meta`. Output is base64 on v2; bytes
/// that are not UTF-8 show as U+FFFD.
fn decode_terminal(kind: &str, update: &Map<String, Value>) -> Result<TerminalMeta, Error> {
    let Some(terminal_id) = update.get("terminalId").and_then(Value::as_str) else {
        return Err(params_error(format!(
            "a `{kind}` without a `terminalId` string names no terminal"
        )));
    };
    let decode = |data: &Value| match data.as_str().map(base64_decode) {
        Some(Some(bytes)) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        _ => {
            tracing::debug!("terminal `{terminal_id}`: output that is not base64 is dropped");
            None
        }
    };
    let mut meta = TerminalMeta {
        terminal_id: terminal_id.to_owned(),
        ..TerminalMeta::default()
    };
    if kind == "terminal_output_chunk" {
        meta.output = update.get("data").and_then(decode);
        return Ok(meta);
    }
    meta.command = update
        .get("command")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match update.get("output") {
        // `null` clears the output.
        Some(Value::Null) => {
            meta.output = Some(String::new());
            meta.replace_output = true;
        }
        Some(output) => {
            meta.output = output.get("data").and_then(decode);
            meta.replace_output = meta.output.is_some();
        }
        None => {}
    }
    if let Some(Value::Object(exit)) = update.get("exitStatus") {
        meta.exit = Some(TerminalExit {
            exit_code: exit.get("exitCode").and_then(Value::as_i64),
            signal: exit
                .get("signal")
                .and_then(Value::as_str)
                .map(str::to_owned),
        });
    }
    Ok(meta)
}

/// Standard base64 (padding optional); `None` for anything else.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A lone sixth of a byte is not base64.
    (bits < 6).then_some(out)
}

/// A v2 tool call upsert in the v1 model's terms: `null` becomes the
/// cleared value, and each v2 diff (`changes` plus an optional `git_patch`)
/// becomes v1 `diff` content, one per file whose old and new text can be
/// recovered (see [`patch`]), the rest a text block with its part of the
/// patch. Also the decode point of the tool call of a v2 permission
/// request's subject. `read` gives a file's text on disk.
pub(crate) fn clear_nulls(
    tool_call: &mut Map<String, Value>,
    read: &dyn Fn(&Path) -> Option<String>,
) {
    for key in ["content", "locations", "title", "kind", "status"] {
        if tool_call.get(key).is_some_and(Value::is_null) {
            tool_call.insert(key.into(), cleared(key));
        }
    }
    // Reported done: the disk likely has the new text already.
    let done = matches!(
        tool_call.get("status").and_then(Value::as_str),
        Some("completed" | "failed")
    );
    if let Some(Value::Array(items)) = tool_call.get_mut("content") {
        let old = std::mem::take(items);
        for item in old {
            match v2_diff(&item, read, done) {
                Some(converted) => items.extend(converted),
                None => items.push(item),
            }
        }
    }
}

/// What a v2 `null` clears `key` of a tool call to: empty lists and title,
/// and the schema's default kind (`other`) and status (`pending`).
fn cleared(key: &str) -> Value {
    match key {
        "kind" => encode(&schema::ToolKind::default()),
        "status" => encode(&schema::ToolCallStatus::default()),
        "title" => Value::String(String::new()),
        _ => Value::Array(Vec::new()),
    }
}

/// A schema value as JSON, for a tool call being patched before its decode.
/// The schema's enums and content items always encode; were one not to,
/// `null` is read as unknown and left out.
fn encode<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A v1 text content item.
fn text_item(text: String) -> Value {
    encode(&schema::ToolCallContent::Content(schema::Content::new(
        schema::ContentBlock::from(text),
    )))
}

/// The v1 content items of a v2 diff; `None` when `item` is not one.
fn v2_diff(item: &Value, read: &dyn Fn(&Path) -> Option<String>, done: bool) -> Option<Vec<Value>> {
    if item.get("type").and_then(Value::as_str) != Some("diff") {
        return None;
    }
    let changes = item.get("changes")?.as_array()?;
    let fence = |patch: &str| format!("```diff\n{}\n```", patch.trim_end_matches('\n'));
    let Some(patch) = item
        .get("patch")
        .and_then(|p| p.get("text"))
        .and_then(Value::as_str)
    else {
        return Some(vec![text_item(change_list(changes))]);
    };
    if patch.len() > patch::MAX_PATCH_BYTES {
        return Some(vec![text_item(fence(&patch::cut(patch)))]);
    }
    let Some(files) = patch::parse(patch) else {
        tracing::debug!("a v2 diff's patch is malformed; shown as text");
        return Some(vec![text_item(fence(patch))]);
    };
    // A patch of one file without `---`/`+++` lines is about the one change.
    let sole_path = match (&changes[..], &files[..]) {
        ([change], [_]) => change.get("path").and_then(Value::as_str),
        _ => None,
    };
    let mut out = Vec::new();
    for mut file in files {
        if file.old_path.is_none() && file.new_path.is_none() {
            if let Some(path) = sole_path {
                let op = changes[0].get("operation").and_then(Value::as_str);
                if op != Some("add") {
                    file.old_path = Some(path.to_owned());
                }
                if op != Some("delete") {
                    file.new_path = Some(path.to_owned());
                }
            }
        }
        match patch::texts(&file, read, done) {
            // An unknown old text goes as no `oldText`, which the decoder
            // reads as the `null` the literal sent.
            Some(t) => out.push(encode(&schema::ToolCallContent::Diff(
                schema::Diff::new(t.path, t.new_text).old_text(t.old_text),
            ))),
            None if file.text.trim().is_empty() => {}
            None => out.push(text_item(fence(file.text))),
        }
    }
    if out.is_empty() {
        out.push(text_item(change_list(changes)));
    }
    Some(out)
}

/// The changed paths of a diff without patch text, one per line.
fn change_list(changes: &[Value]) -> String {
    changes
        .iter()
        .filter_map(|c| {
            let path = c.get("path").and_then(Value::as_str)?;
            let op = c
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or("change");
            Some(format!("{op} {path}"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A v2 auth method in its v1 shape: the id is `methodId` on v2, `id` on
/// v1, and v1 marks the agent-handled kind by leaving `type` out.
pub(crate) fn auth_method_to_v1(mut method: Value) -> Value {
    if let Value::Object(m) = &mut method {
        if let Some(id) = m.remove("methodId") {
            m.insert("id".into(), id);
        }
        if m.get("type").and_then(Value::as_str) == Some("agent") {
            m.remove("type");
        }
    }
    method
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
