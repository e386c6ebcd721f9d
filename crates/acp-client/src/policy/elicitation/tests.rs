use serde_json::json;

use super::*;

fn form() -> FormSchema {
    FormSchema::decode(&json!({
        "type": "object",
        "title": "Deploy",
        "properties": {
            "name": { "type": "string", "title": "Your name", "minLength": 2, "maxLength": 10 },
            "email": { "type": "string", "format": "email" },
            "when": { "type": "string", "format": "date" },
            "at": { "type": "string", "format": "date-time" },
            "site": { "type": "string", "format": "uri" },
            "env": { "type": "string", "oneOf": [
                { "const": "prod", "title": "Production" },
                { "const": "dev", "title": "Development" }
            ] },
            "color": { "type": "string", "enum": ["red", "blue"] },
            "count": { "type": "integer", "minimum": 1, "maximum": 5, "default": 2 },
            "ratio": { "type": "number", "minimum": 0.5 },
            "force": { "type": "boolean" },
            "tags": { "type": "array", "minItems": 1, "maxItems": 2,
                      "items": { "type": "string", "enum": ["a", "b", "c"] } },
            "blob": { "type": "_binary" }
        },
        "required": ["name", "env"]
    }))
    .unwrap()
}

fn problems(content: Value) -> Vec<String> {
    match form().validate(content.as_object().unwrap()) {
        Ok(_) => Vec::new(),
        Err(Error::InvalidForm { problems }) => problems,
        Err(other) => panic!("unexpected error {other}"),
    }
}

#[test]
fn fields_keep_the_agents_order_and_their_details() {
    let f = form();
    let names: Vec<&str> = f.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "name", "email", "when", "at", "site", "env", "color", "count", "ratio", "force",
            "tags", "blob"
        ]
    );
    assert_eq!(f.title.as_deref(), Some("Deploy"));
    let name = f.field("name").unwrap();
    assert!(name.required);
    assert_eq!(name.label(), "Your name");
    assert_eq!(f.field("count").unwrap().default, Some(json!(2)));
    assert!(matches!(
        &f.field("env").unwrap().kind,
        FieldKind::String { choices: Some(c), .. } if c[0].title == "Production"
    ));
    assert!(matches!(
        &f.field("tags").unwrap().kind,
        FieldKind::MultiSelect { choices, min_items: Some(1), max_items: Some(2) } if choices.len() == 3
    ));
    assert!(matches!(
        &f.field("blob").unwrap().kind,
        FieldKind::Unknown { wire_type } if wire_type == "_binary"
    ));
}

#[test]
fn a_good_answer_passes_and_integers_are_normalized() {
    let ok = form()
        .validate(
            json!({
                "name": "Ada", "email": "ada@example.com", "when": "2024-02-29",
                "at": "2026-07-28T14:30:00.5+02:00", "site": "https://x.org/a",
                "env": "prod", "color": "red", "count": 3.0, "ratio": 0.75,
                "force": true, "tags": ["a", "c"]
            })
            .as_object()
            .unwrap(),
        )
        .unwrap();
    assert_eq!(ok["count"], json!(3));
    assert!(ok["count"].is_i64());
}

#[test]
fn missing_required_fields_are_named() {
    let p = problems(json!({}));
    assert_eq!(p, ["`Your name` is required", "`env` is required"]);
}

#[test]
fn wrong_types_enums_and_bounds_are_reported_per_field() {
    let p = problems(json!({
        "name": "A", "env": "staging", "email": "not-an-email", "when": "2023-02-29",
        "at": "2026-07-28 14:30", "site": "no scheme", "color": 3, "count": 9,
        "ratio": 0.1, "force": "yes", "tags": ["a", "a"], "extra": 1
    }));
    let all = p.join("\n");
    for expected in [
        "the form has no field `extra`",
        "`Your name` must be at least 2 characters long",
        "`env` must be one of `prod`, `dev`",
        "`email` must be an email address",
        "`when` must be a date",
        "`at` must be a date and time",
        "`site` must be a URI",
        "`color` must be text",
        "`count` must be at most 5",
        "`ratio` must be at least 0.5",
        "`force` must be true or false",
        "`tags` lists `a` twice",
    ] {
        assert!(all.contains(expected), "missing {expected:?} in:\n{all}");
    }
}

#[test]
fn integers_reject_fractions_and_lists_their_bounds() {
    assert!(
        problems(json!({"name": "Ada", "env": "dev", "count": 2.5}))[0].contains("whole number")
    );
    assert!(problems(json!({"name": "Ada", "env": "dev", "tags": []}))[0].contains("at least 1"));
    assert!(
        problems(json!({"name": "Ada", "env": "dev", "tags": ["a", "b", "c"]}))[0]
            .contains("at most 2")
    );
    assert!(
        problems(json!({"name": "Ada", "env": "dev", "tags": ["z"]}))[0].contains("can only hold")
    );
    assert!(problems(json!({"name": "Ada", "env": "dev", "name2": 1}))[0].contains("no field"));
}

#[test]
fn unknown_property_types_cannot_be_filled() {
    let p = problems(json!({"name": "Ada", "env": "dev", "blob": "x"}));
    assert!(p[0].contains("`_binary`"), "{p:?}");
    assert!(problems(json!({"name": "Ada", "env": "dev"})).is_empty());
}

#[test]
fn typed_text_is_parsed_per_field() {
    let f = form();
    let parse = |name: &str, text: &str| FormSchema::parse_text(f.field(name).unwrap(), text);
    assert_eq!(parse("count", "4").unwrap(), Some(json!(4)));
    assert!(parse("count", "4.5").is_err());
    assert_eq!(parse("ratio", "0.5").unwrap(), Some(json!(0.5)));
    assert_eq!(parse("force", "Yes").unwrap(), Some(json!(true)));
    assert_eq!(parse("env", "Production").unwrap(), Some(json!("prod")));
    assert!(parse("env", "staging").unwrap_err().contains("`prod`"));
    assert_eq!(parse("tags", "a, c").unwrap(), Some(json!(["a", "c"])));
    assert_eq!(parse("name", "  ").unwrap(), None);
}

#[test]
fn responses_decode_from_editor_json() {
    assert_eq!(
        ElicitationResponse::from_json(&json!({"action": "accept", "content": {"a": 1}})).unwrap(),
        ElicitationResponse::Accept {
            content: json!({"a": 1}).as_object().unwrap().clone()
        }
    );
    assert_eq!(
        ElicitationResponse::from_json(&json!({"action": "accept", "content": []})).unwrap(),
        ElicitationResponse::Accept {
            content: Map::new()
        }
    );
    assert_eq!(
        ElicitationResponse::from_json(&json!({"action": "decline"})).unwrap(),
        ElicitationResponse::Decline
    );
    assert!(ElicitationResponse::from_json(&json!({"action": "maybe"})).is_err());
    assert!(ElicitationResponse::from_json(&json!({})).is_err());
    assert_eq!(
        serde_json::to_value(ElicitationResponse::Accept {
            content: Map::new()
        })
        .unwrap(),
        json!({"action": "accept"})
    );
}

#[test]
fn wire_requests_decode_both_scopes_and_keep_unknown_modes_apart() {
    let w: WireCreate = serde_json::from_value(json!({
        "mode": "url", "message": "Log in", "requestId": 3,
        "elicitationId": "e1", "url": "https://example.com/login"
    }))
    .unwrap();
    let Decoded::Ask(scope, _, ElicitationMode::Url { elicitation_id, .. }) = w.decode().unwrap()
    else {
        panic!("not a url request");
    };
    assert_eq!(
        scope,
        ElicitationScope::Request {
            request_id: RequestId::Number(3)
        }
    );
    assert_eq!(elicitation_id.0, "e1");
    let w: WireCreate = serde_json::from_value(json!({
        "mode": "_custom", "message": "?", "sessionId": "s"
    }))
    .unwrap();
    assert!(matches!(w.decode().unwrap(), Decoded::UnknownMode(m) if m == "_custom"));
    let w: WireCreate = serde_json::from_value(json!({"mode": "form", "message": "?"})).unwrap();
    assert!(w.decode().is_err());
}
