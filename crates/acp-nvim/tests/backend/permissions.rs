//! Permission prompts: the user's answer reaching the agent, `always`
//! remembered (or not), withdrawn on cancel, and a subagent's request going
//! through its parent's chat.

use std::path::{Path, PathBuf};

use acp_nvim::command::{ChatId, Command, PromptId};
use serde_json::{json, Value as Json};

use super::{FakeLua, Rig};

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
