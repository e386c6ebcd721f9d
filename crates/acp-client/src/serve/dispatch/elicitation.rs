//! Serving `elicitation/create` and `elicitation/complete`: the agent's
//! questions to the user (a form, or a URL to open), asked through the
//! editor in their own task and answered once.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::parse;
use crate::edits::host::{ClientEvent, HostCapabilities};
use crate::error::{Error, Result};
use crate::policy::elicitation::*;
use crate::rpc::methods;
use crate::serve::live::{unknown_session, LiveSessions};

/// `clientCapabilities.elicitation` for what the host serves; `None` (sent
/// as `null`: not advertised) when it serves neither mode.
pub(crate) fn elicitation_capabilities(
    caps: &HostCapabilities,
) -> Option<crate::schema::ElicitationCapabilities> {
    use crate::schema::{
        ElicitationCapabilities, ElicitationFormCapabilities, ElicitationUrlCapabilities,
    };
    if !caps.elicitation_form && !caps.elicitation_url {
        return None;
    }
    Some(
        ElicitationCapabilities::new()
            .form(caps.elicitation_form.then(ElicitationFormCapabilities::new))
            .url(caps.elicitation_url.then(ElicitationUrlCapabilities::new)),
    )
}

/// Removes an elicitation from the pending map when its handler ends in any
/// way, and tells the editor it is gone when the client closed it.
struct Guard<'a> {
    shared: &'a LiveSessions,
    id: ElicitationRequestId,
    scope: ElicitationScope,
    answered_by_editor: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.shared.elicitation_settled(self.id);
        if !self.answered_by_editor {
            self.shared.emit(ClientEvent::ElicitationCancelled {
                id: self.id,
                scope: self.scope.clone(),
            });
        }
    }
}

/// Serves one `elicitation/create`.
pub(crate) async fn serve(shared: &Arc<LiveSessions>, params: Option<&RawValue>) -> Result<Value> {
    let wire: WireCreate = parse(methods::ELICITATION_CREATE, params)?;
    let caps = shared.host().capabilities();
    let (mut scope, message, mode) = match wire.decode()? {
        Decoded::Ask(scope, message, mode) => (scope, message, mode),
        Decoded::UnknownMode(mode) => {
            return Err(Error::InvalidParams(format!(
                "elicitation mode `{mode}` is not supported; this client supports {}",
                supported_modes(&caps)
            )))
        }
    };
    let supported = match &mode {
        ElicitationMode::Form { .. } => caps.elicitation_form,
        ElicitationMode::Url { .. } => caps.elicitation_url,
    };
    if !supported {
        let name = if matches!(mode, ElicitationMode::Form { .. }) {
            "form"
        } else {
            "url"
        };
        return Err(Error::InvalidParams(format!(
            "elicitation mode `{name}` is not supported; this client supports {}",
            supported_modes(&caps)
        )));
    }
    if let ElicitationScope::Session {
        session_id,
        tool_call_id,
        tool_title,
    } = &mut scope
    {
        *tool_title = shared
            .with_state(session_id, |state| {
                tool_call_id
                    .as_deref()
                    .and_then(|id| state.tool_call(&crate::session::update::ToolCallId::new(id)))
                    .map(|tc| tc.title.clone())
            })
            .ok_or_else(|| unknown_session(session_id))?;
    }
    let request = ElicitationRequest {
        id: shared.next_elicitation_id(),
        scope: scope.clone(),
        message,
        mode,
    };
    let cancel_rx = shared.pending_elicitation(request.id, scope.clone());
    let mut guard = Guard {
        shared,
        id: request.id,
        scope: scope.clone(),
        answered_by_editor: false,
    };
    let response = tokio::select! {
        response = shared.host().request_elicitation(request.clone()) => {
            guard.answered_by_editor = true;
            response
        }
        _ = cancel_rx => ElicitationResponse::Cancel,
    };
    drop(guard);
    let response = match (response, &request.mode) {
        (ElicitationResponse::Accept { content }, ElicitationMode::Form { schema }) => {
            match schema.validate(&content) {
                Ok(content) => ElicitationResponse::Accept { content },
                Err(e) => {
                    shared.warn(format!(
                        "the editor answered an elicitation with content that does not fit its form ({e}); answering `cancel`"
                    ));
                    ElicitationResponse::Cancel
                }
            }
        }
        (ElicitationResponse::Accept { .. }, ElicitationMode::Url { elicitation_id, .. }) => {
            shared.url_elicitation_accepted(elicitation_id.clone(), scope);
            ElicitationResponse::Accept {
                content: Map::new(),
            }
        }
        (other, _) => other,
    };
    serde_json::to_value(&response)
        .map_err(|e| Error::Host(format!("could not encode an elicitation answer: {e}")))
}

fn supported_modes(caps: &HostCapabilities) -> &'static str {
    match (caps.elicitation_form, caps.elicitation_url) {
        (true, true) => "`form` and `url`",
        (true, false) => "`form` only",
        (false, true) => "`url` only",
        (false, false) => "none",
    }
}

/// `elicitation/complete`: a URL elicitation finished on the agent's side.
/// Ids we never accepted (or already saw complete) are ignored.
pub(crate) fn completed(shared: &LiveSessions, params: Option<&RawValue>) {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Complete {
        elicitation_id: ElicitationId,
    }
    let parsed = params.map(|p| serde_json::from_str::<Complete>(p.get()));
    let Some(Ok(complete)) = parsed else {
        shared.warn("ignoring a malformed `elicitation/complete`".into());
        return;
    };
    let scope = shared.url_elicitation_completed(&complete.elicitation_id);
    match scope {
        Some(scope) => shared.emit(ClientEvent::ElicitationCompleted {
            elicitation_id: complete.elicitation_id,
            scope,
        }),
        None => tracing::debug!(
            elicitation_id = %complete.elicitation_id,
            "`elicitation/complete` for an elicitation that is not open; ignored"
        ),
    }
}
