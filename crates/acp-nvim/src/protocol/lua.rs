//! The backend's calls into Lua (`nvim_exec_lua`) and the one decoding of
//! their replies.
//!
//! An agent's `fs/read_text_file` and `fs/write_text_file` go through the
//! plugin so that open buffers win over the disk (`acp.fs`), and review asks
//! for the text a buffer had before a turn (`acp.baseline`). The arguments
//! are encoded like events ([`wire::encode`]); the replies are decoded here
//! into typed values, and a reply of the wrong shape is a [`BadReply`] that
//! names the fix.

use rmpv::Value;
use serde::Serialize;

use super::wire;
use crate::msgpack;

/// `require('acp.fs').read(args)`: the buffer's text of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsRead<'a> {
    /// Absolute path.
    pub path: &'a str,
    /// 1-based first line, when the agent asked for a range.
    pub line: Option<u32>,
    /// Most lines to return.
    pub limit: Option<u32>,
}

/// `require('acp.fs').write(args)`: write a file through its buffer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsWrite<'a> {
    /// Absolute path.
    pub path: &'a str,
    /// The new text.
    pub content: &'a str,
    /// The write restores rejected review hunks: merge it into a modified
    /// buffer against `base` and leave the disk alone.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub restore: bool,
    /// The base of merging into a modified buffer: for a restore, the text
    /// review knew as current; for an agent's write, the text the agent
    /// last saw of the file (absent: it saw the disk).
    pub base: Option<&'a str>,
}

/// `require('acp.baseline').get(args)`: the text a file's buffer had when
/// the chat's prompt was sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BeforeTurn<'a> {
    /// The chat whose prompt it was.
    pub chat_id: &'a str,
    /// Absolute path.
    pub path: &'a str,
}

impl FsRead<'_> {
    /// The argument of the call.
    pub fn encode(&self) -> Value {
        wire::encode(self)
    }
}

impl FsWrite<'_> {
    /// The argument of the call.
    pub fn encode(&self) -> Value {
        wire::encode(self)
    }
}

impl BeforeTurn<'_> {
    /// The argument of the call.
    pub fn encode(&self) -> Value {
        wire::encode(self)
    }
}

/// What Lua did with a write: `{handled, old_content?, kept_unsaved?}`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WriteReply {
    /// A buffer took the write (and saved it); otherwise the backend
    /// writes the disk.
    pub handled: bool,
    /// The buffer's text before the write, when it was handled.
    pub old_content: Option<String>,
    /// The buffer had unsaved changes; the agent's text was merged into it
    /// and only the disk was written.
    pub kept_unsaved: bool,
}

/// A reply from Lua that does not have the shape of the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadReply {
    /// Text was expected.
    #[error("Neovim answered with {0}, not text; update the acp.nvim plugin and backend together")]
    NotText(String),
    /// The text is not UTF-8.
    #[error("Neovim answered with text that is not UTF-8")]
    NotUtf8,
    /// A write reply without its `handled` flag.
    #[error("Neovim answered a write without `handled`; update the acp.nvim plugin and backend together")]
    NoHandled,
}

/// The reply of a read or a `before_turn`: the text, or nil when no loaded
/// buffer has the file.
pub fn decode_text(reply: Value) -> Result<Option<String>, BadReply> {
    match reply {
        Value::Nil => Ok(None),
        Value::String(s) => s.into_str().map(Some).ok_or(BadReply::NotUtf8),
        other => Err(BadReply::NotText(other.to_string())),
    }
}

/// The reply of a write.
pub fn decode_write(reply: &Value) -> Result<WriteReply, BadReply> {
    let flag = |key| msgpack::field(reply, key).and_then(Value::as_bool);
    let handled = flag("handled").ok_or(BadReply::NoHandled)?;
    Ok(WriteReply {
        handled,
        old_content: msgpack::field(reply, "old_content")
            .and_then(Value::as_str)
            .map(str::to_owned),
        kept_unsaved: flag("kept_unsaved") == Some(true),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_leave_out_what_is_not_set() {
        let read = FsRead {
            path: "/a",
            line: None,
            limit: Some(3),
        };
        assert_eq!(
            msgpack::to_json(&read.encode()),
            json!({"path": "/a", "limit": 3})
        );
        let write = FsWrite {
            path: "/a",
            content: "x",
            restore: false,
            base: None,
        };
        assert_eq!(
            msgpack::to_json(&write.encode()),
            json!({"path": "/a", "content": "x"})
        );
    }

    #[test]
    fn replies_decode_or_say_what_is_wrong() {
        assert_eq!(decode_text(Value::Nil), Ok(None));
        assert_eq!(decode_text(Value::from("t")), Ok(Some("t".into())));
        assert!(matches!(
            decode_text(Value::from(3)),
            Err(BadReply::NotText(_))
        ));
        let reply = msgpack::from_json(&json!({"handled": true, "old_content": "o"}));
        assert_eq!(
            decode_write(&reply),
            Ok(WriteReply {
                handled: true,
                old_content: Some("o".into()),
                kept_unsaved: false
            })
        );
        assert_eq!(decode_write(&Value::from(true)), Err(BadReply::NoHandled));
    }
}
