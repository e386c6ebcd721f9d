//! The backend's command loop: routes the plugin's commands to chat tasks,
//! answers permission prompts, and shuts everything down.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use crate::agents::{Agents, Shared};
use crate::batcher::EventQueue;
use crate::chat::{self, ChatCommand, ChatHandle};
use crate::command::{ChatId, Command, ReviewCommand};
use crate::listing::{self, ListRequest};
use crate::prompts::Prompts;
use crate::protocol::Event;
use crate::review_queue::Decisions;
use crate::transcript::Transcripts;
use rmpv::Value;

/// What the msgpack handler forwards to the command loop.
#[derive(Debug)]
pub enum Routed {
    /// A decoded command (never `Hello`: the handler answers that itself).
    Command(Command),
    /// Stop every agent; the sender (if any) is told when done.
    Shutdown(Option<oneshot::Sender<()>>),
    /// The diagnostic query `acp.file_sync`, answered on the sender after
    /// the review decisions sent before it.
    Query(ReviewCommand, oneshot::Sender<Value>),
}

/// The state behind the command loop.
#[derive(Debug)]
pub struct Backend {
    agents: Arc<Agents>,
    events: EventQueue,
    prompts: Arc<Prompts>,
    chats: HashMap<ChatId, ChatHandle>,
    /// Chats closed while their session's close may still be in flight,
    /// by (agent, session): an open that loads or resumes that session
    /// waits for them ([`chat::start_after`]).
    closing: HashMap<(String, String), Vec<ChatHandle>>,
    transcripts: Option<Arc<Transcripts>>,
    list_linger: Duration,
    /// The review decision task's queue (shared with the agent hosts),
    /// its task started on first use.
    decisions: Decisions,
    installs: crate::registry::Installs,
}

impl Backend {
    /// A backend with no agents yet.
    pub fn new(shared: Shared) -> Self {
        let installs = crate::registry::Installs::new(shared.events.clone());
        Self {
            events: shared.events.clone(),
            prompts: shared.prompts.clone(),
            decisions: shared.decisions.clone(),
            agents: Agents::new(shared),
            chats: HashMap::new(),
            closing: HashMap::new(),
            transcripts: None,
            list_linger: listing::LINGER,
            installs,
        }
    }

    /// Records the transcripts of chats whose open names a directory (the
    /// batcher must hand its batches to the same `transcripts`, see
    /// [`crate::batcher::run`]). Without it, `transcript_dir` is ignored.
    pub fn with_transcripts(mut self, transcripts: Arc<Transcripts>) -> Self {
        self.transcripts = Some(transcripts);
        self
    }

    /// How long an agent started for `acp.list_sessions` waits for a chat
    /// before it is stopped (default [`listing::LINGER`]).
    pub fn with_list_linger(mut self, linger: Duration) -> Self {
        self.list_linger = linger;
        self
    }

    /// The agent processes, for inspection.
    pub fn agents(&self) -> &Arc<Agents> {
        &self.agents
    }

    /// Handles messages until the channel closes, then shuts down.
    pub async fn run(mut self, mut rx: mpsc::UnboundedReceiver<Routed>) {
        // Now: a merge the agents' buffer syncs report may come first.
        self.decisions();
        while let Some(msg) = rx.recv().await {
            match msg {
                Routed::Command(cmd) => self.handle(cmd),
                Routed::Shutdown(ack) => {
                    self.shutdown().await;
                    if let Some(ack) = ack {
                        let _ = ack.send(());
                    }
                }
                // Answered by the review task, after the decisions (user
                // edits included) sent before it.
                Routed::Query(query, answer) => self.decisions().query(query, answer),
            }
        }
        self.shutdown().await;
    }

    /// Handles one command without waiting for anything slow.
    pub fn handle(&mut self, cmd: Command) {
        tracing::debug!(command = cmd.name(), "command");
        match cmd {
            Command::Hello { .. } => {
                tracing::warn!("acp.hello reached the command loop; it is answered by the handler")
            }
            Command::Open(open) => {
                let mut previous: Vec<ChatHandle> =
                    self.chats.remove(&open.chat_id).into_iter().collect();
                if !previous.is_empty() {
                    tracing::info!(chat = %open.chat_id, "chat opened again; closing its old session first");
                }
                self.closing.retain(|_, tasks| {
                    tasks.retain(|t| !t.is_finished());
                    !tasks.is_empty()
                });
                // Reopening a session another chat is closing: its
                // `session/close` goes first (test_e2e_rewind closes a chat
                // and loads its session at once; the load overtook the close
                // and the agent closed the session it had just replayed).
                let reopened = open
                    .load_session_id
                    .as_ref()
                    .or(open.resume_session_id.as_ref());
                if let Some(id) = reopened {
                    let key = (open.agent.name.clone(), id.clone());
                    previous.extend(self.closing.remove(&key).unwrap_or_default());
                }
                let chat_id = open.chat_id.clone();
                let handle = chat::start_after(
                    self.agents.clone(),
                    self.events.clone(),
                    *open,
                    self.transcripts.clone(),
                    previous,
                );
                self.chats.insert(chat_id, handle);
            }
            Command::Prompt {
                chat_id,
                blocks,
                buffers,
            } => {
                // Also without buffers: the texts of the previous prompt go.
                if let Some((agent, session)) = self.agents.find_chat(&chat_id) {
                    agent.host.buffers_at_prompt(&session, buffers);
                }
                if !self.send(&chat_id, ChatCommand::Prompt(blocks)) {
                    self.events.push(Event::PromptFailed {
                        message: format!(
                            "chat {chat_id} has no open session; start a new chat with :Acp new"
                        ),
                        chat_id,
                    });
                }
            }
            Command::Cancel { chat_id, subagent } => {
                let cmd = match subagent {
                    Some(child) => ChatCommand::CancelSubagent(child),
                    None => ChatCommand::Cancel,
                };
                if !self.send(&chat_id, cmd) {
                    tracing::debug!(chat = %chat_id, "cancel for a chat without session");
                }
            }
            Command::PermissionRespond {
                request_id,
                option_id,
            } => {
                if !self.prompts.answer(request_id, option_id) {
                    // The turn was cancelled (or the agent withdrew the
                    // request) while the user was choosing.
                    tracing::debug!(%request_id, "answer to a permission prompt that is gone");
                }
            }
            Command::ElicitationRespond {
                request_id,
                response,
            } => {
                // The handler answers these itself; this path serves
                // embedders that drive the backend directly.
                if let Err(message) = self.prompts.elicitations.answer(request_id, response) {
                    self.events.push(Event::Warning {
                        chat_id: None,
                        message,
                    });
                }
            }
            Command::Close { chat_id } => match self.chats.remove(&chat_id) {
                Some(handle) => {
                    handle.send(ChatCommand::Close);
                    if let Some((agent, session)) = self.agents.find_chat(&chat_id) {
                        self.closing
                            .entry((agent.name.clone(), session.to_string()))
                            .or_default()
                            .push(handle);
                    }
                }
                None => tracing::debug!(chat = %chat_id, "close of an unknown chat"),
            },
            Command::SetMode { chat_id, mode_id } => {
                if !self.send(&chat_id, ChatCommand::SetMode(mode_id)) {
                    self.no_session_warning(chat_id);
                }
            }
            Command::SetConfigOption {
                chat_id,
                config_id,
                value,
            } => {
                if !self.send(&chat_id, ChatCommand::SetConfigOption { config_id, value }) {
                    self.no_session_warning(chat_id);
                }
            }
            Command::FileSaved { path } => {
                if let Some(path) = crate::host::resolve(&path) {
                    for agent in self.agents.all() {
                        agent.host.file_saved(&path);
                    }
                }
            }
            Command::Shutdown => {
                tracing::warn!("acp.shutdown reached the command loop as a command; ignored")
            }
            Command::CompleteFiles(_) => {
                tracing::warn!(
                    "acp.complete_files reached the command loop; it is answered by the handler"
                )
            }
            Command::ListSessions {
                request_id,
                agent,
                cwd,
                all,
                delete,
            } => listing::start(
                self.agents.clone(),
                self.events.clone(),
                ListRequest {
                    request_id,
                    agent,
                    cwd,
                    all,
                    delete,
                },
                self.list_linger,
            ),
            Command::Logout { chat_id } => {
                if !self.send(&chat_id, ChatCommand::Logout) {
                    self.no_session_warning(chat_id);
                }
            }
            Command::Rewind {
                chat_id,
                turn,
                preview,
            } => {
                if !self.send(&chat_id, ChatCommand::Rewind { turn, preview }) {
                    self.no_session_warning(chat_id);
                }
            }
            Command::Review(cmd) => self.decisions().send(cmd),
            Command::Registry(cmd) => self.installs.handle(cmd),
        }
    }

    /// The review task, started on first use.
    fn decisions(&mut self) -> &Decisions {
        crate::review::start(&self.decisions, self.agents.clone(), self.events.clone());
        &self.decisions
    }

    fn send(&self, chat_id: &ChatId, cmd: ChatCommand) -> bool {
        self.chats.get(chat_id).is_some_and(|h| h.send(cmd))
    }

    fn no_session_warning(&self, chat_id: ChatId) {
        self.events.push(Event::Warning {
            message: format!("chat {chat_id} has no open session; start a new chat with :Acp new"),
            chat_id: Some(chat_id),
        });
    }

    /// Closes every chat and stops every agent (process groups killed).
    pub async fn shutdown(&mut self) {
        let chats = self.chats.len();
        self.chats.clear();
        self.installs.cancel_all();
        self.agents.shutdown_all().await;
        if let Some(t) = &self.transcripts {
            t.flush_all();
        }
        tracing::info!(chats, "backend shut down its agents");
    }
}
