//! Sessions through the backend and the fake agent: listing, closing,
//! logging in and out, MCP servers, transcripts.

#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use acp_nvim::agents::{Agents, Shared};
use acp_nvim::backend::{Backend, Routed};
use acp_nvim::batcher::{EventQueue, EventReceiver};
use acp_nvim::command::{AgentSpec, ChatId, Command, OpenChat};
use acp_nvim::editor::{Editor, LuaError};
use acp_nvim::prompts::Prompts;
use acp_nvim::protocol::Event;
use acp_nvim::review_queue::Decisions;
use acp_nvim::transcript::Transcripts;
use async_trait::async_trait;
use rmpv::Value;
use serde_json::{json, Value as Json};
use tokio::sync::mpsc;

/// Hang guard only: every wait below ends as soon as its event arrives.
const HANG_GUARD: Duration = Duration::from_secs(30);

/// A Lua side without buffers.
struct NoBuffers;

#[async_trait]
impl Editor for NoBuffers {
    async fn dispatch(&self, _events: Vec<Value>) -> Result<(), LuaError> {
        Ok(())
    }
    async fn fs_read(&self, _args: Value) -> Result<Value, LuaError> {
        Ok(Value::Nil)
    }
    async fn fs_apply(&self, args: Value) -> Result<Value, LuaError> {
        let revision = acp_nvim::msgpack::to_json(&args)["revision"].clone();
        Ok(acp_nvim::msgpack::from_json(
            &json!({"status": "no_buffer", "revision": revision}),
        ))
    }
}

struct Rig {
    tx: mpsc::UnboundedSender<Routed>,
    events: EventReceiver,
    /// Records what the rig receives, as the batcher does for Lua.
    transcripts: Arc<Transcripts>,
    seen: Vec<Event>,
    agents: Arc<Agents>,
    dir: tempfile::TempDir,
}

impl Rig {
    fn new() -> Self {
        let (queue, events) = EventQueue::new();
        let transcripts = Transcripts::new();
        let backend = Backend::new(Shared {
            events: queue,
            editor: Arc::new(NoBuffers),
            prompts: Arc::new(Prompts::new()),
            decisions: Decisions::new(),
        })
        .with_transcripts(transcripts.clone())
        .with_list_linger(Duration::ZERO);
        let agents = backend.agents().clone();
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(backend.run(rx));
        Self {
            tx,
            events,
            transcripts,
            seen: Vec::new(),
            agents,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn cwd(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn send(&self, cmd: Command) {
        self.tx.send(Routed::Command(cmd)).unwrap();
    }

    /// The fake agent playing `scenario`, its stderr appended to `log`.
    fn agent(&self, scenario: &Path, log: &Path) -> AgentSpec {
        AgentSpec {
            name: "fake".into(),
            cmd: vec![
                "sh".into(),
                "-c".into(),
                format!(
                    "exec '{}' --scenario '{}' 2>>'{}'",
                    acp_testkit::fake_agent_bin().display(),
                    scenario.display(),
                    log.display()
                ),
            ],
            env: Vec::new(),
            cwd: None,
            init_timeout: None,
            missing_file_read_empty: false,
            protocol_version: acp_client::ProtocolVersion::V1,
            ask_terminal: false,
            editor_tools: true,
            editor_tools_prompt: None,
        }
    }

    /// The fake agent playing `scenario` (an object) with its sessions
    /// kept in a store file, so an agent started again can load them.
    fn stored_agent(&self, mut scenario: Json) -> AgentSpec {
        scenario["sessionStore"] = json!(self.dir.path().join("store.json"));
        let path = acp_testkit::write_scenario(self.dir.path(), &scenario);
        self.agent(&path, &self.dir.path().join("agent.log"))
    }

    fn open(&self, chat: &str, agent: AgentSpec, f: impl FnOnce(&mut OpenChat)) {
        let mut open = OpenChat {
            chat_id: ChatId(chat.into()),
            agent,
            cwd: self.cwd(),
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
        };
        f(&mut open);
        self.send(Command::Open(Box::new(open)));
    }

    fn prompt(&self, chat: &str, text: &str) {
        self.send(Command::Prompt {
            chat_id: ChatId(chat.into()),
            blocks: vec![serde_json::from_value(json!({"type": "text", "text": text})).unwrap()],
            buffers: Vec::new(),
        });
    }

    async fn wait(&mut self, what: &str, want: impl Fn(&Event) -> bool) -> Json {
        let deadline = tokio::time::Instant::now() + HANG_GUARD;
        loop {
            let ev = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .unwrap_or_else(|_| panic!("no {what} event; seen: {:#?}", self.seen))
                .unwrap();
            self.transcripts.record_batch(std::slice::from_ref(&ev));
            self.seen.push(ev.clone());
            if want(&ev) {
                return ev.json_view();
            }
        }
    }

    async fn wait_type(&mut self, chat: &str, kind: &str) -> Json {
        let chat = ChatId(chat.into());
        self.wait(&format!("{kind} for {chat}"), |e| {
            e.kind() == kind && e.chat_id() == Some(&chat)
        })
        .await
    }

    async fn wait_until_no_agents(&self) {
        let deadline = tokio::time::Instant::now() + HANG_GUARD;
        while !self.agents.is_empty() {
            assert!(
                tokio::time::Instant::now() < deadline,
                "agents still running"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// The agent's text in session changes (JSON as Lua gets them).
fn agent_text<'a>(changes: impl Iterator<Item = &'a Json>) -> String {
    let mut text = String::new();
    for c in changes {
        match c["change"].as_str() {
            Some("entry_added") if c["entry"]["type"] == "agent_message" => {
                for block in c["entry"]["content"].as_array().into_iter().flatten() {
                    text.push_str(block["text"].as_str().unwrap_or_default());
                }
            }
            Some("text_appended") => {
                text.push_str(c["content"]["text"].as_str().unwrap_or_default())
            }
            _ => {}
        }
    }
    text
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[tokio::test]
async fn list_sessions_answers_every_page_newest_first() {
    let mut rig = Rig::new();
    let log = rig.dir.path().join("agent.log");
    let scenario = acp_testkit::scenario("sessions");
    let agent = rig.agent(&scenario, &log);
    rig.send(Command::ListSessions {
        request_id: "r1".into(),
        agent: agent.clone(),
        cwd: rig.cwd(),
        all: true,
        delete: None,
    });
    let listed = rig
        .wait("sessions_listed", |e| e.kind() == "sessions_listed")
        .await;
    assert_eq!(listed["request_id"], "r1");
    assert_eq!(listed["agent_name"], "fake");
    assert!(listed["capabilities"]["load_session"].as_bool().unwrap());
    let sessions = listed["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 5, "all pages of 2: {listed}");
    let updated: Vec<&str> = sessions
        .iter()
        .filter_map(|s| s["updated_at"].as_str())
        .collect();
    let mut sorted = updated.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(updated, sorted, "newest first");
    // The agent was only borrowed for the listing.
    rig.wait_until_no_agents().await;

    // Filtered by the cwd unless `all`: none of the stored ones is here.
    rig.send(Command::ListSessions {
        request_id: "r2".into(),
        agent,
        cwd: rig.cwd(),
        all: false,
        delete: None,
    });
    let listed = rig
        .wait("sessions_listed", |e| e.kind() == "sessions_listed")
        .await;
    assert_eq!(listed["sessions"], json!([]));
}

#[tokio::test]
async fn an_agent_that_cannot_list_says_so() {
    let mut rig = Rig::new();
    let scenario = acp_testkit::write_scenario(
        rig.dir.path(),
        &json!({"initialize": {"agentCapabilities": {"loadSession": true}}}),
    );
    let agent = rig.agent(&scenario, &rig.dir.path().join("agent.log"));
    rig.send(Command::ListSessions {
        request_id: "r".into(),
        agent,
        cwd: rig.cwd(),
        all: false,
        delete: None,
    });
    let listed = rig
        .wait("sessions_listed", |e| e.kind() == "sessions_listed")
        .await;
    assert!(listed.get("sessions").is_none(), "{listed}");
    assert!(listed["message"]
        .as_str()
        .unwrap()
        .contains("cannot list its sessions"));
    assert_eq!(listed["capabilities"]["load_session"], true);
}

#[tokio::test]
async fn close_sends_session_close_only_when_advertised() {
    let mut rig = Rig::new();
    for (caps, sent) in [
        (json!({"sessionCapabilities": {"close": {}}}), true),
        (json!({"sessionCapabilities": {}}), false),
    ] {
        let log = rig.dir.path().join(format!("agent-{sent}.log"));
        let scenario = acp_testkit::write_scenario(
            rig.dir.path(),
            &json!({"initialize": {"agentCapabilities": caps}}),
        );
        rig.open("a", rig.agent(&scenario, &log), |_| {});
        rig.wait_type("a", "session_started").await;
        rig.send(Command::Close {
            chat_id: ChatId("a".into()),
        });
        rig.wait_until_no_agents().await;
        let log = read(&log);
        assert!(log.contains("method=\"session/new\""), "{log}");
        assert_eq!(log.contains("method=\"session/close\""), sent, "{log}");
    }
}

#[tokio::test]
async fn two_chats_of_one_agent_close_independently() {
    let mut rig = Rig::new();
    let log = rig.dir.path().join("agent.log");
    let scenario = acp_testkit::scenario("echo");
    rig.open("a", rig.agent(&scenario, &log), |_| {});
    rig.open("b", rig.agent(&scenario, &log), |_| {});
    rig.wait_type("a", "session_started").await;
    rig.wait_type("b", "session_started").await;
    assert_eq!(rig.agents.len(), 1, "one shared process");
    rig.send(Command::Close {
        chat_id: ChatId("a".into()),
    });
    rig.prompt("b", "still here");
    rig.wait_type("b", "turn_ended").await;
    assert_eq!(rig.agents.len(), 1);
    assert_eq!(read(&log).matches("method=\"session/close\"").count(), 1);
}

#[tokio::test]
async fn a_chosen_auth_method_logs_in_before_the_session_opens_and_logout_works() {
    let mut rig = Rig::new();
    let scenario = acp_testkit::write_scenario(
        rig.dir.path(),
        &json!({"authRequired": true,
                "initialize": {"agentCapabilities": {"auth": {"logout": {}}}}}),
    );
    let agent = rig.agent(&scenario, &rig.dir.path().join("agent.log"));
    rig.open("a", agent.clone(), |_| {});
    let auth = rig.wait_type("a", "auth_required").await;
    assert_eq!(auth["auth_methods"][0]["id"], "fake-login");

    rig.open("a", agent.clone(), |o| {
        o.auth_method_id = Some("nope".into())
    });
    let failed = rig.wait_type("a", "open_failed").await;
    assert!(
        failed["message"].as_str().unwrap().contains("`nope`"),
        "{failed}"
    );

    rig.open("a", agent, |o| o.auth_method_id = Some("fake-login".into()));
    rig.wait_type("a", "session_started").await;
    rig.send(Command::Logout {
        chat_id: ChatId("a".into()),
    });
    rig.wait_type("a", "logged_out").await;
}

#[tokio::test]
async fn http_mcp_servers_reach_only_agents_that_advertise_them() {
    let mut rig = Rig::new();
    let servers: Vec<acp_client::schema::McpServer> = serde_json::from_value(json!([
        {"name": "files", "command": "/bin/mcp-files", "args": [], "env": []},
        {"type": "http", "name": "web", "url": "https://mcp.example/", "headers": []}
    ]))
    .unwrap();
    // The editor's own MCP server comes first (issue 26), over stdio or http.
    for (http, expected) in [
        (false, vec!["editor", "files"]),
        (true, vec!["editor", "files", "web"]),
    ] {
        let scenario = acp_testkit::write_scenario(
            rig.dir.path(),
            &json!({
                "initialize": {"agentCapabilities": {"mcpCapabilities": {"http": http}}},
                "turns": [{"steps": [{"type": "text", "text": "mcp: {{mcpServers}}"}]}]
            }),
        );
        let chat = format!("c{http}");
        let agent = rig.agent(&scenario, &rig.dir.path().join("agent.log"));
        rig.open(&chat, agent, |o| o.mcp_servers = servers.clone());
        if !http {
            let warning = rig.wait_type(&chat, "warning").await;
            let message = warning["message"].as_str().unwrap();
            assert!(message.contains("`web` (http)"), "{message}");
        }
        rig.wait_type(&chat, "session_started").await;
        rig.prompt(&chat, "which servers?");
        rig.wait_type(&chat, "turn_ended").await;
        let changes: Vec<Json> = rig
            .seen
            .iter()
            .filter(|e| e.chat_id() == Some(&ChatId::from(chat.as_str())) && e.kind() == "session")
            .map(|e| e.json_view()["change"].clone())
            .collect();
        let text = agent_text(changes.iter());
        let got: Json = serde_json::from_str(text.strip_prefix("mcp: ").unwrap()).unwrap();
        let names: Vec<&str> = got
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, expected);
    }
}

#[tokio::test]
async fn a_session_is_recorded_as_its_events_and_a_reopen_appends() {
    let mut rig = Rig::new();
    let agent = rig.stored_agent(json!({
        "turns": [{"steps": [{"type": "text", "text": "streamed in chunks", "chunkSize": 3}]}]
    }));
    let transcripts = rig.dir.path().join("transcripts");
    let dir = transcripts.clone();
    rig.open("a", agent.clone(), |o| o.transcript_dir = Some(dir));
    let started = rig.wait_type("a", "session_started").await;
    let session = started["session_id"].as_str().unwrap().to_owned();
    let path = PathBuf::from(started["transcript_path"].as_str().unwrap());
    assert_eq!(
        path,
        transcripts.join("fake").join(format!("{session}.jsonl"))
    );
    rig.prompt("a", "hello");
    rig.wait_type("a", "turn_ended").await;
    rig.send(Command::Close {
        chat_id: ChatId("a".into()),
    });
    rig.wait_until_no_agents().await;

    let records: Vec<Json> = read(&path)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = records
        .iter()
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds.first(), Some(&"transcript"));
    assert_eq!(records[0]["session_id"], session.as_str());
    assert_eq!(kinds[1], "session_started");
    assert_eq!(kinds.last(), Some(&"turn_ended"));
    let appended = records
        .iter()
        .filter(|r| r["change"]["change"] == "text_appended")
        .count();
    assert_eq!(appended, 1, "chunks coalesced: {records:#?}");
    assert_eq!(
        agent_text(records.iter().map(|r| &r["change"])),
        "streamed in chunks"
    );

    // Loading it again (a new agent process, from its store) appends a new
    // opening; the replay is not written twice.
    let dir = transcripts.clone();
    let id = session.clone();
    rig.open("b", agent, |o| {
        o.transcript_dir = Some(dir);
        o.load_session_id = Some(id);
    });
    rig.wait_type("b", "session_started").await;
    rig.send(Command::Close {
        chat_id: ChatId("b".into()),
    });
    rig.wait_until_no_agents().await;
    let text = read(&path);
    assert_eq!(text.matches("\"type\":\"transcript\"").count(), 2, "{text}");
    assert_eq!(text.matches("eamed in chunks").count(), 1, "{text}");
    assert!(text.contains("\"opening\":\"load\""));
}

#[tokio::test]
async fn a_list_request_can_delete_a_session_first() {
    let mut rig = Rig::new();
    let log = rig.dir.path().join("agent.log");
    let scenario = acp_testkit::scenario("sessions");
    let agent = rig.agent(&scenario, &log);
    rig.send(Command::ListSessions {
        request_id: "d1".into(),
        agent: agent.clone(),
        cwd: rig.cwd(),
        all: true,
        delete: Some("stored-3".into()),
    });
    let listed = rig
        .wait("sessions_listed", |e| e.kind() == "sessions_listed")
        .await;
    assert_eq!(listed["deleted"], "stored-3");
    let ids: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["session_id"].as_str())
        .collect();
    assert_eq!(ids.len(), 4, "{listed}");
    assert!(!ids.contains(&"stored-3"), "{listed}");

    // An unknown session: the agent's error is the message, nothing listed.
    rig.send(Command::ListSessions {
        request_id: "d2".into(),
        agent,
        cwd: rig.cwd(),
        all: true,
        delete: Some("nope".into()),
    });
    let listed = rig
        .wait("second answer", |e| {
            e.kind() == "sessions_listed" && e.json_view()["request_id"] == "d2"
        })
        .await;
    assert!(listed.get("deleted").is_none());
    assert!(
        listed["message"]
            .as_str()
            .unwrap()
            .contains("did not delete session nope"),
        "{listed}"
    );
}

/// The `mcpServers` a chat's session got, from the fake agent's answer.
async fn servers_of(rig: &mut Rig, chat: &str) -> Json {
    rig.wait_type(chat, "session_started").await;
    rig.prompt(chat, "which servers?");
    rig.wait_type(chat, "turn_ended").await;
    let changes: Vec<Json> = rig
        .seen
        .iter()
        .filter(|e| e.chat_id() == Some(&ChatId::from(chat)) && e.kind() == "session")
        .map(|e| e.json_view()["change"].clone())
        .collect();
    let text = agent_text(changes.iter());
    serde_json::from_str(text.strip_prefix("mcp: ").unwrap()).unwrap()
}

#[tokio::test]
async fn the_editor_server_is_offered_unless_switched_off_and_answers_over_http() {
    let mut rig = Rig::new();
    let scenario = acp_testkit::write_scenario(
        rig.dir.path(),
        &json!({
            "initialize": {"agentCapabilities": {"mcpCapabilities": {"http": true}}},
            "turns": [{"steps": [{"type": "text", "text": "mcp: {{mcpServers}}"}]}]
        }),
    );
    let cwd = rig.cwd();
    std::fs::write(cwd.join("a.txt"), "on disk\n").unwrap();
    let mut off = rig.agent(&scenario, &rig.dir.path().join("agent.log"));
    off.editor_tools = false;
    // A separate process: the first chat of a process sets its options.
    off.name = "fake-off".into();
    off.env = vec![("ACP_TEST_INSTANCE".into(), "off".into())];
    rig.open("off", off, |_| {});
    assert_eq!(servers_of(&mut rig, "off").await, json!([]));

    let on = rig.agent(&scenario, &rig.dir.path().join("agent.log"));
    rig.open("on", on, |_| {});
    let servers = servers_of(&mut rig, "on").await;
    let editor = &servers[0];
    assert_eq!(editor["name"], "editor");
    assert_eq!(editor["type"], "http");
    let url = editor["url"].as_str().unwrap();
    let auth = editor["headers"][0]["value"].as_str().unwrap();
    let addr = url
        .strip_prefix("http://")
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let call = |tool: &str, args: Json| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}}).to_string();
        format!(
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: {auth}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let exchange = |request: String| async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        tokio::time::timeout(HANG_GUARD, stream.read_to_string(&mut answer))
            .await
            .unwrap()
            .unwrap();
        let body = answer.split_once("\r\n\r\n").unwrap().1.to_owned();
        serde_json::from_str::<Json>(&body).unwrap()["result"].clone()
    };
    let read = exchange(call("read_file", json!({"path": "a.txt"}))).await;
    assert_eq!(read["content"][0]["text"], "on disk\n", "{read}");
    // The Lua side of this rig keeps no diagnostics: a clear tool error.
    let diagnostics = exchange(call("diagnostics", json!({}))).await;
    assert_eq!(diagnostics["isError"], true);
    assert!(diagnostics["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("not supported by this editor"));
}

/// A chat closed and its session loaded in another chat at once (a user
/// reopening it from `:Acp sessions`; test_e2e_rewind does it): the close
/// reaches the agent first. Before the fix the load could overtake it, and
/// the agent closed the session it had just replayed: the loaded chat's
/// next prompt was never answered.
#[tokio::test]
async fn a_session_loaded_right_after_its_chat_closed_goes_on() {
    let mut rig = Rig::new();
    let agent = rig.stored_agent(json!({
        "replayUserMessages": true,
        // The close is answered late: the load is sent meanwhile unless it
        // waits.
        "closeAnswerDelayMs": 100,
        "turns": [{"steps": [{"type": "text", "text": "answered {{prompt}}"}]}]
    }));
    // With transcripts, a turn's end saves its checkpoints: chat a is
    // still saving when the close comes, and chat b's load goes meanwhile.
    let transcripts = rig.dir.path().join("transcripts");
    let dir = transcripts.clone();
    rig.open("a", agent.clone(), |o| o.transcript_dir = Some(dir));
    let started = rig.wait_type("a", "session_started").await;
    let session = started["session_id"].as_str().unwrap().to_owned();
    rig.prompt("a", "first");
    rig.wait_type("a", "turn_ended").await;
    rig.send(Command::Close {
        chat_id: ChatId("a".into()),
    });
    let id = session.clone();
    rig.open("b", agent, |o| {
        o.transcript_dir = Some(transcripts);
        o.load_session_id = Some(id);
    });
    rig.wait_type("b", "session_started").await;
    rig.prompt("b", "second");
    let ended = rig.wait_type("b", "turn_ended").await;
    assert_eq!(ended["stop_reason"], "end_turn", "{ended}");
    let b = ChatId("b".into());
    let changes: Vec<Json> = rig
        .seen
        .iter()
        .filter(|e| e.kind() == "session" && e.chat_id() == Some(&b))
        .map(|e| e.json_view()["change"].clone())
        .collect();
    assert_eq!(
        agent_text(changes.iter()),
        "answered firstanswered second",
        "the replay and the new turn"
    );
}
