//! The hot path of the `session/update` decoder.
//!
//! One borrowed, strictly typed pass over the params for the two shapes agents
//! send in bulk: plain text chunks (a streamed answer) and tool calls whose
//! content is text, diffs or terminals (a running command's output). Any
//! deviation (a field of an unexpected type, a duplicate key, an unknown
//! content type, annotations) makes the pass give up, and the general path
//! decodes the update from scratch, so the fast path only ever decides *how
//! fast* an update decodes, never *what* it decodes to (tests compare both).

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::{
    decode_each, Content, ContentChunk, SessionId, SessionNotification, SessionUpdate,
    ToolCallFields, ToolCallId, ToolContent, ToolKind, ToolStatus,
};

/// Borrowed view of the envelope.
#[derive(Deserialize)]
struct EnvelopePeek<'a> {
    #[serde(rename = "sessionId", borrow, default)]
    session_id: Option<Str<'a>>,
    /// Boxed: moving the view by value (~300 bytes, a dozen times per
    /// line) was a tenth of the decode's instructions.
    #[serde(borrow, default)]
    update: Option<Box<UpdatePeek<'a>>>,
}

/// Borrowed view of an update: the fields of chunks and of tool calls. The
/// discriminator says which ones matter; `content` stays raw because its
/// shape depends on it (a block for chunks, a list for tool calls).
#[derive(Deserialize)]
struct UpdatePeek<'a> {
    #[serde(rename = "sessionUpdate", borrow, default)]
    session_update: Option<Str<'a>>,
    #[serde(borrow, default)]
    content: Option<ContentPeek<'a>>,
    #[serde(rename = "messageId", borrow, default)]
    message_id: Option<Str<'a>>,
    #[serde(rename = "toolCallId", borrow, default)]
    tool_call_id: Option<Str<'a>>,
    #[serde(borrow, default)]
    title: Option<Str<'a>>,
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default)]
    status: Option<Str<'a>>,
    #[serde(borrow, default)]
    locations: Option<&'a RawValue>,
    #[serde(rename = "rawInput", borrow, default)]
    raw_input: Option<&'a RawValue>,
    #[serde(rename = "rawOutput", borrow, default)]
    raw_output: Option<&'a RawValue>,
    /// Only looked at to leave a tool call with `_meta` (agent-run
    /// terminal output) to the general path.
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
}

/// An update's `content`, parsed where it lies: a block (chunks) or a list
/// (tool calls). Keeping it as a `RawValue` to parse once the discriminator
/// was known scanned the streamed text twice (bench/fixes.md section 10).
/// Any other shape fails the peek, and the general path decodes the update.
enum ContentPeek<'a> {
    Block(TextPeek<'a>),
    Items(Vec<ToolItemPeek<'a>>),
}

impl<'de: 'a, 'a> Deserialize<'de> for ContentPeek<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = ContentPeek<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a content block or a list of tool call content")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                TextPeek::deserialize(serde::de::value::MapAccessDeserializer::new(map))
                    .map(ContentPeek::Block)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                seq: A,
            ) -> Result<Self::Value, A::Error> {
                Vec::<ToolItemPeek<'de>>::deserialize(serde::de::value::SeqAccessDeserializer::new(
                    seq,
                ))
                .map(ContentPeek::Items)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Borrowed view of a content block, enough to build a plain text block.
#[derive(Deserialize)]
struct TextPeek<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(default)]
    text: Option<String>,
    #[serde(borrow, default)]
    annotations: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<&'a RawValue>,
}

/// Borrowed view of one item of a tool call's `content`.
#[derive(Deserialize)]
struct ToolItemPeek<'a> {
    #[serde(rename = "type", borrow)]
    kind: Str<'a>,
    #[serde(borrow, default)]
    content: Option<TextPeek<'a>>,
    #[serde(borrow, default)]
    path: Option<Str<'a>>,
    #[serde(rename = "oldText", default)]
    old_text: Option<String>,
    #[serde(rename = "newText", default)]
    new_text: Option<String>,
    #[serde(rename = "terminalId", borrow, default)]
    terminal_id: Option<Str<'a>>,
}

/// A JSON string, borrowed from the input when it has no escapes. Anything
/// but a string is an error, which sends the update to the general path.
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(s)))
            }
        }
        d.deserialize_str(Visitor)
    }
}

/// Decodes the common well-formed updates without building a `Value`.
/// `None` means "not one of those shapes": the general path decides.
pub(super) fn decode_fast(params: &str) -> Option<SessionNotification> {
    from_peek(serde_json::from_str(params).ok()?)
}

/// A whole `session/update` line (one JSON-RPC message) decoded in one
/// pass, envelope and params together, when it is a notification of the
/// shapes agents stream in bulk: text chunks and tool calls of the usual
/// shapes. `None` for every other line, which
/// [`Incoming::decode`](crate::rpc::Incoming::decode) and then
/// [`decode_session_notification`](super::decode_session_notification) decode; what this takes, it decodes as
/// they would.
pub fn decode_session_update_line(line: &[u8]) -> Option<SessionNotification> {
    from_peek(crate::rpc::notification_params(
        line,
        crate::rpc::methods::SESSION_UPDATE,
    )?)
}

fn from_peek(peek: EnvelopePeek<'_>) -> Option<SessionNotification> {
    let session_id = SessionId::new(&*peek.session_id?.0);
    let update = *peek.update?;
    let update = match &*update.session_update.as_ref()?.0 {
        "agent_message_chunk" => SessionUpdate::AgentMessageChunk(chunk_fast(update)?),
        "agent_thought_chunk" => SessionUpdate::AgentThoughtChunk(chunk_fast(update)?),
        "user_message_chunk" => SessionUpdate::UserMessageChunk(chunk_fast(update)?),
        "tool_call" => SessionUpdate::ToolCall(tool_call_fast(update)?),
        "tool_call_update" => SessionUpdate::ToolCallUpdate(tool_call_fast(update)?),
        _ => return None,
    };
    Some(SessionNotification { session_id, update })
}

/// `{content: {type: "text", text}, messageId?}`.
fn chunk_fast(update: UpdatePeek<'_>) -> Option<ContentChunk> {
    let ContentPeek::Block(block) = update.content? else {
        return None;
    };
    Some(ContentChunk {
        content: plain_text_fast(block)?,
        message_id: update.message_id.map(|s| s.0.into_owned()),
    })
}

/// A text block without annotations or `_meta`: exactly what the schema
/// type decodes it to, `TextContent::new(text)`.
fn plain_text_fast(block: TextPeek<'_>) -> Option<Content> {
    if block.annotations.is_some() || block.meta.is_some() || block.kind?.0 != "text" {
        return None;
    }
    Some(Content::text(block.text?))
}

/// A tool call whose id is a string and whose content items are text
/// blocks, diffs or terminals. Locations and raw input/output are rare and
/// small: they go through the general path's per-field decoders, parsed
/// from their own slice of the input.
fn tool_call_fast(update: UpdatePeek<'_>) -> Option<ToolCallFields> {
    if update.meta.is_some() {
        return None;
    }
    let mut fields = ToolCallFields::new(ToolCallId::new(&*update.tool_call_id?.0));
    fields.title = update.title.map(|s| s.0.into_owned());
    fields.name = update.name.map(|s| s.0.into_owned());
    fields.kind = update.kind.map(|s| ToolKind::from_wire(&s.0));
    fields.status = update.status.map(|s| ToolStatus::from_wire(&s.0));
    fields.content = match update.content {
        None => None,
        Some(ContentPeek::Items(items)) => Some(
            items
                .into_iter()
                .map(tool_item_fast)
                .collect::<Option<Vec<_>>>()?,
        ),
        Some(ContentPeek::Block(_)) => return None,
    };
    fields.locations = match update.locations {
        None => None,
        Some(raw) => match serde_json::from_str::<Value>(raw.get()).ok()? {
            Value::Array(items) => Some(decode_each(&items, "tool call location")),
            _ => return None,
        },
    };
    fields.raw_input = raw_json(update.raw_input)?;
    fields.raw_output = raw_json(update.raw_output)?;
    Some(fields)
}

fn tool_item_fast(item: ToolItemPeek<'_>) -> Option<ToolContent> {
    Some(match &*item.kind.0 {
        "content" => ToolContent::Content {
            content: plain_text_fast(item.content?)?,
        },
        "diff" => ToolContent::Diff {
            path: (*item.path?.0).into(),
            old_text: item.old_text,
            new_text: item.new_text?,
        },
        "terminal" => ToolContent::Terminal {
            terminal_id: item.terminal_id?.0.into_owned(),
        },
        _ => return None,
    })
}

/// `Some(value)` for a present field (never null: serde reads a null
/// `Option` as `None`); `None` when the slice is not JSON after all.
fn raw_json(raw: Option<&RawValue>) -> Option<Option<Value>> {
    match raw {
        None => Some(None),
        Some(raw) => serde_json::from_str(raw.get()).ok().map(Some),
    }
}
