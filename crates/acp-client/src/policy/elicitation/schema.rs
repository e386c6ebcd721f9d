//! Reading a form's JSON Schema (leniently) and checking the values the
//! user typed against it.

use super::*;

// ---------------------------------------------------------------------------
// Decoding

/// A JSON object's entries in wire order (serde_json's map sorts them).
struct Ordered(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Ordered {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Ordered;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Ordered, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Value>()? {
                    out.push((k, v));
                }
                Ok(Ordered(out))
            }
        }
        d.deserialize_map(V)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSchema {
    #[serde(default)]
    properties: Option<Ordered>,
    #[serde(default)]
    required: Option<Vec<String>>,
}

fn opt_str(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn opt_u64(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

fn opt_f64(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// `[{const, title}]` (`oneOf`/`anyOf`) or `enum` (+ legacy `enumNames`).
fn choices_of(v: &Value, titled_key: &str) -> Option<Vec<Choice>> {
    if let Some(list) = v.get(titled_key).and_then(Value::as_array) {
        let choices: Vec<Choice> = list
            .iter()
            .filter_map(|o| {
                let value = o.get("const").and_then(Value::as_str)?.to_owned();
                let title = opt_str(o, "title").unwrap_or_else(|| value.clone());
                Some(Choice { value, title })
            })
            .collect();
        return Some(choices);
    }
    let values = v.get("enum").and_then(Value::as_array)?;
    let names = v.get("enumNames").and_then(Value::as_array);
    Some(
        values
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let value = e.as_str()?.to_owned();
                let title = names
                    .and_then(|n| n.get(i))
                    .and_then(Value::as_str)
                    .map_or_else(|| value.clone(), str::to_owned);
                Some(Choice { value, title })
            })
            .collect(),
    )
}

fn field_kind(p: &Value) -> FieldKind {
    let wire_type = p.get("type").and_then(Value::as_str).unwrap_or("");
    match wire_type {
        "string" => FieldKind::String {
            min_length: opt_u64(p, "minLength"),
            max_length: opt_u64(p, "maxLength"),
            format: p
                .get("format")
                .and_then(Value::as_str)
                .and_then(StringFormat::from_wire),
            choices: choices_of(p, "oneOf"),
        },
        "number" | "integer" => FieldKind::Number {
            integer: wire_type == "integer",
            minimum: opt_f64(p, "minimum"),
            maximum: opt_f64(p, "maximum"),
        },
        "boolean" => FieldKind::Boolean,
        "array" => match p.get("items").and_then(|items| choices_of(items, "anyOf")) {
            Some(choices) => FieldKind::MultiSelect {
                choices,
                min_items: opt_u64(p, "minItems"),
                max_items: opt_u64(p, "maxItems"),
            },
            None => FieldKind::Unknown {
                wire_type: "array".into(),
            },
        },
        other => FieldKind::Unknown {
            wire_type: other.to_owned(),
        },
    }
}

impl FormSchema {
    /// Decodes a `requestedSchema`. Fails only when it is not an object.
    pub fn decode(raw: &Value) -> Result<Self> {
        let wire: WireSchema = serde_json::from_str(&raw.to_string()).map_err(|e| {
            Error::InvalidParams(format!("`requestedSchema` is not a form schema: {e}"))
        })?;
        let required = wire.required.unwrap_or_default();
        let fields = wire
            .properties
            .map(|o| o.0)
            .unwrap_or_default()
            .into_iter()
            .map(|(name, p)| FormField {
                required: required.contains(&name),
                title: opt_str(&p, "title"),
                description: opt_str(&p, "description"),
                default: p.get("default").filter(|d| !d.is_null()).cloned(),
                kind: field_kind(&p),
                name,
            })
            .collect();
        Ok(FormSchema {
            title: opt_str(raw, "title"),
            description: opt_str(raw, "description"),
            fields,
            raw: raw.clone(),
        })
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&FormField> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// Checks an answer against the form and returns it normalized (whole
    /// numbers of integer fields as integers). Every problem is listed in
    /// the error, each naming the field and what it needs.
    pub fn validate(&self, content: &Map<String, Value>) -> Result<Map<String, Value>> {
        let mut problems = Vec::new();
        let mut out = Map::new();
        for name in content.keys() {
            if self.field(name).is_none() {
                problems.push(format!("the form has no field `{name}`"));
            }
        }
        for field in &self.fields {
            match content.get(&field.name) {
                None | Some(Value::Null) => {
                    if field.required {
                        problems.push(format!("`{}` is required", field.label()));
                    }
                }
                Some(value) => match check_value(field, value) {
                    Ok(v) => {
                        out.insert(field.name.clone(), v);
                    }
                    Err(why) => problems.push(format!("`{}` {why}", field.label())),
                },
            }
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(Error::InvalidForm { problems })
        }
    }

    /// Turns text typed by a user into the field's value (for line-based
    /// front ends): numbers parsed, `y`/`yes`/`true` and `n`/`no`/`false`
    /// for booleans, a comma-separated list for multi-selects, a choice's
    /// value or title for enums. Empty text means "no value".
    pub fn parse_text(field: &FormField, text: &str) -> Result<Option<Value>, String> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(None);
        }
        let pick = |choices: &[Choice], t: &str| {
            choices
                .iter()
                .find(|c| c.value == t || c.title.eq_ignore_ascii_case(t))
                .map(|c| c.value.clone())
                .ok_or_else(|| format!("`{t}` is not one of {}", list_values(choices)))
        };
        let value = match &field.kind {
            FieldKind::String {
                choices: Some(choices),
                ..
            } => Value::String(pick(choices, text)?),
            FieldKind::String { .. } => Value::String(text.to_owned()),
            FieldKind::Number { integer: true, .. } => text
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("`{text}` is not a whole number"))?,
            FieldKind::Number { .. } => text
                .parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
                .ok_or_else(|| format!("`{text}` is not a number"))?,
            FieldKind::Boolean => match text.to_ascii_lowercase().as_str() {
                "y" | "yes" | "true" => Value::Bool(true),
                "n" | "no" | "false" => Value::Bool(false),
                _ => return Err(format!("answer yes or no, not `{text}`")),
            },
            FieldKind::MultiSelect { choices, .. } => Value::Array(
                text.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(|t| pick(choices, t).map(Value::String))
                    .collect::<Result<_, _>>()?,
            ),
            FieldKind::Unknown { wire_type } => {
                return Err(format!(
                    "fields of type `{wire_type}` cannot be filled here"
                ))
            }
        };
        Ok(Some(value))
    }
}

fn list_values(choices: &[Choice]) -> String {
    choices
        .iter()
        .map(|c| format!("`{}`", c.value))
        .collect::<Vec<_>>()
        .join(", ")
}

fn fmt_num(f: f64) -> String {
    if f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{}", f as i64)
    } else {
        f.to_string()
    }
}

/// One value against its field: the normalized value, or why it does not fit.
fn check_value(field: &FormField, value: &Value) -> std::result::Result<Value, String> {
    match &field.kind {
        FieldKind::String {
            min_length,
            max_length,
            format,
            choices,
        } => {
            let Value::String(s) = value else {
                return Err(format!("must be text, got {value}"));
            };
            if let Some(choices) = choices {
                if !choices.iter().any(|c| &c.value == s) {
                    return Err(format!("must be one of {}", list_values(choices)));
                }
            }
            let len = s.chars().count() as u64;
            if let Some(min) = min_length.filter(|m| len < *m) {
                return Err(format!("must be at least {min} characters long"));
            }
            if let Some(max) = max_length.filter(|m| len > *m) {
                return Err(format!("must be at most {max} characters long"));
            }
            if let Some(format) = format {
                if !format.accepts(s) {
                    return Err(format!("must be {}", format.example()));
                }
            }
            Ok(value.clone())
        }
        FieldKind::Number {
            integer,
            minimum,
            maximum,
        } => {
            let Some(n) = value.as_f64() else {
                return Err(format!("must be a number, got {value}"));
            };
            let normalized = if *integer {
                if n.fract() != 0.0 || !n.is_finite() {
                    return Err(format!("must be a whole number, got {value}"));
                }
                value
                    .as_i64()
                    .map(Value::from)
                    .unwrap_or_else(|| Value::from(n as i64))
            } else {
                value.clone()
            };
            if let Some(min) = minimum.filter(|m| n < *m) {
                return Err(format!("must be at least {}", fmt_num(min)));
            }
            if let Some(max) = maximum.filter(|m| n > *m) {
                return Err(format!("must be at most {}", fmt_num(max)));
            }
            Ok(normalized)
        }
        FieldKind::Boolean => match value {
            Value::Bool(_) => Ok(value.clone()),
            other => Err(format!("must be true or false, got {other}")),
        },
        FieldKind::MultiSelect {
            choices,
            min_items,
            max_items,
        } => {
            // An empty Lua list may arrive as an empty map.
            let items: Vec<Value> = match value {
                Value::Array(a) => a.clone(),
                Value::Object(m) if m.is_empty() => Vec::new(),
                other => return Err(format!("must be a list of choices, got {other}")),
            };
            let mut seen = Vec::new();
            for item in &items {
                match item.as_str() {
                    Some(s) if choices.iter().any(|c| c.value == s) => {
                        if seen.contains(&s) {
                            return Err(format!("lists `{s}` twice"));
                        }
                        seen.push(s);
                    }
                    _ => {
                        return Err(format!(
                            "can only hold {}, got {item}",
                            list_values(choices)
                        ))
                    }
                }
            }
            let n = items.len() as u64;
            if let Some(min) = min_items.filter(|m| n < *m) {
                return Err(format!("needs at least {min} choices"));
            }
            if let Some(max) = max_items.filter(|m| n > *m) {
                return Err(format!("allows at most {max} choices"));
            }
            Ok(Value::Array(items))
        }
        FieldKind::Unknown { wire_type } => Err(format!(
            "has type `{wire_type}`, which this client cannot fill; leave it out or decline"
        )),
    }
}

pub(super) fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    !local.is_empty()
        && !s.chars().any(char::is_whitespace)
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
}

pub(super) fn is_uri(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        && !rest.is_empty()
        && !s.chars().any(char::is_whitespace)
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

pub(super) fn is_date(s: &str) -> bool {
    let mut parts = s.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

pub(super) fn is_date_time(s: &str) -> bool {
    let Some((date, time)) = s.split_once(['T', 't']) else {
        return false;
    };
    if !is_date(date) {
        return false;
    }
    let (clock, offset) = if let Some(c) = time.strip_suffix(['Z', 'z']) {
        (c, None)
    } else if let Some(i) = time.rfind(['+', '-']) {
        (&time[..i], Some(&time[i + 1..]))
    } else {
        return false;
    };
    let clock = clock.split_once('.').map_or(clock, |(hms, frac)| {
        if !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) {
            hms
        } else {
            ""
        }
    });
    let hms: Vec<&str> = clock.split(':').collect();
    let ok_clock = hms.len() == 3
        && digits(hms[0], 2).is_some_and(|h| h < 24)
        && digits(hms[1], 2).is_some_and(|m| m < 60)
        && digits(hms[2], 2).is_some_and(|s| s <= 60);
    let ok_offset = offset.is_none_or(|o| {
        o.split_once(':').is_some_and(|(h, m)| {
            digits(h, 2).is_some_and(|h| h < 24) && digits(m, 2).is_some_and(|m| m < 60)
        })
    });
    ok_clock && ok_offset
}
