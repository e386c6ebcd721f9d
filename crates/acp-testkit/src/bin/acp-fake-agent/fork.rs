//! `session/fork` at session cursors, for scenarios with `fork: true`.
//! Before each prompt's turn the agent announces a cursor right before the
//! prompt (anchored to the user message it then echoes with a message id);
//! a fork there opens a session whose history is the source's before the
//! prompt. Any other cursor id is refused with `-32602`, as the schema asks.

use std::path::Path;

use serde_json::{json, Value};

use crate::agent::{str_param, Agent};
use crate::sessions::{self, Live, Record};
use crate::wire::RpcError;

/// Announces the cursor before prompt `turn` of `session_id`, then echoes
/// the prompt's text blocks as `user_message_chunk`s with the message id
/// the cursor names.
pub fn announce(agent: &Agent, session_id: &str, turn: u64, blocks: &Value) {
    let message_id = format!("user-{turn}");
    let cursor = format!("{session_id}/before-{turn}");
    {
        let mut state = agent.state();
        let len = state.store.get(session_id).map_or(0, |r| r.history.len());
        state
            .cursors
            .insert(cursor.clone(), (session_id.to_owned(), len));
    }
    agent.notify_update(
        session_id,
        json!({
            "sessionUpdate": "cursor_update",
            "cursorId": cursor,
            "anchor": { "type": "user_message", "messageId": message_id, "position": "before" },
            "capabilities": { "fork": {} }
        }),
    );
    for block in blocks.as_array().into_iter().flatten() {
        if block.get("type").and_then(Value::as_str) == Some("text") {
            agent.notify_update(
                session_id,
                json!({ "sessionUpdate": "user_message_chunk", "messageId": message_id, "content": block }),
            );
        }
    }
}

/// `session/fork`: a new live session with the source's history before
/// the cursor (all of it without one).
pub fn fork(agent: &Agent, params: &Value) -> Result<Value, RpcError> {
    let source = str_param(params, "sessionId")?;
    let cwd = str_param(params, "cwd")?;
    if !Path::new(cwd).is_absolute() {
        return Err(RpcError::invalid_params(format!(
            "cwd `{cwd}` must be an absolute path"
        )));
    }
    let prefix = agent.session_id_prefix();
    let mut state = agent.state();
    let cut = match params.get("cursorId").filter(|v| !v.is_null()) {
        None => None,
        Some(cursor) => {
            let cursor = cursor.as_str().unwrap_or_default();
            match state.cursors.get(cursor) {
                Some((session, len)) if session == source => Some(*len),
                _ => {
                    return Err(RpcError::invalid_params(format!(
                        "`{cursor}` is not a cursor of session `{source}` that forks"
                    )))
                }
            }
        }
    };
    let Some(record) = state.store.get(source) else {
        return Err(RpcError::invalid_params(format!(
            "session `{source}` not found"
        )));
    };
    let mut history = record.history.clone();
    history.truncate(cut.unwrap_or(usize::MAX));
    let (modes, options) = (
        record.saved.modes.clone().or(agent.scenario.modes.clone()),
        record
            .saved
            .config_options
            .clone()
            .or(agent.scenario.config_options.clone()),
    );
    let id = state.store.fresh_id(&prefix);
    let live = Live::start(&id, modes, options);
    let mut result = json!({ "sessionId": id });
    if let Some(modes) = &live.modes {
        result["modes"] = json!(modes);
    }
    if let Some(options) = &live.config_options {
        result["configOptions"] = json!(options);
    }
    state.store.insert(Record {
        id,
        cwd: cwd.to_owned(),
        title: None,
        updated_at: Some(sessions::now_iso8601()),
        history,
        live: Some(live),
        saved: sessions::Saved::default(),
        mcp_servers: params.get("mcpServers").cloned().unwrap_or(Value::Null),
    });
    Ok(result)
}
