//! Agent processes behind chats: shared by the chats of one agent, crashed,
//! failing to start or to initialize, asking for a login, shut down, and
//! told about a system prompt they ignore.

use std::time::Duration;

use acp_nvim::backend::Routed;
use acp_nvim::command::{AgentSpec, ChatId, Command, OpenChat};
use serde_json::json;
use tokio::sync::oneshot;

use super::{FakeLua, Rig, HANG_GUARD};

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
