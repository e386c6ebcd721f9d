//! The fields of the commands that start agents and open sessions:
//! `acp.open` and the `agent` table it shares with `acp.list_sessions`.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use acp_client::schema;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

use super::de as cmd_de;
use super::ChatId;

/// How to start an agent, as the plugin configured it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(from = "AgentParams")]
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
    pub init_timeout: Option<Duration>,
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

/// The `agent` table as Lua sends it.
#[derive(Deserialize)]
struct AgentParams {
    #[serde(default)]
    name: Option<String>,
    #[serde(deserialize_with = "program")]
    cmd: Vec<String>,
    /// Sorted by the map.
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "cmd_de::opt_abs_path")]
    cwd: Option<PathBuf>,
    #[serde(default, deserialize_with = "milliseconds")]
    init_timeout_ms: Option<Duration>,
    #[serde(default)]
    missing_file_read: MissingFileRead,
    #[serde(default)]
    ask_terminal: bool,
    #[serde(default = "on")]
    editor_tools: bool,
    #[serde(default)]
    editor_tools_prompt: Option<String>,
    #[serde(default, deserialize_with = "protocol_version")]
    protocol_version: acp_client::ProtocolVersion,
}

fn on() -> bool {
    true
}

/// `agent.missing_file_read`.
#[derive(Default, Deserialize)]
#[serde(rename_all = "lowercase")]
enum MissingFileRead {
    /// A read of a missing file is an error (ACP's rule).
    #[default]
    Error,
    /// It answers empty content.
    Empty,
}

impl From<AgentParams> for AgentSpec {
    fn from(a: AgentParams) -> Self {
        AgentSpec {
            // `program` made sure that there is a first word.
            name: a
                .name
                .unwrap_or_else(|| a.cmd.first().cloned().unwrap_or_default()),
            cmd: a.cmd,
            env: a.env.into_iter().collect(),
            cwd: a.cwd,
            init_timeout: a.init_timeout_ms,
            missing_file_read_empty: matches!(a.missing_file_read, MissingFileRead::Empty),
            ask_terminal: a.ask_terminal,
            editor_tools: a.editor_tools,
            editor_tools_prompt: a.editor_tools_prompt,
            protocol_version: a.protocol_version,
        }
    }
}

/// `agent.cmd`: the program, then its arguments.
fn program<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let cmd = Vec::<String>::deserialize(d)?;
    if cmd.first().is_none_or(|prog| prog.is_empty()) {
        return Err(de::Error::custom(
            "must be a list starting with the program, like { \"claude-agent-acp\" }",
        ));
    }
    Ok(cmd)
}

/// `agent.init_timeout_ms`: a positive number of milliseconds.
fn milliseconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    struct Ms;
    impl Visitor<'_> for Ms {
        type Value = Duration;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a positive number of milliseconds")
        }
        fn visit_u64<E: de::Error>(self, ms: u64) -> Result<Duration, E> {
            match ms {
                0 => Err(E::invalid_value(de::Unexpected::Unsigned(ms), &self)),
                _ => Ok(Duration::from_millis(ms)),
            }
        }
        fn visit_i64<E: de::Error>(self, ms: i64) -> Result<Duration, E> {
            Err(E::invalid_value(de::Unexpected::Signed(ms), &self))
        }
    }
    d.deserialize_any(Ms).map(Some)
}

/// `agent.protocol_version`: 1 or 2.
fn protocol_version<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<acp_client::ProtocolVersion, D::Error> {
    struct Version;
    impl Visitor<'_> for Version {
        type Value = acp_client::ProtocolVersion;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("1 or 2")
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
            match n {
                1 => Ok(acp_client::ProtocolVersion::V1),
                2 => Ok(acp_client::ProtocolVersion::V2),
                _ => Err(E::invalid_value(de::Unexpected::Unsigned(n), &self)),
            }
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
            Err(E::invalid_value(de::Unexpected::Signed(n), &self))
        }
    }
    d.deserialize_any(Version)
}

/// `acp.open`: start (or share) an agent and open a session in it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct OpenChat {
    /// The chat that owns the session.
    #[serde(deserialize_with = "cmd_de::chat_id")]
    pub chat_id: ChatId,
    /// The agent to start or share.
    pub agent: AgentSpec,
    /// Absolute working directory of the session.
    #[serde(deserialize_with = "cmd_de::abs_path")]
    pub cwd: PathBuf,
    /// MCP servers for the agent to connect to.
    #[serde(default, deserialize_with = "mcp_servers")]
    pub mcp_servers: Vec<schema::McpServer>,
    /// Load this session (history replayed) instead of creating one.
    #[serde(default)]
    pub load_session_id: Option<String>,
    /// Resume this session (no replay) instead of creating one.
    #[serde(default)]
    pub resume_session_id: Option<String>,
    /// The `permission` table: the plugin's `permission` config.
    #[serde(default)]
    pub permission: Permissions,
    /// The directory where the agent's "always" answers are saved, one file
    /// per project, so they survive `:Acp restart` and new Neovim sessions
    /// (`permission_dir` of `acp.open`; the plugin passes one under
    /// `stdpath("state")`). Without it they last as long as the agent.
    #[serde(default, deserialize_with = "cmd_de::opt_abs_path")]
    pub permission_dir: Option<PathBuf>,
    /// Send `authenticate` with this method id before opening the session
    /// (the user picked it after `auth_required`).
    #[serde(default)]
    pub auth_method_id: Option<String>,
    /// Write the session's transcript under this directory.
    #[serde(default, deserialize_with = "cmd_de::opt_abs_path")]
    pub transcript_dir: Option<PathBuf>,
    /// More workspace roots of the session (`additionalDirectories`, sent
    /// when the agent advertises them; always part of the fs sandbox).
    #[serde(default, deserialize_with = "cmd_de::abs_paths")]
    pub additional_directories: Vec<PathBuf>,
    /// The client system prompt (`system_prompt` of the agent's config or
    /// of setup()): `{mode = "append"|"override", text}`.
    #[serde(default, deserialize_with = "system_prompt")]
    pub system_prompt: Option<acp_client::SystemPrompt>,
    /// The chat's checkpoints (JSON) from a rewind or a saved transcript,
    /// adopted by the new session so it can still rewind.
    #[serde(default)]
    pub checkpoints: Option<String>,
}

/// The `permission` table of `acp.open`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Permissions {
    /// Tool kinds to allow without asking (`permission.auto_allow` of the
    /// plugin's config); `None` when the plugin did not send the field.
    #[serde(default)]
    pub auto_allow: Option<Vec<String>>,
    /// Whether "always" answers are remembered (`permission.remember` of
    /// the plugin's config); `None` when the plugin did not send the field.
    #[serde(default)]
    pub remember: Option<bool>,
}

/// `acp.open`: an [`OpenChat`] that loads or resumes at most one session.
pub(super) fn open<'de, D: Deserializer<'de>>(d: D) -> Result<Box<OpenChat>, D::Error> {
    let open = OpenChat::deserialize(d)?;
    if open.load_session_id.is_some() && open.resume_session_id.is_some() {
        return Err(de::Error::custom(
            "give `load_session_id` or `resume_session_id`, not both",
        ));
    }
    Ok(Box::new(open))
}

/// `mcp_servers` of `acp.open`: ACP `McpServer`s, passed on as they are.
fn mcp_servers<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<schema::McpServer>, D::Error> {
    Vec::<cmd_de::LossyJson>::deserialize(d)?
        .into_iter()
        .map(|s| {
            serde_json::from_value::<schema::McpServer>(s.0).map_err(|e| {
                de::Error::custom(format!("has an entry that is not an ACP McpServer: {e}"))
            })
        })
        .collect()
}

/// `system_prompt`: a string (appended), or `{mode, text}`. Blank text is
/// no system prompt.
fn system_prompt<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<acp_client::SystemPrompt>, D::Error> {
    use acp_client::{SystemPrompt, SystemPromptMode};
    #[derive(Deserialize)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Append,
        Override,
    }
    #[derive(Deserialize)]
    struct Table {
        #[serde(default)]
        mode: Option<Mode>,
        text: String,
    }
    struct StringOrTable;
    impl<'de> Visitor<'de> for StringOrTable {
        type Value = SystemPrompt;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string or { mode = ..., text = ... }")
        }
        fn visit_str<E: de::Error>(self, text: &str) -> Result<SystemPrompt, E> {
            Ok(SystemPrompt {
                mode: SystemPromptMode::Append,
                text: text.to_owned(),
            })
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SystemPrompt, A::Error> {
            let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
            Ok(SystemPrompt {
                mode: match t.mode {
                    None | Some(Mode::Append) => SystemPromptMode::Append,
                    Some(Mode::Override) => SystemPromptMode::Override,
                },
                text: t.text,
            })
        }
    }
    let prompt = d.deserialize_any(StringOrTable)?;
    Ok(Some(prompt).filter(|p| !p.text.trim().is_empty()))
}
