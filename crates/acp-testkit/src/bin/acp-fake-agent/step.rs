//! The steps a turn is made of. Steps stay raw JSON in the scenario and are
//! decoded here right before they run, after `{{...}}` substitution, so a
//! step can use values saved by the steps before it. Nested step lists
//! (branches, late steps) stay raw for the same reason.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::expect::{Expect, TerminalExpect};

/// One step of a turn. `type` selects the variant; see README.md.
#[derive(Debug, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum Step {
    /// `agent_message_chunk`s carrying `text`, split every `chunkSize` chars.
    Text {
        text: String,
        #[serde(default)]
        chunk_size: Option<usize>,
        #[serde(default)]
        delay_ms: u64,
        #[serde(default)]
        message_id: Option<String>,
    },
    /// Like `text`, as `agent_thought_chunk`s.
    Thought {
        text: String,
        #[serde(default)]
        chunk_size: Option<usize>,
        #[serde(default)]
        delay_ms: u64,
        #[serde(default)]
        message_id: Option<String>,
    },
    /// `count` chunks of `bytes` ASCII bytes each, written as fast as possible.
    Burst {
        count: usize,
        bytes: usize,
        #[serde(default)]
        thought: bool,
    },
    /// Any `session/update` payload, sent as is.
    Update {
        update: Value,
        /// Overrides the session id (e.g. to name a session that does not exist).
        #[serde(default)]
        session_id: Option<String>,
    },
    /// A `tool_call` update.
    ToolCall {
        tool_call_id: String,
        title: String,
        #[serde(default)]
        kind: Option<Value>,
        #[serde(default)]
        status: Option<Value>,
        #[serde(default)]
        content: Option<Value>,
        #[serde(default)]
        locations: Option<Value>,
        #[serde(default)]
        raw_input: Option<Value>,
        #[serde(default)]
        raw_output: Option<Value>,
    },
    /// A `tool_call_update` update; only the given fields are sent.
    ToolCallUpdate {
        tool_call_id: String,
        #[serde(default)]
        title: Option<Value>,
        #[serde(default)]
        kind: Option<Value>,
        #[serde(default)]
        status: Option<Value>,
        #[serde(default)]
        content: Option<Value>,
        #[serde(default)]
        locations: Option<Value>,
        #[serde(default)]
        raw_input: Option<Value>,
        #[serde(default)]
        raw_output: Option<Value>,
    },
    /// A `plan` update (the complete list).
    Plan { entries: Vec<Value> },
    /// An `available_commands_update`.
    Commands { available_commands: Vec<Value> },
    /// A `usage_update`.
    Usage {
        used: u64,
        size: u64,
        #[serde(default)]
        cost: Option<Value>,
    },
    /// A `session_info_update`; `null` clears a field, omitted leaves it.
    SessionInfo {
        #[serde(default, deserialize_with = "present")]
        title: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        updated_at: Option<Value>,
    },
    /// `subagent_update` announcing or changing a child session; with
    /// `toolCallId`, a `tool_call` linking to the child (`session` content)
    /// goes first when `title` is given the first time.
    Subagent {
        child_id: String,
        #[serde(default, deserialize_with = "present")]
        title: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        description: Option<Value>,
        /// `running`, `idle`, `requires_action`, `unknown`.
        #[serde(default)]
        state: Option<String>,
        #[serde(default)]
        stop_reason: Option<String>,
        /// Give the client `capabilities.cancel` for the child.
        #[serde(default)]
        cancel: Option<bool>,
        #[serde(default)]
        tool_call_id: Option<String>,
    },
    /// Updates sent for a child session (`steps` of `text`, `thought`,
    /// `toolCall`, `toolCallUpdate`, `update`, `requestPermission` run with
    /// the child's session id).
    AsSession { child_id: String, steps: Vec<Value> },
    /// `session_message` (with `text` as its content) between sessions.
    SessionMessage {
        message_id: String,
        #[serde(default)]
        sender: Option<String>,
        #[serde(default)]
        recipient: Option<String>,
        text: String,
    },
    /// `plan_update`: a checklist (`entries`) or a Markdown document
    /// (`markdown`, with an optional `path`).
    PlanUpdate {
        plan_id: String,
        #[serde(default)]
        entries: Option<Value>,
        #[serde(default)]
        markdown: Option<String>,
        #[serde(default)]
        path: Option<String>,
    },
    /// `plan_removed`.
    PlanRemoved { plan_id: String },
    /// A command the agent runs itself, reported the codex-acp 2.6.0 way:
    /// a `tool_call` embedding a terminal the client never created, its
    /// output only in `_meta.terminal_output_delta`, the end in
    /// `_meta.terminal_exit`.
    AgentTerminal {
        tool_call_id: String,
        command: String,
        output: Vec<String>,
        #[serde(default)]
        exit_code: i64,
        #[serde(default)]
        delay_ms: u64,
    },
    /// An agent message telling the client system prompt this session got
    /// (`systemPrompt` of its new/load/resume), or that it got none.
    SystemPrompt,
    /// The agent switches mode itself: `current_mode_update`.
    Mode { mode_id: String },
    /// `session/request_permission`, then the branch for the outcome.
    RequestPermission {
        tool_call: Value,
        /// Asks for another session (a subagent's).
        #[serde(default)]
        session_id: Option<String>,
        #[serde(default)]
        options: Option<Vec<Value>>,
        #[serde(default)]
        on: BTreeMap<String, Vec<Value>>,
        #[serde(default)]
        on_allow: Vec<Value>,
        #[serde(default)]
        on_reject: Vec<Value>,
        #[serde(default)]
        on_cancelled: Vec<Value>,
        #[serde(default = "yes")]
        report: bool,
    },
    /// `elicitation/create` tied to the session (and `toolCallId` when
    /// given), then the branch for the action. URL mode: with
    /// `completeAfterMs`, `elicitation/complete` follows an accept.
    Elicit {
        #[serde(default = "form_mode")]
        mode: String,
        #[serde(default)]
        message: String,
        #[serde(default)]
        requested_schema: Option<Value>,
        #[serde(default)]
        url: Option<String>,
        #[serde(default)]
        elicitation_id: Option<String>,
        #[serde(default)]
        tool_call_id: Option<String>,
        #[serde(default)]
        complete_after_ms: Option<u64>,
        #[serde(default)]
        on_accept: Vec<Value>,
        #[serde(default)]
        on_decline: Vec<Value>,
        #[serde(default)]
        on_cancel: Vec<Value>,
        #[serde(default)]
        on_error: Vec<Value>,
        #[serde(default = "yes")]
        report: bool,
    },
    /// Calls `tool` of the MCP server named `server` (default `editor`)
    /// that the session got in `mcpServers`, over HTTP or its stdio
    /// command; the tool's text is saved as `saveAs`, prefixed `error: `
    /// when it is a tool error. A server that cannot be reached fails the
    /// turn.
    McpCall {
        #[serde(default = "editor_server")]
        server: String,
        tool: String,
        #[serde(default)]
        arguments: Value,
        save_as: String,
    },
    /// Any request to the client.
    Call {
        method: String,
        #[serde(default)]
        params: Option<Value>,
        #[serde(default)]
        expect: Option<Expect>,
        #[serde(default)]
        save_as: Option<String>,
        #[serde(default)]
        on_ok: Vec<Value>,
        #[serde(default)]
        on_error: Vec<Value>,
    },
    /// terminal/create, a tool call showing it, wait_for_exit, output, release.
    RunTerminal {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: Vec<Value>,
        #[serde(default)]
        cwd: Option<String>,
        #[serde(default)]
        output_byte_limit: Option<u64>,
        #[serde(default)]
        tool_call_id: Option<String>,
        #[serde(default)]
        title: Option<String>,
        #[serde(default)]
        expect: Option<TerminalExpect>,
        #[serde(default)]
        save_as: Option<String>,
    },
    /// Writes a file on disk directly (as Claude does) and reports a diff.
    WriteDisk {
        path: String,
        content: String,
        #[serde(default)]
        tool_call_id: Option<String>,
        #[serde(default)]
        title: Option<String>,
        /// `false`: report the edit with `locations` only, no diff content.
        #[serde(default = "yes")]
        diff: bool,
        /// Rewrite the file in place the slow way: truncate it, announce the
        /// tool call, and write the content this many ms later, so the
        /// client reads it half written (an agent using a plain
        /// truncate-then-write, caught in between).
        #[serde(default)]
        torn_ms: Option<u64>,
        /// With `tornMs`: the truncated file keeps the time it had, as
        /// Linux shows it for an instant after a truncation (measured on
        /// ext4), so a client cannot tell it from a file that was empty.
        #[serde(default)]
        torn_keeps_time: bool,
    },
    /// Blocks until `session/cancel`; the turn then ends `cancelled`.
    WaitForCancel {
        #[serde(default)]
        ignore_cancel: bool,
    },
    /// Sleeps; a cancel ends the sleep early.
    Sleep { ms: u64 },
    /// Exits mid-turn.
    Crash {
        #[serde(default)]
        stderr: String,
        #[serde(default = "exit_one")]
        code: i32,
    },
    /// Writes `line` and a newline to stdout.
    RawLine { line: String },
    /// Writes bytes given in hex (whitespace ignored) to stdout.
    RawBytes {
        hex: String,
        #[serde(default = "yes")]
        newline: bool,
    },
    /// Writes any JSON value as one line (e.g. JSON that is not JSON-RPC).
    Json { value: Value },
    /// Writes one line of `bytes` bytes.
    OversizedLine {
        bytes: usize,
        #[serde(default = "yes")]
        json: bool,
    },
    /// Writes `bytes` bytes of log lines to stderr.
    FloodStderr { bytes: usize },
    /// Stops reading stdin for good.
    StopReadingStdin,
    /// Spawns a long-lived child process and prints its pid to stderr.
    SpawnGrandchild {
        #[serde(default)]
        command: Option<Vec<String>>,
    },
    /// Steps played `delayMs` after the prompt response.
    Late {
        #[serde(default)]
        delay_ms: u64,
        steps: Vec<Value>,
    },
    /// Sends `count` requests at once, then waits for every answer.
    ConcurrentRequests {
        count: usize,
        method: String,
        #[serde(default)]
        params: Option<Value>,
        #[serde(default)]
        expect: Option<Expect>,
    },
    /// Sends a request, then `$/cancel_request` for it, then waits for the answer.
    CancelOwnRequest {
        method: String,
        #[serde(default)]
        params: Option<Value>,
        #[serde(default)]
        expect: Option<Expect>,
        #[serde(default)]
        save_as: Option<String>,
    },
    /// Sets the stop reason the turn ends with.
    StopReason { value: String },
    /// Plays the prompt text, from its first `[` on, as a JSON list of steps.
    PromptSteps,
    /// Blocks until a file exists; a cancel does not end the wait.
    WaitForFile { path: String },
    /// Writes the prompt's content blocks, as a JSON array, to `path`.
    SavePrompt { path: String },
    /// Replaces the one occurrence of `old` in a file on disk by `new`
    /// (as Claude's `Edit` tool does) and reports the snippets as a diff.
    ReplaceDisk {
        path: String,
        old: String,
        new: String,
        #[serde(default)]
        tool_call_id: Option<String>,
        #[serde(default)]
        title: Option<String>,
    },
    ToolCallBurst {
        count: usize,
        #[serde(default = "burst_prefix")]
        id_prefix: String,
    },
    TimedCalls {
        count: usize,
        method: String,
        #[serde(default)]
        params: Option<Value>,
        #[serde(default)]
        save_as: Option<String>,
    },
}

fn burst_prefix() -> String {
    "burst-".to_owned()
}

fn yes() -> bool {
    true
}

fn form_mode() -> String {
    "form".to_owned()
}

fn exit_one() -> i32 {
    1
}

/// Deserializes a field that is present, keeping an explicit `null` as
/// `Some(Value::Null)` (absent stays `None` through `#[serde(default)]`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

impl Step {
    /// Decodes one step.
    pub fn decode(value: &Value) -> Result<Self, String> {
        Step::deserialize(value).map_err(|e| e.to_string())
    }

    /// The nested step lists of this step, with their names.
    fn children(&self) -> Vec<(String, &[Value])> {
        match self {
            Step::RequestPermission {
                on,
                on_allow,
                on_reject,
                on_cancelled,
                ..
            } => {
                let mut lists: Vec<(String, &[Value])> = vec![
                    ("onAllow".to_owned(), on_allow),
                    ("onReject".to_owned(), on_reject),
                    ("onCancelled".to_owned(), on_cancelled),
                ];
                lists.extend(on.iter().map(|(k, v)| (format!("on.{k}"), v.as_slice())));
                lists
            }
            Step::Call {
                on_ok, on_error, ..
            } => vec![("onOk".to_owned(), on_ok), ("onError".to_owned(), on_error)],
            Step::Elicit {
                on_accept,
                on_decline,
                on_cancel,
                on_error,
                ..
            } => vec![
                ("onAccept".to_owned(), on_accept),
                ("onDecline".to_owned(), on_decline),
                ("onCancel".to_owned(), on_cancel),
                ("onError".to_owned(), on_error),
            ],
            Step::Late { steps, .. } => vec![("steps".to_owned(), steps)],
            Step::AsSession { steps, .. } => vec![("steps".to_owned(), steps)],
            _ => Vec::new(),
        }
    }
}

/// Checks that every step of a list, and of the lists nested in it, decodes.
/// `place` names the list in error messages (e.g. `turns[2].steps`).
pub fn validate_list(steps: &[Value], place: &str) -> Result<(), String> {
    for (i, value) in steps.iter().enumerate() {
        let here = format!("{place}[{i}]");
        let step = Step::decode(value).map_err(|e| format!("{here}: {e}"))?;
        if let Step::RawBytes { hex, .. } = &step {
            parse_hex(hex).map_err(|e| format!("{here}: {e}"))?;
        }
        for (name, list) in step.children() {
            validate_list(list, &format!("{here}.{name}"))?;
        }
    }
    Ok(())
}

/// Parses hex digits into bytes; whitespace between bytes is ignored.
pub fn parse_hex(hex: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<char> = hex.chars().filter(|c| !c.is_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("hex `{hex}` has an odd number of digits"));
    }
    digits
        .chunks(2)
        .map(|pair| {
            let text: String = pair.iter().collect();
            u8::from_str_radix(&text, 16).map_err(|_| format!("`{text}` is not a hex byte"))
        })
        .collect()
}

fn editor_server() -> String {
    "editor".to_owned()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn decodes_steps_and_rejects_unknown_fields() {
        assert!(matches!(
            Step::decode(&json!({"type": "text", "text": "hi", "chunkSize": 2})).unwrap(),
            Step::Text {
                chunk_size: Some(2),
                ..
            }
        ));
        assert!(matches!(
            Step::decode(&json!({"type": "stopReadingStdin"})).unwrap(),
            Step::StopReadingStdin
        ));
        let err = Step::decode(&json!({"type": "text", "text": "hi", "chunk": 2})).unwrap_err();
        assert!(err.contains("chunk"), "{err}");
    }

    #[test]
    fn save_prompt_needs_a_path() {
        assert!(matches!(
            Step::decode(&json!({"type": "savePrompt", "path": "p.json"})).unwrap(),
            Step::SavePrompt { ref path } if path == "p.json"
        ));
        assert!(Step::decode(&json!({"type": "savePrompt"})).is_err());
    }

    #[test]
    fn session_info_tells_null_from_absent() {
        let Step::SessionInfo { title, updated_at } =
            Step::decode(&json!({"type": "sessionInfo", "title": null})).unwrap()
        else {
            panic!("wrong step");
        };
        assert_eq!(title, Some(Value::Null));
        assert_eq!(updated_at, None);
    }

    #[test]
    fn validation_reaches_into_branches() {
        let steps = vec![json!({
            "type": "requestPermission",
            "toolCall": {"toolCallId": "t"},
            "onAllow": [{"type": "late", "steps": [{"type": "bogus"}]}]
        })];
        let err = validate_list(&steps, "turns[0].steps").unwrap_err();
        assert!(
            err.starts_with("turns[0].steps[0].onAllow[0].steps[0]:"),
            "{err}"
        );
    }

    #[test]
    fn hex_parses_with_spaces_and_rejects_junk() {
        assert_eq!(parse_hex("ff fe 0A").unwrap(), vec![0xff, 0xfe, 0x0a]);
        assert!(parse_hex("f").is_err());
        assert!(parse_hex("zz").is_err());
        let bad = vec![json!({"type": "rawBytes", "hex": "xyz1"})];
        assert!(validate_list(&bad, "s").is_err());
    }
}
