//! Events shown on the terminal: session changes as lines of text, streamed
//! chunks continuing the entry they belong to.

use std::io::Write;

use acp_client::schema;
use acp_client::session::update::{Content, PlanBody};
use acp_client::session::{Entry, SessionChange};

use super::ChatHost;

impl ChatHost {
    pub(super) fn out(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    pub(super) fn jsonl(&self, value: serde_json::Value) {
        self.out(&format!("{value}\n"));
    }

    pub(super) fn end_stream(&self) {
        if self.streaming.lock().take().is_some() {
            self.out("\n");
        }
    }

    pub(super) fn render_change(&self, change: &SessionChange) {
        match change {
            SessionChange::EntryAdded { index, entry } => match entry {
                Entry::AgentMessage(m) | Entry::Thought(m) => {
                    self.end_stream();
                    if matches!(entry, Entry::Thought(_)) {
                        self.out("(thinking) ");
                    }
                    self.out(&message_text(&m.content));
                    *self.streaming.lock() = Some(*index);
                }
                Entry::UserMessage(m) => {
                    self.end_stream();
                    self.out(&format!("> {}\n", message_text(&m.content)));
                }
                Entry::ToolCall(t) => {
                    self.end_stream();
                    self.out(&format!(
                        "[tool {}] {} ({})\n",
                        t.kind.as_str(),
                        t.title,
                        t.status.as_str()
                    ));
                }
                Entry::SessionMessage(m) => {
                    self.end_stream();
                    self.out(&format!("[message {}]\n", message_text(&m.content)));
                }
                Entry::Unknown { kind, .. } => {
                    self.end_stream();
                    self.out(&format!("[unknown update `{kind}`]\n"));
                }
            },
            SessionChange::PlanUpdated { plan } => {
                self.end_stream();
                match &plan.body {
                    PlanBody::Items { entries } => {
                        self.out(&format!("[plan {}]\n", plan.plan_id));
                        for e in entries {
                            self.out(&format!("  [{}] {}\n", e.status, e.content));
                        }
                    }
                    PlanBody::Markdown { content, path } => {
                        let file = path
                            .as_deref()
                            .map(|p| format!(" ({p})"))
                            .unwrap_or_default();
                        self.out(&format!("[plan {}{file}]\n{content}\n", plan.plan_id));
                    }
                }
            }
            SessionChange::PlanRemoved { plan_id } => {
                self.end_stream();
                self.out(&format!("[plan {plan_id} removed]\n"));
            }
            SessionChange::SubagentChanged { subagent } => {
                self.end_stream();
                let state = subagent.state.as_ref().map_or("?", |s| s.state.as_str());
                self.out(&format!(
                    "[subagent {}: {}]\n",
                    subagent.title.as_deref().unwrap_or(&subagent.session_id),
                    state
                ));
            }
            SessionChange::Child {
                session_id,
                child_change,
            } => {
                // A subagent's own output: on lines of its own, never glued
                // to the parent's streamed answer.
                self.end_stream();
                if let SessionChange::EntryAdded { entry, .. } = &**child_change {
                    if let Entry::AgentMessage(m) | Entry::Thought(m) = entry {
                        self.out(&format!("  [{session_id}] {}\n", message_text(&m.content)));
                    }
                } else if let SessionChange::TextAppended { content, .. } = &**child_change {
                    self.out(&format!(
                        "  [{session_id}] {}\n",
                        message_text(std::slice::from_ref(content))
                    ));
                }
            }
            SessionChange::TextAppended { index, content, .. } => {
                let mut streaming = self.streaming.lock();
                if *streaming != Some(*index) {
                    *streaming = Some(*index);
                    drop(streaming);
                    self.out("\n");
                }
                self.out(&message_text(std::slice::from_ref(content)));
            }
            SessionChange::ToolCallChanged { tool_call, .. } => {
                self.end_stream();
                self.out(&format!(
                    "[tool {}] {} ({})\n",
                    tool_call.kind.as_str(),
                    tool_call.title,
                    tool_call.status.as_str()
                ));
            }
            SessionChange::PlanReplaced { entries } => {
                self.end_stream();
                self.out("[plan]\n");
                for e in entries {
                    let mark = match e.status.as_str() {
                        "completed" => "[x]",
                        "in_progress" => "[~]",
                        _ => "[ ]",
                    };
                    self.out(&format!("  {mark} {} ({})\n", e.content, e.priority));
                }
            }
            SessionChange::ModeChanged { current_mode_id } => {
                self.end_stream();
                self.out(&format!("[mode: {current_mode_id}]\n"));
            }
            SessionChange::CommandsChanged { available_commands } => {
                self.end_stream();
                let names: Vec<String> = available_commands
                    .iter()
                    .map(|c| format!("/{}", c.name))
                    .collect();
                self.out(&format!("[commands: {}]\n", names.join(" ")));
            }
            SessionChange::Notice {
                severity,
                title,
                description,
            } => {
                self.end_stream();
                let detail = description
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                self.out(&format!("[{severity}] {title}{detail}\n"));
            }
            SessionChange::CompactionChanged { status, error, .. } => {
                self.end_stream();
                let why = error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default();
                self.out(&format!("[context compaction {status}{why}]\n"));
            }
            SessionChange::UsageChanged { usage } => {
                self.end_stream();
                self.out(&format!(
                    "[context: {}/{} tokens]\n",
                    usage.used, usage.size
                ));
            }
            _ => {}
        }
    }
}

fn message_text(content: &[Content]) -> String {
    content
        .iter()
        .map(|c| match c {
            Content::Known(schema::ContentBlock::Text(t)) => t.text.clone(),
            Content::Known(other) => {
                let kind = serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                format!("[{kind}]")
            }
            Content::Unknown(_) => "[unknown content]".to_owned(),
        })
        .collect()
}
