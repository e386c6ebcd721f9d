//! `expect` checks on the client's answers. A failed check becomes an
//! "EXPECTATION FAILED: ..." message in the chat and ends the turn with
//! `refusal`, so a test sees it in the transcript.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::subst::lookup;
use crate::wire::Reply;

/// What a request's answer must look like.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Expect {
    /// An error with this code (a number), or any error (`true`).
    #[serde(default)]
    pub error: Option<Value>,
    /// `true`: a result, whatever it holds; `false`: any error.
    #[serde(default)]
    pub ok: Option<bool>,
    /// A result containing this JSON (objects may hold more keys).
    #[serde(default)]
    pub result: Option<Value>,
    /// A result whose string at each dotted path contains the given text.
    #[serde(default)]
    pub contains: BTreeMap<String, String>,
}

impl Expect {
    /// Checks an answer; the error says what was expected and what came.
    pub fn check(&self, reply: &Reply) -> Result<(), String> {
        let any_error = Value::Bool(true);
        let want_error = match (&self.error, self.ok) {
            (Some(code), _) => Some(code),
            (None, Some(false)) => Some(&any_error),
            (None, _) => None,
        };
        if let Some(want) = want_error {
            return match reply {
                Ok(result) => Err(format!("expected an error, got result {result}")),
                Err(err) => match want {
                    Value::Bool(true) => Ok(()),
                    code if code.as_i64() == Some(err.code) => Ok(()),
                    code => Err(format!(
                        "expected error {code}, got error {}: {}",
                        err.code, err.message
                    )),
                },
            };
        }
        let result = match reply {
            Ok(result) => result,
            Err(err) => {
                return Err(format!(
                    "expected a result, got error {}: {}",
                    err.code, err.message
                ))
            }
        };
        if let Some(want) = &self.result {
            if !subset(want, result) {
                return Err(format!("expected a result containing {want}, got {result}"));
            }
        }
        for (path, needle) in &self.contains {
            match lookup(result, path).as_ref().and_then(Value::as_str) {
                Some(text) if text.contains(needle.as_str()) => {}
                Some(text) => {
                    return Err(format!(
                        "expected `{path}` to contain {needle:?}, got {text:?}"
                    ))
                }
                None => return Err(format!("expected a string at `{path}` in {result}")),
            }
        }
        Ok(())
    }
}

/// What a `runTerminal` step must observe.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TerminalExpect {
    #[serde(default)]
    pub exit_code: Option<u32>,
    #[serde(default)]
    pub output_contains: Option<String>,
}

impl TerminalExpect {
    /// Checks an exit code and output; the error says what differed.
    pub fn check(&self, exit_code: Option<u64>, output: &str) -> Result<(), String> {
        if let Some(want) = self.exit_code {
            if exit_code != Some(u64::from(want)) {
                return Err(format!(
                    "expected the command to exit with {want}, got {exit_code:?}"
                ));
            }
        }
        if let Some(needle) = &self.output_contains {
            if !output.contains(needle.as_str()) {
                return Err(format!(
                    "expected terminal output to contain {needle:?}, got {output:?}"
                ));
            }
        }
        Ok(())
    }
}

/// Whether `have` contains `want`: objects by key (recursively), everything
/// else by equality.
pub fn subset(want: &Value, have: &Value) -> bool {
    match (want, have) {
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(k, w)| have.get(k).is_some_and(|h| subset(w, h))),
        _ => want == have,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::wire::RpcError;
    use serde_json::json;

    fn expect(v: Value) -> Expect {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn error_expectations() {
        let not_found = Err(RpcError::new(-32002, "gone"));
        assert!(expect(json!({"error": -32002})).check(&not_found).is_ok());
        assert!(expect(json!({"error": true})).check(&not_found).is_ok());
        let err = expect(json!({"error": -32601}))
            .check(&not_found)
            .unwrap_err();
        assert!(err.contains("-32601") && err.contains("-32002"), "{err}");
        assert!(expect(json!({"error": true}))
            .check(&Ok(json!({})))
            .is_err());
        assert!(expect(json!({"ok": false})).check(&not_found).is_ok());
        assert!(expect(json!({"ok": false})).check(&Ok(json!({}))).is_err());
    }

    #[test]
    fn result_expectations() {
        let read = Ok(json!({"content": "hello world", "extra": 1}));
        assert!(expect(json!({"result": {"content": "hello world"}}))
            .check(&read)
            .is_ok());
        assert!(expect(json!({"contains": {"content": "world"}}))
            .check(&read)
            .is_ok());
        assert!(expect(json!({"contains": {"content": "moon"}}))
            .check(&read)
            .is_err());
        assert!(expect(json!({"contains": {"missing": "x"}}))
            .check(&read)
            .is_err());
        assert!(expect(json!({"result": {"content": "other"}}))
            .check(&read)
            .is_err());
        assert!(expect(json!({"ok": true}))
            .check(&Err(RpcError::new(1, "x")))
            .is_err());
        assert!(expect(json!({})).check(&read).is_ok());
    }

    #[test]
    fn subset_compares_arrays_whole() {
        assert!(subset(&json!({"a": [1, 2]}), &json!({"a": [1, 2], "b": 0})));
        assert!(!subset(&json!({"a": [1]}), &json!({"a": [1, 2]})));
        assert!(subset(&json!(null), &json!(null)));
    }

    #[test]
    fn terminal_expectations() {
        let t = TerminalExpect {
            exit_code: Some(0),
            output_contains: Some("ok".into()),
        };
        assert!(t.check(Some(0), "all ok").is_ok());
        assert!(t.check(Some(1), "all ok").is_err());
        assert!(t.check(None, "all ok").is_err());
        assert!(t.check(Some(0), "nope").is_err());
    }
}
