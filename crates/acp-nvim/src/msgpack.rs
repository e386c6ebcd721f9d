//! Conversions between msgpack values (what travels to and from Neovim)
//! and JSON: for the parts of a command passed on to the agent as they are
//! (content blocks, MCP server descriptions) and for JSON views of what was
//! encoded (transcript records, the golden fixtures, tests).
//!
//! Values for Lua are never built from JSON: they are encoded by
//! [`crate::protocol::wire`]. JSON `null` becomes msgpack nil and an empty
//! JSON object stays a map.

use std::borrow::Cow;
use std::io::{self, Write};

use rmpv::Value;
use serde_json::Value as Json;

/// Converts a JSON value into the msgpack value sent to Neovim.
pub fn from_json(json: &Json) -> Value {
    match json {
        Json::Null => Value::Nil,
        Json::Bool(b) => Value::Boolean(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                // serde_json numbers are finite, so this is a plain float.
                Value::from(n.as_f64().unwrap_or(0.0))
            }
        }
        Json::String(s) => Value::from(s.as_str()),
        Json::Array(items) => Value::Array(items.iter().map(from_json).collect()),
        Json::Object(map) => Value::Map(
            map.iter()
                .map(|(k, v)| (Value::from(k.as_str()), from_json(v)))
                .collect(),
        ),
    }
}

/// Converts a msgpack value from Neovim into JSON, for the parts of a
/// command that are passed on to the agent as they are (content blocks, MCP
/// server descriptions).
///
/// Neovim sends Lua strings as msgpack strings (binary only for strings that
/// are not UTF-8); map keys that are not strings (Lua tables with integer
/// keys that are not a list) are written as their text. Non-finite floats,
/// which JSON cannot hold, become `null`. Ext values (buffer/window handles)
/// have no JSON meaning and become `null` too.
pub fn to_json(value: &Value) -> Json {
    match value {
        Value::Nil => Json::Null,
        Value::Boolean(b) => Json::Bool(*b),
        Value::Integer(i) => {
            if let Some(n) = i.as_i64() {
                Json::from(n)
            } else if let Some(n) = i.as_u64() {
                Json::from(n)
            } else {
                Json::Null
            }
        }
        Value::F32(f) => float(f64::from(*f)),
        Value::F64(f) => float(*f),
        Value::String(s) => Json::String(String::from_utf8_lossy(s.as_bytes()).into_owned()),
        Value::Binary(b) => Json::String(String::from_utf8_lossy(b).into_owned()),
        Value::Array(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::Map(entries) => Json::Object(
            entries
                .iter()
                .map(|(k, v)| (key_text(k), to_json(v)))
                .collect(),
        ),
        Value::Ext(..) => Json::Null,
    }
}

/// Writes the JSON text of [`to_json`]`(value)` (the same values, keys in
/// the map's order) without building the JSON tree, leaving out the key
/// `skip_key` of the top-level map. For transcript records: converting a
/// streamed answer's text into a tree to write it copied and checked it
/// twice more (bench/fixes.md section 11).
pub fn write_json(out: &mut impl Write, value: &Value, skip_key: Option<&str>) -> io::Result<()> {
    match value {
        Value::Nil | Value::Ext(..) => out.write_all(b"null"),
        Value::Boolean(b) => out.write_all(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => match (i.as_i64(), i.as_u64()) {
            (Some(n), _) => json_text(out, &n),
            (_, Some(n)) => json_text(out, &n),
            _ => out.write_all(b"null"),
        },
        Value::F32(f) => json_text(out, &float(f64::from(*f))),
        Value::F64(f) => json_text(out, &float(*f)),
        Value::String(s) => json_text(out, &text(s.as_bytes())),
        Value::Binary(b) => json_text(out, &text(b)),
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write_json(out, item, None)?;
            }
            out.write_all(b"]")
        }
        Value::Map(entries) => {
            out.write_all(b"{")?;
            let mut first = true;
            for (k, v) in entries {
                let key = key_text(k);
                if skip_key == Some(key.as_str()) {
                    continue;
                }
                if !first {
                    out.write_all(b",")?;
                }
                first = false;
                json_text(out, &key)?;
                out.write_all(b":")?;
                write_json(out, v, None)?;
            }
            out.write_all(b"}")
        }
    }
}

/// Bytes as text: borrowed when they are UTF-8 (the checked fast path), as
/// [`to_json`] reads them otherwise.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

fn json_text<T: serde::Serialize + ?Sized>(out: &mut impl Write, value: &T) -> io::Result<()> {
    serde_json::to_writer(out, value).map_err(io::Error::from)
}

fn float(f: f64) -> Json {
    serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number)
}

fn key_text(key: &Value) -> String {
    match key {
        Value::String(s) => String::from_utf8_lossy(s.as_bytes()).into_owned(),
        Value::Binary(b) => String::from_utf8_lossy(b).into_owned(),
        other => other.to_string(),
    }
}

/// Reads a string-keyed field of a msgpack map.
pub fn field<'a>(map: &'a Value, key: &str) -> Option<&'a Value> {
    match map {
        Value::Map(entries) => entries
            .iter()
            .find(|(k, _)| k.as_str() == Some(key))
            .map(|(_, v)| v),
        _ => None,
    }
}

/// Builds a string-keyed msgpack map, for tests that send hand-written
/// commands (the backend's own maps are encoded by
/// [`crate::protocol::wire::encode`]).
#[cfg(test)]
pub fn map<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (Value::from(k), v))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_round_trips_through_msgpack() {
        let j = json!({
            "type": "text",
            "text": "héllo\nworld",
            "n": -3,
            "big": u64::MAX,
            "f": 1.5,
            "none": null,
            "list": [true, false, {"empty": {}}, []],
        });
        assert_eq!(to_json(&from_json(&j)), j);
    }

    #[test]
    fn written_json_is_the_text_of_the_json_view() {
        let v = Value::Map(vec![
            (Value::from("chat_id"), Value::from("c1")),
            (Value::from("text"), Value::from("héllo \"q\" \\ \n\u{1}")),
            (
                Value::from(7),
                Value::Array(vec![Value::Nil, Value::from(true), Value::from(-3)]),
            ),
            (Value::from("big"), Value::from(u64::MAX)),
            (Value::from("f"), Value::from(1.5)),
            (Value::from("nan"), Value::from(f64::NAN)),
            (Value::from("bin"), Value::Binary(b"ab\xff".to_vec())),
            (Value::Binary(b"k\xff".to_vec()), Value::Ext(0, vec![1])),
            (Value::from("empty"), Value::Map(Vec::new())),
        ]);
        let mut out = Vec::new();
        write_json(&mut out, &v, None).unwrap();
        let written: Json = serde_json::from_slice(&out).unwrap();
        assert_eq!(written, to_json(&v));

        out.clear();
        write_json(&mut out, &v, Some("chat_id")).unwrap();
        let mut expected = to_json(&v);
        expected.as_object_mut().unwrap().remove("chat_id");
        assert_eq!(serde_json::from_slice::<Json>(&out).unwrap(), expected);
    }

    #[test]
    fn null_becomes_nil_and_maps_keep_string_keys() {
        let v = from_json(&json!({"a": null}));
        assert_eq!(field(&v, "a"), Some(&Value::Nil));
        assert_eq!(field(&v, "b"), None);
    }

    #[test]
    fn odd_msgpack_values_map_to_json_without_panicking() {
        let v = Value::Map(vec![
            (Value::from(1), Value::from(f64::NAN)),
            (Value::from("bin"), Value::Binary(b"ab\xff".to_vec())),
            (Value::from("ext"), Value::Ext(0, vec![1])),
        ]);
        let j = to_json(&v);
        assert_eq!(j["1"], Json::Null);
        assert_eq!(j["bin"], json!("ab\u{fffd}"));
        assert_eq!(j["ext"], Json::Null);
    }
}
