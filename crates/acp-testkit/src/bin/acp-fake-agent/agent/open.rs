//! Opening sessions (new, load, resume, with an optional system prompt),
//! listing, closing and deleting them, and changing their mode and config
//! options.

use std::path::Path;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{not_found, not_open, str_param, Agent, Responder, CHILD_MARK};
use crate::cancel::CancelToken;
use crate::sessions::{self, Job, Live, Record, Store};
use crate::turn::Player;
use crate::wire::{codes, Reply, RpcError};

impl Agent {
    pub(super) fn open_session(self: &Arc<Self>, responder: Responder, params: &Value, how: Open) {
        match self.try_open_session(params, how) {
            Ok((session_id, replay, result)) => {
                for update in &replay {
                    let mut update = update.clone();
                    let sid = match update.as_object_mut().and_then(|m| m.remove(CHILD_MARK)) {
                        Some(Value::String(child)) => child,
                        _ => session_id.clone(),
                    };
                    self.out.notify(
                        "session/update",
                        json!({ "sessionId": sid, "update": update }),
                    );
                }
                // Saved before the answer: a client may stop the agent as
                // soon as it has it.
                self.persist();
                responder.send(Ok(result));
                self.start_session(&session_id);
            }
            Err(error) => responder.send(Err(error)),
        }
    }

    /// Opens a session; returns its id, the updates to replay before the
    /// answer, and the answer.
    fn try_open_session(
        &self,
        params: &Value,
        how: Open,
    ) -> Result<(String, Vec<Value>, Value), RpcError> {
        self.require_auth()?;
        let system_prompt = self.check_system_prompt(params)?;
        let cwd = str_param(params, "cwd")?;
        if !Path::new(cwd).is_absolute() {
            return Err(RpcError::invalid_params(format!(
                "cwd `{cwd}` must be an absolute path"
            )));
        }
        let mut state = self.state();
        let store = &mut state.store;
        let session_id = match how {
            Open::New => {
                let id = store.fresh_id(&self.session_id_prefix());
                store.insert(Record {
                    id: id.clone(),
                    cwd: cwd.to_owned(),
                    title: None,
                    updated_at: Some(sessions::now_iso8601()),
                    history: Vec::new(),
                    live: None,
                    saved: sessions::Saved::default(),
                    mcp_servers: Value::Null,
                });
                id
            }
            Open::Load | Open::Resume => str_param(params, "sessionId")?.to_owned(),
        };
        let record = store.get_mut(&session_id).ok_or_else(|| {
            RpcError::new(
                codes::NOT_FOUND,
                format!("session `{session_id}` not found; list the sessions to see which exist"),
            )
        })?;
        record.cwd = cwd.to_owned();
        record.mcp_servers = params.get("mcpServers").cloned().unwrap_or(Value::Null);
        let modes = record.saved.modes.clone().or(self.scenario.modes.clone());
        let options =
            (record.saved.config_options.clone()).or(self.scenario.config_options.clone());
        let live = record
            .live
            .get_or_insert_with(|| Live::start(&session_id, modes, options));
        let mut result = json!({});
        if let Some(modes) = &live.modes {
            result["modes"] = json!(modes);
        }
        if let Some(options) = &live.config_options {
            result["configOptions"] = json!(options);
        }
        if let Open::New = how {
            result["sessionId"] = json!(session_id);
        }
        let replay = match how {
            Open::Load => record.history.clone(),
            // v2 loads by resuming with a replay.
            Open::Resume if params.get("replayFrom").is_some_and(Value::is_object) => {
                record.history.clone()
            }
            Open::New | Open::Resume => Vec::new(),
        };
        match system_prompt {
            Some(sp) => state.system_prompts.insert(session_id.clone(), sp),
            None => state.system_prompts.remove(&session_id),
        };
        Ok((session_id, replay, result))
    }

    /// `systemPrompt` of a new/load/resume, checked as the spec asks of an
    /// agent: only when advertised, a mode it supports, text content only,
    /// not empty; anything else is refused (`-32602`) and opens nothing.
    fn check_system_prompt(&self, params: &Value) -> Result<Option<Value>, RpcError> {
        let Some(sp) = params.get("systemPrompt").filter(|v| !v.is_null()) else {
            return Ok(None);
        };
        let caps = self.scenario.agent_capabilities();
        let Some(support) = caps
            .pointer("/sessionCapabilities/systemPrompt")
            .filter(|v| v.is_object())
        else {
            return Err(RpcError::invalid_params(
                "systemPrompt was sent, but this agent does not advertise sessionCapabilities.systemPrompt",
            ));
        };
        match sp.get("mode").and_then(Value::as_str) {
            Some("append") => {}
            Some("override")
                if support
                    .pointer("/mode/override")
                    .is_some_and(Value::is_object) => {}
            other => {
                return Err(RpcError::invalid_params(format!(
                    "systemPrompt mode {other:?} is not supported"
                )))
            }
        }
        let content = sp.get("content").and_then(Value::as_array);
        let text_only = content.is_some_and(|c| {
            !c.is_empty()
                && c.iter()
                    .all(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        });
        if !text_only {
            return Err(RpcError::invalid_params(
                "systemPrompt content must be a non-empty list of text blocks",
            ));
        }
        Ok(Some(sp.clone()))
    }

    /// Queues the scenario's `sessionStart` steps on the session's thread.
    fn start_session(self: &Arc<Self>, session_id: &str) {
        if self.scenario.session_start.is_empty() {
            return;
        }
        let agent = self.clone();
        let id = session_id.to_owned();
        let job: Job = Box::new(move || {
            let Some(cwd) = agent.state().store.get(&id).map(|r| r.cwd.clone()) else {
                return;
            };
            let cancel = Arc::new(CancelToken::default());
            let mut player = Player::new(&agent, &id, &cwd, "", cancel, "end_turn");
            player.run(&agent.scenario.session_start);
        });
        self.queue(session_id, job);
    }

    pub(super) fn list(&self, params: &Value) -> Reply {
        let cwd = params.get("cwd").and_then(Value::as_str);
        let cursor = params.get("cursor").and_then(Value::as_str);
        let state = self.state();
        let (sessions, next) = state
            .store
            .list(cwd, cursor, self.scenario.list_page_size)
            .map_err(RpcError::invalid_params)?;
        let mut result = json!({ "sessions": sessions });
        if let Some(next) = next {
            result["nextCursor"] = json!(next);
        }
        Ok(result)
    }

    /// `session/close` (the session stays listed) or `session/delete` (it is
    /// gone). Both cancel its running turns.
    pub(super) fn close(&self, params: &Value, delete: bool) -> Reply {
        let session_id = str_param(params, "sessionId")?;
        let mut state = self.state();
        let Some(record) = state.store.get_mut(session_id) else {
            return Err(not_found(session_id));
        };
        if let Some(live) = record.close() {
            live.cancel_turns();
        }
        if delete {
            state.store.remove(session_id);
        }
        drop(state);
        self.persist();
        Ok(json!({}))
    }

    pub(super) fn set_mode(&self, responder: Responder, params: &Value) {
        let changed = (|| {
            let session_id = str_param(params, "sessionId")?;
            let mode_id = str_param(params, "modeId")?;
            let mut state = self.state();
            let live = open_session(&mut state.store, session_id)?;
            let modes = live
                .modes
                .as_mut()
                .ok_or_else(|| RpcError::invalid_params("this session has no modes"))?;
            if !modes.available_modes.iter().any(|m| m.id == mode_id) {
                return Err(RpcError::invalid_params(format!(
                    "mode `{mode_id}` is not one of the session's availableModes"
                )));
            }
            modes.current_mode_id = mode_id.to_owned();
            Ok((session_id.to_owned(), mode_id.to_owned()))
        })();
        match changed {
            Ok((session_id, mode_id)) => {
                self.persist();
                responder.send(Ok(json!({})));
                self.notify_update(
                    &session_id,
                    json!({ "sessionUpdate": "current_mode_update", "currentModeId": mode_id }),
                );
            }
            Err(error) => responder.send(Err(error)),
        }
    }

    pub(super) fn set_config_option(&self, responder: Responder, params: &Value) {
        let changed = (|| {
            let session_id = str_param(params, "sessionId")?;
            let mut state = self.state();
            let live = open_session(&mut state.store, session_id)?;
            let options = live
                .config_options
                .as_mut()
                .ok_or_else(|| RpcError::invalid_params("this session has no config options"))?;
            sessions::set_config_option(options, params).map_err(RpcError::invalid_params)?;
            Ok((session_id.to_owned(), options.clone()))
        })();
        match changed {
            Ok((session_id, options)) => {
                self.persist();
                responder.send(Ok(json!({ "configOptions": options })));
                self.notify_update(
                    &session_id,
                    json!({ "sessionUpdate": "config_option_update", "configOptions": options }),
                );
            }
            Err(error) => responder.send(Err(error)),
        }
    }

    /// The prefix of new session ids (with the start time when asked).
    pub(crate) fn session_id_prefix(&self) -> String {
        let prefix = &self.scenario.session_id_prefix;
        if !self.scenario.unique_session_ids {
            return prefix.clone();
        }
        static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        let start = START.get_or_init(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        });
        format!("{prefix}{start}-")
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) enum Open {
    New,
    Load,
    Resume,
}

fn open_session<'a>(store: &'a mut Store, session_id: &str) -> Result<&'a mut Live, RpcError> {
    let record = store
        .get_mut(session_id)
        .ok_or_else(|| not_found(session_id))?;
    record.live.as_mut().ok_or_else(|| not_open(session_id))
}
