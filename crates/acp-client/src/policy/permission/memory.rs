//! The memory of "always" answers and the auto-allow rules: which
//! requests are answered without asking the user.

// `Error`'s size is the crate's choice (error.rs); boxing it here would
// only move the cost.
#![allow(clippy::result_large_err)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::store::{
    self, ParsedState, Persistence, Remembered, StateFile, StoredDecision, STATE_VERSION,
};
use super::subject::{subject_of, tool_kind_name};
use super::{OptionKind, PermissionDecision, PermissionOption, PermissionRequest};
use crate::error::{Error, Result};

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

    /// Enables persistence for `project_root` in `dir`, a directory the
    /// editor chooses (created on the first save), and loads the decisions
    /// saved there before.
    ///
    /// Each project has one file, `<dir>/<hash>.json`
    /// ([`PermissionPolicy::state_file_in`]), which also names the project
    /// root. Loaded decisions apply to every session, still per tool kind
    /// and subject; they replace the project-wide decisions in memory (of a
    /// previous project). Session-only decisions stay as they are. Calling
    /// it again for the same project reloads the file.
    ///
    /// Errors: an unreadable file, a file from a newer version of this
    /// library or one that belongs to another project leave persistence
    /// off. A corrupt file is moved aside to `<file>.corrupt` and
    /// persistence starts empty; the error says so, and the policy keeps
    /// working either way.
    pub fn persist_in(&mut self, dir: &Path, project_root: &Path) -> Result<()> {
        let root = store::canonical_root(project_root);
        let file = store::file_in(dir, &root);
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
            match store::parse(&bytes) {
                Ok(ParsedState::Newer(v)) => {
                    return Err(state_err(format!(
                        "it was written by a newer version (format {v}, this one reads {STATE_VERSION}); update the editor plugin"
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

    /// The state file for `project_root` in `dir`: `<dir>/<16 hex
    /// digits>.json`, named by a stable (FNV-1a 64) hash of the canonical
    /// project root, so every spelling of one directory shares a file.
    pub fn state_file_in(dir: &Path, project_root: &Path) -> PathBuf {
        store::file_in(dir, &store::canonical_root(project_root))
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
        crate::disk::write_atomic_blocking(&p.file, &json, false).map(|_| ())
    }
}
