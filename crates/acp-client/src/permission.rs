//! `session/request_permission`: the request an editor shows, the decision it
//! returns, and the client's own memory of "always" decisions.

// `Error`'s size is the crate's choice (error.rs); boxing it here would
// only move the cost.
#![allow(clippy::result_large_err)]

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::update::{SessionId, ToolCallFields, ToolContent, ToolKind};

/// Identifies one pending permission prompt, so an editor can answer it later
/// (for example from a UI event) and be told when it was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct PermissionRequestId(pub u64);

/// A permission prompt as the editor sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    /// Identifies this prompt until it is answered.
    pub id: PermissionRequestId,
    /// The session asking.
    pub session_id: SessionId,
    /// The tool call, merged with what the session already knew about it
    /// (some agents ask before sending the matching `tool_call`).
    pub tool_call: ToolCallFields,
    /// The choices, in the agent's order.
    pub options: Vec<PermissionOption>,
}

/// One choice offered by the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// The id to answer with.
    pub option_id: String,
    /// The label to show (display only: the kind decides what it means).
    pub name: String,
    /// What choosing it means.
    pub kind: OptionKind,
}

/// The kind of a permission option. Unknown kinds keep their wire name and
/// are still offered to the user.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OptionKind {
    /// Allow this time.
    AllowOnce,
    /// Allow, and remember for the same kind of tool and subject.
    AllowAlways,
    /// Reject this time.
    RejectOnce,
    /// Reject, and remember for the same kind of tool and subject.
    RejectAlways,
    /// A kind this client does not know, by its wire name.
    Unknown(String),
}

impl OptionKind {
    /// Parses the wire name; never fails.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "allow_once" => OptionKind::AllowOnce,
            "allow_always" => OptionKind::AllowAlways,
            "reject_once" => OptionKind::RejectOnce,
            "reject_always" => OptionKind::RejectAlways,
            other => OptionKind::Unknown(other.to_owned()),
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            OptionKind::AllowOnce => "allow_once",
            OptionKind::AllowAlways => "allow_always",
            OptionKind::RejectOnce => "reject_once",
            OptionKind::RejectAlways => "reject_always",
            OptionKind::Unknown(s) => s,
        }
    }
}

impl Serialize for OptionKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The editor's answer to a permission prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionDecision {
    /// The user picked this option.
    Selected {
        #[serde(rename = "optionId")]
        /// The chosen option's id.
        option_id: String,
    },
    /// The prompt was dismissed or the turn was cancelled.
    Cancelled,
}

/// The subject a remembered decision is about, so an "always" answer only
/// ever covers the same kind of action on the same thing.
///
/// - `execute`: the command line, from `rawInput.command` or `rawInput.cmd`
///   (a string, or an array of strings joined with spaces), else the title.
/// - `read`, `edit`, `delete`, `move`: the lexically normalized paths the
///   call touches, from its locations and diff contents (in order, without
///   duplicates, one per line), else `rawInput.path` / `file_path` /
///   `abs_path`, else the title. All paths count, not just the first, so an
///   "always" for editing `a.rs` cannot approve a call that edits `a.rs`
///   and `b.rs`.
/// - any other kind (or none): the title.
///
/// Empty when nothing identifies the action; [`PermissionPolicy`] never
/// remembers or matches an empty subject.
pub fn subject_of(tool_call: &ToolCallFields) -> String {
    let title = || tool_call.title.as_deref().unwrap_or("").trim().to_owned();
    match &tool_call.kind {
        Some(ToolKind::Execute) => command_of(tool_call.raw_input.as_ref()).unwrap_or_else(title),
        Some(ToolKind::Read | ToolKind::Edit | ToolKind::Delete | ToolKind::Move) => {
            let paths = paths_of(tool_call);
            if paths.is_empty() {
                title()
            } else {
                paths.join("\n")
            }
        }
        _ => title(),
    }
}

fn command_of(raw_input: Option<&Value>) -> Option<String> {
    let raw = raw_input?;
    let value = raw.get("command").or_else(|| raw.get("cmd"))?;
    let command = match value {
        Value::String(s) => s.trim().to_owned(),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match p {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => return None,
    };
    (!command.is_empty()).then_some(command)
}

fn paths_of(tool_call: &ToolCallFields) -> Vec<String> {
    fn add(paths: &mut Vec<String>, p: &Path) {
        let p = normalize_lexically(p).to_string_lossy().into_owned();
        if !p.is_empty() && !paths.contains(&p) {
            paths.push(p);
        }
    }
    let mut paths = Vec::new();
    for location in tool_call.locations.iter().flatten() {
        add(&mut paths, &location.path);
    }
    for content in tool_call.content.iter().flatten() {
        if let ToolContent::Diff { path, .. } = content {
            add(&mut paths, path);
        }
    }
    if paths.is_empty() {
        if let Some(raw) = &tool_call.raw_input {
            let field = ["path", "file_path", "abs_path"]
                .iter()
                .find_map(|k| raw.get(*k).and_then(Value::as_str));
            if let Some(p) = field {
                add(&mut paths, Path::new(p));
            }
        }
    }
    paths
}

/// Resolves `.` and `..` without touching the disk (the subject must not
/// depend on what exists right now).
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                // `/..` is `/`.
                Some(Component::RootDir | Component::Prefix(_)) => {}
                // A relative path climbing above its start keeps its `..`.
                _ => out.push(".."),
            },
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// What a remembered decision is about. `session_id` is `None` for
/// project-wide decisions (those saved to and loaded from disk).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryKey {
    /// The session the decision was made in; `None` = any session of the project.
    pub session_id: Option<String>,
    /// The tool kind's wire name (`"other"` when the agent sent none).
    pub tool_kind: String,
    /// See [`subject_of`].
    pub subject: String,
}

/// A remembered "always" answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Remembered {
    /// The user chose an `allow_always` option.
    Allow,
    /// The user chose a `reject_always` option.
    Reject,
}

/// Where persisted decisions go, once [`PermissionPolicy::persist_in`] ran.
#[derive(Debug)]
struct Persistence {
    file: PathBuf,
    project_root: PathBuf,
}

/// The state file's format.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateFile {
    version: u32,
    project_root: String,
    decisions: Vec<StoredDecision>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct StoredDecision {
    tool_kind: String,
    subject: String,
    decision: Remembered,
}

const STATE_VERSION: u32 = 1;

/// Client-side permission memory plus optional auto-allow rules (off by
/// default).
///
/// The memory holds the user's `allow_always` / `reject_always` answers,
/// keyed by session, tool kind and [`subject_of`] the tool call, and answers
/// later requests with the same key without asking. It never generalizes:
/// an "always" for `execute: cargo test` approves neither `execute: rm -rf x`
/// nor any edit. Option names are display text only; decisions follow the
/// option's `kind`. Remembering can be switched off with
/// [`PermissionPolicy::set_remember`].
#[derive(Debug)]
pub struct PermissionPolicy {
    memory: HashMap<MemoryKey, Remembered>,
    auto_allow: HashSet<String>,
    persistence: Option<Persistence>,
    remember: bool,
}

impl Default for PermissionPolicy {
    fn default() -> Self {
        Self {
            memory: HashMap::new(),
            auto_allow: HashSet::new(),
            persistence: None,
            remember: true,
        }
    }
}

fn tool_kind_name(tool_call: &ToolCallFields) -> String {
    // ACP defaults an omitted kind to `other`.
    tool_call
        .kind
        .as_ref()
        .map_or("other", ToolKind::as_str)
        .to_owned()
}

/// The agent's first option of the preferred kind, else of the fallback kind.
fn pick_option(
    options: &[PermissionOption],
    preferred: OptionKind,
    fallback: OptionKind,
) -> Option<&PermissionOption> {
    options
        .iter()
        .find(|o| o.kind == preferred)
        .or_else(|| options.iter().find(|o| o.kind == fallback))
}

impl PermissionPolicy {
    /// An empty memory that remembers, no auto-allow rules, nothing
    /// persisted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether [`PermissionPolicy::record`] remembers "always" answers
    /// (`true` by default). With `false`, `record` does nothing, so every
    /// later request is asked again (or answered by an auto-allow rule).
    /// Decisions remembered before stay until [`PermissionPolicy::clear`] or
    /// [`PermissionPolicy::forget`].
    pub fn set_remember(&mut self, remember: bool) {
        self.remember = remember;
    }

    /// Whether "always" answers are remembered; see
    /// [`PermissionPolicy::set_remember`].
    pub fn remembers(&self) -> bool {
        self.remember
    }

    /// Auto-allow every request whose tool kind is one of `kinds` (wire
    /// names such as `"read"`, `"search"`, `"think"`), replacing the previous
    /// set. Empty by default. A remembered `Reject` still wins over a rule.
    pub fn auto_allow_kinds(&mut self, kinds: impl IntoIterator<Item = String>) {
        self.auto_allow = kinds.into_iter().collect();
    }

    /// Answers a request from memory or an auto-allow rule, or returns
    /// `None` when the user must be asked.
    ///
    /// The session's own decision is looked up first, then the project-wide
    /// one, then the auto-allow rules. An allow is answered with the agent's
    /// `allow_once` option, falling back to `allow_always`; a reject with
    /// `reject_once`, falling back to `reject_always`. "Once" is preferred
    /// because our memory is the one authority on scope: some agents widen an
    /// `allow_always` on their side (claude-agent-acp turns an "always" on an
    /// edit into accept-edits mode for the whole session). When the request
    /// offers no option of the needed kind, the user is asked.
    pub fn decide(&self, request: &PermissionRequest) -> Option<PermissionDecision> {
        let tool_kind = tool_kind_name(&request.tool_call);
        let subject = subject_of(&request.tool_call);
        let remembered = if subject.is_empty() {
            None
        } else {
            let mut key = MemoryKey {
                session_id: Some(request.session_id.to_string()),
                tool_kind: tool_kind.clone(),
                subject,
            };
            self.memory.get(&key).copied().or_else(|| {
                key.session_id = None;
                self.memory.get(&key).copied()
            })
        };
        let wanted = match remembered {
            Some(r) => r,
            None if self.auto_allow.contains(&tool_kind) => Remembered::Allow,
            None => return None,
        };
        let option = match wanted {
            Remembered::Allow => pick_option(
                &request.options,
                OptionKind::AllowOnce,
                OptionKind::AllowAlways,
            ),
            Remembered::Reject => pick_option(
                &request.options,
                OptionKind::RejectOnce,
                OptionKind::RejectAlways,
            ),
        }?;
        Some(PermissionDecision::Selected {
            option_id: option.option_id.clone(),
        })
    }

    /// Records the user's answer. Only options of kind `allow_always` and
    /// `reject_always` are remembered (whatever their name says); other and
    /// unknown kinds, unknown option ids and requests with an empty subject
    /// are not. Without persistence the decision is scoped to the request's
    /// session; with persistence it is project-wide at once and saved, so it
    /// means the same before and after a restart. The save is a small
    /// synchronous atomic write; a failed save is logged and the decision
    /// still holds in memory. Does nothing after `set_remember(false)`.
    pub fn record(&mut self, request: &PermissionRequest, option_id: &str) {
        if !self.remember {
            tracing::debug!(option_id, "remembering is off; answer not remembered");
            return;
        }
        let Some(option) = request.options.iter().find(|o| o.option_id == option_id) else {
            tracing::debug!(
                option_id,
                "permission answer names no offered option; not remembered"
            );
            return;
        };
        let remembered = match option.kind {
            OptionKind::AllowAlways => Remembered::Allow,
            OptionKind::RejectAlways => Remembered::Reject,
            _ => return,
        };
        let subject = subject_of(&request.tool_call);
        if subject.is_empty() {
            tracing::info!(
                "\"always\" answer not remembered: the tool call names no command, path or title"
            );
            return;
        }
        let session_key = MemoryKey {
            session_id: Some(request.session_id.to_string()),
            tool_kind: tool_kind_name(&request.tool_call),
            subject,
        };
        if self.persistence.is_some() {
            // Drop an older session-only answer so it cannot shadow this one.
            self.memory.remove(&session_key);
            let key = MemoryKey {
                session_id: None,
                ..session_key
            };
            self.memory.insert(key, remembered);
            self.save_logged();
        } else {
            self.memory.insert(session_key, remembered);
        }
    }

    /// Every remembered decision, sorted by key.
    pub fn entries(&self) -> Vec<(MemoryKey, Remembered)> {
        let mut entries: Vec<_> = self.memory.iter().map(|(k, v)| (k.clone(), *v)).collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        entries
    }

    /// Forgets every remembered decision (and empties the state file when
    /// persistence is on). Auto-allow rules stay.
    pub fn clear(&mut self) {
        self.memory.clear();
        self.save_logged();
    }

    /// Forgets one decision; true when it existed. A project-wide one is
    /// also removed from the state file.
    pub fn forget(&mut self, key: &MemoryKey) -> bool {
        let removed = self.memory.remove(key).is_some();
        if removed && key.session_id.is_none() {
            self.save_logged();
        }
        removed
    }

    /// Enables persistence for `project_root` in the default state
    /// directory (`$XDG_STATE_HOME`, else `~/.local/state`); see
    /// [`PermissionPolicy::persist_in`].
    pub fn persist_to(&mut self, project_root: &Path) -> Result<()> {
        let state_home = default_state_home().ok_or_else(|| Error::PermissionState {
            path: PathBuf::from("$XDG_STATE_HOME"),
            reason: "neither XDG_STATE_HOME nor HOME is set, so there is nowhere to save permission decisions; set one of them".to_owned(),
        })?;
        self.persist_in(&state_home, project_root)
    }

    /// Enables persistence for `project_root` with `state_home` standing in
    /// for `$XDG_STATE_HOME`, and loads the decisions saved there before.
    ///
    /// Decisions live in `<state_home>/acp.nvim/permissions/<hash>.json`
    /// ([`PermissionPolicy::state_file_in`]), which also names the project
    /// root. Loaded decisions apply to every session, still per tool kind
    /// and subject; they replace the project-wide decisions in memory (of a
    /// previous project). Session-only decisions stay as they are.
    ///
    /// Errors: an unreadable file, a file from a newer acp.nvim or one that
    /// belongs to another project leave persistence off. A corrupt file is
    /// moved aside to `<file>.corrupt` and persistence starts empty; the
    /// error says so, and the policy keeps working either way.
    pub fn persist_in(&mut self, state_home: &Path, project_root: &Path) -> Result<()> {
        let root = canonical_root(project_root);
        let file = state_file_in(state_home, &root);
        let state_err = |reason: String| Error::PermissionState {
            path: file.clone(),
            reason,
        };
        let loaded = match std::fs::read(&file) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                return Err(state_err(format!(
                    "could not read it ({e}); check its permissions"
                )))
            }
        };
        let root_text = root.to_string_lossy().into_owned();
        let mut corrupt = None;
        let mut decisions = Vec::new();
        if let Some(bytes) = loaded {
            match parse_state(&bytes) {
                Ok(ParsedState::Newer(v)) => {
                    return Err(state_err(format!(
                        "it was written by a newer acp.nvim (format {v}, this one reads {STATE_VERSION}); update acp.nvim"
                    )))
                }
                Ok(ParsedState::Current(state)) if state.project_root != root_text => {
                    return Err(state_err(format!(
                        "it belongs to project `{}`, not `{root_text}`; delete the file to start over",
                        state.project_root
                    )))
                }
                Ok(ParsedState::Current(state)) => decisions = state.decisions,
                Err(reason) => corrupt = Some(reason),
            }
        }

        self.memory.retain(|k, _| k.session_id.is_some());
        for d in decisions {
            if d.subject.is_empty() {
                continue;
            }
            let key = MemoryKey {
                session_id: None,
                tool_kind: d.tool_kind,
                subject: d.subject,
            };
            self.memory.insert(key, d.decision);
        }
        self.persistence = Some(Persistence {
            file: file.clone(),
            project_root: root,
        });

        match corrupt {
            None => Ok(()),
            Some(reason) => {
                let mut aside = file.clone().into_os_string();
                aside.push(".corrupt");
                let aside = PathBuf::from(aside);
                let moved = match std::fs::rename(&file, &aside) {
                    Ok(()) => format!("it was moved to `{}`", aside.display()),
                    Err(e) => format!("it could not be moved aside ({e}) and will be overwritten"),
                };
                tracing::warn!(file = %file.display(), %reason, "corrupt permission memory");
                Err(state_err(format!(
                    "the file is corrupt ({reason}); {moved} and remembered decisions start empty"
                )))
            }
        }
    }

    /// The state file for `project_root` in the default state directory, or
    /// `None` when neither `$XDG_STATE_HOME` nor `$HOME` is set (there is
    /// no safe default: a shared directory would let others plant
    /// decisions).
    pub fn state_file_for(project_root: &Path) -> Option<PathBuf> {
        default_state_home().map(|home| state_file_in(&home, &canonical_root(project_root)))
    }

    /// The state file for `project_root` under `state_home`:
    /// `<state_home>/acp.nvim/permissions/<16 hex digits>.json`, named by a
    /// stable (FNV-1a 64) hash of the canonical project root.
    pub fn state_file_in(state_home: &Path, project_root: &Path) -> PathBuf {
        state_file_in(state_home, &canonical_root(project_root))
    }

    /// Saves the project-wide decisions when persistence is on; errors are
    /// logged because the callers (record, forget, clear) have no one to
    /// report them to and the decision holds in memory anyway.
    fn save_logged(&self) {
        if let Err(e) = self.save() {
            tracing::warn!(error = %e, "could not save permission memory");
        }
    }

    fn save(&self) -> Result<()> {
        let Some(p) = &self.persistence else {
            return Ok(());
        };
        let decisions = self
            .entries()
            .into_iter()
            .filter(|(k, _)| k.session_id.is_none())
            .map(|(k, decision)| StoredDecision {
                tool_kind: k.tool_kind,
                subject: k.subject,
                decision,
            })
            .collect();
        let state = StateFile {
            version: STATE_VERSION,
            project_root: p.project_root.to_string_lossy().into_owned(),
            decisions,
        };
        let mut json = serde_json::to_vec_pretty(&state).map_err(|e| Error::PermissionState {
            path: p.file.clone(),
            reason: format!("could not encode it: {e}"),
        })?;
        json.push(b'\n');
        crate::fs::write_atomic_blocking(&p.file, &json, false).map(|_| ())
    }
}

/// A state file as read from disk.
enum ParsedState {
    Current(StateFile),
    /// Written by a newer acp.nvim in this format version.
    Newer(u64),
}

/// Decodes a state file, checking the version before the rest so a file
/// from a newer acp.nvim is reported as such, not as corrupt.
fn parse_state(bytes: &[u8]) -> Result<ParsedState, String> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    match value.get("version").and_then(Value::as_u64) {
        Some(v) if v == u64::from(STATE_VERSION) => serde_json::from_value(value)
            .map(ParsedState::Current)
            .map_err(|e| e.to_string()),
        Some(v) if v > u64::from(STATE_VERSION) => Ok(ParsedState::Newer(v)),
        Some(v) => Err(format!("unknown format version {v}")),
        None => Err("no format version".to_owned()),
    }
}

/// `$XDG_STATE_HOME` when set to an absolute path (the XDG spec says to
/// ignore relative ones), else `$HOME/.local/state`.
fn default_state_home() -> Option<PathBuf> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    absolute("XDG_STATE_HOME").or_else(|| absolute("HOME").map(|h| h.join(".local/state")))
}

/// The project root as the key of its state file: absolute, `..` and
/// symlinks resolved, so every spelling of the same directory shares one file.
fn canonical_root(project_root: &Path) -> PathBuf {
    let absolute = std::path::absolute(project_root).unwrap_or_else(|_| project_root.to_owned());
    crate::fs::resolve_symlinks(&absolute).unwrap_or_else(|_| normalize_lexically(&absolute))
}

fn state_file_in(state_home: &Path, canonical_root: &Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    // FNV-1a: tiny and stable across Rust versions, unlike std's hasher.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canonical_root.as_os_str().as_bytes() {
        hash ^= u64::from(*b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    state_home
        .join("acp.nvim")
        .join("permissions")
        .join(format!("{hash:016x}.json"))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use agent_client_protocol_schema::v1::ToolCallLocation;
    use serde_json::json;

    fn opt(id: &str, name: &str, kind: &str) -> PermissionOption {
        PermissionOption {
            option_id: id.to_owned(),
            name: name.to_owned(),
            kind: OptionKind::from_wire(kind),
        }
    }

    /// The four standard options, named honestly.
    fn standard_options() -> Vec<PermissionOption> {
        vec![
            opt("always", "Always allow", "allow_always"),
            opt("once", "Allow", "allow_once"),
            opt("no", "Reject", "reject_once"),
            opt("never", "Always reject", "reject_always"),
        ]
    }

    fn request(session: &str, tool_call: ToolCallFields) -> PermissionRequest {
        PermissionRequest {
            id: PermissionRequestId(1),
            session_id: SessionId::new(session),
            tool_call,
            options: standard_options(),
        }
    }

    fn exec(command: &str) -> ToolCallFields {
        let mut tc = ToolCallFields::new("t1");
        tc.kind = Some(ToolKind::Execute);
        tc.title = Some(format!("Run {command}"));
        tc.raw_input = Some(json!({ "command": command }));
        tc
    }

    fn edit(path: &str) -> ToolCallFields {
        let mut tc = ToolCallFields::new("t2");
        tc.kind = Some(ToolKind::Edit);
        tc.title = Some("Edit file".to_owned());
        tc.locations = Some(vec![ToolCallLocation::new(path)]);
        tc
    }

    fn of_kind(kind: &str, title: &str) -> ToolCallFields {
        let mut tc = ToolCallFields::new("t3");
        tc.kind = Some(ToolKind::from_wire(kind));
        tc.title = Some(title.to_owned());
        tc
    }

    fn selected(id: &str) -> Option<PermissionDecision> {
        Some(PermissionDecision::Selected {
            option_id: id.to_owned(),
        })
    }

    #[test]
    fn subject_of_execute_is_the_command_line() {
        assert_eq!(subject_of(&exec("cargo test")), "cargo test");
        let mut tc = exec("x");
        tc.raw_input = Some(json!({ "command": ["bash", "-lc", "make all"] }));
        assert_eq!(subject_of(&tc), "bash -lc make all");
        tc.raw_input = Some(json!({ "cmd": "  ls -la " }));
        assert_eq!(subject_of(&tc), "ls -la");
        tc.raw_input = Some(json!({ "other": 1 }));
        assert_eq!(subject_of(&tc), "Run x");
    }

    #[test]
    fn subject_of_file_kinds_is_every_normalized_path() {
        assert_eq!(subject_of(&edit("/p/src/../src/./a.rs")), "/p/src/a.rs");

        let mut tc = edit("/p/a.rs");
        tc.content = Some(vec![
            ToolContent::Diff {
                path: "/p/a.rs".into(),
                old_text: None,
                new_text: String::new(),
            },
            ToolContent::Diff {
                path: "/p/b.rs".into(),
                old_text: None,
                new_text: String::new(),
            },
        ]);
        assert_eq!(subject_of(&tc), "/p/a.rs\n/p/b.rs");

        let mut tc = of_kind("read", "Read it");
        tc.raw_input = Some(json!({ "file_path": "/p/c.rs" }));
        assert_eq!(subject_of(&tc), "/p/c.rs");
        tc.raw_input = None;
        assert_eq!(subject_of(&tc), "Read it");
    }

    #[test]
    fn subject_of_other_kinds_is_the_title() {
        assert_eq!(
            subject_of(&of_kind("fetch", "Fetch https://x")),
            "Fetch https://x"
        );
        let mut tc = ToolCallFields::new("t");
        tc.raw_input = Some(json!({ "command": "ls" }));
        assert_eq!(subject_of(&tc), "");
    }

    #[test]
    fn lexical_normalization() {
        assert_eq!(
            normalize_lexically(Path::new("/a/../../b")),
            PathBuf::from("/b")
        );
        assert_eq!(
            normalize_lexically(Path::new("../a/./b/..")),
            PathBuf::from("../a")
        );
    }

    #[test]
    fn allow_always_covers_only_the_same_kind_and_subject() {
        let mut policy = PermissionPolicy::new();
        let cargo = request("s1", exec("cargo test"));
        assert_eq!(policy.decide(&cargo), None);
        policy.record(&cargo, "always");

        assert_eq!(policy.decide(&cargo), selected("once"));
        assert_eq!(policy.decide(&request("s1", exec("rm -rf x"))), None);
        assert_eq!(
            policy.decide(&request("s1", exec("cargo test && rm -rf x"))),
            None
        );
        assert_eq!(policy.decide(&request("s1", edit("/p/a.rs"))), None);
        // Same text, different kind.
        let mut as_edit = edit("cargo test");
        as_edit.locations = None;
        as_edit.title = Some("cargo test".to_owned());
        assert_eq!(policy.decide(&request("s1", as_edit)), None);
    }

    #[test]
    fn always_for_one_file_does_not_cover_a_call_touching_another_too() {
        let mut policy = PermissionPolicy::new();
        policy.record(&request("s1", edit("/p/a.rs")), "always");
        let mut both = edit("/p/a.rs");
        both.locations = Some(vec![
            ToolCallLocation::new("/p/a.rs"),
            ToolCallLocation::new("/p/b.rs"),
        ]);
        assert_eq!(policy.decide(&request("s1", both)), None);
        assert_eq!(
            policy.decide(&request("s1", edit("/p/a.rs"))),
            selected("once")
        );
    }

    #[test]
    fn reject_always_is_remembered() {
        let mut policy = PermissionPolicy::new();
        let rm = request("s1", exec("rm -rf /"));
        policy.record(&rm, "never");
        assert_eq!(policy.decide(&rm), selected("no"));
        assert_eq!(
            policy.entries(),
            vec![(
                MemoryKey {
                    session_id: Some("s1".to_owned()),
                    tool_kind: "execute".to_owned(),
                    subject: "rm -rf /".to_owned(),
                },
                Remembered::Reject
            )]
        );
    }

    #[test]
    fn falls_back_to_the_always_option_and_asks_when_no_option_fits() {
        let mut policy = PermissionPolicy::new();
        let cargo = request("s1", exec("cargo test"));
        policy.record(&cargo, "always");

        let mut only_always = cargo.clone();
        only_always.options = vec![
            opt("a", "Always", "allow_always"),
            opt("r", "No", "reject_once"),
        ];
        assert_eq!(policy.decide(&only_always), selected("a"));

        let mut only_reject = cargo.clone();
        only_reject.options = vec![opt("r", "No", "reject_once")];
        assert_eq!(policy.decide(&only_reject), None);
    }

    #[test]
    fn decisions_are_scoped_to_their_session() {
        let mut policy = PermissionPolicy::new();
        policy.record(&request("s1", exec("cargo test")), "always");
        assert_eq!(policy.decide(&request("s2", exec("cargo test"))), None);
        assert_eq!(
            policy.decide(&request("s1", exec("cargo test"))),
            selected("once")
        );
    }

    #[test]
    fn only_always_kinds_are_remembered() {
        let mut policy = PermissionPolicy::new();
        let mut req = request("s1", exec("make"));
        req.options
            .push(opt("forever", "Allow forever", "allow_for_project"));
        policy.record(&req, "forever");
        policy.record(&req, "once");
        policy.record(&req, "no");
        policy.record(&req, "no-such-option");
        assert!(policy.entries().is_empty());
        assert_eq!(policy.decide(&req), None);
    }

    #[test]
    fn option_names_do_not_matter_only_kinds() {
        let mut policy = PermissionPolicy::new();
        let mut req = request("s1", exec("make"));
        req.options = vec![
            opt("x", "Reject", "allow_always"),
            opt("y", "Always allow (recommended)", "reject_once"),
            opt("z", "Allow", "allow_once"),
        ];
        // "Always allow" by name but reject_once by kind: nothing remembered.
        policy.record(&req, "y");
        assert!(policy.entries().is_empty());
        // "Reject" by name but allow_always by kind: an allow.
        policy.record(&req, "x");
        assert_eq!(policy.entries()[0].1, Remembered::Allow);
        assert_eq!(policy.decide(&req), selected("z"));
    }

    #[test]
    fn empty_subjects_are_never_remembered() {
        let mut policy = PermissionPolicy::new();
        let req = request("s1", ToolCallFields::new("t"));
        policy.record(&req, "always");
        assert!(policy.entries().is_empty());
    }

    #[test]
    fn auto_allow_is_off_by_default_and_per_kind() {
        let mut policy = PermissionPolicy::new();
        let read = request("s1", of_kind("read", "Read a.rs"));
        assert_eq!(policy.decide(&read), None);
        assert_eq!(policy.decide(&request("s1", of_kind("think", "Hmm"))), None);

        policy.auto_allow_kinds(["read".to_owned(), "search".to_owned()]);
        assert_eq!(policy.decide(&read), selected("once"));
        assert_eq!(policy.decide(&request("s1", exec("ls"))), None);
        assert_eq!(policy.decide(&request("s1", edit("/p/a.rs"))), None);

        // A remembered reject beats the rule.
        policy.record(&read, "never");
        assert_eq!(policy.decide(&read), selected("no"));

        policy.auto_allow_kinds(Vec::new());
        assert_eq!(
            policy.decide(&request("s1", of_kind("read", "Read b.rs"))),
            None
        );
    }

    #[test]
    fn remembering_is_on_by_default_and_can_be_switched_off() {
        let mut policy = PermissionPolicy::new();
        assert!(policy.remembers());
        let cargo = request("s1", exec("cargo test"));
        policy.record(&cargo, "always");
        assert_eq!(policy.decide(&cargo), selected("once"));

        policy.set_remember(false);
        assert!(!policy.remembers());
        let rm = request("s1", exec("rm -rf x"));
        policy.record(&rm, "never");
        policy.record(&request("s1", edit("/p/a.rs")), "always");
        assert_eq!(policy.decide(&rm), None, "not remembered while off");
        assert_eq!(policy.entries().len(), 1, "only the earlier answer");
        // What was remembered before still answers.
        assert_eq!(policy.decide(&cargo), selected("once"));

        policy.set_remember(true);
        policy.record(&rm, "never");
        assert_eq!(policy.decide(&rm), selected("no"));
    }

    #[test]
    fn forget_and_clear() {
        let mut policy = PermissionPolicy::new();
        policy.record(&request("s1", exec("a")), "always");
        policy.record(&request("s1", exec("b")), "always");
        let key = policy.entries()[0].0.clone();
        assert!(policy.forget(&key));
        assert!(!policy.forget(&key));
        assert_eq!(policy.decide(&request("s1", exec("a"))), None);
        policy.clear();
        assert!(policy.entries().is_empty());
    }

    #[test]
    fn persisted_decisions_reload_project_wide() {
        let state = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();

        let mut first = PermissionPolicy::new();
        first.persist_in(state.path(), project.path()).unwrap();
        first.record(&request("s1", exec("cargo test")), "always");
        first.record(&request("s1", edit("/p/secret.rs")), "never");

        let file = PermissionPolicy::state_file_in(state.path(), project.path());
        assert!(file.starts_with(state.path().join("acp.nvim/permissions")));
        let saved: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(
            saved["projectRoot"],
            json!(project.path().canonicalize().unwrap().to_string_lossy())
        );

        let mut second = PermissionPolicy::new();
        second.persist_in(state.path(), project.path()).unwrap();
        assert_eq!(
            second.decide(&request("other", exec("cargo test"))),
            selected("once")
        );
        assert_eq!(
            second.decide(&request("other", edit("/p/secret.rs"))),
            selected("no")
        );
        assert_eq!(second.decide(&request("other", exec("cargo run"))), None);

        // Another project does not see them.
        let elsewhere = tempfile::tempdir().unwrap();
        let mut third = PermissionPolicy::new();
        third.persist_in(state.path(), elsewhere.path()).unwrap();
        assert_eq!(third.decide(&request("s1", exec("cargo test"))), None);

        // Forgetting is saved too.
        let key = second.entries()[0].0.clone();
        assert!(second.forget(&key));
        let mut fourth = PermissionPolicy::new();
        fourth.persist_in(state.path(), project.path()).unwrap();
        assert_eq!(fourth.entries().len(), 1);
        fourth.clear();
        let mut fifth = PermissionPolicy::new();
        fifth.persist_in(state.path(), project.path()).unwrap();
        assert!(fifth.entries().is_empty());
    }

    #[test]
    fn corrupt_state_file_is_reported_moved_aside_and_replaced() {
        let state = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let file = PermissionPolicy::state_file_in(state.path(), project.path());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{ not json").unwrap();

        let mut policy = PermissionPolicy::new();
        let err = policy.persist_in(state.path(), project.path()).unwrap_err();
        assert!(matches!(err, Error::PermissionState { .. }));
        assert!(err.to_string().contains("corrupt"), "{err}");
        assert!(policy.entries().is_empty());
        let mut aside = file.clone().into_os_string();
        aside.push(".corrupt");
        assert_eq!(std::fs::read_to_string(&aside).unwrap(), "{ not json");

        // Persistence still works: the next decision writes a good file.
        policy.record(&request("s1", exec("make")), "always");
        let mut reloaded = PermissionPolicy::new();
        reloaded.persist_in(state.path(), project.path()).unwrap();
        assert_eq!(
            reloaded.decide(&request("s9", exec("make"))),
            selected("once")
        );
    }

    #[test]
    fn state_file_from_a_newer_version_is_left_alone() {
        let state = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let file = PermissionPolicy::state_file_in(state.path(), project.path());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let newer = r#"{"version": 7, "rules": []}"#;
        std::fs::write(&file, newer).unwrap();

        let mut policy = PermissionPolicy::new();
        let err = policy.persist_in(state.path(), project.path()).unwrap_err();
        assert!(err.to_string().contains("newer"), "{err}");
        policy.record(&request("s1", exec("make")), "always");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), newer);
        // Without persistence the decision is session-scoped.
        assert_eq!(policy.entries()[0].0.session_id.as_deref(), Some("s1"));
    }

    #[test]
    fn state_file_of_another_project_is_not_used() {
        let state = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let file = PermissionPolicy::state_file_in(state.path(), project.path());
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let foreign = r#"{"version":1,"projectRoot":"/elsewhere","decisions":[{"toolKind":"execute","subject":"make","decision":"allow"}]}"#;
        std::fs::write(&file, foreign).unwrap();
        let mut policy = PermissionPolicy::new();
        assert!(policy.persist_in(state.path(), project.path()).is_err());
        assert_eq!(policy.decide(&request("s1", exec("make"))), None);
    }

    #[test]
    fn project_root_spellings_share_one_state_file() {
        let state = Path::new("/state");
        let project = tempfile::tempdir().unwrap();
        std::fs::create_dir(project.path().join("sub")).unwrap();
        let link = project.path().join("link");
        std::os::unix::fs::symlink(project.path(), &link).unwrap();
        let a = PermissionPolicy::state_file_in(state, project.path());
        assert_eq!(a, PermissionPolicy::state_file_in(state, &link));
        let b = PermissionPolicy::state_file_in(state, &project.path().join("sub/.."));
        assert_eq!(a, b);
        assert_ne!(
            a,
            PermissionPolicy::state_file_in(state, Path::new("/other"))
        );
    }
}
