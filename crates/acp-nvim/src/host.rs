//! The editor host of one agent process: acp-client calls it for permission
//! prompts and events, and drives Neovim's buffers through [`LuaBuffers`]
//! (reads, writes and disk-edit sync live in `acp_client::edits::buffer_sync`); it
//! answers through Lua and turns the client's session-keyed events into the
//! plugin's chat-keyed ones.

use std::path::Path;
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::batcher::EventQueue;
use crate::editor::Editor;
use crate::elicitation::WithdrawElicitation;
use crate::prompts::{Prompts, Withdraw};
use crate::protocol::lua::{self, BadReply};
use crate::protocol::{ChatId, Event};
use crate::review_queue::{Decisions, MergedBuffer};
use crate::routes::{Item, Routes};
use acp_client::edits::buffer_sync::{
    self, BufferAtPrompt, BufferSync, BufferText, OnDisk, Origin,
};
use acp_client::edits::host::{HostCapabilities, ReadTextFile};
use acp_client::path::CanonicalPath;
use acp_client::policy::elicitation::{ElicitationRequest, ElicitationResponse};
use acp_client::policy::permission::{PermissionDecision, PermissionRequest};
use acp_client::schema;
use acp_client::session::update::SessionId;
use acp_client::{ClientEvent, EditorHost};
use async_trait::async_trait;

/// The [`EditorHost`] of one agent process.
pub struct NvimHost {
    events: EventQueue,
    prompts: Arc<Prompts>,
    /// Shared with [`LuaBuffers`], which names the chat of a session.
    routes: Arc<Mutex<Routes>>,
    /// The state of the files this agent read or wrote through Neovim,
    /// the order of the instructions and the disk-sync task (see
    /// `acp_client::edits::buffer_sync`).
    sync: BufferSync,
    /// Neovim, for the editor MCP server's `diagnostics` and `open_buffers`
    /// (the buffer calls go through [`LuaBuffers`], which shares it).
    editor: Arc<dyn Editor>,
}

impl std::fmt::Debug for NvimHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvimHost")
            .field("routes", &*self.routes())
            .finish_non_exhaustive()
    }
}

impl NvimHost {
    /// A host for the agent named `agent_name`.
    pub fn new(
        agent_name: &str,
        events: EventQueue,
        editor: Arc<dyn Editor>,
        prompts: Arc<Prompts>,
        decisions: Decisions,
    ) -> Self {
        let routes = Arc::new(Mutex::new(Routes::new(agent_name)));
        let buffers = LuaBuffers {
            editor: editor.clone(),
            events: events.clone(),
            routes: routes.clone(),
            decisions,
        };
        Self {
            events,
            prompts,
            routes,
            sync: BufferSync::new(Arc::new(buffers)),
            editor,
        }
    }

    fn routes(&self) -> MutexGuard<'_, Routes> {
        self.routes.lock()
    }

    /// Runs `f` on the routes and queues what it produced. The lock is held
    /// while queueing so that events keep the order in which they were routed.
    fn with_routes(&self, f: impl FnOnce(&mut Routes, &mut Vec<Event>)) {
        let mut routes = self.routes();
        // The routes' own vector, reused: one allocation per streamed chunk
        // otherwise.
        let mut out = std::mem::take(&mut routes.routed);
        f(&mut routes, &mut out);
        for ev in out.drain(..) {
            self.events.push(ev);
        }
        routes.routed = out;
    }

    /// Routes a session to a chat; `started` is queued first, then the
    /// session's held events.
    pub fn register(&self, session: SessionId, chat: ChatId, started: Option<Event>) {
        self.with_routes(|r, out| r.register(session, chat, started, out));
    }

    /// Stops routing a session to `chat` (see [`Routes::unregister`]).
    pub fn unregister(&self, session: &SessionId, chat: &ChatId) {
        self.routes().unregister(session, chat);
        self.sync.drop_session(session);
    }

    /// Lua reported a buffer's text with its tick (`acp.edits.fs.tick`; the user's
    /// edit of a reviewed buffer; `on_disk`: saved or just read): see
    /// [`BufferSync::user_reported`]. Returns whether review records it as
    /// the user's edit.
    pub async fn buffer_reported(
        &self,
        path: &CanonicalPath,
        text: Arc<str>,
        tick: u64,
        on_disk: OnDisk,
    ) -> bool {
        let buffer = BufferText {
            text,
            version: tick,
        };
        self.sync.user_reported(path, buffer, on_disk).await
    }

    /// The user saved a buffer (`acp.file_saved`): its text at the prompt
    /// is no "before" of an agent edit any more.
    pub fn file_saved(&self, path: &CanonicalPath) {
        self.sync.saved(path);
    }

    /// Waits until the agent's disk edits queued so far were sent to
    /// Neovim and their answers taken.
    pub async fn disk_synced(&self) {
        self.sync.disk_synced().await;
    }

    /// What is held of a file's sync with its buffer (`acp.file_sync`).
    pub fn file_state(&self, path: &CanonicalPath) -> Option<buffer_sync::FileState> {
        self.sync.state(path)
    }

    /// The chats whose sessions live in this agent.
    pub fn chats(&self) -> Vec<ChatId> {
        self.routes().chats()
    }

    /// The session of `chat` in this agent, if it is open.
    pub fn session_of(&self, chat: &ChatId) -> Option<SessionId> {
        self.routes().session_of(chat)
    }

    /// `chat` is opening a session (initialize, authenticate, session/new)
    /// until the returned guard drops: request-scoped elicitations of that
    /// time are shown in it.
    pub fn opening(&self, chat: &ChatId) -> Opening<'_> {
        self.routes().opening.push(chat.clone());
        Opening {
            host: self,
            chat: chat.clone(),
        }
    }

    /// A prompt of `session` goes out with these buffers (see
    /// [`BufferSync::turn_started`]). Their paths are Lua's names of the
    /// buffers: resolved here, once, to the key the sync holds the file
    /// by (one that does not resolve, a symlink loop, keys nothing).
    pub fn buffers_at_prompt(
        &self,
        session: &SessionId,
        buffers: Vec<crate::command::PromptBuffer>,
    ) {
        let buffers = buffers
            .into_iter()
            .filter_map(|b| {
                Some(BufferAtPrompt {
                    path: resolve(&b.path)?,
                    text: b.text,
                    version: b.tick,
                    disk: b.disk,
                })
            })
            .collect();
        self.sync.turn_started(session, buffers);
    }

    /// A prompt goes out: the files it embeds whole are what the agent
    /// saw of them.
    pub fn saw_prompt(&self, session: &SessionId, blocks: &[schema::ContentBlock]) {
        self.sync.saw_prompt(session, blocks);
    }
}

/// A path Lua sent (a buffer's name) as the key of its file's state: the
/// one resolution, where it enters the backend; `None` (logged) when it
/// does not resolve (a symlink loop), as an agent's path there is refused.
pub fn resolve(path: &Path) -> Option<CanonicalPath> {
    CanonicalPath::resolve(path)
        .inspect_err(|e| tracing::debug!(path = %path.display(), error = %e, "a buffer's path does not resolve"))
        .ok()
}

/// Neovim's buffers as the buffer sync drives them: reads go to
/// `acp.edits.fs.read_for_agent`, instructions to `acp.edits.fs.apply`.
struct LuaBuffers {
    editor: Arc<dyn Editor>,
    events: EventQueue,
    routes: Arc<Mutex<Routes>>,
    /// Where a buffer that took a disk edit's merge is reported (the
    /// reviews learn its text without Lua sending it back).
    decisions: Decisions,
}

impl LuaBuffers {
    fn chat_of(&self, session: Option<&SessionId>) -> Option<ChatId> {
        self.routes.lock().sessions.get(session?).cloned()
    }
}

#[async_trait]
impl buffer_sync::Buffers for LuaBuffers {
    async fn read(
        &self,
        request: &ReadTextFile,
        known: Option<u64>,
    ) -> acp_client::Result<Option<buffer_sync::BufferRead>> {
        let Some(path) = lua_path(&request.path) else {
            return Ok(None);
        };
        let args = lua::FsRead {
            path,
            line: request.line,
            limit: request.limit,
            known,
        };
        let reply = self.editor.fs_read(args.encode()).await.map_err(|e| {
            acp_client::Error::Host(format!(
                "Neovim could not read `{path}` from its buffer: {e}"
            ))
        })?;
        match lua::decode_read(&reply) {
            Ok(read) => Ok(read),
            Err(BadReply::NotUtf8) => Err(acp_client::Error::NotUtf8 {
                path: request.path.to_path_buf(),
            }),
            Err(bad) => Err(acp_client::Error::Host(format!("reading `{path}`: {bad}"))),
        }
    }

    async fn apply(
        &self,
        instruction: &buffer_sync::Instruction,
    ) -> acp_client::Result<buffer_sync::Applied> {
        let Some(path) = lua_path(&instruction.path) else {
            // Neovim cannot match it to a buffer: the client uses the disk.
            return Ok(buffer_sync::Applied::NoBuffer);
        };
        let chat = self.chat_of(instruction.session.as_ref());
        let mut call = lua::Apply::of(path, instruction);
        call.chat_id = chat.as_ref().map(|c| &*c.0);
        let reply = self.editor.fs_apply(call.encode()).await.map_err(|e| {
            acp_client::Error::Host(format!(
                "Neovim could not write `{path}` through its buffer: {e}"
            ))
        })?;
        let applied = lua::decode_apply(&reply, instruction.revision)
            .map_err(|bad| acp_client::Error::Host(format!("writing `{path}`: {bad}")))?;
        if let (buffer_sync::Applied::Merged { version }, Origin::Disk, Some(merge)) =
            (&applied, instruction.origin, &instruction.merge)
        {
            // Lua reported the merged buffer back before (one crossing, and
            // the review request its report made the next refresh ask).
            self.decisions.merged(MergedBuffer {
                path: instruction.path.to_path_buf(),
                text: merge.text.as_str().into(),
                tick: *version,
            });
        }
        Ok(applied)
    }

    fn tell_user(&self, path: &Path, session: Option<&SessionId>, message: String) {
        tracing::warn!(path = %path.display(), "{message}");
        self.events.push(Event::Warning {
            chat_id: self.chat_of(session),
            message,
        });
    }
}
/// See [`NvimHost::opening`].
#[derive(Debug)]
pub struct Opening<'a> {
    host: &'a NvimHost,
    chat: ChatId,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        let mut routes = self.host.routes();
        if let Some(i) = routes.opening.iter().rposition(|c| *c == self.chat) {
            routes.opening.remove(i);
        }
    }
}

/// A path as Lua gets it; `None` for paths that are not UTF-8 (Lua could
/// not match them against buffer names reliably: the disk is used).
fn lua_path(path: &Path) -> Option<&str> {
    path.to_str()
}

impl NvimHost {
    /// Asks Lua for the editor MCP server's `diagnostics` / `open_buffers`.
    async fn editor_state(
        &self,
        what: &str,
        args: lua::EditorState<'_>,
    ) -> acp_client::Result<serde_json::Value> {
        let reply = self.editor.editor_state(args.encode()).await.map_err(|e| {
            acp_client::Error::Host(format!("Neovim could not list its {what}: {e}"))
        })?;
        match reply {
            rmpv::Value::Nil => Err(acp_client::Error::Host(format!(
                "{what} are not supported by this editor"
            ))),
            other => Ok(crate::msgpack::to_json(&other)),
        }
    }
}

#[async_trait]
impl EditorHost for NvimHost {
    fn capabilities(&self) -> HostCapabilities {
        HostCapabilities {
            elicitation_form: true,
            elicitation_url: true,
            ..HostCapabilities::default()
        }
    }

    async fn request_elicitation(&self, request: ElicitationRequest) -> ElicitationResponse {
        let registry = &self.prompts.elicitations;
        let (prompt, answer) = registry.open(&request);
        let _withdraw = WithdrawElicitation {
            elicitations: registry,
            id: prompt,
        };
        let client_id = request.id;
        self.with_routes(|r, out| {
            r.elicitation_ids.insert(client_id, (prompt, None));
            r.route(Item::Elicitation { request, prompt }, out);
        });
        // When the turn is cancelled the client drops this future; the
        // mapping stays until its ElicitationCancelled is translated.
        let answer = answer.await;
        self.routes().elicitation_ids.remove(&client_id);
        answer.unwrap_or_else(|_| {
            tracing::debug!(%prompt, "elicitation dropped without an answer");
            ElicitationResponse::Cancel
        })
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionDecision {
        let (prompt, answer) = self.prompts.open();
        let _withdraw = Withdraw {
            prompts: &self.prompts,
            id: prompt,
        };
        let client_id = request.id;
        self.with_routes(|r, out| {
            r.prompt_ids.insert(client_id, prompt);
            r.route(Item::Permission { request, prompt }, out);
        });
        // When the turn is cancelled the client drops this future; the
        // mapping then stays until its PermissionCancelled is translated.
        let answer = answer.await;
        self.routes().prompt_ids.remove(&client_id);
        match answer {
            Ok(Some(option_id)) => PermissionDecision::Selected { option_id },
            Ok(None) => PermissionDecision::Cancelled,
            Err(_) => {
                tracing::debug!(%prompt, "permission prompt dropped without an answer");
                PermissionDecision::Cancelled
            }
        }
    }

    fn buffer_sync(&self) -> Option<&BufferSync> {
        Some(&self.sync)
    }

    async fn diagnostics(
        &self,
        _session_id: &SessionId,
        path: Option<&Path>,
    ) -> acp_client::Result<serde_json::Value> {
        let args = lua::EditorState {
            what: "diagnostics",
            path: path.and_then(lua_path),
        };
        self.editor_state("diagnostics", args).await
    }

    async fn open_buffers(&self, _session_id: &SessionId) -> acp_client::Result<serde_json::Value> {
        let args = lua::EditorState {
            what: "open_buffers",
            path: None,
        };
        self.editor_state("open buffers", args).await
    }

    fn on_event(&self, event: ClientEvent) {
        self.with_routes(|r, out| r.translate(event, out));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests;
