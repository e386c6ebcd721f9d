//! Events for the Lua plugin: typed, and encoded once by [`Event::encode`]
//! (serde straight into msgpack through [`super::wire`], keys in
//! snake_case).
//!
//! The shapes are the contract in `doc/protocol.md`: every event is a map
//! with a `type` and, when it concerns a chat, its `chat_id`. Parts that
//! come from acp-client (session changes, tool calls, capabilities, terminal
//! events) are carried as acp-client's typed values until they are encoded.
//!
//! Streamed text is the `text_appended` session change. Queued events are
//! merged by one rule, [`Event::merge`], wherever they pile up (the batcher's
//! queue, a batch on its way to Lua, a transcript's pending record).

use acp_client::agents::registry;
use acp_client::edits::hunks::{strip_line_ending, FileReview, FileStatus, FileSummary};
use acp_client::policy::permission::PermissionOption;
use acp_client::schema;
use acp_client::session::update::ToolCallFields;
use acp_client::session::{Entry, SessionChange};
use acp_client::tools::terminal::TerminalEvent;
use rmpv::Value;
use serde::Serialize;

use super::wire;
use super::{ChatId, PromptId};
use crate::elicitation::ElicitationPromptId;

/// Queued text chunks are merged up to this size per event, so that one
/// merged event never makes one Lua call long enough to stall a frame.
pub const MAX_MERGED_TEXT: usize = 16 * 1024;

/// One event for `require('acp.events').dispatch`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The session of a chat is open.
    SessionStarted {
        /// The chat concerned.
        chat_id: ChatId,
        /// The agent's session id.
        session_id: String,
        /// The agent, as the plugin named it.
        agent_name: String,
        /// The agent's modes, when it has any.
        #[serde(skip_serializing_if = "Option::is_none")]
        modes: Option<schema::SessionModeState>,
        /// The session's config options (absent when there are none).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        config_options: Vec<schema::SessionConfigOption>,
        /// The agent's capabilities from `initialize`.
        capabilities: schema::AgentCapabilities,
        /// The agent's auth methods (absent when it listed none).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        auth_methods: Vec<LoginMethod>,
        /// The file the session's transcript is written to, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        transcript_path: Option<String>,
        /// The chat's turns before this session's first prompt: the
        /// session's k-th prompt (replayed ones included) is turn
        /// `turn_base + k`. The backend owns these numbers (its
        /// checkpoints); the plugin's are a cache of them.
        turn_base: u32,
    },
    /// The session could not be opened; `message` names the fix.
    OpenFailed {
        /// The chat concerned.
        chat_id: ChatId,
        /// A sentence for the user.
        message: String,
        /// The agent's last stderr output, when there is any.
        #[serde(skip_serializing_if = "is_blank")]
        stderr_tail: Option<String>,
    },
    /// The agent wants the user to log in first.
    AuthRequired {
        /// The chat concerned.
        chat_id: ChatId,
        /// The agent's auth methods.
        auth_methods: Vec<LoginMethod>,
    },
    /// The session model changed (acp-client's `SessionChange`; streamed
    /// text is its `text_appended`).
    Session {
        /// The chat concerned.
        chat_id: ChatId,
        /// What changed.
        change: SessionChange,
    },
    /// The agent asks for permission; answer with `acp.permission_respond`.
    PermissionRequest {
        /// The chat concerned.
        chat_id: ChatId,
        /// Answer with this id in `acp.permission_respond`.
        request_id: PromptId,
        /// The tool call the request is about.
        tool_call: ToolCallFields,
        /// The choices, in the agent's order.
        options: Vec<PermissionOption>,
    },
    /// A pending permission prompt was withdrawn (turn cancelled, agent
    /// cancelled it, agent exited).
    PermissionCancelled {
        /// The chat concerned.
        chat_id: ChatId,
        /// The id of the withdrawn `permission_request`.
        request_id: PromptId,
    },
    /// A permission request answered from memory or an auto-allow rule.
    PermissionAuto {
        /// The chat concerned.
        chat_id: ChatId,
        /// The tool call the request is about.
        tool_call: ToolCallFields,
        /// The option chosen; absent when the request was cancelled.
        #[serde(skip_serializing_if = "Option::is_none")]
        option: Option<PermissionOption>,
    },
    /// The agent asks the user (a form or a URL); answer with
    /// `acp.elicitation_respond`. Without `chat_id` when no chat is known
    /// for it (a request-scoped elicitation with no chat opening).
    ElicitationRequest {
        /// The chat concerned, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        chat_id: Option<ChatId>,
        /// Answer with this id.
        request_id: ElicitationPromptId,
        /// The session, for session-scoped elicitations.
        #[serde(skip_serializing_if = "Option::is_none")]
        session_id: Option<String>,
        /// `form` or `url`.
        mode: &'static str,
        /// What the agent wants.
        message: String,
        /// Form: the JSON Schema as the agent sent it (opaque: its
        /// keywords keep their spelling, see `wire::OPAQUE_KEYS`).
        #[serde(skip_serializing_if = "Option::is_none")]
        requested_schema: Option<serde_json::Value>,
        /// Form: the fields in the agent's order (`elicitation::lua_fields`).
        #[serde(skip_serializing_if = "Option::is_none")]
        fields: Option<serde_json::Value>,
        /// URL mode: the page to open.
        #[serde(skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        /// URL mode: the agent's id, echoed by `elicitation_completed`.
        #[serde(skip_serializing_if = "Option::is_none")]
        elicitation_id: Option<String>,
        /// The tool call the question belongs to.
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
        /// The title of that tool call, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_title: Option<String>,
    },
    /// A pending elicitation was withdrawn (turn cancelled, the request it
    /// served ended, agent exited).
    ElicitationCancelled {
        /// The chat concerned, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        chat_id: Option<ChatId>,
        /// The id of the withdrawn `elicitation_request`.
        request_id: ElicitationPromptId,
    },
    /// The agent finished a URL elicitation (`elicitation/complete`).
    ElicitationCompleted {
        /// The chat concerned, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        chat_id: Option<ChatId>,
        /// The agent's id of the URL elicitation.
        elicitation_id: String,
    },
    /// Terminal output or lifecycle: the fields of acp-client's
    /// `TerminalEvent` (`kind`, `terminal_id`, `data`, `exit_status`...).
    Terminal {
        /// The chat concerned.
        chat_id: ChatId,
        /// The terminal event (its `session_id` is the chat's session).
        #[serde(flatten)]
        terminal: TerminalEvent,
    },
    /// The agent wrote a file through `fs/write_text_file`.
    FileEdited {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: String,
        /// The write went through the open buffer (and was saved).
        buffer_updated: bool,
        /// The buffer had unsaved changes: the disk was written and the
        /// agent's edit merged into the buffer (still unsaved).
        kept_unsaved: bool,
        /// With `kept_unsaved`: the buffer has open conflict blocks, so the
        /// edit waits on disk until they are resolved.
        waiting: bool,
    },
    /// A prompt turn ended with the agent's stop reason.
    TurnEnded {
        /// The chat concerned.
        chat_id: ChatId,
        /// The agent's stop reason (`end_turn`, `cancelled`...).
        stop_reason: String,
    },
    /// A prompt could not be sent or the agent answered it with an error.
    PromptFailed {
        /// The chat concerned.
        chat_id: ChatId,
        /// A sentence for the user.
        message: String,
    },
    /// The agent process of this chat exited.
    AgentExited {
        /// The chat concerned.
        chat_id: ChatId,
        /// How the process ended, as a phrase (`exit code 3`).
        status: String,
        /// The agent's last stderr output.
        stderr_tail: String,
    },
    /// Something the user should know that belongs to no other event.
    Warning {
        /// The chat concerned, if any.
        #[serde(skip_serializing_if = "Option::is_none")]
        chat_id: Option<ChatId>,
        /// A sentence for the user.
        message: String,
    },
    /// The answer to `acp.list_sessions`.
    SessionsListed {
        /// The `request_id` of the request.
        request_id: String,
        /// The agent, as the plugin named it.
        agent_name: String,
        /// The agent's capabilities, when it started.
        #[serde(skip_serializing_if = "Option::is_none")]
        capabilities: Option<schema::AgentCapabilities>,
        /// Every session of `session/list`, newest first; `None` when the
        /// agent cannot list sessions or failed to.
        #[serde(skip_serializing_if = "Option::is_none")]
        sessions: Option<Vec<schema::SessionInfo>>,
        /// Why there is no list, as a sentence.
        #[serde(skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// The session deleted before listing, when the request asked for
        /// it and the agent deleted it.
        #[serde(skip_serializing_if = "Option::is_none")]
        deleted: Option<String>,
    },
    /// The agent of the chat logged out.
    LoggedOut {
        /// The chat concerned.
        chat_id: ChatId,
    },
    /// The answer to `acp.rewind` without a turn: the turns that can be
    /// rewound, oldest first (the picker's items).
    RewindTurns {
        /// The chat concerned.
        chat_id: ChatId,
        /// Each turn: number, the prompt's first line, when, files touched.
        turns: Vec<acp_client::edits::checkpoint::TurnInfo>,
    },
    /// The answer to `acp.rewind` with `preview`: what would change.
    RewindPreview {
        /// The chat concerned.
        chat_id: ChatId,
        /// The turn asked for.
        turn: u32,
        /// The files that would change (disk text now, text after).
        files: Vec<acp_client::RewindFile>,
        /// Why nothing can be shown (unknown turn, checkpoint too large).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The outcome of `acp.rewind` with a turn.
    Rewound {
        /// The chat concerned.
        chat_id: ChatId,
        /// The turn the workspace went back to before.
        turn: u32,
        /// Every file was restored.
        ok: bool,
        /// Why not, a sentence naming the fix.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Files given their text back.
        restored: Vec<String>,
        /// Files the agent created, removed.
        removed: Vec<String>,
        /// Files that could not be restored, each with why.
        failed: Vec<String>,
        /// The conversation up to the turn, for the first prompt of the
        /// session that continues the chat.
        #[serde(skip_serializing_if = "Option::is_none")]
        context: Option<String>,
        /// The chat's checkpoints after the rewind (JSON), for that
        /// session's `acp.open`.
        #[serde(skip_serializing_if = "Option::is_none")]
        checkpoints: Option<String>,
        /// The conversation goes on in a session the agent forked before
        /// the turn (`session/fork` at a session cursor); its
        /// `session_started` follows. False: the plugin opens a new one.
        forked: bool,
        /// Why the agent could not fork there, for the chat's line.
        #[serde(skip_serializing_if = "Option::is_none")]
        fork_note: Option<String>,
    },
    /// A file's edit review changed (agent edit recorded, hunk accepted or
    /// rejected, user edit taken in).
    ReviewChanged {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: String,
        /// `{path, status, hunks, added, removed, first_line?}`; `hunks` is
        /// 0 when nothing is left to review in the file.
        summary: FileSummary,
        /// The file's whole review now (absent: nothing left to review):
        /// all Lua draws, it never asks for a review.
        #[serde(skip_serializing_if = "Option::is_none")]
        review: Option<ReviewView>,
        /// Grows with every `review_changed` the backend sends: Lua keeps
        /// the newest review of each chat and file and ignores an older
        /// one (see `routes::next_review_revision`).
        revision: u64,
    },
    /// The user rejected the creation of a file: ask them, then send
    /// `acp.review_delete` to delete it.
    ReviewDeletePending {
        /// The chat concerned.
        chat_id: ChatId,
        /// Absolute path of the file.
        path: String,
    },
    /// The answer to `acp.agents_list`.
    AgentsListed {
        /// The `request_id` of the request.
        request_id: String,
        /// The registry's agents, sorted by name; `None` when the registry
        /// could not be loaded.
        agents: Option<Vec<RegistryListing>>,
        /// The installed agents, also those the registry no longer lists.
        installed: Vec<InstalledListing>,
        /// Which copy of the registry was read.
        origin: Option<registry::Origin>,
        /// When that copy was fetched (seconds since the Unix epoch).
        fetched_at: Option<u64>,
        /// Why there is no list, or why a copy was used, as a sentence.
        message: Option<String>,
    },
    /// A step of an agent install.
    AgentInstallProgress {
        /// The registry id.
        id: String,
        /// What is happening.
        message: String,
        /// Bytes downloaded so far, during a download.
        done: Option<u64>,
        /// Bytes to download, when known.
        total: Option<u64>,
    },
    /// An agent is installed (its `installed.json` is written).
    AgentInstalled {
        /// The registry id.
        id: String,
        /// Its display name.
        name: String,
        /// The installed version.
        version: String,
    },
    /// An agent install failed or was cancelled; nothing of it was kept.
    AgentInstallFailed {
        /// The registry id.
        id: String,
        /// A sentence for the user (the failing command and its output
        /// tail when a command failed).
        message: String,
        /// True when the user cancelled it.
        cancelled: bool,
        /// True when it was refused only because the registry gives no
        /// SHA-256 for the binary: ask the user, then install again with
        /// `allow_unverified`.
        unverified: bool,
    },
    /// The answer to `acp.agents_remove`.
    AgentRemoved {
        /// The registry id.
        id: String,
        /// True when it was removed.
        removed: bool,
        /// Why not, as a sentence.
        message: Option<String>,
    },
}

/// One agent of the registry in `agents_listed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RegistryListing {
    /// The registry id (the name to start it by).
    pub id: String,
    /// Display name.
    pub name: String,
    /// The registry's version.
    pub version: String,
    /// One line about it.
    pub description: String,
    /// Where to read about it.
    pub homepage: Option<String>,
    /// The distributions installable on this machine, best first; empty
    /// when none is.
    pub kinds: Vec<registry::DistributionKind>,
    /// The installed version, if any.
    pub installed_version: Option<String>,
    /// The registry's version is newer than the installed one.
    pub update: bool,
    /// An install of it is running.
    pub installing: bool,
    /// It would be installed from a binary the registry gives no SHA-256
    /// for: the download cannot be verified.
    pub unverified: bool,
}

/// One installed agent in `agents_listed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstalledListing {
    /// The registry id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// The installed version.
    pub version: String,
    /// How it was installed.
    pub kind: registry::DistributionKind,
}

/// An auth method as Lua gets it: the ACP method, and for a terminal
/// method that runs a program of its own rather than the agent's (an older
/// agent's `_meta["terminal-auth"]`, e.g. claude-code-acp) that program as
/// `command`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoginMethod {
    /// The method as the agent described it (normalized by acp-client).
    #[serde(flatten)]
    pub method: schema::AuthMethod,
    /// The program to run with the method's `args`, when not the agent's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
}

impl LoginMethod {
    /// Every method of an agent.
    pub fn all(methods: &[schema::AuthMethod]) -> Vec<Self> {
        methods
            .iter()
            .map(|m| LoginMethod {
                command: acp_client::connection::terminal_auth_command(m),
                method: m.clone(),
            })
            .collect()
    }
}

fn is_blank(tail: &Option<String>) -> bool {
    tail.as_deref().is_none_or(|t| t.trim().is_empty())
}

impl Event {
    /// The event's `type`.
    pub fn kind(&self) -> &'static str {
        match self {
            Event::SessionStarted { .. } => "session_started",
            Event::OpenFailed { .. } => "open_failed",
            Event::AuthRequired { .. } => "auth_required",
            Event::Session { .. } => "session",
            Event::PermissionRequest { .. } => "permission_request",
            Event::PermissionCancelled { .. } => "permission_cancelled",
            Event::PermissionAuto { .. } => "permission_auto",
            Event::ElicitationRequest { .. } => "elicitation_request",
            Event::ElicitationCancelled { .. } => "elicitation_cancelled",
            Event::ElicitationCompleted { .. } => "elicitation_completed",
            Event::Terminal { .. } => "terminal",
            Event::FileEdited { .. } => "file_edited",
            Event::TurnEnded { .. } => "turn_ended",
            Event::PromptFailed { .. } => "prompt_failed",
            Event::AgentExited { .. } => "agent_exited",
            Event::Warning { .. } => "warning",
            Event::SessionsListed { .. } => "sessions_listed",
            Event::LoggedOut { .. } => "logged_out",
            Event::RewindTurns { .. } => "rewind_turns",
            Event::RewindPreview { .. } => "rewind_preview",
            Event::Rewound { .. } => "rewound",
            Event::ReviewChanged { .. } => "review_changed",
            Event::ReviewDeletePending { .. } => "review_delete_pending",
            Event::AgentsListed { .. } => "agents_listed",
            Event::AgentInstallProgress { .. } => "agent_install_progress",
            Event::AgentInstalled { .. } => "agent_installed",
            Event::AgentInstallFailed { .. } => "agent_install_failed",
            Event::AgentRemoved { .. } => "agent_removed",
        }
    }

    /// The chat the event concerns, if any.
    pub fn chat_id(&self) -> Option<&ChatId> {
        match self {
            Event::SessionStarted { chat_id, .. }
            | Event::OpenFailed { chat_id, .. }
            | Event::AuthRequired { chat_id, .. }
            | Event::Session { chat_id, .. }
            | Event::PermissionRequest { chat_id, .. }
            | Event::PermissionCancelled { chat_id, .. }
            | Event::PermissionAuto { chat_id, .. }
            | Event::Terminal { chat_id, .. }
            | Event::FileEdited { chat_id, .. }
            | Event::TurnEnded { chat_id, .. }
            | Event::PromptFailed { chat_id, .. }
            | Event::AgentExited { chat_id, .. }
            | Event::LoggedOut { chat_id }
            | Event::RewindTurns { chat_id, .. }
            | Event::RewindPreview { chat_id, .. }
            | Event::Rewound { chat_id, .. }
            | Event::ReviewChanged { chat_id, .. }
            | Event::ReviewDeletePending { chat_id, .. } => Some(chat_id),
            Event::Warning { chat_id, .. }
            | Event::ElicitationRequest { chat_id, .. }
            | Event::ElicitationCancelled { chat_id, .. }
            | Event::ElicitationCompleted { chat_id, .. } => chat_id.as_ref(),
            Event::SessionsListed { .. }
            | Event::AgentsListed { .. }
            | Event::AgentInstallProgress { .. }
            | Event::AgentInstalled { .. }
            | Event::AgentInstallFailed { .. }
            | Event::AgentRemoved { .. } => None,
        }
    }

    /// The event as the msgpack map sent to Neovim: the one encoding.
    pub fn encode(&self) -> Value {
        wire::encode(self)
    }

    /// What [`encode`](Self::encode) sends, as JSON: the records of
    /// transcripts, the golden fixtures and test assertions.
    pub fn json_view(&self) -> serde_json::Value {
        crate::msgpack::to_json(&self.encode())
    }

    /// The streamed text this event carries: a `text_appended` of a plain
    /// text block (no annotations, no `_meta`).
    pub fn appended_text(&self) -> Option<&str> {
        match self {
            Event::Session {
                change: SessionChange::TextAppended { content, .. },
                ..
            } => content.as_plain_text(),
            _ => None,
        }
    }

    /// Merges `next` into `self` when Lua would render the pair exactly as
    /// `next` over `self` (doc/protocol.md): both of the same chat and
    ///
    /// - both `text_appended` of plain text blocks (only `type` and `text`)
    ///   to the same entry and message id, together at most
    ///   [`MAX_MERGED_TEXT`] bytes: the texts are joined;
    /// - `next` a `tool_call_changed` (the complete new state) of the tool
    ///   call that `self` added or changed: `self` takes the new state.
    ///
    /// Gives `next` back when it cannot be merged. The one merge rule: the
    /// queue, the batches and the transcripts all use it.
    pub fn merge(&mut self, next: Event) -> Option<Event> {
        let (
            Event::Session {
                chat_id: last_chat,
                change: last,
            },
            Event::Session {
                chat_id: next_chat,
                change: next_change,
            },
        ) = (&mut *self, &next)
        else {
            return Some(next);
        };
        if last_chat != next_chat {
            return Some(next);
        }
        match (last, next_change) {
            (
                SessionChange::ToolCallChanged {
                    index, tool_call, ..
                },
                SessionChange::ToolCallChanged {
                    index: next_index,
                    tool_call: state,
                    ..
                },
            ) if index == next_index => {
                *tool_call = state.clone();
                None
            }
            (
                SessionChange::EntryAdded {
                    index,
                    entry: entry @ Entry::ToolCall(_),
                    ..
                },
                SessionChange::ToolCallChanged {
                    index: next_index,
                    tool_call: state,
                    ..
                },
            ) if index == next_index => {
                *entry = Entry::ToolCall(state.clone());
                None
            }
            (
                SessionChange::TextAppended {
                    index,
                    content,
                    message_id,
                    ..
                },
                SessionChange::TextAppended {
                    index: next_index,
                    content: next_content,
                    message_id: next_id,
                    ..
                },
            ) if index == next_index && message_id == next_id => {
                let (Some(last_text), Some(next_text)) =
                    (content.as_plain_text_mut(), next_content.as_plain_text())
                else {
                    return Some(next);
                };
                if last_text.len() + next_text.len() > MAX_MERGED_TEXT {
                    return Some(next);
                }
                last_text.push_str(next_text);
                None
            }
            _ => Some(next),
        }
    }
}

/// A file's whole review as Lua draws it (`review_changed`'s `review`):
/// texts and hunks, lines without terminators.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewView {
    path: String,
    status: FileStatus,
    baseline: Option<String>,
    current: Option<String>,
    hunks: Vec<HunkView>,
}

/// One hunk of a [`ReviewView`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct HunkView {
    id: u64,
    old_start: usize,
    old_lines: Vec<String>,
    new_start: usize,
    new_lines: Vec<String>,
}

impl From<&FileReview> for ReviewView {
    fn from(review: &FileReview) -> Self {
        let lines = |ls: &[String]| -> Vec<String> {
            ls.iter().map(|l| strip_line_ending(l).to_owned()).collect()
        };
        Self {
            path: review.path.to_string_lossy().into_owned(),
            status: review.status,
            baseline: review.baseline.clone(),
            current: review.current.clone(),
            hunks: review
                .hunks
                .iter()
                .map(|h| HunkView {
                    id: h.id.get(),
                    old_start: h.old_start,
                    old_lines: lines(&h.old_lines),
                    new_start: h.new_start,
                    new_lines: lines(&h.new_lines),
                })
                .collect(),
        }
    }
}

/// What the backend holds of a file's sync (`acp.file_sync`'s answer): the
/// data-safety test compares it with the buffer after every step, and a bug
/// report can show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileSyncView {
    revision: u64,
    /// The buffer's text as last known, and its tick then (`acp.edits.fs.tick`).
    text: Option<String>,
    tick: Option<u64>,
    disk: Option<String>,
    pending: Option<String>,
}

impl From<acp_client::edits::buffer_sync::FileState> for FileSyncView {
    fn from(state: acp_client::edits::buffer_sync::FileState) -> Self {
        let (text, tick) = match state.buffer {
            Some(b) => (Some(b.text), Some(b.version)),
            None => (None, None),
        };
        Self {
            revision: state.revision,
            text: text.map(|t| t.to_string()),
            tick,
            disk: state.disk,
            pending: state.pending,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::msgpack;
    use acp_client::tools::terminal::TerminalExit;
    use serde_json::json;

    fn chat() -> ChatId {
        ChatId("c1".into())
    }

    #[test]
    fn every_event_has_type_and_chat_id() {
        let ev = Event::TurnEnded {
            chat_id: chat(),
            stop_reason: "end_turn".into(),
        };
        assert_eq!(
            ev.json_view(),
            json!({"type": "turn_ended", "chat_id": "c1", "stop_reason": "end_turn"})
        );
        let warning = Event::Warning {
            chat_id: None,
            message: "careful".into(),
        };
        assert_eq!(
            warning.json_view(),
            json!({"type": "warning", "message": "careful"})
        );
    }

    #[test]
    fn terminal_fields_are_flat_and_snake_case() {
        let ev = Event::Terminal {
            chat_id: chat(),
            terminal: TerminalEvent::Exited {
                session_id: "s1".into(),
                terminal_id: "t1".into(),
                exit_status: TerminalExit {
                    exit_code: Some(2),
                    signal: None,
                },
            },
        };
        assert_eq!(
            ev.json_view(),
            json!({"type": "terminal", "chat_id": "c1", "kind": "exited", "session_id": "s1",
                   "terminal_id": "t1", "exit_status": {"exit_code": 2}})
        );
    }

    #[test]
    fn open_failed_omits_an_empty_stderr_tail() {
        let ev = Event::OpenFailed {
            chat_id: chat(),
            message: "m".into(),
            stderr_tail: Some("  \n".into()),
        };
        assert!(ev.json_view().get("stderr_tail").is_none());
    }

    #[test]
    fn encode_is_a_string_keyed_map() {
        let ev = Event::PermissionCancelled {
            chat_id: chat(),
            request_id: PromptId(12),
        };
        let v = ev.encode();
        assert_eq!(
            msgpack::field(&v, "request_id").and_then(Value::as_u64),
            Some(12)
        );
        assert_eq!(
            msgpack::field(&v, "type").and_then(Value::as_str),
            Some("permission_cancelled")
        );
    }
}
