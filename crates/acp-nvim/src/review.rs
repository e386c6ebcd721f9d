//! Edit review for the plugin: the decisions (accept, reject, delete, user
//! edits) applied through acp-client, and the diagnostic `acp.file_sync`.
//!
//! acp-client tracks the edits (`Connection::review_*`); this module only
//! turns the plugin's commands into those calls and their results into the
//! shapes of `doc/protocol.md`. Decisions run one after the other on one
//! task, in the order Lua sent them: a user edit sent before a reject is in
//! the review when the reject is computed. A reject writes through the
//! agent's host (`acp.edits.fs.apply` in Lua), so the task may wait for Lua; the
//! query never does, it is answered from the buffer sync at once. Lua asks
//! no review: `review_changed` carries each one, and a decision on a whole
//! file or on everything is resolved here, for every chat it concerns.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use acp_client::edits::buffer_sync::OnDisk;
use acp_client::edits::hunks::RejectOutcome;
use acp_client::path::CanonicalPath;
use acp_client::session::update::SessionId;
use rmpv::Value;

use crate::agents::{Agent, Agents};
use crate::batcher::EventQueue;
use crate::command::{ChatId, ReviewCommand, ReviewTarget};
use crate::protocol::{wire, Event, FileSyncView};
use crate::review_queue::{Decisions, Job, MergedBuffer};

/// Answers `acp.file_sync`: what the buffer sync holds of a file (nil for
/// a chat without an open session).
pub fn query(agents: &Agents, cmd: &ReviewCommand) -> Value {
    match cmd {
        ReviewCommand::Sync { chat_id, path } => agents
            .find_chat(chat_id)
            .and_then(|(agent, _)| agent.host.file_state(&crate::host::resolve(path)?))
            .map_or(Value::Nil, |state| wire::encode(&FileSyncView::from(state))),
        other => {
            tracing::warn!(command = other.name(), "not a review query");
            Value::Nil
        }
    }
}

/// Starts the review task on `decisions`' queue (needs a tokio runtime);
/// nothing when it runs already.
pub fn start(decisions: &Decisions, agents: Arc<Agents>, events: EventQueue) {
    let Some(mut rx) = decisions.take_receiver() else {
        return;
    };
    tokio::spawn(async move {
        while let Some(job) = rx.recv().await {
            match job {
                Job::Decide(cmd) => decide(&agents, &events, cmd).await,
                Job::Query(cmd, answer) => {
                    // The asker may have given up (timeout): nothing to do.
                    let _ = answer.send(query(&agents, &cmd));
                }
                Job::Merged(merged) => record_merge(&agents, merged).await,
            }
        }
    });
}

/// Applies one decision; failures become a `warning` of the chat. A
/// decision that names no chat is applied for every chat whose review holds
/// its target.
pub async fn decide(agents: &Agents, events: &EventQueue, cmd: ReviewCommand) {
    let name = cmd.name();
    let Some(chat) = cmd.chat_id().cloned() else {
        return decide_every_chat(agents, events, cmd).await;
    };
    let Some((agent, session)) = agents.find_chat(&chat) else {
        events.push(Event::Warning {
            message: format!(
                "chat {chat} has no open session, so its edits cannot be reviewed any more ({name})"
            ),
            chat_id: Some(chat),
        });
        return;
    };
    let result = match cmd {
        ReviewCommand::Accept { target, .. } => accept(&agent, &session, target).await,
        ReviewCommand::Reject { target, .. } => {
            reject(&agent, &session, &chat, events, target).await
        }
        ReviewCommand::Delete { path, .. } => agent.conn.review(&session).delete_file(&path).await,
        ReviewCommand::UserEdit {
            path,
            content,
            accept_lines,
            tick,
            disk,
            ..
        } => user_edit(&agent, &session, &path, content, tick, accept_lines, disk).await,
        ReviewCommand::Sync { .. } => Ok(()),
    };
    if let Err(e) = result {
        tracing::info!(%chat, command = name, "review decision failed: {e}");
        events.push(Event::Warning {
            chat_id: Some(chat),
            message: format!("review: {e}"),
        });
    }
}

/// `:Acp accept file`, `:Acp reject all`: the decision for every chat
/// whose review holds the file (every chat, for all), as the backend has
/// the reviews now. Lua's copy of them (the `review_changed` it was sent)
/// can lag: a file's decision then told no chat and left the agent's newer
/// hunks under review (data-safety seed 537081754, case 9).
async fn decide_every_chat(agents: &Agents, events: &EventQueue, cmd: ReviewCommand) {
    let (accepting, target) = match cmd {
        ReviewCommand::Accept { target, .. } => (true, target),
        ReviewCommand::Reject { target, .. } => (false, target),
        other => {
            tracing::warn!(command = other.name(), "a review command without a chat");
            return;
        }
    };
    for agent in agents.all() {
        for chat in agent.host.chats() {
            let Some(session) = agent.host.session_of(&chat) else {
                continue;
            };
            // Hunk ids are a chat's: a decision without a chat names a
            // file or all (command::review refuses hunks without one).
            if let ReviewTarget::File { path } = &target {
                if !agent.conn.review(&session).contains(path) {
                    continue;
                }
            }
            let target = target.clone();
            let cmd = if accepting {
                ReviewCommand::Accept {
                    chat_id: Some(chat),
                    target,
                }
            } else {
                ReviewCommand::Reject {
                    chat_id: Some(chat),
                    target,
                }
            };
            Box::pin(decide(agents, events, cmd)).await;
        }
    }
}

/// The files a decision of all leaves out, keyed as the review keys its
/// files (Lua names them as its buffers do, which may not resolve symlinks
/// as the review's paths do): resolved once, by the one normaliser (a path
/// that does not resolve names no reviewed file).
fn left_out(except: Vec<PathBuf>) -> Vec<CanonicalPath> {
    except
        .iter()
        .filter_map(|p| crate::host::resolve(p))
        .collect()
}

async fn accept(
    agent: &Agent,
    session: &SessionId,
    target: ReviewTarget,
) -> acp_client::Result<()> {
    let conn = &agent.conn;
    match target {
        ReviewTarget::Hunks { path, ids } => {
            for id in ids {
                conn.review(session).accept_hunk(&path, id)?;
            }
            Ok(())
        }
        ReviewTarget::File { path } => conn.review(session).accept_file(&path),
        ReviewTarget::All { except } if except.is_empty() => {
            conn.review(session).accept_all().map(drop)
        }
        ReviewTarget::All { except } => {
            let except = left_out(except);
            for file in conn.review(session).files() {
                if !except.contains(&file.path) {
                    conn.review(session).accept_file(&file.path)?;
                }
            }
            Ok(())
        }
    }
}

async fn reject(
    agent: &Agent,
    session: &SessionId,
    chat: &ChatId,
    events: &EventQueue,
    target: ReviewTarget,
) -> acp_client::Result<()> {
    let conn = &agent.conn;
    let mut deletes = Vec::new();
    match target {
        ReviewTarget::Hunks { path, ids } => {
            for id in ids {
                if conn.review(session).reject_hunk(&path, id).await? == RejectOutcome::Delete {
                    deletes.push(path.clone());
                }
            }
        }
        ReviewTarget::File { path } => {
            if conn.review(session).reject_file(&path).await? == RejectOutcome::Delete {
                deletes.push(path);
            }
        }
        ReviewTarget::All { except } if except.is_empty() => {
            for r in conn.review(session).reject_all().await? {
                if r.outcome == RejectOutcome::Delete {
                    deletes.push(r.path.into());
                }
            }
        }
        ReviewTarget::All { except } => {
            let except = left_out(except);
            for file in conn.review(session).files() {
                if except.contains(&file.path) {
                    continue;
                }
                if conn.review(session).reject_file(&file.path).await? == RejectOutcome::Delete {
                    deletes.push(file.path.into());
                }
            }
        }
    }
    for path in deletes {
        events.push(Event::ReviewDeletePending {
            chat_id: chat.clone(),
            path: path.to_string_lossy().into_owned(),
        });
    }
    Ok(())
}

/// A buffer took the merge of an agent's disk edit into its unsaved text:
/// every open chat's review records the merged text as the user's edit, as
/// Lua's report of the buffer would (the agent's lines in it are the
/// disk's, so they stay the agent's hunk; the user's unsaved lines are
/// theirs). The backend made the merge and Neovim answered its tick, so
/// Lua need not send the text back (issue 24: one crossing fewer, and the
/// review query its report made the refresh ask). In the review task,
/// in order with Lua's reports: a report of a newer tick processed first
/// makes this one outdated, and it is dropped (`user_reported`). A chat
/// whose review never had the file records nothing.
async fn record_merge(agents: &Agents, merged: MergedBuffer) {
    let all = agents.all();
    // The merge is reported from inside the instruction's call, before the
    // buffer sync took its answer: until then the agent's disk text still
    // counts as waiting for the buffer, and the report would not be
    // recorded (`user_reported`). Found by test_e2e_review_changes under
    // load: the merge with conflict blocks was missing from the review, so
    // resolving them changed nothing there and the changes view kept them.
    for agent in &all {
        agent.host.disk_synced().await;
    }
    for agent in all {
        for chat in agent.host.chats() {
            let Some(session) = agent.host.session_of(&chat) else {
                continue;
            };
            let result = user_edit(
                &agent,
                &session,
                &merged.path,
                Some(merged.text.to_string()),
                Some(merged.tick),
                None,
                OnDisk::No,
            )
            .await;
            if let Err(e) = result {
                tracing::debug!(%chat, path = %merged.path.display(), "merged buffer not recorded: {e}");
            }
        }
    }
}

/// The user's edit of a reviewed buffer: the buffer's state for the sync,
/// and the user's text for review. While the agent's disk edit waits for
/// this buffer, the report is not the user's edit of the file's text (it
/// lacks the agent's change); Lua reports again once it is merged.
async fn user_edit(
    agent: &Agent,
    session: &SessionId,
    path: &Path,
    content: Option<String>,
    tick: Option<u64>,
    accept_lines: Option<(usize, usize)>,
    disk: OnDisk,
) -> acp_client::Result<()> {
    // One copy of the text, shared by the sync and review.
    let content: Option<Arc<str>> = content.map(Into::into);
    let record = match (&content, tick, crate::host::resolve(path)) {
        (Some(text), Some(tick), Some(key)) => {
            agent
                .host
                .buffer_reported(&key, text.clone(), tick, disk)
                .await
        }
        _ => disk != OnDisk::Read,
    };
    if !record {
        return Ok(());
    }
    agent
        .conn
        .review(session)
        .record_user_edit(path, content.as_deref(), disk != OnDisk::No)?;
    match accept_lines {
        Some((start, end)) => agent.conn.review(session).accept_lines(path, start, end),
        None => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::msgpack;
    use crate::protocol::ReviewView;
    use acp_client::edits::hunks::EditTracker;
    use serde_json::json;

    #[test]
    fn review_json_strips_terminators_and_keeps_ids() {
        let mut t = EditTracker::new();
        let p = &CanonicalPath::resolve(Path::new("/w/a.txt")).unwrap();
        t.record_write(p, Some("a\nb\nc\n"), "a\nB\r\nc\nd\n");
        let review = t.review(p).unwrap();
        let j = msgpack::to_json(&wire::encode(&ReviewView::from(&review)));
        assert_eq!(j["status"], "modified");
        assert_eq!(j["baseline"], "a\nb\nc\n");
        assert_eq!(j["hunks"][0]["old_start"], 1);
        assert_eq!(j["hunks"][0]["old_lines"], json!(["b"]));
        assert_eq!(j["hunks"][0]["new_lines"], json!(["B"]));
        assert_eq!(j["hunks"][0]["id"], review.hunks[0].id.get());
        assert_eq!(j["hunks"][1]["new_start"], 3);
        let s = msgpack::to_json(&wire::encode(&t.summary(p).unwrap()));
        assert_eq!(
            s,
            json!({"path": "/w/a.txt", "status": "modified", "hunks": 2, "added": 2, "removed": 1, "first_line": 1})
        );
    }
}
