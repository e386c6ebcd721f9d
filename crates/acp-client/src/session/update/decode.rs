//! The two-step decoder behind [`decode_session_notification`].
//!
//! Step one peeks at the discriminators; step two decodes only the shape the
//! discriminator names. The hot path (a `*_chunk` carrying one plain text
//! block) never builds a `serde_json::Value`: it borrows the pieces it needs
//! straight from the input and constructs the typed chunk. Everything else
//! goes through `Value`, where a missing or odd field can be inspected and
//! the whole update kept as `Unknown` instead of failing.

// `Error`'s size is the crate's choice (error.rs).
#![allow(clippy::result_large_err)]

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{
    schema, Content, ContentChunk, Notice, PlanBody, PlanDocument, PlanEntry, SessionId,
    SessionInfo, SessionMessagePatch, SessionNotification, SessionUpdate, SubagentPatch,
    SubagentState, TerminalExit, TerminalMeta, ToolCallFields, ToolCallId, ToolContent, ToolKind,
    ToolStatus, Usage,
};
use crate::error::Error;

mod fast;

use fast::decode_fast;
pub use fast::decode_session_update_line;

/// Decode the params of a `session/update` notification.
///
/// Never fails because of an unknown `sessionUpdate` kind, content block
/// type, tool status or kind, or plan status or priority: those become
/// `Unknown` variants or kept wire names. Fails only when the envelope itself
/// is unusable: params that are not a JSON object, or no string `sessionId`.
pub fn decode_session_notification(params: &RawValue) -> Result<SessionNotification, Error> {
    if let Some(fast) = decode_fast(params.get()) {
        return Ok(fast);
    }
    decode_notification_value(params.get())
}

/// Decode the params of a `session/update` whose line
/// [`decode_session_update_line`] turned down (the engine offers every line
/// to it first): the one-pass shapes would be turned down again, so only
/// the general decoder runs.
pub(crate) fn decode_declined_session_notification(
    params: &RawValue,
) -> Result<SessionNotification, Error> {
    decode_notification_value(params.get())
}

/// Decode one tool call object (as in `tool_call`, `tool_call_update` and the
/// `toolCall` of a permission request) leniently: only a missing or non-text
/// `toolCallId` is an error; odd values of other fields are dropped (or kept
/// as `Unknown`) one by one.
pub fn decode_tool_call_fields(v: &Value) -> Result<ToolCallFields, Error> {
    let obj = v.as_object().ok_or_else(|| Error::Decode {
        what: "a tool call".into(),
        reason: format!("expected a JSON object, got {}", type_name(v)),
    })?;
    tool_call_from_map(obj)
}

fn tool_call_from_map(obj: &Map<String, Value>) -> Result<ToolCallFields, Error> {
    let id = match obj.get("toolCallId") {
        Some(Value::String(s)) => ToolCallId::new(s.as_str()),
        // Numbers are unambiguous ids too; keep them rather than drop the call.
        Some(Value::Number(n)) => ToolCallId::new(n.to_string()),
        _ => {
            return Err(Error::Decode {
                what: "a tool call".into(),
                reason: "it has no `toolCallId` string".into(),
            })
        }
    };
    let mut fields = ToolCallFields::new(id);
    fields.title = string_field(obj, "title");
    fields.name = string_field(obj, "name");
    fields.kind = string_field(obj, "kind").map(|k| ToolKind::from_wire(&k));
    fields.status = string_field(obj, "status").map(|s| ToolStatus::from_wire(&s));
    fields.content = match obj.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items.iter().map(decode_tool_content).collect()),
        // A single item where a list belongs is still unambiguous.
        Some(item @ Value::Object(_)) => Some(vec![decode_tool_content(item)]),
        Some(other) => {
            tracing::debug!(value = %other, "ignoring tool call `content` that is not a list");
            None
        }
    };
    fields.locations = match obj.get("locations") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(decode_each(items, "tool call location")),
        Some(other) => {
            tracing::debug!(value = %other, "ignoring tool call `locations` that is not a list");
            None
        }
    };
    fields.raw_input = non_null(obj.get("rawInput"));
    fields.raw_output = non_null(obj.get("rawOutput"));
    fields.terminal_meta = obj.get("_meta").and_then(terminal_meta);
    Ok(fields)
}

/// The terminal an agent runs itself, from a tool call's `_meta`: codex-acp
/// 2.6.0 sends `terminal_info {terminal_id}` when the command starts,
/// `terminal_output_delta {terminal_id, data}` (or Zed's `terminal_output`)
/// per chunk and `terminal_exit {terminal_id, exit_code, signal}` at the end.
/// A key of the wrong shape is ignored on its own.
fn terminal_meta(meta: &Value) -> Option<TerminalMeta> {
    let meta = meta.as_object()?;
    let part = |key: &str| meta.get(key).and_then(Value::as_object);
    let id_of = |o: &Map<String, Value>| string_field(o, "terminal_id");
    let info = part("terminal_info");
    let delta = part("terminal_output_delta").or_else(|| part("terminal_output"));
    let exit = part("terminal_exit");
    let terminal_id = info
        .and_then(id_of)
        .or_else(|| delta.and_then(id_of))
        .or_else(|| exit.and_then(id_of))?;
    Some(TerminalMeta {
        terminal_id,
        output: delta.and_then(|d| string_field(d, "data")),
        exit: exit.map(|e| TerminalExit {
            exit_code: e.get("exit_code").and_then(Value::as_i64),
            signal: string_field(e, "signal"),
        }),
        ..TerminalMeta::default()
    })
}

/// Decode a content block leniently: a block of a known `type` that matches
/// the schema becomes [`Content::Known`], anything else [`Content::Unknown`]
/// with the JSON kept whole. A bare string and an object with a `text`
/// string but no `type` (both seen in agents' docs) are read as text blocks.
pub fn decode_content(v: Value) -> Content {
    match decode_content_ref(&v) {
        Some(known) => Content::Known(known),
        None => Content::Unknown(v),
    }
}

// ---------------------------------------------------------------------------
// General path (the hot path is in `fast.rs`).

fn decode_notification_value(params: &str) -> Result<SessionNotification, Error> {
    let value: Value = serde_json::from_str(params).map_err(|e| params_error(e.to_string()))?;
    decode_value_notification(value)
}

/// [`decode_notification_value`] of params already parsed (the v2 decoder
/// hands its v1-shaped updates here).
pub(super) fn decode_value_notification(value: Value) -> Result<SessionNotification, Error> {
    let Value::Object(mut obj) = value else {
        return Err(params_error(format!(
            "expected a JSON object, got {}",
            type_name(&value)
        )));
    };
    let session_id = match obj.get("sessionId") {
        Some(Value::String(s)) => SessionId::new(s.as_str()),
        _ => {
            return Err(params_error(
                "there is no `sessionId` string, so the update cannot be routed to a session"
                    .into(),
            ))
        }
    };
    let wrapped = matches!(obj.get("update"), Some(Value::Object(_)));
    let update = match obj.remove("update") {
        Some(update) if wrapped => update,
        other => {
            // Some agents' docs put the update fields straight into params
            // (no `update` wrapper): treat params as the update then.
            if let Some(other) = other {
                obj.insert("update".into(), other);
            }
            Value::Object(obj)
        }
    };
    Ok(SessionNotification {
        session_id,
        update: decode_update(update),
    })
}

/// Decodes one update object; anything unusable becomes `Unknown`.
pub(super) fn decode_update(update: Value) -> SessionUpdate {
    let kind = discriminator(&update);
    let decoded = update.as_object().and_then(|obj| decode_known(&kind, obj));
    match decoded {
        Some(decoded) => decoded,
        None => {
            tracing::debug!(kind = %kind, "keeping session/update of unknown kind or shape");
            SessionUpdate::Unknown { kind, raw: update }
        }
    }
}

/// `sessionUpdate`, else the legacy `kind` (an old draft used `kind` as the
/// discriminator), else empty. `kind` is only a fallback: in a tool call it
/// is the tool kind.
fn discriminator(update: &Value) -> String {
    let tag = match update.get("sessionUpdate") {
        Some(tag) => tag.as_str(),
        None => update.get("kind").and_then(Value::as_str),
    };
    tag.unwrap_or_default().to_owned()
}

fn params_error(reason: String) -> Error {
    Error::Decode {
        what: "session/update params".into(),
        reason,
    }
}

fn decode_known(kind: &str, u: &Map<String, Value>) -> Option<SessionUpdate> {
    Some(match kind {
        // `*_text_update` with a `text` string: the names of an early draft,
        // still in circulating docs.
        "agent_message_chunk" | "agent_message_text_update" => {
            SessionUpdate::AgentMessageChunk(decode_chunk(u)?)
        }
        "agent_thought_chunk" | "agent_thought_text_update" => {
            SessionUpdate::AgentThoughtChunk(decode_chunk(u)?)
        }
        "user_message_chunk" => SessionUpdate::UserMessageChunk(decode_chunk(u)?),
        // `message` with a `role`: another early draft. Without a role it is
        // ambiguous and stays Unknown.
        "message" => match u.get("role").and_then(Value::as_str)? {
            "assistant" | "agent" => SessionUpdate::AgentMessageChunk(decode_chunk(u)?),
            "user" => SessionUpdate::UserMessageChunk(decode_chunk(u)?),
            _ => return None,
        },
        "tool_call" => SessionUpdate::ToolCall(tool_call_in_update(u)?),
        "tool_call_update" => SessionUpdate::ToolCallUpdate(tool_call_in_update(u)?),
        "plan" => SessionUpdate::Plan {
            entries: decode_plan(u.get("entries")?.as_array()?),
        },
        "available_commands_update" => SessionUpdate::AvailableCommandsUpdate {
            available_commands: decode_each(
                first_of(u, &["availableCommands", "commands"])?.as_array()?,
                "available command",
            ),
        },
        "current_mode_update" => SessionUpdate::CurrentModeUpdate {
            current_mode_id: first_of(u, &["currentModeId", "modeId"])?
                .as_str()?
                .to_owned(),
        },
        "config_option_update" => SessionUpdate::ConfigOptionUpdate {
            config_options: decode_each(u.get("configOptions")?.as_array()?, "config option"),
        },
        "session_info_update" => SessionUpdate::SessionInfoUpdate(SessionInfo {
            title: nullable_string(u, "title"),
            updated_at: nullable_string(u, "updatedAt"),
        }),
        "usage_update" => SessionUpdate::UsageUpdate(Usage {
            used: u.get("used")?.as_u64()?,
            size: u.get("size")?.as_u64()?,
            cost: non_null(u.get("cost")),
        }),
        "notice" => SessionUpdate::Notice(Notice {
            severity: u.get("severity")?.as_str()?.to_owned(),
            title: u
                .get("title")?
                .as_str()
                .filter(|t| !t.is_empty())?
                .to_owned(),
            description: nullable_string(u, "description").flatten(),
        }),
        "compaction_update" => SessionUpdate::CompactionUpdate {
            id: u.get("compactionId")?.as_str()?.to_owned(),
            status: u.get("status")?.as_str()?.to_owned(),
            summary: u
                .get("summary")
                .and_then(Value::as_array)
                .map(|blocks| blocks.iter().cloned().map(decode_content).collect()),
            error: nullable_string(u, "error").flatten(),
        },
        "cursor_update" => SessionUpdate::CursorUpdate {
            cursor_id: u.get("cursorId")?.as_str()?.to_owned(),
            // An anchor this client cannot read cannot be placed: no fork
            // at it (the schema says never to guess).
            anchor: u
                .get("anchor")
                .filter(|a| !a.is_null())
                .and_then(|a| serde_json::from_value(a.clone()).ok()),
            // Patch semantics: omitted leaves it, `null` clears it.
            fork: u
                .get("capabilities")
                .map(|caps| caps.get("fork").is_some_and(Value::is_object)),
        },
        "compaction_summary_chunk" => SessionUpdate::CompactionSummaryChunk {
            id: u.get("compactionId")?.as_str()?.to_owned(),
            content: decode_content(u.get("content")?.clone()),
        },
        "plan_update" => SessionUpdate::PlanUpdate(decode_plan_update(u.get("plan")?)?),
        "plan_removed" => SessionUpdate::PlanRemoved {
            plan_id: u.get("planId")?.as_str()?.to_owned(),
        },
        "subagent_update" => SessionUpdate::SubagentUpdate(decode_subagent(u)?),
        "session_message" => SessionUpdate::SessionMessage(SessionMessagePatch {
            message_id: u.get("messageId")?.as_str()?.to_owned(),
            sender_session_id: nullable_string(u, "senderSessionId"),
            recipient_session_id: nullable_string(u, "recipientSessionId"),
            content: match u.get("content") {
                None => None,
                Some(Value::Null) => Some(Vec::new()),
                Some(Value::Array(blocks)) => {
                    Some(blocks.iter().cloned().map(decode_content).collect())
                }
                Some(_) => None,
            },
        }),
        "session_message_chunk" => SessionUpdate::SessionMessageChunk {
            message_id: u.get("messageId")?.as_str()?.to_owned(),
            content: decode_content(u.get("content")?.clone()),
        },
        _ => return None,
    })
}

/// `plan_update.plan`: `{type: "items", planId, entries}` or
/// `{type: "markdown", planId, content, path?}`.
fn decode_plan_update(plan: &Value) -> Option<PlanDocument> {
    let p = plan.as_object()?;
    let plan_id = p.get("planId")?.as_str()?.to_owned();
    let body = match p.get("type")?.as_str()? {
        "items" => PlanBody::Items {
            entries: decode_plan(p.get("entries")?.as_array()?),
        },
        "markdown" => PlanBody::Markdown {
            content: p.get("content")?.as_str()?.to_owned(),
            // The spec says absolute; a relative path is no file to open.
            path: string_field(p, "path").filter(|path| std::path::Path::new(path).is_absolute()),
        },
        _ => return None,
    };
    Some(PlanDocument { plan_id, body })
}

/// `subagent_update`: patch semantics (omitted = unchanged, null = cleared).
fn decode_subagent(u: &Map<String, Value>) -> Option<SubagentPatch> {
    Some(SubagentPatch {
        session_id: u.get("sessionId")?.as_str()?.to_owned(),
        title: nullable_string(u, "title"),
        description: nullable_string(u, "description"),
        state: match u.get("state") {
            None => None,
            Some(Value::Null) => Some(None),
            Some(Value::Object(o)) => string_field(o, "state").map(|state| {
                Some(SubagentState {
                    state,
                    stop_reason: string_field(o, "stopReason"),
                })
            }),
            Some(_) => None,
        },
        can_cancel: match u.get("capabilities") {
            None => None,
            Some(Value::Object(c)) => Some(c.get("cancel").is_some_and(Value::is_object)),
            Some(_) => Some(false),
        },
        cwd: nullable_string(u, "cwd"),
    })
}

fn first_of<'a>(u: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a Value> {
    keys.iter().find_map(|k| u.get(*k))
}

fn tool_call_in_update(u: &Map<String, Value>) -> Option<ToolCallFields> {
    match tool_call_from_map(u) {
        Ok(fields) => Some(fields),
        Err(e) => {
            tracing::debug!(error = %e, "keeping tool call update without a usable id as unknown");
            None
        }
    }
}

fn decode_chunk(u: &Map<String, Value>) -> Option<ContentChunk> {
    let content = match u.get("content") {
        Some(c) => chunk_content(c, true)?,
        None => Content::text(u.get("text")?.as_str()?),
    };
    Some(ContentChunk {
        content,
        message_id: string_field(u, "messageId"),
    })
}

/// The content of a chunk. Besides a block, accepts a list of blocks (one
/// block, or text blocks that join into one) and, one level deep, a message
/// wrapper `{role, content}` (both seen in agents' docs).
fn chunk_content(c: &Value, unwrap: bool) -> Option<Content> {
    match c {
        Value::Array(items) => match items.as_slice() {
            [] => None,
            [one] => Some(decode_content(one.clone())),
            many => {
                let mut text = String::new();
                for item in many {
                    text.push_str(decode_content_ref(item).as_ref().and_then(block_text)?);
                }
                Some(Content::text(text))
            }
        },
        Value::Object(o) if unwrap && !o.contains_key("type") && !o.contains_key("text") => {
            match o.get("content") {
                Some(inner) => chunk_content(inner, false),
                None => Some(Content::Unknown(c.clone())),
            }
        }
        other => Some(decode_content(other.clone())),
    }
}

fn block_text(block: &schema::ContentBlock) -> Option<&str> {
    match block {
        schema::ContentBlock::Text(t) => Some(&t.text),
        _ => None,
    }
}

const CONTENT_BLOCK_TYPES: [&str; 5] = ["text", "image", "audio", "resource_link", "resource"];

fn decode_content_ref(v: &Value) -> Option<schema::ContentBlock> {
    match v {
        Value::String(s) => Some(schema::ContentBlock::Text(schema::TextContent::new(
            s.as_str(),
        ))),
        Value::Object(o) => match o.get("type") {
            Some(Value::String(t)) if CONTENT_BLOCK_TYPES.contains(&t.as_str()) => {
                match schema::ContentBlock::deserialize(v) {
                    Ok(block) => Some(block),
                    Err(e) => {
                        tracing::debug!(error = %e, "keeping malformed content block as unknown");
                        None
                    }
                }
            }
            None => match o.get("text") {
                Some(Value::String(text)) => Some(schema::ContentBlock::Text(
                    schema::TextContent::new(text.as_str()),
                )),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

fn decode_tool_content(item: &Value) -> ToolContent {
    decode_tool_content_known(item).unwrap_or_else(|| ToolContent::Unknown { raw: item.clone() })
}

fn decode_tool_content_known(item: &Value) -> Option<ToolContent> {
    let obj = item.as_object()?;
    let ty = obj.get("type")?.as_str()?;
    Some(match ty {
        "content" => ToolContent::Content {
            content: decode_content(obj.get("content")?.clone()),
        },
        "diff" => ToolContent::Diff {
            path: obj.get("path")?.as_str()?.into(),
            old_text: match obj.get("oldText") {
                None | Some(Value::Null) => None,
                Some(Value::String(s)) => Some(s.clone()),
                // Reading an odd oldText as "new file" would let a review
                // overwrite a file: keep the whole item unknown instead.
                Some(_) => return None,
            },
            new_text: obj.get("newText")?.as_str()?.to_owned(),
        },
        "terminal" => ToolContent::Terminal {
            terminal_id: obj.get("terminalId")?.as_str()?.to_owned(),
        },
        "session" => ToolContent::Session {
            session_id: obj.get("sessionId")?.as_str()?.to_owned(),
        },
        // A bare content block where a `{type: "content"}` wrapper belongs.
        t if CONTENT_BLOCK_TYPES.contains(&t) => ToolContent::Content {
            content: decode_content(item.clone()),
        },
        _ => return None,
    })
}

fn decode_plan(entries: &[Value]) -> Vec<PlanEntry> {
    entries
        .iter()
        .filter_map(|e| match e {
            Value::Object(o) => Some(PlanEntry {
                content: string_field(o, "content").unwrap_or_default(),
                priority: string_field(o, "priority").unwrap_or_default(),
                status: string_field(o, "status").unwrap_or_default(),
            }),
            Value::String(s) => Some(PlanEntry {
                content: s.clone(),
                priority: String::new(),
                status: String::new(),
            }),
            other => {
                tracing::debug!(entry = %other, "dropping plan entry that is not an object");
                None
            }
        })
        .collect()
}

/// Decodes each item with its schema type, leaving out (and logging) the
/// ones that do not match, so one odd item never loses the list.
fn decode_each<T: for<'de> Deserialize<'de>>(items: &[Value], what: &str) -> Vec<T> {
    items
        .iter()
        .filter_map(|item| match T::deserialize(item) {
            Ok(v) => Some(v),
            Err(e) => {
                tracing::debug!(error = %e, item = %item, "dropping {what} that does not match the schema");
                None
            }
        })
        .collect()
}

fn string_field(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Absent -> unchanged (`None`), null -> cleared (`Some(None)`). A value of
/// another type is ignored (unchanged).
fn nullable_string(obj: &Map<String, Value>, key: &str) -> Option<Option<String>> {
    match obj.get(key)? {
        Value::Null => Some(None),
        Value::String(s) => Some(Some(s.clone())),
        _ => None,
    }
}

fn non_null(v: Option<&Value>) -> Option<Value> {
    v.filter(|v| !v.is_null()).cloned()
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
pub(super) fn decode_general_for_test(params: &str) -> Result<SessionNotification, Error> {
    decode_notification_value(params)
}

#[cfg(test)]
pub(super) fn decode_fast_for_test(params: &str) -> Option<SessionNotification> {
    decode_fast(params)
}
