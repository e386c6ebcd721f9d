//! The agent: reads the client's messages from stdin and answers every
//! client -> agent method. Turns run on each session's own thread (see
//! `sessions::Live`), so this loop keeps reading while a turn waits for the
//! client, and sees `session/cancel` at once.
//!
//! Lock order: stdout (`Out::lock`) before state (`Agent::state`). Code that
//! holds the state lock never writes to stdout.

use std::io::{self, BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, MutexGuard};

use serde_json::{json, Value};

use crate::scenario::{InitFault, Scenario};
use crate::sessions::{Job, Store};
use crate::wire::{self, codes, update_notification, Incoming, Out, Pending, Reply, RpcError};

mod auth;
mod open;
mod prompt;

use open::Open;

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
            "session/close" => {
                let answer = self.close(&params, false);
                match self.scenario.close_answer_delay_ms {
                    0 => responder.send(answer),
                    ms => {
                        std::thread::spawn(move || {
                            std::thread::sleep(std::time::Duration::from_millis(ms));
                            responder.send(answer);
                        });
                    }
                }
            }
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
