//! `session/request_permission`: the request an editor shows and the
//! decision it returns (the wire types), what a decision is about
//! ([`subject_of`]), and the client's own memory of "always" answers
//! ([`PermissionPolicy`]), which the editor may persist in a directory it
//! chooses.

use serde::Serialize;

use crate::session::update::{SessionId, ToolCallFields};

mod memory;
mod store;
mod subject;
#[cfg(test)]
mod tests;

pub use memory::{MemoryKey, PermissionPolicy};
pub use store::Remembered;
pub use subject::subject_of;

/// Identifies one pending permission prompt, so an editor can answer it later
/// (for example from a UI event) and be told when it was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct PermissionRequestId(pub u64);

/// A permission prompt as the editor sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionRequest {
    /// Identifies this prompt until it is answered.
    pub id: PermissionRequestId,
    /// The session asking.
    pub session_id: SessionId,
    /// The tool call, merged with what the session already knew about it
    /// (some agents ask before sending the matching `tool_call`).
    pub tool_call: ToolCallFields,
    /// The choices, in the agent's order.
    pub options: Vec<PermissionOption>,
}

/// One choice offered by the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PermissionOption {
    /// The id to answer with.
    pub option_id: String,
    /// The label to show (display only: the kind decides what it means).
    pub name: String,
    /// What choosing it means.
    pub kind: OptionKind,
}

/// The kind of a permission option. Unknown kinds keep their wire name and
/// are still offered to the user.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OptionKind {
    /// Allow this time.
    AllowOnce,
    /// Allow, and remember for the same kind of tool and subject.
    AllowAlways,
    /// Reject this time.
    RejectOnce,
    /// Reject, and remember for the same kind of tool and subject.
    RejectAlways,
    /// A kind this client does not know, by its wire name.
    Unknown(String),
}

impl OptionKind {
    /// Parses the wire name; never fails.
    pub fn from_wire(s: &str) -> Self {
        match s {
            "allow_once" => OptionKind::AllowOnce,
            "allow_always" => OptionKind::AllowAlways,
            "reject_once" => OptionKind::RejectOnce,
            "reject_always" => OptionKind::RejectAlways,
            other => OptionKind::Unknown(other.to_owned()),
        }
    }

    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            OptionKind::AllowOnce => "allow_once",
            OptionKind::AllowAlways => "allow_always",
            OptionKind::RejectOnce => "reject_once",
            OptionKind::RejectAlways => "reject_always",
            OptionKind::Unknown(s) => s,
        }
    }
}

impl Serialize for OptionKind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The editor's answer to a permission prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum PermissionDecision {
    /// The user picked this option.
    Selected {
        #[serde(rename = "optionId")]
        /// The chosen option's id.
        option_id: String,
    },
    /// The prompt was dismissed or the turn was cancelled.
    Cancelled,
}
