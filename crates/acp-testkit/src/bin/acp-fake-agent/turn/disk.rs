//! Steps that touch the disk directly, as agents that edit files
//! themselves do: writes and replacements reported as diff tool calls.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use super::{text_content, Player};

/// A slow in-place rewrite: truncated, announced, written `ms` later.
pub(super) struct Torn {
    pub(super) ms: u64,
    /// The truncated file gets its old modification time back.
    pub(super) keeps_time: bool,
}

impl Player<'_> {
    pub(super) fn cwd(&self) -> Option<String> {
        self.vars
            .get("cwd")
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    pub(super) fn resolve(&self, path: &str) -> PathBuf {
        let path = Path::new(path);
        match self.cwd() {
            Some(cwd) if path.is_relative() => Path::new(&cwd).join(path),
            _ => path.to_owned(),
        }
    }

    /// Edits a file on disk without asking the client, as Claude does, and
    /// reports the edit as a diff tool call.
    pub(super) fn write_disk(
        &mut self,
        path: &str,
        content: &str,
        tool_call_id: Option<String>,
        title: Option<String>,
        diff: bool,
        torn: Option<Torn>,
    ) {
        let n = self.next_number();
        let path = self.resolve(path);
        let shown = path.display().to_string();
        let tool_call_id = tool_call_id.unwrap_or_else(|| format!("edit-{n}"));
        let old_text = std::fs::read_to_string(&path).ok();
        // Truncated before the announcement; written after the pause below.
        let old_time = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        let torn = torn.map(|torn| {
            let file = std::fs::File::create(&path);
            if let (Ok(file), Some(time), true) = (&file, old_time, torn.keeps_time) {
                let _ = file.set_modified(time);
            }
            (file, torn.ms)
        });
        let mut tool_call = json!({
            "sessionUpdate": "tool_call",
            "toolCallId": tool_call_id,
            "title": title.unwrap_or_else(|| format!("Edit `{shown}`")),
            "kind": "edit",
            "status": "in_progress",
            "locations": [{ "path": shown }],
        });
        if diff {
            tool_call["content"] =
                json!([{ "type": "diff", "path": shown, "oldText": old_text, "newText": content }]);
        }
        // v2: announced once written, so the client reading the file to
        // recover the diff's old text never catches it half written.
        let v2 = self.agent.v2.load(std::sync::atomic::Ordering::SeqCst) && torn.is_none();
        if !v2 {
            self.update(tool_call.clone());
        }
        let written = match torn {
            Some((file, ms)) => {
                std::thread::sleep(Duration::from_millis(ms));
                file.and_then(|mut f| std::io::Write::write_all(&mut f, content.as_bytes()))
            }
            None => path
                .parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| std::fs::write(&path, content)),
        };
        let update = match written {
            Ok(()) => json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": "completed",
            }),
            Err(err) => json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": "failed",
                "content": [text_content(&format!("could not write {shown}: {err}"))],
            }),
        };
        if v2 {
            self.update(tool_call);
        }
        self.update(update);
    }

    /// Edits a file on disk by replacing a snippet, reporting the snippets
    /// as the diff (`oldText`/`newText` are parts of the file, as Claude's
    /// `Edit` reports them). A file that does not hold `old` exactly once is
    /// left alone and the tool call fails.
    pub(super) fn replace_disk(
        &mut self,
        path: &str,
        old: &str,
        new: &str,
        tool_call_id: Option<String>,
        title: Option<String>,
    ) {
        let n = self.next_number();
        let path = self.resolve(path);
        let shown = path.display().to_string();
        let tool_call_id = tool_call_id.unwrap_or_else(|| format!("edit-{n}"));
        self.update(json!({
            "sessionUpdate": "tool_call",
            "toolCallId": tool_call_id,
            "title": title.unwrap_or_else(|| format!("Edit `{shown}`")),
            "kind": "edit",
            "status": "in_progress",
            "locations": [{ "path": shown }],
            "content": [{ "type": "diff", "path": shown, "oldText": old, "newText": new }],
        }));
        let result = match std::fs::read_to_string(&path) {
            Ok(text) if !old.is_empty() && text.matches(old).count() == 1 => {
                std::fs::write(&path, text.replacen(old, new, 1))
                    .map_err(|e| format!("could not write {shown}: {e}"))
            }
            Ok(_) => Err(format!(
                "{shown} does not hold the text to replace exactly once; nothing was changed"
            )),
            Err(e) => Err(format!("could not read {shown}: {e}")),
        };
        let update = match result {
            Ok(()) => json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": "completed",
            }),
            Err(message) => json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_call_id,
                "status": "failed",
                "content": [text_content(&message)],
            }),
        };
        self.update(update);
    }
}
