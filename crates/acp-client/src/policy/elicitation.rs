//! `elicitation/create` and `elicitation/complete`: the agent asks the user
//! for structured input (a form) or sends them to a URL, tied to a session
//! (optionally to one of its tool calls) or to one of our requests (before
//! any session exists, e.g. during `authenticate`).
//!
//! This module owns the request as an editor sees it, its form schema in the
//! agent's field order, and the validation of the user's answer against it.
//! Decoding is lenient like the rest of the crate: a property of a type we do
//! not know is kept as [`FieldKind::Unknown`] (never shown as a known control,
//! as the schema requires), a malformed constraint is ignored rather than
//! rejecting the whole request.

// `Error`'s size is the crate's choice (error.rs).
#![allow(clippy::result_large_err)]

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::rpc::RequestId;
use crate::session::update::SessionId;

mod schema;

use schema::{is_date, is_date_time, is_email, is_uri};

/// Identifies one pending elicitation so an editor can answer it later and
/// be told when it was withdrawn. Numbered by the client, per connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ElicitationRequestId(pub u64);

/// The agent's id of a URL elicitation, echoed by `elicitation/complete`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ElicitationId(pub String);

impl fmt::Display for ElicitationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an elicitation is tied to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub enum ElicitationScope {
    /// A session, optionally one of its tool calls.
    Session {
        #[serde(rename = "sessionId")]
        /// The session asking.
        session_id: SessionId,
        #[serde(rename = "toolCallId", skip_serializing_if = "Option::is_none")]
        /// The tool call the question belongs to.
        tool_call_id: Option<String>,
        #[serde(rename = "toolTitle", skip_serializing_if = "Option::is_none")]
        /// That tool call's title, when the session knows it.
        tool_title: Option<String>,
    },
    /// One of our requests still waiting for its answer (`authenticate`,
    /// `session/new`...): the elicitation is part of serving it.
    Request {
        #[serde(rename = "requestId")]
        /// Our JSON-RPC request id.
        request_id: RequestId,
    },
}

impl ElicitationScope {
    /// The session, for session-scoped elicitations.
    pub fn session_id(&self) -> Option<&SessionId> {
        match self {
            ElicitationScope::Session { session_id, .. } => Some(session_id),
            ElicitationScope::Request { .. } => None,
        }
    }
}

/// How the user answers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum ElicitationMode {
    /// Fill in a form.
    Form {
        #[serde(rename = "requestedSchema")]
        /// The form.
        schema: FormSchema,
    },
    /// Open a URL and finish there; the agent sends `elicitation/complete`
    /// when it is done.
    Url {
        #[serde(rename = "elicitationId")]
        /// The agent's id of this elicitation.
        elicitation_id: ElicitationId,
        /// The page to open.
        url: String,
    },
}

/// An `elicitation/create` as the editor sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ElicitationRequest {
    /// Identifies this elicitation until it is answered.
    pub id: ElicitationRequestId,
    /// What it is tied to.
    pub scope: ElicitationScope,
    /// What the agent wants, for the user.
    pub message: String,
    /// Form or URL.
    pub mode: ElicitationMode,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ElicitationResponse {
    /// The user answered: the form's values (validated with
    /// [`FormSchema::validate`]); empty for a URL the user agreed to open.
    Accept {
        /// Field name to value.
        #[serde(skip_serializing_if = "Map::is_empty")]
        content: Map<String, Value>,
    },
    /// The user said no.
    Decline,
    /// The user dismissed it, or the turn was cancelled.
    Cancel,
}

impl ElicitationResponse {
    /// The wire name of the action.
    pub fn action(&self) -> &'static str {
        match self {
            ElicitationResponse::Accept { .. } => "accept",
            ElicitationResponse::Decline => "decline",
            ElicitationResponse::Cancel => "cancel",
        }
    }

    /// Parses an editor's `{action, content?}`: the one decode point for
    /// answers coming from an editor as JSON. Content is not validated here.
    pub fn from_json(value: &Value) -> Result<Self> {
        let action = value.get("action").and_then(Value::as_str).ok_or_else(|| {
            Error::InvalidParams(
                "the answer needs an `action`: `accept`, `decline` or `cancel`".into(),
            )
        })?;
        match action {
            "accept" => {
                let content = match value.get("content") {
                    None | Some(Value::Null) => Map::new(),
                    Some(Value::Object(m)) => m.clone(),
                    // An empty Lua table crosses msgpack as an empty array.
                    Some(Value::Array(a)) if a.is_empty() => Map::new(),
                    Some(other) => {
                        return Err(Error::InvalidParams(format!(
                            "`content` must be a table of field = value, got {other}"
                        )))
                    }
                };
                Ok(ElicitationResponse::Accept { content })
            }
            "decline" => Ok(ElicitationResponse::Decline),
            "cancel" => Ok(ElicitationResponse::Cancel),
            other => Err(Error::InvalidParams(format!(
                "unknown action `{other}`: use `accept`, `decline` or `cancel`"
            ))),
        }
    }
}

/// A form: the requested schema with its properties in the agent's order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormSchema {
    /// The form's title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the form is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The fields, in the order the agent listed them.
    pub fields: Vec<FormField>,
    /// The schema exactly as the agent sent it (for editors and hooks that
    /// want the JSON Schema itself).
    pub raw: Value,
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FormField {
    /// The property name (the key in the answer).
    pub name: String,
    /// The label, when the agent gave one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Help text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the answer must have it.
    pub required: bool,
    /// The value to start from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// Its type and constraints.
    pub kind: FieldKind,
}

impl FormField {
    /// The label to show: the title, else the name.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// One allowed value of an enum field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Choice {
    /// The value sent.
    pub value: String,
    /// The label shown.
    pub title: String,
}

/// The string formats the schema names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StringFormat {
    /// `name@example.com`.
    Email,
    /// An absolute URI with a scheme.
    Uri,
    /// `YYYY-MM-DD`.
    Date,
    /// RFC 3339: `2026-07-28T14:30:00Z`.
    DateTime,
}

impl StringFormat {
    fn from_wire(s: &str) -> Option<Self> {
        match s {
            "email" => Some(Self::Email),
            "uri" => Some(Self::Uri),
            "date" => Some(Self::Date),
            "date-time" => Some(Self::DateTime),
            _ => None,
        }
    }

    fn example(self) -> &'static str {
        match self {
            Self::Email => "an email address such as name@example.com",
            Self::Uri => "a URI such as https://example.com/page",
            Self::Date => "a date such as 2026-07-28",
            Self::DateTime => "a date and time such as 2026-07-28T14:30:00Z",
        }
    }

    fn accepts(self, s: &str) -> bool {
        match self {
            Self::Email => is_email(s),
            Self::Uri => is_uri(s),
            Self::Date => is_date(s),
            Self::DateTime => is_date_time(s),
        }
    }
}

/// A field's type with its constraints.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FieldKind {
    /// Free text, or one of `choices` when the agent listed them.
    String {
        #[serde(rename = "minLength", skip_serializing_if = "Option::is_none")]
        /// Fewest characters.
        min_length: Option<u64>,
        #[serde(rename = "maxLength", skip_serializing_if = "Option::is_none")]
        /// Most characters.
        max_length: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        /// A format the text must have.
        format: Option<StringFormat>,
        #[serde(skip_serializing_if = "Option::is_none")]
        /// A single-select enum.
        choices: Option<Vec<Choice>>,
    },
    /// A number; `integer` when it must be whole.
    Number {
        /// Whole numbers only.
        integer: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        /// Smallest allowed.
        minimum: Option<f64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        /// Largest allowed.
        maximum: Option<f64>,
    },
    /// Yes or no.
    Boolean,
    /// Several of `choices`.
    MultiSelect {
        /// The allowed values.
        choices: Vec<Choice>,
        #[serde(rename = "minItems", skip_serializing_if = "Option::is_none")]
        /// Fewest picks.
        min_items: Option<u64>,
        #[serde(rename = "maxItems", skip_serializing_if = "Option::is_none")]
        /// Most picks.
        max_items: Option<u64>,
    },
    /// A property type this client does not know, by its wire name. It is
    /// never shown as a known control; a form that requires it can only be
    /// declined.
    Unknown {
        /// The wire `type`.
        wire_type: String,
    },
}

// ---------------------------------------------------------------------------
// The wire request

/// `elicitation/create` params, decoded leniently.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireCreate {
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub session_id: Option<SessionId>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub request_id: Option<RequestId>,
    #[serde(default)]
    pub requested_schema: Option<Value>,
    #[serde(default)]
    pub elicitation_id: Option<ElicitationId>,
    #[serde(default)]
    pub url: Option<String>,
}

/// What the dispatcher does with a decoded `elicitation/create`.
// Built once per request and matched at once; boxing would only allocate.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Decoded {
    /// Ask the user.
    Ask(ElicitationScope, String, ElicitationMode),
    /// A mode this client does not know: answered with an error naming the
    /// supported modes, never shown as a form or URL (the schema forbids it).
    UnknownMode(String),
}

impl WireCreate {
    /// Turns the params into a typed request; the scope's tool title is
    /// filled in by the caller.
    pub(crate) fn decode(self) -> Result<Decoded> {
        let scope = match (self.session_id, self.request_id) {
            (Some(session_id), _) => ElicitationScope::Session {
                session_id,
                tool_call_id: self.tool_call_id,
                tool_title: None,
            },
            (None, Some(request_id)) => ElicitationScope::Request { request_id },
            (None, None) => {
                return Err(Error::InvalidParams(
                    "`elicitation/create` needs a `sessionId` or a `requestId`".into(),
                ))
            }
        };
        let mode = match self.mode.as_deref() {
            Some("form") => {
                let raw = self.requested_schema.ok_or_else(|| {
                    Error::InvalidParams("a form elicitation needs a `requestedSchema`".into())
                })?;
                ElicitationMode::Form {
                    schema: FormSchema::decode(&raw)?,
                }
            }
            Some("url") => {
                let (Some(elicitation_id), Some(url)) = (self.elicitation_id, self.url) else {
                    return Err(Error::InvalidParams(
                        "a URL elicitation needs an `elicitationId` and a `url`".into(),
                    ));
                };
                ElicitationMode::Url {
                    elicitation_id,
                    url,
                }
            }
            Some(other) => return Ok(Decoded::UnknownMode(other.to_owned())),
            None => {
                return Err(Error::InvalidParams(
                    "`elicitation/create` needs a `mode`".into(),
                ))
            }
        };
        Ok(Decoded::Ask(scope, self.message, mode))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
