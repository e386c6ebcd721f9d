//! `acp.list_sessions`: the sessions an agent keeps, for the plugin's
//! session picker.
//!
//! Listing needs the agent running and initialized, which can take seconds
//! (agents behind `npx`), so it runs in its own task and answers with a
//! `sessions_listed` event. The agent process is shared like a chat's and
//! kept for [`LINGER`] afterwards: the user usually opens one of the
//! sessions right away, and that open then reuses the process.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::agents::Agents;
use crate::batcher::EventQueue;
use crate::command::{AgentSpec, ChatId};
use crate::protocol::Event;
use acp_client::session::update::SessionId;

/// How long the agent stays up after listing when no chat uses it.
pub const LINGER: Duration = Duration::from_secs(30);

/// What to list.
#[derive(Debug, Clone)]
pub struct ListRequest {
    /// Echoed in the answer.
    pub request_id: String,
    /// The agent to ask.
    pub agent: AgentSpec,
    /// Where the agent runs (unless the spec says), and the filter.
    pub cwd: PathBuf,
    /// Every directory's sessions, not only `cwd`'s.
    pub all: bool,
    /// A session to delete (`session/delete`) before listing.
    pub delete: Option<String>,
}

/// Starts listing; the answer arrives as a `sessions_listed` event.
pub fn start(agents: Arc<Agents>, events: EventQueue, request: ListRequest, linger: Duration) {
    tokio::spawn(async move {
        // A user of the agent that is no chat: keeps it alive while listing.
        let user = ChatId::from(format!("list:{}", request.request_id));
        let mut deleted = None;
        let answer =
            |capabilities, sessions, message: Option<String>, deleted| Event::SessionsListed {
                request_id: request.request_id.clone(),
                agent_name: request.agent.name.clone(),
                capabilities,
                sessions,
                message,
                deleted,
            };
        let agent = match agents.acquire(&request.agent, &request.cwd, &user, None, None, None) {
            Ok(agent) => agent,
            Err(e) => {
                events.push(answer(
                    None,
                    None,
                    Some(format!(
                        "{e}. Check `cmd` of agent `{}` in your acp.nvim setup() and that the program is installed and on $PATH.",
                        request.agent.name
                    )),
                    None,
                ));
                return;
            }
        };
        let event = match agent.ready().await {
            Err(message) => answer(None, None, Some(message), None),
            Ok(info) => {
                let caps = Some(info.capabilities.clone());
                let mut failed_delete = None;
                if let Some(id) = &request.delete {
                    match agent
                        .conn
                        .delete_session(&SessionId::new(id.as_str()))
                        .await
                    {
                        Ok(()) => {
                            tracing::info!(agent = %agent.name, session = %id, "session deleted");
                            deleted = Some(id.clone());
                        }
                        Err(e) => {
                            failed_delete = Some(format!(
                                "the agent {} did not delete session {id}: {e}",
                                agent.name
                            ))
                        }
                    }
                }
                if let Some(message) = failed_delete {
                    answer(caps, None, Some(message), None)
                } else if info.capabilities.session_capabilities.list.is_none() {
                    answer(
                        caps,
                        None,
                        Some(format!(
                            "the agent {} cannot list its sessions (it does not advertise session/list)",
                            agent.name
                        )),
                        deleted.clone(),
                    )
                } else {
                    let cwd = (!request.all).then_some(request.cwd.as_path());
                    match agent.conn.list_all_sessions(cwd).await {
                        Ok(sessions) => answer(caps, Some(sessions), None, deleted.clone()),
                        Err(e) => answer(
                            caps,
                            None,
                            Some(format!(
                                "the agent {} could not list its sessions: {e}",
                                agent.name
                            )),
                            deleted.clone(),
                        ),
                    }
                }
            }
        };
        events.push(event);
        tokio::time::sleep(linger).await;
        if agents.release(&agent, &user) {
            tracing::info!(agent = %agent.name, "no chat took the listed agent; stopping it");
            agent.conn.shutdown().await;
        }
    });
}
