//! The questions of a connection waiting for the editor: permission
//! prompts and elicitations (pending, cancelled, settled), the permission
//! memory that answers some prompts, and the "always" answers an agent may
//! refuse. Part of [`LiveSessions`].

use tokio::sync::oneshot;

use super::*;
use crate::policy::permission::{
    OptionKind, PermissionDecision, PermissionOption, PermissionRequest,
};
use crate::session::update::{Content, ToolContent};

/// A permission prompt waiting for the editor.
pub(super) struct PendingPermission {
    session_id: SessionId,
    cancel: oneshot::Sender<()>,
}

/// An elicitation waiting for the editor.
pub(super) struct PendingElicitation {
    scope: ElicitationScope,
    cancel: oneshot::Sender<()>,
}

impl LiveSessions {
    pub(crate) fn next_permission_id(&self) -> PermissionRequestId {
        PermissionRequestId(self.next_permission_id.fetch_add(1, Ordering::Relaxed))
    }

    pub(crate) fn next_elicitation_id(&self) -> ElicitationRequestId {
        ElicitationRequestId(self.next_elicitation_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Cancels the session's pending prompts and elicitations (used by
    /// `session/cancel` and close).
    pub(crate) fn cancel_session_prompts(&self, session_id: &SessionId) {
        self.cancel_permissions(|s| s == session_id);
        self.cancel_elicitations(|scope| scope.session_id() == Some(session_id));
    }

    /// Answers matching pending permission prompts `cancelled`.
    pub(crate) fn cancel_permissions(&self, mut filter: impl FnMut(&SessionId) -> bool) {
        let cancelled: Vec<PendingPermission> = {
            let mut map = self.permissions_pending.lock();
            let ids: Vec<PermissionRequestId> = map
                .iter()
                .filter(|(_, p)| filter(&p.session_id))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for p in cancelled {
            // The handler task sees this, replies `cancelled`, and emits the event.
            let _ = p.cancel.send(());
        }
    }

    /// Answers matching pending elicitations `cancel`.
    pub(crate) fn cancel_elicitations(&self, mut filter: impl FnMut(&ElicitationScope) -> bool) {
        let cancelled: Vec<PendingElicitation> = {
            let mut map = self.elicitations_pending.lock();
            let ids: Vec<ElicitationRequestId> = map
                .iter()
                .filter(|(_, p)| filter(&p.scope))
                .map(|(id, _)| *id)
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        for p in cancelled {
            // The handler task replies `cancel` and emits the event.
            let _ = p.cancel.send(());
        }
    }

    /// gemini-cli offers "allow always" and then, in a folder it does not
    /// trust, fails the tool call with "Cannot enable privileged approval
    /// modes in an untrusted folder." When a tool call answered "always"
    /// fails that way, the session's later prompts offer the once options
    /// only (dispatch filters them), and the user is told why.
    pub(super) fn check_always_refused(&self, session_id: &SessionId, update: &SessionUpdate) {
        let (SessionUpdate::ToolCall(f) | SessionUpdate::ToolCallUpdate(f)) = update else {
            return;
        };
        let finished = matches!(f.status, Some(ToolStatus::Failed | ToolStatus::Completed));
        if !finished {
            return;
        }
        let key = (session_id.clone(), f.tool_call_id.0.to_string());
        if !self.always_answered.lock().remove(&key) || f.status != Some(ToolStatus::Failed) {
            return;
        }
        let mut text = String::new();
        for c in f.content.iter().flatten() {
            if let ToolContent::Content {
                content: Content::Known(crate::schema::ContentBlock::Text(t)),
            } = c
            {
                text.push_str(&t.text);
            }
        }
        if let Some(raw) = &f.raw_output {
            text.push_str(&raw.to_string());
        }
        if !text.contains("untrusted folder")
            || !self.always_refused.lock().insert(session_id.clone())
        {
            return;
        }
        self.emit(ClientEvent::Session {
            session_id: session_id.clone(),
            change: SessionChange::Notice {
                severity: "warning".into(),
                title: "The agent refused an \"always\" answer: it does not trust this folder".into(),
                description: Some(
                    "From now on this session offers the once options only. Trust the folder in the agent (gemini: /permissions) to use \"always\" again.".into(),
                ),
            },
        });
    }

    /// Records a permission prompt shown to the editor until
    /// [`LiveSessions::permission_settled`]; the receiver fires when the
    /// prompt is withdrawn (turn cancelled, agent gone).
    pub(crate) fn pending_permission(
        &self,
        id: PermissionRequestId,
        session_id: SessionId,
    ) -> oneshot::Receiver<()> {
        let (cancel, cancelled) = oneshot::channel();
        self.permissions_pending
            .lock()
            .insert(id, PendingPermission { session_id, cancel });
        cancelled
    }

    /// The prompt's handler ended, however it ended.
    pub(crate) fn permission_settled(&self, id: PermissionRequestId) {
        self.permissions_pending.lock().remove(&id);
    }

    /// Records an elicitation shown to the editor until
    /// [`LiveSessions::elicitation_settled`]; the receiver fires when it is
    /// withdrawn.
    pub(crate) fn pending_elicitation(
        &self,
        id: ElicitationRequestId,
        scope: ElicitationScope,
    ) -> oneshot::Receiver<()> {
        let (cancel, cancelled) = oneshot::channel();
        self.elicitations_pending
            .lock()
            .insert(id, PendingElicitation { scope, cancel });
        cancelled
    }

    /// The elicitation's handler ended, however it ended.
    pub(crate) fn elicitation_settled(&self, id: ElicitationRequestId) {
        self.elicitations_pending.lock().remove(&id);
    }

    /// The answer the permission memory or rules give without asking.
    pub(crate) fn remembered_decision(
        &self,
        request: &PermissionRequest,
    ) -> Option<PermissionDecision> {
        self.permission_policy.lock().decide(request)
    }

    /// The user chose `chosen` (one of the request's options): remembered
    /// by the permission memory, and an `allow_always` kept until its tool
    /// call ends (see [`LiveSessions::check_always_refused`]).
    pub(crate) fn record_answer(&self, request: &PermissionRequest, chosen: &PermissionOption) {
        if chosen.kind == OptionKind::AllowAlways {
            self.always_answered.lock().insert((
                request.session_id.clone(),
                request.tool_call.tool_call_id.0.to_string(),
            ));
        }
        self.permission_policy
            .lock()
            .record(request, &chosen.option_id);
    }

    /// Whether the session's agent refused an "always" answer (its prompts
    /// then offer the once options only).
    pub(crate) fn refuses_always(&self, session_id: &SessionId) -> bool {
        self.always_refused.lock().contains(session_id)
    }

    /// Reads or changes the permission memory and rules.
    pub(crate) fn with_policy<R>(&self, f: impl FnOnce(&mut PermissionPolicy) -> R) -> R {
        f(&mut self.permission_policy.lock())
    }

    /// The user accepted a URL elicitation: open until the agent's
    /// `elicitation/complete`.
    pub(crate) fn url_elicitation_accepted(&self, id: ElicitationId, scope: ElicitationScope) {
        self.url_elicitations.lock().insert(id, scope);
    }

    /// The agent completed a URL elicitation: its scope, when it was open.
    pub(crate) fn url_elicitation_completed(&self, id: &ElicitationId) -> Option<ElicitationScope> {
        self.url_elicitations.lock().remove(id)
    }
}
