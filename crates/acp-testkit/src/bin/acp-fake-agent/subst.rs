//! `{{name}}` placeholders in scenario strings.
//!
//! A placeholder names a variable, optionally followed by a dotted path into
//! it (`{{term.terminalId}}`, `{{readme.error.message}}`, `{{list.0}}`).
//! Placeholders whose variable is unknown stay as they are, so a step list
//! can be substituted before the variables of its later steps exist.

use serde_json::{Map, Value};

/// Replaces placeholders in every string of `value` (keys are left alone).
/// A string that is exactly one placeholder takes the variable's JSON value
/// as is; a placeholder inside longer text is replaced by the value's text.
pub fn substitute(value: &Value, vars: &Map<String, Value>) -> Value {
    match value {
        Value::String(s) => substitute_str(s, vars),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, vars)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, vars)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn substitute_str(s: &str, vars: &Map<String, Value>) -> Value {
    if !s.contains("{{") {
        return Value::String(s.to_owned());
    }
    if let Some(name) = s.strip_prefix("{{").and_then(|r| r.strip_suffix("}}")) {
        if !name.contains("{{") && !name.contains("}}") {
            if let Some(found) = resolve(name, vars) {
                return found;
            }
        }
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return Value::String(out);
        };
        let name = &after[..end];
        match resolve(name, vars) {
            Some(Value::String(text)) => out.push_str(&text),
            Some(other) => out.push_str(&other.to_string()),
            None => out.push_str(&rest[start..start + 2 + end + 2]),
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Value::String(out)
}

fn resolve(name: &str, vars: &Map<String, Value>) -> Option<Value> {
    let name = name.trim();
    let (head, path) = match name.split_once('.') {
        Some((head, path)) => (head, Some(path)),
        None => (name, None),
    };
    let root = vars.get(head)?;
    match path {
        Some(path) => lookup(root, path),
        None => Some(root.clone()),
    }
}

/// Follows a dotted path (object keys, array indexes) into a value.
pub fn lookup(value: &Value, path: &str) -> Option<Value> {
    let mut here = value;
    for part in path.split('.') {
        here = match here {
            Value::Object(map) => map.get(part)?,
            Value::Array(items) => items.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(here.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vars() -> Map<String, Value> {
        let Value::Object(map) = json!({
            "cwd": "/tmp/x",
            "sessionId": "s-1",
            "term": {"terminalId": "t-9", "exitCode": 0, "lines": ["a", "b"]}
        }) else {
            unreachable!()
        };
        map
    }

    #[test]
    fn replaces_placeholders_everywhere_but_keys() {
        let got = substitute(
            &json!({"path": "{{cwd}}/a.txt", "{{cwd}}": ["{{sessionId}}", 3]}),
            &vars(),
        );
        assert_eq!(got, json!({"path": "/tmp/x/a.txt", "{{cwd}}": ["s-1", 3]}));
    }

    #[test]
    fn whole_placeholder_keeps_the_json_type() {
        assert_eq!(substitute(&json!("{{term.exitCode}}"), &vars()), json!(0));
        assert_eq!(
            substitute(&json!("{{term.lines}}"), &vars()),
            json!(["a", "b"])
        );
        assert_eq!(
            substitute(&json!("code {{term.exitCode}}"), &vars()),
            json!("code 0")
        );
        assert_eq!(substitute(&json!("{{term.lines.1}}"), &vars()), json!("b"));
    }

    #[test]
    fn unknown_placeholders_stay_for_later() {
        assert_eq!(
            substitute(&json!("{{later.id}} in {{cwd}} {{ unclosed"), &vars()),
            json!("{{later.id}} in /tmp/x {{ unclosed")
        );
        assert_eq!(
            substitute(&json!("{{term.nope}}"), &vars()),
            json!("{{term.nope}}")
        );
    }
}
