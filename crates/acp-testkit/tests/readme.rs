//! Every JSON example in README.md (fenced ```json at the start of a line)
//! is a scenario, a scenario fragment or a list of steps that the agent
//! accepts, so the documented format cannot drift from the real one.

#![allow(clippy::unwrap_used)]

mod common;

use common::Driver;
use serde_json::{json, Value};

fn examples() -> Vec<String> {
    let readme = include_str!("../README.md");
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in readme.lines() {
        match &mut current {
            None if line == "```json" => current = Some(String::new()),
            None => {}
            Some(_) if line == "```" => blocks.extend(current.take()),
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
        }
    }
    blocks
}

/// Reads an example as a whole scenario.
fn as_scenario(block: &str) -> Value {
    if let Ok(value @ Value::Object(_)) = serde_json::from_str::<Value>(block) {
        return if value.get("type").is_some() {
            json!({"turns": [{"steps": [value]}]})
        } else {
            value
        };
    }
    if let Ok(value) = serde_json::from_str::<Value>(&format!("{{{block}}}")) {
        return value;
    }
    if let Ok(steps) = serde_json::from_str::<Value>(&format!("[{block}]")) {
        return json!({"turns": [{"steps": steps}]});
    }
    panic!("README example is not JSON in any form:\n{block}");
}

#[test]
fn every_readme_example_is_accepted_by_the_agent() {
    let blocks = examples();
    assert!(blocks.len() >= 15, "found only {} examples", blocks.len());
    for block in blocks {
        let mut agent = Driver::inline(as_scenario(&block));
        let id = agent.request("initialize", json!({"protocolVersion": 1}));
        let line = agent.try_next_line(common::HANG_GUARD).unwrap_or_else(|| {
            panic!(
                "the agent rejected this README example:\n{block}\n{}",
                agent.stderr()
            )
        });
        let reply: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(reply["id"], id, "{block}");
    }
}
