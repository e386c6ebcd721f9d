//! A serde [`Deserializer`] over the msgpack values the plugin sends, so
//! that every command is decoded by `#[derive(Deserialize)]` and its field
//! attributes instead of by hand.
//!
//! It reads Lua's values the way Lua writes them:
//! - nil is "absent": a map entry whose value is nil is skipped, so an
//!   optional field gets its default and a required one is missing;
//! - an empty Lua table may arrive as an empty map or an empty array, so
//!   each is accepted where the other is expected;
//! - errors are sentences for the user: [`Error`] keeps the path of the
//!   field (`agent.cmd`) and says what the field must be and what it got
//!   (`` `limit` must be a non-negative integer, got a string ``).
//!
//! The helpers at the end are the field types shared by the commands:
//! absolute paths, chat ids and request ids that Lua may send as numbers.

use std::fmt;
use std::path::PathBuf;

use rmpv::Value;
use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, Expected, IntoDeserializer, MapAccess,
    SeqAccess, Unexpected, VariantAccess, Visitor,
};
use serde::Deserialize;

/// Why a value could not be decoded, with the path of the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The keys from the command's table down to the field, outermost first.
    path: Vec<String>,
    reason: Reason,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Reason {
    /// A required field is absent (or nil).
    Missing,
    /// The method is not one of the enum's variants: the caller tries the
    /// next group of commands.
    NotMine,
    /// Anything else, said as the rest of a sentence about the field.
    Said(String),
}

impl Error {
    fn said(reason: impl Into<String>) -> Self {
        Error {
            path: Vec::new(),
            reason: Reason::Said(reason.into()),
        }
    }

    /// The error of a field under `key`.
    fn under(mut self, key: &str) -> Self {
        self.path.insert(0, key.to_owned());
        self
    }

    /// True when the method was none of the enum's.
    pub(super) fn is_not_mine(&self) -> bool {
        self.reason == Reason::NotMine
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path.join(".");
        match &self.reason {
            Reason::Missing => write!(f, "`{path}` is missing"),
            Reason::NotMine => f.write_str("no such method"),
            Reason::Said(s) if path.is_empty() => f.write_str(s),
            Reason::Said(s) => write!(f, "`{path}` {s}"),
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::said(msg.to_string())
    }

    fn missing_field(field: &'static str) -> Self {
        Error {
            path: vec![field.to_owned()],
            reason: Reason::Missing,
        }
    }

    fn invalid_type(unexp: Unexpected<'_>, exp: &dyn Expected) -> Self {
        Error::said(format!("must be {}, got {}", expected(exp), kind(&unexp)))
    }

    fn invalid_value(unexp: Unexpected<'_>, exp: &dyn Expected) -> Self {
        let got = match unexp {
            Unexpected::Signed(n) => n.to_string(),
            Unexpected::Unsigned(n) => n.to_string(),
            Unexpected::Str(s) => format!("{s:?}"),
            Unexpected::Bytes(_) => "text that is not UTF-8".to_owned(),
            other => kind(&other).to_owned(),
        };
        Error::said(format!("must be {}, got {got}", expected(exp)))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        Error::said(format!("must be {}, got {variant:?}", one_of(expected)))
    }
}

/// `"a", "b" or "c"`.
fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// Serde's name of what a visitor expects, in the plugin's words.
fn expected(exp: &dyn Expected) -> String {
    let said = exp.to_string();
    match said.as_str() {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer".into(),
        "a boolean" => "true or false".into(),
        "a sequence" => "a list".into(),
        "a map" => "a table".into(),
        s if s.starts_with("struct ") => "a table".into(),
        _ => said,
    }
}

/// A short name of a value's type, for error messages.
fn kind<'a>(unexp: &Unexpected<'a>) -> &'a str {
    match unexp {
        Unexpected::Bool(_) => "a boolean",
        Unexpected::Unsigned(_) | Unexpected::Signed(_) | Unexpected::Float(_) => "a number",
        Unexpected::Char(_) | Unexpected::Str(_) | Unexpected::Bytes(_) => "a string",
        Unexpected::Unit | Unexpected::Option => "nil",
        Unexpected::Seq => "a list",
        Unexpected::Map | Unexpected::StructVariant => "a table",
        Unexpected::Other(what) => what,
        _ => "something else",
    }
}

/// The serde view of a value for the error messages.
fn unexpected(v: &Value) -> Unexpected<'_> {
    match v {
        Value::Nil => Unexpected::Unit,
        Value::Boolean(b) => Unexpected::Bool(*b),
        Value::Integer(i) => match i.as_u64() {
            Some(n) => Unexpected::Unsigned(n),
            None => Unexpected::Signed(i.as_i64().unwrap_or(i64::MIN)),
        },
        Value::F32(f) => Unexpected::Float(f64::from(*f)),
        Value::F64(f) => Unexpected::Float(*f),
        Value::String(s) => Unexpected::Str(s.as_str().unwrap_or("")),
        Value::Binary(b) => Unexpected::Bytes(b),
        Value::Array(_) => Unexpected::Seq,
        Value::Map(_) => Unexpected::Map,
        Value::Ext(..) => Unexpected::Other("a handle"),
    }
}

/// Decodes the command enum `T` from a method name and its parameter map:
/// the method is the variant (its `#[serde(rename)]`), the map its
/// content. A method that is none of `T`'s variants is [`Error::is_not_mine`].
pub(super) fn from_call<'de, T: Deserialize<'de>>(
    method: &str,
    params: &Value,
) -> Result<T, Error> {
    T::deserialize(Call { method, params })
}

/// A msgpack value as a serde deserializer.
#[derive(Clone, Copy)]
struct Msg<'a>(&'a Value);

impl<'de> Deserializer<'de> for Msg<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Nil => visitor.visit_unit(),
            Value::Boolean(b) => visitor.visit_bool(*b),
            Value::Integer(i) => match (i.as_u64(), i.as_i64()) {
                (Some(n), _) => visitor.visit_u64(n),
                (None, Some(n)) => visitor.visit_i64(n),
                (None, None) => Err(Error::said("is an integer out of range")),
            },
            Value::F32(f) => visitor.visit_f64(f64::from(*f)),
            Value::F64(f) => visitor.visit_f64(*f),
            // Text that is not UTF-8 is bytes: refused where a string is
            // wanted, made lossy text where JSON is passed on (`LossyJson`).
            Value::String(s) => match s.as_str() {
                Some(s) => visitor.visit_str(s),
                None => visitor.visit_bytes(s.as_bytes()),
            },
            Value::Binary(b) => visitor.visit_bytes(b),
            Value::Array(items) => visitor.visit_seq(Seq(items.iter())),
            Value::Map(entries) => visitor.visit_map(Map {
                entries: entries.iter(),
                value: None,
            }),
            Value::Ext(..) => Err(de::Error::invalid_type(unexpected(self.0), &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Nil => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            // An empty Lua table may arrive as an empty map.
            Value::Map(m) if m.is_empty() => visitor.visit_seq(Seq([].iter())),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            // An empty Lua table may arrive as an empty array.
            Value::Array(a) if a.is_empty() => visitor.visit_map(Map {
                entries: [].iter(),
                value: None,
            }),
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_map(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            // Only unit variants are written as values: `mode = "refresh"`.
            Value::String(s) => match s.as_str() {
                Some(s) => visitor.visit_enum(s.into_deserializer()),
                None => Err(Error::said("must be UTF-8 text")),
            },
            other => Err(de::Error::invalid_type(unexpected(other), &visitor)),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct tuple tuple_struct identifier ignored_any
    }
}

/// The items of a list; an item's errors are said of the list's field.
struct Seq<'a>(std::slice::Iter<'a, Value>);

impl<'de> SeqAccess<'de> for Seq<'_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0.next().map(|v| seed.deserialize(Msg(v))).transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

/// The entries of a table, nil values left out; a value's errors are said
/// of its key.
struct Map<'a> {
    entries: std::slice::Iter<'a, (Value, Value)>,
    /// The entry whose key was just read.
    value: Option<(&'a str, &'a Value)>,
}

impl<'de> MapAccess<'de> for Map<'_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        for (k, v) in self.entries.by_ref() {
            if v.is_nil() {
                continue;
            }
            let Some(key) = k.as_str() else {
                return Err(Error::said(format!(
                    "keys must be strings, got {}",
                    kind(&unexpected(k))
                )));
            };
            self.value = Some((key, v));
            return seed.deserialize(key.into_deserializer()).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let Some((key, v)) = self.value.take() else {
            return Err(Error::said("has a value without a key"));
        };
        seed.deserialize(Msg(v)).map_err(|e| e.under(key))
    }
}

/// A command: the method name picks the variant, the parameter map is its
/// content.
struct Call<'a> {
    method: &'a str,
    params: &'a Value,
}

impl<'de> Deserializer<'de> for Call<'_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Error> {
        Err(Error::said("a command decodes into an enum of commands"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if !variants.contains(&self.method) {
            return Err(Error {
                path: Vec::new(),
                reason: Reason::NotMine,
            });
        }
        visitor.visit_enum(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

impl<'de> EnumAccess<'de> for Call<'_> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Self), Error> {
        let method: de::value::StrDeserializer<'_, Error> = self.method.into_deserializer();
        Ok((seed.deserialize(method)?, self))
    }
}

impl<'de> VariantAccess<'de> for Call<'_> {
    type Error = Error;

    /// A command without parameters ignores whatever table came with it.
    fn unit_variant(self) -> Result<(), Error> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(Msg(self.params))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        Msg(self.params).deserialize_seq(visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        Msg(self.params).deserialize_map(visitor)
    }
}

/// An absolute path (`#[serde(deserialize_with)]`).
pub(super) fn abs_path<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
    let p = PathBuf::from(String::deserialize(d)?);
    if p.is_absolute() {
        Ok(p)
    } else {
        Err(de::Error::custom(format!(
            "must be an absolute path, got `{}`",
            p.display()
        )))
    }
}

/// An optional absolute path (with `#[serde(default)]`).
pub(super) fn opt_abs_path<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
    abs_path(d).map(Some)
}

/// A list of absolute paths.
pub(super) fn abs_paths<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<PathBuf>, D::Error> {
    #[derive(Deserialize)]
    struct Abs(#[serde(deserialize_with = "abs_path")] PathBuf);
    Ok(Vec::<Abs>::deserialize(d)?
        .into_iter()
        .map(|a| a.0)
        .collect())
}

/// A string that Lua code may send as a number (a counter as chat id or
/// request id).
pub(super) fn text_or_number<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    struct TextOrNumber;
    impl Visitor<'_> for TextOrNumber {
        type Value = String;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a string")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
            Ok(s.to_owned())
        }
        fn visit_u64<E: de::Error>(self, n: u64) -> Result<String, E> {
            Ok(n.to_string())
        }
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<String, E> {
            Ok(n.to_string())
        }
    }
    d.deserialize_any(TextOrNumber)
}

/// The chat id of a command.
pub(super) fn chat_id<'de, D: Deserializer<'de>>(d: D) -> Result<super::ChatId, D::Error> {
    text_or_number(d).map(super::ChatId::from)
}

/// `true` only for `true`: a flag that Lua may leave as anything else
/// (`preview` of `acp.rewind`).
pub(super) fn only_true<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    struct OnlyTrue;
    impl<'de> Visitor<'de> for OnlyTrue {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("true or false")
        }
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<bool, E> {
            Ok(b)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<bool, E> {
            Ok(false)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<bool, A::Error> {
            Ok(false)
        }
        fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<bool, A::Error> {
            Ok(false)
        }
    }
    d.deserialize_any(OnlyTrue)
}

/// A value passed on to the agent as JSON (content blocks, MCP servers), as
/// `msgpack::to_json` converts it: text that is not UTF-8 made lossy, so a
/// pasted odd byte does not refuse the whole prompt.
pub(super) struct LossyJson(pub(super) serde_json::Value);

impl<'de> Deserialize<'de> for LossyJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde_json::Value as Json;
        struct ToJson;
        impl<'de> Visitor<'de> for ToJson {
            type Value = Json;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Json, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Json, E> {
                Ok(Json::Bool(b))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Json, E> {
                Ok(Json::from(n))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Json, E> {
                Ok(Json::from(n))
            }
            fn visit_f64<E: de::Error>(self, f: f64) -> Result<Json, E> {
                // JSON has no NaN or infinity: null, as `msgpack::to_json`.
                Ok(serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Json, E> {
                Ok(Json::String(s.to_owned()))
            }
            fn visit_bytes<E: de::Error>(self, b: &[u8]) -> Result<Json, E> {
                Ok(Json::String(String::from_utf8_lossy(b).into_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
                let mut items = Vec::new();
                while let Some(LossyJson(v)) = seq.next_element()? {
                    items.push(v);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
                let mut out = serde_json::Map::new();
                while let Some((k, LossyJson(v))) = map.next_entry::<String, LossyJson>()? {
                    out.insert(k, v);
                }
                Ok(Json::Object(out))
            }
        }
        d.deserialize_any(ToJson).map(LossyJson)
    }
}
