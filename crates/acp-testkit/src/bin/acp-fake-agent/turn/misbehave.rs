//! Steps that misbehave outside the JSON-RPC conversation: oversized
//! lines, stderr floods, leaked grandchildren.

use std::io::Write;

use serde_json::json;

use super::Player;

impl Player<'_> {
    pub(super) fn oversized_line(&self, bytes: usize, as_json: bool) -> Vec<u8> {
        if !as_json {
            let mut line = vec![b'x'; bytes];
            line.push(b'\n');
            return line;
        }
        let frame = |text: &str| {
            json!({
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": self.session_id,
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": { "type": "text", "text": text },
                    },
                },
            })
            .to_string()
        };
        let overhead = frame("").len();
        let mut line = frame(&"x".repeat(bytes.saturating_sub(overhead))).into_bytes();
        line.push(b'\n');
        line
    }
}

pub(super) fn flood_stderr(bytes: usize) {
    let line = format!("{}\n", "stderr flood ".repeat(8));
    let mut err = std::io::stderr().lock();
    let mut left = bytes;
    while left > 0 {
        let take = left.min(line.len());
        if err.write_all(&line.as_bytes()[..take]).is_err() {
            return;
        }
        left -= take;
    }
    let _ = err.flush();
}

pub(super) fn spawn_grandchild(command: Option<Vec<String>>) {
    let command = command.unwrap_or_else(|| vec!["sleep".to_owned(), "1000".to_owned()]);
    let Some((program, args)) = command.split_first() else {
        tracing::warn!("spawnGrandchild with an empty command");
        return;
    };
    let spawned = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    match spawned {
        Ok(child) => {
            // One write, so a reader never sees half a pid.
            let line = format!("grandchild pid: {}\n", child.id());
            let mut err = std::io::stderr().lock();
            let _ = err.write_all(line.as_bytes());
            let _ = err.flush();
        }
        Err(e) => tracing::warn!("cannot spawn grandchild `{program}`: {e}"),
    }
}
