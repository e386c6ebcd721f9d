//! The backend against the scripted fake agent, with a fake Lua side:
//! commands go in as the handler would forward them, events are read from
//! the queue the batcher would send to Neovim.

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_nvim::agents::{Agents, Shared};
use acp_nvim::backend::{Backend, Routed};
use acp_nvim::batcher::EventQueue;
use acp_nvim::command::{AgentSpec, ChatId, Command, OpenChat, PromptId};
use acp_nvim::editor::{Editor, LuaError};
use acp_nvim::msgpack;
use acp_nvim::prompts::Prompts;
use acp_nvim::protocol::Event;
use acp_nvim::review_queue::Decisions;
use async_trait::async_trait;
use rmpv::Value;
use serde_json::{json, Value as Json};
use tokio::sync::{mpsc, oneshot};

/// Hang guard only: every wait below ends as soon as its event arrives.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// A buffer of the fake Lua side: its text, `b:changedtick` and whether
/// it has unsaved edits.
struct FakeBuffer {
    text: String,
    tick: u64,
    modified: bool,
}

/// The Lua side: `acp.fs` over at most one buffer (of `notes.txt`), as
/// lua/acp/fs.lua answers, recording its calls.
struct FakeLua {
    buffer: Mutex<Option<FakeBuffer>>,
    /// Typed into the buffer right after the first instruction arrives,
    /// before it is applied (the user typing during the round trip).
    typed_during_apply: Mutex<Option<String>>,
    calls: Mutex<Vec<(&'static str, Json)>>,
}

impl FakeLua {
    fn no_buffers() -> Self {
        Self {
            buffer: Mutex::new(None),
            typed_during_apply: Mutex::new(None),
            calls: Mutex::default(),
        }
    }

    fn modified(text: &str) -> Self {
        let lua = Self::no_buffers();
        *lua.buffer.lock().unwrap() = Some(FakeBuffer {
            text: text.into(),
            tick: 10,
            modified: true,
        });
        lua
    }

    fn kinds(&self) -> Vec<&'static str> {
        self.calls.lock().unwrap().iter().map(|c| c.0).collect()
    }
}

#[async_trait]
impl Editor for FakeLua {
    async fn dispatch(&self, _events: Vec<Value>) -> Result<(), LuaError> {
        Ok(())
    }
    async fn fs_read(&self, args: Value) -> Result<Value, LuaError> {
        let args = msgpack::to_json(&args);
        self.calls.lock().unwrap().push(("read", args.clone()));
        let buffer = self.buffer.lock().unwrap();
        let Some(b) = buffer.as_ref() else {
            return Ok(Value::Nil);
        };
        let line = args["line"].as_u64().map(|n| n as u32);
        let limit = args["limit"].as_u64().map(|n| n as u32);
        let text = acp_client::edits::fs::slice_lines(&b.text, line, limit).unwrap();
        let mut reply = json!({"text": text, "tick": b.tick});
        if text != b.text {
            reply["whole"] = json!(b.text);
        }
        Ok(msgpack::from_json(&reply))
    }
    async fn fs_apply(&self, args: Value) -> Result<Value, LuaError> {
        let args = msgpack::to_json(&args);
        self.calls.lock().unwrap().push(("apply", args.clone()));
        let revision = args["revision"].clone();
        let mut buffer = self.buffer.lock().unwrap();
        let Some(b) = buffer.as_mut() else {
            return Ok(msgpack::from_json(
                &json!({"status": "no_buffer", "revision": revision}),
            ));
        };
        if let Some(typed) = self.typed_during_apply.lock().unwrap().take() {
            b.text.push_str(&typed);
            b.tick += 1;
            b.modified = true;
        }
        let reply = if !b.modified {
            let old = std::mem::replace(&mut b.text, args["content"].as_str().unwrap().into());
            b.tick += 2;
            json!({"status": "saved", "revision": revision, "tick": b.tick, "old_content": old})
        } else if args["tick"].as_u64() == Some(b.tick) {
            b.text = args["merged"].as_str().unwrap().into();
            b.tick += 1;
            json!({"status": "merged", "revision": revision, "tick": b.tick})
        } else {
            json!({"status": "stale", "revision": revision, "text": b.text, "tick": b.tick})
        };
        Ok(msgpack::from_json(&reply))
    }
}

struct Rig {
    tx: mpsc::UnboundedSender<Routed>,
    events: acp_nvim::batcher::EventReceiver,
    /// Every event seen so far, in order.
    seen: Vec<Event>,
    agents: Arc<Agents>,
    lua: Arc<FakeLua>,
    dir: tempfile::TempDir,
    /// Permission requests seen after each `permission_turn`.
    asked: Vec<usize>,
}

impl Rig {
    fn new(lua: FakeLua) -> Self {
        let lua = Arc::new(lua);
        let (queue, events) = EventQueue::new();
        let backend = Backend::new(Shared {
            events: queue,
            editor: lua.clone(),
            prompts: Arc::new(Prompts::new()),
            decisions: Decisions::new(),
        });
        let agents = backend.agents().clone();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(backend.run(rx));
        Self {
            tx,
            events,
            seen: Vec::new(),
            agents,
            lua,
            dir: tempfile::tempdir().unwrap(),
            asked: Vec::new(),
        }
    }

    fn cwd(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn send(&self, cmd: Command) {
        self.tx.send(Routed::Command(cmd)).unwrap();
    }

    fn open_in(&self, chat: &str, scenario: &Path, cwd: &Path) {
        self.send(Command::Open(Box::new(
            self.open_command(chat, scenario, cwd),
        )));
    }

    fn open_command(&self, chat: &str, scenario: &Path, cwd: &Path) -> OpenChat {
        OpenChat {
            chat_id: ChatId(chat.into()),
            agent: AgentSpec {
                name: "fake".into(),
                cmd: vec![
                    acp_testkit::fake_agent_bin().display().to_string(),
                    "--scenario".into(),
                    scenario.display().to_string(),
                ],
                env: Vec::new(),
                cwd: None,
                init_timeout: None,
                missing_file_read_empty: false,
                protocol_version: acp_client::ProtocolVersion::V1,
                ask_terminal: false,
                editor_tools: true,
                editor_tools_prompt: None,
            },
            cwd: cwd.to_path_buf(),
            mcp_servers: Vec::new(),
            load_session_id: None,
            resume_session_id: None,
            permission: Default::default(),
            permission_dir: None,
            auth_method_id: None,
            transcript_dir: None,
            additional_directories: Vec::new(),
            system_prompt: None,
            checkpoints: None,
        }
    }

    fn open(&self, chat: &str, scenario: &Path) {
        self.open_in(chat, scenario, &self.cwd());
    }

    fn prompt(&self, chat: &str, text: &str) {
        self.send(Command::Prompt {
            chat_id: ChatId(chat.into()),
            blocks: vec![serde_json::from_value(json!({"type": "text", "text": text})).unwrap()],
            buffers: Vec::new(),
        });
    }

    /// The next event matching `want`; others are kept in `seen`.
    async fn wait(&mut self, what: &str, want: impl Fn(&Event) -> bool) -> Event {
        let deadline = tokio::time::Instant::now() + HANG_GUARD;
        loop {
            let ev = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .unwrap_or_else(|_| panic!("no {what} event; seen: {:#?}", self.seen))
                .unwrap();
            self.seen.push(ev.clone());
            if want(&ev) {
                return ev;
            }
        }
    }

    async fn wait_type(&mut self, chat: &str, kind: &str) -> Json {
        let chat = ChatId(chat.into());
        self.wait(&format!("{kind} for {chat}"), |e| {
            e.kind() == kind && e.chat_id() == Some(&chat)
        })
        .await
        .json_view()
    }

    /// The agent's text in every session event of `chat` seen so far.
    fn text_of(&self, chat: &str) -> String {
        let chat = ChatId(chat.into());
        self.seen
            .iter()
            .filter(|e| e.kind() == "session" && e.chat_id() == Some(&chat))
            .map(|e| e.json_view()["change"].to_string())
            .collect()
    }

    async fn wait_until_no_agents(&self) {
        let deadline = tokio::time::Instant::now() + HANG_GUARD;
        while !self.agents.is_empty() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "agents still running: {}",
                self.agents.len()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[tokio::test]
async fn chats_of_one_agent_share_its_process_and_get_their_own_events() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let echo = acp_testkit::scenario("echo");
    rig.open("a", &echo);
    rig.open("b", &echo);
    let a = rig.wait_type("a", "session_started").await;
    let b = rig.wait_type("b", "session_started").await;
    assert_ne!(a["session_id"], b["session_id"]);
    assert_eq!(a["agent_name"], "fake");
    assert!(a["capabilities"].is_object());
    assert_eq!(rig.agents.len(), 1);

    rig.prompt("b", "hello from b");
    let ended = rig.wait_type("b", "turn_ended").await;
    assert_eq!(ended["stop_reason"], "end_turn");
    assert!(rig.text_of("b").contains("hello from b"));
    assert!(!rig.text_of("a").contains("hello from b"));

    // Another working directory is another agent key: a second process.
    let other = rig.dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    rig.open_in("c", &echo, &other.canonicalize().unwrap());
    rig.wait_type("c", "session_started").await;
    assert_eq!(rig.agents.len(), 2);

    for chat in ["a", "b", "c"] {
        rig.send(Command::Close {
            chat_id: ChatId(chat.into()),
        });
    }
    rig.wait_until_no_agents().await;
}

#[tokio::test]
async fn the_users_permission_answer_reaches_the_agent() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    rig.open("a", &acp_testkit::scenario("permission"));
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "edit please");
    let req = rig.wait_type("a", "permission_request").await;
    assert_eq!(req["tool_call"]["tool_call_id"], "edit-1");
    let allow = req["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "allow_once")
        .unwrap()["option_id"]
        .as_str()
        .unwrap()
        .to_owned();
    rig.send(Command::PermissionRespond {
        request_id: PromptId(req["request_id"].as_u64().unwrap()),
        option_id: Some(allow),
    });
    let ended = rig.wait_type("a", "turn_ended").await;
    assert_eq!(ended["stop_reason"], "end_turn");
    assert!(rig.text_of("a").contains("allowed"));
}

impl Rig {
    /// Answers the next permission prompt of `chat` with the option of
    /// `kind`; returns the request.
    async fn answer_permission(&mut self, chat: &str, kind: &str) -> Json {
        let req = self.wait_type(chat, "permission_request").await;
        let option = req["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == kind)
            .unwrap()["option_id"]
            .as_str()
            .unwrap()
            .to_owned();
        self.send(Command::PermissionRespond {
            request_id: PromptId(req["request_id"].as_u64().unwrap()),
            option_id: Some(option),
        });
        req
    }

    /// Runs one turn of the `permission` scenario in `chat`: the user is
    /// asked and answers `kind`, or the policy answers (`None`).
    async fn permission_turn(&mut self, chat: &str, kind: Option<&str>) {
        self.prompt(chat, "edit please");
        match kind {
            Some(kind) => {
                self.answer_permission(chat, kind).await;
            }
            None => {
                self.wait_type(chat, "permission_auto").await;
            }
        }
        let ended = self.wait_type(chat, "turn_ended").await;
        assert_eq!(ended["stop_reason"], "end_turn");
        let asked = self
            .seen
            .iter()
            .filter(|e| e.kind() == "permission_request")
            .count();
        self.asked.push(asked);
    }
}

#[tokio::test]
async fn remember_false_from_the_open_request_asks_again_after_always() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let scenario = acp_testkit::scenario("permission");
    let mut open = rig.open_command("a", &scenario, &rig.cwd());
    open.permission.remember = Some(false);
    rig.send(Command::Open(Box::new(open)));
    rig.wait_type("a", "session_started").await;
    rig.permission_turn("a", Some("allow_always")).await;
    // Not remembered: asked again, and "always" once more is not kept either.
    rig.permission_turn("a", Some("allow_always")).await;
    rig.permission_turn("a", Some("allow_once")).await;
    assert_eq!(rig.asked, [1, 2, 3], "every turn asked the user");

    // The policy is the agent connection's: a later open of the same agent
    // that sends `remember = true` switches remembering back on for it.
    let mut open = rig.open_command("b", &scenario, &rig.cwd());
    open.permission.remember = Some(true);
    rig.send(Command::Open(Box::new(open)));
    rig.wait_type("b", "session_started").await;
    assert_eq!(rig.agents.len(), 1, "one agent for both chats");
    rig.permission_turn("b", Some("allow_always")).await;
    rig.permission_turn("b", None).await;
    assert_eq!(rig.asked, [1, 2, 3, 4, 4], "the remembered answer was used");
}

#[tokio::test]
async fn always_answers_are_remembered_by_default() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    rig.open("a", &acp_testkit::scenario("permission"));
    rig.wait_type("a", "session_started").await;
    rig.permission_turn("a", Some("allow_always")).await;
    rig.permission_turn("a", None).await;
    assert_eq!(rig.asked, [1, 1]);
}

#[tokio::test]
async fn cancel_withdraws_the_pending_permission_prompt() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    rig.open("a", &acp_testkit::scenario("permission"));
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "edit please");
    let req = rig.wait_type("a", "permission_request").await;
    rig.send(Command::Cancel {
        chat_id: ChatId("a".into()),
        subagent: None,
    });
    let cancelled = rig.wait_type("a", "permission_cancelled").await;
    assert_eq!(cancelled["request_id"], req["request_id"]);
    rig.wait_type("a", "turn_ended").await;
    assert!(rig.text_of("a").contains("cancelled"));
    // A late answer to the withdrawn prompt is harmless.
    rig.send(Command::PermissionRespond {
        request_id: PromptId(req["request_id"].as_u64().unwrap()),
        option_id: Some("allow".into()),
    });
}

#[tokio::test]
async fn a_crashed_agent_is_reported_to_its_chats_and_replaced_on_the_next_open() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let crash = acp_testkit::scenario("crash");
    rig.open("a", &crash);
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "go");
    let exited = rig.wait_type("a", "agent_exited").await;
    assert_eq!(exited["status"], "exit code 3");
    assert!(exited["stderr_tail"]
        .as_str()
        .unwrap()
        .contains("fatal: the fake agent crashed on purpose"));

    rig.open("b", &crash);
    let started = rig.wait_type("b", "session_started").await;
    assert_eq!(started["agent_name"], "fake");
    // The crash was reported once, as agent_exited, not also as a failed prompt.
    assert!(!rig.seen.iter().any(|e| e.kind() == "prompt_failed"));
}

#[tokio::test]
async fn an_agent_that_cannot_start_fails_the_open_with_a_fix() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let cwd = rig.cwd();
    rig.send(Command::Open(Box::new(OpenChat {
        chat_id: ChatId("a".into()),
        agent: AgentSpec {
            name: "nope".into(),
            cmd: vec!["acp-nvim-test-no-such-agent".into()],
            env: Vec::new(),
            cwd: None,
            init_timeout: None,
            missing_file_read_empty: false,
            protocol_version: acp_client::ProtocolVersion::V1,
            ask_terminal: false,
            editor_tools: true,
            editor_tools_prompt: None,
        },
        cwd,
        mcp_servers: Vec::new(),
        load_session_id: None,
        resume_session_id: None,
        permission: Default::default(),
        permission_dir: None,
        auth_method_id: None,
        transcript_dir: None,
        additional_directories: Vec::new(),
        system_prompt: None,
        checkpoints: None,
    })));
    let failed = rig.wait_type("a", "open_failed").await;
    let message = failed["message"].as_str().unwrap();
    assert!(message.contains("acp-nvim-test-no-such-agent"), "{message}");
    assert!(message.contains("setup()"), "{message}");
    assert!(rig.agents.is_empty());
    // Commands to the failed chat are answered, not lost.
    rig.prompt("a", "hello?");
    let failed = rig.wait_type("a", "prompt_failed").await;
    assert!(failed["message"].as_str().unwrap().contains(":Acp new"));
}

#[tokio::test]
async fn an_agent_that_wants_a_login_asks_for_it() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    rig.open("a", &acp_testkit::scenario("auth"));
    let auth = rig.wait_type("a", "auth_required").await;
    let ids: Vec<&str> = auth["auth_methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert!(ids.contains(&"fake-login"), "{auth}");
}

/// A rig whose agent runs `steps` in one turn, with `notes.txt` on disk
/// holding `disk`.
fn notes_rig(lua: FakeLua, disk: &str, steps: Json) -> (Rig, PathBuf) {
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

fn write_step(content: &str) -> Json {
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

#[tokio::test]
async fn shutdown_stops_every_agent() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    rig.open("a", &acp_testkit::scenario("cancel"));
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "work forever");
    let (ack, done) = oneshot::channel();
    rig.tx.send(Routed::Shutdown(Some(ack))).unwrap();
    tokio::time::timeout(HANG_GUARD, done)
        .await
        .unwrap()
        .unwrap();
    assert!(rig.agents.is_empty());
}

#[tokio::test]
async fn an_agent_that_dies_while_starting_fails_the_open_with_its_stderr() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let cwd = rig.cwd();
    let scenario = acp_testkit::write_scenario(&cwd, &json!({"bogusField": 1}));
    rig.open("a", &scenario);
    let failed = rig.wait_type("a", "open_failed").await;
    let message = failed["message"].as_str().unwrap();
    assert!(
        message.contains("exited while starting (exit code 2)"),
        "{message}"
    );
    // The stderr is in its own field, not repeated in the sentence.
    let tail = failed["stderr_tail"].as_str().unwrap();
    assert!(tail.contains("bogusField"), "{tail}");
    assert!(!message.contains("bogusField"), "{message}");
    rig.wait_until_no_agents().await;
}

#[tokio::test]
async fn a_cancel_sent_right_after_the_prompt_ends_that_turn() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    rig.open("a", &acp_testkit::scenario("cancel"));
    // Both are sent before the session is even open: they wait, in order.
    rig.prompt("a", "work");
    rig.send(Command::Cancel {
        chat_id: ChatId("a".into()),
        subagent: None,
    });
    rig.wait_type("a", "session_started").await;
    // If the cancel overtook the prompt, the agent would wait forever.
    let ended = rig.wait_type("a", "turn_ended").await;
    assert_eq!(ended["stop_reason"], "cancelled");
}

#[tokio::test]
async fn a_loaded_session_replays_its_history_to_the_chat() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let cwd = rig.cwd();
    rig.send(Command::Open(Box::new(OpenChat {
        chat_id: ChatId("a".into()),
        agent: AgentSpec {
            name: "fake".into(),
            cmd: vec![
                acp_testkit::fake_agent_bin().display().to_string(),
                "--scenario".into(),
                acp_testkit::scenario("sessions").display().to_string(),
            ],
            env: Vec::new(),
            cwd: None,
            init_timeout: None,
            missing_file_read_empty: false,
            protocol_version: acp_client::ProtocolVersion::V1,
            ask_terminal: false,
            editor_tools: true,
            editor_tools_prompt: None,
        },
        cwd,
        mcp_servers: Vec::new(),
        load_session_id: Some("stored-1".into()),
        resume_session_id: None,
        permission: Default::default(),
        permission_dir: None,
        auth_method_id: None,
        transcript_dir: None,
        additional_directories: Vec::new(),
        system_prompt: None,
        checkpoints: None,
    })));
    let started = rig.wait_type("a", "session_started").await;
    assert_eq!(started["session_id"], "stored-1");
    assert_eq!(started["modes"]["current_mode_id"], "ask");
    let replay = rig.text_of("a");
    assert!(replay.contains("fix the parser"), "{replay}");
    assert!(replay.contains("Fixed."), "{replay}");
    assert!(replay.contains("Edit parser.rs"), "{replay}");

    rig.send(Command::SetMode {
        chat_id: ChatId("a".into()),
        mode_id: "code".into(),
    });
    let changed = rig
        .wait("mode change", |e| {
            e.kind() == "session" && e.json_view()["change"]["change"] == "mode_changed"
        })
        .await;
    assert_eq!(changed.json_view()["change"]["current_mode_id"], "code");
}

#[tokio::test]
async fn a_second_cancel_gives_up_on_an_agent_that_ignores_the_first() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let scenario = acp_testkit::write_scenario(
        rig.dir.path(),
        &json!({"turns": [
            {"match": "hang", "steps": [
                {"type": "text", "text": "stuck"},
                {"type": "waitForFile", "path": "release"}
            ]},
            {"steps": [{"type": "text", "text": "fresh answer"}]}
        ]}),
    );
    rig.open("a", &scenario);
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "hang");
    rig.wait("the stuck text", |e| {
        e.kind() == "session" && e.json_view()["change"].to_string().contains("stuck")
    })
    .await;
    let cancel = || Command::Cancel {
        chat_id: ChatId("a".into()),
        subagent: None,
    };
    rig.send(cancel());
    rig.send(cancel());
    let ended = rig.wait_type("a", "turn_ended").await;
    assert_eq!(ended["stop_reason"], "cancelled");

    // The chat takes prompts again. The agent serves them once it is
    // unstuck; its answer to the withdrawn prompt is dropped, so the next
    // turn_ended is the new prompt's.
    rig.prompt("a", "next");
    std::fs::write(rig.dir.path().join("release"), "").unwrap();
    let ended = rig.wait_type("a", "turn_ended").await;
    assert_eq!(ended["stop_reason"], "end_turn");
    assert!(rig.text_of("a").contains("fresh answer"));
    let turns = rig.seen.iter().filter(|e| e.kind() == "turn_ended").count();
    assert_eq!(turns, 2, "one outcome per prompt: {:#?}", rig.seen);
}

#[tokio::test]
async fn an_agent_that_never_answers_initialize_fails_the_open_within_its_timeout() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let scenario = acp_testkit::write_scenario(
        rig.dir.path(),
        &json!({"initialize": {"fault": {"type": "never"}}}),
    );
    let mut open = rig.open_command("a", &scenario, &rig.cwd());
    open.agent.init_timeout = Some(Duration::from_millis(300));
    rig.send(Command::Open(Box::new(open)));
    let failed = rig.wait_type("a", "open_failed").await;
    let message = failed["message"].as_str().unwrap();
    assert!(message.contains("did not answer `initialize`"), "{message}");
    assert!(message.contains("--acp"), "{message}");
    assert!(message.contains("init_timeout"), "{message}");
}

/// A fake agent that delegates to one child session, whose permission
/// request must reach the parent's chat.
fn subagent_scenario(dir: &Path) -> PathBuf {
    acp_testkit::write_scenario(
        dir,
        &json!({"turns": [{"steps": [
            {"type": "subagent", "childId": "child-1", "title": "Explorer", "state": "running", "cancel": true},
            {"type": "subagent", "childId": "child-2", "title": "Locked", "state": "running"},
            {"type": "asSession", "childId": "child-1", "steps": [
                {"type": "text", "text": "child text"},
                {"type": "requestPermission", "toolCall": {"toolCallId": "c-edit", "title": "Edit", "kind": "edit"}}
            ]},
            {"type": "sleep", "ms": 300000}
        ]}]}),
    )
}

#[tokio::test]
async fn a_subagents_permission_request_and_its_cancel_go_through_the_parents_chat() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let scenario = subagent_scenario(rig.dir.path());
    rig.open("a", &scenario);
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "delegate");
    // The child's request carries the child's session id: routed to the
    // chat of its parent, not held for a session no chat opened.
    let req = rig.answer_permission("a", "allow_once").await;
    assert_eq!(req["tool_call"]["tool_call_id"], "c-edit");
    // The child's changes reach the chat wrapped, with the child's id.
    rig.wait("the child's report", |e| {
        let v = e.json_view();
        v["change"]["change"] == "child"
            && v["change"]["session_id"] == "child-1"
            && v["change"]["child_change"]
                .to_string()
                .contains("permission: allow_once")
    })
    .await;
    // Cancelling a child the agent lets the client cancel: no warning, the
    // parent's turn goes on. One it does not: a warning naming the fix.
    rig.send(Command::Cancel {
        chat_id: ChatId("a".into()),
        subagent: Some("child-2".into()),
    });
    let warning = rig.wait_type("a", "warning").await;
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("does not allow cancelling subagent `child-2`"),
        "{warning}"
    );
    rig.send(Command::Cancel {
        chat_id: ChatId("a".into()),
        subagent: Some("child-1".into()),
    });
    rig.send(Command::Cancel {
        chat_id: ChatId("a".into()),
        subagent: Some("not-a-child".into()),
    });
    let warning = rig.wait_type("a", "warning").await;
    assert!(
        warning["message"]
            .as_str()
            .unwrap()
            .contains("`not-a-child` is not a subagent"),
        "{warning}"
    );
    assert!(!rig.seen.iter().any(|e| e.kind() == "turn_ended"));
    rig.send(Command::Cancel {
        chat_id: ChatId("a".into()),
        subagent: None,
    });
    let ended = rig.wait_type("a", "turn_ended").await;
    assert_eq!(ended["stop_reason"], "cancelled");
}

#[tokio::test]
async fn a_system_prompt_an_agent_ignores_is_named_once_per_agent() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    let scenario = acp_testkit::write_scenario(
        rig.dir.path(),
        &json!({"initialize": {"agentCapabilities": {}},
            "turns": [{"steps": [{"type": "systemPrompt"}]}]}),
    );
    let cwd = rig.cwd();
    for chat in ["a", "b"] {
        let mut open = rig.open_command(chat, &scenario, &cwd);
        open.system_prompt = Some(acp_client::SystemPrompt {
            mode: acp_client::SystemPromptMode::Append,
            text: "Be terse.".into(),
        });
        rig.send(Command::Open(Box::new(open)));
        rig.wait_type(chat, "session_started").await;
    }
    let warnings: Vec<String> = rig
        .seen
        .iter()
        .filter(|e| e.kind() == "warning")
        .map(|e| e.json_view()["message"].to_string())
        .collect();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("does not take a client system prompt"));
    rig.prompt("b", "go");
    rig.wait_type("b", "turn_ended").await;
    assert!(rig.text_of("b").contains("system prompt: none"));
}

fn rewind(rig: &Rig, chat: &str, turn: Option<u32>, preview: bool) {
    rig.send(Command::Rewind {
        chat_id: ChatId(chat.into()),
        turn,
        preview,
    });
}

#[tokio::test]
async fn a_rewind_undoes_the_agents_write_and_hands_back_the_checkpoints() {
    let (mut rig, cwd) = notes_rig(FakeLua::no_buffers(), "old\n", json!([write_step("new\n")]));
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "rewrite the notes");
    rig.wait_type("a", "turn_ended").await;
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "new\n"
    );

    rewind(&rig, "a", None, false);
    let turns = rig.wait_type("a", "rewind_turns").await;
    assert_eq!(turns["turns"][0]["turn"], 1);
    assert_eq!(turns["turns"][0]["label"], "rewrite the notes");
    let notes = cwd.canonicalize().unwrap().join("notes.txt");
    assert_eq!(turns["turns"][0]["files"], json!([notes.to_string_lossy()]));

    rewind(&rig, "a", Some(1), true);
    let preview = rig.wait_type("a", "rewind_preview").await;
    assert_eq!(preview["files"][0]["now"], "new\n");
    assert_eq!(preview["files"][0]["then"], "old\n");
    assert_eq!(
        std::fs::read_to_string(&notes).unwrap(),
        "new\n",
        "a preview changes nothing"
    );

    rewind(&rig, "a", Some(1), false);
    let done = rig.wait_type("a", "rewound").await;
    assert_eq!(done["ok"], true, "{done}");
    assert_eq!(done["restored"], json!([notes.to_string_lossy()]));
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "old\n");
    // The store after the rewind has no turns left, for the next session.
    let store = acp_client::edits::checkpoint::Checkpoints::from_json(
        done["checkpoints"].as_str().unwrap(),
    )
    .unwrap();
    assert!(store.turns().is_empty());

    rewind(&rig, "a", Some(1), false);
    let again = rig.wait_type("a", "rewound").await;
    assert_eq!(again["ok"], false);
    assert!(
        again["reason"]
            .as_str()
            .unwrap()
            .contains("no turns to rewind yet"),
        "{again}"
    );
}

#[tokio::test]
async fn a_rewind_during_a_running_turn_cancels_it_first() {
    let mut rig = Rig::new(FakeLua::no_buffers());
    rig.open("a", &acp_testkit::scenario("cancel"));
    rig.wait_type("a", "session_started").await;
    rig.prompt("a", "work");
    rewind(&rig, "a", Some(1), false);
    let ended = rig.wait_type("a", "turn_ended").await;
    assert_eq!(ended["stop_reason"], "cancelled");
    let done = rig.wait_type("a", "rewound").await;
    assert_eq!(done["ok"], true, "{done}");
}
