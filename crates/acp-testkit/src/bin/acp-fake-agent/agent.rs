//! The agent: reads the client's messages from stdin and answers every
//! client -> agent method. Turns run on each session's own thread (see
//! `sessions::Live`), so this loop keeps reading while a turn waits for the
//! client, and sees `session/cancel` at once.
//!
//! Lock order: stdout (`Out::lock`) before state (`Agent::state`). Code that
//! holds the state lock never writes to stdout.

use std::io::{self, BufRead, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use serde_json::{json, Value};

use crate::cancel::CancelToken;
use crate::scenario::{pick_turn, InitFault, Scenario, Turn};
use crate::sessions::{self, Job, Live, Record, Store};
use crate::turn::Player;
use crate::wire::{self, codes, update_notification, Incoming, Out, Pending, Reply, RpcError};

/// The whole fake agent.
#[derive(Debug)]
pub struct Agent {
    pub scenario: Scenario,
    pub out: Out,
    pub pending: Pending,
    state: Mutex<State>,
    stdin_stopped: AtomicBool,
    /// The client offered v2 and the scenario speaks it.
    pub v2: AtomicBool,
}

#[derive(Debug)]
/// What changes while the agent runs.
pub struct State {
    authenticated: bool,
    pub store: Store,
    /// Child session -> the session that announced it (`subagent` step):
    /// a child's updates are recorded in its parent's history, marked
    /// with [`CHILD_MARK`], so a load replays them with the child's id.
    pub children: std::collections::HashMap<String, String>,
    /// The `systemPrompt` each session was opened with.
    pub system_prompts: std::collections::HashMap<String, Value>,
    /// Session cursors announced (`fork`): id -> (session, history length
    /// before the cursor).
    pub cursors: std::collections::HashMap<String, (String, usize)>,
}

/// The key that marks a recorded update as a child session's.
pub const CHILD_MARK: &str = "_fakeChildSessionId";

/// Answers one request exactly once: if it is dropped unanswered (a bug, or
/// a job that could not run) it answers with an internal error.
#[derive(Debug)]
pub struct Responder {
    agent: Arc<Agent>,
    id: Option<Value>,
}

impl Responder {
    /// Sends the answer.
    pub fn send(mut self, reply: Reply) {
        if let Some(id) = self.id.take() {
            self.agent.out.respond(&id, &reply);
        }
    }

    /// Gives up the duty to answer (the `never` initialize fault).
    fn forget(mut self) {
        self.id = None;
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            tracing::error!(%id, "request left unanswered; answering with an internal error");
            let error = RpcError::new(
                codes::INTERNAL_ERROR,
                "the fake agent failed to answer this request",
            );
            self.agent.out.respond(&id, &Err(error));
        }
    }
}

impl Agent {
    /// An agent playing `scenario`, with no sessions open yet.
    pub fn new(scenario: Scenario) -> Arc<Self> {
        let mut store = Store::new(&scenario.sessions);
        if let Some(path) = &scenario.session_store {
            if let Err(err) = store.merge_file(path) {
                tracing::error!("{err}; starting with the scenario's sessions only");
            }
        }
        Arc::new(Self {
            scenario,
            out: Out::new(),
            pending: Pending::default(),
            state: Mutex::new(State {
                authenticated: false,
                store,
                children: std::collections::HashMap::new(),
                system_prompts: std::collections::HashMap::new(),
                cursors: std::collections::HashMap::new(),
            }),
            stdin_stopped: AtomicBool::new(false),
            v2: AtomicBool::new(false),
        })
    }

    /// Locks the mutable state (never write to stdout while holding it).
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock()
    }

    /// Serves stdin until it closes.
    pub fn serve(self: &Arc<Self>) {
        let stdin = io::stdin();
        let mut input = stdin.lock();
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(err) => {
                    tracing::warn!("reading stdin failed: {err}");
                    break;
                }
            }
            if self.stdin_stopped.load(Ordering::SeqCst) {
                tracing::info!("not reading stdin any more, as the scenario asked");
                loop {
                    std::thread::park();
                }
            }
            let text = line.trim_ascii();
            if !text.is_empty() {
                self.handle_line(text);
            }
        }
        tracing::info!("stdin closed; exiting");
        self.out.lock().flush();
    }

    /// Writes the sessions to the scenario's `sessionStore`, if it has one.
    pub fn persist(&self) {
        let Some(path) = &self.scenario.session_store else {
            return;
        };
        if let Err(err) = self.state().store.save_file(path) {
            tracing::error!("{err}");
        }
    }

    /// Makes the reader stop consuming stdin (the `stopReadingStdin` step).
    pub fn stop_reading_stdin(&self) {
        self.stdin_stopped.store(true, Ordering::SeqCst);
    }

    fn handle_line(self: &Arc<Self>, line: &[u8]) {
        let message: Value = match serde_json::from_slice(line) {
            Ok(message) => message,
            Err(err) => {
                tracing::warn!("unparsable line from the client: {err}");
                let error = RpcError::new(codes::PARSE_ERROR, format!("parse error: {err}"));
                self.out.respond(&Value::Null, &Err(error));
                return;
            }
        };
        match wire::classify(message) {
            Incoming::Request { id, method, params } => {
                tracing::info!(%id, method, "request");
                let responder = Responder {
                    agent: self.clone(),
                    id: Some(id),
                };
                self.handle_request(responder, &method, params);
            }
            Incoming::Notification { method, params } => {
                tracing::info!(method, "notification");
                self.handle_notification(&method, &params);
            }
            Incoming::Response { id, reply } => {
                if !self.pending.deliver(&id, reply) {
                    tracing::warn!(%id, "response to a request this agent never sent");
                }
            }
            Incoming::Invalid { id } => {
                tracing::warn!("message that is not JSON-RPC");
                let error = RpcError::new(codes::INVALID_REQUEST, "not a JSON-RPC 2.0 message");
                self.out.respond(&id.unwrap_or(Value::Null), &Err(error));
            }
        }
    }

    fn handle_notification(&self, method: &str, params: &Value) {
        match method {
            "session/cancel" => {
                let Some(session_id) = params.get("sessionId").and_then(Value::as_str) else {
                    tracing::warn!("session/cancel without a sessionId");
                    return;
                };
                let state = self.state();
                match state.store.get(session_id).and_then(|r| r.live.as_ref()) {
                    Some(live) => live.cancel_turns(),
                    None => tracing::warn!(session_id, "session/cancel for no open session"),
                }
            }
            // Answering -32800 would be allowed; finishing the work is too.
            "$/cancel_request" => tracing::info!("$/cancel_request ignored: requests finish"),
            other => tracing::info!(method = other, "unknown notification ignored"),
        }
    }

    fn handle_request(self: &Arc<Self>, responder: Responder, method: &str, params: Value) {
        let gated = matches!(
            method,
            "session/load"
                | "session/list"
                | "session/resume"
                | "session/close"
                | "session/delete"
                | "session/fork"
        );
        // v2's baseline: every agent lists, resumes and closes sessions.
        let v2 = self.v2.load(Ordering::SeqCst);
        let baseline = v2 && matches!(method, "session/list" | "session/resume" | "session/close");
        // v2 renamed the auth methods; each version answers only its own.
        let wrong_version = match method {
            "authenticate" | "logout" => v2,
            "auth/login" | "auth/logout" => !v2,
            _ => false,
        };
        if wrong_version {
            let error = RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("`{method}` is not a method of this protocol version"),
            );
            return responder.send(Err(error));
        }
        if gated && !baseline && !self.scenario.supports(method) {
            let error = RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("`{method}` is not supported: the agent did not advertise it"),
            );
            return responder.send(Err(error));
        }
        match method {
            "initialize" => self.initialize(responder, &params),
            "authenticate" | "auth/login" => match &self.scenario.auth_elicitation {
                Some(ask) => self.authenticate_after_asking(responder, &params, ask.clone()),
                None => responder.send(self.authenticate(&params)),
            },
            "logout" | "auth/logout" => responder.send(self.logout()),
            "session/new" => self.open_session(responder, &params, Open::New),
            "session/fork" => responder.send(crate::fork::fork(self, &params)),
            "session/load" => self.open_session(responder, &params, Open::Load),
            "session/resume" => self.open_session(responder, &params, Open::Resume),
            "session/list" => responder.send(self.list(&params)),
            "session/close" => responder.send(self.close(&params, false)),
            "session/delete" => responder.send(self.close(&params, true)),
            "session/set_mode" => self.set_mode(responder, &params),
            "session/set_config_option" => self.set_config_option(responder, &params),
            "session/prompt" => self.prompt(responder, &params),
            other => responder.send(Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("method `{other}` not found"),
            ))),
        }
    }

    fn initialize(self: &Arc<Self>, responder: Responder, params: &Value) {
        let init = &self.scenario.initialize;
        let info = init.agent_info.clone().unwrap_or_else(|| {
            json!({
                "name": "acp-fake-agent",
                "title": "ACP fake agent",
                "version": env!("CARGO_PKG_VERSION")
            })
        });
        let offered = params.get("protocolVersion").and_then(Value::as_u64);
        let v2 = self.scenario.v2 && offered.is_some_and(|v| v >= 2);
        self.v2.store(v2, Ordering::SeqCst);
        let result = if v2 {
            // The v1 capabilities in their v2 places (claude-agent-acp
            // 0.101.0's shape: session.prompt, session.mcp, systemPrompt).
            let v1 = self.scenario.agent_capabilities();
            let mut session = json!({ "mcp": { "stdio": {}, "http": {} } });
            if let Some(prompt) = v1.get("promptCapabilities") {
                session["prompt"] = prompt.clone();
            }
            if let Some(sp) = v1.pointer("/sessionCapabilities/systemPrompt") {
                session["systemPrompt"] = sp.clone();
            }
            // v2 auth methods: `methodId`, and `type: "agent"` for the
            // ones the agent handles itself.
            let auth_methods: Vec<Value> = self
                .scenario
                .auth_methods()
                .into_iter()
                .map(|mut m| {
                    if let Some(o) = m.as_object_mut() {
                        if let Some(id) = o.remove("id") {
                            o.insert("methodId".into(), id);
                        }
                        o.entry("type").or_insert_with(|| json!("agent"));
                    }
                    m
                })
                .collect();
            json!({
                "protocolVersion": 2,
                "info": info,
                "capabilities": { "session": session },
                "authMethods": auth_methods,
            })
        } else {
            json!({
                "protocolVersion": init.protocol_version,
                "agentCapabilities": self.scenario.agent_capabilities(),
                "authMethods": self.scenario.auth_methods(),
                "agentInfo": info,
            })
        };
        match &init.fault {
            None => responder.send(Ok(result)),
            Some(InitFault::Exit { stderr, code }) => exit_with(&self.out, stderr, *code),
            Some(InitFault::Never) => {
                tracing::info!("never answering initialize, as the scenario asked");
                responder.forget();
            }
            Some(InitFault::Delay { ms }) => {
                let ms = *ms;
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(ms));
                    responder.send(Ok(result));
                });
            }
        }
    }

    fn authenticate(&self, params: &Value) -> Reply {
        let method_id = str_param(params, "methodId")?;
        let methods = self.scenario.auth_methods();
        let method = methods
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(method_id))
            .ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "unknown auth method `{method_id}`; use one of the ids from initialize"
                ))
            })?;
        if method.get("type").and_then(Value::as_str) == Some("terminal") {
            return Err(RpcError::invalid_params(format!(
                "`{method_id}` is a terminal auth method: run the agent's login command instead of sending authenticate"
            )));
        }
        self.state().authenticated = true;
        if let Some(path) = &self.scenario.auth_file {
            if let Err(err) = std::fs::write(path, method_id) {
                tracing::error!("cannot write the auth file {}: {err}", path.display());
            }
        }
        Ok(json!({}))
    }

    /// `authenticate` that first asks the user through a request-scoped
    /// elicitation, answered on its own thread (the read loop must go on
    /// to deliver the client's answer).
    fn authenticate_after_asking(
        self: &Arc<Self>,
        responder: Responder,
        params: &Value,
        mut ask: Value,
    ) {
        let agent = self.clone();
        let params = params.clone();
        if let (Value::Object(map), Some(id)) = (&mut ask, responder.id.clone()) {
            map.insert("requestId".into(), id);
        }
        std::thread::spawn(move || {
            let reply = agent.pending.call(&agent.out, "elicitation/create", ask);
            let action = reply
                .as_ref()
                .ok()
                .and_then(|v| v.get("action").and_then(Value::as_str))
                .unwrap_or("error")
                .to_owned();
            tracing::info!(action, "login elicitation answered");
            if action == "accept" {
                responder.send(agent.authenticate(&params));
            } else {
                responder.send(Err(RpcError::new(
                    codes::AUTH_REQUIRED,
                    format!("login not completed: the user answered `{action}`"),
                )));
            }
        });
    }

    /// `logout`, when `agentCapabilities.auth.logout` is advertised: the
    /// next session needs `authenticate` again (the `authFile` is removed).
    fn logout(&self) -> Reply {
        let caps = self.scenario.agent_capabilities();
        // v2: an agent with auth methods serves `auth/logout`.
        let supported = match self.v2.load(Ordering::SeqCst) {
            true => !self.scenario.auth_methods().is_empty(),
            false => caps.pointer("/auth/logout").is_some_and(|v| !v.is_null()),
        };
        if !supported {
            return Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                "`logout` is not supported: the agent did not advertise auth.logout",
            ));
        }
        self.state().authenticated = false;
        if let Some(path) = &self.scenario.auth_file {
            if let Err(err) = std::fs::remove_file(path) {
                tracing::info!("auth file {} not removed: {err}", path.display());
            }
        }
        Ok(json!({}))
    }

    fn require_auth(&self) -> Result<(), RpcError> {
        let logged_in = self.state().authenticated
            || self.scenario.auth_file.as_ref().is_some_and(|f| f.exists());
        if self.scenario.auth_required && !logged_in {
            let mut error = RpcError::new(codes::AUTH_REQUIRED, "Authentication required");
            error.data = Some(json!({ "authMethods": self.scenario.auth_methods() }));
            return Err(error);
        }
        Ok(())
    }

    fn open_session(self: &Arc<Self>, responder: Responder, params: &Value, how: Open) {
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

    /// Runs a job on a session's thread. Jobs for a closed session are
    /// dropped, which answers any request they carry with an error.
    fn queue(&self, session_id: &str, job: Job) {
        let state = self.state();
        let live = state.store.get(session_id).and_then(|r| r.live.as_ref());
        let unqueued = match live {
            Some(live) => live.queue(job).err(),
            None => Some(job),
        };
        drop(state);
        if unqueued.is_some() {
            tracing::warn!(session_id, "session closed before its work could run");
        }
    }

    fn list(&self, params: &Value) -> Reply {
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
    fn close(&self, params: &Value, delete: bool) -> Reply {
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

    fn set_mode(&self, responder: Responder, params: &Value) {
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

    fn set_config_option(&self, responder: Responder, params: &Value) {
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

    fn prompt(self: &Arc<Self>, responder: Responder, params: &Value) {
        match self.start_turn(params) {
            Ok((session_id, job)) => {
                let agent = self.clone();
                let job: Job = Box::new(move || job(agent, responder));
                self.queue(&session_id, job);
            }
            Err(error) => responder.send(Err(error)),
        }
    }

    /// Picks the turn for a prompt and registers its cancel token now, on the
    /// reading thread, so a `session/cancel` read right after the prompt
    /// always reaches it.
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

    fn start_turn(&self, params: &Value) -> Result<(String, TurnJob), RpcError> {
        let session_id = str_param(params, "sessionId")?.to_owned();
        let blocks = params
            .get("prompt")
            .and_then(Value::as_array)
            .ok_or_else(|| RpcError::invalid_params("missing array `prompt`"))?;
        let text = prompt_text(blocks);
        let prompt_blocks = Value::Array(blocks.clone());
        let mut state = self.state();
        let Some(record) = state.store.get_mut(&session_id) else {
            return Err(not_found(&session_id));
        };
        let Record {
            live: Some(live),
            history,
            title,
            updated_at,
            cwd,
            ..
        } = record
        else {
            return Err(not_open(&session_id));
        };
        let turns = &self.scenario.turns;
        let turn = pick_turn(turns, &text, &mut live.turn_cursor)
            .and_then(|i| turns.get(i).cloned())
            .unwrap_or_else(Turn::echo);
        let cancel = Arc::new(CancelToken::default());
        live.turns.push(cancel.clone());
        live.prompts += 1;
        let turn_number = live.prompts;
        if self.scenario.replay_user_messages && self.scenario.record_history {
            history.extend(
                blocks.iter().map(
                    |block| json!({ "sessionUpdate": "user_message_chunk", "content": block }),
                ),
            );
        }
        if title.is_none() {
            *title = Some(title_from(&text));
        }
        *updated_at = Some(sessions::now_iso8601());
        let cwd = cwd.clone();
        let id = session_id.clone();
        let job: TurnJob = Box::new(move |agent: Arc<Agent>, responder: Responder| {
            let v2 = agent.v2.load(Ordering::SeqCst);
            let mut responder = Some(responder);
            if v2 {
                // claude-agent-acp 0.101.0's order: the echo, the answer
                // with its id, then the work.
                let message_id = format!("user-{turn_number}");
                agent.notify_update(
                    &id,
                    json!({ "sessionUpdate": "user_message", "messageId": message_id, "content": prompt_blocks }),
                );
                if let Some(responder) = responder.take() {
                    responder.send(Ok(json!({ "messageId": message_id })));
                }
                agent.notify_update(
                    &id,
                    json!({ "sessionUpdate": "state_update", "state": "running" }),
                );
            }
            if agent.scenario.fork && !v2 {
                crate::fork::announce(&agent, &id, turn_number, &prompt_blocks);
            }
            let mut player =
                Player::new(&agent, &id, &cwd, &text, cancel.clone(), &turn.stop_reason)
                    .with_prompt_blocks(prompt_blocks)
                    .with_turn(turn_number);
            let (stop_reason, late) = player.play(&turn.steps);
            agent.persist();
            let mut answer = json!({ "stopReason": stop_reason });
            if let Some(usage) = &turn.usage {
                answer["usage"] = usage.clone();
            }
            match responder {
                Some(responder) => responder.send(Ok(answer)),
                None => {
                    let mut idle = json!({ "sessionUpdate": "state_update", "state": "idle" });
                    if let (Some(idle), Value::Object(fields)) = (idle.as_object_mut(), answer) {
                        idle.extend(fields);
                    }
                    agent.notify_update(&id, idle);
                }
            }
            agent.end_turn(&id, &cancel);
            for (delay_ms, steps) in late {
                let agent = agent.clone();
                let (id, cwd, text) = (id.clone(), cwd.clone(), text.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(delay_ms));
                    let cancel = Arc::new(CancelToken::default());
                    Player::new(&agent, &id, &cwd, &text, cancel, "end_turn").run(&steps);
                });
            }
        });
        Ok((session_id, job))
    }

    fn end_turn(&self, session_id: &str, cancel: &Arc<CancelToken>) {
        let mut state = self.state();
        if let Some(live) = state
            .store
            .get_mut(session_id)
            .and_then(|r| r.live.as_mut())
        {
            live.turns.retain(|t| !Arc::ptr_eq(t, cancel));
        }
    }

    /// Sends a `session/update` and records it in the session's history.
    pub fn notify_update(&self, session_id: &str, update: Value) {
        let mut out = self.out.lock();
        self.record(session_id, std::slice::from_ref(&update));
        out.message(&update_notification(session_id, update));
        out.flush();
    }

    /// Sends a `session/update` line rendered by the caller (one write, as
    /// [`notify_update`](Self::notify_update)); `update` builds the same
    /// update as a value, only when the history is recorded.
    pub fn notify_rendered(&self, session_id: &str, line: &[u8], update: impl FnOnce() -> Value) {
        let mut out = self.out.lock();
        if self.scenario.record_history {
            self.record(session_id, &[update()]);
        }
        out.bytes(line);
        out.flush();
    }

    /// Appends updates to a session's history, when history is recorded and
    /// the session exists.
    pub fn record(&self, session_id: &str, updates: &[Value]) {
        if !self.scenario.record_history {
            return;
        }
        let mut state = self.state();
        let (session_id, mark) = match state.children.get(session_id) {
            Some(parent) => (parent.clone(), Some(session_id.to_owned())),
            None => (session_id.to_owned(), None),
        };
        if let Some(record) = state.store.get_mut(&session_id) {
            for update in updates {
                let mut update = update.clone();
                if let (Some(child), Value::Object(map)) = (&mark, &mut update) {
                    map.insert(CHILD_MARK.into(), json!(child));
                }
                record.history.push(update);
            }
        }
    }
}

/// The work of one prompt, run later on the session's thread.
type TurnJob = Box<dyn FnOnce(Arc<Agent>, Responder) + Send>;

#[derive(Debug, Clone, Copy)]
enum Open {
    New,
    Load,
    Resume,
}

pub(crate) fn str_param<'a>(params: &'a Value, key: &str) -> Result<&'a str, RpcError> {
    params
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params(format!("missing string `{key}`")))
}

fn not_found(session_id: &str) -> RpcError {
    RpcError::new(
        codes::NOT_FOUND,
        format!("session `{session_id}` not found; list the sessions to see which exist"),
    )
}

fn not_open(session_id: &str) -> RpcError {
    RpcError::new(
        codes::NOT_FOUND,
        format!("session `{session_id}` is closed; load or resume it first"),
    )
}

fn open_session<'a>(store: &'a mut Store, session_id: &str) -> Result<&'a mut Live, RpcError> {
    let record = store
        .get_mut(session_id)
        .ok_or_else(|| not_found(session_id))?;
    record.live.as_mut().ok_or_else(|| not_open(session_id))
}

/// The text a turn is matched against: the prompt's text blocks, joined.
pub fn prompt_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A session title from its first prompt, as real agents make them.
fn title_from(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or_default().trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    if title.is_empty() {
        title = "Untitled session".to_owned();
    }
    title
}

/// Exits the process the way a crashing agent does: everything already
/// written reaches the client, then the stderr text, then the exit code.
pub fn exit_with(out: &Out, stderr: &str, code: i32) -> ! {
    out.lock().flush();
    let mut err = io::stderr().lock();
    let _ = err.write_all(stderr.as_bytes());
    if !stderr.is_empty() && !stderr.ends_with('\n') {
        let _ = err.write_all(b"\n");
    }
    let _ = err.flush();
    std::process::exit(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_text_joins_text_blocks_only() {
        let blocks = [
            json!({"type": "text", "text": "hello"}),
            json!({"type": "resource_link", "uri": "file:///x", "name": "x"}),
            json!({"type": "text", "text": "world"}),
        ];
        assert_eq!(prompt_text(&blocks), "hello\nworld");
    }

    #[test]
    fn titles_are_the_first_line_cut_short() {
        assert_eq!(title_from("fix the bug\nin main"), "fix the bug");
        assert_eq!(title_from(&"a".repeat(70)).chars().count(), 61);
        assert_eq!(title_from("  "), "Untitled session");
    }
}
