//! Serving the agent's messages: the session layer as the engine's
//! [`Handler`]. Requests are permission prompts, `fs/*` and `terminal/*`;
//! the notification is `session/update`.
//!
//! Each request runs in its own task (see [`crate::rpc::engine`]); this module
//! turns params into typed values once, checks them against the session's
//! workspace and the editor's capabilities, and calls the editor host or the
//! built-in disk/process implementations.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::edits::fs::{self, Workspace};
use crate::edits::host::{
    ClientEvent, FileEdit, ReadTextFile, WriteKind, WriteOutcome, WriteTextFile,
};
use crate::edits::review::ToolFacts;
use crate::error::{Error, Result};
use crate::policy::elicitation::ElicitationScope;
use crate::policy::permission::{
    OptionKind, PermissionDecision, PermissionOption, PermissionRequest, PermissionRequestId,
};
use crate::rpc::engine::{CloseReason, Handler};
use crate::rpc::methods;
use crate::rpc::{RequestId, RpcError};
use crate::schema;
use crate::serve::live::{unknown_session, LiveSessions};
use crate::session::update::{self, SessionId, SessionUpdate};
use crate::tools::terminal::{TerminalId, TerminalSpec};

mod asks;
mod elicitation;
#[cfg(test)]
mod reply_tests;

pub(crate) use elicitation::elicitation_capabilities;

impl Handler for LiveSessions {
    async fn request(
        self: Arc<Self>,
        method: String,
        params: Option<Box<RawValue>>,
    ) -> Result<Value, RpcError> {
        handle_request(&self, &method, params).await
    }

    fn notification(&self, method: &str, params: Option<&RawValue>) {
        match method {
            methods::SESSION_UPDATE => {
                let Some(params) = params else {
                    self.warn("the agent sent a `session/update` without params".into());
                    return;
                };
                if self.is_v2() {
                    match update::v2::decode_v2_notification(params.get(), &|sid, path| {
                        self.diff_base(sid, path)
                    }) {
                        Ok(n) => self.apply_v2(n),
                        Err(e) => self.warn(format!("ignoring a malformed `session/update`: {e}")),
                    }
                    return;
                }
                match update::decode_declined_session_notification(params) {
                    Ok(n) => self.apply_update(n),
                    Err(e) => self.warn(format!("ignoring a malformed `session/update`: {e}")),
                }
            }
            methods::ELICITATION_COMPLETE => elicitation::completed(self, params),
            // Extension notifications (`_` prefix; claude-agent-acp 0.101.0
            // sends `_auth/status_update`): nothing for the user, but logged
            // with their params to see what agents send.
            ext if ext.starts_with('_') => tracing::info!(
                params = params.map(RawValue::get).unwrap_or(""),
                "ignoring extension notification `{ext}`"
            ),
            // Unknown notifications are ignored, as the spec requires.
            other => tracing::debug!("ignoring notification `{other}`"),
        }
    }

    /// Streamed text and tool calls, decoded whole in one pass; any other
    /// `session/update` comes to [`notification`](Handler::notification).
    fn take_line(&self, line: &[u8]) -> bool {
        // The one-pass shapes are v1's; a v2 line goes to `notification`.
        if self.is_v2() {
            return false;
        }
        match update::decode_session_update_line(line) {
            Some(notification) => {
                self.apply_update(notification);
                true
            }
            None => false,
        }
    }

    fn warn(&self, message: String) {
        LiveSessions::warn(self, message);
    }

    fn closing(&self, _reason: &CloseReason) {
        self.cancel_permissions(|_| true);
        self.cancel_elicitations(|_| true);
    }

    fn answered(&self, id: &RequestId) {
        // Questions asked while serving this request are moot now.
        self.cancel_elicitations(
            |scope| matches!(scope, ElicitationScope::Request { request_id } if request_id == id),
        );
    }

    async fn input_ended(self: Arc<Self>, failure: Option<CloseReason>) -> CloseReason {
        LiveSessions::input_ended(&self, failure).await
    }

    async fn closed(self: Arc<Self>, reason: CloseReason, first: bool) {
        LiveSessions::closed(&self, reason, first).await
    }
}

/// Runs one agent request to completion and returns its reply.
async fn handle_request(
    shared: &Arc<LiveSessions>,
    method: &str,
    params: Option<Box<RawValue>>,
) -> Result<Value, RpcError> {
    let mut caps = shared.host().capabilities();
    if shared.is_v2() {
        // v2 has no client fs or terminal methods (none were advertised).
        caps.read_text_file = false;
        caps.write_text_file = false;
        caps.terminal = false;
    }
    let params = params.as_deref();
    let result = match method {
        methods::REQUEST_PERMISSION => request_permission(shared, params).await,
        methods::ELICITATION_CREATE if caps.elicitation_form || caps.elicitation_url => {
            elicitation::serve(shared, params).await
        }
        methods::FS_READ_TEXT_FILE if caps.read_text_file => read_text_file(shared, params).await,
        methods::FS_WRITE_TEXT_FILE if caps.write_text_file => {
            write_text_file(shared, params).await
        }
        methods::TERMINAL_CREATE if caps.terminal => terminal_create(shared, params).await,
        methods::TERMINAL_OUTPUT if caps.terminal => terminal_output(shared, params).await,
        methods::TERMINAL_WAIT_FOR_EXIT if caps.terminal => {
            terminal_wait_for_exit(shared, params).await
        }
        methods::TERMINAL_KILL if caps.terminal => terminal_kill(shared, params).await,
        methods::TERMINAL_RELEASE if caps.terminal => terminal_release(shared, params).await,
        // Unknown methods, and known ones we did not advertise (Testy sends
        // `terminal/create` regardless), get -32601.
        other => return Err(RpcError::method_not_found(other)),
    };
    result.map_err(|e| {
        tracing::debug!("agent request `{method}` failed: {e}");
        e.to_rpc_error()
    })
}

fn parse<T: DeserializeOwned>(method: &str, params: Option<&RawValue>) -> Result<T> {
    let text = params.map(RawValue::get).unwrap_or("null");
    serde_json::from_str(text).map_err(|e| Error::InvalidParams(format!("`{method}` params: {e}")))
}

// ---------------------------------------------------------------------------
// session/request_permission

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePermissionRequest {
    session_id: SessionId,
    tool_call: Value,
    options: Vec<WireOption>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireOption {
    option_id: String,
    #[serde(default)]
    name: String,
    // Kept as a string: an unknown kind must not reject the whole request.
    #[serde(default)]
    kind: String,
}

/// Removes a prompt from the pending map when its handler ends in any way,
/// and tells the editor it is gone when the client (not the editor) closed it.
struct PromptGuard<'a> {
    shared: &'a LiveSessions,
    id: PermissionRequestId,
    session_id: SessionId,
    answered_by_editor: bool,
}

impl Drop for PromptGuard<'_> {
    fn drop(&mut self) {
        self.shared.permission_settled(self.id);
        if !self.answered_by_editor {
            self.shared.emit(ClientEvent::PermissionCancelled {
                id: self.id,
                session_id: self.session_id.clone(),
            });
        }
    }
}

/// A v2 `session/request_permission`: the tool call is the subject, and the
/// prompt has a title of its own (claude-agent-acp 0.101.0 on v2).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireV2PermissionRequest {
    session_id: SessionId,
    #[serde(default)]
    title: String,
    #[serde(default)]
    subject: Option<WireV2Subject>,
    options: Vec<WireOption>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireV2Subject {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    tool_call: Option<Value>,
}

/// The one decode point of a permission request, v1 or v2.
fn decode_permission_request(
    shared: &LiveSessions,
    params: Option<&RawValue>,
) -> Result<WirePermissionRequest> {
    if !shared.is_v2() {
        return parse(methods::REQUEST_PERMISSION, params);
    }
    let wire: WireV2PermissionRequest = parse(methods::REQUEST_PERMISSION, params)?;
    let mut tool_call = match wire.subject {
        Some(WireV2Subject {
            kind,
            tool_call: Some(tool_call),
        }) if kind == "tool_call" => tool_call,
        // No tool call to point at: the prompt stands for itself, under an
        // id of its own that no update of the agent can touch.
        _ => asks::encode(&asks::untitled_permission(shared.next_permission_id()))?,
    };
    if let Some(obj) = tool_call.as_object_mut() {
        update::v2::clear_nulls(obj, &|path| shared.diff_base(&wire.session_id, path));
        let untitled = obj
            .get("title")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if untitled && !wire.title.is_empty() {
            obj.insert("title".into(), Value::String(wire.title));
        }
    }
    Ok(WirePermissionRequest {
        session_id: wire.session_id,
        tool_call,
        options: wire.options,
    })
}

async fn request_permission(
    shared: &Arc<LiveSessions>,
    params: Option<&RawValue>,
) -> Result<Value> {
    let wire = decode_permission_request(shared, params)?;
    let fields = update::decode_tool_call_fields(&wire.tool_call)?;
    let tool_call = record_tool_call(shared, &wire.session_id, &fields)?;
    // Snapshot the files the tool names before anyone can allow the edit.
    shared
        .review()
        .before_permission(&wire.session_id, ToolFacts::of_fields(&tool_call))
        .await;
    let mut options: Vec<PermissionOption> = wire
        .options
        .into_iter()
        .map(|o| PermissionOption {
            name: if o.name.is_empty() {
                o.option_id.clone()
            } else {
                o.name
            },
            option_id: o.option_id,
            kind: OptionKind::from_wire(&o.kind),
        })
        .collect();
    // An answer names one option by its id, so two options sharing an id
    // (say an `allow_always` and a `reject_once`, as a hostile agent sent)
    // make the answer ambiguous: the client could remember "always allow"
    // when the user rejected. Nothing the user picks can be told apart, so
    // the request is refused before anyone is asked.
    if let Some(dup) = duplicate_option_id(&options) {
        shared.warn(format!(
            "the agent asked for permission with two options sharing the id `{dup}`; the request was answered `cancelled` without asking you, because an answer could not say which option you chose"
        ));
        return decision_to_wire(&PermissionDecision::Cancelled);
    }
    // See `LiveSessions::check_always_refused` (gemini-cli in untrusted folders).
    if shared.refuses_always(&wire.session_id)
        && options.iter().any(|o| o.kind == OptionKind::AllowOnce)
    {
        options.retain(|o| o.kind != OptionKind::AllowAlways);
    }
    let request = PermissionRequest {
        id: shared.next_permission_id(),
        session_id: wire.session_id.clone(),
        tool_call,
        options,
    };

    let remembered = shared.remembered_decision(&request);
    if let Some(decision) = remembered {
        shared.emit(ClientEvent::PermissionAutoAnswered {
            request,
            decision: decision.clone(),
        });
        return decision_to_wire(&decision);
    }

    let decision = prompt_user(shared, &request).await;
    let decision = match decision {
        PermissionDecision::Selected { option_id } => {
            if let Some(chosen) = request.options.iter().find(|o| o.option_id == option_id) {
                shared.record_answer(&request, chosen);
                PermissionDecision::Selected { option_id }
            } else {
                shared.warn(format!(
                    "the editor chose option `{option_id}`, which the agent did not offer; answering `cancelled`"
                ));
                PermissionDecision::Cancelled
            }
        }
        PermissionDecision::Cancelled => PermissionDecision::Cancelled,
    };
    decision_to_wire(&decision)
}

/// Records a tool call the session does not know yet and returns it merged
/// with what the session knew. Some agents (gemini-cli) ask about a tool
/// call before announcing it: recorded, its later `tool_call_update`s have a
/// title, kind, locations and diff to update.
fn record_tool_call(
    shared: &Arc<LiveSessions>,
    session_id: &SessionId,
    fields: &update::ToolCallFields,
) -> Result<update::ToolCallFields> {
    let (tool_call, changes) = shared
        .with_state_mut(session_id, |state| {
            let changes = if state.tool_call(&fields.tool_call_id).is_none() {
                state.apply(SessionUpdate::ToolCall(fields.clone()))
            } else {
                Vec::new()
            };
            (state.merged_tool_call(fields), changes)
        })
        .ok_or_else(|| unknown_session(session_id))?;
    shared.emit_changes(session_id, changes);
    Ok(tool_call)
}

/// Shows a prompt to the editor and waits for its answer, or for the
/// prompt to be withdrawn (turn cancelled, agent gone): `Cancelled` then.
async fn prompt_user(
    shared: &Arc<LiveSessions>,
    request: &PermissionRequest,
) -> PermissionDecision {
    let cancel_rx = shared.pending_permission(request.id, request.session_id.clone());
    let mut guard = PromptGuard {
        shared,
        id: request.id,
        session_id: request.session_id.clone(),
        answered_by_editor: false,
    };
    tokio::select! {
        decision = shared.host().request_permission(request.clone()) => {
            guard.answered_by_editor = true;
            decision
        }
        _ = cancel_rx => PermissionDecision::Cancelled,
    }
}

/// The option ids of prompts the client raises itself.
const CLIENT_ALLOW: &str = "acp-client-allow";
const CLIENT_REJECT: &str = "acp-client-reject";

/// Asks the user about something the client itself holds needs consent
/// (not the agent: it may not have asked). Shown like an agent's prompt,
/// as the tool call `tool_call` (wire JSON), with "allow once" and "reject"
/// only; never answered from memory or auto-allow rules, never remembered.
/// `Ok(())` when the user allowed it, else [`Error::RefusedByUser`] with
/// `refused` as the sentence.
async fn ask_user(
    shared: &Arc<LiveSessions>,
    session_id: &SessionId,
    tool_call: schema::ToolCallUpdate,
    refused: String,
) -> Result<()> {
    // Through the one decode point of a tool call, like an agent's.
    let fields = update::decode_tool_call_fields(&asks::encode(&tool_call)?)?;
    let tool_call = record_tool_call(shared, session_id, &fields)?;
    let request = PermissionRequest {
        id: shared.next_permission_id(),
        session_id: session_id.clone(),
        tool_call,
        options: vec![
            PermissionOption {
                option_id: CLIENT_ALLOW.into(),
                name: "Allow once".into(),
                kind: OptionKind::AllowOnce,
            },
            PermissionOption {
                option_id: CLIENT_REJECT.into(),
                name: "Reject".into(),
                kind: OptionKind::RejectOnce,
            },
        ],
    };
    match prompt_user(shared, &request).await {
        PermissionDecision::Selected { option_id } if option_id == CLIENT_ALLOW => Ok(()),
        _ => Err(Error::RefusedByUser(refused)),
    }
}

/// The first option id offered twice, if any.
fn duplicate_option_id(options: &[PermissionOption]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    options
        .iter()
        .map(|o| o.option_id.as_str())
        .find(|id| !seen.insert(*id))
}

/// Whether a resolved path lies inside a `.git` directory (or is one).
fn in_git_dir(path: &Path) -> bool {
    path.components()
        .any(|c| c.as_os_str().eq_ignore_ascii_case(".git"))
}

fn decision_to_wire(decision: &PermissionDecision) -> Result<Value> {
    use crate::schema::{RequestPermissionOutcome, SelectedPermissionOutcome};
    let outcome = match decision {
        PermissionDecision::Selected { option_id } => {
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option_id.clone()))
        }
        PermissionDecision::Cancelled => RequestPermissionOutcome::Cancelled,
    };
    to_reply(&crate::schema::RequestPermissionResponse::new(outcome))
}

/// The result of one of the agent's requests, built from the schema crate's
/// type so that the field names are the schema's. Serializing these types
/// cannot fail (string keys, derived serializers); the error is reported
/// rather than unwrapped all the same.
fn to_reply<T: serde::Serialize>(reply: &T) -> Result<Value> {
    serde_json::to_value(reply)
        .map_err(|e| Error::InvalidParams(format!("the reply could not be encoded: {e}")))
}

// ---------------------------------------------------------------------------
// fs/*

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireRead {
    session_id: SessionId,
    path: PathBuf,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireWrite {
    session_id: SessionId,
    path: PathBuf,
    content: String,
}

async fn read_text_file(shared: &Arc<LiveSessions>, params: Option<&RawValue>) -> Result<Value> {
    let wire: WireRead = parse(methods::FS_READ_TEXT_FILE, params)?;
    let content = read_file(shared, wire.session_id, &wire.path, wire.line, wire.limit).await?;
    to_reply(&crate::schema::ReadTextFileResponse::new(content))
}

/// A read of `path` for the agent of `session_id`: the sandbox check, then
/// the editor's buffer (unsaved text included) or the disk. Shared by
/// `fs/read_text_file` and the editor's MCP tools ([`crate::serve::editor_tools`]).
pub(crate) async fn read_file(
    shared: &Arc<LiveSessions>,
    session_id: SessionId,
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String> {
    let (workspace, _) = shared.workspace(&session_id)?;
    let path = workspace.resolve(path)?;
    let request = ReadTextFile {
        session_id,
        path,
        line,
        limit,
    };
    let _permit = shared.read_permit().await;
    let buffered = match shared.host().buffer_sync() {
        Some(sync) => sync.read(&request).await?,
        None => None,
    };
    let content = match buffered {
        Some(text) => text,
        None => {
            let read = fs::read_text_file(
                &request.path,
                request.line,
                request.limit,
                shared.options().max_read_bytes,
            )
            .await;
            match read {
                // The path passed the workspace check above; see
                // `ConnectionOptions::missing_file_read_empty` (gemini-cli).
                Err(Error::NotFound(_)) if shared.options().missing_file_read_empty => {
                    tracing::debug!(path = %request.path.display(), "missing file read as empty (quirk)");
                    String::new()
                }
                other => other?,
            }
        }
    };
    Ok(content)
}

async fn write_text_file(shared: &Arc<LiveSessions>, params: Option<&RawValue>) -> Result<Value> {
    let wire: WireWrite = parse(methods::FS_WRITE_TEXT_FILE, params)?;
    write_file(shared, wire.session_id, &wire.path, wire.content).await?;
    to_reply(&crate::schema::WriteTextFileResponse::new())
}

/// A write of `content` to `path` for the agent of `session_id`: the
/// sandbox check, then the editor's buffer sync (merged into a modified
/// buffer) or the disk, recorded for review as the agent's edit. Shared by
/// `fs/write_text_file` and the editor's MCP tools ([`crate::serve::editor_tools`]).
pub(crate) async fn write_file(
    shared: &Arc<LiveSessions>,
    session_id: SessionId,
    path: &Path,
    content: String,
) -> Result<()> {
    let (workspace, _) = shared.workspace(&session_id)?;
    let path = workspace.resolve(path)?;
    if in_git_dir(&path) {
        // `.git/hooks/*` and `.git/config` (core.fsmonitor, aliases) run
        // code at the user's next git command: a write there is a command
        // the user did not see, so it is asked for first, as Zed asks before
        // an agent edits its own settings files.
        let shown = path.display().to_string();
        ask_user(
            shared,
            &session_id,
            asks::git_write(shared.next_permission_id(), &shown),
            format!("the user did not allow writing `{shown}` inside .git; ask them to make this change themselves"),
        )
        .await?;
    }
    let request = WriteTextFile {
        session_id,
        path,
        content,
        kind: WriteKind::Agent,
    };
    // The directories this write creates go with the file when the user
    // rejects its creation.
    let missing = fs::missing_dirs(&request.path);
    let mut user_text = None;
    let mut merged: Option<String> = None;
    let outcome = match shared.host().buffer_sync() {
        Some(sync) => sync.write(&request).await?,
        None => WriteOutcome::Disk,
    };
    let old_content = match &outcome {
        WriteOutcome::Saved { old_content } => old_content.clone(),
        WriteOutcome::Disk => fs::write_text_file_atomic(&request.path, &request.content).await?,
        WriteOutcome::SavedMerged { old_content, text }
        | WriteOutcome::DiskMerged { old_content, text } => {
            if matches!(outcome, WriteOutcome::DiskMerged { .. }) {
                fs::write_text_file_atomic(&request.path, text).await?;
            }
            // The file holds the merge: its change from the user's saved
            // text is the agent's (the user's lines it never saw are in
            // both), recorded like any write.
            merged = Some(text.clone());
            old_content.clone()
        }
        WriteOutcome::MergedUnsaved { seen, .. } | WriteOutcome::Waiting { seen } => {
            let old = fs::write_text_file_atomic(&request.path, &request.content).await?;
            if let WriteOutcome::MergedUnsaved { buffer, .. } = &outcome {
                user_text = Some((buffer.clone(), false));
            }
            // Its change is the difference from what it saw (the unsaved
            // buffer claude-code-acp reads and writes back), not from the
            // disk: the user's unsaved lines there are the user's.
            old.map(|disk| seen.clone().unwrap_or(disk))
        }
    };
    let new_content = merged.unwrap_or(request.content);
    if user_text.is_none() {
        // The file holds the write: the other chats' reviews learn it as
        // not their agents'. (A merge left unsaved in a buffer reaches them
        // as the editor reports the buffer.) First, so that the writer's
        // review is the last one changed: the editor shows that one.
        shared
            .review()
            .record_other_write(&request.session_id, &request.path, &new_content);
    }
    shared.review().record_fs_write(
        &request.session_id,
        &workspace,
        &request.path,
        old_content.as_deref(),
        &new_content,
    );
    if let Some((text, on_disk)) = user_text {
        // The buffer holds the merge: what differs from the agent's text
        // there is the user's, so a reject never takes it.
        shared
            .review()
            .record_user_edit(&request.session_id, &request.path, Some(&text), on_disk);
    }
    shared
        .review()
        .record_made_dirs(&request.session_id, &workspace, missing);
    if let Some(sync) = shared.host().buffer_sync() {
        // Before the event: an editor that drew it would otherwise see the
        // buffer's merge before the write it waited for.
        sync.write_recorded(
            &request.session_id,
            &request.path,
            matches!(outcome, WriteOutcome::Waiting { .. }),
        );
    }
    shared.emit(ClientEvent::FileEdited(FileEdit {
        session_id: request.session_id,
        path: request.path,
        old_content,
        new_content,
        applied: outcome,
    }));
    Ok(())
}

// ---------------------------------------------------------------------------
// terminal/*

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireEnv {
    name: String,
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCreate {
    session_id: SessionId,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<WireEnv>,
    #[serde(default)]
    cwd: Option<PathBuf>,
    #[serde(default)]
    output_byte_limit: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireTerminal {
    session_id: SessionId,
    terminal_id: String,
}

fn terminal_cwd(workspace: &Workspace, cwd: Option<&Path>, session_cwd: &Path) -> Result<PathBuf> {
    match cwd {
        Some(dir) => workspace
            .resolve(dir)
            .map(crate::path::CanonicalPath::into_path_buf),
        None => Ok(session_cwd.to_path_buf()),
    }
}

async fn terminal_create(shared: &Arc<LiveSessions>, params: Option<&RawValue>) -> Result<Value> {
    let wire: WireCreate = parse(methods::TERMINAL_CREATE, params)?;
    if let Some(e) = wire
        .env
        .iter()
        .find(|e| crate::options::env_denied(&e.name, &shared.options().denied_env))
    {
        return Err(Error::InvalidParams(format!(
            "the agent may not set `{}`: loader variables make every program the command starts load other code; run the command without it (the user can allow it with ConnectionOptions::denied_env)",
            e.name
        )));
    }
    let (workspace, session_cwd) = shared.workspace(&wire.session_id)?;
    let cwd = terminal_cwd(&workspace, wire.cwd.as_deref(), &session_cwd)?;
    let mut spec = TerminalSpec {
        session_id: wire.session_id,
        command: wire.command,
        args: wire.args,
        env: wire.env.into_iter().map(|e| (e.name, e.value)).collect(),
        cwd,
        output_byte_limit: wire.output_byte_limit,
    };
    spec.pin_env(&shared.options().pinned_env);
    if shared.options().ask_before_terminal {
        let line = spec.command_line();
        ask_user(
            shared,
            &spec.session_id,
            asks::terminal_run(shared.next_permission_id(), &line, &spec.cwd),
            format!("the user did not allow running `{line}`"),
        )
        .await?;
    }
    let id = shared.terminals().create(spec).await?;
    to_reply(&crate::schema::CreateTerminalResponse::new(id))
}

fn terminal_id(
    shared: &LiveSessions,
    method: &str,
    params: Option<&RawValue>,
) -> Result<TerminalId> {
    let wire: WireTerminal = parse(method, params)?;
    if !shared.is_open(&wire.session_id) {
        return Err(unknown_session(&wire.session_id));
    }
    Ok(TerminalId::from(wire.terminal_id))
}

async fn terminal_output(shared: &Arc<LiveSessions>, params: Option<&RawValue>) -> Result<Value> {
    let id = terminal_id(shared, methods::TERMINAL_OUTPUT, params)?;
    let out = shared.terminals().output(&id).await?;
    to_reply(&out)
}

async fn terminal_wait_for_exit(
    shared: &Arc<LiveSessions>,
    params: Option<&RawValue>,
) -> Result<Value> {
    let id = terminal_id(shared, methods::TERMINAL_WAIT_FOR_EXIT, params)?;
    let exit = shared.terminals().wait_for_exit(&id).await?;
    to_reply(&exit)
}

async fn terminal_kill(shared: &Arc<LiveSessions>, params: Option<&RawValue>) -> Result<Value> {
    let id = terminal_id(shared, methods::TERMINAL_KILL, params)?;
    shared.terminals().kill(&id).await?;
    to_reply(&crate::schema::KillTerminalResponse::new())
}

async fn terminal_release(shared: &Arc<LiveSessions>, params: Option<&RawValue>) -> Result<Value> {
    let id = terminal_id(shared, methods::TERMINAL_RELEASE, params)?;
    shared.terminals().release(&id).await?;
    to_reply(&crate::schema::ReleaseTerminalResponse::new())
}
