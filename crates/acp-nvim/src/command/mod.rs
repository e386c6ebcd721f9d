//! Commands from the Lua plugin: the one place where msgpack values from
//! Neovim are decoded. Everything past [`Command::decode`] is typed.
//!
//! Bad input never panics: it becomes a [`BadCommand`] that the handler logs
//! and reports to the user as a `warning` event.

use std::fmt;
use std::path::PathBuf;

use acp_client::buffer_sync::OnDisk;
use acp_client::elicitation::ElicitationResponse;
use acp_client::review::HunkId;
use acp_client::schema;
use rmpv::Value;

use crate::elicitation::ElicitationPromptId;
use crate::msgpack;
pub use crate::protocol::{ChatId, PromptId};

/// How to start an agent, as the plugin configured it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSpec {
    /// Shown to the user (`claude`, `codex`...).
    pub name: String,
    /// Program and arguments; never empty.
    pub cmd: Vec<String>,
    /// Extra environment, sorted by name so that equal maps compare equal.
    pub env: Vec<(String, String)>,
    /// Where the agent process runs; the session cwd when absent.
    pub cwd: Option<PathBuf>,
    /// How long `initialize` may take (`agent.init_timeout_ms`); the
    /// client's default (60 s) when absent. The first chat of a process
    /// sets it.
    pub init_timeout: Option<std::time::Duration>,
    /// `quirks.missing_file_read = "empty"` of the agent's config: a read
    /// of a missing file in the workspace answers empty content (for
    /// gemini-cli). The first chat of a process sets it.
    pub missing_file_read_empty: bool,
    /// `permission.ask_terminal` of the plugin's config: ask before every
    /// command the agent runs with `terminal/create`
    /// (`ConnectionOptions::ask_before_terminal`). The first chat of a
    /// process sets it.
    pub ask_terminal: bool,
    /// Offer the editor's MCP server (`agent.editor_tools`, on unless
    /// false). The first chat of a process sets it.
    pub editor_tools: bool,
    /// The sentence about it appended to the system prompt
    /// (`agent.editor_tools_prompt`); the client's default when absent,
    /// none when empty.
    pub editor_tools_prompt: Option<String>,
    /// `agent.protocol_version`: the newest ACP version to offer (1 unless
    /// the config says 2). The first chat of a process sets it.
    pub protocol_version: acp_client::ProtocolVersion,
}

/// `acp.open`: start (or share) an agent and open a session in it.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenChat {
    /// The chat that owns the session.
    pub chat_id: ChatId,
    /// The agent to start or share.
    pub agent: AgentSpec,
    /// Absolute working directory of the session.
    pub cwd: PathBuf,
    /// MCP servers for the agent to connect to.
    pub mcp_servers: Vec<schema::McpServer>,
    /// Load this session (history replayed) instead of creating one.
    pub load_session_id: Option<String>,
    /// Resume this session (no replay) instead of creating one.
    pub resume_session_id: Option<String>,
    /// Tool kinds to allow without asking (`permission.auto_allow` of the
    /// plugin's config); `None` when the plugin did not send the field.
    pub auto_allow: Option<Vec<String>>,
    /// Whether "always" answers are remembered (`permission.remember` of
    /// the plugin's config); `None` when the plugin did not send the field.
    pub remember: Option<bool>,
    /// The directory where the agent's "always" answers are saved, one file
    /// per project, so they survive `:Acp restart` and new Neovim sessions
    /// (`permission_dir` of `acp.open`; the plugin passes one under
    /// `stdpath("state")`). Without it they last as long as the agent.
    pub permission_dir: Option<PathBuf>,
    /// Send `authenticate` with this method id before opening the session
    /// (the user picked it after `auth_required`).
    pub auth_method_id: Option<String>,
    /// Write the session's transcript under this directory.
    pub transcript_dir: Option<PathBuf>,
    /// More workspace roots of the session (`additionalDirectories`, sent
    /// when the agent advertises them; always part of the fs sandbox).
    pub additional_directories: Vec<PathBuf>,
    /// The client system prompt (`system_prompt` of the agent's config or
    /// of setup()): `{mode = "append"|"override", text}`.
    pub system_prompt: Option<acp_client::SystemPrompt>,
    /// The chat's checkpoints (JSON) from a rewind or a saved transcript,
    /// adopted by the new session so it can still rewind.
    pub checkpoints: Option<String>,
}

/// A value for `acp.set_config_option`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionValue {
    /// The value id of a select option.
    Id(String),
    /// The value of a boolean option.
    Bool(bool),
}

/// Everything the plugin can ask of the backend.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// `acp.hello`: version handshake. A request (answered in the reply)
    /// or a notification (answered by calling `acp.backend.on_hello`).
    Hello {
        /// The plugin's version; must equal the backend's.
        plugin_version: String,
    },
    /// `acp.open`: start or share an agent and open a session.
    Open(Box<OpenChat>),
    /// `acp.prompt`: one user turn.
    Prompt {
        /// The chat concerned.
        chat_id: ChatId,
        /// The user's content blocks.
        blocks: Vec<schema::ContentBlock>,
        /// The chat's buffers with unsaved edits as the prompt goes out.
        buffers: Vec<PromptBuffer>,
    },
    /// `acp.cancel`: cancel the running turn, or with `session_id` the
    /// work of one subagent of the chat.
    Cancel {
        /// The chat concerned.
        chat_id: ChatId,
        /// A subagent's session id (`subagent_update` of the chat's
        /// session): only its work is cancelled.
        subagent: Option<String>,
    },
    /// `acp.permission_respond`; `option_id: None` = dismissed.
    PermissionRespond {
        /// The id from the `permission_request` event.
        request_id: PromptId,
        /// The chosen option.
        option_id: Option<String>,
    },
    /// `acp.elicitation_respond` (a request: the answer is checked against
    /// the form and the problems returned).
    ElicitationRespond {
        /// The id from the `elicitation_request` event.
        request_id: ElicitationPromptId,
        /// The user's answer.
        response: ElicitationResponse,
    },
    /// `acp.close`: close the chat's session.
    Close {
        /// The chat concerned.
        chat_id: ChatId,
    },
    /// `acp.set_mode`: switch the session's mode.
    SetMode {
        /// The chat concerned.
        chat_id: ChatId,
        /// One of the session's available mode ids.
        mode_id: String,
    },
    /// `acp.set_config_option`: change a session config option.
    SetConfigOption {
        /// The chat concerned.
        chat_id: ChatId,
        /// The option id.
        config_id: String,
        /// Its new value.
        value: OptionValue,
    },
    /// `acp.shutdown`: stop every agent (Neovim is leaving).
    Shutdown,
    /// `acp.complete_files`: workspace files for `@` completion (a request,
    /// answered by the handler from the file index).
    CompleteFiles(crate::files::FileQuery),
    /// `acp.list_sessions`: the agent's stored sessions, answered with a
    /// `sessions_listed` event.
    ListSessions {
        /// Echoed in the answer, so the plugin can match it.
        request_id: String,
        /// The agent to start or share.
        agent: AgentSpec,
        /// Where the agent runs (unless `agent.cwd`), and the sessions'
        /// directory unless `all`.
        cwd: PathBuf,
        /// List the sessions of every directory.
        all: bool,
        /// Delete this session first (`session/delete`), then list.
        delete: Option<String>,
    },
    /// `acp.logout`: log out of the chat's agent.
    Logout {
        /// The chat concerned.
        chat_id: ChatId,
    },
    /// `acp.rewind`: without `turn`, list the chat's turns (`rewind_turns`);
    /// with it, preview (`rewind_preview`) or rewind (`rewound`).
    Rewind {
        /// The chat concerned.
        chat_id: ChatId,
        /// Go back to before this turn.
        turn: Option<u32>,
        /// Only show what would change.
        preview: bool,
    },
    /// `acp.file_saved`: the user saved a buffer (any file): its text at
    /// the chats' prompts is no "before" of an agent edit any more.
    FileSaved {
        /// Absolute path of the file.
        path: PathBuf,
    },
    /// `acp.review_*`, `acp.user_edit`: edit review.
    Review(ReviewCommand),
    /// `acp.agents_*`: the agent registry.
    Registry(crate::registry::RegistryCommand),
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

/// A buffer of a file in the chat's directory when a prompt is sent: the
/// backend then knows its text before the agent edits the file, so its
/// first write or disk edit there is merged in one instruction (without it,
/// the first instruction can only find out the buffer's text: `stale`, then
/// a second), and the file's text then is the base of a write by an agent
/// that reads nothing first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptBuffer {
    /// Absolute path of the file.
    pub path: PathBuf,
    /// The buffer's whole text.
    pub text: String,
    /// Its tick (`acp.fs.tick`).
    pub tick: u64,
    /// The file's text on disk, for a buffer with unsaved edits; `None`:
    /// the buffer is unmodified (its text is the file's).
    pub disk: Option<String>,
}

/// Decodes the fields of one message's parameter map.
struct Params<'a> {
    method: &'a str,
    map: &'a Value,
}

impl<'a> Params<'a> {
    fn bad(&self, reason: impl Into<String>) -> BadCommand {
        BadCommand {
            method: self.method.to_owned(),
            reason: reason.into(),
        }
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        msgpack::field(self.map, key).filter(|v| !v.is_nil())
    }

    fn string(&self, key: &str) -> Result<String, BadCommand> {
        match self.get(key) {
            Some(v) => self.as_string(key, v),
            None => Err(self.bad(format!("`{key}` is missing"))),
        }
    }

    fn opt_string(&self, key: &str) -> Result<Option<String>, BadCommand> {
        self.get(key).map(|v| self.as_string(key, v)).transpose()
    }

    fn opt_u64(&self, key: &str) -> Result<Option<u64>, BadCommand> {
        match self.get(key) {
            None => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                self.bad(format!(
                    "`{key}` must be a non-negative integer, got {}",
                    kind(v)
                ))
            }),
        }
    }

    fn as_string(&self, key: &str, v: &Value) -> Result<String, BadCommand> {
        match v.as_str() {
            Some(s) => Ok(s.to_owned()),
            None => Err(self.bad(format!("`{key}` must be a string, got {}", kind(v)))),
        }
    }

    fn chat_id(&self) -> Result<ChatId, BadCommand> {
        // Lua code may well use a counter as chat id: accept integers.
        match self.get("chat_id") {
            Some(Value::Integer(i)) => Ok(ChatId::from(i.to_string())),
            Some(v) => self.as_string("chat_id", v).map(ChatId::from),
            None => Err(self.bad("`chat_id` is missing")),
        }
    }

    fn string_list(&self, key: &str, v: &Value) -> Result<Vec<String>, BadCommand> {
        match v {
            Value::Array(items) => items.iter().map(|i| self.as_string(key, i)).collect(),
            // An empty Lua table may arrive as an empty map.
            Value::Map(m) if m.is_empty() => Ok(Vec::new()),
            other => Err(self.bad(format!("`{key}` must be a list, got {}", kind(other)))),
        }
    }

    fn list(&self, key: &str) -> Result<&'a [Value], BadCommand> {
        match self.get(key) {
            None => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(Value::Map(m)) if m.is_empty() => Ok(&[]),
            Some(other) => Err(self.bad(format!("`{key}` must be a list, got {}", kind(other)))),
        }
    }

    /// A required absolute path.
    fn required_path(&self, key: &str) -> Result<PathBuf, BadCommand> {
        match self.get(key) {
            Some(v) => self.path(key, v),
            None => Err(self.bad(format!("`{key}` is missing"))),
        }
    }

    fn path(&self, key: &str, v: &Value) -> Result<PathBuf, BadCommand> {
        let p = PathBuf::from(self.as_string(key, v)?);
        if p.is_absolute() {
            Ok(p)
        } else {
            Err(self.bad(format!(
                "`{key}` must be an absolute path, got `{}`",
                p.display()
            )))
        }
    }
}

/// A short name of a value's type, for error messages.
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
        let empty = Value::Map(Vec::new());
        let map = match args {
            [] => &empty,
            [m @ Value::Map(_)] => m,
            // `vim.rpcrequest(ch, "acp.shutdown", {})` sends an empty array.
            [Value::Array(a)] if a.is_empty() => &empty,
            [other] => {
                return Err(BadCommand {
                    method: method.to_owned(),
                    reason: format!("its argument must be a table, got {}", kind(other)),
                })
            }
            _ => {
                return Err(BadCommand {
                    method: method.to_owned(),
                    reason: format!("it takes one table argument, got {}", args.len()),
                })
            }
        };
        let p = Params { method, map };
        match method {
            "acp.hello" => Ok(Command::Hello {
                plugin_version: p.string("plugin_version")?,
            }),
            "acp.open" => decode_open(&p).map(|o| Command::Open(Box::new(o))),
            "acp.prompt" => Ok(Command::Prompt {
                chat_id: p.chat_id()?,
                blocks: decode_blocks(&p)?,
                buffers: decode_prompt_buffers(&p)?,
            }),
            "acp.cancel" => Ok(Command::Cancel {
                chat_id: p.chat_id()?,
                subagent: p.opt_string("session_id")?,
            }),
            "acp.permission_respond" => decode_permission_respond(&p),
            "acp.elicitation_respond" => decode_elicitation_respond(&p),
            "acp.close" => Ok(Command::Close {
                chat_id: p.chat_id()?,
            }),
            "acp.set_mode" => Ok(Command::SetMode {
                chat_id: p.chat_id()?,
                mode_id: p.string("mode_id")?,
            }),
            "acp.set_config_option" => Ok(Command::SetConfigOption {
                chat_id: p.chat_id()?,
                config_id: p.string("config_id")?,
                value: match p.get("value") {
                    Some(Value::Boolean(b)) => OptionValue::Bool(*b),
                    Some(v) => OptionValue::Id(p.as_string("value", v)?),
                    None => return Err(p.bad("`value` is missing")),
                },
            }),
            "acp.shutdown" => Ok(Command::Shutdown),
            "acp.complete_files" => decode_complete_files(&p),
            "acp.list_sessions" => decode_list_sessions(&p),
            "acp.logout" => Ok(Command::Logout {
                chat_id: p.chat_id()?,
            }),
            "acp.rewind" => Ok(Command::Rewind {
                chat_id: p.chat_id()?,
                turn: match p.opt_u64("turn")? {
                    Some(n) => Some(
                        u32::try_from(n)
                            .ok()
                            .filter(|n| *n > 0)
                            .ok_or_else(|| p.bad("`turn` must be a turn number from 1"))?,
                    ),
                    None => None,
                },
                preview: matches!(p.get("preview"), Some(Value::Boolean(true))),
            }),
            "acp.file_saved" => Ok(Command::FileSaved {
                path: p.required_path("path")?,
            }),
            m if ReviewCommand::handles(m) => decode_review(&p).map(Command::Review),
            "acp.agents_list" | "acp.agents_install" | "acp.agents_cancel"
            | "acp.agents_remove" => decode_registry(&p).map(Command::Registry),
            _ => Err(p.bad("no such method")),
        }
    }

    /// The method name the command arrived as.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Hello { .. } => "acp.hello",
            Command::Open(_) => "acp.open",
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

fn decode_registry(p: &Params<'_>) -> Result<crate::registry::RegistryCommand, BadCommand> {
    use crate::registry::{Places, RegistryCommand};
    let places = || -> Result<Places, BadCommand> {
        let map = match p.get("registry") {
            Some(m @ Value::Map(_)) => m,
            Some(other) => {
                return Err(p.bad(format!("`registry` must be a table, got {}", kind(other))))
            }
            None => return Err(p.bad("`registry` is missing")),
        };
        let r = Params {
            method: p.method,
            map,
        };
        let path = |key: &str| -> Result<PathBuf, BadCommand> {
            match r.get(key) {
                Some(v) => r.path(&format!("registry.{key}"), v),
                None => Err(p.bad(format!("`registry.{key}` is missing"))),
            }
        };
        Ok(Places {
            url: r.string("url")?,
            dir: path("dir")?,
            cache_dir: path("cache_dir")?,
            bundled: r
                .get("bundled")
                .map(|v| r.path("registry.bundled", v))
                .transpose()?,
        })
    };
    Ok(match p.method {
        "acp.agents_list" => RegistryCommand::List {
            request_id: match p.get("request_id") {
                Some(Value::Integer(i)) => i.to_string(),
                Some(v) => p.as_string("request_id", v)?,
                None => return Err(p.bad("`request_id` is missing")),
            },
            places: places()?,
            mode: match p.opt_string("mode")?.as_deref() {
                None | Some("cached") => acp_client::registry::LoadMode::Cached,
                Some("refresh") => acp_client::registry::LoadMode::Refresh,
                Some("offline") => acp_client::registry::LoadMode::Offline,
                Some(other) => {
                    return Err(p.bad(format!(
                        "`mode` must be \"cached\", \"refresh\" or \"offline\", got {other:?}"
                    )))
                }
            },
        },
        "acp.agents_install" => RegistryCommand::Install {
            id: p.string("id")?,
            places: places()?,
            allow_unverified: match p.get("allow_unverified") {
                None | Some(Value::Nil) => false,
                Some(Value::Boolean(b)) => *b,
                Some(_) => return Err(p.bad("`allow_unverified` must be a boolean")),
            },
        },
        "acp.agents_remove" => RegistryCommand::Remove {
            id: p.string("id")?,
            places: places()?,
        },
        _ => RegistryCommand::Cancel {
            id: p.string("id")?,
        },
    })
}

fn decode_list_sessions(p: &Params<'_>) -> Result<Command, BadCommand> {
    let request_id = match p.get("request_id") {
        Some(Value::Integer(i)) => i.to_string(),
        Some(v) => p.as_string("request_id", v)?,
        None => return Err(p.bad("`request_id` is missing")),
    };
    let cwd = p.required_path("cwd")?;
    let all = match p.get("all") {
        None => false,
        Some(Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(p.bad(format!("`all` must be true or false, got {}", kind(other))))
        }
    };
    Ok(Command::ListSessions {
        request_id,
        agent: decode_agent(p)?,
        cwd,
        all,
        delete: p.opt_string("delete")?,
    })
}

/// The `agent` table of `acp.open` and `acp.list_sessions`.
fn decode_agent(p: &Params<'_>) -> Result<AgentSpec, BadCommand> {
    let agent = p.get("agent").ok_or_else(|| p.bad("`agent` is missing"))?;
    if !matches!(agent, Value::Map(_)) {
        return Err(p.bad(format!("`agent` must be a table, got {}", kind(agent))));
    }
    let a = Params {
        method: p.method,
        map: agent,
    };
    let cmd = match a.get("cmd") {
        Some(v) => a.string_list("agent.cmd", v)?,
        None => Vec::new(),
    };
    if cmd.first().is_none_or(|prog| prog.is_empty()) {
        return Err(p.bad(
            "`agent.cmd` must be a list starting with the program, like { \"claude-agent-acp\" }",
        ));
    }
    let mut env = Vec::new();
    match a.get("env") {
        None => {}
        Some(Value::Map(entries)) => {
            for (k, v) in entries {
                let key = k.as_str().ok_or_else(|| {
                    p.bad(format!("`agent.env` keys must be strings, got {}", kind(k)))
                })?;
                env.push((key.to_owned(), a.as_string("agent.env", v)?));
            }
        }
        Some(Value::Array(a)) if a.is_empty() => {}
        Some(other) => {
            return Err(p.bad(format!(
                "`agent.env` must be a table of strings, got {}",
                kind(other)
            )))
        }
    }
    env.sort();
    let name = a.opt_string("name")?.unwrap_or_else(|| cmd[0].clone());
    let agent_cwd = a.get("cwd").map(|v| a.path("agent.cwd", v)).transpose()?;
    let init_timeout = match a.get("init_timeout_ms") {
        None => None,
        Some(Value::Integer(ms)) => match ms.as_u64().filter(|&ms| ms > 0) {
            Some(ms) => Some(std::time::Duration::from_millis(ms)),
            None => {
                return Err(p.bad(format!(
                    "`agent.init_timeout_ms` must be a positive number of milliseconds, got {ms}"
                )))
            }
        },
        Some(other) => {
            return Err(p.bad(format!(
                "`agent.init_timeout_ms` must be a positive number of milliseconds, got {}",
                kind(other)
            )))
        }
    };
    let missing_file_read_empty = match a.opt_string("missing_file_read")?.as_deref() {
        None | Some("error") => false,
        Some("empty") => true,
        Some(other) => {
            return Err(p.bad(format!(
                "`agent.missing_file_read` must be \"empty\" or \"error\", got `{other}`"
            )))
        }
    };
    let ask_terminal = match a.get("ask_terminal") {
        None => false,
        Some(Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(p.bad(format!(
                "`agent.ask_terminal` must be true or false, got {}",
                kind(other)
            )))
        }
    };
    let editor_tools = match a.get("editor_tools") {
        None => true,
        Some(Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(p.bad(format!(
                "`agent.editor_tools` must be true or false, got {}",
                kind(other)
            )))
        }
    };
    let editor_tools_prompt = a.opt_string("editor_tools_prompt")?;
    let protocol_version = match a.get("protocol_version") {
        None => acp_client::ProtocolVersion::V1,
        Some(Value::Integer(n)) if n.as_u64() == Some(1) => acp_client::ProtocolVersion::V1,
        Some(Value::Integer(n)) if n.as_u64() == Some(2) => acp_client::ProtocolVersion::V2,
        Some(other) => {
            return Err(p.bad(format!(
                "`agent.protocol_version` must be 1 or 2, got {other}"
            )))
        }
    };
    Ok(AgentSpec {
        name,
        cmd,
        env,
        cwd: agent_cwd,
        init_timeout,
        missing_file_read_empty,
        ask_terminal,
        editor_tools,
        editor_tools_prompt,
        protocol_version,
    })
}

fn decode_open(p: &Params<'_>) -> Result<OpenChat, BadCommand> {
    let chat_id = p.chat_id()?;
    let agent = decode_agent(p)?;
    let cwd = p.required_path("cwd")?;
    let mcp_servers = p
        .list("mcp_servers")?
        .iter()
        .map(|s| {
            serde_json::from_value::<schema::McpServer>(msgpack::to_json(s)).map_err(|e| {
                p.bad(format!(
                    "an entry of `mcp_servers` is not an ACP McpServer: {e}"
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let (auto_allow, remember) = match p.get("permission") {
        None => (None, None),
        Some(perm @ Value::Map(_)) => {
            let pp = Params {
                method: p.method,
                map: perm,
            };
            let auto_allow = pp
                .get("auto_allow")
                .map(|v| pp.string_list("permission.auto_allow", v))
                .transpose()?;
            let remember = match pp.get("remember") {
                None => None,
                Some(Value::Boolean(b)) => Some(*b),
                Some(other) => {
                    return Err(p.bad(format!(
                        "`permission.remember` must be true or false, got {}",
                        kind(other)
                    )))
                }
            };
            (auto_allow, remember)
        }
        Some(other) => {
            return Err(p.bad(format!("`permission` must be a table, got {}", kind(other))))
        }
    };
    let load_session_id = p.opt_string("load_session_id")?;
    let resume_session_id = p.opt_string("resume_session_id")?;
    if load_session_id.is_some() && resume_session_id.is_some() {
        return Err(p.bad("give `load_session_id` or `resume_session_id`, not both"));
    }
    let auth_method_id = p.opt_string("auth_method_id")?;
    let transcript_dir = p
        .get("transcript_dir")
        .map(|v| p.path("transcript_dir", v))
        .transpose()?;
    let permission_dir = p
        .get("permission_dir")
        .map(|v| p.path("permission_dir", v))
        .transpose()?;
    let additional_directories = p
        .list("additional_directories")?
        .iter()
        .map(|v| p.path("additional_directories", v))
        .collect::<Result<Vec<_>, _>>()?;
    let system_prompt = decode_system_prompt(p)?;
    let checkpoints = p.opt_string("checkpoints")?;
    Ok(OpenChat {
        chat_id,
        agent,
        cwd,
        mcp_servers,
        load_session_id,
        resume_session_id,
        auto_allow,
        remember,
        permission_dir,
        auth_method_id,
        transcript_dir,
        additional_directories,
        system_prompt,
        checkpoints,
    })
}

/// `system_prompt`: a string (appended), or `{mode, text}`. Blank text is
/// no system prompt.
fn decode_system_prompt(p: &Params<'_>) -> Result<Option<acp_client::SystemPrompt>, BadCommand> {
    use acp_client::{SystemPrompt, SystemPromptMode};
    let Some(v) = p.get("system_prompt") else {
        return Ok(None);
    };
    let (mode, text) = match v {
        Value::String(_) => (SystemPromptMode::Append, p.as_string("system_prompt", v)?),
        Value::Map(_) => {
            let sp = Params {
                method: p.method,
                map: v,
            };
            let mode = match sp.opt_string("mode")?.as_deref() {
                None | Some("append") => SystemPromptMode::Append,
                Some("override") => SystemPromptMode::Override,
                Some(other) => {
                    return Err(p.bad(format!(
                        "`system_prompt.mode` must be \"append\" or \"override\", got \"{other}\""
                    )))
                }
            };
            (mode, sp.string("text")?)
        }
        other => {
            return Err(p.bad(format!(
                "`system_prompt` must be a string or {{ mode = ..., text = ... }}, got {}",
                kind(other)
            )))
        }
    };
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(SystemPrompt { mode, text }))
}

fn decode_blocks(p: &Params<'_>) -> Result<Vec<schema::ContentBlock>, BadCommand> {
    let items = match p.get("blocks") {
        Some(Value::Array(items)) => items,
        Some(other) => return Err(p.bad(format!("`blocks` must be a list, got {}", kind(other)))),
        None => return Err(p.bad("`blocks` is missing")),
    };
    if items.is_empty() {
        return Err(p.bad("`blocks` is empty; a prompt needs at least one content block"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, b)| {
            // Lua writes snake_case like everything it sends (`mime_type`).
            let block = crate::protocol::wire::to_acp_keys(msgpack::to_json(b));
            serde_json::from_value::<schema::ContentBlock>(block).map_err(|e| {
                p.bad(format!(
                    "block {} is not an ACP content block ({e}); use {{ type = \"text\", text = \"...\" }}",
                    i + 1
                ))
            })
        })
        .collect()
}

/// `buffers` of `acp.prompt`: optional. An entry that is not `{path, text,
/// tick}` (text that is not UTF-8, a buffer of a binary file) is left out:
/// the prompt still goes, and that buffer's first merge costs the extra
/// round trip it costs without the list.
fn decode_prompt_buffers(p: &Params<'_>) -> Result<Vec<PromptBuffer>, BadCommand> {
    let items = p.list("buffers")?;
    let decode = |item: &Value| -> Result<PromptBuffer, BadCommand> {
        let b = Params {
            method: p.method,
            map: item,
        };
        Ok(PromptBuffer {
            path: b.required_path("path")?,
            text: b.string("text")?,
            tick: b
                .opt_u64("tick")?
                .ok_or_else(|| b.bad("`tick` is missing"))?,
            disk: b.opt_string("disk")?,
        })
    };
    Ok(items
        .iter()
        .filter_map(|item| match decode(item) {
            Ok(buffer) => Some(buffer),
            Err(e) => {
                tracing::debug!("a buffer of acp.prompt left out: {}", e.reason);
                None
            }
        })
        .collect())
}

fn decode_complete_files(p: &Params<'_>) -> Result<Command, BadCommand> {
    let cwd = p.required_path("cwd")?;
    let limit = match p.get("limit") {
        None => 50,
        Some(Value::Integer(i)) => i
            .as_u64()
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
            .ok_or_else(|| p.bad(format!("`limit` {i} must not be negative")))?,
        Some(other) => {
            return Err(p.bad(format!("`limit` must be an integer, got {}", kind(other))))
        }
    };
    let hidden = match p.get("hidden") {
        None => false,
        Some(Value::Boolean(b)) => *b,
        Some(other) => {
            return Err(p.bad(format!(
                "`hidden` must be true or false, got {}",
                kind(other)
            )))
        }
    };
    Ok(Command::CompleteFiles(crate::files::FileQuery {
        cwd,
        query: p.opt_string("query")?.unwrap_or_default(),
        limit,
        hidden,
    }))
}

fn decode_elicitation_respond(p: &Params<'_>) -> Result<Command, BadCommand> {
    let request_id = request_id(p)?;
    let response = ElicitationResponse::from_json(&msgpack::to_json(p.map))
        .map_err(|e| p.bad(e.to_string()))?;
    Ok(Command::ElicitationRespond {
        request_id: ElicitationPromptId(request_id),
        response,
    })
}

fn decode_permission_respond(p: &Params<'_>) -> Result<Command, BadCommand> {
    Ok(Command::PermissionRespond {
        request_id: PromptId(request_id(p)?),
        option_id: p.opt_string("option_id")?,
    })
}

/// The `request_id` of a respond command.
fn request_id(p: &Params<'_>) -> Result<u64, BadCommand> {
    match p.get("request_id") {
        Some(Value::Integer(i)) => i
            .as_u64()
            .ok_or_else(|| p.bad(format!("`request_id` {i} is not a valid request id"))),
        Some(other) => Err(p.bad(format!(
            "`request_id` must be an integer, got {}",
            kind(other)
        ))),
        None => Err(p.bad("`request_id` is missing")),
    }
}

/// Which agent changes a review decision covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewTarget {
    /// These hunks of one file (ids from `acp.review_file`).
    Hunks {
        /// Absolute path of the file.
        path: PathBuf,
        /// The hunks, in the order given.
        ids: Vec<HunkId>,
    },
    /// Every change of one file.
    File {
        /// Absolute path of the file.
        path: PathBuf,
    },
    /// Every change of the chat's session.
    All,
}

/// The edit review commands (see "Edit review" in `doc/protocol.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReviewCommand {
    /// `acp.review_files` (request): every file under review.
    Files {
        /// The chat concerned.
        chat_id: ChatId,
    },
    /// `acp.review_file` (request): one file's hunks and texts.
    File {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: PathBuf,
    },
    /// `acp.file_sync` (request): what the backend holds of a file's sync
    /// with its buffer (diagnostics: tests, bug reports).
    Sync {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: PathBuf,
    },
    /// `acp.review_accept`: the changes stay, and leave the review.
    Accept {
        /// The chat concerned.
        chat_id: ChatId,
        /// What to accept.
        target: ReviewTarget,
    },
    /// `acp.review_reject`: the changes are undone (buffer and disk).
    Reject {
        /// The chat concerned.
        chat_id: ChatId,
        /// What to reject.
        target: ReviewTarget,
    },
    /// `acp.review_delete`: delete a file whose creation the user rejected
    /// and then confirmed deleting.
    Delete {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: PathBuf,
    },
    /// `acp.user_edit`: the user changed a file under review, so their text
    /// is not taken for the agent's.
    UserEdit {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: PathBuf,
        /// The buffer's whole text; `None` when the user deleted the file.
        content: Option<String>,
        /// Then accept the hunks of the new text touching these 0-based
        /// lines (`[start, end)`): a conflict the user just resolved.
        accept_lines: Option<(usize, usize)>,
        /// The buffer's tick (`acp.fs.tick`) at `content`: the backend merges the
        /// agent's next write against this text (see
        /// `acp_client::buffer_sync`).
        tick: Option<u64>,
        /// `content` is the file's text on disk: the user saved the buffer
        /// (`saved`), or it was just read (`read`: not an edit, only the
        /// buffer's state, the base of merging the agent's next disk edit).
        disk: OnDisk,
    },
}

impl ReviewCommand {
    const METHODS: [&'static str; 7] = [
        "acp.review_files",
        "acp.review_file",
        "acp.file_sync",
        "acp.review_accept",
        "acp.review_reject",
        "acp.review_delete",
        "acp.user_edit",
    ];

    fn handles(method: &str) -> bool {
        Self::METHODS.contains(&method)
    }

    /// The method name the command arrived as.
    pub fn name(&self) -> &'static str {
        match self {
            ReviewCommand::Files { .. } => "acp.review_files",
            ReviewCommand::File { .. } => "acp.review_file",
            ReviewCommand::Sync { .. } => "acp.file_sync",
            ReviewCommand::Accept { .. } => "acp.review_accept",
            ReviewCommand::Reject { .. } => "acp.review_reject",
            ReviewCommand::Delete { .. } => "acp.review_delete",
            ReviewCommand::UserEdit { .. } => "acp.user_edit",
        }
    }

    /// The chat concerned.
    pub fn chat_id(&self) -> &ChatId {
        match self {
            ReviewCommand::Files { chat_id }
            | ReviewCommand::File { chat_id, .. }
            | ReviewCommand::Sync { chat_id, .. }
            | ReviewCommand::Accept { chat_id, .. }
            | ReviewCommand::Reject { chat_id, .. }
            | ReviewCommand::Delete { chat_id, .. }
            | ReviewCommand::UserEdit { chat_id, .. } => chat_id,
        }
    }

    /// True for the requests that answer with review data.
    pub fn is_query(&self) -> bool {
        matches!(
            self,
            ReviewCommand::Files { .. } | ReviewCommand::File { .. } | ReviewCommand::Sync { .. }
        )
    }
}

fn decode_review(p: &Params<'_>) -> Result<ReviewCommand, BadCommand> {
    let path = |key: &str| p.required_path(key);
    Ok(match p.method {
        "acp.review_files" => ReviewCommand::Files {
            chat_id: p.chat_id()?,
        },
        "acp.review_file" => ReviewCommand::File {
            chat_id: p.chat_id()?,
            path: path("path")?,
        },
        "acp.file_sync" => ReviewCommand::Sync {
            chat_id: p.chat_id()?,
            path: path("path")?,
        },
        "acp.review_accept" => ReviewCommand::Accept {
            chat_id: p.chat_id()?,
            target: decode_target(p)?,
        },
        "acp.review_reject" => ReviewCommand::Reject {
            chat_id: p.chat_id()?,
            target: decode_target(p)?,
        },
        "acp.review_delete" => ReviewCommand::Delete {
            chat_id: p.chat_id()?,
            path: path("path")?,
        },
        "acp.user_edit" => ReviewCommand::UserEdit {
            chat_id: p.chat_id()?,
            path: path("path")?,
            content: p.opt_string("content")?,
            tick: p.opt_u64("tick")?,
            disk: match p.opt_string("disk")?.as_deref() {
                None => OnDisk::No,
                Some("saved") => OnDisk::Saved,
                Some("read") => OnDisk::Read,
                Some(other) => {
                    return Err(p.bad(format!(
                        "`disk` must be \"saved\" or \"read\", got \"{other}\""
                    )))
                }
            },
            accept_lines: match p.get("accept_lines") {
                None => None,
                Some(Value::Array(pair)) => match &pair[..] {
                    [a, b] => match (a.as_u64(), b.as_u64()) {
                        (Some(a), Some(b)) if a <= b => Some((a as usize, b as usize)),
                        _ => {
                            return Err(
                                p.bad("`accept_lines` must be {start, end} with 0 <= start <= end")
                            )
                        }
                    },
                    _ => return Err(p.bad("`accept_lines` must be a pair {start, end}")),
                },
                Some(other) => {
                    return Err(p.bad(format!(
                        "`accept_lines` must be a pair {{start, end}}, got {}",
                        kind(other)
                    )))
                }
            },
        },
        _ => return Err(p.bad("no such method")),
    })
}

/// `path?` and `hunks?`: hunks of a file, a whole file, or (neither) all.
fn decode_target(p: &Params<'_>) -> Result<ReviewTarget, BadCommand> {
    let path = p.get("path").map(|v| p.path("path", v)).transpose()?;
    let hunks = p.get("hunks");
    match (path, hunks) {
        (None, None) => Ok(ReviewTarget::All),
        (None, Some(_)) => Err(p.bad("`hunks` needs the `path` of their file")),
        (Some(path), None) => Ok(ReviewTarget::File { path }),
        (Some(path), Some(v)) => {
            let items: &[Value] = match v {
                Value::Array(items) => items,
                Value::Map(m) if m.is_empty() => &[],
                other => {
                    return Err(p.bad(format!(
                        "`hunks` must be a list of hunk ids, got {}",
                        kind(other)
                    )))
                }
            };
            if items.is_empty() {
                return Err(p.bad("`hunks` is empty; leave it out to decide on the whole file"));
            }
            let ids = items
                .iter()
                .map(|i| {
                    i.as_u64()
                        .map(HunkId::from)
                        .ok_or_else(|| p.bad(format!("hunk ids are integers, got {}", kind(i))))
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(ReviewTarget::Hunks { path, ids })
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::msgpack::{from_json, map};
    use serde_json::json;

    fn decode(method: &str, params: serde_json::Value) -> Result<Command, BadCommand> {
        Command::decode(method, &[from_json(&params)])
    }

    fn open_params() -> serde_json::Value {
        json!({
            "chat_id": "c1",
            "agent": {"name": "demo", "cmd": ["demo-agent", "--acp"], "env": {"B": "2", "A": "1"}},
            "cwd": "/tmp/project",
        })
    }

    #[test]
    fn decodes_open_with_defaults_and_sorted_env() {
        let Command::Open(open) = decode("acp.open", open_params()).unwrap() else {
            panic!("not an open");
        };
        assert_eq!(open.chat_id, ChatId("c1".into()));
        assert_eq!(open.agent.name, "demo");
        assert_eq!(open.agent.cmd, vec!["demo-agent", "--acp"]);
        assert_eq!(
            open.agent.env,
            vec![("A".into(), "1".into()), ("B".into(), "2".into())]
        );
        assert_eq!(open.agent.cwd, None);
        assert_eq!(open.agent.init_timeout, None);
        assert_eq!(open.cwd, PathBuf::from("/tmp/project"));
        assert!(open.mcp_servers.is_empty());
        assert_eq!(open.load_session_id, None);
        assert_eq!(open.auto_allow, None);
        assert_eq!(open.remember, None);
    }

    #[test]
    fn decodes_open_extras() {
        let mut p = open_params();
        p["mcp_servers"] = json!([{"name": "fs", "command": "/bin/mcp", "args": [], "env": []}]);
        p["load_session_id"] = json!("sess-9");
        p["permission"] = json!({"auto_allow": ["read", "search"], "remember": true});
        // An empty Lua table travels as an empty array.
        p["agent"]["env"] = json!([]);
        p["agent"]["init_timeout_ms"] = json!(250);
        p["agent"]["missing_file_read"] = json!("empty");
        p["additional_directories"] = json!(["/extra/a", "/extra/b"]);
        let Command::Open(open) = decode("acp.open", p).unwrap() else {
            panic!("not an open");
        };
        assert_eq!(
            open.additional_directories,
            vec![PathBuf::from("/extra/a"), PathBuf::from("/extra/b")]
        );
        assert!(open.agent.missing_file_read_empty);
        assert_eq!(open.mcp_servers.len(), 1);
        assert_eq!(open.load_session_id.as_deref(), Some("sess-9"));
        assert_eq!(
            open.auto_allow,
            Some(vec!["read".to_owned(), "search".to_owned()])
        );
        assert_eq!(open.remember, Some(true));
        assert!(open.agent.env.is_empty());
        assert_eq!(
            open.agent.init_timeout,
            Some(std::time::Duration::from_millis(250))
        );

        let mut p = open_params();
        p["permission"] = json!({"remember": false});
        let Command::Open(open) = decode("acp.open", p).unwrap() else {
            panic!("not an open");
        };
        assert!(!open.agent.missing_file_read_empty, "off by default");
        assert_eq!(open.remember, Some(false));
        assert_eq!(open.auto_allow, None);
        assert_eq!(
            open.agent.protocol_version,
            acp_client::ProtocolVersion::V1,
            "v1 until v2 is stable"
        );
    }

    #[test]
    fn decodes_the_protocol_version_and_refuses_others() {
        let mut p = open_params();
        p["agent"]["protocol_version"] = json!(2);
        let Command::Open(open) = decode("acp.open", p).unwrap() else {
            panic!("not an open");
        };
        assert_eq!(open.agent.protocol_version, acp_client::ProtocolVersion::V2);
        for bad in [json!(3), json!("2"), json!(0)] {
            let mut p = open_params();
            p["agent"]["protocol_version"] = bad;
            let err = decode("acp.open", p).unwrap_err().to_string();
            assert!(
                err.contains("`agent.protocol_version` must be 1 or 2"),
                "{err}"
            );
        }
    }

    #[test]
    fn rejects_bad_open_params_with_a_reason() {
        let cases = [
            (
                json!({"agent": {"cmd": ["x"]}, "cwd": "/"}),
                "`chat_id` is missing",
            ),
            (
                json!({"chat_id": "c", "agent": {"cmd": []}, "cwd": "/"}),
                "agent.cmd",
            ),
            (
                json!({"chat_id": "c", "agent": {"cmd": "x"}, "cwd": "/"}),
                "must be a list",
            ),
            (
                json!({"chat_id": "c", "agent": {"cmd": ["x"]}, "cwd": "rel"}),
                "absolute",
            ),
            (
                json!({"chat_id": "c", "agent": {"cmd": ["x"]}}),
                "`cwd` is missing",
            ),
            (
                json!({"chat_id": "c", "agent": {"cmd": ["x"], "env": {"A": 1}}, "cwd": "/"}),
                "agent.env",
            ),
            (
                json!({"chat_id": "c", "agent": {"cmd": ["x"]}, "cwd": "/", "mcp_servers": [{"bogus": 1}]}),
                "McpServer",
            ),
            (
                json!({"chat_id": "c", "agent": {"cmd": ["x"]}, "cwd": "/", "load_session_id": "a", "resume_session_id": "b"}),
                "not both",
            ),
            (
                json!({"chat_id": "c", "agent": {"cmd": ["x"]}, "cwd": "/", "permission": {"remember": "yes"}}),
                "`permission.remember` must be true or false",
            ),
            (
                json!({"chat_id": "c", "agent": {"cmd": ["x"], "init_timeout_ms": 0}, "cwd": "/"}),
                "`agent.init_timeout_ms` must be a positive number of milliseconds, got 0",
            ),
        ];
        for (params, want) in cases {
            let err = decode("acp.open", params.clone()).unwrap_err();
            assert_eq!(err.method, "acp.open");
            assert!(err.reason.contains(want), "{params}: {}", err.reason);
        }
    }

    #[test]
    fn decodes_prompt_blocks_into_content_blocks() {
        let cmd = decode(
            "acp.prompt",
            json!({"chat_id": 7, "blocks": [{"type": "text", "text": "hi"}]}),
        )
        .unwrap();
        let Command::Prompt {
            chat_id,
            blocks,
            buffers,
        } = cmd
        else {
            panic!("not a prompt");
        };
        assert_eq!(chat_id, ChatId("7".into()));
        assert!(matches!(&blocks[..], [schema::ContentBlock::Text(t)] if t.text == "hi"));
        assert!(buffers.is_empty());
    }

    #[test]
    fn a_prompt_carries_the_unsaved_buffers_and_leaves_out_bad_ones() {
        let cmd = decode(
            "acp.prompt",
            json!({"chat_id": "c", "blocks": [{"type": "text", "text": "hi"}], "buffers": [
                {"path": "/w/a.txt", "text": "mine\n", "tick": 9, "disk": "disk\n"},
                {"path": "rel.txt", "text": "x", "tick": 1},
                {"path": "/w/b.txt", "tick": 2},
                {"path": "/w/c.txt", "text": "clean\n", "tick": 3}
            ]}),
        )
        .unwrap();
        let Command::Prompt { buffers, .. } = cmd else {
            panic!("not a prompt");
        };
        assert_eq!(
            buffers,
            vec![
                PromptBuffer {
                    path: "/w/a.txt".into(),
                    text: "mine\n".into(),
                    tick: 9,
                    disk: Some("disk\n".into()),
                },
                PromptBuffer {
                    path: "/w/c.txt".into(),
                    text: "clean\n".into(),
                    tick: 3,
                    disk: None,
                }
            ]
        );
        let err = decode(
            "acp.prompt",
            json!({"chat_id": "c", "blocks": [{"type": "text", "text": "hi"}], "buffers": 3}),
        )
        .unwrap_err();
        assert!(
            err.reason.contains("`buffers` must be a list"),
            "{}",
            err.reason
        );
    }

    #[test]
    fn rejects_unknown_or_empty_blocks() {
        let err = decode(
            "acp.prompt",
            json!({"chat_id": "c", "blocks": [{"type": "hologram"}]}),
        )
        .unwrap_err();
        assert!(err.reason.contains("block 1"), "{}", err.reason);
        let err = decode("acp.prompt", json!({"chat_id": "c", "blocks": []})).unwrap_err();
        assert!(err.reason.contains("empty"));
    }

    #[test]
    fn decodes_permission_respond_with_and_without_option() {
        assert_eq!(
            decode(
                "acp.permission_respond",
                json!({"request_id": 4, "option_id": "allow"})
            )
            .unwrap(),
            Command::PermissionRespond {
                request_id: PromptId(4),
                option_id: Some("allow".into())
            }
        );
        // Lua's nil is simply absent from the table.
        assert_eq!(
            decode("acp.permission_respond", json!({"request_id": 4})).unwrap(),
            Command::PermissionRespond {
                request_id: PromptId(4),
                option_id: None
            }
        );
        for bad in [
            json!({"request_id": "4"}),
            json!({"request_id": -1}),
            json!({}),
        ] {
            assert!(decode("acp.permission_respond", bad).is_err());
        }
    }

    #[test]
    fn decodes_the_small_commands() {
        assert_eq!(
            decode("acp.hello", json!({"plugin_version": "0.1.0"})).unwrap(),
            Command::Hello {
                plugin_version: "0.1.0".into()
            }
        );
        assert_eq!(
            decode("acp.cancel", json!({"chat_id": "c"})).unwrap(),
            Command::Cancel {
                chat_id: ChatId("c".into()),
                subagent: None,
            }
        );
        assert_eq!(
            decode(
                "acp.cancel",
                json!({"chat_id": "c", "session_id": "child-1"})
            )
            .unwrap(),
            Command::Cancel {
                chat_id: ChatId("c".into()),
                subagent: Some("child-1".into()),
            }
        );
        assert_eq!(
            decode("acp.close", json!({"chat_id": "c"})).unwrap(),
            Command::Close {
                chat_id: ChatId("c".into())
            }
        );
        assert_eq!(
            decode("acp.set_mode", json!({"chat_id": "c", "mode_id": "plan"})).unwrap(),
            Command::SetMode {
                chat_id: ChatId("c".into()),
                mode_id: "plan".into()
            }
        );
        assert_eq!(
            decode(
                "acp.set_config_option",
                json!({"chat_id": "c", "config_id": "model", "value": "opus"})
            )
            .unwrap(),
            Command::SetConfigOption {
                chat_id: ChatId("c".into()),
                config_id: "model".into(),
                value: OptionValue::Id("opus".into())
            }
        );
        assert_eq!(
            decode(
                "acp.set_config_option",
                json!({"chat_id": "c", "config_id": "fast", "value": true})
            )
            .unwrap(),
            Command::SetConfigOption {
                chat_id: ChatId("c".into()),
                config_id: "fast".into(),
                value: OptionValue::Bool(true)
            }
        );
        assert_eq!(
            Command::decode("acp.shutdown", &[]).unwrap(),
            Command::Shutdown
        );
        assert_eq!(
            Command::decode("acp.shutdown", &[Value::Array(vec![])]).unwrap(),
            Command::Shutdown
        );
    }

    #[test]
    fn decodes_complete_files_with_defaults() {
        assert_eq!(
            decode(
                "acp.complete_files",
                json!({"cwd": "/p", "query": "ma", "limit": 7, "hidden": true})
            )
            .unwrap(),
            Command::CompleteFiles(crate::files::FileQuery {
                cwd: PathBuf::from("/p"),
                query: "ma".into(),
                limit: 7,
                hidden: true,
            })
        );
        assert_eq!(
            decode("acp.complete_files", json!({"cwd": "/p"})).unwrap(),
            Command::CompleteFiles(crate::files::FileQuery {
                cwd: PathBuf::from("/p"),
                query: String::new(),
                limit: 50,
                hidden: false,
            })
        );
        for (bad, want) in [
            (json!({"cwd": "rel"}), "absolute"),
            (json!({}), "`cwd` is missing"),
            (json!({"cwd": "/p", "limit": -1}), "negative"),
            (json!({"cwd": "/p", "limit": "3"}), "integer"),
            (json!({"cwd": "/p", "hidden": 1}), "true or false"),
        ] {
            let err = decode("acp.complete_files", bad).unwrap_err();
            assert!(err.reason.contains(want), "{}", err.reason);
        }
    }

    #[test]
    fn decodes_review_queries_and_decisions() {
        let chat = || ChatId("c".into());
        assert_eq!(
            decode("acp.review_files", json!({"chat_id": "c"})).unwrap(),
            Command::Review(ReviewCommand::Files { chat_id: chat() })
        );
        assert_eq!(
            decode(
                "acp.review_file",
                json!({"chat_id": "c", "path": "/p/a.rs"})
            )
            .unwrap(),
            Command::Review(ReviewCommand::File {
                chat_id: chat(),
                path: "/p/a.rs".into()
            })
        );
        let sync = decode("acp.file_sync", json!({"chat_id": "c", "path": "/p/a.rs"})).unwrap();
        assert_eq!(
            sync,
            Command::Review(ReviewCommand::Sync {
                chat_id: chat(),
                path: "/p/a.rs".into()
            })
        );
        assert!(matches!(&sync, Command::Review(r) if r.is_query()));
        assert_eq!(
            decode(
                "acp.review_accept",
                json!({"chat_id": "c", "path": "/p/a.rs", "hunks": [3, 7]})
            )
            .unwrap(),
            Command::Review(ReviewCommand::Accept {
                chat_id: chat(),
                target: ReviewTarget::Hunks {
                    path: "/p/a.rs".into(),
                    ids: vec![HunkId::from(3), HunkId::from(7)]
                }
            })
        );
        assert_eq!(
            decode(
                "acp.review_reject",
                json!({"chat_id": "c", "path": "/p/a.rs"})
            )
            .unwrap(),
            Command::Review(ReviewCommand::Reject {
                chat_id: chat(),
                target: ReviewTarget::File {
                    path: "/p/a.rs".into()
                }
            })
        );
        assert_eq!(
            decode("acp.review_reject", json!({"chat_id": "c"})).unwrap(),
            Command::Review(ReviewCommand::Reject {
                chat_id: chat(),
                target: ReviewTarget::All
            })
        );
        assert_eq!(
            decode(
                "acp.review_delete",
                json!({"chat_id": "c", "path": "/p/new.rs"})
            )
            .unwrap(),
            Command::Review(ReviewCommand::Delete {
                chat_id: chat(),
                path: "/p/new.rs".into()
            })
        );
        assert_eq!(
            decode(
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/p/a.rs", "content": "x\n", "accept_lines": [2, 5], "tick": 12, "disk": "saved"})
            )
            .unwrap(),
            Command::Review(ReviewCommand::UserEdit {
                chat_id: chat(),
                path: "/p/a.rs".into(),
                content: Some("x\n".into()),
                accept_lines: Some((2, 5)),
                tick: Some(12),
                disk: OnDisk::Saved,
            })
        );
        // No content: the user deleted the file.
        assert_eq!(
            decode("acp.user_edit", json!({"chat_id": "c", "path": "/p/a.rs"})).unwrap(),
            Command::Review(ReviewCommand::UserEdit {
                chat_id: chat(),
                path: "/p/a.rs".into(),
                content: None,
                accept_lines: None,
                tick: None,
                disk: OnDisk::No,
            })
        );
        // The merge of a disk edit is the backend's now: no `acp.merge`.
        assert!(decode(
            "acp.merge",
            json!({"base": "a\n", "ours": "b\n", "theirs": "c\n"})
        )
        .is_err());
    }

    #[test]
    fn rejects_bad_review_params_with_a_reason() {
        let cases = [
            (
                "acp.review_file",
                json!({"chat_id": "c"}),
                "`path` is missing",
            ),
            (
                "acp.review_file",
                json!({"chat_id": "c", "path": "rel.rs"}),
                "absolute",
            ),
            (
                "acp.review_accept",
                json!({"chat_id": "c", "hunks": [1]}),
                "needs the `path`",
            ),
            (
                "acp.review_accept",
                json!({"chat_id": "c", "path": "/a", "hunks": []}),
                "is empty",
            ),
            (
                "acp.review_reject",
                json!({"chat_id": "c", "path": "/a", "hunks": ["1"]}),
                "integers",
            ),
            (
                "acp.review_reject",
                json!({"chat_id": "c", "path": "/a", "hunks": [-1]}),
                "integers",
            ),
            (
                "acp.review_reject",
                json!({"chat_id": "c", "path": "/a", "hunks": 1}),
                "list of hunk ids",
            ),
            (
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/a", "accept_lines": [3, 1]}),
                "start <= end",
            ),
            (
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/a", "accept_lines": [3]}),
                "pair",
            ),
            (
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/a", "content": 3}),
                "must be a string",
            ),
            (
                "acp.user_edit",
                json!({"chat_id": "c", "path": "/a", "disk": "yes"}),
                "`disk` must be",
            ),
            ("acp.review_files", json!({}), "`chat_id` is missing"),
        ];
        for (method, params, want) in cases {
            let err = decode(method, params.clone()).unwrap_err();
            assert_eq!(err.method, method);
            assert!(
                err.reason.contains(want),
                "{method} {params}: {}",
                err.reason
            );
        }
    }

    #[test]
    fn rejects_bad_shapes_without_panicking() {
        let weird = [
            Value::Nil,
            Value::from(3),
            Value::from("x"),
            Value::Binary(vec![0xff]),
            Value::Ext(1, vec![]),
            map([("chat_id", Value::Map(vec![]))]),
            map([("chat_id", Value::from(1.5))]),
        ];
        for method in [
            "acp.hello",
            "acp.open",
            "acp.prompt",
            "acp.cancel",
            "acp.permission_respond",
            "acp.close",
            "acp.set_mode",
            "acp.set_config_option",
            "acp.complete_files",
        ] {
            for w in &weird {
                assert!(
                    Command::decode(method, std::slice::from_ref(w)).is_err(),
                    "{method} {w:?}"
                );
            }
            assert!(Command::decode(method, &[Value::Nil, Value::Nil]).is_err());
        }
        let err = decode("acp.frobnicate", json!({})).unwrap_err();
        assert!(err.to_string().contains("`acp.frobnicate`"));
        assert!(err.to_string().contains("checkhealth"));
    }
    #[test]
    fn decodes_list_sessions_logout_and_the_auth_and_transcript_fields_of_open() {
        let cmd = decode(
            "acp.list_sessions",
            json!({"request_id": 3, "agent": {"name": "demo", "cmd": ["demo-agent"]},
                   "cwd": "/p", "all": true, "delete": "s-9"}),
        )
        .unwrap();
        let Command::ListSessions {
            request_id,
            agent,
            cwd,
            all,
            delete,
        } = cmd
        else {
            panic!("not a list");
        };
        assert_eq!(request_id, "3");
        assert_eq!(agent.cmd, vec!["demo-agent"]);
        assert_eq!(cwd, PathBuf::from("/p"));
        assert!(all);
        assert_eq!(delete.as_deref(), Some("s-9"));
        for (bad, want) in [
            (json!({"agent": {"cmd": ["x"]}, "cwd": "/p"}), "request_id"),
            (
                json!({"request_id": "r", "cwd": "/p"}),
                "`agent` is missing",
            ),
            (
                json!({"request_id": "r", "agent": {"cmd": ["x"]}, "cwd": "/p", "all": 1}),
                "`all`",
            ),
            (
                json!({"request_id": "r", "agent": {"cmd": ["x"]}, "cwd": "p"}),
                "absolute",
            ),
        ] {
            let err = decode("acp.list_sessions", bad).unwrap_err();
            assert!(err.reason.contains(want), "{}", err.reason);
        }
        assert_eq!(
            decode("acp.logout", json!({"chat_id": "c"})).unwrap(),
            Command::Logout {
                chat_id: ChatId("c".into())
            }
        );
        let mut p = open_params();
        p["auth_method_id"] = json!("login");
        p["transcript_dir"] = json!("/state/acp/transcripts");
        let Command::Open(open) = decode("acp.open", p).unwrap() else {
            panic!("not an open");
        };
        assert_eq!(open.auth_method_id.as_deref(), Some("login"));
        assert_eq!(
            open.transcript_dir,
            Some(PathBuf::from("/state/acp/transcripts"))
        );
        let mut p = open_params();
        p["transcript_dir"] = json!("relative");
        assert!(decode("acp.open", p).is_err());
    }

    #[test]
    fn open_takes_the_directory_of_remembered_permissions() {
        let Command::Open(open) = decode("acp.open", open_params()).unwrap() else {
            panic!("not an open");
        };
        assert_eq!(open.permission_dir, None, "optional");
        let mut p = open_params();
        p["permission_dir"] = json!("/state/acp/permissions");
        let Command::Open(open) = decode("acp.open", p).unwrap() else {
            panic!("not an open");
        };
        assert_eq!(
            open.permission_dir,
            Some(PathBuf::from("/state/acp/permissions"))
        );
        let mut p = open_params();
        p["permission_dir"] = json!("relative/dir");
        assert!(decode("acp.open", p).is_err(), "a relative path is refused");
    }

    #[test]
    fn registry_commands_carry_where_things_are() {
        use crate::registry::{Places, RegistryCommand};
        let registry = json!({"url": "file:///r.json", "dir": "/d/agents", "cache_dir": "/c"});
        let places = Places {
            url: "file:///r.json".into(),
            dir: "/d/agents".into(),
            cache_dir: "/c".into(),
            bundled: None,
        };
        assert_eq!(
            decode(
                "acp.agents_list",
                json!({"request_id": 3, "registry": registry, "mode": "refresh"})
            )
            .unwrap(),
            Command::Registry(RegistryCommand::List {
                request_id: "3".into(),
                places: places.clone(),
                mode: acp_client::registry::LoadMode::Refresh,
            })
        );
        assert_eq!(
            decode(
                "acp.agents_install",
                json!({"id": "gemini", "registry": registry})
            )
            .unwrap(),
            Command::Registry(RegistryCommand::Install {
                id: "gemini".into(),
                places,
                allow_unverified: false,
            })
        );
        assert_eq!(
            decode("acp.agents_cancel", json!({"id": "gemini"})).unwrap(),
            Command::Registry(RegistryCommand::Cancel {
                id: "gemini".into()
            })
        );
        let e = decode("acp.agents_remove", json!({"id": "x"})).unwrap_err();
        assert!(e.reason.contains("`registry` is missing"), "{e}");
        let e = decode(
            "acp.agents_install",
            json!({"id": "x", "registry": {"url": "u", "dir": "rel", "cache_dir": "/c"}}),
        )
        .unwrap_err();
        assert!(
            e.reason.contains("`registry.dir` must be an absolute path"),
            "{e}"
        );
        let e = decode(
            "acp.agents_list",
            json!({"request_id": "r", "registry": registry, "mode": "sometimes"}),
        )
        .unwrap_err();
        assert!(e.reason.contains("`mode` must be"), "{e}");
    }
}
