//! JSON-RPC 2.0 wire types: the one decode point and the one encode point for
//! every message that crosses the agent's stdio.
//!
//! Past [`Incoming::decode`] (and [`notification_params`], its one-pass
//! twin for the notifications agents stream in bulk) nothing in this crate
//! looks at raw JSON-RPC framing; everything before [`Outgoing::encode`] is
//! typed.
//!
//! Private to the crate: an editor goes through [`Connection`](crate::Connection).
//! The crate's own tests reach the framing and the decode through the hidden,
//! unstable [`wire`](crate::wire) module.

use std::fmt;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

pub(crate) mod codec;
pub(crate) mod engine;
pub(crate) mod methods;

pub use crate::error::{codes, RequestId, RpcError};

/// A decoded message from the agent.
#[derive(Debug)]
pub enum Incoming {
    /// A request that needs exactly one reply.
    Request {
        /// The agent's id for it.
        id: RequestId,
        /// The method name.
        method: String,
        /// Undecoded params.
        params: Option<Box<RawValue>>,
    },
    /// A notification (no reply).
    Notification {
        /// The method name.
        method: String,
        /// Undecoded params.
        params: Option<Box<RawValue>>,
    },
    /// The answer to one of our requests.
    Response {
        /// Our id for the request.
        id: RequestId,
        /// Undecoded result, or the error.
        result: Result<Box<RawValue>, RpcError>,
    },
}

/// Why a line could not be decoded as a JSON-RPC message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The raw envelope. `params`/`result` stay unparsed so the typed decode
/// happens exactly once, straight from the bytes, in the handler that knows
/// the type.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(default, borrow)]
    jsonrpc: Option<&'a str>,
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<Value>,
}

fn decode_id(id: Value) -> Result<RequestId, DecodeError> {
    match id {
        Value::Number(n) => n
            .as_i64()
            .map(RequestId::Number)
            .ok_or_else(|| DecodeError(format!("request id {n} is not an integer"))),
        Value::String(s) => Ok(RequestId::String(s)),
        other => Err(DecodeError(format!(
            "request id must be a number or a string, got {other}"
        ))),
    }
}

impl Incoming {
    /// Decodes one line (without its newline). With [`notification_params`],
    /// the only place that interprets JSON-RPC framing.
    pub fn decode(line: &[u8]) -> Result<Incoming, DecodeError> {
        let env: Envelope<'_> = serde_json::from_slice(line)
            .map_err(|e| DecodeError(format!("not a JSON object: {e}")))?;
        if let Some(v) = env.jsonrpc {
            if v != "2.0" {
                return Err(DecodeError(format!("unsupported jsonrpc version {v:?}")));
            }
        }
        // `"id": null` counts as absent: only errors for unparseable requests
        // carry it, and those cannot be matched to anything.
        let id = match env.id {
            None | Some(Value::Null) => None,
            Some(id) => Some(decode_id(id)?),
        };
        match (env.method, id) {
            (Some(method), Some(id)) => Ok(Incoming::Request {
                id,
                method,
                params: env.params,
            }),
            (Some(method), None) => Ok(Incoming::Notification {
                method,
                params: env.params,
            }),
            (None, Some(id)) => {
                let result = match (env.result, env.error) {
                    (_, Some(error)) => Err(serde_json::from_value::<RpcError>(error)
                        .unwrap_or_else(|e| {
                            RpcError::new(
                                codes::INTERNAL_ERROR,
                                format!("malformed error object from agent: {e}"),
                            )
                        })),
                    (Some(result), None) => Ok(result),
                    // A response whose `result` is absent is read as `null`:
                    // several agents send `{"id":1,"jsonrpc":"2.0"}` for void results.
                    (None, None) => Ok(null_raw()),
                };
                Ok(Incoming::Response { id, result })
            }
            (None, None) => Err(DecodeError(
                "neither a request, a notification nor a response (no `method` and no `id`)".into(),
            )),
        }
    }
}

/// The params of `line` decoded as `P`, in one pass over the line, when the
/// line is a notification of `method` that [`Incoming::decode`] would decode
/// the same way (its framing rules, mirrored here); `None` for anything
/// else: requests, responses, other methods, params `P` does not take,
/// duplicate keys, lines [`Incoming::decode`] rejects. For the notifications
/// agents send in bulk: scanning the envelope and then parsing its params
/// again looked at every streamed chunk twice (bench/fixes.md section 11).
pub fn notification_params<'de, P: Deserialize<'de>>(line: &'de [u8], method: &str) -> Option<P> {
    // One UTF-8 check of the line instead of one per string (invalid UTF-8
    // is an error there too).
    let line = std::str::from_utf8(line).ok()?;
    let mut de = serde_json::Deserializer::from_str(line);
    let params = serde::de::DeserializeSeed::deserialize(
        NotificationSeed {
            method,
            params: PhantomData,
        },
        &mut de,
    )
    .ok()?;
    de.end().ok()?;
    Some(params)
}

/// The fields of [`Envelope`]; a key may appear once, as there.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Field {
    Jsonrpc,
    Id,
    Method,
    Params,
    Result,
    Error,
    Other,
}

impl Field {
    const ALL: [Field; 6] = [
        Field::Jsonrpc,
        Field::Id,
        Field::Method,
        Field::Params,
        Field::Result,
        Field::Error,
    ];
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E>(self, key: &str) -> Result<Field, E> {
                Ok(match key {
                    "jsonrpc" => Field::Jsonrpc,
                    "id" => Field::Id,
                    "method" => Field::Method,
                    "params" => Field::Params,
                    "result" => Field::Result,
                    "error" => Field::Error,
                    _ => Field::Other,
                })
            }
        }
        d.deserialize_identifier(Visitor)
    }
}

/// A method name compared where it lies (a `String` per line otherwise).
struct MethodIs<'m>(&'m str);

impl<'de> serde::de::DeserializeSeed<'de> for MethodIs<'_> {
    type Value = bool;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for MethodIs<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a method name")
    }
    fn visit_str<E>(self, method: &str) -> Result<bool, E> {
        Ok(method == self.0)
    }
}

struct NotificationSeed<'m, P> {
    method: &'m str,
    params: PhantomData<P>,
}

impl<'de, P: Deserialize<'de>> serde::de::DeserializeSeed<'de> for NotificationSeed<'_, P> {
    type Value = P;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<P, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, P: Deserialize<'de>> serde::de::Visitor<'de> for NotificationSeed<'_, P> {
    type Value = P;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a `{}` notification", self.method)
    }

    // Each refusal is an error so that the parse stops where it is: a
    // response or another method costs a few bytes of scanning.
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<P, A::Error> {
        use serde::de::{Error, IgnoredAny};
        let mut seen = [false; Field::ALL.len()];
        let mut method = false;
        let mut params = None;
        while let Some(field) = map.next_key::<Field>()? {
            if let Some(i) = Field::ALL.iter().position(|f| *f == field) {
                if std::mem::replace(&mut seen[i], true) {
                    return Err(A::Error::custom("duplicate field"));
                }
            }
            match field {
                // As `Envelope`: a borrowed string (an escaped one fails
                // there), absent or null, else "2.0".
                Field::Jsonrpc => {
                    if map
                        .next_value::<Option<&'de str>>()?
                        .is_some_and(|v| v != "2.0")
                    {
                        return Err(A::Error::custom("unsupported version"));
                    }
                }
                // `"id": null` is a notification, as in `Incoming::decode`.
                Field::Id => {
                    if map.next_value::<Option<IgnoredAny>>()?.is_some() {
                        return Err(A::Error::custom("a request"));
                    }
                }
                Field::Method => {
                    method = map.next_value_seed(MethodIs(self.method))?;
                    if !method {
                        return Err(A::Error::custom("another method"));
                    }
                }
                Field::Params => params = Some(map.next_value::<P>()?),
                Field::Result | Field::Error | Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match params {
            Some(params) if method => Ok(params),
            _ => Err(A::Error::custom("no method or no params")),
        }
    }
}

fn null_raw() -> Box<RawValue> {
    RawValue::from_string("null".to_owned())
        .unwrap_or_else(|_| unreachable!("`null` is valid JSON"))
}

/// A message to the agent. [`Outgoing::encode`] is the only place that writes
/// JSON-RPC framing.
#[derive(Debug)]
pub enum Outgoing<'a> {
    /// A request.
    Request {
        /// Our id for it.
        id: &'a RequestId,
        /// The method name.
        method: &'a str,
        /// The params.
        params: &'a Value,
    },
    /// A notification.
    Notification {
        /// The method name.
        method: &'a str,
        /// The params.
        params: &'a Value,
    },
    /// The reply to one of the agent's requests.
    Response {
        /// The agent's id for the request.
        id: &'a RequestId,
        /// The result or the error.
        result: Result<&'a Value, &'a RpcError>,
    },
}

impl Outgoing<'_> {
    /// Encodes the message as one line, newline included.
    pub fn encode(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Wire<'a> {
            jsonrpc: &'static str,
            #[serde(skip_serializing_if = "Option::is_none")]
            id: Option<&'a RequestId>,
            #[serde(skip_serializing_if = "Option::is_none")]
            method: Option<&'a str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            params: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            result: Option<&'a Value>,
            #[serde(skip_serializing_if = "Option::is_none")]
            error: Option<&'a RpcError>,
        }
        let mut wire = Wire {
            jsonrpc: "2.0",
            id: None,
            method: None,
            params: None,
            result: None,
            error: None,
        };
        match self {
            Outgoing::Request { id, method, params } => {
                wire.id = Some(id);
                wire.method = Some(method);
                wire.params = Some(params);
            }
            Outgoing::Notification { method, params } => {
                wire.method = Some(method);
                wire.params = Some(params);
            }
            Outgoing::Response { id, result } => {
                wire.id = Some(id);
                match result {
                    Ok(v) => wire.result = Some(v),
                    Err(e) => wire.error = Some(e),
                }
            }
        }
        // Serializing these types cannot fail: all keys are strings and
        // `Value` holds no non-finite floats.
        let mut out = serde_json::to_vec(&wire).unwrap_or_else(|e| {
            tracing::error!("failed to encode outgoing message: {e}");
            b"{}".to_vec()
        });
        out.push(b'\n');
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(s: &str) -> Result<Incoming, DecodeError> {
        Incoming::decode(s.as_bytes())
    }

    #[test]
    fn decodes_request_notification_response() {
        match decode(r#"{"jsonrpc":"2.0","id":3,"method":"fs/read_text_file","params":{"a":1}}"#) {
            Ok(Incoming::Request { id, method, params }) => {
                assert_eq!(id, RequestId::Number(3));
                assert_eq!(method, "fs/read_text_file");
                assert_eq!(
                    params.map(|p| p.get().to_owned()).as_deref(),
                    Some(r#"{"a":1}"#)
                );
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            decode(r#"{"jsonrpc":"2.0","method":"session/update","params":{}}"#),
            Ok(Incoming::Notification { .. })
        ));
        match decode(r#"{"jsonrpc":"2.0","id":"abc","result":null}"#) {
            Ok(Incoming::Response { id, result: Ok(r) }) => {
                assert_eq!(id, RequestId::String("abc".into()));
                assert_eq!(r.get(), "null");
            }
            other => panic!("unexpected {other:?}"),
        }
        match decode(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"auth"}}"#) {
            Ok(Incoming::Response { result: Err(e), .. }) => assert_eq!(e.code, -32000),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn missing_result_reads_as_null() {
        match decode(r#"{"jsonrpc":"2.0","id":7}"#) {
            Ok(Incoming::Response { result: Ok(r), .. }) => assert_eq!(r.get(), "null"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn rejects_garbage_without_panicking() {
        for bad in [
            "",
            "garbage",
            "[1,2]",
            "{}",
            r#"{"jsonrpc":"1.0","id":1,"result":1}"#,
            r#"{"id":[1],"result":1}"#,
            r#"{"id":1.5,"result":1}"#,
            "\u{1}\u{2}",
        ] {
            assert!(decode(bad).is_err(), "{bad:?} should not decode");
        }
        assert!(Incoming::decode(&[0xff, 0xfe, b'{']).is_err());
    }

    #[test]
    fn malformed_error_object_is_kept_as_internal_error() {
        match decode(r#"{"id":1,"error":"boom"}"#) {
            Ok(Incoming::Response { result: Err(e), .. }) => {
                assert_eq!(e.code, codes::INTERNAL_ERROR)
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn encode_round_trips() {
        let id = RequestId::Number(9);
        let params = serde_json::json!({"sessionId": "s"});
        let line = Outgoing::Request {
            id: &id,
            method: "session/prompt",
            params: &params,
        }
        .encode();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        let v: Value = serde_json::from_slice(&line).expect("valid json");
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["id"], 9);
        assert_eq!(v["method"], "session/prompt");

        let err = RpcError::cancelled();
        let line = Outgoing::Response {
            id: &RequestId::String("x".into()),
            result: Err(&err),
        }
        .encode();
        let v: Value = serde_json::from_slice(&line).expect("valid json");
        assert_eq!(v["error"]["code"], -32800);
        assert!(v.get("result").is_none());
    }
}
