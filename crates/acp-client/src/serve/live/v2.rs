//! ACP v2 on a connection: whether `initialize` settled on it, the v2
//! `session/update` shapes applied, and the turns that end with an idle
//! `state_update`. Part of [`LiveSessions`].

use std::path::Path;

use tokio::sync::oneshot;

use super::*;

/// The biggest file a v2 diff's old or new text is recovered from.
const DIFF_BASE_MAX_BYTES: u64 = 4 * 1024 * 1024;

/// How a v2 turn ended (its idle `state_update`).
#[derive(Debug)]
pub(crate) struct TurnEnd {
    /// The stop reason's wire name.
    pub stop_reason: Option<String>,
    pub usage: Option<serde_json::Value>,
}

/// A v2 turn waiting for its idle `state_update`
/// ([`LiveSessions::wait_turn`]); forgets its waiter however the prompt ends.
pub(crate) struct TurnWaiter<'a> {
    sessions: &'a LiveSessions,
    session_id: &'a SessionId,
    rx: oneshot::Receiver<TurnEnd>,
}

impl TurnWaiter<'_> {
    /// The turn's end; `None` when the session was closed before it.
    pub(crate) async fn end(&mut self) -> Option<TurnEnd> {
        (&mut self.rx).await.ok()
    }
}

impl Drop for TurnWaiter<'_> {
    fn drop(&mut self) {
        self.rx.close();
        let mut turns = self.sessions.turns.lock();
        if let Some(waiters) = turns.get_mut(self.session_id) {
            waiters.retain(|tx| !tx.is_closed());
            if waiters.is_empty() {
                turns.remove(self.session_id);
            }
        }
    }
}

impl LiveSessions {
    /// True once `initialize` settled on ACP v2.
    pub(crate) fn is_v2(&self) -> bool {
        self.v2.load(Ordering::Acquire)
    }

    /// `initialize` settled on the protocol version: v2 or not.
    pub(crate) fn set_v2(&self, v2: bool) {
        self.v2.store(v2, Ordering::Release);
    }

    /// Waits for the end of the session's v2 turn. A prompt sent while the
    /// agent works joins its turn (v2 inserts it into the conversation):
    /// the one idle update ends both.
    pub(crate) fn wait_turn<'a>(&'a self, session_id: &'a SessionId) -> TurnWaiter<'a> {
        let (tx, rx) = oneshot::channel();
        self.turns
            .lock()
            .entry(session_id.clone())
            .or_default()
            .push(tx);
        TurnWaiter {
            sessions: self,
            session_id,
            rx,
        }
    }

    /// The text on disk of a file a v2 diff names, to recover the diff's
    /// other side: only inside the session's workspace (a diff naming
    /// `/etc/passwd` reads nothing) and up to [`DIFF_BASE_MAX_BYTES`]. A
    /// small blocking read on the reader task, like the path checks; a
    /// regular file only, opened non-blocking, so an agent that swaps the
    /// file for a FIFO after naming it cannot stall the read loop.
    pub(crate) fn diff_base(&self, session_id: &SessionId, path: &Path) -> Option<String> {
        let workspace = self.slots.lock().get(session_id)?.workspace.clone();
        let resolved = workspace.resolve(path).ok()?;
        crate::disk::read_text_capped(&resolved, DIFF_BASE_MAX_BYTES).ok()
    }

    /// Applies one decoded v2 `session/update`: its updates like a v1
    /// agent's, and an idle `state_update` ends the session's turn.
    pub(crate) fn apply_v2(&self, notification: update::v2::V2Notification) {
        use update::v2::{AgentState, V2Notification};
        match notification {
            V2Notification::Updates {
                session_id,
                updates,
            } => {
                for update in updates {
                    self.apply_update(update::SessionNotification {
                        session_id: session_id.clone(),
                        update,
                    });
                }
            }
            V2Notification::UserMessage {
                session_id,
                message_id,
                content,
            } => {
                // The echo of a prompt this client recorded (claude-agent-acp
                // 0.101.0 echoes each one with the id it answers
                // `session/prompt` with, before or after that answer): the
                // message with that id, or the prompt recorded last while it
                // has no id yet, with the same content, is already shown.
                let id = Some(message_id.clone());
                let known = self
                    .slots
                    .lock()
                    .get_mut(&session_id)
                    .is_some_and(|slot| slot.state.take_prompt_echo(&id, &content));
                if known {
                    return;
                }
                self.apply_update(update::SessionNotification {
                    session_id,
                    update: SessionUpdate::MessageUpsert(update::MessageUpsert {
                        kind: update::MessageKind::User,
                        message_id,
                        content: Some(content),
                    }),
                });
            }
            V2Notification::State {
                session_id,
                state: AgentState::Idle { stop_reason, usage },
            } => match self.turns.lock().remove(&session_id) {
                Some(turns) => {
                    for turn in turns {
                        let _ = turn.send(TurnEnd {
                            stop_reason: stop_reason.clone(),
                            usage: usage.clone(),
                        });
                    }
                }
                // The end of a replay, or of work the agent started itself:
                // no turn of ours to end.
                None => tracing::debug!("idle state of `{session_id}` with no prompt in flight"),
            },
            // Running, waiting on the user (a permission request follows)
            // or a state this client does not know: the turn goes on.
            V2Notification::State { session_id, state } => {
                tracing::debug!("session `{session_id}` state {state:?}")
            }
        }
    }
}
