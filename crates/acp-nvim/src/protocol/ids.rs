//! The backend's ids that cross to Lua: chats and pending prompts. They live
//! with the protocol so that the commands, the events and the modules between
//! them all depend on the protocol, never the other way round.

use std::fmt;
use std::sync::Arc;

/// The plugin's id for one chat window (and its session). Shared, not
/// copied: every streamed event carries its chat's id.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChatId(pub Arc<str>);

impl From<&str> for ChatId {
    fn from(id: &str) -> Self {
        ChatId(id.into())
    }
}

impl From<String> for ChatId {
    fn from(id: String) -> Self {
        ChatId(id.into())
    }
}

impl serde::Serialize for ChatId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl fmt::Display for ChatId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The backend's id for one pending permission prompt, unique across every
/// agent (the client's own ids are only unique per agent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct PromptId(pub u64);

impl fmt::Display for PromptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
