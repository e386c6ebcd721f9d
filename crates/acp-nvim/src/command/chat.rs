//! The fields of a chat's commands: the prompt (content blocks, the
//! buffers with unsaved edits, `@` completion), the answers to the agent's
//! questions, config options and rewind.

use std::fmt;
use std::path::PathBuf;

use acp_client::policy::elicitation::ElicitationResponse;
use acp_client::schema;
use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;
use serde_json::Value as Json;

use super::de as cmd_de;
use super::PromptId;
use crate::elicitation::ElicitationPromptId;

/// A value for `acp.set_config_option`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionValue {
    /// The value id of a select option.
    Id(String),
    /// The value of a boolean option.
    Bool(bool),
}

impl<'de> Deserialize<'de> for OptionValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct IdOrBool;
        impl Visitor<'_> for IdOrBool {
            type Value = OptionValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, true or false")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<OptionValue, E> {
                Ok(OptionValue::Bool(b))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<OptionValue, E> {
                Ok(OptionValue::Id(s.to_owned()))
            }
        }
        d.deserialize_any(IdOrBool)
    }
}

/// A buffer of a file in the chat's directory when a prompt is sent: the
/// backend then knows its text before the agent edits the file, so its
/// first write or disk edit there is merged in one instruction (without it,
/// the first instruction can only find out the buffer's text: `stale`, then
/// a second), and the file's text then is the base of a write by an agent
/// that reads nothing first.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PromptBuffer {
    /// Absolute path of the file.
    #[serde(deserialize_with = "cmd_de::abs_path")]
    pub path: PathBuf,
    /// The buffer's whole text.
    pub text: String,
    /// Its tick (`acp.edits.fs.tick`).
    pub tick: u64,
    /// The file's text on disk, for a buffer with unsaved edits; `None`:
    /// the buffer is unmodified (its text is the file's).
    #[serde(default)]
    pub disk: Option<String>,
}

/// `blocks` of `acp.prompt`: ACP content blocks, at least one.
pub(super) fn blocks<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<schema::ContentBlock>, D::Error> {
    let items = Vec::<cmd_de::LossyJson>::deserialize(d)?;
    if items.is_empty() {
        return Err(de::Error::custom(
            "is empty; a prompt needs at least one content block",
        ));
    }
    items
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            // Lua writes snake_case like everything it sends (`mime_type`).
            let block = crate::protocol::wire::to_acp_keys(b.0);
            serde_json::from_value::<schema::ContentBlock>(block).map_err(|e| {
                de::Error::custom(format!(
                    "holds block {}, which is not an ACP content block ({e}); use {{ type = \"text\", text = \"...\" }}",
                    i + 1
                ))
            })
        })
        .collect()
}

/// `buffers` of `acp.prompt`: optional. An entry that is not `{path, text,
/// tick}` (text that is not UTF-8, a buffer of a binary file) is left out:
/// the prompt still goes, and that buffer's first merge costs the extra
/// round trip it costs without the list.
pub(super) fn prompt_buffers<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Vec<PromptBuffer>, D::Error> {
    struct LeftOutIfBad(Option<PromptBuffer>);
    impl<'de> Deserialize<'de> for LeftOutIfBad {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            // The deserializer reads a value already in memory: a failed
            // entry leaves the list where the next entry starts.
            Ok(LeftOutIfBad(
                PromptBuffer::deserialize(d)
                    .map_err(|e| tracing::debug!("a buffer of acp.prompt left out: {e}"))
                    .ok(),
            ))
        }
    }
    Ok(Vec::<LeftOutIfBad>::deserialize(d)?
        .into_iter()
        .filter_map(|b| b.0)
        .collect())
}

/// The `request_id` of `acp.permission_respond`.
pub(super) fn prompt_id<'de, D: Deserializer<'de>>(d: D) -> Result<PromptId, D::Error> {
    u64::deserialize(d).map(PromptId)
}

/// `acp.elicitation_respond`: `request_id` and the answer, `{action,
/// content?}`, beside it in the same table.
pub(super) fn elicitation_answer<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<(ElicitationPromptId, ElicitationResponse), D::Error> {
    #[derive(Deserialize)]
    struct Answer {
        request_id: u64,
        #[serde(flatten)]
        answer: serde_json::Map<String, Json>,
    }
    let a = Answer::deserialize(d)?;
    let response =
        ElicitationResponse::from_json(&Json::Object(a.answer)).map_err(de::Error::custom)?;
    Ok((ElicitationPromptId(a.request_id), response))
}

/// The parameters of `acp.complete_files`.
pub(super) fn file_query<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<crate::files::FileQuery, D::Error> {
    #[derive(Deserialize)]
    struct Params {
        #[serde(deserialize_with = "cmd_de::abs_path")]
        cwd: PathBuf,
        #[serde(default)]
        query: String,
        #[serde(default = "fifty")]
        limit: u64,
        #[serde(default)]
        hidden: bool,
    }
    fn fifty() -> u64 {
        50
    }
    let p = Params::deserialize(d)?;
    Ok(crate::files::FileQuery {
        cwd: p.cwd,
        query: p.query,
        limit: usize::try_from(p.limit).unwrap_or(usize::MAX),
        hidden: p.hidden,
    })
}

/// `turn` of `acp.rewind`: a turn number from 1.
pub(super) fn turn<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    struct Turn;
    impl Visitor<'_> for Turn {
        type Value = u32;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a turn number from 1")
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<u32, E> {
            u32::try_from(n)
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| E::invalid_value(de::Unexpected::Unsigned(n), &self))
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<u32, E> {
            Err(E::invalid_value(de::Unexpected::Signed(n), &self))
        }
    }
    d.deserialize_any(Turn).map(Some)
}
