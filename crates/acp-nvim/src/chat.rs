//! One chat: a task that opens its session, runs its turns one after the
//! other, and closes it.
//!
//! Commands of a chat are handled in the order the plugin sent them. A
//! prompt's request is queued to the agent before the next command is looked
//! at, so a `cancel` sent right after a prompt always reaches the agent after
//! that prompt.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use acp_client::schema::ContentBlock;
use acp_client::session::update::SessionId;
use acp_client::{ConfigValue, Connection, SessionStarted, StopReason};
use tokio::sync::mpsc;

use crate::agents::{Agent, Agents};
use crate::batcher::EventQueue;
use crate::command::{ChatId, OpenChat, OptionValue};
use crate::protocol::{Event, LoginMethod};
use crate::transcript::{self, Opening, Transcripts};

/// How long closing a session may take before the chat stops waiting.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(5);

/// What a chat task can be asked to do.
#[derive(Debug)]
pub enum ChatCommand {
    /// Run a turn with these blocks (queued while a turn runs).
    Prompt(Vec<ContentBlock>),
    /// Cancel the running turn and drop queued prompts.
    Cancel,
    /// Cancel the work of one subagent of the chat's session.
    CancelSubagent(String),
    /// Switch the session to this mode id.
    SetMode(String),
    /// Set a session config option.
    SetConfigOption {
        /// The option id.
        config_id: String,
        /// Its new value.
        value: OptionValue,
    },
    /// Close the session and end the task.
    Close,
    /// Log out of the agent (`logout`).
    Logout,
    /// List the turns (no `turn`), preview or rewind to before a turn.
    Rewind {
        /// The turn.
        turn: Option<u32>,
        /// Only show what would change.
        preview: bool,
    },
}

/// The backend's handle on a chat task.
#[derive(Debug)]
pub struct ChatHandle {
    tx: mpsc::UnboundedSender<ChatCommand>,
    task: tokio::task::JoinHandle<()>,
}

impl ChatHandle {
    /// Sends a command; false when the chat task has ended (its session
    /// failed to open, or it was closed).
    pub fn send(&self, cmd: ChatCommand) -> bool {
        self.tx.send(cmd).is_ok()
    }

    /// Whether the chat task has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }
}

/// Starts the task of a chat; the outcome of the open arrives as an event.
/// With `transcripts`, a chat whose open names a `transcript_dir` records
/// its session there.
pub fn start(
    agents: Arc<Agents>,
    events: EventQueue,
    open: OpenChat,
    transcripts: Option<Arc<Transcripts>>,
) -> ChatHandle {
    start_after(agents, events, open, transcripts, Vec::new())
}

/// Like [`start`], after chat tasks that close a session this open may
/// reopen (the chat's own previous task, opened again; another chat closed
/// on the session this one loads or resumes): each is closed and awaited
/// first, so the old session's `session/close` reaches the agent before
/// the new open.
pub fn start_after(
    agents: Arc<Agents>,
    events: EventQueue,
    open: OpenChat,
    transcripts: Option<Arc<Transcripts>>,
    previous: Vec<ChatHandle>,
) -> ChatHandle {
    let (tx, rx) = mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        for old in previous {
            old.send(ChatCommand::Close);
            let _ = old.task.await;
        }
        run(agents, events, open, rx, transcripts).await
    });
    ChatHandle { tx, task }
}

type Turn = Pin<Box<dyn Future<Output = acp_client::Result<StopReason>> + Send>>;

async fn run(
    agents: Arc<Agents>,
    events: EventQueue,
    open: OpenChat,
    mut rx: mpsc::UnboundedReceiver<ChatCommand>,
    transcripts: Option<Arc<Transcripts>>,
) {
    let chat = open.chat_id.clone();
    let transcripts = transcripts.filter(|_| open.transcript_dir.is_some());
    let agent = match agents.acquire(
        &open.agent,
        &open.cwd,
        &chat,
        open.permission.auto_allow.as_deref(),
        open.permission.remember,
        open.permission_dir.as_deref(),
    ) {
        Ok(agent) => agent,
        Err(e) => {
            events.push(Event::OpenFailed {
                chat_id: chat,
                message: format!(
                    "{e}. Check `cmd` of agent `{}` in your acp.nvim setup() and that the program is installed and on $PATH.",
                    open.agent.name
                ),
                stderr_tail: None,
            });
            return;
        }
    };

    // Commands that arrive while the session opens wait here, except
    // `close`, which abandons the open.
    let mut waiting = VecDeque::new();
    let opened = {
        let opening = open_session(&agent, &open, &events, transcripts.as_deref());
        tokio::pin!(opening);
        loop {
            tokio::select! {
                biased;
                result = &mut opening => break Some(result),
                cmd = rx.recv() => match cmd {
                    None | Some(ChatCommand::Close) => break None,
                    Some(cmd) => waiting.push_back(cmd),
                },
            }
        }
    };
    let (session, turn_base) = match opened {
        Some(Some(opened)) => opened,
        Some(None) => {
            leave(&agents, &agent, &chat).await;
            return;
        }
        None => {
            tracing::info!(%chat, "chat closed while its session was opening");
            if let Some(id) = open
                .load_session_id
                .as_deref()
                .or(open.resume_session_id.as_deref())
            {
                agent.host.unregister(&SessionId::new(id), &chat);
            }
            leave(&agents, &agent, &chat).await;
            return;
        }
    };

    let checkpoint_file = crate::rewind::checkpoint_file(&agent, &open, &session);
    let mut chat_loop = ChatLoop {
        turn_base,
        checkpoint_file,
        open: open.clone(),
        transcripts: transcripts.clone(),
        chat: chat.clone(),
        agent: agent.clone(),
        session: session.clone(),
        events: events.clone(),
        turn: None,
        queued: VecDeque::new(),
        cancel_sent: false,
    };
    chat_loop.serve(waiting, &mut rx).await;
    // A rewind may have moved the chat to a forked session.
    let session = chat_loop.session.clone();
    drop(chat_loop);

    close_session(&agent, transcripts.as_deref(), &chat, &session).await;
    leave(&agents, &agent, &chat).await;
}

/// Closes a session the chat leaves (closed, or rewound into a fork): the
/// agent's `session/close` (waited for [`CLOSE_TIMEOUT`] at most), its
/// transcript, its routing.
async fn close_session(
    agent: &Agent,
    transcripts: Option<&Transcripts>,
    chat: &ChatId,
    session: &SessionId,
) {
    match tokio::time::timeout(CLOSE_TIMEOUT, agent.conn.close_session(session)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::debug!(%chat, %session, "session/close failed: {e}"),
        Err(_) => tracing::warn!(%chat, %session, "the agent did not answer session/close in time"),
    }
    if let Some(t) = transcripts {
        t.close(chat, &session.to_string());
    }
    agent.host.unregister(session, chat);
}

/// Routes a session's updates to the chat, after its `SessionStarted`
/// (carrying the transcript the session is saved to, for chats with one).
fn announce(
    agent: &Agent,
    transcripts: Option<&Transcripts>,
    open: &OpenChat,
    chat: &ChatId,
    session: &SessionId,
    mut event: Event,
    opening: Opening,
) {
    if let (Some(t), Some(dir)) = (transcripts, &open.transcript_dir) {
        let path = transcript::path_for(dir, &agent.name, &session.to_string());
        t.expect(
            chat,
            &session.to_string(),
            path.clone(),
            &agent.name,
            &open.cwd,
            opening,
        );
        if let Event::SessionStarted {
            transcript_path, ..
        } = &mut event
        {
            *transcript_path = Some(path.to_string_lossy().into_owned());
        }
    }
    agent
        .host
        .register(session.clone(), chat.clone(), Some(event));
}

/// The chat no longer uses the agent; stops the agent if it was the last.
async fn leave(agents: &Agents, agent: &Arc<Agent>, chat: &ChatId) {
    if agents.release(agent, chat) {
        tracing::info!(agent = %agent.name, "last chat of the agent closed; stopping it");
        agent.conn.shutdown().await;
    }
}

/// Initializes the agent (once per process) and opens the chat's session,
/// with the chat's turns before its first prompt. Failures are reported as
/// events; `None` then.
async fn open_session(
    agent: &Agent,
    open: &OpenChat,
    events: &EventQueue,
    transcripts: Option<&Transcripts>,
) -> Option<(SessionId, u32)> {
    let chat = &open.chat_id;
    let _opening = agent.host.opening(chat);
    let info = match agent.ready().await {
        Ok(info) => info,
        Err(message) => {
            events.push(Event::OpenFailed {
                chat_id: chat.clone(),
                message,
                stderr_tail: agent.conn.stderr_tail(),
            });
            return None;
        }
    };
    if let Some(method_id) = &open.auth_method_id {
        if let Err(e) = agent.conn.authenticate(method_id).await {
            events.push(Event::OpenFailed {
                chat_id: chat.clone(),
                message: format!(
                    "The agent {} did not log you in with `{method_id}`: {e}. Try another method, or log in with the agent's own command in a terminal.",
                    agent.name
                ),
                stderr_tail: agent.conn.stderr_tail(),
            });
            return None;
        }
        tracing::info!(%chat, agent = %agent.name, method_id, "authenticated");
    }
    let (params, dropped) = crate::session_settings::session_params(open, &info, &agent.name);
    if let Some(message) = dropped {
        events.push(Event::Warning {
            chat_id: Some(chat.clone()),
            message,
        });
    }
    let conn = &agent.conn;
    let result = if let Some(id) = &open.load_session_id {
        let id = SessionId::new(id.as_str());
        // The agent replays the history before it answers: route it now.
        agent.host.register(id.clone(), chat.clone(), None);
        let result = conn.load_session(&id, params).await;
        if result.is_err() {
            agent.host.unregister(&id, chat);
        }
        result
    } else if let Some(id) = &open.resume_session_id {
        conn.resume_session(&SessionId::new(id.as_str()), params)
            .await
    } else {
        conn.new_session(params).await
    };
    match result {
        Ok(started) => {
            let session = started.session_id.clone();
            if let Some(why) = &started.system_prompt_skipped {
                use std::sync::atomic::Ordering;
                if !agent.system_prompt_warned.swap(true, Ordering::Relaxed) {
                    events.push(Event::Warning {
                        chat_id: Some(chat.clone()),
                        message: format!("The agent {}: {why}.", agent.name),
                    });
                }
            }
            // Before the plugin hears of the session: its turn numbers.
            let turn_base = crate::rewind::continue_turns(agent, open, &session, events);
            let event = session_started(chat, &agent.name, &info, started, turn_base);
            let opening = if open.load_session_id.is_some() {
                Opening::Load
            } else if open.resume_session_id.is_some() {
                Opening::Resume
            } else {
                Opening::New
            };
            announce(agent, transcripts, open, chat, &session, event, opening);
            tracing::info!(%chat, %session, agent = %agent.name, "session open");
            Some((session, turn_base))
        }
        Err(e) if e.is_auth_required() => {
            events.push(Event::AuthRequired {
                chat_id: chat.clone(),
                auth_methods: LoginMethod::all(&info.auth_methods),
            });
            None
        }
        Err(e) => {
            let what = if open.load_session_id.is_some() {
                "load the session"
            } else if open.resume_session_id.is_some() {
                "resume the session"
            } else {
                "open a session"
            };
            let reason = match e {
                // The stderr tail travels in its own field.
                acp_client::Error::AgentExited { status, .. } => {
                    format!("the agent exited ({status})")
                }
                e => e.to_string(),
            };
            events.push(Event::OpenFailed {
                chat_id: chat.clone(),
                message: format!("The agent {} could not {what}: {reason}", agent.name),
                stderr_tail: conn.stderr_tail(),
            });
            None
        }
    }
}

fn session_started(
    chat: &ChatId,
    agent_name: &str,
    info: &acp_client::AgentInfo,
    started: SessionStarted,
    turn_base: u32,
) -> Event {
    Event::SessionStarted {
        turn_base,
        chat_id: chat.clone(),
        session_id: started.session_id.to_string(),
        agent_name: agent_name.to_owned(),
        modes: started.modes,
        config_options: started.config_options,
        capabilities: info.capabilities.clone(),
        auth_methods: LoginMethod::all(&info.auth_methods),
        transcript_path: None,
    }
}

/// The open session of a chat.
struct ChatLoop {
    chat: ChatId,
    agent: Arc<Agent>,
    session: SessionId,
    events: EventQueue,
    /// The running prompt turn.
    turn: Option<Turn>,
    /// Prompts sent while a turn runs; ACP allows one turn at a time.
    queued: VecDeque<Vec<ContentBlock>>,
    /// `session/cancel` was sent for the running turn: a second cancel
    /// gives up waiting for the agent's answer.
    cancel_sent: bool,
    /// The chat's turns before this session's first (its checkpoints were
    /// adopted): this session's k-th prompt is turn `turn_base + k`.
    turn_base: u32,
    /// Where the checkpoints are saved after each turn (chats with a
    /// transcript).
    checkpoint_file: Option<std::path::PathBuf>,
    /// How the session was opened: a fork after a rewind gets the same.
    open: OpenChat,
    transcripts: Option<Arc<Transcripts>>,
}

impl ChatLoop {
    /// Handles commands until `close` (or the backend drops the chat).
    async fn serve(
        &mut self,
        mut waiting: VecDeque<ChatCommand>,
        rx: &mut mpsc::UnboundedReceiver<ChatCommand>,
    ) {
        loop {
            self.start_next_turn().await;
            let cmd = match waiting.pop_front() {
                Some(cmd) => Some(cmd),
                None => {
                    tokio::select! {
                        biased;
                        result = turn_end(&mut self.turn) => {
                            self.turn = None;
                            self.cancel_sent = false;
                            self.report(result);
                            if let Some(file) = &self.checkpoint_file {
                                crate::rewind::save(&self.agent, &self.session, file).await;
                            }
                            continue;
                        }
                        cmd = rx.recv() => cmd,
                    }
                }
            };
            match cmd {
                None | Some(ChatCommand::Close) => return,
                Some(ChatCommand::Prompt(blocks)) => self.queued.push_back(blocks),
                Some(ChatCommand::Cancel) => self.cancel(),
                Some(ChatCommand::CancelSubagent(child)) => self.cancel_subagent(child),
                Some(ChatCommand::SetMode(mode_id)) => self.set_mode(mode_id),
                Some(ChatCommand::SetConfigOption { config_id, value }) => {
                    self.set_config_option(config_id, value)
                }
                Some(ChatCommand::Logout) => self.logout(),
                Some(ChatCommand::Rewind { turn, preview }) => {
                    if turn.is_some() && !preview {
                        // A rewind in the middle of a turn cancels it first:
                        // the agent must not write while files go back.
                        self.settle_turn().await;
                    }
                    let chat = crate::rewind::Chat {
                        id: &self.chat,
                        open: &self.open,
                        agent: &self.agent,
                        session: &self.session,
                        events: &self.events,
                        turn_base: self.turn_base,
                    };
                    if let (Some(forked), Some(turn)) =
                        (crate::rewind::run(chat, turn, preview).await, turn)
                    {
                        self.go_on_in_fork(forked, turn).await;
                    }
                }
            }
        }
    }

    /// A rewind to before `turn` forked the session there: the chat goes on
    /// in the fork, with the checkpoints, and the old session is closed.
    async fn go_on_in_fork(&mut self, forked: SessionStarted, turn: u32) {
        let conn = &self.agent.conn;
        let checkpoints = conn.review(&self.session).checkpoints();
        let old = std::mem::replace(&mut self.session, forked.session_id.clone());
        close_session(&self.agent, self.transcripts.as_deref(), &self.chat, &old).await;
        let session = self.session.clone();
        if let Err(e) = conn.review(&session).adopt_checkpoints(checkpoints) {
            tracing::warn!(chat = %self.chat, "checkpoints not adopted by the fork: {e}");
        }
        self.turn_base = turn.saturating_sub(1);
        self.checkpoint_file = crate::rewind::checkpoint_file(&self.agent, &self.open, &session);
        let info = match self.agent.ready().await {
            Ok(info) => info,
            Err(message) => {
                self.events.push(Event::Warning {
                    chat_id: Some(self.chat.clone()),
                    message,
                });
                return;
            }
        };
        let event = session_started(&self.chat, &self.agent.name, &info, forked, self.turn_base);
        tracing::info!(chat = %self.chat, %session, "the chat goes on in the session forked before turn {turn}");
        announce(
            &self.agent,
            self.transcripts.as_deref(),
            &self.open,
            &self.chat,
            &session,
            event,
            Opening::New,
        );
    }

    /// Starts the next queued prompt when no turn runs, and polls it once
    /// so that its request is queued to the agent before any later command
    /// (a cancel) is handled.
    async fn start_next_turn(&mut self) {
        if self.turn.is_some() {
            return;
        }
        let Some(blocks) = self.queued.pop_front() else {
            return;
        };
        self.cancel_sent = false;
        let conn: Connection = self.agent.conn.clone();
        let session = self.session.clone();
        self.agent.host.saw_prompt(&session, &blocks);
        let mut turn: Turn = Box::pin(async move { conn.prompt(&session, blocks).await });
        let first = std::future::poll_fn(|cx| {
            Poll::Ready(match turn.as_mut().poll(cx) {
                Poll::Ready(result) => Some(result),
                Poll::Pending => None,
            })
        })
        .await;
        match first {
            Some(result) => self.report(result),
            None => self.turn = Some(turn),
        }
    }

    fn report(&self, result: acp_client::Result<StopReason>) {
        match result {
            Ok(stop) => self.events.push(Event::TurnEnded {
                chat_id: self.chat.clone(),
                stop_reason: stop.as_str().to_owned(),
            }),
            // The chat gets `agent_exited` with the stderr tail instead.
            Err(e) if self.agent.conn.is_closed() => {
                tracing::info!(chat = %self.chat, "turn ended by the agent's exit: {e}");
            }
            Err(e) => self.events.push(Event::PromptFailed {
                chat_id: self.chat.clone(),
                message: format!("The prompt failed: {e}"),
            }),
        }
    }

    fn cancel(&mut self) {
        if self.turn.is_some() && self.cancel_sent {
            self.give_up_turn();
            return;
        }
        // Prompts that never started end as cancelled turns, so the plugin
        // sees one outcome per prompt it sent.
        for _ in self.queued.drain(..) {
            self.events.push(Event::TurnEnded {
                chat_id: self.chat.clone(),
                stop_reason: StopReason::Cancelled.as_str().to_owned(),
            });
        }
        if let Err(e) = self.agent.conn.cancel(&self.session) {
            self.events.push(Event::Warning {
                chat_id: Some(self.chat.clone()),
                message: format!("could not cancel the turn: {e}"),
            });
        }
        self.cancel_sent = self.turn.is_some();
    }

    /// `session/cancel` for one subagent of this chat's session, when the
    /// agent allows it (acp-client checks its `capabilities.cancel`).
    fn cancel_subagent(&self, child: String) {
        let known = self
            .agent
            .conn
            .with_session(&self.session, |s| s.subagent(&child).is_some())
            .unwrap_or(false);
        let result = if known {
            self.agent.conn.cancel(&SessionId::new(child.as_str()))
        } else {
            Err(acp_client::Error::NotFound(format!(
                "`{child}` is not a subagent of this chat's session"
            )))
        };
        if let Err(e) = result {
            self.events.push(Event::Warning {
                chat_id: Some(self.chat.clone()),
                message: format!("could not cancel the subagent: {e}"),
            });
        }
    }

    /// Cancels the running turn and waits for its end (at most
    /// [`CLOSE_TIMEOUT`], then gives it up); queued prompts are dropped.
    async fn settle_turn(&mut self) {
        if self.turn.is_none() && self.queued.is_empty() {
            return;
        }
        self.cancel();
        if self.turn.is_none() {
            return;
        }
        match tokio::time::timeout(CLOSE_TIMEOUT, turn_end(&mut self.turn)).await {
            Ok(result) => {
                self.turn = None;
                self.cancel_sent = false;
                self.report(result);
            }
            Err(_) => self.give_up_turn(),
        }
    }

    /// The agent did not answer `session/cancel` and the user cancelled
    /// again: stop waiting. Dropping the prompt's future withdraws the
    /// request with `$/cancel_request`; the turn ends `cancelled` here, so
    /// the chat takes prompts again. The agent's late answer is an unknown
    /// id to the client and is dropped; late updates still show.
    fn give_up_turn(&mut self) {
        tracing::warn!(chat = %self.chat, "the agent ignored session/cancel; abandoning its turn");
        self.turn = None;
        self.cancel_sent = false;
        self.events.push(Event::TurnEnded {
            chat_id: self.chat.clone(),
            stop_reason: StopReason::Cancelled.as_str().to_owned(),
        });
    }

    fn set_mode(&self, mode_id: String) {
        let conn = self.agent.conn.clone();
        let session = self.session.clone();
        let events = self.events.clone();
        let chat = self.chat.clone();
        // The agent's answer may take a while; the chat keeps serving
        // meanwhile. The new mode arrives as a session change.
        tokio::spawn(async move {
            if let Err(e) = conn.set_mode(&session, &mode_id).await {
                events.push(Event::Warning {
                    chat_id: Some(chat),
                    message: format!("could not switch to mode `{mode_id}`: {e}"),
                });
            }
        });
    }

    fn logout(&self) {
        let conn = self.agent.conn.clone();
        let events = self.events.clone();
        let chat = self.chat.clone();
        let name = self.agent.name.clone();
        tokio::spawn(async move {
            match conn.logout().await {
                Ok(()) => events.push(Event::LoggedOut { chat_id: chat }),
                Err(e) => events.push(Event::Warning {
                    chat_id: Some(chat),
                    message: format!("could not log out of {name}: {e}"),
                }),
            }
        });
    }

    fn set_config_option(&self, config_id: String, value: OptionValue) {
        let conn = self.agent.conn.clone();
        let session = self.session.clone();
        let events = self.events.clone();
        let chat = self.chat.clone();
        let value = match value {
            OptionValue::Id(id) => ConfigValue::Id(id),
            OptionValue::Bool(b) => ConfigValue::Bool(b),
        };
        tokio::spawn(async move {
            if let Err(e) = conn.set_config_option(&session, &config_id, value).await {
                events.push(Event::Warning {
                    chat_id: Some(chat),
                    message: format!("could not set `{config_id}`: {e}"),
                });
            }
        });
    }
}

/// Resolves when the running turn ends; never when none runs.
async fn turn_end(turn: &mut Option<Turn>) -> acp_client::Result<StopReason> {
    match turn {
        Some(turn) => turn.await,
        None => std::future::pending().await,
    }
}
