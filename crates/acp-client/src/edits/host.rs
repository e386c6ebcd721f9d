//! The editor boundary: what an editor implements to host ACP agents.
//!
//! An editor that implements only [`EditorHost::request_permission`] gets
//! disk-backed `fs/*` and process-backed `terminal/*` for free; an editor with
//! buffers implements [`crate::edits::buffer_sync::Buffers`] and returns its
//! [`BufferSync`] from [`EditorHost::buffer_sync`], so agents see and edit
//! unsaved text.

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;

use crate::agents::process::ExitInfo;
use crate::edits::buffer_sync::BufferSync;
use crate::edits::hunks::{FileReview, FileSummary};
use crate::path::CanonicalPath;
use crate::policy::elicitation::{
    ElicitationId, ElicitationRequest, ElicitationRequestId, ElicitationResponse, ElicitationScope,
};
use crate::policy::permission::{PermissionDecision, PermissionRequest, PermissionRequestId};
use crate::session::update::SessionId;
use crate::session::SessionChange;
use crate::tools::terminal::TerminalEvent;

/// Which agent->client methods the editor serves. Advertised in
/// `initialize`; a request for anything switched off is answered `-32601`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostCapabilities {
    /// Serve `fs/read_text_file`.
    pub read_text_file: bool,
    /// Serve `fs/write_text_file`.
    pub write_text_file: bool,
    /// Serve `terminal/*`.
    pub terminal: bool,
    /// Serve form elicitations (`elicitation/create` with `mode: form`):
    /// the editor implements [`EditorHost::request_elicitation`].
    pub elicitation_form: bool,
    /// Serve URL elicitations (`mode: url`).
    pub elicitation_url: bool,
}

impl Default for HostCapabilities {
    /// fs and terminals on (the client serves them itself); elicitation
    /// off: only an editor that asks the user can serve it.
    fn default() -> Self {
        Self {
            read_text_file: true,
            write_text_file: true,
            terminal: true,
            elicitation_form: false,
            elicitation_url: false,
        }
    }
}

pub use crate::edits::buffer_sync::{ReadTextFile, WriteKind, WriteOutcome, WriteTextFile};

/// A record of one agent edit, for review: the file's content before and
/// after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEdit {
    /// The session the request belongs to.
    pub session_id: SessionId,
    /// The file, as the workspace resolved the agent's path.
    pub path: CanonicalPath,
    /// `None` when the file did not exist.
    pub old_content: Option<String>,
    /// The content after the edit.
    pub new_content: String,
    /// Where the write went (the texts it carries are in `old_content`
    /// and `new_content`, and not serialized).
    pub applied: WriteOutcome,
}

/// Everything the client tells the editor, in the order it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
// Events are built once and moved to the editor; boxing the larger variants
// would only add allocations on the streaming path.
#[allow(clippy::large_enum_variant)]
pub enum ClientEvent {
    /// The session model changed.
    Session {
        #[serde(rename = "sessionId")]
        /// The session concerned.
        session_id: SessionId,
        /// What changed.
        change: SessionChange,
    },
    /// A pending permission prompt was answered `cancelled` by the client
    /// (turn cancelled, agent cancelled the request, or agent exited); the
    /// editor should close it.
    PermissionCancelled {
        /// The prompt that was closed.
        id: PermissionRequestId,
        #[serde(rename = "sessionId")]
        /// The session concerned.
        session_id: SessionId,
    },
    /// A permission request was answered from the permission memory or an
    /// auto-allow rule, without asking.
    PermissionAutoAnswered {
        /// The request, as it would have been shown.
        request: PermissionRequest,
        /// The answer sent to the agent.
        decision: PermissionDecision,
    },
    /// A pending elicitation was answered `cancel` by the client (turn
    /// cancelled, the request it served finished, agent withdrew it or
    /// exited); the editor should close it.
    ElicitationCancelled {
        /// The elicitation that was closed.
        id: ElicitationRequestId,
        /// What it was tied to.
        scope: ElicitationScope,
    },
    /// The agent reported a URL elicitation finished (`elicitation/complete`).
    ElicitationCompleted {
        #[serde(rename = "elicitationId")]
        /// The agent's id of the elicitation.
        elicitation_id: ElicitationId,
        /// What it was tied to.
        scope: ElicitationScope,
    },
    /// Terminal output or exit.
    Terminal(TerminalEvent),
    /// The agent changed a file through `fs/write_text_file`.
    FileEdited(FileEdit),
    /// The agent process exited or closed its output.
    AgentExited {
        /// How the process ended.
        status: ExitInfo,
        #[serde(rename = "stderrTail")]
        /// The newest stderr output of the agent.
        stderr_tail: String,
    },
    /// A message the client could not use (malformed line, unknown
    /// notification); logged, shown for diagnosis.
    ProtocolWarning {
        /// A sentence describing the problem.
        message: String,
    },
    /// A file's review state changed: an agent edit was recorded, or a hunk
    /// or the file was accepted or rejected. `file.hunks` is 0 when nothing
    /// is left to review in the file. See [`crate::Review::file`].
    ReviewChanged {
        #[serde(rename = "sessionId")]
        /// The session whose agent made the edits.
        session_id: SessionId,
        /// The file's review summary now.
        file: FileSummary,
        /// The file's whole review now (`None`: nothing left to review), so
        /// an editor draws the change without asking for it.
        review: Option<FileReview>,
    },
}

/// Receives events; cheap to clone and call from any task.
pub type EventSink = Arc<dyn Fn(ClientEvent) + Send + Sync>;

/// What an editor implements to host agents. All methods are called from
/// their own tasks: a method may wait (for a human, for the UI thread)
/// without blocking the connection.
#[async_trait]
pub trait EditorHost: Send + Sync + 'static {
    /// The methods this editor serves; defaults to everything.
    fn capabilities(&self) -> HostCapabilities {
        HostCapabilities::default()
    }

    /// Ask the user. Requests answered from the permission memory never get
    /// here. If the turn is cancelled while this runs, the future is dropped
    /// and [`ClientEvent::PermissionCancelled`] is emitted.
    async fn request_permission(&self, request: PermissionRequest) -> PermissionDecision;

    /// Ask the user an elicitation (only called for the modes
    /// [`HostCapabilities`] switches on). Form answers should be checked
    /// with [`crate::policy::elicitation::FormSchema::validate`] first, so the user
    /// can fix them; an invalid answer reaching the client is answered
    /// `cancel` with a warning. If the turn is cancelled while this runs,
    /// the future is dropped and [`ClientEvent::ElicitationCancelled`] is
    /// emitted.
    async fn request_elicitation(&self, request: ElicitationRequest) -> ElicitationResponse {
        let _ = request;
        ElicitationResponse::Cancel
    }

    /// The editor's buffer sync, for an editor with buffers: the client
    /// then serves `fs/read_text_file` and `fs/write_text_file` through
    /// them (agents see unsaved text; their writes are merged into unsaved
    /// edits) and brings them up to date with the agent's own disk edits.
    /// The editor makes it from its [`crate::edits::buffer_sync::Buffers`] and
    /// reports the user's edits, saves and prompts to it. `None` (the
    /// default): the client reads and writes the disk.
    fn buffer_sync(&self) -> Option<&BufferSync> {
        None
    }

    /// The editor's diagnostics for the `diagnostics` tool of the editor's
    /// MCP server ([`crate::serve::editor_tools`]): for `path` (already checked
    /// against the session's workspace), or every open file when `None`. A
    /// JSON value shown to the model as is; the default says the editor has
    /// none to give.
    async fn diagnostics(
        &self,
        session_id: &SessionId,
        path: Option<&std::path::Path>,
    ) -> crate::Result<serde_json::Value> {
        let _ = (session_id, path);
        Err(crate::Error::Host(
            "diagnostics are not supported by this editor".into(),
        ))
    }

    /// The open files for the `open_buffers` tool of the editor's MCP
    /// server: path, unsaved-changes flag, cursor, last visual selection.
    async fn open_buffers(&self, session_id: &SessionId) -> crate::Result<serde_json::Value> {
        let _ = session_id;
        Err(crate::Error::Host(
            "listing open buffers is not supported by this editor".into(),
        ))
    }

    /// Called for every event, in order, from the connection's tasks. Keep it
    /// short: push to a channel.
    fn on_event(&self, event: ClientEvent) {
        let _ = event;
    }
}
