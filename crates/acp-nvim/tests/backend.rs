//! The backend against the scripted fake agent, with a fake Lua side:
//! commands go in as the handler would forward them, events are read from
//! the queue the batcher would send to Neovim.

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

#[path = "backend/agents.rs"]
mod agents;
#[path = "backend/buffers.rs"]
mod buffers;
#[path = "backend/permissions.rs"]
mod permissions;
#[path = "backend/turns.rs"]
mod turns;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_nvim::agents::{Agents, Shared};
use acp_nvim::backend::{Backend, Routed};
use acp_nvim::batcher::EventQueue;
use acp_nvim::command::{AgentSpec, ChatId, Command, OpenChat};
use acp_nvim::editor::{Editor, LuaError};
use acp_nvim::msgpack;
use acp_nvim::prompts::Prompts;
use acp_nvim::protocol::Event;
use acp_nvim::review_queue::Decisions;
use async_trait::async_trait;
use rmpv::Value;
use serde_json::{json, Value as Json};
use tokio::sync::mpsc;

/// Hang guard only: every wait below ends as soon as its event arrives.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// A buffer of the fake Lua side: its text, `b:changedtick` and whether
/// it has unsaved edits.
struct FakeBuffer {
    text: String,
    tick: u64,
    modified: bool,
}

/// The Lua side: `acp.edits.fs` over at most one buffer (of `notes.txt`), as
/// lua/acp/edits/fs.lua answers, recording its calls.
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
