//! An agent reading and writing a file open in Neovim: the unsaved buffer
//! is what it reads, and its write is merged into the buffer.

use std::path::PathBuf;

use serde_json::{json, Value as Json};

use super::{FakeLua, Rig};

/// A rig whose agent runs `steps` in one turn, with `notes.txt` on disk
/// holding `disk`.
pub(super) fn notes_rig(lua: FakeLua, disk: &str, steps: Json) -> (Rig, PathBuf) {
    let rig = Rig::new(lua);
    let cwd = rig.cwd();
    std::fs::write(cwd.join("notes.txt"), disk).unwrap();
    let scenario = acp_testkit::write_scenario(&cwd, &json!({"turns": [{"steps": steps}]}));
    rig.open("a", &scenario);
    (rig, cwd)
}

fn read_step(params: Json) -> Json {
    json!({"type": "call", "method": "fs/read_text_file", "params": params,
        "saveAs": "r", "onOk": [{"type": "text", "text": "read: {{r.content}}"}]})
}

pub(super) fn write_step(content: &str) -> Json {
    json!({"type": "call", "method": "fs/write_text_file",
        "params": {"path": "{{cwd}}/notes.txt", "content": content}})
}

#[tokio::test]
async fn an_agent_writing_back_the_unsaved_buffer_it_read_costs_one_instruction() {
    // claude-code-acp 0.16.2 reads the unsaved buffer and writes it back
    // with its change: merged against what it read, the user's line is no
    // conflict, and the write is one instruction and one answer.
    let (mut rig, cwd) = notes_rig(
        FakeLua::modified("hello world\nunsaved line\n"),
        "hello world\n",
        json!([
            read_step(json!({"path": "{{cwd}}/notes.txt"})),
            write_step("hello ACP\nunsaved line\n"),
        ]),
    );
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "go");
    let edited = rig.wait_type("a", "file_edited").await;
    assert_eq!(edited["kept_unsaved"], true);
    assert_eq!(edited["waiting"], false);
    assert_eq!(edited["buffer_updated"], false);
    rig.wait_type("a", "turn_ended").await;
    assert_eq!(rig.lua.kinds(), ["read", "apply"]);
    let apply = rig.lua.calls.lock().unwrap()[1].1.clone();
    assert_eq!(apply["merged"], "hello ACP\nunsaved line\n");
    assert_eq!(apply["tick"], 10);
    assert_eq!(apply.get("conflicts"), None, "{apply}");
    let buffer = rig.lua.buffer.lock().unwrap();
    assert_eq!(buffer.as_ref().unwrap().text, "hello ACP\nunsaved line\n");
    // The agent's text is on disk: its view of the file stays true.
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "hello ACP\nunsaved line\n"
    );
}

#[tokio::test]
async fn a_range_read_reports_the_whole_buffer_in_one_call() {
    let (mut rig, _) = notes_rig(
        FakeLua::modified("one\ntwo\nline 3\n"),
        "one\n",
        json!([
            read_step(json!({"path": "{{cwd}}/notes.txt", "line": 3, "limit": 1})),
            write_step("one\ntwo\nline 3 by the agent\n"),
        ]),
    );
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "go");
    rig.wait_type("a", "turn_ended").await;
    assert!(rig.text_of("a").contains("read: line 3"));
    assert_eq!(rig.lua.kinds(), ["read", "apply"]);
    let calls = rig.lua.calls.lock().unwrap().clone();
    assert_eq!(calls[0].1["line"], 3);
    assert_eq!(calls[0].1["limit"], 1);
    // The whole buffer it read is the base: a clean merge.
    assert_eq!(calls[1].1["merged"], "one\ntwo\nline 3 by the agent\n");
}

#[tokio::test]
async fn a_write_the_buffer_outran_is_merged_again_from_its_answer() {
    // The agent never read the buffer: the backend does not know its text,
    // so the first instruction has no merge and is answered stale with the
    // buffer's text; the second merges it. No line of the user is lost.
    let lua = FakeLua::modified("disk\nmine\n");
    let (mut rig, cwd) = notes_rig(lua, "disk\n", json!([write_step("disk\nagent\n")]));
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "go");
    rig.wait_type("a", "turn_ended").await;
    assert_eq!(rig.lua.kinds(), ["apply", "apply"]);
    let calls = rig.lua.calls.lock().unwrap().clone();
    assert_eq!(calls[0].1.get("merged"), None);
    assert_eq!(calls[1].1["tick"], 10);
    let merged = calls[1].1["merged"].as_str().unwrap().to_owned();
    assert!(
        merged.contains("mine") && merged.contains("agent"),
        "{merged}"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "disk\nagent\n"
    );
}

#[tokio::test]
async fn typing_during_the_instruction_makes_it_stale_and_it_is_sent_again() {
    let lua = FakeLua::modified("a\nb\n");
    *lua.typed_during_apply.lock().unwrap() = Some("typed\n".into());
    let (mut rig, _) = notes_rig(
        lua,
        "a\n",
        json!([
            read_step(json!({"path": "{{cwd}}/notes.txt"})),
            write_step("A\nb\n"),
        ]),
    );
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "go");
    rig.wait_type("a", "turn_ended").await;
    assert_eq!(rig.lua.kinds(), ["read", "apply", "apply"]);
    let buffer = rig.lua.buffer.lock().unwrap();
    assert_eq!(buffer.as_ref().unwrap().text, "A\nb\ntyped\n");
}

#[tokio::test]
async fn a_write_to_an_unmodified_buffer_is_applied_and_saved_by_lua() {
    let lua = FakeLua::modified("old\n");
    lua.buffer.lock().unwrap().as_mut().unwrap().modified = false;
    let (mut rig, _) = notes_rig(lua, "old\n", json!([write_step("new\n")]));
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "go");
    let edited = rig.wait_type("a", "file_edited").await;
    assert_eq!(edited["buffer_updated"], true);
    assert_eq!(edited["kept_unsaved"], false);
    assert_eq!(rig.lua.kinds(), ["apply"]);
}
