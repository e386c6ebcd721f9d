//! Plays the steps of a turn (or of session start, or late steps).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::agent::{exit_with, Agent};
use crate::cancel::CancelToken;
use crate::step::{parse_hex, Step};
use crate::subst::substitute;
use crate::wire::Reply;

mod bench;
mod client;
mod disk;
mod misbehave;
mod stream;
mod v2;

use client::{Branches, ElicitBranches, TerminalRun};
use misbehave::{flood_stderr, spawn_grandchild};

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
    /// The prompt's content blocks, for `savePrompt`.
    prompt_blocks: Value,
}

impl<'a> Player<'a> {
    /// A player for one session; `cancel` is the turn's token and
    /// `stop_reason` the answer when the steps run out.
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
        let mcp_servers = agent
            .state()
            .store
            .get(session_id)
            .map(|r| r.mcp_servers.clone())
            .filter(|v| !v.is_null())
            .unwrap_or_else(|| json!([]));
        vars.insert("mcpServers".into(), mcp_servers);
        Self {
            agent,
            session_id: session_id.to_owned(),
            vars,
            cancel,
            stop_reason: stop_reason.to_owned(),
            late: Vec::new(),
            counter: 0,
            prompt_blocks: json!([]),
        }
    }

    /// The prompt's content blocks, as received, for `savePrompt`.
    pub fn with_prompt_blocks(mut self, blocks: Value) -> Self {
        self.prompt_blocks = blocks;
        self
    }

    /// Sets the `{{turn}}` placeholder: the prompt's number in its session.
    pub fn with_turn(mut self, turn: u64) -> Self {
        self.vars.insert("turn".into(), json!(turn));
        self
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
            let value = substitute(raw, &self.vars);
            let step = Step::decode(&value);
            // A hung agent ignores a cancel that came before the hang, too.
            let hangs = matches!(
                step,
                Ok(Step::WaitForCancel {
                    ignore_cancel: true
                } | Step::WaitForFile { .. })
            );
            if self.cancel.is_cancelled() && !hangs {
                return Flow::End("cancelled".to_owned());
            }
            let flow = match step {
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
                session_id,
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
                match session_id {
                    Some(child) => {
                        let parent = std::mem::replace(&mut self.session_id, child);
                        let flow = self.request_permission(tool_call, options, branches, report);
                        self.session_id = parent;
                        flow
                    }
                    None => self.request_permission(tool_call, options, branches, report),
                }
            }
            Step::Subagent {
                child_id,
                title,
                description,
                state,
                stop_reason,
                cancel,
                tool_call_id,
            } => {
                let new = self
                    .agent
                    .state()
                    .children
                    .insert(child_id.clone(), self.session_id.clone())
                    .is_none();
                if let (true, Some(id)) = (new, &tool_call_id) {
                    let title = title.as_ref().and_then(Value::as_str).unwrap_or("Subagent");
                    self.update(json!({
                        "sessionUpdate": "tool_call",
                        "toolCallId": id,
                        "title": format!("Task: {title}"),
                        "kind": "other",
                        "status": "in_progress",
                        "content": [{ "type": "session", "sessionId": child_id }],
                    }));
                }
                let mut update =
                    json!({ "sessionUpdate": "subagent_update", "sessionId": child_id });
                put_fields(
                    &mut update,
                    [("title", title), ("description", description)],
                );
                if let Some(state) = state {
                    let mut s = json!({ "state": state });
                    put_fields(&mut s, [("stopReason", stop_reason.map(Value::from))]);
                    update["state"] = s;
                }
                match cancel {
                    Some(true) => update["capabilities"] = json!({ "cancel": {} }),
                    Some(false) => update["capabilities"] = json!({}),
                    None => {}
                }
                self.update(update);
                Flow::Next
            }
            Step::AsSession { child_id, steps } => {
                let parent = std::mem::replace(&mut self.session_id, child_id);
                let flow = self.run(&steps);
                self.session_id = parent;
                flow
            }
            Step::SessionMessage {
                message_id,
                sender,
                recipient,
                text,
            } => {
                let mut update = json!({
                    "sessionUpdate": "session_message",
                    "messageId": message_id,
                    "content": [{ "type": "text", "text": text }],
                });
                put_fields(
                    &mut update,
                    [
                        ("senderSessionId", sender.map(Value::from)),
                        ("recipientSessionId", recipient.map(Value::from)),
                    ],
                );
                self.update(update);
                Flow::Next
            }
            Step::PlanUpdate {
                plan_id,
                entries,
                markdown,
                path,
            } => {
                let plan = match (entries, markdown) {
                    (_, Some(md)) => {
                        let mut p = json!({ "type": "markdown", "planId": plan_id, "content": md });
                        put_fields(&mut p, [("path", path.map(Value::from))]);
                        p
                    }
                    (entries, None) => json!({
                        "type": "items",
                        "planId": plan_id,
                        "entries": entries.unwrap_or_else(|| json!([])),
                    }),
                };
                self.update(json!({ "sessionUpdate": "plan_update", "plan": plan }));
                Flow::Next
            }
            Step::PlanRemoved { plan_id } => {
                self.update(json!({ "sessionUpdate": "plan_removed", "planId": plan_id }));
                Flow::Next
            }
            Step::AgentTerminal {
                tool_call_id,
                command,
                output,
                exit_code,
                delay_ms,
            } => self.agent_terminal(&tool_call_id, &command, &output, exit_code, delay_ms),
            Step::SystemPrompt => {
                let sp = self
                    .agent
                    .state()
                    .system_prompts
                    .get(&self.session_id)
                    .cloned();
                let text = match sp {
                    Some(sp) => {
                        let mode = sp
                            .get("mode")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_owned();
                        let text: String = sp
                            .get("content")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(|b| b.get("text").and_then(Value::as_str))
                            .collect();
                        format!("system prompt ({mode}): {text}")
                    }
                    None => "system prompt: none".to_owned(),
                };
                self.message(&text);
                Flow::Next
            }
            Step::Elicit {
                mode,
                message,
                requested_schema,
                url,
                elicitation_id,
                tool_call_id,
                complete_after_ms,
                on_accept,
                on_decline,
                on_cancel,
                on_error,
                report,
            } => {
                let mut params = json!({ "mode": mode, "message": message });
                put_fields(
                    &mut params,
                    [
                        ("requestedSchema", requested_schema),
                        ("url", url.map(Value::from)),
                        ("elicitationId", elicitation_id.map(Value::from)),
                        ("toolCallId", tool_call_id.map(Value::from)),
                    ],
                );
                let branches = ElicitBranches {
                    accept: on_accept,
                    decline: on_decline,
                    cancel: on_cancel,
                    error: on_error,
                };
                self.elicit(params, complete_after_ms, branches, report)
            }
            Step::McpCall {
                server,
                tool,
                arguments,
                save_as,
            } => {
                let servers = self.vars.get("mcpServers").cloned().unwrap_or(Value::Null);
                let Some(entry) = servers
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|s| s["name"] == server.as_str())
                    .cloned()
                else {
                    return self.fail(&format!(
                        "mcpCall: the session has no MCP server `{server}`"
                    ));
                };
                match crate::mcp::call_tool(&entry, &tool, arguments) {
                    Ok((text, is_error)) => {
                        let text = if is_error {
                            format!("error: {text}")
                        } else {
                            text
                        };
                        self.save(&save_as, json!(text));
                        Flow::Next
                    }
                    Err(e) => self.fail(&format!("mcpCall {tool}: {e}")),
                }
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
                diff,
                torn_ms,
                torn_keeps_time,
            } => {
                let torn = torn_ms.map(|ms| disk::Torn {
                    ms,
                    keeps_time: torn_keeps_time,
                });
                self.write_disk(&path, &content, tool_call_id, title, diff, torn);
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
            Step::Crash { stderr, code } => {
                // What was said so far stays loadable by the next process.
                self.agent.persist();
                exit_with(&self.agent.out, &stderr, code)
            }
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
            Step::PromptSteps => self.prompt_steps(),
            Step::WaitForFile { path } => {
                let path = self.resolve(&path);
                tracing::info!(path = %path.display(), "stuck until the file exists, cancel or not");
                while !path.exists() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                Flow::Next
            }
            Step::ReplaceDisk {
                path,
                old,
                new,
                tool_call_id,
                title,
            } => {
                self.replace_disk(&path, &old, &new, tool_call_id, title);
                Flow::Next
            }
            Step::SavePrompt { path } => {
                let path = self.resolve(&path);
                let text = serde_json::to_string_pretty(&self.prompt_blocks).unwrap_or_default();
                match std::fs::write(&path, text) {
                    Ok(()) => Flow::Next,
                    Err(e) => self.fail(&format!(
                        "savePrompt: could not write {}: {e}",
                        path.display()
                    )),
                }
            }
            Step::ToolCallBurst { count, id_prefix } => {
                self.tool_call_burst(count, &id_prefix);
                Flow::Next
            }
            Step::TimedCalls {
                count,
                method,
                params,
                save_as,
            } => self.timed_calls(count, &method, params, save_as),
        }
    }

    /// Plays the steps the prompt carries: its text from the first `[` on
    /// is a JSON list of steps. Lets a test drive the agent one prompt at a
    /// time with steps it computes while it runs.
    fn prompt_steps(&mut self) -> Flow {
        let text = self
            .vars
            .get("prompt")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let Some(start) = text.find('[') else {
            return self.fail("promptSteps: the prompt holds no `[` starting a list of steps");
        };
        let steps: Vec<Value> = match serde_json::from_str(&text[start..]) {
            Ok(steps) => steps,
            Err(err) => {
                return self.fail(&format!(
                    "promptSteps: the prompt is not a JSON list of steps: {err}"
                ))
            }
        };
        if let Err(err) = crate::step::validate_list(&steps, "prompt") {
            return self.fail(&format!("promptSteps: {err}"));
        }
        self.run(&steps)
    }

    fn update(&self, mut update: Value) {
        if self.agent.v2.load(std::sync::atomic::Ordering::SeqCst) {
            v2::shape(&mut update);
        }
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
