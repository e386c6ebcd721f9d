//! Commands from the Lua plugin: the one place where msgpack values from
//! Neovim are decoded. Everything past [`Command::decode`] is typed.
//!
//! Each command is a variant of a `#[derive(Deserialize)]` enum whose
//! `#[serde(rename)]` is its method name: the names live there and in the
//! `name()` beside them, nowhere else. [`de`] makes serde read Lua's values
//! (nil is absent, an empty table is a list or a map) and say what is wrong
//! in a sentence naming the field. The commands are grouped by what they
//! concern: [`sessions`] (agents and sessions), [`chat`] (a chat's turns and
//! answers), [`review`] (edit review), [`registry`] (installing agents).
//!
//! Bad input never panics: it becomes a [`BadCommand`] that the handler logs
//! and reports to the user as a `warning` event.

use std::fmt;
use std::path::PathBuf;

use acp_client::policy::elicitation::ElicitationResponse;
use acp_client::schema;
use rmpv::Value;
use serde::Deserialize;

pub mod chat;
mod de;
pub mod registry;
pub mod review;
pub mod sessions;

use crate::elicitation::ElicitationPromptId;
pub use crate::protocol::{ChatId, PromptId};
pub use chat::{OptionValue, PromptBuffer};
pub use registry::{Places, RegistryCommand};
pub use review::{ReviewCommand, ReviewTarget};
pub use sessions::{AgentSpec, OpenChat};

/// Everything the plugin can ask of the backend.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub enum Command {
    /// `acp.hello`: version handshake. A request (answered in the reply)
    /// or a notification (answered by calling `acp.rpc.backend.on_hello`).
    #[serde(rename = "acp.hello")]
    Hello {
        /// The plugin's version; must equal the backend's.
        plugin_version: String,
    },
    /// `acp.open`: start or share an agent and open a session.
    #[serde(rename = "acp.open", deserialize_with = "sessions::open")]
    Open(Box<OpenChat>),
    /// `acp.prompt`: one user turn.
    #[serde(rename = "acp.prompt")]
    Prompt {
        /// The chat concerned.
        #[serde(deserialize_with = "de::chat_id")]
        chat_id: ChatId,
        /// The user's content blocks.
        #[serde(deserialize_with = "chat::blocks")]
        blocks: Vec<schema::ContentBlock>,
        /// The chat's buffers with unsaved edits as the prompt goes out.
        #[serde(default, deserialize_with = "chat::prompt_buffers")]
        buffers: Vec<PromptBuffer>,
    },
    /// `acp.cancel`: cancel the running turn, or with `session_id` the
    /// work of one subagent of the chat.
    #[serde(rename = "acp.cancel")]
    Cancel {
        /// The chat concerned.
        #[serde(deserialize_with = "de::chat_id")]
        chat_id: ChatId,
        /// A subagent's session id (`subagent_update` of the chat's
        /// session): only its work is cancelled.
        #[serde(default, rename = "session_id")]
        subagent: Option<String>,
    },
    /// `acp.permission_respond`; `option_id: None` = dismissed.
    #[serde(rename = "acp.permission_respond")]
    PermissionRespond {
        /// The id from the `permission_request` event.
        #[serde(deserialize_with = "chat::prompt_id")]
        request_id: PromptId,
        /// The chosen option.
        #[serde(default)]
        option_id: Option<String>,
    },
    /// `acp.elicitation_respond` (a request: the answer is checked against
    /// the form and the problems returned).
    #[serde(
        rename = "acp.elicitation_respond",
        deserialize_with = "chat::elicitation_answer"
    )]
    ElicitationRespond {
        /// The id from the `elicitation_request` event.
        request_id: ElicitationPromptId,
        /// The user's answer.
        response: ElicitationResponse,
    },
    /// `acp.close`: close the chat's session.
    #[serde(rename = "acp.close")]
    Close {
        /// The chat concerned.
        #[serde(deserialize_with = "de::chat_id")]
        chat_id: ChatId,
    },
    /// `acp.set_mode`: switch the session's mode.
    #[serde(rename = "acp.set_mode")]
    SetMode {
        /// The chat concerned.
        #[serde(deserialize_with = "de::chat_id")]
        chat_id: ChatId,
        /// One of the session's available mode ids.
        mode_id: String,
    },
    /// `acp.set_config_option`: change a session config option.
    #[serde(rename = "acp.set_config_option")]
    SetConfigOption {
        /// The chat concerned.
        #[serde(deserialize_with = "de::chat_id")]
        chat_id: ChatId,
        /// The option id.
        config_id: String,
        /// Its new value.
        value: OptionValue,
    },
    /// `acp.shutdown`: stop every agent (Neovim is leaving).
    #[serde(rename = "acp.shutdown")]
    Shutdown,
    /// `acp.complete_files`: workspace files for `@` completion (a request,
    /// answered by the handler from the file index).
    #[serde(rename = "acp.complete_files", deserialize_with = "chat::file_query")]
    CompleteFiles(crate::files::FileQuery),
    /// `acp.list_sessions`: the agent's stored sessions, answered with a
    /// `sessions_listed` event.
    #[serde(rename = "acp.list_sessions")]
    ListSessions {
        /// Echoed in the answer, so the plugin can match it.
        #[serde(deserialize_with = "de::text_or_number")]
        request_id: String,
        /// The agent to start or share.
        agent: AgentSpec,
        /// Where the agent runs (unless `agent.cwd`), and the sessions'
        /// directory unless `all`.
        #[serde(deserialize_with = "de::abs_path")]
        cwd: PathBuf,
        /// List the sessions of every directory.
        #[serde(default)]
        all: bool,
        /// Delete this session first (`session/delete`), then list.
        #[serde(default)]
        delete: Option<String>,
    },
    /// `acp.logout`: log out of the chat's agent.
    #[serde(rename = "acp.logout")]
    Logout {
        /// The chat concerned.
        #[serde(deserialize_with = "de::chat_id")]
        chat_id: ChatId,
    },
    /// `acp.rewind`: without `turn`, list the chat's turns (`rewind_turns`);
    /// with it, preview (`rewind_preview`) or rewind (`rewound`).
    #[serde(rename = "acp.rewind")]
    Rewind {
        /// The chat concerned.
        #[serde(deserialize_with = "de::chat_id")]
        chat_id: ChatId,
        /// Go back to before this turn.
        #[serde(default, deserialize_with = "chat::turn")]
        turn: Option<u32>,
        /// Only show what would change.
        #[serde(default, deserialize_with = "de::only_true")]
        preview: bool,
    },
    /// `acp.file_saved`: the user saved a buffer (any file): its text at
    /// the chats' prompts is no "before" of an agent edit any more.
    #[serde(rename = "acp.file_saved")]
    FileSaved {
        /// Absolute path of the file.
        #[serde(deserialize_with = "de::abs_path")]
        path: PathBuf,
    },
    /// `acp.review_*`, `acp.file_sync`, `acp.user_edit`: edit review
    /// (decoded by [`ReviewCommand`]'s own enum).
    #[serde(skip)]
    Review(ReviewCommand),
    /// `acp.agents_*`: the agent registry (decoded by [`RegistryCommand`]'s
    /// own enum).
    #[serde(skip)]
    Registry(RegistryCommand),
}

/// A message from the plugin that could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadCommand {
    /// The method the message arrived as.
    pub method: String,
    /// What was wrong with it.
    pub reason: String,
}

impl fmt::Display for BadCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "acp.nvim backend ignored `{}`: {}; the plugin and the backend probably do not match, run :checkhealth acp",
            self.method, self.reason
        )
    }
}

impl std::error::Error for BadCommand {}

/// A short name of a value's type, for the messages about the argument
/// list itself (the fields' are [`de`]'s).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Nil => "nil",
        Value::Boolean(_) => "a boolean",
        Value::Integer(_) | Value::F32(_) | Value::F64(_) => "a number",
        Value::String(_) | Value::Binary(_) => "a string",
        Value::Array(_) => "a list",
        Value::Map(_) => "a table",
        Value::Ext(..) => "a handle",
    }
}

impl Command {
    /// The commands with an answer: sent as a notification, they are an
    /// error of the plugin.
    pub fn needs_request(&self) -> bool {
        match self {
            Command::ElicitationRespond { .. } | Command::CompleteFiles(_) => true,
            Command::Review(r) => r.is_query(),
            _ => false,
        }
    }

    /// Decodes a request or notification from the plugin. `args` is the
    /// msgpack argument list; every command takes one map (none for
    /// `acp.shutdown`).
    pub fn decode(method: &str, args: &[Value]) -> Result<Command, BadCommand> {
        let bad = |reason: String| BadCommand {
            method: method.to_owned(),
            reason,
        };
        let empty = Value::Map(Vec::new());
        let params = match args {
            [] => &empty,
            [m @ Value::Map(_)] => m,
            // `vim.rpcrequest(ch, "acp.shutdown", {})` sends an empty array.
            [Value::Array(a)] if a.is_empty() => &empty,
            [other] => {
                return Err(bad(format!(
                    "its argument must be a table, got {}",
                    kind(other)
                )))
            }
            _ => {
                return Err(bad(format!(
                    "it takes one table argument, got {}",
                    args.len()
                )))
            }
        };
        // Each group's enum knows its own methods; the first that has the
        // method decodes it.
        de::from_call::<Command>(method, params)
            .or_else(|e| match e.is_not_mine() {
                true => de::from_call(method, params).map(Command::Review),
                false => Err(e),
            })
            .or_else(|e| match e.is_not_mine() {
                true => de::from_call(method, params).map(Command::Registry),
                false => Err(e),
            })
            .map_err(|e| bad(e.to_string()))
    }

    /// The chat an `acp.open` names, read without decoding the rest: an
    /// open that cannot be decoded still fails its chat. The plugin sends
    /// `:Acp`'s open as a notification (issue #30), so no error reply
    /// reaches it, and the chat would say "starting" forever.
    pub fn open_chat_id(method: &str, args: &[Value]) -> Option<ChatId> {
        if method != Command::OPEN {
            return None;
        }
        match args {
            [params] => crate::msgpack::field(params, "chat_id")
                .and_then(Value::as_str)
                .map(ChatId::from),
            _ => None,
        }
    }

    /// The method of [`Command::Open`] (the serde attribute spells it too).
    const OPEN: &'static str = "acp.open";

    /// The method name the command arrived as.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Hello { .. } => "acp.hello",
            Command::Open(_) => Command::OPEN,
            Command::Prompt { .. } => "acp.prompt",
            Command::Cancel { .. } => "acp.cancel",
            Command::PermissionRespond { .. } => "acp.permission_respond",
            Command::ElicitationRespond { .. } => "acp.elicitation_respond",
            Command::Close { .. } => "acp.close",
            Command::SetMode { .. } => "acp.set_mode",
            Command::SetConfigOption { .. } => "acp.set_config_option",
            Command::Shutdown => "acp.shutdown",
            Command::CompleteFiles(_) => "acp.complete_files",
            Command::ListSessions { .. } => "acp.list_sessions",
            Command::Logout { .. } => "acp.logout",
            Command::Rewind { .. } => "acp.rewind",
            Command::FileSaved { .. } => "acp.file_saved",
            Command::Review(r) => r.name(),
            Command::Registry(r) => r.name(),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
pub(super) mod tests;
