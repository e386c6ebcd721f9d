//! Steps that ask the client for something and wait: permission
//! requests, terminals, concurrent and self-cancelled requests.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use super::{reply_value, text_content, Flow, Player};
use crate::expect::{Expect, TerminalExpect};
use crate::wire::{self, Reply};

/// The step lists an elicitation chooses from.
pub(super) struct ElicitBranches {
    pub accept: Vec<Value>,
    pub decline: Vec<Value>,
    pub cancel: Vec<Value>,
    pub error: Vec<Value>,
}

impl Player<'_> {
    pub(super) fn request_permission(
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
        let v2 = self.agent.v2.load(std::sync::atomic::Ordering::SeqCst);
        let params = if v2 {
            // v2: the tool call is the subject; the prompt has its own title.
            self.state_update("requires_action");
            let title = tool_call
                .get("title")
                .cloned()
                .unwrap_or_else(|| json!("Allow this tool call?"));
            json!({
                "title": title,
                "subject": { "type": "tool_call", "toolCall": tool_call },
                "options": options,
            })
        } else {
            json!({ "toolCall": tool_call, "options": options })
        };
        let reply = self.call("session/request_permission", Some(params));
        if v2 {
            self.state_update("running");
        }
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

    pub(super) fn elicit(
        &mut self,
        params: Value,
        complete_after_ms: Option<u64>,
        branches: ElicitBranches,
        report: bool,
    ) -> Flow {
        let elicitation_id = params.get("elicitationId").cloned();
        let reply = self.call("elicitation/create", Some(params));
        let (action, content) = match &reply {
            Ok(v) => (
                v.get("action")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .to_owned(),
                v.get("content").cloned(),
            ),
            Err(e) => {
                if report {
                    self.message(&format!("elicitation error {}: {}", e.code, e.message));
                }
                return self.run(&branches.error);
            }
        };
        self.save("elicitation", content.clone().unwrap_or(Value::Null));
        if report {
            match &content {
                Some(c) => self.message(&format!("elicitation: {action} {c}")),
                None => self.message(&format!("elicitation: {action}")),
            }
        }
        if action == "accept" {
            if let (Some(ms), Some(id)) = (complete_after_ms, elicitation_id) {
                if self.cancel.sleep(Duration::from_millis(ms)) {
                    return Flow::End("cancelled".to_owned());
                }
                self.agent
                    .out
                    .notify("elicitation/complete", json!({ "elicitationId": id }));
            }
        }
        let branch = match action.as_str() {
            "accept" => &branches.accept,
            "decline" => &branches.decline,
            "cancel" => &branches.cancel,
            _ => return Flow::Next,
        };
        self.run(branch)
    }

    pub(super) fn run_terminal(
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

    pub(super) fn concurrent_requests(
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

    pub(super) fn cancel_own_request(
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
pub(super) struct Branches {
    pub(super) by_id: BTreeMap<String, Vec<Value>>,
    pub(super) allow: Vec<Value>,
    pub(super) reject: Vec<Value>,
    pub(super) cancelled: Vec<Value>,
}

/// The fields of a `runTerminal` step that shape the terminal.
#[derive(Debug)]
pub(super) struct TerminalRun {
    pub(super) command: String,
    pub(super) args: Vec<String>,
    pub(super) env: Vec<Value>,
    pub(super) cwd: Option<String>,
    pub(super) output_byte_limit: Option<u64>,
    pub(super) tool_call_id: Option<String>,
    pub(super) title: Option<String>,
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

impl Player<'_> {
    /// A v2 `state_update` of this session (not recorded: a replay ends
    /// with the state the agent reports then).
    fn state_update(&self, state: &str) {
        self.agent.out.notify(
            "session/update",
            json!({
                "sessionId": self.session_id,
                "update": { "sessionUpdate": "state_update", "state": state },
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::wire::RpcError;

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
