//! The backend's calls into Lua (`nvim_exec_lua`) and the one decoding of
//! their replies.
//!
//! An agent's `fs/read_text_file` and `fs/write_text_file` go through the
//! plugin so that open buffers win over the disk (`acp.edits.fs`), and the
//! buffer sync's instructions are applied there. The arguments
//! are encoded like events ([`wire::encode`]); the replies are decoded here
//! into typed values, and a reply of the wrong shape is a [`BadReply`] that
//! names the fix.

use rmpv::Value;
use std::sync::Arc;

use serde::Serialize;

use acp_client::edits::buffer_sync::{
    Applied, BufferRead, BufferText, BufferView, Instruction, Origin,
};

use super::wire;
use crate::msgpack;

/// `require('acp.edits.fs').read_for_agent(args)`: the buffer's text of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FsRead<'a> {
    /// Absolute path.
    pub path: &'a str,
    /// 1-based first line, when the agent asked for a range.
    pub line: Option<u32>,
    /// Most lines to return.
    pub limit: Option<u32>,
    /// The tick (`acp.edits.fs.tick`) of the buffer text the backend holds (from a
    /// read, a report or an instruction): a buffer still at it answers with
    /// the range only.
    pub known: Option<u64>,
}

/// `require('acp.edits.fs').apply(args)`: the one instruction of a write, or of
/// the agent's disk edit, to a file Neovim may have a buffer of (see
/// `acp_client::edits::buffer_sync`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Apply<'a> {
    /// Absolute path.
    pub path: &'a str,
    /// The file's instruction count; the reply names it.
    pub revision: u64,
    /// The text an unmodified buffer takes (then saved, unless `disk`).
    pub content: &'a str,
    /// The text the buffer takes instead of `content`, only while its tick
    /// (`acp.edits.fs.tick`) is still `tick`: a modified buffer keeps it unsaved;
    /// for an agent's write an unmodified one takes it too (saved unless it
    /// has conflict blocks), and without it answers stale.
    pub merged: Option<&'a str>,
    /// The tick (`acp.edits.fs.tick`) `merged` was made against.
    pub tick: Option<u64>,
    /// How many conflict blocks `merged` holds.
    #[serde(skip_serializing_if = "is_zero")]
    pub conflicts: usize,
    /// The write restores rejected review hunks: the disk is left alone and
    /// a buffer with open conflicts takes it too.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub restore: bool,
    /// The agent changed the file on disk itself: `content` is on disk
    /// already, so an unmodified buffer takes it without saving.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disk: bool,
    /// The chat whose agent made a disk edit: the plugin reports the
    /// buffer's next save to it also before the edit's `review_changed`
    /// arrives (the instruction can come first).
    pub chat_id: Option<&'a str>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl<'a> Apply<'a> {
    /// The call of one instruction.
    pub fn of(path: &'a str, i: &'a Instruction) -> Self {
        Self {
            path,
            revision: i.revision,
            content: &i.content,
            merged: i.merge.as_ref().map(|m| m.text.as_str()),
            tick: i.merge.as_ref().map(|m| m.version),
            conflicts: i.merge.as_ref().map_or(0, |m| m.conflicts),
            restore: i.origin == Origin::Restore,
            disk: i.origin == Origin::Disk,
            chat_id: None,
        }
    }

    /// The argument of the call.
    pub fn encode(&self) -> Value {
        wire::encode(self)
    }
}

impl FsRead<'_> {
    /// The argument of the call.
    pub fn encode(&self) -> Value {
        wire::encode(self)
    }
}

/// `require('acp.edits.editor_tools').state(args)`: what the editor's MCP server
/// asks of Neovim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EditorState<'a> {
    /// `"diagnostics"` or `"open_buffers"`.
    pub what: &'a str,
    /// Only this file (absolute, inside the workspace), for diagnostics.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<&'a str>,
}

impl EditorState<'_> {
    /// The argument of the call.
    pub fn encode(&self) -> Value {
        wire::encode(self)
    }
}

/// The reply of a buffer read for the agent: `{text, tick, whole?,
/// buffer?}`, or `{text, tick, unchanged = true}` when the buffer is still
/// at the `known` tick, or nil when no loaded buffer has the file; decoded
/// into the buffer sync's [`BufferRead`].
/// A reply from Lua that does not have the shape of the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadReply {
    /// The text is not UTF-8.
    #[error("Neovim answered with text that is not UTF-8")]
    NotUtf8,
    /// A reply without a field it must have, or with one of the wrong type.
    #[error(
        "Neovim answered without a valid `{0}`; update the acp.nvim plugin and backend together"
    )]
    Missing(&'static str),
    /// A write reply of an unknown status.
    #[error("Neovim answered a write with status `{0}`; update the acp.nvim plugin and backend together")]
    Status(String),
}

fn text_field(reply: &Value, key: &'static str) -> Result<Option<String>, BadReply> {
    match msgpack::field(reply, key) {
        None | Some(Value::Nil) => Ok(None),
        Some(Value::String(s)) => s
            .as_str()
            .map(|t| Some(t.to_owned()))
            .ok_or(BadReply::NotUtf8),
        Some(_) => Err(BadReply::Missing(key)),
    }
}

fn tick_field(reply: &Value) -> Result<u64, BadReply> {
    msgpack::field(reply, "tick")
        .and_then(Value::as_u64)
        .ok_or(BadReply::Missing("tick"))
}

/// The reply of a buffer read for the agent; `None`: no loaded buffer.
pub fn decode_read(reply: &Value) -> Result<Option<BufferRead>, BadReply> {
    if reply.is_nil() {
        return Ok(None);
    }
    let text = text_field(reply, "text")?.ok_or(BadReply::Missing("text"))?;
    let tick = tick_field(reply)?;
    if msgpack::field(reply, "unchanged").and_then(Value::as_bool) == Some(true) {
        return Ok(Some(BufferRead {
            text,
            version: tick,
            view: None,
        }));
    }
    let whole: Arc<str> = match text_field(reply, "whole")? {
        Some(whole) => whole.into(),
        None => text.as_str().into(),
    };
    let buffer = match text_field(reply, "buffer")? {
        Some(buffer) => buffer.into(),
        None => whole.clone(),
    };
    Ok(Some(BufferRead {
        text,
        version: tick,
        view: Some(BufferView { whole, buffer }),
    }))
}

/// The reply of an instruction (`{status, revision, tick?, text?,
/// old_content?}`), checked against the instruction's revision.
pub fn decode_apply(reply: &Value, revision: u64) -> Result<Applied, BadReply> {
    let status = msgpack::field(reply, "status")
        .and_then(Value::as_str)
        .ok_or(BadReply::Missing("status"))?;
    if msgpack::field(reply, "revision").and_then(Value::as_u64) != Some(revision) {
        return Err(BadReply::Missing("revision"));
    }
    Ok(match status {
        "no_buffer" => Applied::NoBuffer,
        "saved" => Applied::Saved {
            old_content: text_field(reply, "old_content")?,
            version: tick_field(reply)?,
        },
        "reloaded" => Applied::Reloaded {
            version: tick_field(reply)?,
        },
        "merged" => Applied::Merged {
            version: tick_field(reply)?,
        },
        "waiting" => Applied::Waiting,
        "locked" => Applied::Locked,
        "stale" => Applied::Stale(BufferText {
            text: text_field(reply, "text")?
                .ok_or(BadReply::Missing("text"))?
                .into(),
            version: tick_field(reply)?,
        }),
        other => return Err(BadReply::Status(other.to_owned())),
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
            known: None,
        };
        assert_eq!(
            msgpack::to_json(&read.encode()),
            json!({"path": "/a", "limit": 3})
        );
        let i = Instruction {
            path: acp_client::path::CanonicalPath::resolve(std::path::Path::new("/a")).unwrap(),
            revision: 2,
            content: "x".into(),
            merge: None,
            origin: Origin::Write,
            base: None,
            disk_edits: 0,
            session: None,
        };
        assert_eq!(
            msgpack::to_json(&Apply::of("/a", &i).encode()),
            json!({"path": "/a", "revision": 2, "content": "x"})
        );
        let disk = Instruction {
            origin: Origin::Disk,
            ..i
        };
        assert_eq!(
            msgpack::to_json(&Apply::of("/a", &disk).encode()),
            json!({"path": "/a", "revision": 2, "content": "x", "disk": true})
        );
    }

    #[test]
    fn replies_decode_or_say_what_is_wrong() {
        let read = msgpack::from_json(&json!({"text": "b\n", "whole": "a\nb\n", "tick": 4}));
        assert_eq!(
            decode_read(&read),
            Ok(Some(BufferRead {
                text: "b\n".into(),
                version: 4,
                view: Some(BufferView {
                    whole: "a\nb\n".into(),
                    buffer: "a\nb\n".into(),
                })
            }))
        );
        // A buffer still at the tick the backend knows: the range only.
        let read = msgpack::from_json(&json!({"text": "b\n", "tick": 4, "unchanged": true}));
        assert_eq!(
            decode_read(&read),
            Ok(Some(BufferRead {
                text: "b\n".into(),
                version: 4,
                view: None,
            }))
        );
        assert_eq!(decode_read(&Value::Nil), Ok(None));
        assert_eq!(
            decode_read(&Value::from("t")),
            Err(BadReply::Missing("text"))
        );
        let saved = msgpack::from_json(
            &json!({"status": "saved", "revision": 3, "tick": 9, "old_content": "o"}),
        );
        assert_eq!(
            decode_apply(&saved, 3),
            Ok(Applied::Saved {
                old_content: Some("o".into()),
                version: 9
            })
        );
        assert_eq!(decode_apply(&saved, 4), Err(BadReply::Missing("revision")));
        let reloaded = msgpack::from_json(&json!({"status": "reloaded", "revision": 5, "tick": 2}));
        assert_eq!(
            decode_apply(&reloaded, 5),
            Ok(Applied::Reloaded { version: 2 })
        );
        let odd = msgpack::from_json(&json!({"status": "maybe", "revision": 1}));
        assert_eq!(decode_apply(&odd, 1), Err(BadReply::Status("maybe".into())));
        assert_eq!(
            decode_apply(&Value::from(true), 1),
            Err(BadReply::Missing("status"))
        );
    }
}
