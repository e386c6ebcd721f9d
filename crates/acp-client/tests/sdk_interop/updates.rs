//! Every kind of `session/update` the SDK sends, landing in the session
//! model field for field.

use acp_client::session::update::{Content, PlanEntry, ToolContent, ToolKind, ToolStatus, Usage};
use acp_client::session::{Entry, Message, ToolCallState};
use acp_client::StopReason;
use agent_client_protocol_schema::v1 as sdk;
use serde_json::json;

use super::sdk_agent::start;
use super::support::{PermissionMode, TestHost};
use super::{all_caps, chunk, config_options, open_session, start_turn, text};

#[tokio::test]
async fn streamed_updates_land_in_the_session_model_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (host, _rx) = TestHost::with_caps(all_caps(), PermissionMode::Pick("allow_once"));
    let (conn, mut agent) = start(host).await;
    let caps = sdk::AgentCapabilities::new().prompt_capabilities(
        sdk::PromptCapabilities::new()
            .image(true)
            .embedded_context(true),
    );
    let sid = open_session(&conn, &mut agent, caps, dir.path()).await;

    let main_rs = dir.path().join("src/main.rs");
    let uri = format!("file://{}", main_rs.display());
    let screenshot = sdk::ContentBlock::Image(sdk::ImageContent::new("iVBORw0KGgo=", "image/png"));
    let prompt = vec![
        text("fix the build"),
        sdk::ContentBlock::ResourceLink(sdk::ResourceLink::new("main.rs", uri.clone())),
        sdk::ContentBlock::Resource(sdk::EmbeddedResource::new(
            sdk::EmbeddedResourceResource::TextResourceContents(
                sdk::TextResourceContents::new("fn main() {}\n", uri).mime_type("text/x-rust"),
            ),
        )),
        screenshot.clone(),
    ];
    let (turn, req, responder) = start_turn(&conn, &mut agent, &sid, prompt.clone()).await;
    // Our prompt as they decoded it.
    assert_eq!(req.session_id.0.as_ref(), "sess-1");
    assert_eq!(req.prompt, prompt);

    let s = "sess-1";
    agent.update(s, sdk::SessionUpdate::AgentThoughtChunk(chunk("Let me ")));
    agent.update(s, sdk::SessionUpdate::AgentThoughtChunk(chunk("look.")));
    agent.update(
        s,
        sdk::SessionUpdate::AgentMessageChunk(chunk("I'll ").message_id("m1")),
    );
    agent.update(
        s,
        sdk::SessionUpdate::AgentMessageChunk(chunk("fix it.").message_id("m1")),
    );
    agent.update(
        s,
        sdk::SessionUpdate::AgentMessageChunk(
            sdk::ContentChunk::new(screenshot.clone()).message_id("m1"),
        ),
    );
    let location = sdk::ToolCallLocation::new(&main_rs).line(3);
    let raw_input = json!({"path": main_rs, "old": "fn main() {", "new": "fn main() -> () {"});
    agent.update(
        s,
        sdk::SessionUpdate::ToolCall(
            sdk::ToolCall::new("edit-1", "Edit src/main.rs")
                .name("edit_file")
                .kind(sdk::ToolKind::Edit)
                .status(sdk::ToolCallStatus::Pending)
                .locations(vec![location.clone()])
                .raw_input(raw_input.clone())
                .content(vec![sdk::ToolCallContent::Diff(
                    sdk::Diff::new(&main_rs, "fn main() -> () {}\n").old_text("fn main() {}\n"),
                )]),
        ),
    );
    agent.update(
        s,
        sdk::SessionUpdate::ToolCallUpdate(sdk::ToolCallUpdate::new(
            "edit-1",
            sdk::ToolCallUpdateFields::new()
                .status(sdk::ToolCallStatus::Completed)
                .raw_output(json!({"ok": true})),
        )),
    );
    let new_file = dir.path().join("NOTES.md");
    agent.update(
        s,
        sdk::SessionUpdate::ToolCall(
            sdk::ToolCall::new("write-1", "Write NOTES.md")
                .kind(sdk::ToolKind::Edit)
                .status(sdk::ToolCallStatus::InProgress)
                .content(vec![sdk::ToolCallContent::Diff(sdk::Diff::new(
                    &new_file, "notes\n",
                ))]),
        ),
    );
    // SDK quirk: `ToolCall` leaves a default status (`pending`) and kind
    // (`other`) off the wire; our model starts from the same defaults.
    agent.update(
        s,
        sdk::SessionUpdate::ToolCall(
            sdk::ToolCall::new("run-1", "cargo build")
                .kind(sdk::ToolKind::Execute)
                .raw_input(json!({"command": "cargo build"})),
        ),
    );
    agent.update(
        s,
        sdk::SessionUpdate::ToolCallUpdate(sdk::ToolCallUpdate::new(
            "run-1",
            sdk::ToolCallUpdateFields::new()
                .status(sdk::ToolCallStatus::Failed)
                .title("cargo build (failed)".to_owned())
                .name("shell".to_owned())
                .content(vec![
                    sdk::ToolCallContent::Content(sdk::Content::new(text("1 error"))),
                    sdk::ToolCallContent::Terminal(sdk::Terminal::new("term-7")),
                ]),
        )),
    );
    let plan = vec![
        sdk::PlanEntry::new(
            "Read the error",
            sdk::PlanEntryPriority::High,
            sdk::PlanEntryStatus::Completed,
        ),
        sdk::PlanEntry::new(
            "Fix main.rs",
            sdk::PlanEntryPriority::Medium,
            sdk::PlanEntryStatus::InProgress,
        ),
        sdk::PlanEntry::new(
            "Run tests",
            sdk::PlanEntryPriority::Low,
            sdk::PlanEntryStatus::Pending,
        ),
    ];
    agent.update(s, sdk::SessionUpdate::Plan(sdk::Plan::new(plan)));
    let commands = vec![
        sdk::AvailableCommand::new("web", "Search the web").input(
            sdk::AvailableCommandInput::Unstructured(sdk::UnstructuredCommandInput::new("query")),
        ),
        sdk::AvailableCommand::new("compact", "Compact the context"),
    ];
    agent.update(
        s,
        sdk::SessionUpdate::AvailableCommandsUpdate(sdk::AvailableCommandsUpdate::new(
            commands.clone(),
        )),
    );
    agent.update(
        s,
        sdk::SessionUpdate::CurrentModeUpdate(sdk::CurrentModeUpdate::new("code")),
    );
    agent.update(
        s,
        sdk::SessionUpdate::ConfigOptionUpdate(sdk::ConfigOptionUpdate::new(config_options(
            "fast", true,
        ))),
    );
    agent.update(
        s,
        sdk::SessionUpdate::UsageUpdate(
            sdk::UsageUpdate::new(52_000, 200_000).cost(sdk::Cost::new(0.25, "USD")),
        ),
    );
    agent.update(
        s,
        sdk::SessionUpdate::SessionInfoUpdate(
            sdk::SessionInfoUpdate::new()
                .title("Fix the build".to_owned())
                .updated_at("2025-06-01T12:00:00Z".to_owned()),
        ),
    );
    responder
        .respond(sdk::PromptResponse::new(sdk::StopReason::EndTurn))
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::EndTurn);

    // The SDK writes the updates before the response on one pipe, and we
    // apply updates as they are read: the model is complete now.
    let known = |b: sdk::ContentBlock| Content::Known(b);
    let expected = vec![
        Entry::UserMessage(Message {
            message_id: None,
            content: prompt.into_iter().map(known).collect(),
        }),
        Entry::Thought(Message {
            message_id: None,
            content: vec![Content::text("Let me look.")],
        }),
        Entry::AgentMessage(Message {
            message_id: Some("m1".into()),
            content: vec![Content::text("I'll fix it."), known(screenshot)],
        }),
        Entry::ToolCall(ToolCallState {
            id: "edit-1".into(),
            title: "Edit src/main.rs".into(),
            name: Some("edit_file".into()),
            kind: ToolKind::Edit,
            status: ToolStatus::Completed,
            content: vec![ToolContent::Diff {
                path: main_rs.clone(),
                old_text: Some("fn main() {}\n".into()),
                new_text: "fn main() -> () {}\n".into(),
            }],
            locations: vec![location],
            raw_input: Some(raw_input),
            raw_output: Some(json!({"ok": true})),
            agent_terminal: None,
        }),
        Entry::ToolCall(ToolCallState {
            id: "write-1".into(),
            title: "Write NOTES.md".into(),
            name: None,
            kind: ToolKind::Edit,
            status: ToolStatus::InProgress,
            content: vec![ToolContent::Diff {
                path: new_file,
                old_text: None,
                new_text: "notes\n".into(),
            }],
            locations: vec![],
            raw_input: None,
            raw_output: None,
            agent_terminal: None,
        }),
        Entry::ToolCall(ToolCallState {
            id: "run-1".into(),
            title: "cargo build (failed)".into(),
            name: Some("shell".into()),
            kind: ToolKind::Execute,
            status: ToolStatus::Failed,
            content: vec![
                ToolContent::Content {
                    content: Content::text("1 error"),
                },
                ToolContent::Terminal {
                    terminal_id: "term-7".into(),
                },
            ],
            locations: vec![],
            raw_input: Some(json!({"command": "cargo build"})),
            raw_output: None,
            agent_terminal: None,
        }),
    ];
    conn.with_session(&sid, |state| {
        assert_eq!(state.entries(), expected.as_slice());
        let plan: Vec<(&str, &str, &str)> = state
            .plan()
            .iter()
            .map(|e: &PlanEntry| (e.content.as_str(), e.priority.as_str(), e.status.as_str()))
            .collect();
        assert_eq!(
            plan,
            [
                ("Read the error", "high", "completed"),
                ("Fix main.rs", "medium", "in_progress"),
                ("Run tests", "low", "pending"),
            ]
        );
        assert_eq!(state.available_commands(), commands.as_slice());
        assert_eq!(state.current_mode(), Some("code"));
        assert_eq!(
            state.config_options(),
            config_options("fast", true).as_slice()
        );
        assert_eq!(
            state.usage(),
            Some(&Usage {
                used: 52_000,
                size: 200_000,
                cost: Some(json!({"amount": 0.25, "currency": "USD"})),
            })
        );
        assert_eq!(state.title(), Some("Fix the build"));
        assert_eq!(state.updated_at(), Some("2025-06-01T12:00:00Z"));
    })
    .unwrap();

    // A null title from their `MaybeUndefined` clears ours; an absent
    // `updatedAt` leaves it alone.
    let (turn, _req, responder) = start_turn(&conn, &mut agent, &sid, vec![text("next")]).await;
    agent.update(
        s,
        sdk::SessionUpdate::SessionInfoUpdate(sdk::SessionInfoUpdate::new().title(None)),
    );
    responder
        .respond(sdk::PromptResponse::new(sdk::StopReason::MaxTokens))
        .unwrap();
    assert_eq!(turn.await.unwrap().unwrap(), StopReason::MaxTokens);
    conn.with_session(&sid, |state| {
        assert_eq!(state.title(), None);
        assert_eq!(state.updated_at(), Some("2025-06-01T12:00:00Z"));
    })
    .unwrap();
}
