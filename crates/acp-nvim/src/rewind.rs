//! `acp.rewind` for one chat: the list of turns for the picker, the
//! preview, and the rewind itself (acp-client's `Review::rewind`, whose
//! restores reach buffers through the host's buffer sync like a reject's),
//! answered as `rewind_turns`, `rewind_preview` and `rewound`.
//!
//! The conversation goes back too, in Lua: the `rewound` event carries the
//! chat's checkpoints after the rewind and the conversation before the
//! turn, and the plugin opens the session that continues the chat with
//! them (the context goes with its first prompt).

use std::fmt::Write as _;

use acp_client::edits::checkpoint::{Checkpoints, TurnNumber};
use acp_client::session::update::SessionId;
use acp_client::session::Entry;

use crate::agents::Agent;
use crate::batcher::EventQueue;
use crate::command::{ChatId, OpenChat};
use crate::protocol::Event;

/// Most bytes of conversation handed to the next session: the newest part
/// is kept (agents take a first prompt of this size; a longer one would eat
/// their context window).
const CONTEXT_MAX_BYTES: usize = 96 * 1024;

/// Largest saved checkpoints file read back (the store's own bound, with
/// room for JSON escapes).
const SAVED_MAX_BYTES: u64 = 2 * acp_client::edits::checkpoint::TOTAL_MAX_BYTES as u64;

/// Where a chat's checkpoints are saved: beside its session's transcript,
/// so a reopened session can still rewind the files it changed.
pub(crate) fn saved_path(transcript: &std::path::Path) -> std::path::PathBuf {
    transcript.with_extension("checkpoints.json")
}

/// Where the session's checkpoints are saved (chats with a transcript).
pub(crate) fn checkpoint_file(
    agent: &Agent,
    open: &OpenChat,
    session: &SessionId,
) -> Option<std::path::PathBuf> {
    open.transcript_dir.as_ref().map(|dir| {
        saved_path(&crate::transcript::path_for(
            dir,
            &agent.name,
            &session.to_string(),
        ))
    })
}

/// The session continues its chat: it adopts the chat's checkpoints (handed
/// over after a rewind, or saved beside a reopened session's transcript)
/// and numbers its next turn after every turn the chat had, the prompts a
/// loaded session replayed included. Returns the chat's turns before the
/// session's first prompt. The backend owns the turn numbers: the plugin
/// used to count the prompts it drew, and a loaded session whose
/// checkpoints were not saved numbered them from 1 here, so a rewind of a
/// turn the plugin showed was "no turn N".
pub(crate) fn continue_turns(
    agent: &Agent,
    open: &OpenChat,
    session: &SessionId,
    events: &EventQueue,
) -> u32 {
    let chat = &open.chat_id;
    let reopened = open.load_session_id.is_some() || open.resume_session_id.is_some();
    let saved = match (&open.checkpoints, checkpoint_file(agent, open, session)) {
        (None, Some(file)) if reopened => load(&file),
        _ => None,
    };
    let json = open.checkpoints.as_ref().or(saved.as_ref());
    let mut store = match json.map(|j| Checkpoints::from_json(j)) {
        Some(Ok(store)) => Some(store),
        Some(Err(e)) => {
            events.push(Event::Warning {
                chat_id: Some(chat.clone()),
                message: format!(
                    "the saved checkpoints of this chat could not be read ({e}); earlier turns cannot be rewound"
                ),
            });
            None
        }
        None => None,
    };
    let replayed = agent
        .conn
        .with_session(session, |s| {
            s.entries()
                .iter()
                .filter(|e| matches!(e, Entry::UserMessage(_)))
                .count()
        })
        .unwrap_or(0);
    let replayed = u32::try_from(replayed).unwrap_or(u32::MAX);
    if replayed > 0 {
        store
            .get_or_insert_with(Checkpoints::new)
            .continue_after(replayed);
    }
    let Some(store) = store else {
        return 0;
    };
    let next = store.next_turn().get();
    if let Err(e) = agent.conn.review(session).adopt_checkpoints(store) {
        tracing::warn!(%chat, "checkpoints not adopted: {e}");
    }
    next.saturating_sub(1).saturating_sub(replayed)
}

/// Saves the session's checkpoints once its worker recorded the turn's
/// last edits. A failure is logged: the chat goes on without them.
pub(crate) async fn save(agent: &Agent, session: &SessionId, path: &std::path::Path) {
    let review = agent.conn.review(session);
    review.settled().await;
    if review.turns().is_empty() {
        return;
    }
    let json = review.checkpoints().to_json();
    if let Err(e) = acp_client::edits::fs::write_text_file_atomic(path, &json).await {
        tracing::warn!(path = %path.display(), "could not save the checkpoints: {e}");
    }
}

/// The checkpoints saved for a session, if any (a file too large or
/// unreadable is skipped; its content is checked when adopted).
pub(crate) fn load(path: &std::path::Path) -> Option<String> {
    let meta = std::fs::metadata(path).ok()?;
    if meta.len() > SAVED_MAX_BYTES {
        tracing::warn!(path = %path.display(), "saved checkpoints too large; not read");
        return None;
    }
    std::fs::read_to_string(path).ok()
}

/// What the rewind needs of its chat.
pub(crate) struct Chat<'a> {
    pub(crate) id: &'a ChatId,
    /// How the chat's session was opened (a fork gets the same settings).
    pub(crate) open: &'a OpenChat,
    pub(crate) agent: &'a Agent,
    pub(crate) session: &'a SessionId,
    pub(crate) events: &'a EventQueue,
    /// The chat's turns before this session's first.
    pub(crate) turn_base: u32,
}

/// Lists, previews or rewinds; the outcome is an event. Returns the session
/// the agent forked before the turn, which the chat goes on in.
pub(crate) async fn run(
    chat: Chat<'_>,
    turn: Option<u32>,
    preview: bool,
) -> Option<acp_client::SessionStarted> {
    let review = chat.agent.conn.review(chat.session);
    let Some(turn) = turn else {
        review.settled().await;
        chat.events.push(Event::RewindTurns {
            chat_id: chat.id.clone(),
            turns: review.turns(),
        });
        return None;
    };
    let number = TurnNumber::from(turn);
    if preview {
        let event = match review.rewind_plan(number).await {
            Ok(plan) => Event::RewindPreview {
                chat_id: chat.id.clone(),
                turn,
                files: plan.files,
                reason: None,
            },
            Err(e) => Event::RewindPreview {
                chat_id: chat.id.clone(),
                turn,
                files: Vec::new(),
                reason: Some(e.to_string()),
            },
        };
        chat.events.push(event);
        return None;
    }
    // Read before the rewind: the conversation up to the turn.
    let context = chat
        .agent
        .conn
        .with_session(chat.session, |s| {
            conversation_before(s.entries(), turn.saturating_sub(chat.turn_base))
        })
        .flatten();
    let show = |p: &std::path::Path| p.to_string_lossy().into_owned();
    let mut forked = None;
    let event = match review.rewind(number).await {
        Ok(done) => {
            let ok = done.failed.is_empty();
            let mut fork_note = None;
            if ok {
                match fork(&chat, turn).await {
                    Ok(started) => forked = Some(started),
                    Err(why) => fork_note = Some(why),
                }
            }
            Event::Rewound {
                forked: forked.is_some(),
                fork_note,
                chat_id: chat.id.clone(),
                turn,
                ok,
                reason: (!ok).then(|| {
                    format!(
                        "{} file(s) could not be restored and keep their text; fix what is named and run :Acp rewind {turn} again",
                        done.failed.len()
                    )
                }),
                restored: done.restored.iter().map(|p| show(p)).collect(),
                removed: done.removed.iter().map(|p| show(p)).collect(),
                failed: done
                    .failed
                    .iter()
                    .map(|(p, why)| format!("{}: {why}", show(p)))
                    .collect(),
                context: (ok && forked.is_none()).then_some(context).flatten(),
                checkpoints: ok.then(|| review.checkpoints().to_json()),
            }
        }
        Err(e) => Event::Rewound {
            chat_id: chat.id.clone(),
            turn,
            ok: false,
            reason: Some(e.to_string()),
            restored: Vec::new(),
            removed: Vec::new(),
            failed: Vec::new(),
            context: None,
            checkpoints: None,
            forked: false,
            fork_note: None,
        },
    };
    chat.events.push(event);
    forked
}

/// Forks the chat's session right before `turn` when the agent offers a
/// session cursor there; else why not, for the chat's line.
async fn fork(chat: &Chat<'_>, turn: u32) -> Result<acp_client::SessionStarted, String> {
    let conn = &chat.agent.conn;
    if !conn.can_fork() {
        return Err("the agent does not offer session/fork".to_owned());
    }
    let prompt = turn.saturating_sub(chat.turn_base);
    if prompt == 0 {
        return Err(format!(
            "turn {turn} was in an earlier session of this chat, which cannot be forked from this one"
        ));
    }
    let cursor = conn
        .with_session(chat.session, |s| {
            s.fork_cursor_before_prompt(usize::try_from(prompt).unwrap_or(usize::MAX))
        })
        .flatten();
    let Some(cursor) = cursor else {
        // claude-agent-acp 0.101.0 advertises `sessionCapabilities.fork`
        // but sends no `cursor_update`: it forks a whole session (or at a
        // fork point in `_meta.jetbrains.air.fork`, private to JetBrains'
        // client, which this client does not speak). A whole fork would
        // keep the rewound turns in the agent's memory, so no fork then.
        return Err(format!(
            "the agent can fork only the whole session (it named no session cursor before turn {turn}), which would keep the rewound turns"
        ));
    };
    let info = chat.agent.ready().await?;
    // The servers it cannot take were named when the chat opened.
    let (params, _) = crate::session_settings::session_params(chat.open, &info, &chat.agent.name);
    conn.fork_session(chat.session, Some(&cursor), params)
        .await
        .map_err(|e| format!("the agent's session/fork failed ({e})"))
}

/// The conversation before the session's `prompt`-th user message (from
/// 1), as text for the next session's first prompt; `None` when there is
/// none (the turn is this session's first, or an earlier session's).
fn conversation_before(entries: &[Entry], prompt: u32) -> Option<String> {
    if prompt <= 1 {
        return None;
    }
    let mut text = String::new();
    let mut prompts = 0;
    for entry in entries {
        match entry {
            Entry::UserMessage(m) => {
                prompts += 1;
                if prompts >= prompt {
                    break;
                }
                let _ = write!(text, "\n\n## User\n\n{}", m.text().trim());
            }
            Entry::AgentMessage(m) => {
                let _ = write!(text, "\n\n## Assistant\n\n{}", m.text().trim());
            }
            Entry::ToolCall(t) => {
                let _ = write!(text, "\n\n[tool call: {} ({:?})]", t.title, t.status);
            }
            _ => {}
        }
    }
    if text.trim().is_empty() {
        return None;
    }
    if text.len() > CONTEXT_MAX_BYTES {
        let mut cut = text.len() - CONTEXT_MAX_BYTES;
        while !text.is_char_boundary(cut) {
            cut += 1;
        }
        text = format!("[… earlier conversation cut …]{}", &text[cut..]);
    }
    Some(format!(
        "This conversation continues an earlier one that the user rewound; the files are back as they were at this point. The conversation so far:{text}\n\n(End of the earlier conversation. The user's new message follows.)\n\n"
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use acp_client::session::update::Content;
    use acp_client::session::Message;

    fn msg(text: &str) -> Message {
        Message {
            message_id: None,
            content: vec![Content::Known(acp_client::schema::ContentBlock::Text(
                acp_client::schema::TextContent::new(text),
            ))],
        }
    }

    #[test]
    fn the_conversation_stops_before_the_turn() {
        let entries = vec![
            Entry::UserMessage(msg("write a")),
            Entry::AgentMessage(msg("done a")),
            Entry::UserMessage(msg("write b")),
            Entry::AgentMessage(msg("done b")),
        ];
        let c = conversation_before(&entries, 2).unwrap();
        assert!(c.contains("## User\n\nwrite a"), "{c}");
        assert!(c.contains("## Assistant\n\ndone a"), "{c}");
        assert!(!c.contains("write b"), "{c}");
        assert_eq!(conversation_before(&entries, 1), None);
    }

    #[test]
    fn a_long_conversation_keeps_its_newest_part() {
        let big = "é".repeat(CONTEXT_MAX_BYTES);
        let entries = vec![
            Entry::UserMessage(msg(&big)),
            Entry::AgentMessage(msg("the end")),
            Entry::UserMessage(msg("next")),
        ];
        let c = conversation_before(&entries, 2).unwrap();
        assert!(c.len() < CONTEXT_MAX_BYTES + 1024);
        assert!(c.contains("the end"));
        assert!(c.contains("earlier conversation cut"));
    }
}
