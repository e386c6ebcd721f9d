//! The one encoder of values for Lua: serde straight into msgpack values,
//! every key in snake_case.
//!
//! The backend's own types and acp-client's (session changes, tool calls,
//! content blocks, capabilities, modes...) are serialized through this
//! encoder, so Lua reads every field under one name whatever the type's
//! serde spelling (`toolCallId` arrives as `tool_call_id`, `mimeType` as
//! `mime_type`). Structs become string-keyed maps (rmpv's own serializer
//! writes them as arrays); a field whose value is nil (`None`, JSON
//! `null`) is left out, so Lua never reads `vim.NIL` from a protocol field.
//!
//! Data the agent made up rather than the schema is passed as it is: the
//! values under the keys of [`OPAQUE_KEYS`] (a tool call's `raw_input`, an
//! unknown update's `raw`, `_meta`, an auth method's `env`, an
//! elicitation's `requested_schema`), so that the user
//! sees the agent's JSON and environment variable names stay intact.

use std::fmt;

use rmpv::Value;
use serde::ser::{self, Serialize};

/// Keys whose values are the agent's own data: encoded without renaming.
pub const OPAQUE_KEYS: &[&str] = &[
    "raw",
    "raw_input",
    "raw_output",
    "_meta",
    "meta",
    "env",
    // An elicitation's JSON Schema: its keywords (`minLength`, `oneOf`)
    // are the schema's language, documented as "as the agent sent it".
    "requested_schema",
];

/// Encodes `value` for Lua. Serialization of the protocol's types cannot
/// fail (they hold no maps with non-string keys); a failure is logged and
/// encoded as nil rather than lost silently.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Value {
    value
        .serialize(Encoder { rename: true })
        .unwrap_or_else(|e| {
            tracing::error!("could not encode a value for Lua: {e}");
            Value::Nil
        })
}

/// A key as Lua reads it: `camelCase` becomes `camel_case` (an uppercase
/// letter after a lowercase letter or digit gets an `_` and is lowered);
/// keys without such a letter (`snake_case`, `SCREAMING_CASE`) are kept.
pub fn snake_key(key: &str) -> String {
    let bytes = key.as_bytes();
    let needs = bytes
        .windows(2)
        .any(|w| (w[0].is_ascii_lowercase() || w[0].is_ascii_digit()) && w[1].is_ascii_uppercase());
    if !needs {
        return key.to_owned();
    }
    let mut out = String::with_capacity(key.len() + 4);
    let mut prev_lower = false;
    for c in key.chars() {
        if c.is_ascii_uppercase() && prev_lower {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
        prev_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
    }
    out
}

/// The ACP spelling of a key Lua wrote in snake_case (`mime_type` becomes
/// `mimeType`); a leading `_` (`_meta`) is kept.
pub fn camel_key(key: &str) -> String {
    let (lead, rest) = key.split_at(key.len() - key.trim_start_matches('_').len());
    let mut out = String::with_capacity(key.len());
    out.push_str(lead);
    let mut upper = false;
    for c in rest.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.push(c.to_ascii_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// An ACP object Lua wrote (a prompt's content block) with its keys in
/// ACP's camelCase, so that serde decodes it into the schema's type. The
/// values under [`OPAQUE_KEYS`] are kept as they are.
pub fn to_acp_keys(value: serde_json::Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match value {
        Json::Object(map) => Json::Object(
            map.into_iter()
                .map(|(k, v)| {
                    if OPAQUE_KEYS.contains(&k.as_str()) {
                        (k, v)
                    } else {
                        (camel_key(&k), to_acp_keys(v))
                    }
                })
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.into_iter().map(to_acp_keys).collect()),
        other => other,
    }
}

/// A value that could not be encoded.
#[derive(Debug)]
pub struct EncodeError(String);

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EncodeError {}

impl ser::Error for EncodeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        EncodeError(msg.to_string())
    }
}

#[derive(Clone, Copy)]
struct Encoder {
    /// False under an opaque key: keys are kept as the agent sent them.
    rename: bool,
}

impl Encoder {
    fn key(self, key: &str) -> (String, Encoder) {
        if !self.rename {
            return (key.to_owned(), self);
        }
        let key = snake_key(key);
        let rename = !OPAQUE_KEYS.contains(&key.as_str());
        (key, Encoder { rename })
    }
}

type Result<T> = std::result::Result<T, EncodeError>;

/// Collects a sequence.
struct Seq {
    enc: Encoder,
    items: Vec<Value>,
    /// `Some(variant)` for a tuple variant: `{variant: [items]}`.
    variant: Option<String>,
}

/// Collects a map or struct.
struct Map {
    enc: Encoder,
    entries: Vec<(Value, Value)>,
    /// The key whose value comes next (maps only).
    next: Option<(String, Encoder)>,
    /// `Some(variant)` for a struct variant: `{variant: {fields}}`.
    variant: Option<String>,
}

fn wrap(variant: Option<String>, inner: Value) -> Value {
    match variant {
        Some(v) => Value::Map(vec![(Value::from(v), inner)]),
        None => inner,
    }
}

/// `fn $name(self, v: $ty) -> Result<Value> { Ok(Value::from(v)) }` for each pair.
macro_rules! scalars {
    ($($name:ident: $ty:ty),* $(,)?) => {
        $(fn $name(self, v: $ty) -> Result<Value> {
            Ok(Value::from(v))
        })*
    };
}

impl ser::Serializer for Encoder {
    type Ok = Value;
    type Error = EncodeError;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = Seq;
    type SerializeMap = Map;
    type SerializeStruct = Map;
    type SerializeStructVariant = Map;

    // Every scalar msgpack holds as it is.
    scalars!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
    );
    fn serialize_f32(self, v: f32) -> Result<Value> {
        Ok(Value::from(f64::from(v)))
    }
    fn serialize_f64(self, v: f64) -> Result<Value> {
        Ok(Value::from(v))
    }
    fn serialize_char(self, v: char) -> Result<Value> {
        Ok(Value::from(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value> {
        Ok(Value::from(v))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value> {
        Ok(Value::Binary(v.to_vec()))
    }
    fn serialize_none(self) -> Result<Value> {
        Ok(Value::Nil)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value> {
        Ok(Value::Nil)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value> {
        Ok(Value::Nil)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Value> {
        Ok(Value::from(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Value> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value> {
        let (key, enc) = self.key(variant);
        Ok(Value::Map(vec![(Value::from(key), value.serialize(enc)?)]))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq> {
        Ok(Seq {
            enc: self,
            items: Vec::with_capacity(len.unwrap_or(0)),
            variant: None,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Seq> {
        let (key, enc) = self.key(variant);
        Ok(Seq {
            enc,
            items: Vec::with_capacity(len),
            variant: Some(key),
        })
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Map> {
        Ok(Map {
            enc: self,
            entries: Vec::with_capacity(len.unwrap_or(0)),
            next: None,
            variant: None,
        })
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Map> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Map> {
        let (key, enc) = self.key(variant);
        Ok(Map {
            enc,
            entries: Vec::with_capacity(len),
            next: None,
            variant: Some(key),
        })
    }
}

impl ser::SerializeSeq for Seq {
    type Ok = Value;
    type Error = EncodeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        self.items.push(value.serialize(self.enc)?);
        Ok(())
    }
    fn end(self) -> Result<Value> {
        Ok(wrap(self.variant, Value::Array(self.items)))
    }
}

impl ser::SerializeTuple for Seq {
    type Ok = Value;
    type Error = EncodeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for Seq {
    type Ok = Value;
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleVariant for Seq {
    type Ok = Value;
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value> {
        ser::SerializeSeq::end(self)
    }
}

/// Map keys are strings in every type Lua gets; other scalars are written
/// as their text, like `vim.json` would.
struct KeyText;

impl KeyText {
    fn of<T: Serialize + ?Sized>(key: &T) -> Result<String> {
        match key.serialize(Encoder { rename: false })? {
            Value::String(s) => Ok(s.into_str().unwrap_or_default()),
            Value::Integer(i) => Ok(i.to_string()),
            Value::Boolean(b) => Ok(b.to_string()),
            other => Err(EncodeError(format!(
                "a map key must be a string, not {other}"
            ))),
        }
    }
}

impl Map {
    /// Nil fields are left out of the schema's maps, so that Lua never sees
    /// `vim.NIL` (an absent field reads as nil); the agent's own data keeps
    /// its nulls.
    fn push(&mut self, key: &str, value: Value) {
        if value.is_nil() && self.enc.rename {
            return;
        }
        self.entries.push((Value::from(key), value));
    }
}

impl ser::SerializeMap for Map {
    type Ok = Value;
    type Error = EncodeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<()> {
        self.next = Some(self.enc.key(&KeyText::of(key)?));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<()> {
        let (key, enc) = self
            .next
            .take()
            .ok_or_else(|| EncodeError("a map value without a key".into()))?;
        let value = value.serialize(enc)?;
        self.push(&key, value);
        Ok(())
    }
    fn end(self) -> Result<Value> {
        Ok(wrap(self.variant, Value::Map(self.entries)))
    }
}

impl ser::SerializeStruct for Map {
    type Ok = Value;
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        let (key, enc) = self.enc.key(key);
        let value = value.serialize(enc)?;
        self.push(&key, value);
        Ok(())
    }
    fn end(self) -> Result<Value> {
        ser::SerializeMap::end(self)
    }
}

impl ser::SerializeStructVariant for Map {
    type Ok = Value;
    type Error = EncodeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<()> {
        ser::SerializeStruct::serialize_field(self, key, value)
    }
    fn end(self) -> Result<Value> {
        ser::SerializeMap::end(self)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::msgpack;
    use serde_json::json;

    #[test]
    fn camel_case_keys_become_snake_case() {
        assert_eq!(snake_key("toolCallId"), "tool_call_id");
        assert_eq!(snake_key("mimeType"), "mime_type");
        assert_eq!(snake_key("already_snake"), "already_snake");
        assert_eq!(snake_key("API_KEY"), "API_KEY");
        assert_eq!(snake_key("_meta"), "_meta");
        assert_eq!(snake_key("v2Name"), "v2_name");
    }

    #[test]
    fn lua_keys_become_acp_keys() {
        assert_eq!(camel_key("mime_type"), "mimeType");
        assert_eq!(camel_key("_meta"), "_meta");
        assert_eq!(camel_key("mimeType"), "mimeType");
        assert_eq!(
            to_acp_keys(json!({"type": "image", "mime_type": "image/png",
                               "_meta": {"a_b": 1}, "resource": {"mime_type": "x"}})),
            json!({"type": "image", "mimeType": "image/png",
                   "_meta": {"a_b": 1}, "resource": {"mimeType": "x"}})
        );
    }

    #[test]
    fn nested_keys_are_renamed_but_opaque_values_are_not() {
        let v = json!({
            "toolCallId": "t1",
            "content": [{"type": "diff", "oldText": null, "newText": "x"}],
            "rawInput": {"filePath": "/a", "nested": {"someKey": 1, "none": null}},
            "_meta": {"vendorKey": true},
            "env": {"MY_TOKEN": "1", "lowerCase": "2"},
        });
        let got = msgpack::to_json(&encode(&v));
        assert_eq!(
            got,
            json!({
                "tool_call_id": "t1",
                "content": [{"type": "diff", "new_text": "x"}],
                "raw_input": {"filePath": "/a", "nested": {"someKey": 1, "none": null}},
                "_meta": {"vendorKey": true},
                "env": {"MY_TOKEN": "1", "lowerCase": "2"},
            })
        );
    }

    #[test]
    fn structs_are_string_keyed_maps_and_none_is_nil() {
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct S {
            exit_code: Option<u32>,
            signal: Option<String>,
        }
        let v = encode(&S {
            exit_code: Some(3),
            signal: None,
        });
        assert_eq!(msgpack::field(&v, "exit_code"), Some(&Value::from(3)));
        assert_eq!(
            msgpack::field(&v, "signal"),
            None,
            "nil fields are left out"
        );
    }
}
