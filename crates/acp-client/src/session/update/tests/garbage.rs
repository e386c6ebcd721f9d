//! Garbage never panics the decoders.

use super::*;

// ---------------------------------------------------------------------------
// Garbage never panics.

const WORDS: &[&str] = &[
    "agent_message_chunk",
    "user_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
    "message",
    "agent_message_text_update",
    "text",
    "image",
    "resource",
    "resource_link",
    "audio",
    "diff",
    "terminal",
    "content",
    "assistant",
    "user",
    "pending",
    "completed",
    "",
    "select",
    "boolean",
    "édition",
    "\u{0}",
];
const KEYS: &[&str] = &[
    "sessionId",
    "update",
    "sessionUpdate",
    "kind",
    "content",
    "type",
    "text",
    "messageId",
    "toolCallId",
    "title",
    "status",
    "locations",
    "rawInput",
    "path",
    "oldText",
    "newText",
    "terminalId",
    "entries",
    "priority",
    "role",
    "used",
    "size",
    "cost",
    "availableCommands",
    "commands",
    "configOptions",
    "currentModeId",
    "modeId",
    "updatedAt",
    "data",
    "mimeType",
    "uri",
    "name",
    "description",
    "line",
    "id",
    "currentValue",
    "options",
    "annotations",
    "_meta",
];

/// A small deterministic generator (xorshift) of JSON values biased towards
/// the field names and discriminators the decoder looks at.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }

    /// Half the time well-typed, half the time anything.
    fn maybe(&mut self, typed: Value) -> Value {
        if self.next().is_multiple_of(2) {
            typed
        } else {
            self.value(2)
        }
    }

    /// An update object with a known-ish discriminator and its fields, each
    /// present or not, well-typed or not.
    fn update_object(&mut self) -> Value {
        let mut map = serde_json::Map::new();
        map.insert("sessionUpdate".into(), json!(self.pick(WORDS)));
        let block_type = self.pick(WORDS);
        let item_type = self.pick(&["content", "diff", "terminal", "text", "x"]);
        let candidates = [
            (
                "content",
                json!({"type": block_type, "text": "t", "data": "", "mimeType": "m"}),
            ),
            ("toolCallId", json!(self.pick(&["a", "b", "c"]))),
            ("status", json!(self.pick(WORDS))),
            ("kind", json!(self.pick(WORDS))),
            ("title", json!("title")),
            (
                "entries",
                json!([{"content": "c", "priority": "high", "status": "pending"}]),
            ),
            ("used", json!(self.next() % 100)),
            ("size", json!(self.next() % 100)),
            ("currentModeId", json!("m")),
            ("title", json!(null)),
            (
                "availableCommands",
                json!([{"name": "n", "description": "d"}]),
            ),
            (
                "configOptions",
                json!([{"id": "i", "name": "n", "type": "boolean", "currentValue": true}]),
            ),
            ("role", json!(self.pick(&["user", "assistant"]))),
            ("locations", json!([{"path": "/p", "line": 3}])),
            ("messageId", json!(self.pick(&["m1", "m2"]))),
        ];
        for (key, typed) in candidates {
            if self.next().is_multiple_of(2) {
                let v = if key == "content" && self.next().is_multiple_of(2) {
                    json!([{"type": item_type, "path": "/p", "newText": "n", "terminalId": "t",
                            "content": {"type": "text", "text": "x"}}])
                } else {
                    self.maybe(typed)
                };
                map.insert(key.into(), v);
            }
        }
        Value::Object(map)
    }

    fn value(&mut self, depth: u32) -> Value {
        let choice = if depth == 0 {
            self.next() % 5
        } else {
            self.next() % 8
        };
        match choice {
            0 => Value::Null,
            1 => Value::Bool(self.next().is_multiple_of(2)),
            2 => match self.next() % 4 {
                0 => json!(self.next() % 1000),
                1 => json!(-((self.next() % 1000) as i64)),
                2 => json!(u64::MAX - self.next() % 3),
                _ => json!((self.next() % 1000) as f64 / 7.0),
            },
            3 | 4 => Value::String(self.pick(WORDS).to_owned()),
            5 => Value::Array(
                (0..self.next() % 4)
                    .map(|_| self.value(depth - 1))
                    .collect(),
            ),
            _ => Value::Object(
                (0..self.next() % 6)
                    .map(|_| (self.pick(KEYS).to_owned(), self.value(depth - 1)))
                    .collect(),
            ),
        }
    }
}

#[test]
fn random_values_never_panic_the_decoders() {
    let mut gen = Gen(0x9E37_79B9_7F4A_7C15);
    let mut state = crate::session::SessionState::new(SessionId::new("s"));
    let mut known = 0;
    for i in 0..20_000 {
        let v = gen.value(4);
        let _ = decode_tool_call_fields(&v);
        let _ = decode_content(v.clone());
        let _ = decode_str(&v.to_string());

        // With a usable envelope, decoding must succeed whatever the update.
        let update = if i % 2 == 0 {
            gen.update_object()
        } else {
            v.clone()
        };
        for params in [
            json!({"sessionId": "s", "update": update.clone()}),
            match update {
                Value::Object(mut map) => {
                    map.insert("sessionId".into(), json!("s"));
                    Value::Object(map)
                }
                other => json!({"sessionId": "s", "content": other}),
            },
        ] {
            let n = decode_str(&params.to_string()).unwrap_or_else(|e| panic!("{params}: {e}"));
            if !matches!(n.update, SessionUpdate::Unknown { .. }) {
                known += 1;
            }
            let _ = state.apply(n.update);
        }
    }
    // The generator must reach the typed decoders, not only the Unknown path.
    assert!(known > 2_000, "only {known} updates decoded as known kinds");
}
