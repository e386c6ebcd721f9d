//! Elicitations waiting for the user's answer, and their shape for Lua.
//!
//! Like permission prompts ([`crate::prompts`]), each gets a backend-wide id
//! (acp-client numbers them per agent). An answer from Lua is checked against
//! the form here, synchronously, so `require("acp").elicitation_respond`
//! returns the problems to the user and the elicitation stays open.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use acp_client::policy::elicitation::{
    ElicitationMode, ElicitationRequest, ElicitationResponse, FieldKind, FormField, FormSchema,
};
use serde_json::{json, Map, Value as Json};
use tokio::sync::oneshot;

/// The backend's id for one pending elicitation (what Lua answers with).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct ElicitationPromptId(pub u64);

impl fmt::Display for ElicitationPromptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

struct Pending {
    form: Option<FormSchema>,
    tx: oneshot::Sender<ElicitationResponse>,
}

/// Every pending elicitation, across all agents.
#[derive(Default)]
pub struct Elicitations {
    next: AtomicU64,
    pending: Mutex<HashMap<ElicitationPromptId, Pending>>,
}

impl fmt::Debug for Elicitations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Elicitations")
            .field("pending", &self.pending.lock().len())
            .finish_non_exhaustive()
    }
}

impl Elicitations {
    /// Registers an elicitation; the receiver gets the user's answer and
    /// fails when the elicitation is withdrawn.
    pub fn open(
        &self,
        request: &ElicitationRequest,
    ) -> (ElicitationPromptId, oneshot::Receiver<ElicitationResponse>) {
        let id = ElicitationPromptId(self.next.fetch_add(1, Ordering::Relaxed) + 1);
        let (tx, rx) = oneshot::channel();
        let form = match &request.mode {
            ElicitationMode::Form { schema } => Some(schema.clone()),
            ElicitationMode::Url { .. } => None,
        };
        self.pending.lock().insert(id, Pending { form, tx });
        (id, rx)
    }

    /// Delivers an answer. A form answer is validated first: on problems the
    /// elicitation stays open and the error says what to fix.
    pub fn answer(
        &self,
        id: ElicitationPromptId,
        response: ElicitationResponse,
    ) -> Result<(), String> {
        let mut pending = self.pending.lock();
        let Some(entry) = pending.get(&id) else {
            return Err(format!(
                "elicitation {id} is not waiting for an answer (answered already, or the turn was cancelled)"
            ));
        };
        let response = match (response, &entry.form) {
            (ElicitationResponse::Accept { content }, Some(form)) => {
                let content = form.validate(&content).map_err(|e| e.to_string())?;
                ElicitationResponse::Accept { content }
            }
            // A URL accept carries no content.
            (ElicitationResponse::Accept { .. }, None) => ElicitationResponse::Accept {
                content: Map::new(),
            },
            (other, _) => other,
        };
        if let Some(entry) = pending.remove(&id) {
            // The receiver is gone only when the request was withdrawn in
            // between; nothing to tell then.
            let _ = entry.tx.send(response);
        }
        Ok(())
    }

    /// Forgets an elicitation without an answer.
    pub fn withdraw(&self, id: ElicitationPromptId) {
        self.pending.lock().remove(&id);
    }
}

/// Withdraws an elicitation when dropped (its request future was dropped:
/// the turn was cancelled), so it cannot be answered later.
#[derive(Debug)]
pub struct WithdrawElicitation<'a> {
    /// The registry.
    pub elicitations: &'a Elicitations,
    /// The elicitation.
    pub id: ElicitationPromptId,
}

impl Drop for WithdrawElicitation<'_> {
    fn drop(&mut self) {
        self.elicitations.withdraw(self.id);
    }
}

/// The form's fields for Lua, in the agent's order (a Lua table made from
/// the JSON Schema's `properties` would lose it), with snake_case keys.
pub fn lua_fields(schema: &FormSchema) -> Json {
    Json::Array(schema.fields.iter().map(lua_field).collect())
}

fn lua_field(field: &FormField) -> Json {
    let mut m = Map::new();
    m.insert("name".into(), json!(field.name));
    m.insert("label".into(), json!(field.label()));
    if let Some(d) = &field.description {
        m.insert("description".into(), json!(d));
    }
    m.insert("required".into(), json!(field.required));
    if let Some(d) = &field.default {
        m.insert("default".into(), d.clone());
    }
    let mut put = |k: &str, v: Json| {
        m.insert(k.into(), v);
    };
    let choices = |c: &[acp_client::policy::elicitation::Choice]| {
        Json::Array(
            c.iter()
                .map(|c| json!({ "value": c.value, "title": c.title }))
                .collect(),
        )
    };
    match &field.kind {
        FieldKind::String {
            min_length,
            max_length,
            format,
            choices: options,
        } => {
            put(
                "type",
                json!(if options.is_some() { "enum" } else { "string" }),
            );
            if let Some(o) = options {
                put("choices", choices(o));
            }
            if let Some(v) = min_length {
                put("min_length", json!(v));
            }
            if let Some(v) = max_length {
                put("max_length", json!(v));
            }
            if let Some(f) = format {
                put("format", serde_json::to_value(f).unwrap_or(Json::Null));
            }
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            put("type", json!(if *integer { "integer" } else { "number" }));
            if let Some(v) = minimum {
                put("minimum", json!(v));
            }
            if let Some(v) = maximum {
                put("maximum", json!(v));
            }
        }
        FieldKind::Boolean => put("type", json!("boolean")),
        FieldKind::MultiSelect {
            choices: options,
            min_items,
            max_items,
        } => {
            put("type", json!("multi_select"));
            put("choices", choices(options));
            if let Some(v) = min_items {
                put("min_items", json!(v));
            }
            if let Some(v) = max_items {
                put("max_items", json!(v));
            }
        }
        FieldKind::Unknown { wire_type } => {
            put("type", json!("unknown"));
            put("wire_type", json!(wire_type));
        }
    }
    Json::Object(m)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use acp_client::policy::elicitation::{ElicitationRequestId, ElicitationScope};
    use acp_client::session::update::SessionId;

    fn form_request() -> ElicitationRequest {
        ElicitationRequest {
            id: ElicitationRequestId(1),
            scope: ElicitationScope::Session {
                session_id: SessionId::new("s"),
                tool_call_id: None,
                tool_title: None,
            },
            message: "?".into(),
            mode: ElicitationMode::Form {
                schema: FormSchema::decode(&json!({
                    "properties": {
                        "n": {"type": "integer", "maximum": 3},
                        "c": {"type": "string", "oneOf": [{"const": "a", "title": "A"}]}
                    },
                    "required": ["n"]
                }))
                .unwrap(),
            },
        }
    }

    #[tokio::test]
    async fn an_invalid_answer_keeps_the_elicitation_open() {
        let reg = Elicitations::default();
        let (id, rx) = reg.open(&form_request());
        let bad = ElicitationResponse::Accept {
            content: json!({"n": 9}).as_object().unwrap().clone(),
        };
        let err = reg.answer(id, bad).unwrap_err();
        assert!(err.contains("`n` must be at most 3"), "{err}");
        let good = ElicitationResponse::Accept {
            content: json!({"n": 2.0}).as_object().unwrap().clone(),
        };
        reg.answer(id, good).unwrap();
        assert_eq!(
            rx.await.unwrap(),
            ElicitationResponse::Accept {
                content: json!({"n": 2}).as_object().unwrap().clone()
            }
        );
        assert!(reg.answer(id, ElicitationResponse::Decline).is_err());
    }

    #[test]
    fn fields_reach_lua_in_order_with_snake_case_keys() {
        let ElicitationMode::Form { schema } = form_request().mode else {
            unreachable!()
        };
        assert_eq!(
            lua_fields(&schema),
            json!([
                {"name": "n", "label": "n", "required": true, "type": "integer", "maximum": 3.0},
                {"name": "c", "label": "c", "required": false, "type": "enum",
                 "choices": [{"value": "a", "title": "A"}]}
            ])
        );
    }
}
