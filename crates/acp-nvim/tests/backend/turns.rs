//! Turns: cancelled right after the prompt or ignoring the first cancel,
//! a loaded session replayed to the chat, and rewinds.

use acp_nvim::command::{AgentSpec, ChatId, Command, OpenChat};
use serde_json::json;

use super::buffers::{notes_rig, write_step};
use super::{FakeLua, Rig};

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
