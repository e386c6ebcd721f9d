//! Events for the Lua plugin, and their one encoding into msgpack.
//!
//! The shapes are the contract in `doc/protocol.md`: every event is a map
//! with a `type` and, when it concerns a chat, its `chat_id`. Parts that come
//! from acp-client types (session changes, tool calls, capabilities) are
//! carried as their serde JSON and converted once, in [`Event::to_value`].

use rmpv::Value;
use serde_json::{json, Map, Value as Json};

use crate::command::{ChatId, PromptId};
use crate::msgpack;

/// One event for `require('acp.events').dispatch`.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The session of a chat is open.
    SessionStarted {
        /// The chat concerned.
        chat_id: ChatId,
        /// The agent's session id.
        session_id: String,
        /// The agent, as the plugin named it.
        agent_name: String,
        /// `{currentModeId, availableModes}` when the agent has modes.
        modes: Option<Json>,
        /// The session's config options, when the agent has any.
        config_options: Option<Json>,
        /// The agent's capabilities from `initialize`.
        capabilities: Json,
        /// The agent's auth methods, when it listed any.
        auth_methods: Option<Json>,
        /// The file the session's transcript is written to, if any.
        transcript_path: Option<String>,
    },
    /// The session could not be opened; `message` names the fix.
    OpenFailed {
        /// The chat concerned.
        chat_id: ChatId,
        /// A sentence for the user.
        message: String,
        /// The agent's last stderr output, when there is any.
        stderr_tail: Option<String>,
    },
    /// The agent wants the user to log in first.
    AuthRequired {
        /// The chat concerned.
        chat_id: ChatId,
        /// The agent's auth methods.
        auth_methods: Json,
    },
    /// The session model changed (acp-client's `SessionChange`).
    Session {
        /// The chat concerned.
        chat_id: ChatId,
        /// acp-client's `SessionChange`, serialized.
        change: Json,
    },
    /// The agent asks for permission; answer with `acp.permission_respond`.
    PermissionRequest {
        /// The chat concerned.
        chat_id: ChatId,
        /// Answer with this id in `acp.permission_respond`.
        request_id: PromptId,
        /// The tool call the request is about.
        tool_call: Json,
        /// The choices: `[{optionId, name, kind}]`.
        options: Json,
    },
    /// A pending permission prompt was withdrawn (turn cancelled, agent
    /// cancelled it, agent exited).
    PermissionCancelled {
        /// The chat concerned.
        chat_id: ChatId,
        /// The id of the withdrawn `permission_request`.
        request_id: PromptId,
    },
    /// A permission request answered from memory or an auto-allow rule.
    PermissionAuto {
        /// The chat concerned.
        chat_id: ChatId,
        /// The tool call the request is about.
        tool_call: Json,
        /// The option chosen (`{optionId, name, kind}`), or null.
        option: Json,
    },
    /// Terminal output or lifecycle: the fields of acp-client's
    /// `TerminalEvent` (`kind`, `terminalId`, `data`, `exitStatus`...).
    Terminal {
        /// The chat concerned.
        chat_id: ChatId,
        /// The fields of acp-client's `TerminalEvent`, without `sessionId`.
        fields: Map<String, Json>,
    },
    /// The agent wrote a file through `fs/write_text_file`.
    FileEdited {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: String,
        /// The write went through the open buffer (and was saved).
        buffer_updated: bool,
        /// The buffer had unsaved changes: only the disk was written.
        kept_unsaved: bool,
    },
    /// A prompt turn ended with the agent's stop reason.
    TurnEnded {
        /// The chat concerned.
        chat_id: ChatId,
        /// The agent's stop reason (`end_turn`, `cancelled`...).
        stop_reason: String,
    },
    /// A prompt could not be sent or the agent answered it with an error.
    PromptFailed {
        /// The chat concerned.
        chat_id: ChatId,
        /// A sentence for the user.
        message: String,
    },
    /// The agent process of this chat exited.
    AgentExited {
        /// The chat concerned.
        chat_id: ChatId,
        /// How the process ended, as a phrase (`exit code 3`).
        status: String,
        /// The agent's last stderr output.
        stderr_tail: String,
    },
    /// Something the user should know that belongs to no other event.
    Warning {
        /// The chat concerned, if any.
        chat_id: Option<ChatId>,
        /// A sentence for the user.
        message: String,
    },
    /// The answer to `acp.list_sessions`.
    SessionsListed {
        /// The `request_id` of the request.
        request_id: String,
        /// The agent, as the plugin named it.
        agent_name: String,
        /// The agent's capabilities, when it started.
        capabilities: Option<Json>,
        /// Every `SessionInfo` of `session/list`, newest first; `None`
        /// when the agent cannot list sessions or failed to.
        sessions: Option<Json>,
        /// Why there is no list, as a sentence.
        message: Option<String>,
    },
    /// The agent of the chat logged out.
    LoggedOut {
        /// The chat concerned.
        chat_id: ChatId,
    },
    /// A file's edit review changed (agent edit recorded, hunk accepted or
    /// rejected, user edit taken in).
    ReviewChanged {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: String,
        /// `{path, status, hunks, added, removed, first_line?}`; `hunks` is
        /// 0 when nothing is left to review in the file.
        summary: Json,
    },
    /// The user rejected the creation of a file: ask them, then send
    /// `acp.review_delete` to delete it.
    ReviewDeletePending {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: String,
    },
    /// The answer to `acp.agents_list`.
    AgentsListed {
        /// The `request_id` of the request.
        request_id: String,
        /// The registry's agents (`[{id, name, version, description,
        /// homepage, kinds, installed_version, update, installing}]`);
        /// `None` when the registry could not be loaded.
        agents: Option<Json>,
        /// The installed agents (`[{id, name, version, kind}]`).
        installed: Json,
        /// Which copy of the registry: `network`, `cache` or `bundled`.
        origin: Option<String>,
        /// When that copy was fetched (seconds since the Unix epoch).
        fetched_at: Option<u64>,
        /// Why there is no list, or why a copy was used, as a sentence.
        message: Option<String>,
    },
    /// A step of an agent install.
    AgentInstallProgress {
        /// The registry id.
        id: String,
        /// What is happening.
        message: String,
        /// Bytes downloaded so far, during a download.
        done: Option<u64>,
        /// Bytes to download, when known.
        total: Option<u64>,
    },
    /// An agent is installed (its `installed.json` is written).
    AgentInstalled {
        /// The registry id.
        id: String,
        /// Its display name.
        name: String,
        /// The installed version.
        version: String,
    },
    /// An agent install failed or was cancelled; nothing of it was kept.
    AgentInstallFailed {
        /// The registry id.
        id: String,
        /// A sentence for the user (the failing command and its output
        /// tail when a command failed).
        message: String,
        /// True when the user cancelled it.
        cancelled: bool,
    },
    /// The answer to `acp.agents_remove`.
    AgentRemoved {
        /// The registry id.
        id: String,
        /// True when it was removed.
        removed: bool,
        /// Why not, as a sentence.
        message: Option<String>,
    },
}

impl Event {
    /// The event's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::SessionStarted { .. } => "session_started",
            Event::OpenFailed { .. } => "open_failed",
            Event::AuthRequired { .. } => "auth_required",
            Event::Session { .. } => "session",
            Event::PermissionRequest { .. } => "permission_request",
            Event::PermissionCancelled { .. } => "permission_cancelled",
            Event::PermissionAuto { .. } => "permission_auto",
            Event::Terminal { .. } => "terminal",
            Event::FileEdited { .. } => "file_edited",
            Event::TurnEnded { .. } => "turn_ended",
            Event::PromptFailed { .. } => "prompt_failed",
            Event::AgentExited { .. } => "agent_exited",
            Event::Warning { .. } => "warning",
            Event::SessionsListed { .. } => "sessions_listed",
            Event::LoggedOut { .. } => "logged_out",
            Event::ReviewChanged { .. } => "review_changed",
            Event::ReviewDeletePending { .. } => "review_delete_pending",
            Event::AgentsListed { .. } => "agents_listed",
            Event::AgentInstallProgress { .. } => "agent_install_progress",
            Event::AgentInstalled { .. } => "agent_installed",
            Event::AgentInstallFailed { .. } => "agent_install_failed",
            Event::AgentRemoved { .. } => "agent_removed",
        }
    }

    /// The chat the event concerns, if any.
    pub fn chat_id(&self) -> Option<&ChatId> {
        match self {
            Event::SessionStarted { chat_id, .. }
            | Event::OpenFailed { chat_id, .. }
            | Event::AuthRequired { chat_id, .. }
            | Event::Session { chat_id, .. }
            | Event::PermissionRequest { chat_id, .. }
            | Event::PermissionCancelled { chat_id, .. }
            | Event::PermissionAuto { chat_id, .. }
            | Event::Terminal { chat_id, .. }
            | Event::FileEdited { chat_id, .. }
            | Event::TurnEnded { chat_id, .. }
            | Event::PromptFailed { chat_id, .. }
            | Event::AgentExited { chat_id, .. }
            | Event::LoggedOut { chat_id }
            | Event::ReviewChanged { chat_id, .. }
            | Event::ReviewDeletePending { chat_id, .. } => Some(chat_id),
            Event::Warning { chat_id, .. } => chat_id.as_ref(),
            Event::SessionsListed { .. }
            | Event::AgentsListed { .. }
            | Event::AgentInstallProgress { .. }
            | Event::AgentInstalled { .. }
            | Event::AgentInstallFailed { .. }
            | Event::AgentRemoved { .. } => None,
        }
    }

    /// The event as the JSON object the protocol describes.
    pub fn to_json(&self) -> Json {
        let mut m = Map::new();
        let mut put = |k: &str, v: Json| {
            m.insert(k.to_owned(), v);
        };
        match self {
            Event::SessionStarted {
                session_id,
                agent_name,
                modes,
                config_options,
                capabilities,
                auth_methods,
                transcript_path,
                ..
            } => {
                if let Some(path) = transcript_path {
                    put("transcript_path", json!(path));
                }
                put("session_id", json!(session_id));
                put("agent_name", json!(agent_name));
                if let Some(modes) = modes {
                    put("modes", modes.clone());
                }
                if let Some(options) = config_options {
                    put("config_options", options.clone());
                }
                put("capabilities", capabilities.clone());
                if let Some(methods) = auth_methods {
                    put("auth_methods", methods.clone());
                }
            }
            Event::OpenFailed {
                message,
                stderr_tail,
                ..
            } => {
                put("message", json!(message));
                if let Some(tail) = stderr_tail.as_deref().filter(|t| !t.trim().is_empty()) {
                    put("stderr_tail", json!(tail));
                }
            }
            Event::AuthRequired { auth_methods, .. } => put("auth_methods", auth_methods.clone()),
            Event::Session { change, .. } => put("change", change.clone()),
            Event::PermissionRequest {
                request_id,
                tool_call,
                options,
                ..
            } => {
                put("request_id", json!(request_id.0));
                put("tool_call", tool_call.clone());
                put("options", options.clone());
            }
            Event::PermissionCancelled { request_id, .. } => {
                put("request_id", json!(request_id.0));
            }
            Event::PermissionAuto {
                tool_call, option, ..
            } => {
                put("tool_call", tool_call.clone());
                put("option", option.clone());
            }
            Event::Terminal { fields, .. } => {
                for (k, v) in fields {
                    put(k, v.clone());
                }
            }
            Event::FileEdited {
                path,
                buffer_updated,
                kept_unsaved,
                ..
            } => {
                put("path", json!(path));
                put("buffer_updated", json!(buffer_updated));
                put("kept_unsaved", json!(kept_unsaved));
            }
            Event::TurnEnded { stop_reason, .. } => put("stop_reason", json!(stop_reason)),
            Event::PromptFailed { message, .. } | Event::Warning { message, .. } => {
                put("message", json!(message))
            }
            Event::AgentExited {
                status,
                stderr_tail,
                ..
            } => {
                put("status", json!(status));
                put("stderr_tail", json!(stderr_tail));
            }
            Event::SessionsListed {
                request_id,
                agent_name,
                capabilities,
                sessions,
                message,
            } => {
                put("request_id", json!(request_id));
                put("agent_name", json!(agent_name));
                for (k, v) in [("capabilities", capabilities), ("sessions", sessions)] {
                    if let Some(v) = v {
                        put(k, v.clone());
                    }
                }
                if let Some(message) = message {
                    put("message", json!(message));
                }
            }
            Event::LoggedOut { .. } => {}
            Event::ReviewChanged { path, summary, .. } => {
                put("path", json!(path));
                put("summary", summary.clone());
            }
            Event::ReviewDeletePending { path, .. } => put("path", json!(path)),
            Event::AgentsListed {
                request_id,
                agents,
                installed,
                origin,
                fetched_at,
                message,
            } => {
                put("request_id", json!(request_id));
                put("installed", installed.clone());
                if let Some(agents) = agents {
                    put("agents", agents.clone());
                }
                if let Some(origin) = origin {
                    put("origin", json!(origin));
                }
                if let Some(at) = fetched_at {
                    put("fetched_at", json!(at));
                }
                if let Some(message) = message {
                    put("message", json!(message));
                }
            }
            Event::AgentInstallProgress {
                id,
                message,
                done,
                total,
            } => {
                put("id", json!(id));
                put("message", json!(message));
                if let Some(done) = done {
                    put("done", json!(done));
                }
                if let Some(total) = total {
                    put("total", json!(total));
                }
            }
            Event::AgentInstalled { id, name, version } => {
                put("id", json!(id));
                put("name", json!(name));
                put("version", json!(version));
            }
            Event::AgentInstallFailed {
                id,
                message,
                cancelled,
            } => {
                put("id", json!(id));
                put("message", json!(message));
                put("cancelled", json!(cancelled));
            }
            Event::AgentRemoved {
                id,
                removed,
                message,
            } => {
                put("id", json!(id));
                put("removed", json!(removed));
                if let Some(message) = message {
                    put("message", json!(message));
                }
            }
        }
        // Set last so that no payload field can overwrite them.
        m.insert("type".to_owned(), json!(self.kind()));
        if let Some(chat_id) = self.chat_id() {
            m.insert("chat_id".to_owned(), json!(chat_id.0));
        }
        Json::Object(m)
    }

    /// The event as the msgpack map sent to Neovim.
    pub fn to_value(&self) -> Value {
        msgpack::from_json(&self.to_json())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat() -> ChatId {
        ChatId("c1".into())
    }

    #[test]
    fn every_event_has_type_and_chat_id() {
        let ev = Event::TurnEnded {
            chat_id: chat(),
            stop_reason: "end_turn".into(),
        };
        assert_eq!(
            ev.to_json(),
            json!({"type": "turn_ended", "chat_id": "c1", "stop_reason": "end_turn"})
        );
        let warning = Event::Warning {
            chat_id: None,
            message: "careful".into(),
        };
        assert_eq!(
            warning.to_json(),
            json!({"type": "warning", "message": "careful"})
        );
    }

    #[test]
    fn terminal_fields_cannot_override_type_or_chat() {
        let mut fields = Map::new();
        fields.insert("kind".into(), json!("output"));
        fields.insert("terminalId".into(), json!("t1"));
        fields.insert("type".into(), json!("bogus"));
        let ev = Event::Terminal {
            chat_id: chat(),
            fields,
        };
        let j = ev.to_json();
        assert_eq!(j["type"], "terminal");
        assert_eq!(j["chat_id"], "c1");
        assert_eq!(j["terminalId"], "t1");
        assert_eq!(j["kind"], "output");
    }

    #[test]
    fn open_failed_omits_an_empty_stderr_tail() {
        let ev = Event::OpenFailed {
            chat_id: chat(),
            message: "m".into(),
            stderr_tail: Some("  \n".into()),
        };
        assert!(ev.to_json().get("stderr_tail").is_none());
    }

    #[test]
    fn to_value_is_a_string_keyed_map() {
        let ev = Event::PermissionCancelled {
            chat_id: chat(),
            request_id: PromptId(12),
        };
        let v = ev.to_value();
        assert_eq!(
            msgpack::field(&v, "request_id").and_then(Value::as_u64),
            Some(12)
        );
        assert_eq!(
            msgpack::field(&v, "type").and_then(Value::as_str),
            Some("permission_cancelled")
        );
    }
}
