//! The agent processes, shared by the chats that use the same command.
//!
//! One process serves every chat whose agent has the same command line,
//! environment and working directory (the "agent key"). It is spawned by
//! the first chat, initialized once, and shut down when its last chat
//! closes. A process that exited is forgotten, so the next chat spawns a
//! fresh one.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use acp_client::serve::editor_tools::{BridgeCommand, EditorToolsOptions};
use acp_client::{AgentCommand, AgentInfo, Connection, ConnectionOptions};
use tokio::sync::OnceCell;

use crate::batcher::EventQueue;
use crate::command::{AgentSpec, ChatId};
use crate::editor::Editor;
use crate::host::NvimHost;
use crate::prompts::Prompts;
use crate::protocol::Event;

/// What makes two chats share one agent process.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AgentKey {
    /// Program and arguments.
    pub cmd: Vec<String>,
    /// Extra environment, sorted.
    pub env: Vec<(String, String)>,
    /// Working directory of the process.
    pub cwd: PathBuf,
}

impl AgentKey {
    /// The key of `spec` for a session in `session_cwd` (the agent runs in
    /// its own `cwd` when the plugin gave one, else in the session's).
    pub fn new(spec: &AgentSpec, session_cwd: &Path) -> Self {
        Self {
            cmd: spec.cmd.clone(),
            env: spec.env.clone(),
            cwd: spec
                .cwd
                .clone()
                .unwrap_or_else(|| session_cwd.to_path_buf()),
        }
    }

    fn command(&self) -> AgentCommand {
        let mut cmd = AgentCommand::new(self.cmd[0].clone())
            .args(self.cmd[1..].iter().cloned())
            .cwd(self.cwd.clone());
        for (k, v) in &self.env {
            cmd = cmd.env(k.clone(), v.clone());
        }
        cmd
    }
}

/// One running agent process.
#[derive(Debug)]
pub struct Agent {
    /// The name the plugin gave it (first chat wins).
    pub name: String,
    /// What the process was started with.
    pub key: AgentKey,
    /// The ACP connection to the process.
    pub conn: Connection,
    /// The editor host serving its requests and routing its events.
    pub host: Arc<NvimHost>,
    init: OnceCell<Result<AgentInfo, String>>,
    /// The user was told this agent ignores the configured system prompt:
    /// once per agent process, not per chat.
    pub system_prompt_warned: std::sync::atomic::AtomicBool,
}

impl Agent {
    /// `initialize`, once per process; every chat waits for the same call.
    /// The error is a sentence for the user.
    pub async fn ready(&self) -> Result<AgentInfo, String> {
        self.init
            .get_or_init(|| async {
                self.conn.initialize().await.map_err(|e| {
                    let cmd = self.key.cmd.join(" ");
                    match e {
                        // The stderr tail travels in its own field: keep it
                        // out of the sentence.
                        acp_client::Error::AgentExited { status, .. } => format!(
                            "The agent {} ({cmd}) exited while starting ({status}); check its command line in your acp.nvim setup() and its output below",
                            self.name
                        ),
                        e @ acp_client::Error::Timeout { .. } => format!(
                            "The agent {} ({cmd}) did not start: {e}; if it is only slow to start, raise `init_timeout` of agent {} in your acp.nvim setup()",
                            self.name, self.name
                        ),
                        e => format!("The agent {} ({cmd}) did not start: {e}", self.name),
                    }
                })
            })
            .await
            .clone()
    }
}

struct Entry {
    agent: Arc<Agent>,
    chats: HashSet<ChatId>,
}

/// What every agent host shares.
#[derive(Clone)]
pub struct Shared {
    /// Where events for Lua go.
    pub events: EventQueue,
    /// Calls into Lua.
    pub editor: Arc<dyn Editor>,
    /// Pending permission prompts of every agent.
    pub prompts: Arc<Prompts>,
    /// The review task's queue: the hosts report merged buffers to it.
    pub decisions: crate::review_queue::Decisions,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").finish_non_exhaustive()
    }
}

/// Every agent process of the backend.
pub struct Agents {
    shared: Shared,
    entries: Mutex<HashMap<AgentKey, Entry>>,
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents")
            .field("running", &self.entries.lock().len())
            .finish_non_exhaustive()
    }
}

/// How long each shutdown step (stdin closed, SIGTERM) waits for an agent.
/// Short: the user is waiting for Neovim to quit.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(500);

impl Agents {
    /// No agents yet.
    pub fn new(shared: Shared) -> Arc<Self> {
        Arc::new(Self {
            shared,
            entries: Mutex::new(HashMap::new()),
        })
    }

    /// The agent for `spec`, spawned when none runs for its key, with
    /// `chat` counted as one of its users. The permission policy belongs to
    /// the agent's connection, shared by all its chats: `auto_allow` and
    /// `remember`, when given, replace the agent's auto-allowed tool kinds
    /// and whether it remembers "always" answers, so the last open wins.
    /// A freshly spawned agent loads and saves its "always" answers in
    /// `permission_dir` (one file per project root), so a restarted agent
    /// answers as the one before; a file that cannot be used is reported to
    /// `chat` and the answers then last as long as the agent.
    pub fn acquire(
        self: &Arc<Self>,
        spec: &AgentSpec,
        session_cwd: &Path,
        chat: &ChatId,
        auto_allow: Option<&[String]>,
        remember: Option<bool>,
        permission_dir: Option<&Path>,
    ) -> acp_client::Result<Arc<Agent>> {
        let key = AgentKey::new(spec, session_cwd);
        let mut entries = self.entries.lock();
        let reusable = entries.get(&key).is_some_and(|e| !e.agent.conn.is_closed());
        if !reusable {
            let agent = self.spawn(spec, key.clone())?;
            if let Some(dir) = permission_dir {
                let persisted = agent
                    .conn
                    .with_permissions(|p| p.persist_in(dir, &agent.key.cwd));
                if let Err(e) = persisted {
                    tracing::warn!(dir = %dir.display(), "permission memory not persisted: {e}");
                    self.shared.events.push(Event::Warning {
                        chat_id: Some(chat.clone()),
                        message: format!(
                            "\"always\" answers will not be kept after a restart: {e}"
                        ),
                    });
                }
            }
            entries.insert(
                key.clone(),
                Entry {
                    agent,
                    chats: HashSet::new(),
                },
            );
        }
        let entry = entries
            .get_mut(&key)
            .ok_or_else(|| acp_client::Error::Host("agent table lost an entry".into()))?;
        entry.chats.insert(chat.clone());
        let agent = entry.agent.clone();
        drop(entries);
        if let Some(kinds) = auto_allow {
            agent
                .conn
                .with_permissions(|p| p.auto_allow_kinds(kinds.iter().cloned()));
        }
        if let Some(remember) = remember {
            agent.conn.with_permissions(|p| p.set_remember(remember));
        }
        Ok(agent)
    }

    fn spawn(self: &Arc<Self>, spec: &AgentSpec, key: AgentKey) -> acp_client::Result<Arc<Agent>> {
        let host = Arc::new(NvimHost::new(
            &spec.name,
            self.shared.events.clone(),
            self.shared.editor.clone(),
            self.shared.prompts.clone(),
            self.shared.decisions.clone(),
        ));
        let mut options = ConnectionOptions {
            client_name: "acp.nvim".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            shutdown_grace: SHUTDOWN_GRACE,
            // The plugin runs terminal auth methods in a Neovim terminal.
            terminal_auth: true,
            ..ConnectionOptions::default()
        };
        options.missing_file_read_empty = spec.missing_file_read_empty;
        options.ask_before_terminal = spec.ask_terminal;
        options.editor_tools = editor_tools(spec);
        options.protocol_version = spec.protocol_version;
        if let Some(timeout) = spec.init_timeout {
            options.initialize_timeout = Some(timeout);
        }
        let conn = Connection::spawn(&key.command(), host.clone(), options)?;
        tracing::info!(agent = %spec.name, cmd = ?key.cmd, cwd = %key.cwd.display(), pid = ?conn.pid(), "agent started");
        let agent = Arc::new(Agent {
            name: spec.name.clone(),
            key,
            conn,
            host,
            init: OnceCell::new(),
            system_prompt_warned: std::sync::atomic::AtomicBool::new(false),
        });
        tokio::spawn(watch(self.clone(), agent.clone()));
        Ok(agent)
    }

    /// Removes `chat` from the agent's users. True when it was the last
    /// one: the agent is then forgotten and the caller shuts it down.
    pub fn release(&self, agent: &Arc<Agent>, chat: &ChatId) -> bool {
        let mut entries = self.entries.lock();
        let Some(entry) = entries.get_mut(&agent.key) else {
            return true;
        };
        if !Arc::ptr_eq(&entry.agent, agent) {
            // A newer process took this key (the old one exited).
            return true;
        }
        entry.chats.remove(chat);
        if entry.chats.is_empty() {
            entries.remove(&agent.key);
            true
        } else {
            false
        }
    }

    /// Forgets an agent that exited, so the next chat spawns a new one.
    fn forget(&self, agent: &Arc<Agent>) {
        let mut entries = self.entries.lock();
        if entries
            .get(&agent.key)
            .is_some_and(|e| Arc::ptr_eq(&e.agent, agent))
        {
            entries.remove(&agent.key);
        }
    }

    /// The agent and session of an open chat, for edit review.
    pub fn find_chat(
        &self,
        chat: &ChatId,
    ) -> Option<(Arc<Agent>, acp_client::session::update::SessionId)> {
        let agent = self
            .entries
            .lock()
            .values()
            .find(|e| e.chats.contains(chat))
            .map(|e| e.agent.clone())?;
        let session = agent.host.session_of(chat)?;
        Some((agent, session))
    }

    /// Every running agent.
    pub fn all(&self) -> Vec<Arc<Agent>> {
        self.entries
            .lock()
            .values()
            .map(|e| e.agent.clone())
            .collect()
    }

    /// How many agent processes are running.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// True when no agent runs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shuts every agent down (process groups killed) and forgets them.
    pub async fn shutdown_all(&self) {
        let agents: Vec<Arc<Agent>> = self.entries.lock().drain().map(|(_, e)| e.agent).collect();
        let stops = agents.into_iter().map(|a| async move {
            let status = a.conn.shutdown().await;
            tracing::info!(agent = %a.name, ?status, "agent shut down");
        });
        futures_join_all(stops).await;
    }
}

/// Runs futures concurrently and waits for all of them.
async fn futures_join_all<F: std::future::Future<Output = ()> + Send + 'static>(
    futures: impl Iterator<Item = F>,
) {
    let mut set = tokio::task::JoinSet::new();
    for f in futures {
        set.spawn(f);
    }
    while set.join_next().await.is_some() {}
}

/// Waits for the agent's connection to close. An exit is reported by the
/// client itself (`AgentExited`, turned into `agent_exited` per chat); a
/// connection that failed for another reason (a line over the size limit,
/// a broken pipe) is reported here, and the process is stopped.
async fn watch(agents: Arc<Agents>, agent: Arc<Agent>) {
    let reason = agent.conn.closed().await;
    agents.forget(&agent);
    match reason {
        acp_client::Error::AgentExited { .. } | acp_client::Error::Closed => {
            tracing::info!(agent = %agent.name, "agent connection closed: {reason}");
        }
        other => {
            tracing::warn!(agent = %agent.name, "agent connection failed: {other}");
            let tail = agent.conn.stderr_tail().unwrap_or_default();
            for chat in agent.host.chats() {
                agents.shared.events.push(Event::AgentExited {
                    chat_id: chat,
                    status: other.to_string(),
                    stderr_tail: tail.clone(),
                });
            }
            agent.conn.shutdown().await;
        }
    }
}

/// The editor's MCP server for the agent of `spec`: on unless the agent's
/// config says `editor_tools = false`. Agents without MCP over HTTP run
/// this very binary as its stdio bridge (`acp-nvim --mcp-bridge`).
fn editor_tools(spec: &AgentSpec) -> Option<EditorToolsOptions> {
    if !spec.editor_tools {
        return None;
    }
    let bridge = match std::env::current_exe() {
        Ok(program) => Some(BridgeCommand {
            program,
            args: vec!["--mcp-bridge".into()],
        }),
        Err(e) => {
            tracing::warn!("no path of acp-nvim for the MCP bridge ({e}); only agents with MCP over HTTP get the editor's tools");
            None
        }
    };
    let mut options = EditorToolsOptions {
        bridge,
        ..EditorToolsOptions::default()
    };
    if let Some(prompt) = &spec.editor_tools_prompt {
        options.prompt = prompt.clone();
    }
    Some(options)
}
