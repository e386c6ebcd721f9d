//! The scenario file: what the fake agent advertises, which sessions it has
//! stored, and which turns it plays. The format is documented in the
//! crate's README.md; every field here appears there.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Value};

use crate::step;

/// A whole scenario file.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// Free text for humans; ignored.
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub initialize: Initialize,
    /// `session/new`, `session/load` and `session/resume` answer -32000 until
    /// `authenticate` succeeded.
    #[serde(default)]
    pub auth_required: bool,
    /// `SessionModeState` returned with every session.
    #[serde(default)]
    pub modes: Option<Modes>,
    /// `SessionConfigOption[]` returned with every session.
    #[serde(default)]
    pub config_options: Option<Vec<Value>>,
    /// Sessions that exist before the process starts.
    #[serde(default)]
    pub sessions: Vec<StoredSession>,
    #[serde(default = "default_page_size")]
    pub list_page_size: usize,
    /// Replay each prompt as `user_message_chunk` updates on `session/load`.
    #[serde(default)]
    pub replay_user_messages: bool,
    /// Offer `session/fork` at session cursors: each prompt is echoed with
    /// a message id after a `cursor_update` right before it (see fork.rs).
    #[serde(default)]
    pub fork: bool,
    /// Answer `protocolVersion: 2` when the client offers it, and play v2:
    /// the prompt echoed as `user_message` and acknowledged with its
    /// `messageId`, `state_update`s (running, requires_action before each
    /// permission request, idle with the stop reason and usage), permission
    /// requests as `{title, subject, options}`, resume with `replayFrom`
    /// replaying the history. A client offering 1 gets a v1 agent.
    #[serde(default)]
    pub v2: bool,
    /// Record the updates of live sessions for a later `session/load`.
    #[serde(default = "yes")]
    pub record_history: bool,
    /// Prefix of the ids of sessions created by `session/new`.
    #[serde(default = "default_prefix")]
    pub session_id_prefix: String,
    /// Put the process's start time (Unix seconds) in new session ids,
    /// `<prefix><time>-<n>`, so each run's sessions differ (the demo: its
    /// transcripts piled into one `fake-session-1` entry).
    #[serde(default)]
    pub unique_session_ids: bool,
    /// Steps played after `session/new`, `session/load` and `session/resume`
    /// answered (e.g. `available_commands_update`).
    #[serde(default)]
    pub session_start: Vec<Value>,
    #[serde(default)]
    pub turns: Vec<Turn>,
    /// A JSON file that keeps the sessions across processes: read at start
    /// (its sessions join the stored ones), written whenever a session
    /// changes, so a restarted agent can list, load and resume them.
    #[serde(default)]
    pub session_store: Option<PathBuf>,
    /// A file that keeps the login across processes: `authenticate` and the
    /// `--login` command create it, and while it exists no session needs
    /// `authenticate`.
    #[serde(default)]
    pub auth_file: Option<PathBuf>,
    /// `elicitation/create` params (without `requestId`) sent while serving
    /// `authenticate`, scoped to that request: an accept logs in, anything
    /// else fails the login.
    #[serde(default)]
    pub auth_elicitation: Option<serde_json::Value>,
    /// `session/close` takes effect at once and is answered this many
    /// milliseconds later: a client that reopens the session meanwhile
    /// must not lose it to the close's clean-up.
    #[serde(default)]
    pub close_answer_delay_ms: u64,
}

fn default_page_size() -> usize {
    50
}

fn yes() -> bool {
    true
}

fn default_prefix() -> String {
    "fake-session-".to_owned()
}

/// How `initialize` is answered.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Initialize {
    /// Any JSON value, so tests can answer with versions a client cannot speak.
    #[serde(default = "one")]
    pub protocol_version: Value,
    /// Sent as is; omitted means everything is supported (see README).
    #[serde(default)]
    pub agent_capabilities: Option<Value>,
    #[serde(default)]
    pub auth_methods: Option<Vec<Value>>,
    #[serde(default)]
    pub agent_info: Option<Value>,
    #[serde(default)]
    pub fault: Option<InitFault>,
}

impl Default for Initialize {
    fn default() -> Self {
        Self {
            protocol_version: one(),
            agent_capabilities: None,
            auth_methods: None,
            agent_info: None,
            fault: None,
        }
    }
}

fn one() -> Value {
    json!(1)
}

/// A misbehaviour on `initialize`.
#[derive(Debug, Clone, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase",
    deny_unknown_fields
)]
pub enum InitFault {
    /// Exit before answering, writing `stderr` first.
    Exit {
        #[serde(default)]
        stderr: String,
        #[serde(default = "exit_one")]
        code: i32,
    },
    /// Never answer (the process keeps running).
    Never,
    /// Answer after `ms` milliseconds.
    Delay { ms: u64 },
}

fn exit_one() -> i32 {
    1
}

/// `SessionModeState`.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Modes {
    pub current_mode_id: String,
    pub available_modes: Vec<Mode>,
}

/// `SessionMode`.
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Mode {
    pub id: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A session that exists before the process starts.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StoredSession {
    pub session_id: String,
    pub cwd: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    /// `SessionUpdate` objects replayed by `session/load`, in order.
    #[serde(default)]
    pub history: Vec<Value>,
}

/// One scripted answer to `session/prompt`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Turn {
    /// Played when the prompt text contains this.
    #[serde(default, rename = "match")]
    pub matches: Option<String>,
    /// Played when the prompt text (leading whitespace ignored) starts with this.
    #[serde(default)]
    pub starts_with: Option<String>,
    #[serde(default)]
    pub steps: Vec<Value>,
    /// Any string, so tests can send stop reasons a client does not know.
    #[serde(default = "end_turn")]
    pub stop_reason: String,
    /// Sent as the prompt response's `usage` (unstable in ACP), as is.
    #[serde(default)]
    pub usage: Option<Value>,
}

fn end_turn() -> String {
    "end_turn".to_owned()
}

impl Turn {
    fn has_condition(&self) -> bool {
        self.matches.is_some() || self.starts_with.is_some()
    }

    fn fits(&self, prompt: &str) -> bool {
        let contains = self.matches.as_deref().is_some_and(|m| prompt.contains(m));
        let starts = self
            .starts_with
            .as_deref()
            .is_some_and(|s| prompt.trim_start().starts_with(s));
        contains || starts
    }

    /// The turn played when no scripted turn applies: says the prompt back.
    pub fn echo() -> Self {
        Self {
            matches: None,
            starts_with: None,
            steps: vec![json!({ "type": "text", "text": "{{prompt}}" })],
            stop_reason: end_turn(),
            usage: None,
        }
    }
}

/// Picks the turn for a prompt: the first turn whose condition fits, else the
/// next unconditional turn in order (cycling through them with `cursor`),
/// else `None` (the caller plays the echo turn).
pub fn pick_turn(turns: &[Turn], prompt: &str, cursor: &mut usize) -> Option<usize> {
    if let Some(i) = turns.iter().position(|t| t.fits(prompt)) {
        return Some(i);
    }
    let plain: Vec<usize> = (0..turns.len())
        .filter(|&i| !turns[i].has_condition())
        .collect();
    if plain.is_empty() {
        return None;
    }
    let pick = plain[*cursor % plain.len()];
    *cursor += 1;
    Some(pick)
}

impl Scenario {
    /// Parses and checks a scenario; the error names the place of the problem.
    pub fn parse(text: &str) -> Result<Self, String> {
        let scenario: Scenario = serde_json::from_str(text).map_err(|e| e.to_string())?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// Reads a scenario file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read scenario {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("scenario {} is invalid: {e}", path.display()))
    }

    /// Checks what serde cannot: every step in every list (also nested
    /// branches) is a known step, and option lists have the fields the agent
    /// reads.
    fn validate(&self) -> Result<(), String> {
        step::validate_list(&self.session_start, "sessionStart")?;
        for (i, turn) in self.turns.iter().enumerate() {
            step::validate_list(&turn.steps, &format!("turns[{i}].steps"))?;
        }
        for (i, option) in self.config_options.iter().flatten().enumerate() {
            let kind = option.get("type").and_then(Value::as_str);
            if option.get("id").and_then(Value::as_str).is_none()
                || !matches!(kind, Some("select" | "boolean"))
            {
                return Err(format!(
                    "configOptions[{i}] needs a string `id` and `type` \"select\" or \"boolean\""
                ));
            }
        }
        if let Some(modes) = &self.modes {
            if !modes
                .available_modes
                .iter()
                .any(|m| m.id == modes.current_mode_id)
            {
                return Err(format!(
                    "modes.currentModeId `{}` is not one of modes.availableModes",
                    modes.current_mode_id
                ));
            }
        }
        if self.list_page_size == 0 {
            return Err("listPageSize must be at least 1".to_owned());
        }
        Ok(())
    }

    /// The capabilities sent in `initialize` when the scenario names none:
    /// everything this agent implements.
    pub fn agent_capabilities(&self) -> Value {
        let mut caps = self
            .initialize
            .agent_capabilities
            .clone()
            .unwrap_or_else(|| {
                json!({
                    "loadSession": true,
                    "promptCapabilities": { "image": true, "audio": true, "embeddedContext": true },
                    "mcpCapabilities": { "http": false, "sse": false },
                    "sessionCapabilities": { "list": {}, "resume": {}, "close": {}, "delete": {} }
                })
            });
        if self.fork {
            if let Some(session) = caps
                .get_mut("sessionCapabilities")
                .and_then(Value::as_object_mut)
            {
                session.insert("fork".to_owned(), json!({}));
            }
        }
        caps
    }

    /// The auth methods sent in `initialize`: the scenario's, else one agent
    /// method when auth is required.
    pub fn auth_methods(&self) -> Vec<Value> {
        match &self.initialize.auth_methods {
            Some(methods) => methods.clone(),
            None if self.auth_required => vec![json!({
                "id": "fake-login",
                "name": "Fake login",
                "description": "Accepts anyone; no network involved"
            })],
            None => Vec::new(),
        }
    }

    /// Whether the advertised capabilities include a session method.
    pub fn supports(&self, method: &str) -> bool {
        let caps = self.agent_capabilities();
        let session_cap = |name: &str| {
            caps.get("sessionCapabilities")
                .and_then(|s| s.get(name))
                .is_some_and(|c| !c.is_null())
        };
        match method {
            "session/load" => caps.get("loadSession").and_then(Value::as_bool) == Some(true),
            "session/list" => session_cap("list"),
            "session/resume" => session_cap("resume"),
            "session/close" => session_cap("close"),
            "session/delete" => session_cap("delete"),
            "session/fork" => session_cap("fork"),
            _ => true,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn turns(value: Value) -> Vec<Turn> {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_matching_turn_wins_over_unconditional_ones() {
        let turns = turns(json!([
            {"steps": []},
            {"match": "hello", "steps": []},
            {"startsWith": "/plan", "steps": []}
        ]));
        let mut cursor = 0;
        assert_eq!(pick_turn(&turns, "say hello", &mut cursor), Some(1));
        assert_eq!(pick_turn(&turns, "  /plan it", &mut cursor), Some(2));
        assert_eq!(pick_turn(&turns, "do /plan", &mut cursor), Some(0));
        assert_eq!(cursor, 1, "matched turns do not advance the cycle");
    }

    #[test]
    fn unconditional_turns_cycle_in_order() {
        let turns = turns(json!([
            {"steps": []},
            {"match": "x", "steps": []},
            {"steps": []}
        ]));
        let mut cursor = 0;
        let picks: Vec<_> = (0..4)
            .map(|_| pick_turn(&turns, "a", &mut cursor))
            .collect();
        assert_eq!(picks, [Some(0), Some(2), Some(0), Some(2)]);
    }

    #[test]
    fn no_unconditional_turn_means_echo() {
        let turns = turns(json!([{"match": "x", "steps": []}]));
        assert_eq!(pick_turn(&turns, "a", &mut 0), None);
    }

    #[test]
    fn rejects_unknown_fields_and_steps_with_their_place() {
        let err = Scenario::parse(r#"{"turnz": []}"#).unwrap_err();
        assert!(err.contains("turnz"), "{err}");
        let err = Scenario::parse(r#"{"turns": [{"steps": [{"type": "txt"}]}]}"#).unwrap_err();
        assert!(err.contains("turns[0].steps[0]"), "{err}");
        let err = Scenario::parse(
            r#"{"modes": {"currentModeId": "x", "availableModes": [{"id": "y", "name": "Y"}]}}"#,
        )
        .unwrap_err();
        assert!(err.contains("currentModeId"), "{err}");
    }

    #[test]
    fn defaults_advertise_everything_and_capabilities_gate_methods() {
        let full = Scenario::parse("{}").unwrap();
        assert!(full.supports("session/load") && full.supports("session/delete"));
        let bare = Scenario::parse(r#"{"initialize": {"agentCapabilities": {}}}"#).unwrap();
        assert!(!bare.supports("session/load"));
        assert!(!bare.supports("session/list"));
        assert!(bare.supports("session/prompt"));
    }

    #[test]
    fn auth_required_without_methods_offers_one() {
        let s = Scenario::parse(r#"{"authRequired": true}"#).unwrap();
        assert_eq!(s.auth_methods()[0]["id"], "fake-login");
        assert!(Scenario::parse("{}").unwrap().auth_methods().is_empty());
    }
}
