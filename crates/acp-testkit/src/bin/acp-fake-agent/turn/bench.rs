//! Steps for benchmarks: many tool calls at once, and timed round trips of a
//! request to the client.

use std::time::Instant;

use serde_json::{json, Value};

use super::{Flow, Player};
use crate::wire::update_notification;

impl Player<'_> {
    /// `count` tool calls, each a `tool_call` (`execute`, `in_progress`, one
    /// line of text content) and a `tool_call_update` (`completed`, new
    /// content), written under one lock with one flush, like `burst`.
    pub(super) fn tool_call_burst(&self, count: usize, id_prefix: &str) {
        let mut updates = Vec::with_capacity(if self.agent.scenario.record_history {
            2 * count
        } else {
            0
        });
        let mut out = self.agent.out.lock();
        for n in 1..=count {
            let id = format!("{id_prefix}{n}");
            let call = json!({
                "sessionUpdate": "tool_call", "toolCallId": id, "title": format!("`step {n}`"),
                "kind": "execute", "status": "in_progress",
                "content": [{ "type": "content", "content": { "type": "text", "text": format!("running step {n}") } }],
            });
            let done = json!({
                "sessionUpdate": "tool_call_update", "toolCallId": id, "status": "completed",
                "content": [{ "type": "content", "content": { "type": "text", "text": format!("step {n}: ok") } }],
            });
            for update in [call, done] {
                if self.agent.scenario.record_history {
                    updates.push(update.clone());
                }
                out.message(&update_notification(&self.session_id, update));
            }
        }
        out.flush();
        drop(out);
        self.agent.record(&self.session_id, &updates);
    }

    /// Sends the request `count` times, one after the other, and saves the
    /// round-trip times: `{count, errors, minUs, p50Us, p99Us, maxUs}`
    /// (nearest-rank percentiles, microseconds from writing the request to
    /// reading its answer).
    pub(super) fn timed_calls(
        &mut self,
        count: usize,
        method: &str,
        params: Option<Value>,
        save_as: Option<String>,
    ) -> Flow {
        let params = self.params(params);
        let mut micros = Vec::with_capacity(count);
        let mut errors = 0;
        for _ in 0..count {
            if self.cancel.is_cancelled() {
                return Flow::End("cancelled".to_owned());
            }
            let start = Instant::now();
            let reply = self
                .agent
                .pending
                .call(&self.agent.out, method, params.clone());
            micros.push(start.elapsed().as_micros() as u64);
            if reply.is_err() {
                errors += 1;
            }
        }
        micros.sort_unstable();
        let rank = |p: f64| -> Value {
            if micros.is_empty() {
                return Value::Null;
            }
            let i = ((micros.len() as f64 * p).ceil() as usize).clamp(1, micros.len()) - 1;
            json!(micros[i])
        };
        let summary = json!({
            "count": count,
            "errors": errors,
            "minUs": micros.first(),
            "p50Us": rank(0.50),
            "p99Us": rank(0.99),
            "maxUs": micros.last(),
        });
        if let Some(name) = save_as {
            self.save(&name, summary);
        }
        Flow::Next
    }
}
