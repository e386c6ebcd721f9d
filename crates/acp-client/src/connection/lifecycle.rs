//! Opening and closing sessions: new, load, resume, fork, list, close and
//! delete, with the editor's MCP server and system prompt offered to each.

use super::requests::{self, OpenSession};
use super::*;

impl Connection {
    /// The editor's MCP server of this connection, started on first use;
    /// `None` when the options switch it off or it could not start.
    fn editor_tools(&self) -> Option<&EditorTools> {
        let options = self.sessions().options().editor_tools.as_ref()?;
        self.inner
            .editor_tools
            .get_or_init(|| {
                let sessions = Arc::downgrade(self.inner.engine.handler());
                match EditorTools::start(sessions, options.clone()) {
                    Ok(tools) => Some(tools),
                    Err(e) => {
                        self.sessions().warn(format!(
                            "the editor's MCP server could not start ({e}), so agents of this connection get no editor tools; check that the temp directory is writable"
                        ));
                        None
                    }
                }
            })
            .as_ref()
    }

    /// The editor's MCP server for a session being opened: when it is on,
    /// the agent takes one of its transports (`http` if it advertises it,
    /// else stdio through the bridge), and the user configured no server
    /// of the same name.
    fn editor_offer(&self, params: &SessionParams) -> Option<Offer<'_>> {
        let caps = self.agent_info()?.capabilities.mcp_capabilities;
        let taken = params.mcp_servers.iter().any(|s| {
            let name = match s {
                schema::McpServer::Http(h) => &h.name,
                schema::McpServer::Sse(h) => &h.name,
                schema::McpServer::Stdio(h) => &h.name,
                #[allow(unreachable_patterns)]
                _ => return false,
            };
            name == crate::serve::editor_tools::SERVER_NAME
        });
        if taken {
            return None;
        }
        self.editor_tools()?.offer(&caps)
    }

    /// The `mcpServers` of a `session/new`, load or resume: the editor's
    /// own server (when offered), then the configured ones. The one place
    /// that decides the list.
    fn mcp_servers(params: &SessionParams, offer: Option<&Offer<'_>>) -> Vec<schema::McpServer> {
        offer
            .map(|o| o.server().clone())
            .into_iter()
            .chain(params.mcp_servers.iter().cloned())
            .collect()
    }

    /// The system prompt sent: the configured one, with the editor
    /// server's sentence appended when the server is offered.
    fn system_prompt(params: &SessionParams, offer: Option<&Offer<'_>>) -> Option<SystemPrompt> {
        let configured = params
            .system_prompt
            .as_ref()
            .filter(|sp| !sp.text.is_empty());
        let sentence = offer.map(Offer::prompt).filter(|s| !s.is_empty());
        match (configured, sentence) {
            (Some(sp), Some(sentence)) => Some(SystemPrompt {
                mode: sp.mode,
                text: format!("{}\n\n{sentence}", sp.text),
            }),
            (Some(sp), None) => Some(sp.clone()),
            (None, Some(sentence)) => Some(SystemPrompt {
                mode: SystemPromptMode::Append,
                text: sentence.to_owned(),
            }),
            (None, None) => None,
        }
    }

    /// The params of `session/new`, load, resume and fork: the one place
    /// that decides what they carry.
    fn open_params(
        &self,
        params: &SessionParams,
        session_id: Option<&SessionId>,
        offer: Option<&Offer<'_>>,
    ) -> OpenSession {
        let mut open = OpenSession::new(
            params.cwd.clone(),
            Self::mcp_servers(params, offer),
            self.is_v2(),
        );
        let additional_supported = self.agent_info().is_some_and(|i| {
            i.capabilities
                .session_capabilities
                .additional_directories
                .is_some()
        });
        if additional_supported {
            open.additional_directories = params.additional_directories.clone();
        }
        open.session_id = session_id.cloned();
        if let Some(sp) = Self::system_prompt(params, offer) {
            let support = self
                .agent_info()
                .map(|i| i.system_prompt)
                .unwrap_or_default();
            if support.allows(sp.mode) {
                open.system_prompt = Some(requests::system_prompt(sp.mode, sp.text));
            }
        }
        open
    }

    /// Why `params`' system prompt is not sent to this agent, if it is not.
    fn system_prompt_skipped(&self, params: &SessionParams) -> Option<String> {
        let sp = params
            .system_prompt
            .as_ref()
            .filter(|sp| !sp.text.is_empty())?;
        let support = self
            .agent_info()
            .map(|i| i.system_prompt)
            .unwrap_or_default();
        match support {
            _ if support.allows(sp.mode) => None,
            SystemPromptSupport::None => Some(
                "this agent does not take a client system prompt (it does not advertise sessionCapabilities.systemPrompt), so `system_prompt` is not sent; put the instructions in your first message instead".into(),
            ),
            _ => Some(
                "this agent takes a system prompt only in `append` mode, so the `override` one is not sent; set `system_prompt = { mode = \"append\", text = ... }` to send it".into(),
            ),
        }
    }

    fn workspace_for(&self, params: &SessionParams) -> Workspace {
        let mut roots = vec![params.cwd.clone()];
        roots.extend(params.additional_directories.iter().cloned());
        let mut ws = Workspace::new(roots);
        for p in &self.sessions().options().allowed_paths {
            ws.allow(p.clone());
        }
        ws
    }

    fn check_cwd(params: &SessionParams) -> Result<()> {
        if !params.cwd.is_absolute() {
            return Err(Error::RelativePath {
                path: params.cwd.clone(),
            });
        }
        Ok(())
    }

    fn register_session(
        &self,
        session_id: &SessionId,
        params: &SessionParams,
        response: &WireSessionResponse,
    ) {
        self.sessions().register(
            session_id,
            self.workspace_for(params),
            params.cwd.clone(),
            |state| {
                let mut changes = Vec::new();
                if let Some(modes) = &response.modes {
                    changes.extend(state.set_modes(modes.clone()));
                }
                if let Some(options) = &response.config_options {
                    changes.extend(state.set_config_options(options.clone()));
                }
                changes
            },
        );
    }

    /// The end every opening shares (new, load, resume, fork): the session
    /// registered, the editor's MCP server bound to it, its start reported.
    fn opened(
        &self,
        session_id: SessionId,
        params: &SessionParams,
        response: WireSessionResponse,
        offer: Option<Offer<'_>>,
    ) -> SessionStarted {
        self.register_session(&session_id, params, &response);
        if let Some(offer) = offer {
            offer.bind(&session_id);
        }
        self.started(session_id, params, response)
    }

    fn started(
        &self,
        session_id: SessionId,
        params: &SessionParams,
        response: WireSessionResponse,
    ) -> SessionStarted {
        SessionStarted {
            system_prompt_skipped: self.system_prompt_skipped(params),
            session_id,
            modes: response.modes,
            config_options: response.config_options.unwrap_or_default(),
        }
    }

    /// `session/new`. The session's cwd and additional directories become
    /// the sandbox for the agent's fs and terminal requests.
    pub async fn new_session(&self, params: SessionParams) -> Result<SessionStarted> {
        Self::check_cwd(&params)?;
        self.info_or_err(methods::SESSION_NEW)?;
        let _opening = self.sessions().opening();
        let offer = self.editor_offer(&params);
        let response: WireSessionResponse = self
            .session_request(
                methods::SESSION_NEW,
                to_params(&self.open_params(&params, None, offer.as_ref()))?,
            )
            .await?;
        let session_id = response.session_id.clone().ok_or_else(|| Error::Decode {
            what: "the agent's answer to `session/new`".into(),
            reason: "it has no `sessionId`".into(),
        })?;
        Ok(self.opened(session_id, &params, response, offer))
    }

    /// `session/load`: the agent replays the session's history as updates
    /// before answering; the session model is rebuilt from that replay.
    pub async fn load_session(
        &self,
        session_id: &SessionId,
        params: SessionParams,
    ) -> Result<SessionStarted> {
        Self::check_cwd(&params)?;
        self.require(methods::SESSION_LOAD, |i| i.capabilities.load_session)?;
        self.sessions().close_settled(session_id).await;
        // Registered before the request so the replay lands in a fresh model
        // (its subagents' too: the replay announces them again).
        self.sessions().register_for_load(
            session_id,
            self.workspace_for(&params),
            params.cwd.clone(),
        );
        // v2 has no `session/load`: a resume replaying from the start, whose
        // answer ends the replay (claude-agent-acp 0.101.0 sends no marker).
        let offer = self.editor_offer(&params);
        let open = self.open_params(&params, Some(session_id), offer.as_ref());
        let (method, open) = if self.is_v2() {
            (methods::SESSION_RESUME, open.replay_from_start())
        } else {
            (methods::SESSION_LOAD, open)
        };
        let result: Result<WireSessionResponse> = match to_params(&open) {
            Ok(request) => self.session_request(method, request).await,
            Err(e) => Err(e),
        };
        match result {
            Ok(response) => Ok(self.opened(session_id.clone(), &params, response, offer)),
            Err(e) => {
                self.sessions().remove_session(session_id);
                Err(e)
            }
        }
    }

    /// `session/resume`: reattach to a session without a replay.
    pub async fn resume_session(
        &self,
        session_id: &SessionId,
        params: SessionParams,
    ) -> Result<SessionStarted> {
        Self::check_cwd(&params)?;
        self.require(methods::SESSION_RESUME, |i| {
            i.capabilities.session_capabilities.resume.is_some()
        })?;
        self.sessions().close_settled(session_id).await;
        let _opening = self.sessions().opening();
        let offer = self.editor_offer(&params);
        let response: WireSessionResponse = self
            .session_request(
                methods::SESSION_RESUME,
                to_params(&self.open_params(&params, Some(session_id), offer.as_ref()))?,
            )
            .await?;
        Ok(self.opened(session_id.clone(), &params, response, offer))
    }

    /// Whether the agent offers `session/fork` (unstable).
    pub fn can_fork(&self) -> bool {
        self.agent_info()
            .is_some_and(|i| i.capabilities.session_capabilities.fork.is_some())
    }

    /// `session/fork` (unstable): a new session whose history is `source`'s
    /// before the session cursor `cursor` (whole, without one). The new
    /// session is live when the agent answers, and has the sandbox of
    /// `params` like a new one.
    pub async fn fork_session(
        &self,
        source: &SessionId,
        cursor: Option<&str>,
        params: SessionParams,
    ) -> Result<SessionStarted> {
        Self::check_cwd(&params)?;
        self.require(methods::SESSION_FORK, |i| {
            i.capabilities.session_capabilities.fork.is_some()
        })?;
        let _opening = self.sessions().opening();
        let offer = self.editor_offer(&params);
        // `ForkSessionRequest`'s fields are those of `session/resume` (one
        // builder decides what an agent is sent) plus the cursor.
        let mut open = self.open_params(&params, Some(source), offer.as_ref());
        open.cursor_id = cursor.map(schema::CursorId::from);
        let response: WireSessionResponse = self
            .session_request(methods::SESSION_FORK, to_params(&open)?)
            .await?;
        let session_id = response.session_id.clone().ok_or_else(|| Error::Decode {
            what: "the agent's answer to `session/fork`".into(),
            reason: "it has no `sessionId`".into(),
        })?;
        if &session_id == source {
            return Err(Error::Decode {
                what: "the agent's answer to `session/fork`".into(),
                reason: "it named the session being forked, not a new one".into(),
            });
        }
        Ok(self.opened(session_id, &params, response, offer))
    }

    /// One page of `session/list`.
    pub async fn list_sessions(
        &self,
        cwd: Option<&Path>,
        cursor: Option<&str>,
    ) -> Result<SessionPage> {
        self.require(methods::SESSION_LIST, |i| {
            i.capabilities.session_capabilities.list.is_some()
        })?;
        let params = to_params(
            &schema::ListSessionsRequest::new()
                .cwd(cwd.map(Path::to_path_buf))
                .cursor(cursor.map(str::to_owned)),
        )?;
        let response: schema::ListSessionsResponse = self
            .engine()
            .request(methods::SESSION_LIST, params, self.timeout())
            .await?;
        Ok(SessionPage {
            sessions: response.sessions,
            next_cursor: response.next_cursor,
        })
    }

    /// Every page of `session/list`, newest first by `updatedAt` when the
    /// agent gives it. Stops if the agent repeats a cursor.
    pub async fn list_all_sessions(&self, cwd: Option<&Path>) -> Result<Vec<schema::SessionInfo>> {
        let mut all = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = std::collections::HashSet::new();
        loop {
            let page = self.list_sessions(cwd, cursor.as_deref()).await?;
            all.extend(page.sessions);
            match page.next_cursor {
                Some(next) if seen.insert(next.clone()) => cursor = Some(next),
                _ => break,
            }
        }
        all.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        Ok(all)
    }

    /// `session/close` when advertised; the session's terminals are killed
    /// and its pending prompts cancelled either way.
    pub async fn close_session(&self, session_id: &SessionId) -> Result<()> {
        let supported = self
            .agent_info()
            .is_some_and(|i| i.capabilities.session_capabilities.close.is_some());
        let _closing = self.sessions().closing(session_id);
        self.sessions().cancel_session_prompts(session_id);
        self.sessions()
            .terminals()
            .release_session(session_id)
            .await;
        let result = if supported {
            self.engine()
                .request::<Value>(
                    methods::SESSION_CLOSE,
                    to_params(&schema::CloseSessionRequest::new(session_id.clone()))?,
                    self.timeout(),
                )
                .await
                .map(|_| ())
        } else {
            Ok(())
        };
        self.sessions().remove_session(session_id);
        self.sessions().review().remove(session_id);
        result
    }

    /// `session/delete`, when advertised.
    pub async fn delete_session(&self, session_id: &SessionId) -> Result<()> {
        self.require(methods::SESSION_DELETE, |i| {
            i.capabilities.session_capabilities.delete.is_some()
        })?;
        let _: Value = self
            .engine()
            .request(
                methods::SESSION_DELETE,
                to_params(&schema::DeleteSessionRequest::new(session_id.clone()))?,
                self.timeout(),
            )
            .await?;
        self.sessions().remove_session(session_id);
        self.sessions().review().remove(session_id);
        Ok(())
    }

    pub(super) fn require_session(&self, session_id: &SessionId) -> Result<()> {
        if self.sessions().is_open(session_id) {
            Ok(())
        } else {
            Err(Error::NotFound(format!(
                "unknown session `{session_id}`; open or load it first"
            )))
        }
    }
}
