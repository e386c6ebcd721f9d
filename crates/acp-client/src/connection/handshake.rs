//! Before any session: `initialize` (v1 and v2), the agent's info and
//! capabilities, and authentication.

use super::requests;
use super::*;

impl Connection {
    /// `initialize`: offers the version of
    /// [`ConnectionOptions::protocol_version`] and the capabilities the
    /// editor host implements. Offering v2 sends the v2 `info` and
    /// `capabilities` and the v1 `clientInfo` and `clientCapabilities`
    /// beside them, so an agent that answers 1 still has the client's fs and
    /// terminal. An agent answering a version that was not offered is an
    /// error.
    pub async fn initialize(&self) -> Result<AgentInfo> {
        let offered = self.sessions().options().protocol_version;
        let params = to_params(&self.initialize_params(offered))?;
        let raw: Value = self
            .engine()
            .request(
                methods::INITIALIZE,
                params,
                self.sessions().options().initialize_timeout,
            )
            .await?;
        let answered = raw
            .get("protocolVersion")
            .and_then(Value::as_u64)
            .and_then(|n| u16::try_from(n).ok());
        let info = match answered.and_then(ProtocolVersion::from_u16) {
            Some(ProtocolVersion::V2) if offered == ProtocolVersion::V2 => {
                self.agent_info_v2(&raw)?
            }
            Some(ProtocolVersion::V2) => {
                return Err(Error::ProtocolVersion {
                    agent: 2,
                    client: offered.as_u16(),
                })
            }
            _ => self.agent_info_v1(&raw)?,
        };
        self.sessions().set_v2(info.protocol_version == 2);
        *self.inner.agent.lock() = Some(info.clone());
        Ok(info)
    }

    /// The v2 answer to `initialize` as an [`AgentInfo`]: `info` and
    /// `capabilities.session` mapped onto their v1 places. A v2 agent's
    /// baseline session methods (`{}`) include list, resume and close, and
    /// load is a resume with a replay.
    fn agent_info_v2(&self, raw: &Value) -> Result<AgentInfo> {
        let decode_error = |e: serde_json::Error| Error::Decode {
            what: "the agent's v2 answer to `initialize`".into(),
            reason: e.to_string(),
        };
        let response = agent_client_protocol_schema::v2::InitializeResponse::deserialize(raw)
            .map_err(decode_error)?;
        let capabilities = v1_capabilities(&response).map_err(decode_error)?;
        let implementation = serde_json::to_value(&response.info)
            .and_then(schema::Implementation::deserialize)
            .ok();
        let auth_methods = response
            .auth_methods
            .iter()
            .filter_map(|m| {
                serde_json::to_value(m)
                    .map(crate::session::update::v2::auth_method_to_v1)
                    .and_then(schema::AuthMethod::deserialize)
                    .ok()
            })
            .map(|m| self.without_denied_env(m))
            .collect();
        Ok(AgentInfo {
            protocol_version: 2,
            system_prompt: SystemPromptSupport::of_capabilities(&capabilities),
            capabilities,
            auth_methods,
            implementation,
        })
    }

    /// The v1 answer to `initialize` as an [`AgentInfo`].
    fn agent_info_v1(&self, raw: &Value) -> Result<AgentInfo> {
        let response = schema::InitializeResponse::deserialize(raw).map_err(|e| Error::Decode {
            what: "the agent's answer to `initialize`".into(),
            reason: e.to_string(),
        })?;
        let version = response.protocol_version.as_u16();
        if version != PROTOCOL_VERSION {
            return Err(Error::ProtocolVersion {
                agent: version,
                client: self.sessions().options().protocol_version.as_u16(),
            });
        }
        let system_prompt = SystemPromptSupport::of_capabilities(&response.agent_capabilities);
        Ok(AgentInfo {
            protocol_version: version,
            capabilities: response.agent_capabilities,
            auth_methods: response
                .auth_methods
                .into_iter()
                .map(legacy_terminal_auth)
                .map(|m| self.without_denied_env(m))
                .collect(),
            implementation: response.agent_info,
            system_prompt,
        })
    }

    /// The `initialize` params offering `offered`: v1's, and on v2 the v2
    /// `info` and `capabilities` beside them.
    fn initialize_params(&self, offered: ProtocolVersion) -> requests::Initialize {
        let options = self.sessions().options();
        let host = self.sessions().host().capabilities();
        let client_info = schema::Implementation::new(
            options.client_name.clone(),
            options.client_version.clone(),
        );
        let mut params = requests::Initialize {
            protocol_version: agent_client_protocol_schema::ProtocolVersion::V1,
            client_capabilities: requests::client_capabilities(&host, options.terminal_auth),
            client_info,
            info: None,
            capabilities: None,
        };
        if offered == ProtocolVersion::V2 {
            params.protocol_version = agent_client_protocol_schema::ProtocolVersion::V2;
            params.info = Some(params.client_info.clone());
            params.capabilities = Some(requests::client_capabilities_v2(
                &host,
                options.terminal_auth,
            ));
        }
        params
    }

    /// Drops the entries of a terminal auth method's `env` that
    /// `ConnectionOptions::denied_env` names (`LD_PRELOAD` in a login
    /// command would load the agent's code into it), and says so.
    fn without_denied_env(&self, method: schema::AuthMethod) -> schema::AuthMethod {
        let schema::AuthMethod::Terminal(mut terminal) = method else {
            return method;
        };
        let sessions = self.sessions();
        let denied = &sessions.options().denied_env;
        let before = terminal.env.len();
        terminal
            .env
            .retain(|name, _| !crate::options::env_denied(name, denied));
        if terminal.env.len() != before {
            sessions.warn(format!(
                "the agent's login method `{}` sets loader variables (such as LD_PRELOAD); they were dropped",
                terminal.name
            ));
        }
        schema::AuthMethod::Terminal(terminal)
    }

    /// What the agent answered to `initialize`, once it did.
    pub fn agent_info(&self) -> Option<AgentInfo> {
        self.inner.agent.lock().clone()
    }

    /// `authenticate` with one of the agent's `authMethods`.
    pub async fn authenticate(&self, method_id: &str) -> Result<()> {
        self.require(methods::AUTHENTICATE, |i| {
            i.auth_methods
                .iter()
                .any(|m| m.id().0.as_ref() == method_id)
        })?;
        let method = match self.is_v2() {
            true => methods::AUTH_LOGIN,
            false => methods::AUTHENTICATE,
        };
        let _: Value = self
            .engine()
            .request(
                method,
                to_params(&schema::AuthenticateRequest::new(method_id.to_owned()))?,
                self.timeout(),
            )
            .await?;
        Ok(())
    }

    /// `logout`, when the agent advertises `auth.logout`.
    pub async fn logout(&self) -> Result<()> {
        self.require(methods::LOGOUT, |i| i.capabilities.auth.logout.is_some())?;
        let method = match self.is_v2() {
            true => methods::AUTH_LOGOUT,
            false => methods::LOGOUT,
        };
        let _: Value = self
            .engine()
            .request(
                method,
                to_params(&schema::LogoutRequest::new())?,
                self.timeout(),
            )
            .await?;
        Ok(())
    }
}

/// A v2 agent's `capabilities.session` as v1's [`schema::AgentCapabilities`].
/// A v2 agent's baseline session methods (`{}`) include list, resume and
/// close, and load is a resume with a replay. The fields v2 shares with v1
/// are read with v1's types, leniently as v1's own decode is (one that does
/// not decode is left unset).
pub(super) fn v1_capabilities(
    response: &agent_client_protocol_schema::v2::InitializeResponse,
) -> serde_json::Result<schema::AgentCapabilities> {
    let Value::Object(session) = serde_json::to_value(&response.capabilities.session)? else {
        return Ok(schema::AgentCapabilities::new());
    };
    fn field<T: serde::de::DeserializeOwned>(
        session: &serde_json::Map<String, Value>,
        key: &str,
    ) -> Option<T> {
        session
            .get(key)
            .filter(|v| !v.is_null())
            .and_then(|v| T::deserialize(v).ok())
    }
    let session_caps = schema::SessionCapabilities::new()
        .list(schema::SessionListCapabilities::new())
        .resume(schema::SessionResumeCapabilities::new())
        .close(schema::SessionCloseCapabilities::new())
        .system_prompt(field::<schema::SessionSystemPromptCapabilities>(
            &session,
            "systemPrompt",
        ))
        .additional_directories(field::<schema::SessionAdditionalDirectoriesCapabilities>(
            &session,
            "additionalDirectories",
        ))
        .delete(field::<schema::SessionDeleteCapabilities>(
            &session, "delete",
        ));
    let mut caps = schema::AgentCapabilities::new()
        .load_session(true)
        .session_capabilities(session_caps);
    if let Some(prompt) =
        field::<agent_client_protocol_schema::v2::PromptCapabilities>(&session, "prompt")
    {
        // v2 marks a content type with an object (`image: {}`), v1 with a
        // boolean: read as v1's, every one was `false` and images, audio
        // and embedded files were never offered to a v2 agent.
        caps = caps.prompt_capabilities(
            schema::PromptCapabilities::new()
                .image(prompt.image.is_some())
                .audio(prompt.audio.is_some())
                .embedded_context(prompt.embedded_context.is_some()),
        );
    }
    // v2: agents with auth methods serve `auth/logout` too.
    if !response.auth_methods.is_empty() {
        caps = caps
            .auth(schema::AgentAuthCapabilities::new().logout(schema::LogoutCapabilities::new()));
    }
    if let Some(Value::Object(mcp)) = session.get("mcp") {
        // v2 marks a transport with an object (`http: {}`), v1 with a
        // boolean: the editor's MCP server is offered over http only where
        // the agent marks it (claude-agent-acp 0.101.0 sends
        // `{stdio: {}, http: {}}`).
        let marked = |transport: &str| mcp.get(transport).is_some_and(|m| !m.is_null());
        caps = caps.mcp_capabilities(
            schema::McpCapabilities::new()
                .http(marked("http"))
                .sse(marked("sse")),
        );
    }
    Ok(caps)
}

/// An older agent's terminal login: an `agent` method marked
/// `_meta["terminal-auth"] = {command, args, env, label}` (claude-code-acp
/// before ACP had terminal auth methods) becomes a `terminal` method, so no
/// client passes it to `authenticate`. Its `args` and `env` move into the
/// method; the `_meta` stays, for [`terminal_auth_command`].
fn legacy_terminal_auth(method: schema::AuthMethod) -> schema::AuthMethod {
    let schema::AuthMethod::Agent(agent) = &method else {
        return method;
    };
    let Some(marker) = agent
        .meta
        .as_ref()
        .and_then(|m| m.get("terminal-auth"))
        .and_then(Value::as_object)
    else {
        return method;
    };
    let args: Vec<String> = marker
        .get("args")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let env: std::collections::HashMap<String, String> = marker
        .get("env")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    let terminal = schema::AuthMethodTerminal::new(agent.id.clone(), agent.name.clone())
        .description(agent.description.clone())
        .args(args)
        .env(env)
        .meta(agent.meta.clone());
    schema::AuthMethod::Terminal(terminal)
}

/// The program a terminal auth method runs instead of the agent's own
/// command: the `command` of an older agent's `_meta["terminal-auth"]`.
/// `None` for ACP terminal methods, which run the agent's command.
pub fn terminal_auth_command(method: &schema::AuthMethod) -> Option<String> {
    let meta = match method {
        schema::AuthMethod::Terminal(t) => t.meta.as_ref(),
        _ => None,
    }?;
    meta.get("terminal-auth")?
        .get("command")?
        .as_str()
        .map(str::to_owned)
}
