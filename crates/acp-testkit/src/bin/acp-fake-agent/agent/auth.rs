//! Logging in and out: `authenticate` (directly or after asking the user
//! through an elicitation), `logout`, and the check every session open makes.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use serde_json::{json, Value};

use super::{str_param, Agent, Responder};
use crate::wire::{codes, Reply, RpcError};

impl Agent {
    pub(super) fn authenticate(&self, params: &Value) -> Reply {
        let method_id = str_param(params, "methodId")?;
        let methods = self.scenario.auth_methods();
        let method = methods
            .iter()
            .find(|m| m.get("id").and_then(Value::as_str) == Some(method_id))
            .ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "unknown auth method `{method_id}`; use one of the ids from initialize"
                ))
            })?;
        if method.get("type").and_then(Value::as_str) == Some("terminal") {
            return Err(RpcError::invalid_params(format!(
                "`{method_id}` is a terminal auth method: run the agent's login command instead of sending authenticate"
            )));
        }
        self.state().authenticated = true;
        if let Some(path) = &self.scenario.auth_file {
            if let Err(err) = std::fs::write(path, method_id) {
                tracing::error!("cannot write the auth file {}: {err}", path.display());
            }
        }
        Ok(json!({}))
    }

    /// `authenticate` that first asks the user through a request-scoped
    /// elicitation, answered on its own thread (the read loop must go on
    /// to deliver the client's answer).
    pub(super) fn authenticate_after_asking(
        self: &Arc<Self>,
        responder: Responder,
        params: &Value,
        mut ask: Value,
    ) {
        let agent = self.clone();
        let params = params.clone();
        if let (Value::Object(map), Some(id)) = (&mut ask, responder.id.clone()) {
            map.insert("requestId".into(), id);
        }
        std::thread::spawn(move || {
            let reply = agent.pending.call(&agent.out, "elicitation/create", ask);
            let action = reply
                .as_ref()
                .ok()
                .and_then(|v| v.get("action").and_then(Value::as_str))
                .unwrap_or("error")
                .to_owned();
            tracing::info!(action, "login elicitation answered");
            if action == "accept" {
                responder.send(agent.authenticate(&params));
            } else {
                responder.send(Err(RpcError::new(
                    codes::AUTH_REQUIRED,
                    format!("login not completed: the user answered `{action}`"),
                )));
            }
        });
    }

    /// `logout`, when `agentCapabilities.auth.logout` is advertised: the
    /// next session needs `authenticate` again (the `authFile` is removed).
    pub(super) fn logout(&self) -> Reply {
        let caps = self.scenario.agent_capabilities();
        // v2: an agent with auth methods serves `auth/logout`.
        let supported = match self.v2.load(Ordering::SeqCst) {
            true => !self.scenario.auth_methods().is_empty(),
            false => caps.pointer("/auth/logout").is_some_and(|v| !v.is_null()),
        };
        if !supported {
            return Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                "`logout` is not supported: the agent did not advertise auth.logout",
            ));
        }
        self.state().authenticated = false;
        if let Some(path) = &self.scenario.auth_file {
            if let Err(err) = std::fs::remove_file(path) {
                tracing::info!("auth file {} not removed: {err}", path.display());
            }
        }
        Ok(json!({}))
    }

    pub(super) fn require_auth(&self) -> Result<(), RpcError> {
        let logged_in = self.state().authenticated
            || self.scenario.auth_file.as_ref().is_some_and(|f| f.exists());
        if self.scenario.auth_required && !logged_in {
            let mut error = RpcError::new(codes::AUTH_REQUIRED, "Authentication required");
            error.data = Some(json!({ "authMethods": self.scenario.auth_methods() }));
            return Err(error);
        }
        Ok(())
    }
}
