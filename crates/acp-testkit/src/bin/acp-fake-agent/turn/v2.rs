//! What the fake agent sends differently on ACP v2, in claude-agent-acp
//! 0.101.0's shapes: a diff as `changes` plus a `git_patch` (no old or new
//! text), a command it runs as `terminal_update`s and
//! `terminal_output_chunk`s (base64) of a terminal the tool call shows.

use std::time::Duration;

use serde_json::{json, Value};

use super::{Flow, Player};

/// Lines of context around a change in the patches made here (Git's 3).
const CONTEXT: usize = 3;

/// A v1-shaped update in its v2 shape: each `diff` content item with
/// `oldText`/`newText` becomes `changes` plus a `git_patch`.
pub(super) fn shape(update: &mut Value) {
    let Some(Value::Array(items)) = update.get_mut("content") else {
        return;
    };
    for item in items.iter_mut() {
        if item.get("type").and_then(Value::as_str) != Some("diff") {
            continue;
        }
        let (Some(path), Some(new)) = (
            item.get("path").and_then(Value::as_str),
            item.get("newText").and_then(Value::as_str),
        ) else {
            continue;
        };
        let old = item.get("oldText").and_then(Value::as_str);
        *item = json!({
            "type": "diff",
            "changes": [{"operation": if old.is_some() { "modify" } else { "add" }, "path": path}],
            "patch": {"format": "git_patch", "text": git_patch(path, old, new)},
        });
    }
}

/// A one-hunk patch from `old` to `new`: the lines between their common
/// start and end, with up to [`CONTEXT`] lines around them.
fn git_patch(path: &str, old: Option<&str>, new: &str) -> String {
    let split = |t: &str| -> Vec<String> { t.lines().map(str::to_owned).collect() };
    let a = old.map(split).unwrap_or_default();
    let b = split(new);
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let from = head.saturating_sub(CONTEXT);
    let (a_end, b_end) = (
        (a.len() - tail + CONTEXT).min(a.len()),
        (b.len() - tail + CONTEXT).min(b.len()),
    );
    let mut out = match old {
        Some(_) => format!("diff --git {path} {path}\n--- {path}\n+++ {path}\n"),
        None => {
            format!("diff --git {path} {path}\nnew file mode 100644\n--- /dev/null\n+++ {path}\n")
        }
    };
    let start = |len: usize| if len == 0 { from } else { from + 1 };
    let (a_len, b_len) = (a_end - from, b_end - from);
    out.push_str(&format!(
        "@@ -{},{a_len} +{},{b_len} @@\n",
        start(a_len),
        start(b_len)
    ));
    for line in &a[from..head] {
        out.push_str(&format!(" {line}\n"));
    }
    for line in &a[head..a.len() - tail] {
        out.push_str(&format!("-{line}\n"));
    }
    if old.is_some_and(|o| !o.is_empty() && !o.ends_with('\n')) && a.len() - tail == a.len() {
        out.push_str("\\ No newline at end of file\n");
    }
    for line in &b[head..b.len() - tail] {
        out.push_str(&format!("+{line}\n"));
    }
    if !new.is_empty() && !new.ends_with('\n') && b.len() - tail == b.len() {
        out.push_str("\\ No newline at end of file\n");
    }
    for line in &b[b.len() - tail..b_end] {
        out.push_str(&format!(" {line}\n"));
    }
    out
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

impl Player<'_> {
    /// A command the agent runs itself: on v1 the codex-acp 2.6.0 way (a
    /// terminal the client never created, its output in `_meta`), on v2 as
    /// claude-agent-acp 0.101.0 does (`terminal_update`s and
    /// `terminal_output_chunk`s of the terminal the tool call shows).
    pub(super) fn agent_terminal(
        &mut self,
        tool_call_id: &str,
        command: &str,
        output: &[String],
        exit_code: i64,
        delay_ms: u64,
    ) -> Flow {
        let v2 = self.agent.v2.load(std::sync::atomic::Ordering::SeqCst);
        let terminal_id = format!("{tool_call_id}-terminal");
        let mut start = json!({
            "sessionUpdate": if v2 { "tool_call_update" } else { "tool_call" },
            "toolCallId": tool_call_id,
            "title": command,
            "kind": "execute",
            "status": "in_progress",
            "rawInput": { "command": command },
            "content": [{ "type": "terminal", "terminalId": terminal_id }],
        });
        if v2 {
            self.update(start);
            self.update(json!({
                "sessionUpdate": "terminal_update",
                "terminalId": terminal_id,
                "command": command,
                "cwd": self.cwd(),
            }));
        } else {
            start["_meta"] = json!({ "terminal_info": { "terminal_id": terminal_id } });
            self.update(start);
        }
        for chunk in output {
            if delay_ms > 0 && self.cancel.sleep(Duration::from_millis(delay_ms)) {
                return Flow::End("cancelled".to_owned());
            }
            self.update(if v2 {
                json!({
                    "sessionUpdate": "terminal_output_chunk",
                    "terminalId": terminal_id,
                    "data": base64(chunk.as_bytes()),
                })
            } else {
                json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": tool_call_id,
                    "_meta": { "terminal_output_delta": { "terminal_id": terminal_id, "data": chunk } },
                })
            });
        }
        let status = if exit_code == 0 {
            "completed"
        } else {
            "failed"
        };
        if v2 {
            self.update(json!({
                "sessionUpdate": "terminal_update",
                "terminalId": terminal_id,
                "exitStatus": { "exitCode": exit_code, "signal": null },
            }));
            self.update(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": status,
            }));
        } else {
            self.update(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": status,
                "_meta": { "terminal_exit": { "terminal_id": terminal_id, "exit_code": exit_code, "signal": null } },
            }));
        }
        Flow::Next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"a"), "YQ==");
        assert_eq!(base64(b"ab"), "YWI=");
        assert_eq!(base64(b"abc"), "YWJj");
        assert_eq!(base64(b"hello\n"), "aGVsbG8K");
    }

    #[test]
    fn patches_keep_context_around_the_change() {
        let p = git_patch(
            "/w/a",
            Some("1\n2\n3\n4\n5\n6\n7\n8\n"),
            "1\n2\n3\n4\nFIVE\n6\n7\n8\n",
        );
        assert!(
            p.ends_with("@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+FIVE\n 6\n 7\n 8\n"),
            "{p}"
        );
        let p = git_patch("/w/n", None, "x\n");
        assert!(
            p.contains("--- /dev/null\n+++ /w/n\n@@ -0,0 +1,1 @@\n+x\n"),
            "{p}"
        );
    }
}
