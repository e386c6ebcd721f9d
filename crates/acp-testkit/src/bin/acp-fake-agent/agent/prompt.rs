//! Prompts: each picks its scenario turn and plays it on the session's
//! thread; the answer (or, in v2, the idle state) ends it.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::{not_found, not_open, str_param, Agent, Responder};
use crate::cancel::CancelToken;
use crate::scenario::{pick_turn, Turn};
use crate::sessions::{self, Job, Record};
use crate::turn::Player;
use crate::wire::RpcError;

impl Agent {
    pub(super) fn prompt(self: &Arc<Self>, responder: Responder, params: &Value) {
        match self.start_turn(params) {
            Ok((session_id, job)) => {
                let agent = self.clone();
                let job: Job = Box::new(move || job(agent, responder));
                self.queue(&session_id, job);
            }
            Err(error) => responder.send(Err(error)),
        }
    }

    /// Picks the turn for a prompt and registers its cancel token now, on the
    /// reading thread, so a `session/cancel` read right after the prompt
    /// always reaches it.
    fn start_turn(&self, params: &Value) -> Result<(String, TurnJob), RpcError> {
        let session_id = str_param(params, "sessionId")?.to_owned();
        let blocks = params
            .get("prompt")
            .and_then(Value::as_array)
            .ok_or_else(|| RpcError::invalid_params("missing array `prompt`"))?;
        let text = prompt_text(blocks);
        let prompt_blocks = Value::Array(blocks.clone());
        let mut state = self.state();
        let Some(record) = state.store.get_mut(&session_id) else {
            return Err(not_found(&session_id));
        };
        let Record {
            live: Some(live),
            history,
            title,
            updated_at,
            cwd,
            ..
        } = record
        else {
            return Err(not_open(&session_id));
        };
        let turns = &self.scenario.turns;
        let turn = pick_turn(turns, &text, &mut live.turn_cursor)
            .and_then(|i| turns.get(i).cloned())
            .unwrap_or_else(Turn::echo);
        let cancel = Arc::new(CancelToken::default());
        live.turns.push(cancel.clone());
        live.prompts += 1;
        let turn_number = live.prompts;
        if self.scenario.replay_user_messages && self.scenario.record_history {
            history.extend(
                blocks.iter().map(
                    |block| json!({ "sessionUpdate": "user_message_chunk", "content": block }),
                ),
            );
        }
        if title.is_none() {
            *title = Some(title_from(&text));
        }
        *updated_at = Some(sessions::now_iso8601());
        let cwd = cwd.clone();
        let id = session_id.clone();
        let job: TurnJob = Box::new(move |agent: Arc<Agent>, responder: Responder| {
            let v2 = agent.v2.load(Ordering::SeqCst);
            let mut responder = Some(responder);
            if v2 {
                // claude-agent-acp 0.101.0's order: the echo, the answer
                // with its id, then the work.
                let message_id = format!("user-{turn_number}");
                agent.notify_update(
                    &id,
                    json!({ "sessionUpdate": "user_message", "messageId": message_id, "content": prompt_blocks }),
                );
                if let Some(responder) = responder.take() {
                    responder.send(Ok(json!({ "messageId": message_id })));
                }
                agent.notify_update(
                    &id,
                    json!({ "sessionUpdate": "state_update", "state": "running" }),
                );
            }
            if agent.scenario.fork && !v2 {
                crate::fork::announce(&agent, &id, turn_number, &prompt_blocks);
            }
            let mut player =
                Player::new(&agent, &id, &cwd, &text, cancel.clone(), &turn.stop_reason)
                    .with_prompt_blocks(prompt_blocks)
                    .with_turn(turn_number);
            let (stop_reason, late) = player.play(&turn.steps);
            agent.persist();
            let mut answer = json!({ "stopReason": stop_reason });
            if let Some(usage) = &turn.usage {
                answer["usage"] = usage.clone();
            }
            match responder {
                Some(responder) => responder.send(Ok(answer)),
                None => {
                    let mut idle = json!({ "sessionUpdate": "state_update", "state": "idle" });
                    if let (Some(idle), Value::Object(fields)) = (idle.as_object_mut(), answer) {
                        idle.extend(fields);
                    }
                    agent.notify_update(&id, idle);
                }
            }
            agent.end_turn(&id, &cancel);
            for (delay_ms, steps) in late {
                let agent = agent.clone();
                let (id, cwd, text) = (id.clone(), cwd.clone(), text.clone());
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(delay_ms));
                    let cancel = Arc::new(CancelToken::default());
                    Player::new(&agent, &id, &cwd, &text, cancel, "end_turn").run(&steps);
                });
            }
        });
        Ok((session_id, job))
    }

    fn end_turn(&self, session_id: &str, cancel: &Arc<CancelToken>) {
        let mut state = self.state();
        if let Some(live) = state
            .store
            .get_mut(session_id)
            .and_then(|r| r.live.as_mut())
        {
            live.turns.retain(|t| !Arc::ptr_eq(t, cancel));
        }
    }
}

/// The work of one prompt, run later on the session's thread.
type TurnJob = Box<dyn FnOnce(Arc<Agent>, Responder) + Send>;

/// The text a turn is matched against: the prompt's text blocks, joined.
pub fn prompt_text(blocks: &[Value]) -> String {
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A session title from its first prompt, as real agents make them.
fn title_from(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or_default().trim();
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    if title.is_empty() {
        title = "Untitled session".to_owned();
    }
    title
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_text_joins_text_blocks_only() {
        let blocks = [
            json!({"type": "text", "text": "hello"}),
            json!({"type": "resource_link", "uri": "file:///x", "name": "x"}),
            json!({"type": "text", "text": "world"}),
        ];
        assert_eq!(prompt_text(&blocks), "hello\nworld");
    }

    #[test]
    fn titles_are_the_first_line_cut_short() {
        assert_eq!(title_from("fix the bug\nin main"), "fix the bug");
        assert_eq!(title_from(&"a".repeat(70)).chars().count(), 61);
        assert_eq!(title_from("  "), "Untitled session");
    }
}
