//! The borrowed fast paths (tool calls, whole lines) decode exactly like the
//! general path, and give way to it for anything they cannot decode the same.

use super::*;

// ---------------------------------------------------------------------------
// The borrowed fast path for tool calls must decode exactly like the general
// path, and give way to it for anything it cannot decode the same.

/// Asserts the fast path takes `params` and agrees with the general path.
fn assert_fast_agrees(params: &str) -> SessionNotification {
    let fast = decode_fast_for_test(params).unwrap_or_else(|| panic!("fast path taken: {params}"));
    let general = decode_general_for_test(params).expect("general path decodes");
    assert_eq!(fast, general, "{params}");
    fast
}

#[test]
fn fast_path_takes_tool_calls_and_agrees_with_general_path() {
    let lines = [
        // The shape of a running command's output (benches/transport.rs).
        r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"call-1","status":"in_progress","content":[{"type":"content","content":{"type":"text","text":"line 1: ok\n"}}]}}"#,
        r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}}"#,
        r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c\u0031","title":"Edit `a.rs`","name":"edit_file","kind":"edit","status":"pending","content":[{"type":"diff","path":"/a.rs","oldText":"a","newText":"b"},{"type":"diff","path":"/n.rs","oldText":null,"newText":"n"},{"type":"diff","path":"/m.rs","newText":"m"},{"type":"terminal","terminalId":"term-1"}],"locations":[{"path":"/a.rs","line":4},{"uri":"x"}],"rawInput":{"cmd":["ls"]},"rawOutput":null}}"#,
        r#"{"update":{"toolCallId":"c","sessionUpdate":"tool_call_update","content":[],"locations":null,"title":null,"kind":"teleport","status":"paused","rawOutput":"done"},"sessionId":"s","_meta":{}}"#,
    ];
    for line in lines {
        assert_fast_agrees(line);
    }
    let n = assert_fast_agrees(lines[2]);
    assert_eq!(n.session_id, SessionId::new("s"));
    let SessionUpdate::ToolCall(f) = n.update else {
        panic!("{n:?}")
    };
    assert_eq!(f.tool_call_id, ToolCallId::new("c1"));
    assert_eq!(f.content.map(|c| c.len()), Some(4));
    assert_eq!(
        f.locations,
        Some(vec![schema::ToolCallLocation::new("/a.rs").line(4)])
    );
}

#[test]
fn fast_path_declines_tool_calls_it_cannot_decode_the_same() {
    let declined = [
        // Number id: the general path turns it into text.
        json!({"toolCallId": 7}),
        // A single item where a list belongs.
        json!({"toolCallId": "c", "content": {"type": "terminal", "terminalId": "t"}}),
        // Items kept whole as Unknown, or blocks the schema decodes.
        json!({"toolCallId": "c", "content": [{"type": "hologram"}]}),
        json!({"toolCallId": "c", "content": [{"type": "diff", "path": "/a", "oldText": 7, "newText": "b"}]}),
        json!({"toolCallId": "c", "content": [{"type": "diff", "newText": "b"}]}),
        json!({"toolCallId": "c", "content": [{"type": "text", "text": "bare block"}]}),
        json!({"toolCallId": "c", "content": [{"type": "content", "content": {"type": "image", "data": "AA", "mimeType": "image/png"}}]}),
        json!({"toolCallId": "c", "content": [{"type": "content", "content": {"type": "text", "text": "x", "annotations": {"priority": 1.0}}}]}),
        json!({"toolCallId": "c", "content": [{"type": "content", "content": "bare string"}]}),
        // Fields of odd types, dropped one by one by the general path.
        json!({"toolCallId": "c", "title": 5}),
        json!({"toolCallId": "c", "locations": {"path": "/a"}}),
    ];
    for mut update in declined {
        update["sessionUpdate"] = json!("tool_call_update");
        let params = json!({"sessionId": "s", "update": update}).to_string();
        assert!(decode_fast_for_test(&params).is_none(), "{params}");
        decode_general_for_test(&params).expect("general path decodes");
    }
    // Duplicate keys: a `Value` keeps the last one, the typed pass refuses.
    let dup = r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"pending","status":"completed"}}"#;
    assert!(decode_fast_for_test(dup).is_none());
    let n = decode_str(dup).unwrap();
    let SessionUpdate::ToolCallUpdate(f) = n.update else {
        panic!("{n:?}")
    };
    assert_eq!(f.status, Some(ToolStatus::Completed));
}

// ---------------------------------------------------------------------------
// The one-pass decode of a whole `session/update` line must decode what it
// takes exactly as the envelope (`Incoming::decode`) and then the params do,
// and leave every other line to them.

/// The general path of a line: the envelope, then its params.
fn decode_line_general(line: &str) -> Result<SessionNotification, String> {
    match crate::rpc::Incoming::decode(line.as_bytes()) {
        Ok(crate::rpc::Incoming::Notification {
            method,
            params: Some(params),
        }) if method == crate::rpc::methods::SESSION_UPDATE => {
            decode_general_for_test(params.get()).map_err(|e| e.to_string())
        }
        Ok(other) => Err(format!("not a session/update with params: {other:?}")),
        Err(e) => Err(e.to_string()),
    }
}

#[test]
fn line_path_takes_streamed_lines_and_agrees_with_the_general_path() {
    let chunk = r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a \"b\"\n"}}}"#;
    let tool = r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c","status":"completed"}}"#;
    let lines = [
        format!(r#"{{"jsonrpc":"2.0","method":"session/update","params":{chunk}}}"#),
        format!(r#"{{"params":{chunk},"method":"session/update","jsonrpc":"2.0"}}"#),
        format!(r#"{{"method":"session/update","params":{tool}}}"#),
        format!(
            r#"{{"jsonrpc":null,"id":null,"method":"session\/update","params":{chunk},"_meta":{{"a":[1]}}}}"#
        ),
        // A notification with a `result` or `error` is still a notification.
        format!(
            r#"{{"method":"session/update","result":5,"error":{{"code":1}},"params":{chunk}}}  "#
        ),
    ];
    for line in &lines {
        let fast = decode_session_update_line(line.as_bytes())
            .unwrap_or_else(|| panic!("line path taken: {line}"));
        assert_eq!(Ok(fast), decode_line_general(line), "{line}");
    }
}

#[test]
fn line_path_leaves_every_other_line_to_the_envelope() {
    let chunk = r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}"#;
    let plan = r#"{"sessionId":"s","update":{"sessionUpdate":"plan","entries":[]}}"#;
    let lines = [
        // A request, a response, another method.
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"session/update","params":{chunk}}}"#),
        r#"{"jsonrpc":"2.0","id":1,"result":{"x":1}}"#.to_owned(),
        format!(r#"{{"jsonrpc":"2.0","method":"session/updates","params":{chunk}}}"#),
        // Framing the envelope rejects: a version, an escaped version (not
        // borrowable there), duplicate keys, a trailing value, no object.
        format!(r#"{{"jsonrpc":"1.0","method":"session/update","params":{chunk}}}"#),
        format!(r#"{{"jsonrpc":"2\u002e0","method":"session/update","params":{chunk}}}"#),
        format!(r#"{{"method":"session/update","params":{chunk},"params":{chunk}}}"#),
        format!(r#"{{"method":"session/update","method":"session/update","params":{chunk}}}"#),
        format!(r#"{{"method":"session/update","result":1,"result":2,"params":{chunk}}}"#),
        format!(r#"{{"method":"session/update","params":{chunk}}} 1"#),
        format!(r#"["2.0",null,"session/update",{chunk}]"#),
        // No params, and params the one pass does not take.
        r#"{"method":"session/update","params":null}"#.to_owned(),
        r#"{"method":"session/update"}"#.to_owned(),
        format!(r#"{{"method":"session/update","params":{plan}}}"#),
    ];
    for line in &lines {
        assert!(
            decode_session_update_line(line.as_bytes()).is_none(),
            "{line}"
        );
    }
}

mod fast_path_properties {
    use proptest::prelude::*;
    use serde_json::{json, Map, Value};

    use crate::session::update::decode::{decode_fast_for_test, decode_general_for_test};

    /// Strings with the characters that need escapes or look like JSON.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z_]{0,8}",
            "[ -~]{0,12}",
            Just("\n\"\\\u{e9}\u{1F600}".to_owned()),
        ]
    }

    /// Any small JSON value, weighted towards the odd types a field may have.
    fn odd() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            (-1e6f64..1e6).prop_map(Value::from),
            text().prop_map(Value::from),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::from),
                proptest::collection::btree_map("[a-z]{1,4}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// A field's value: usually well-formed, sometimes absent, null or odd.
    fn field(good: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Option<Value>> {
        prop_oneof![
            6 => good.prop_map(Some),
            2 => Just(None),
            1 => Just(Some(Value::Null)),
            1 => odd().prop_map(Some),
        ]
        .boxed()
    }

    fn block() -> BoxedStrategy<Value> {
        prop_oneof![
            6 => text().prop_map(|t| json!({"type": "text", "text": t})),
            1 => text().prop_map(|t| json!({"type": "text", "text": t, "annotations": {"priority": 0.5}})),
            1 => text().prop_map(|t| json!({"type": "text", "text": t, "annotations": null, "_meta": null})),
            1 => Just(json!({"type": "image", "data": "AA", "mimeType": "image/png"})),
            1 => text().prop_map(Value::from),
            1 => odd(),
        ]
        .boxed()
    }

    fn tool_item() -> BoxedStrategy<Value> {
        prop_oneof![
            6 => block().prop_map(|b| json!({"type": "content", "content": b})),
            2 => (text(), field(text().prop_map(Value::from)), field(text().prop_map(Value::from)))
                .prop_map(|(path, old, new)| {
                    let mut item = json!({"type": "diff", "path": path});
                    if let Some(old) = old { item["oldText"] = old; }
                    if let Some(new) = new { item["newText"] = new; }
                    item
                }),
            1 => field(text().prop_map(Value::from)).prop_map(|id| match id {
                Some(id) => json!({"type": "terminal", "terminalId": id}),
                None => json!({"type": "terminal"}),
            }),
            1 => block(),
            1 => odd(),
        ]
        .boxed()
    }

    fn update() -> impl Strategy<Value = Value> {
        let kind = prop_oneof![
            4 => Just(json!("tool_call_update")),
            2 => Just(json!("tool_call")),
            2 => Just(json!("agent_message_chunk")),
            1 => Just(json!("user_message_chunk")),
            1 => Just(json!("plan")),
            1 => odd(),
        ];
        let tool_status = prop_oneof![
            Just("pending"),
            Just("in_progress"),
            Just("completed"),
            Just("failed"),
            Just("paused")
        ];
        (
            field(kind),
            field(text().prop_map(Value::from)),
            field(text().prop_map(Value::from)),
            field(tool_status.prop_map(Value::from)),
            field(prop_oneof![
                proptest::collection::vec(tool_item(), 0..4).prop_map(Value::from),
                block(),
            ]),
            field(
                proptest::collection::vec(
                    prop_oneof![text().prop_map(|p| json!({"path": p, "line": 3})), odd()],
                    0..3,
                )
                .prop_map(Value::from),
            ),
            field(odd()),
            field(text().prop_map(Value::from)),
        )
            .prop_map(
                |(kind, id, title, status, content, locations, raw, message_id)| {
                    let mut u = Map::new();
                    for (key, value) in [
                        ("sessionUpdate", kind),
                        ("toolCallId", id),
                        ("title", title),
                        ("status", status),
                        ("content", content),
                        ("locations", locations),
                        ("rawInput", raw),
                        ("messageId", message_id),
                    ] {
                        if let Some(value) = value {
                            u.insert(key.to_owned(), value);
                        }
                    }
                    Value::Object(u)
                },
            )
    }

    /// One member of a JSON-RPC envelope, as text: the usual values, odd
    /// ones, and keys the envelope knows or not.
    fn member() -> impl Strategy<Value = (String, String)> {
        let params = (update(), field(text().prop_map(Value::from))).prop_map(|(update, sid)| {
            let mut params = json!({"update": update});
            if let Some(sid) = sid {
                params["sessionId"] = sid;
            }
            params.to_string()
        });
        prop_oneof![
            4 => params.prop_map(|p| ("params".to_owned(), p)),
            3 => prop_oneof![
                6 => Just(r#""session/update""#.to_owned()),
                1 => Just(r#""session\/update""#.to_owned()),
                1 => Just(r#""session/prompt""#.to_owned()),
                1 => Just("null".to_owned()),
            ].prop_map(|m| ("method".to_owned(), m)),
            2 => prop_oneof![
                4 => Just(r#""2.0""#.to_owned()),
                1 => Just(r#""2\u002e0""#.to_owned()),
                1 => Just(r#""1.0""#.to_owned()),
                1 => Just("null".to_owned()),
                1 => Just("2".to_owned()),
            ].prop_map(|v| ("jsonrpc".to_owned(), v)),
            1 => prop_oneof![Just("null"), Just("1"), Just(r#""a""#), Just("1.5")]
                .prop_map(|v| ("id".to_owned(), v.to_owned())),
            1 => (prop_oneof![Just("result"), Just("error"), Just("_meta")], odd())
                .prop_map(|(k, v)| (k.to_owned(), v.to_string())),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Whenever the one pass over a whole line decodes, the envelope and
        /// then the params decode the same.
        #[test]
        fn line_path_decodes_like_the_envelope_then_the_params(
            members in proptest::collection::vec(member(), 0..6),
        ) {
            let body: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let line = format!("{{{}}}", body.join(","));
            if let Some(fast) = crate::session::update::decode_session_update_line(line.as_bytes()) {
                prop_assert_eq!(Ok(fast), super::decode_line_general(&line));
            }
        }

        /// Streamed text chunks always take the one pass.
        #[test]
        fn chunk_lines_take_the_line_path(
            sid in text(),
            t in text(),
            message_id in proptest::option::of(text()),
        ) {
            let mut update = json!({"sessionUpdate": "agent_message_chunk",
                                    "content": {"type": "text", "text": t}});
            if let Some(id) = message_id {
                update["messageId"] = json!(id);
            }
            let line = json!({"jsonrpc": "2.0", "method": "session/update",
                              "params": {"sessionId": sid, "update": update}}).to_string();
            let fast = crate::session::update::decode_session_update_line(line.as_bytes());
            prop_assert!(fast.is_some(), "{}", line);
            prop_assert_eq!(fast.ok_or_else(String::new), super::decode_line_general(&line));
        }

        /// Whenever the fast path decodes, the general path decodes the
        /// same; and well-formed tool calls do take the fast path.
        #[test]
        fn fast_path_decodes_like_the_general_path(update in update(), sid in field(text().prop_map(Value::from))) {
            let mut params = json!({"update": update});
            if let Some(sid) = sid {
                params["sessionId"] = sid;
            }
            let line = params.to_string();
            if let Some(fast) = decode_fast_for_test(&line) {
                prop_assert_eq!(Ok(fast), decode_general_for_test(&line).map_err(|e| e.to_string()));
            }
        }

        #[test]
        fn well_formed_tool_calls_take_the_fast_path(
            id in text(),
            texts in proptest::collection::vec(text(), 0..4),
            update_kind in prop_oneof![Just("tool_call"), Just("tool_call_update")],
        ) {
            let content: Vec<Value> = texts
                .iter()
                .map(|t| json!({"type": "content", "content": {"type": "text", "text": t}}))
                .collect();
            let line = json!({"sessionId": "s", "update": {
                "sessionUpdate": update_kind, "toolCallId": id, "status": "in_progress",
                "content": content}})
            .to_string();
            let fast = decode_fast_for_test(&line);
            prop_assert!(fast.is_some(), "{}", line);
            prop_assert_eq!(fast.ok_or(()), decode_general_for_test(&line).map_err(|_| ()));
        }
    }
}
