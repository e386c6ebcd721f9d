//! Plays the steps of a turn (or of session start, or late steps).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::agent::{exit_with, Agent};
use crate::cancel::CancelToken;
use crate::expect::{Expect, TerminalExpect};
use crate::step::{parse_hex, Step};
use crate::subst::substitute;
use crate::wire::{self, Reply};

/// What a step list tells its caller.
#[derive(Debug, PartialEq)]
pub enum Flow {
    Next,
    /// End the turn now with this stop reason.
    End(String),
}

/// Late steps collected during a turn: (delay in ms, steps).
pub type Late = Vec<(u64, Vec<Value>)>;

/// Plays steps for one session.
#[derive(Debug)]
pub struct Player<'a> {
    agent: &'a Arc<Agent>,
    session_id: String,
    vars: Map<String, Value>,
    cancel: Arc<CancelToken>,
    stop_reason: String,
    late: Late,
    counter: u32,
}

impl<'a> Player<'a> {
    pub fn new(
        agent: &'a Arc<Agent>,
        session_id: &str,
        cwd: &str,
        prompt: &str,
        cancel: Arc<CancelToken>,
        stop_reason: &str,
    ) -> Self {
        let mut vars = Map::new();
        vars.insert("cwd".into(), json!(cwd));
        vars.insert("sessionId".into(), json!(session_id));
        vars.insert("prompt".into(), json!(prompt));
        Self {
            agent,
            session_id: session_id.to_owned(),
            vars,
            cancel,
            stop_reason: stop_reason.to_owned(),
            late: Vec::new(),
            counter: 0,
        }
    }

    /// Plays a turn; returns its stop reason and the late steps it left.
    pub fn play(&mut self, steps: &[Value]) -> (String, Late) {
        let stop_reason = match self.run(steps) {
            Flow::Next if self.cancel.is_cancelled() => "cancelled".to_owned(),
            Flow::Next => self.stop_reason.clone(),
            Flow::End(reason) => reason,
        };
        (stop_reason, std::mem::take(&mut self.late))
    }

    /// Plays a step list. A cancel seen between steps ends it `cancelled`.
    pub fn run(&mut self, steps: &[Value]) -> Flow {
        for raw in steps {
            if self.cancel.is_cancelled() {
                return Flow::End("cancelled".to_owned());
            }
            let value = substitute(raw, &self.vars);
            let flow = match Step::decode(&value) {
                Ok(step) => self.step(step),
                Err(err) => self.fail(&format!("step {value} is invalid: {err}")),
            };
            if flow != Flow::Next {
                return flow;
            }
        }
        Flow::Next
    }

    fn step(&mut self, step: Step) -> Flow {
        match step {
            Step::Text {
                text,
                chunk_size,
                delay_ms,
                message_id,
            } => self.stream(
                "agent_message_chunk",
                &text,
                chunk_size,
                delay_ms,
                message_id,
            ),
            Step::Thought {
                text,
                chunk_size,
                delay_ms,
                message_id,
            } => self.stream(
                "agent_thought_chunk",
                &text,
                chunk_size,
                delay_ms,
                message_id,
            ),
            Step::Burst {
                count,
                bytes,
                thought,
            } => {
                self.burst(count, bytes, thought);
                Flow::Next
            }
            Step::Update { update, session_id } => {
                let id = session_id.unwrap_or_else(|| self.session_id.clone());
                self.agent.notify_update(&id, update);
                Flow::Next
            }
            Step::ToolCall {
                tool_call_id,
                title,
                kind,
                status,
                content,
                locations,
                raw_input,
                raw_output,
            } => {
                let mut update = json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": tool_call_id,
                    "title": title,
                });
                let fields = [
                    ("kind", kind),
                    ("status", status),
                    ("content", content),
                    ("locations", locations),
                    ("rawInput", raw_input),
                    ("rawOutput", raw_output),
                ];
                put_fields(&mut update, fields);
                self.update(update);
                Flow::Next
            }
            Step::ToolCallUpdate {
                tool_call_id,
                title,
                kind,
                status,
                content,
                locations,
                raw_input,
                raw_output,
            } => {
                let mut update = json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": tool_call_id,
                });
                let fields = [
                    ("title", title),
                    ("kind", kind),
                    ("status", status),
                    ("content", content),
                    ("locations", locations),
                    ("rawInput", raw_input),
                    ("rawOutput", raw_output),
                ];
                put_fields(&mut update, fields);
                self.update(update);
                Flow::Next
            }
            Step::Plan { entries } => {
                self.update(json!({ "sessionUpdate": "plan", "entries": entries }));
                Flow::Next
            }
            Step::Commands { available_commands } => {
                self.update(json!({
                    "sessionUpdate": "available_commands_update",
                    "availableCommands": available_commands,
                }));
                Flow::Next
            }
            Step::Usage { used, size, cost } => {
                let mut update =
                    json!({ "sessionUpdate": "usage_update", "used": used, "size": size });
                put_fields(&mut update, [("cost", cost)]);
                self.update(update);
                Flow::Next
            }
            Step::SessionInfo { title, updated_at } => {
                self.session_info(title, updated_at);
                Flow::Next
            }
            Step::Mode { mode_id } => {
                self.switch_mode(&mode_id);
                Flow::Next
            }
            Step::RequestPermission {
                tool_call,
                options,
                on,
                on_allow,
                on_reject,
                on_cancelled,
                report,
            } => {
                let branches = Branches {
                    by_id: on,
                    allow: on_allow,
                    reject: on_reject,
                    cancelled: on_cancelled,
                };
                self.request_permission(tool_call, options, branches, report)
            }
            Step::Call {
                method,
                params,
                expect,
                save_as,
                on_ok,
                on_error,
            } => {
                let reply = self.call(&method, params);
                if let Some(name) = save_as {
                    self.save(&name, reply_value(&reply));
                }
                if let Some(expect) = expect {
                    if let Err(err) = expect.check(&reply) {
                        return self.fail(&format!("{method}: {err}"));
                    }
                }
                let branch = if reply.is_ok() { on_ok } else { on_error };
                self.run(&branch)
            }
            Step::RunTerminal {
                command,
                args,
                env,
                cwd,
                output_byte_limit,
                tool_call_id,
                title,
                expect,
                save_as,
            } => {
                let terminal = TerminalRun {
                    command,
                    args,
                    env,
                    cwd,
                    output_byte_limit,
                    tool_call_id,
                    title,
                };
                self.run_terminal(terminal, expect, save_as)
            }
            Step::WriteDisk {
                path,
                content,
                tool_call_id,
                title,
            } => {
                self.write_disk(&path, &content, tool_call_id, title);
                Flow::Next
            }
            Step::WaitForCancel { ignore_cancel } => {
                if ignore_cancel {
                    tracing::info!("hanging for good, as the scenario asked");
                    loop {
                        std::thread::park();
                    }
                }
                self.cancel.wait();
                Flow::End("cancelled".to_owned())
            }
            Step::Sleep { ms } => {
                if self.cancel.sleep(Duration::from_millis(ms)) {
                    Flow::End("cancelled".to_owned())
                } else {
                    Flow::Next
                }
            }
            Step::Crash { stderr, code } => exit_with(&self.agent.out, &stderr, code),
            Step::RawLine { line } => {
                self.agent.out.raw(format!("{line}\n").as_bytes());
                Flow::Next
            }
            Step::RawBytes { hex, newline } => match parse_hex(&hex) {
                Ok(mut bytes) => {
                    if newline {
                        bytes.push(b'\n');
                    }
                    self.agent.out.raw(&bytes);
                    Flow::Next
                }
                Err(err) => self.fail(&err),
            },
            Step::Json { value } => {
                self.agent.out.send(&value);
                Flow::Next
            }
            Step::OversizedLine { bytes, json } => {
                self.agent.out.raw(&self.oversized_line(bytes, json));
                Flow::Next
            }
            Step::FloodStderr { bytes } => {
                flood_stderr(bytes);
                Flow::Next
            }
            Step::StopReadingStdin => {
                self.agent.stop_reading_stdin();
                Flow::Next
            }
            Step::SpawnGrandchild { command } => {
                spawn_grandchild(command);
                Flow::Next
            }
            Step::Late { delay_ms, steps } => {
                self.late.push((delay_ms, steps));
                Flow::Next
            }
            Step::ConcurrentRequests {
                count,
                method,
                params,
                expect,
            } => self.concurrent_requests(count, &method, params, expect),
            Step::CancelOwnRequest {
                method,
                params,
                expect,
                save_as,
            } => self.cancel_own_request(&method, params, expect, save_as),
            Step::StopReason { value } => {
                self.stop_reason = value;
                Flow::Next
            }
        }
    }

    fn update(&self, update: Value) {
        self.agent.notify_update(&self.session_id, update);
    }

    fn message(&self, text: &str) {
        self.update(json!({
            "sessionUpdate": "agent_message_chunk",
            "content": { "type": "text", "text": text },
        }));
    }

    /// Reports a failed expectation in the chat and ends the turn `refusal`.
    fn fail(&self, why: &str) -> Flow {
        tracing::warn!("expectation failed: {why}");
        self.message(&format!("EXPECTATION FAILED: {why}"));
        Flow::End("refusal".to_owned())
    }

    fn save(&mut self, name: &str, value: Value) {
        self.vars.insert(name.to_owned(), value);
    }

    fn next_number(&mut self) -> u32 {
        self.counter += 1;
        self.counter
    }

    /// Params for a request to the client, with this session's id filled in.
    fn params(&self, params: Option<Value>) -> Value {
        let mut params = params.unwrap_or_else(|| json!({}));
        if let Value::Object(map) = &mut params {
            map.entry("sessionId")
                .or_insert_with(|| json!(self.session_id));
        }
        params
    }

    fn call(&self, method: &str, params: Option<Value>) -> Reply {
        let params = self.params(params);
        self.agent.pending.call(&self.agent.out, method, params)
    }

    fn stream(
        &self,
        kind: &str,
        text: &str,
        chunk_size: Option<usize>,
        delay_ms: u64,
        message_id: Option<String>,
    ) -> Flow {
        for (i, chunk) in chunks(text, chunk_size).into_iter().enumerate() {
            if i > 0 && delay_ms > 0 && self.cancel.sleep(Duration::from_millis(delay_ms)) {
                return Flow::End("cancelled".to_owned());
            }
            let mut update = json!({
                "sessionUpdate": kind,
                "content": { "type": "text", "text": chunk },
            });
            if let Some(id) = &message_id {
                update["messageId"] = json!(id);
            }
            self.update(update);
        }
        Flow::Next
    }

    /// `count` identical chunks, serialized once and written under one lock
    /// with one flush: this drives the client's throughput benchmarks.
    fn burst(&self, count: usize, bytes: usize, thought: bool) {
        let text: String = (0..bytes)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let kind = if thought {
            "agent_thought_chunk"
        } else {
            "agent_message_chunk"
        };
        let update = json!({ "sessionUpdate": kind, "content": { "type": "text", "text": text } });
        let mut line = json!({
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": { "sessionId": self.session_id, "update": update },
        })
        .to_string()
        .into_bytes();
        line.push(b'\n');
        if self.agent.scenario.record_history {
            self.agent.record(&self.session_id, &vec![update; count]);
        }
        let mut out = self.agent.out.lock();
        for _ in 0..count {
            out.bytes(&line);
        }
        out.flush();
    }

    fn session_info(&self, title: Option<Value>, updated_at: Option<Value>) {
        {
            let mut state = self.agent.state();
            if let Some(record) = state.store.get_mut(&self.session_id) {
                if let Some(title) = &title {
                    record.title = title.as_str().map(str::to_owned);
                }
                if let Some(updated_at) = &updated_at {
                    record.updated_at = updated_at.as_str().map(str::to_owned);
                }
            }
        }
        let mut update = json!({ "sessionUpdate": "session_info_update" });
        put_fields(&mut update, [("title", title), ("updatedAt", updated_at)]);
        self.update(update);
    }

    fn switch_mode(&self, mode_id: &str) {
        {
            let mut state = self.agent.state();
            let live = state
                .store
                .get_mut(&self.session_id)
                .and_then(|r| r.live.as_mut());
            if let Some(modes) = live.and_then(|l| l.modes.as_mut()) {
                modes.current_mode_id = mode_id.to_owned();
            }
        }
        self.update(json!({ "sessionUpdate": "current_mode_update", "currentModeId": mode_id }));
    }

    fn request_permission(
        &mut self,
        mut tool_call: Value,
        options: Option<Vec<Value>>,
        branches: Branches,
        report: bool,
    ) -> Flow {
        let n = self.next_number();
        if let Value::Object(map) = &mut tool_call {
            map.entry("toolCallId")
                .or_insert_with(|| json!(format!("permission-{n}")));
        }
        let options = options.unwrap_or_else(default_permission_options);
        let params = json!({ "toolCall": tool_call, "options": options });
        let reply = self.call("session/request_permission", Some(params));
        let (chosen, kind) = match permission_outcome(&reply, &options) {
            Ok(outcome) => outcome,
            Err(err) => return self.fail(&format!("session/request_permission: {err}")),
        };
        self.save("permission", json!(chosen));
        if report {
            self.message(&format!("permission: {chosen}"));
        }
        let branch = match branches.by_id.get(&chosen) {
            Some(steps) => steps,
            None if kind.starts_with("allow") => &branches.allow,
            None if kind.starts_with("reject") => &branches.reject,
            None if kind == "cancelled" => &branches.cancelled,
            None => return Flow::Next,
        };
        self.run(branch)
    }

    fn run_terminal(
        &mut self,
        terminal: TerminalRun,
        expect: Option<TerminalExpect>,
        save_as: Option<String>,
    ) -> Flow {
        let n = self.next_number();
        let tool_call_id = terminal
            .tool_call_id
            .unwrap_or_else(|| format!("terminal-{n}"));
        let command_line = std::iter::once(terminal.command.as_str())
            .chain(terminal.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        let title = terminal
            .title
            .unwrap_or_else(|| format!("`{command_line}`"));
        let mut create = json!({
            "command": terminal.command,
            "args": terminal.args,
            "env": terminal.env,
        });
        if let Some(cwd) = terminal.cwd.or_else(|| self.cwd()) {
            create["cwd"] = json!(cwd);
        }
        if let Some(limit) = terminal.output_byte_limit {
            create["outputByteLimit"] = json!(limit);
        }
        let terminal_id = match self.call("terminal/create", Some(create)) {
            Ok(result) => match result.get("terminalId").and_then(Value::as_str) {
                Some(id) => id.to_owned(),
                None => return self.fail(&format!("terminal/create: no terminalId in {result}")),
            },
            Err(err) => {
                let why = format!("terminal/create failed: {} ({})", err.message, err.code);
                self.update(json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": tool_call_id,
                    "title": title,
                    "kind": "execute",
                    "status": "failed",
                    "content": [text_content(&why)],
                }));
                return match expect {
                    Some(_) => self.fail(&why),
                    None => Flow::Next,
                };
            }
        };
        self.update(json!({
            "sessionUpdate": "tool_call",
            "toolCallId": tool_call_id,
            "title": title,
            "kind": "execute",
            "status": "in_progress",
            "content": [{ "type": "terminal", "terminalId": terminal_id }],
            "rawInput": { "command": command_line },
        }));
        let exit = self.wait_for_exit(&terminal_id);
        let output = self.call(
            "terminal/output",
            Some(json!({ "terminalId": terminal_id })),
        );
        let release = self.call(
            "terminal/release",
            Some(json!({ "terminalId": terminal_id })),
        );
        if let Err(err) = &release {
            tracing::warn!("terminal/release failed: {}", err.message);
        }
        let exit = match exit {
            Ok(exit) => exit,
            Err(err) => return self.fail(&format!("terminal/wait_for_exit: {}", err.message)),
        };
        let output = match output {
            Ok(output) => output,
            Err(err) => return self.fail(&format!("terminal/output: {}", err.message)),
        };
        let exit_code = exit.get("exitCode").and_then(Value::as_u64);
        let text = output
            .get("output")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let status = if exit_code == Some(0) {
            "completed"
        } else {
            "failed"
        };
        self.update(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": tool_call_id,
            "status": status,
            "rawOutput": { "exitCode": exit_code, "signal": exit.get("signal") },
        }));
        if let Some(name) = save_as {
            let saved = json!({
                "terminalId": terminal_id,
                "exitCode": exit_code,
                "signal": exit.get("signal"),
                "output": text,
                "truncated": output.get("truncated"),
            });
            self.save(&name, saved);
        }
        if let Some(expect) = expect {
            if let Err(err) = expect.check(exit_code, &text) {
                return self.fail(&format!("runTerminal `{command_line}`: {err}"));
            }
        }
        Flow::Next
    }

    /// Waits for a terminal to exit. On `session/cancel` it asks the client
    /// to kill the command (as real agents do) and keeps waiting.
    fn wait_for_exit(&self, terminal_id: &str) -> Reply {
        let params = self.params(Some(json!({ "terminalId": terminal_id })));
        let (_, exit) = self
            .agent
            .pending
            .start(&self.agent.out, "terminal/wait_for_exit", params);
        let mut killed = false;
        loop {
            match exit.recv_timeout(Duration::from_millis(100)) {
                Ok(reply) => return reply,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if self.cancel.is_cancelled() && !killed {
                        killed = true;
                        let kill = self.params(Some(json!({ "terminalId": terminal_id })));
                        // The kill's answer does not matter; the exit does.
                        let _ = self
                            .agent
                            .pending
                            .start(&self.agent.out, "terminal/kill", kill);
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return wire::wait(&exit),
            }
        }
    }

    fn cwd(&self) -> Option<String> {
        self.vars
            .get("cwd")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    fn resolve(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        match self.cwd() {
            Some(cwd) if path.is_relative() => Path::new(&cwd).join(path),
            _ => path.to_owned(),
        }
    }

    /// Edits a file on disk without asking the client, as Claude does, and
    /// reports the edit as a diff tool call.
    fn write_disk(
        &mut self,
        path: &str,
        content: &str,
        tool_call_id: Option<String>,
        title: Option<String>,
    ) {
        let n = self.next_number();
        let path = self.resolve(path);
        let shown = path.display().to_string();
        let tool_call_id = tool_call_id.unwrap_or_else(|| format!("edit-{n}"));
        let old_text = std::fs::read_to_string(&path).ok();
        self.update(json!({
            "sessionUpdate": "tool_call",
            "toolCallId": tool_call_id,
            "title": title.unwrap_or_else(|| format!("Edit `{shown}`")),
            "kind": "edit",
            "status": "in_progress",
            "content": [{ "type": "diff", "path": shown, "oldText": old_text, "newText": content }],
            "locations": [{ "path": shown }],
        }));
        let written = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&path, content));
        let update = match written {
            Ok(()) => json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": "completed",
            }),
            Err(err) => json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": "failed",
                "content": [text_content(&format!("could not write {shown}: {err}"))],
            }),
        };
        self.update(update);
    }

    fn oversized_line(&self, bytes: usize, as_json: bool) -> Vec<u8> {
        if !as_json {
            let mut line = vec![b'x'; bytes];
            line.push(b'\n');
            return line;
        }
        let frame = |text: &str| {
            json!({
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": self.session_id,
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": { "type": "text", "text": text },
                    },
                },
            })
            .to_string()
        };
        let overhead = frame("").len();
        let mut line = frame(&"x".repeat(bytes.saturating_sub(overhead))).into_bytes();
        line.push(b'\n');
        line
    }

    fn concurrent_requests(
        &mut self,
        count: usize,
        method: &str,
        params: Option<Value>,
        expect: Option<Expect>,
    ) -> Flow {
        let params = self.params(params);
        let waiting: Vec<_> = (0..count)
            .map(|_| {
                self.agent
                    .pending
                    .start(&self.agent.out, method, params.clone())
                    .1
            })
            .collect();
        let replies: Vec<Reply> = waiting.iter().map(wire::wait).collect();
        if let Some(expect) = expect {
            for (i, reply) in replies.iter().enumerate() {
                if let Err(err) = expect.check(reply) {
                    return self.fail(&format!("{method} #{}: {err}", i + 1));
                }
            }
        }
        self.message(&format!(
            "concurrent requests: {}/{count} answered",
            replies.len()
        ));
        Flow::Next
    }

    fn cancel_own_request(
        &mut self,
        method: &str,
        params: Option<Value>,
        expect: Option<Expect>,
        save_as: Option<String>,
    ) -> Flow {
        let params = self.params(params);
        let (id, rx) = self.agent.pending.start(&self.agent.out, method, params);
        self.agent
            .out
            .notify("$/cancel_request", json!({ "requestId": id }));
        let reply = wire::wait(&rx);
        let report = match &reply {
            Ok(_) => "cancel_request: answered with a result".to_owned(),
            Err(err) => format!("cancel_request: answered with error {}", err.code),
        };
        self.message(&report);
        if let Some(name) = save_as {
            self.save(&name, reply_value(&reply));
        }
        if let Some(expect) = expect {
            if let Err(err) = expect.check(&reply) {
                return self.fail(&format!("{method} (cancelled): {err}"));
            }
        }
        Flow::Next
    }
}

/// The branches of a `requestPermission` step.
#[derive(Debug)]
struct Branches {
    by_id: std::collections::BTreeMap<String, Vec<Value>>,
    allow: Vec<Value>,
    reject: Vec<Value>,
    cancelled: Vec<Value>,
}

/// The fields of a `runTerminal` step that shape the terminal.
#[derive(Debug)]
struct TerminalRun {
    command: String,
    args: Vec<String>,
    env: Vec<Value>,
    cwd: Option<String>,
    output_byte_limit: Option<u64>,
    tool_call_id: Option<String>,
    title: Option<String>,
}

fn put_fields<const N: usize>(target: &mut Value, fields: [(&str, Option<Value>); N]) {
    for (name, value) in fields {
        if let Some(value) = value {
            target[name] = value;
        }
    }
}

fn text_content(text: &str) -> Value {
    json!({ "type": "content", "content": { "type": "text", "text": text } })
}

/// What `saveAs` stores: the result, or `{"error": {...}}`.
fn reply_value(reply: &Reply) -> Value {
    match reply {
        Ok(result) => result.clone(),
        Err(err) => json!({ "error": err.to_json() }),
    }
}

/// Splits text into chunks of `size` characters (never inside a character).
/// No size (or 0) means one chunk; empty text means no chunk.
pub fn chunks(text: &str, size: Option<usize>) -> Vec<String> {
    match size {
        _ if text.is_empty() => Vec::new(),
        Some(size) if size > 0 => text
            .chars()
            .collect::<Vec<_>>()
            .chunks(size)
            .map(|c| c.iter().collect())
            .collect(),
        _ => vec![text.to_owned()],
    }
}

/// The options offered when a `requestPermission` step names none; each id
/// equals its kind so reports read "permission: allow_once".
fn default_permission_options() -> Vec<Value> {
    vec![
        json!({ "optionId": "allow_once", "name": "Allow once", "kind": "allow_once" }),
        json!({ "optionId": "allow_always", "name": "Always allow", "kind": "allow_always" }),
        json!({ "optionId": "reject_once", "name": "Reject", "kind": "reject_once" }),
        json!({ "optionId": "reject_always", "name": "Always reject", "kind": "reject_always" }),
    ]
}

/// Reads the client's answer to a permission request: the chosen option id
/// (or "cancelled") and its kind. Anything else is a client bug.
fn permission_outcome(reply: &Reply, options: &[Value]) -> Result<(String, String), String> {
    let result = reply.as_ref().map_err(|err| {
        format!(
            "answered with error {}: {}; a permission request must be answered with an outcome",
            err.code, err.message
        )
    })?;
    let outcome = result.get("outcome");
    match outcome
        .and_then(|o| o.get("outcome"))
        .and_then(Value::as_str)
    {
        Some("cancelled") => Ok(("cancelled".to_owned(), "cancelled".to_owned())),
        Some("selected") => {
            let id = outcome
                .and_then(|o| o.get("optionId"))
                .and_then(Value::as_str)
                .ok_or_else(|| format!("selected outcome without an optionId: {result}"))?;
            let option = options
                .iter()
                .find(|o| o.get("optionId").and_then(Value::as_str) == Some(id))
                .ok_or_else(|| format!("selected `{id}`, which is not one of the options"))?;
            let kind = option
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or_default();
            Ok((id.to_owned(), kind.to_owned()))
        }
        _ => Err(format!("invalid outcome {result}")),
    }
}

fn flood_stderr(bytes: usize) {
    let line = format!("{}\n", "stderr flood ".repeat(8));
    let mut err = std::io::stderr().lock();
    let mut left = bytes;
    while left > 0 {
        let take = left.min(line.len());
        if err.write_all(&line.as_bytes()[..take]).is_err() {
            return;
        }
        left -= take;
    }
    let _ = err.flush();
}

fn spawn_grandchild(command: Option<Vec<String>>) {
    let command = command.unwrap_or_else(|| vec!["sleep".to_owned(), "1000".to_owned()]);
    let Some((program, args)) = command.split_first() else {
        tracing::warn!("spawnGrandchild with an empty command");
        return;
    };
    let spawned = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        Ok(child) => {
            let mut err = std::io::stderr().lock();
            let _ = writeln!(err, "grandchild pid: {}", child.id());
            let _ = err.flush();
        }
        Err(e) => tracing::warn!("cannot spawn grandchild `{program}`: {e}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::wire::RpcError;

    #[test]
    fn chunks_split_on_characters() {
        assert_eq!(chunks("héllo", Some(2)), ["hé", "ll", "o"]);
        assert_eq!(chunks("abc", None), ["abc"]);
        assert_eq!(chunks("abc", Some(0)), ["abc"]);
        assert!(chunks("", Some(3)).is_empty());
    }

    #[test]
    fn permission_outcomes_are_checked() {
        let options = default_permission_options();
        let selected = Ok(json!({"outcome": {"outcome": "selected", "optionId": "reject_once"}}));
        assert_eq!(
            permission_outcome(&selected, &options).unwrap(),
            ("reject_once".to_owned(), "reject_once".to_owned())
        );
        let cancelled = Ok(json!({"outcome": {"outcome": "cancelled"}}));
        assert_eq!(
            permission_outcome(&cancelled, &options).unwrap().0,
            "cancelled"
        );
        let unknown = Ok(json!({"outcome": {"outcome": "selected", "optionId": "yes"}}));
        assert!(permission_outcome(&unknown, &options).is_err());
        let flat = Ok(json!({"outcome": "cancelled"}));
        assert!(permission_outcome(&flat, &options).is_err());
        let error = Err(RpcError::new(-32603, "boom"));
        assert!(permission_outcome(&error, &options).is_err());
    }
}
