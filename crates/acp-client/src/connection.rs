//! The typed, async connection to one agent.
//!
//! A [`Connection`] owns the agent process (when it spawned it), the JSON-RPC
//! engine (`rpc::engine`) and the live sessions above it
//! (`serve::live`), and turns each ACP method into a typed call: the
//! handshake and authentication in `handshake`, opening and closing sessions
//! in `lifecycle`, prompts, modes and the rest here. Methods
//! the agent did not advertise fail with [`Error::NotSupported`] without
//! sending anything. Edit review has its own handle, [`Connection::review`].

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};

use parking_lot::Mutex;

use crate::agents::process::{AgentCommand, AgentProcess, ExitInfo};
use crate::edits::fs::Workspace;
use crate::edits::host::EditorHost;
use crate::edits::review::Review;
use crate::error::{Error, Result};
use crate::policy::permission::PermissionPolicy;
use crate::rpc::engine::{CloseReason, Engine, Limits, Tasks};
use crate::rpc::methods;
use crate::schema;
use crate::serve::editor_tools::{EditorTools, Offer};
use crate::serve::live::LiveSessions;
use crate::session::update::{Content, SessionId};
use crate::session::{SessionChange, SessionState, TurnUsage};

pub use crate::options::{env_denied, ConnectionOptions, ProtocolVersion, DENIED_ENV_DEFAULT};

mod handshake;
mod lifecycle;
mod requests;
mod types;

pub use handshake::terminal_auth_command;
pub use types::{
    AgentInfo, ConfigValue, SessionPage, SessionParams, SessionStarted, StopReason, SystemPrompt,
    SystemPromptMode, SystemPromptSupport, PROTOCOL_VERSION,
};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSessionResponse {
    #[serde(default)]
    session_id: Option<SessionId>,
    #[serde(default)]
    modes: Option<schema::SessionModeState>,
    #[serde(default)]
    config_options: Option<Vec<schema::SessionConfigOption>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePromptResponse {
    stop_reason: String,
    /// Unstable in the schema (`PromptResponse.usage`); decoded leniently.
    #[serde(default)]
    usage: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireConfigResponse {
    #[serde(default)]
    config_options: Vec<schema::SessionConfigOption>,
}

/// A turn's label for its checkpoint: the first non-empty line of the
/// prompt's first text block.
fn prompt_label(content: &[schema::ContentBlock]) -> String {
    content
        .iter()
        .find_map(|block| match block {
            schema::ContentBlock::Text(t) => t
                .text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .map(str::to_owned),
            _ => None,
        })
        .unwrap_or_default()
}

/// Ends a turn for edit review however the prompt ends (answered, failed,
/// or the caller dropped the future).
struct TurnGuard<'a> {
    sessions: &'a LiveSessions,
    session_id: &'a SessionId,
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.sessions.review().turn_ended(self.session_id);
    }
}

/// A connection to one agent. Cheap to clone; the agent is shut down (its
/// whole process group killed) when the last clone is dropped.
#[derive(Clone, Debug)]
pub struct Connection {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    // Dropped first: the last clone stops the engine's tasks and the agent.
    _tasks: Tasks,
    engine: Arc<Engine<LiveSessions>>,
    agent: Mutex<Option<AgentInfo>>,
    /// The editor's MCP server, started with the first session that is
    /// offered it (`None` inside: it could not start).
    editor_tools: OnceLock<Option<EditorTools>>,
}

impl Connection {
    /// Spawns the agent and starts talking to it. Call
    /// [`Connection::initialize`] next. Must run inside a tokio runtime.
    pub fn spawn(
        command: &AgentCommand,
        host: Arc<dyn EditorHost>,
        options: ConnectionOptions,
    ) -> Result<Self> {
        let (process, stdin, stdout) = AgentProcess::spawn(command)?;
        Ok(Self::start(
            stdout,
            stdin,
            host,
            options,
            Some(Arc::new(process)),
        ))
    }

    /// Talks ACP over existing streams (in-memory pipes in tests, a socket...).
    /// Must run inside a tokio runtime.
    pub fn from_streams<R, W>(
        reader: R,
        writer: W,
        host: Arc<dyn EditorHost>,
        options: ConnectionOptions,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::start(reader, writer, host, options, None)
    }

    fn start<R, W>(
        reader: R,
        writer: W,
        host: Arc<dyn EditorHost>,
        options: ConnectionOptions,
        process: Option<Arc<AgentProcess>>,
    ) -> Self
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let limits = Limits {
            max_line_bytes: options.max_line_bytes,
            outgoing_queue: options.outgoing_queue,
            max_outgoing_bytes: options.max_outgoing_bytes,
        };
        let sessions = Arc::new(LiveSessions::new(host, options, process));
        let (engine, tasks) = Engine::start(reader, writer, sessions, limits);
        Self {
            inner: Arc::new(Inner {
                _tasks: tasks,
                engine,
                agent: Mutex::new(None),
                editor_tools: OnceLock::new(),
            }),
        }
    }

    fn engine(&self) -> &Engine<LiveSessions> {
        &self.inner.engine
    }

    fn sessions(&self) -> &LiveSessions {
        self.inner.engine.handler()
    }

    fn timeout(&self) -> Option<Duration> {
        self.sessions().options().request_timeout
    }

    fn info_or_err(&self, method: &str) -> Result<AgentInfo> {
        self.agent_info().ok_or_else(|| Error::NotInitialized {
            method: method.to_owned(),
        })
    }

    fn require(
        &self,
        method: &'static str,
        supported: impl FnOnce(&AgentInfo) -> bool,
    ) -> Result<()> {
        let info = self.info_or_err(method)?;
        if supported(&info) {
            Ok(())
        } else {
            Err(Error::NotSupported {
                method: method.to_owned(),
            })
        }
    }

    /// A request whose answer carries `configOptions`: on v2 they are
    /// brought to their v1 shape before the answer is decoded.
    async fn session_request<T: serde::de::DeserializeOwned>(
        &self,
        method: &'static str,
        params: Value,
    ) -> Result<T> {
        let mut answer: Value = self
            .engine()
            .request(method, params, self.timeout())
            .await?;
        if self.is_v2() {
            crate::session::update::v2::config_options_to_v1(&mut answer);
        }
        T::deserialize(&answer).map_err(|e| Error::Decode {
            what: format!("the agent's answer to `{method}`"),
            reason: e.to_string(),
        })
    }

    fn is_v2(&self) -> bool {
        self.sessions().is_v2()
    }

    /// `session/set_mode`. The model follows the agent's
    /// `current_mode_update`, or this call's success when none comes.
    ///
    /// On v2 there is no `session/set_mode`: the mode is the config option
    /// of category `mode` (claude-agent-acp 0.101.0), set with
    /// `session/set_config_option`.
    pub async fn set_mode(&self, session_id: &SessionId, mode_id: &str) -> Result<()> {
        self.require_session(session_id)?;
        if self.is_v2() {
            let option = self
                .with_session(session_id, |s| {
                    s.config_options().iter().find_map(|o| {
                        let o = serde_json::to_value(o).ok()?;
                        (o.get("category").and_then(Value::as_str) == Some("mode"))
                            .then(|| o.get("id").and_then(Value::as_str).map(str::to_owned))
                            .flatten()
                    })
                })
                .flatten()
                .ok_or_else(|| Error::NotSupported {
                    method: format!(
                        "{} (on ACP v2 the mode is a config option, and this session has none of category `mode`)",
                        methods::SESSION_SET_MODE
                    ),
                })?;
            self.set_config_option(session_id, &option, ConfigValue::Id(mode_id.to_owned()))
                .await?;
            self.sessions()
                .change_state(session_id, |s| s.set_current_mode(mode_id.to_owned()));
            return Ok(());
        }
        let _: Value = self
            .engine()
            .request(
                methods::SESSION_SET_MODE,
                to_params(&schema::SetSessionModeRequest::new(
                    session_id.clone(),
                    mode_id.to_owned(),
                ))?,
                self.timeout(),
            )
            .await?;
        self.sessions()
            .change_state(session_id, |s| s.set_current_mode(mode_id.to_owned()));
        Ok(())
    }

    /// `session/set_config_option`; returns (and stores) the agent's complete
    /// option list.
    pub async fn set_config_option(
        &self,
        session_id: &SessionId,
        config_id: &str,
        value: ConfigValue,
    ) -> Result<Vec<schema::SessionConfigOption>> {
        self.require_session(session_id)?;
        let params = requests::set_config_option(session_id, config_id, value, self.is_v2())?;
        let response: WireConfigResponse = self
            .session_request(methods::SESSION_SET_CONFIG_OPTION, params)
            .await?;
        self.sessions().change_state(session_id, |s| {
            s.set_config_options(response.config_options.clone())
        });
        Ok(response.config_options)
    }

    fn check_prompt_content(&self, content: &[schema::ContentBlock]) -> Result<()> {
        let info = self.info_or_err(methods::SESSION_PROMPT)?;
        let caps = &info.capabilities.prompt_capabilities;
        for block in content {
            let allowed = match block {
                schema::ContentBlock::Text(_) | schema::ContentBlock::ResourceLink(_) => true,
                schema::ContentBlock::Image(_) => caps.image,
                schema::ContentBlock::Audio(_) => caps.audio,
                schema::ContentBlock::Resource(_) => caps.embedded_context,
                _ => false,
            };
            if !allowed {
                let kind = serde_json::to_value(block)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned))
                    .unwrap_or_else(|| "this".into());
                return Err(Error::NotSupported {
                    method: format!("{} with `{kind}` content", methods::SESSION_PROMPT),
                });
            }
        }
        Ok(())
    }

    /// `session/prompt`: records the prompt in the session model, sends it,
    /// and resolves once with the agent's stop reason. Content kinds the
    /// agent did not advertise are refused before anything is sent.
    pub async fn prompt(
        &self,
        session_id: &SessionId,
        content: Vec<schema::ContentBlock>,
    ) -> Result<StopReason> {
        self.require_session(session_id)?;
        self.check_prompt_content(&content)?;
        let (changes, earlier) = self
            .sessions()
            .with_state_mut(session_id, |state| {
                // The session's prompts before this one, replayed ones
                // included: its checkpoint is numbered after them even when
                // the replay was still being applied as the load returned.
                let earlier = state
                    .entries()
                    .iter()
                    .filter(|e| matches!(e, crate::session::Entry::UserMessage(_)))
                    .count();
                let changes =
                    state.push_user_prompt(content.iter().cloned().map(Content::Known).collect());
                (changes, earlier)
            })
            .unwrap_or_default();
        self.sessions().emit_changes(session_id, changes);
        let workspace = self.session_workspace(session_id)?;
        let label = prompt_label(&content);
        self.sessions()
            .review()
            .turn_started(session_id, &workspace, &label, earlier);
        let _turn = TurnGuard {
            sessions: self.sessions(),
            session_id,
        };
        let params = to_params(&schema::PromptRequest::new(session_id.clone(), content))?;
        let (stop_reason, usage) = if self.is_v2() {
            self.prompt_v2(session_id, params).await?
        } else {
            let response: WirePromptResponse = self
                .engine()
                .request(methods::SESSION_PROMPT, params, None)
                .await?;
            (StopReason::from_wire(&response.stop_reason), response.usage)
        };
        if let Some(usage) = usage.as_ref().and_then(TurnUsage::decode) {
            self.sessions()
                .emit_changes(session_id, vec![SessionChange::TurnUsage { usage }]);
        }
        Ok(stop_reason)
    }

    /// A v2 turn: the answer to `session/prompt` only acknowledges the
    /// prompt; the turn ends with the idle `state_update`, which carries the
    /// stop reason and usage (and may come before that answer).
    async fn prompt_v2(
        &self,
        session_id: &SessionId,
        params: Value,
    ) -> Result<(StopReason, Option<Value>)> {
        let mut turn = self.sessions().wait_turn(session_id);
        let ack: Value = self
            .engine()
            .request(methods::SESSION_PROMPT, params, None)
            .await?;
        if let Some(message_id) = ack.get("messageId").and_then(Value::as_str) {
            self.sessions()
                .with_state_mut(session_id, |s| s.acknowledge_prompt(message_id.to_owned()));
        }
        let end = tokio::select! {
            end = turn.end() => end.ok_or_else(|| Error::NotFound(format!(
                "session `{session_id}` was closed before its turn ended"
            )))?,
            closed = self.closed() => return Err(closed),
        };
        // An idle update without a stop reason ended the work all the same.
        let stop_reason = end
            .stop_reason
            .map_or(StopReason::EndTurn, |s| StopReason::from_wire(&s));
        Ok((stop_reason, end.usage))
    }

    /// `session/cancel`: tells the agent, answers the session's pending
    /// permission prompts `cancelled`, and marks its unfinished tool calls
    /// cancelled. The turn's [`Connection::prompt`] still resolves with the
    /// agent's stop reason; later updates are still applied.
    ///
    /// For a subagent's session, only when the agent's `subagent_update`
    /// gave the client `capabilities.cancel` for it (the spec: support on
    /// ordinary sessions grants nothing on a child).
    pub fn cancel(&self, session_id: &SessionId) -> Result<()> {
        self.require_session(session_id)?;
        if !self.sessions().may_cancel(session_id) {
            return Err(Error::SubagentCancelNotAllowed {
                session: session_id.to_string(),
            });
        }
        // No early return: the prompts are cancelled here whatever happens
        // to the notification.
        let sent = to_params(&schema::CancelNotification::new(session_id.clone()))
            .and_then(|params| self.engine().notify(methods::SESSION_CANCEL, &params));
        self.sessions().cancel_session_prompts(session_id);
        self.sessions()
            .change_state(session_id, SessionState::cancel_unfinished_tool_calls);
        sent
    }

    /// Reads a session's model.
    pub fn with_session<R>(
        &self,
        session_id: &SessionId,
        f: impl FnOnce(&SessionState) -> R,
    ) -> Option<R> {
        self.sessions().with_state(session_id, f)
    }

    fn session_workspace(&self, session_id: &SessionId) -> Result<Workspace> {
        self.sessions()
            .workspace(session_id)
            .map(|(workspace, _)| workspace)
            .map_err(|_| {
                Error::NotFound(format!(
                    "unknown session `{session_id}`; open or load it first"
                ))
            })
    }

    /// Edit review of one session: the files the agent changed, as hunks
    /// to accept or reject. See [`Review`].
    pub fn review(&self, session_id: &SessionId) -> Review<'_> {
        let workspace = self.session_workspace(session_id).ok();
        Review::new(
            self.sessions().review(),
            self.sessions().host(),
            session_id.clone(),
            workspace,
        )
    }

    /// The ids of every open session.
    pub fn session_ids(&self) -> Vec<SessionId> {
        self.sessions().session_ids()
    }

    /// Reads or changes the permission memory and rules.
    pub fn with_permissions<R>(&self, f: impl FnOnce(&mut PermissionPolicy) -> R) -> R {
        self.sessions().with_policy(f)
    }

    /// The newest stderr output of the agent (when this connection spawned it).
    pub fn stderr_tail(&self) -> Option<String> {
        self.sessions().agent_stderr_tail()
    }

    /// The agent's process id (when this connection spawned it).
    pub fn pid(&self) -> Option<u32> {
        self.sessions().agent_pid()
    }

    /// True once the connection is closed (agent exited, protocol failure or
    /// shutdown).
    pub fn is_closed(&self) -> bool {
        self.engine().close_reason().is_some()
    }

    /// Resolves when the connection closes, with the reason as an error.
    pub async fn closed(&self) -> Error {
        self.engine().closed().await.to_error()
    }

    /// Graceful shutdown: fail pending calls, kill terminals, close the
    /// agent's stdin, then SIGTERM and SIGKILL its process group after the
    /// grace period. Returns the agent's exit status when it was spawned here.
    pub async fn shutdown(&self) -> Option<ExitInfo> {
        self.engine().close(CloseReason::Shutdown);
        self.sessions().shut_down().await
    }
}

/// The params of a request (or notification) to the agent, built from the
/// schema crate's type so that the field names are the schema's and not
/// hand-written. Serializing these types cannot fail (string keys, derived
/// serializers); the error is reported rather than unwrapped all the same.
fn to_params<T: Serialize>(params: &T) -> Result<Value> {
    serde_json::to_value(params)
        .map_err(|e| Error::InvalidParams(format!("the request could not be encoded: {e}")))
}

#[cfg(test)]
mod params_tests;
