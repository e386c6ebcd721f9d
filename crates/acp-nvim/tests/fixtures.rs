//! Golden fixtures of the backend -> Lua protocol: one event of every kind
//! (and every session change), as the backend encodes it, in
//! `tests/fixtures/events.json`. tests/e2e/test_render.lua renders exactly
//! these events, so a change of the encoding fails here (until the fixture
//! is regenerated) and, once regenerated, fails the Lua test if the plugin
//! does not read the new shape.
//!
//! Regenerate with `ACP_UPDATE_FIXTURES=1 cargo test -p acp-nvim --test fixtures`.

use std::path::PathBuf;

use acp_client::agents::registry::{DistributionKind, Origin};
use acp_client::edits::hunks::{FileStatus, FileSummary};
use acp_client::policy::permission::{OptionKind, PermissionOption};
use acp_client::schema;
use acp_client::session::update::{decode_content, decode_tool_call_fields, PlanEntry, Usage};
use acp_client::session::{Entry, Message, SessionChange, ToolCallState};
use acp_client::tools::terminal::{TerminalEvent, TerminalExit};
use acp_nvim::elicitation::ElicitationPromptId;
use acp_nvim::protocol::{ChatId, Event, InstalledListing, LoginMethod, PromptId, RegistryListing};
use serde_json::{json, Value as Json};

fn chat() -> ChatId {
    ChatId("c1".into())
}

fn session(change: SessionChange) -> Event {
    Event::Session {
        chat_id: chat(),
        change,
    }
}

fn acp<T: serde::de::DeserializeOwned>(v: Json) -> T {
    serde_json::from_value(v).expect("fixture JSON matches the ACP schema")
}

fn message(text: &str) -> Message {
    Message {
        message_id: None,
        content: vec![decode_content(json!({"type": "text", "text": text}))],
    }
}

fn tool_state(status: &str) -> ToolCallState {
    let fields = decode_tool_call_fields(&json!({
        "toolCallId": "tool-1",
        "title": "Edit main.rs",
        "kind": "edit",
        "status": status,
        "content": [
            {"type": "content", "content": {"type": "text", "text": "Applying the edit"}},
            {"type": "diff", "path": "/work/src/main.rs", "oldText": "fn main() {}\n", "newText": "fn main() {\n    run();\n}\n"},
            {"type": "terminal", "terminalId": "term-1"}
        ],
        "locations": [{"path": "/work/src/main.rs", "line": 1}],
        "rawInput": {"filePath": "/work/src/main.rs", "dryRun": null}
    }))
    .expect("a valid tool call");
    let mut state = ToolCallState::placeholder(fields.tool_call_id.clone());
    state.apply(fields);
    state
}

fn capabilities() -> schema::AgentCapabilities {
    acp(json!({
        "loadSession": true,
        "promptCapabilities": {"image": true, "embeddedContext": true},
        "sessionCapabilities": {"resume": {}, "list": {}},
        "auth": {"logout": {}}
    }))
}

fn auth_methods() -> Vec<LoginMethod> {
    LoginMethod::all(&acp::<Vec<schema::AuthMethod>>(json!([
        {"id": "login", "name": "Log in", "description": "Opens a browser"}
    ])))
}

fn config_options() -> Vec<schema::SessionConfigOption> {
    acp(json!([
        {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "fast",
         "options": [{"value": "fast", "name": "Fast model"}, {"value": "deep", "name": "Deep model"}]},
        {"id": "brief", "name": "Brief answers", "type": "boolean", "currentValue": false}
    ]))
}

/// Every fixture, in the order the Lua test renders them.
fn fixtures() -> Vec<(&'static str, Event)> {
    let option = |id: &str, name: &str, kind: OptionKind| PermissionOption {
        option_id: id.into(),
        name: name.into(),
        kind,
    };
    vec![
        (
            "session_started",
            Event::SessionStarted {
                chat_id: chat(),
                session_id: "sess-1".into(),
                agent_name: "demo".into(),
                modes: Some(acp(json!({"currentModeId": "ask", "availableModes": [
                    {"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code", "description": "Writes code"}]}))),
                config_options: config_options(),
                capabilities: capabilities(),
                auth_methods: auth_methods(),
                transcript_path: Some("/state/transcripts/demo/sess-1.jsonl".into()),
                turn_base: 0,
            },
        ),
        (
            "user_message_added",
            session(SessionChange::EntryAdded {
                index: 0,
                entry: Entry::UserMessage(message("Fix main")),
            }),
        ),
        (
            "thought_added",
            session(SessionChange::EntryAdded {
                index: 1,
                entry: Entry::Thought(message("Reading the")),
            }),
        ),
        (
            "thought_appended",
            session(SessionChange::TextAppended {
                index: 1,
                content: decode_content(json!({"type": "text", "text": " code first"})),
                message_id: None,
            }),
        ),
        (
            "agent_message_added",
            session(SessionChange::EntryAdded {
                index: 2,
                entry: Entry::AgentMessage(Message {
                    message_id: Some("msg-1".into()),
                    content: vec![decode_content(json!({"type": "text", "text": "Here is"}))],
                }),
            }),
        ),
        (
            "text_appended",
            session(SessionChange::TextAppended {
                index: 2,
                content: decode_content(json!({"type": "text", "text": " the fix."})),
                message_id: Some("msg-1".into()),
            }),
        ),
        (
            "image_appended",
            session(SessionChange::TextAppended {
                index: 2,
                content: decode_content(
                    json!({"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}),
                ),
                message_id: Some("msg-1".into()),
            }),
        ),
        (
            "tool_call_added",
            session(SessionChange::EntryAdded {
                index: 3,
                entry: Entry::ToolCall(tool_state("pending")),
            }),
        ),
        (
            "permission_request",
            Event::PermissionRequest {
                chat_id: chat(),
                request_id: PromptId(7),
                tool_call: decode_tool_call_fields(
                    &json!({"toolCallId": "tool-1", "title": "Edit main.rs", "kind": "edit"}),
                )
                .expect("a valid tool call"),
                options: vec![
                    option("allow", "Allow", OptionKind::AllowOnce),
                    option("always", "Always allow", OptionKind::AllowAlways),
                    option("reject", "Reject", OptionKind::RejectOnce),
                ],
            },
        ),
        (
            "permission_cancelled",
            Event::PermissionCancelled {
                chat_id: chat(),
                request_id: PromptId(7),
            },
        ),
        (
            "elicitation_request",
            Event::ElicitationRequest {
                chat_id: Some(chat()),
                request_id: ElicitationPromptId(3),
                session_id: Some("sess-1".into()),
                mode: "form",
                message: "Where to deploy?".into(),
                requested_schema: Some(
                    json!({"type": "object", "required": ["target"], "properties": {
                        "target": {"type": "string", "title": "Target", "oneOf": [{"const": "prod", "title": "Production"}]},
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 3}
                    }}),
                ),
                fields: Some(json!([
                    {"name": "target", "label": "Target", "required": true, "type": "enum",
                     "choices": [{"value": "prod", "title": "Production"}]},
                    {"name": "replicas", "label": "replicas", "required": false, "type": "integer",
                     "minimum": 1.0, "maximum": 3.0}
                ])),
                url: None,
                elicitation_id: None,
                tool_call_id: Some("tool-1".into()),
                tool_title: Some("Deploy".into()),
            },
        ),
        (
            "elicitation_request_url",
            Event::ElicitationRequest {
                chat_id: None,
                request_id: ElicitationPromptId(4),
                session_id: None,
                mode: "url",
                message: "Log in".into(),
                requested_schema: None,
                fields: None,
                url: Some("https://example.com/login".into()),
                elicitation_id: Some("login-1".into()),
                tool_call_id: None,
                tool_title: None,
            },
        ),
        (
            "elicitation_cancelled",
            Event::ElicitationCancelled {
                chat_id: Some(chat()),
                request_id: ElicitationPromptId(3),
            },
        ),
        (
            "elicitation_completed",
            Event::ElicitationCompleted {
                chat_id: None,
                elicitation_id: "login-1".into(),
            },
        ),
        (
            "permission_auto",
            Event::PermissionAuto {
                chat_id: chat(),
                tool_call: decode_tool_call_fields(
                    &json!({"toolCallId": "tool-1", "title": "Edit main.rs", "kind": "edit"}),
                )
                .expect("a valid tool call"),
                option: Some(option("always", "Always allow", OptionKind::AllowAlways)),
            },
        ),
        (
            "terminal_started",
            Event::Terminal {
                chat_id: chat(),
                terminal: TerminalEvent::Started {
                    session_id: "sess-1".into(),
                    terminal_id: "term-1".into(),
                    command: "cargo build --release".into(),
                },
            },
        ),
        (
            "terminal_output",
            Event::Terminal {
                chat_id: chat(),
                terminal: TerminalEvent::Output {
                    session_id: "sess-1".into(),
                    terminal_id: "term-1".into(),
                    data: "compiling\n".into(),
                    truncated: false,
                },
            },
        ),
        (
            "terminal_exited",
            Event::Terminal {
                chat_id: chat(),
                terminal: TerminalEvent::Exited {
                    session_id: "sess-1".into(),
                    terminal_id: "term-1".into(),
                    exit_status: TerminalExit {
                        exit_code: Some(0),
                        signal: None,
                    },
                },
            },
        ),
        (
            "terminal_released",
            Event::Terminal {
                chat_id: chat(),
                terminal: TerminalEvent::Released {
                    session_id: "sess-1".into(),
                    terminal_id: "term-1".into(),
                },
            },
        ),
        (
            "tool_call_changed",
            session(SessionChange::ToolCallChanged {
                index: 3,
                tool_call: tool_state("completed"),
            }),
        ),
        (
            "plan_replaced",
            session(SessionChange::PlanReplaced {
                entries: vec![
                    PlanEntry {
                        content: "Read main.rs".into(),
                        priority: "high".into(),
                        status: "completed".into(),
                    },
                    PlanEntry {
                        content: "Run the tests".into(),
                        priority: "medium".into(),
                        status: "in_progress".into(),
                    },
                ],
            }),
        ),
        (
            "unknown_added",
            session(SessionChange::EntryAdded {
                index: 4,
                entry: Entry::Unknown {
                    kind: "future_update".into(),
                    raw: json!({"sessionUpdate": "future_update", "someField": 1}),
                },
            }),
        ),
        (
            "mode_changed",
            session(SessionChange::ModeChanged {
                current_mode_id: "code".into(),
            }),
        ),
        (
            "modes_changed",
            session(SessionChange::ModesChanged {
                current_mode_id: "code".into(),
                available_modes: acp(
                    json!([{"id": "ask", "name": "Ask"}, {"id": "code", "name": "Code"}]),
                ),
            }),
        ),
        (
            "config_options_changed",
            session(SessionChange::ConfigOptionsChanged {
                config_options: acp(json!([
                    {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": "deep",
                     "options": [{"value": "fast", "name": "Fast model"}, {"value": "deep", "name": "Deep model"}]}
                ])),
            }),
        ),
        (
            "commands_changed",
            session(SessionChange::CommandsChanged {
                available_commands: acp(json!([
                    {"name": "review", "description": "Review the diff", "input": {"hint": "what to focus on"}}
                ])),
            }),
        ),
        (
            "usage_changed",
            session(SessionChange::UsageChanged {
                usage: Usage {
                    used: 12_000,
                    size: 200_000,
                    cost: Some(json!({"amount": 0.25, "currency": "USD"})),
                },
            }),
        ),
        (
            "info_changed",
            session(SessionChange::InfoChanged {
                title: Some("Fix main".into()),
                updated_at: Some("2026-01-01T00:00:00Z".into()),
            }),
        ),
        (
            "file_edited",
            Event::FileEdited {
                chat_id: chat(),
                path: "/work/src/main.rs".into(),
                buffer_updated: false,
                kept_unsaved: true,
                waiting: false,
            },
        ),
        (
            "review_changed",
            Event::ReviewChanged {
                chat_id: chat(),
                path: "/work/src/main.rs".into(),
                summary: FileSummary {
                    path: acp_client::path::CanonicalPath::resolve(std::path::Path::new(
                        "/work/src/main.rs",
                    ))
                    .expect("a path under a missing directory resolves as written"),
                    status: FileStatus::Modified,
                    hunks: 1,
                    added: 3,
                    removed: 1,
                    first_line: Some(0),
                },
                review: {
                    let mut t = acp_client::edits::hunks::EditTracker::new();
                    let p = &acp_client::path::CanonicalPath::resolve(std::path::Path::new(
                        "/work/src/main.rs",
                    ))
                    .expect("a path under a missing directory resolves as written");
                    t.record_write(p, Some("fn main() {}\n"), "fn main() {\n    run();\n}\n");
                    t.review(p).as_ref().map(acp_nvim::protocol::ReviewView::from)
                },
                revision: 7,
            },
        ),
        (
            "review_delete_pending",
            Event::ReviewDeletePending {
                chat_id: chat(),
                path: "/work/src/new.rs".into(),
            },
        ),
        (
            "turn_ended",
            Event::TurnEnded {
                chat_id: chat(),
                stop_reason: "end_turn".into(),
            },
        ),
        (
            "prompt_failed",
            Event::PromptFailed {
                chat_id: chat(),
                message: "The agent answered the prompt with an error: overloaded".into(),
            },
        ),
        (
            "warning",
            Event::Warning {
                chat_id: None,
                message: "agent demo: a line that is not JSON-RPC".into(),
            },
        ),
        (
            "sessions_listed",
            Event::SessionsListed {
                request_id: "list-1".into(),
                agent_name: "demo".into(),
                capabilities: Some(capabilities()),
                sessions: Some(acp(json!([
                    {"sessionId": "sess-1", "cwd": "/work", "title": "Fix main", "updatedAt": "2026-01-01T00:00:00Z"}
                ]))),
                message: None,
                deleted: None,
            },
        ),
        ("logged_out", Event::LoggedOut { chat_id: chat() }),
        (
            "agent_exited",
            Event::AgentExited {
                chat_id: chat(),
                status: "exit code 3".into(),
                stderr_tail: "panic: out of tokens\n".into(),
            },
        ),
        (
            "open_failed",
            Event::OpenFailed {
                chat_id: chat(),
                message: "The agent demo could not open a session: no such directory".into(),
                stderr_tail: Some("error: cwd\n".into()),
            },
        ),
        (
            "auth_required",
            Event::AuthRequired {
                chat_id: chat(),
                auth_methods: auth_methods(),
            },
        ),
        (
            "agents_listed",
            Event::AgentsListed {
                request_id: "agents-1".into(),
                agents: Some(vec![
                    RegistryListing {
                        id: "codex-acp".into(),
                        name: "Codex CLI".into(),
                        version: "0.9.2".into(),
                        description: "ACP adapter for OpenAI's coding assistant".into(),
                        homepage: Some("https://github.com/zed-industries/codex-acp".into()),
                        kinds: vec![DistributionKind::Binary],
                        installed_version: Some("0.9.1".into()),
                        update: true,
                        installing: false,
                        unverified: false,
                    },
                    RegistryListing {
                        id: "gemini".into(),
                        name: "Gemini CLI".into(),
                        version: "0.27.3".into(),
                        description: "Google's official CLI for Gemini".into(),
                        homepage: None,
                        kinds: vec![DistributionKind::Npx],
                        installed_version: None,
                        update: false,
                        installing: true,
                        unverified: false,
                    },
                ]),
                installed: vec![InstalledListing {
                    id: "codex-acp".into(),
                    name: "Codex CLI".into(),
                    version: "0.9.1".into(),
                    kind: DistributionKind::Binary,
                }],
                origin: Some(Origin::Cache),
                fetched_at: Some(1_790_000_000),
                message: Some("could not fetch https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json: timed out; using the copy fetched 3 hours ago".into()),
            },
        ),
        (
            "agent_install_progress",
            Event::AgentInstallProgress {
                id: "codex-acp".into(),
                message: "downloading Codex CLI 0.9.2".into(),
                done: Some(1_048_576),
                total: Some(8_388_608),
            },
        ),
        (
            "agent_installed",
            Event::AgentInstalled {
                id: "codex-acp".into(),
                name: "Codex CLI".into(),
                version: "0.9.2".into(),
            },
        ),
        (
            "agent_install_failed",
            Event::AgentInstallFailed {
                id: "gemini".into(),
                message: "installing Gemini CLI failed: `npm install --prefix /data/acp/agents/gemini/.tmp-0.27.3 @google/gemini-cli@0.27.3` exited with code 1; its last output was:\nnpm error code ENOTFOUND".into(),
                cancelled: false,
                unverified: false,
            },
        ),
        (
            "agent_removed",
            Event::AgentRemoved {
                id: "codex-acp".into(),
                removed: true,
                message: None,
            },
        ),
    ]
}

fn path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/events.json")
}

fn render() -> String {
    let events: Vec<Json> = fixtures()
        .into_iter()
        .map(|(name, event)| json!({"name": name, "event": event.json_view()}))
        .collect();
    let mut text = serde_json::to_string_pretty(&json!({
        "about": "Every event kind as acp-nvim encodes it for Lua, keys in the order encoded. Written by crates/acp-nvim/tests/fixtures.rs; rendered by tests/e2e/test_render.lua. Regenerate: ACP_UPDATE_FIXTURES=1 cargo test -p acp-nvim --test fixtures",
        "events": events,
    }))
    .expect("JSON");
    text.push('\n');
    text
}

#[test]
fn the_checked_in_fixtures_are_what_the_backend_encodes() {
    let want = render();
    let path = path();
    if std::env::var_os("ACP_UPDATE_FIXTURES").is_some() {
        std::fs::write(&path, &want).expect("write the fixtures");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "{} differs from what the backend encodes now. If the change is intended, regenerate it with \
         `ACP_UPDATE_FIXTURES=1 cargo test -p acp-nvim --test fixtures`, update the Lua side \
         (lua/acp/rpc/protocol.lua, doc/protocol.md) and run tests/e2e/run.sh test_render.",
        path.display()
    );
}

#[test]
fn every_event_kind_has_a_fixture() {
    let kinds: std::collections::BTreeSet<&str> =
        fixtures().iter().map(|(_, e)| e.kind()).collect();
    for kind in [
        "session_started",
        "open_failed",
        "auth_required",
        "session",
        "permission_request",
        "permission_cancelled",
        "permission_auto",
        "elicitation_request",
        "elicitation_cancelled",
        "elicitation_completed",
        "terminal",
        "file_edited",
        "turn_ended",
        "prompt_failed",
        "agent_exited",
        "warning",
        "sessions_listed",
        "logged_out",
        "review_changed",
        "review_delete_pending",
        "agents_listed",
        "agent_install_progress",
        "agent_installed",
        "agent_install_failed",
        "agent_removed",
    ] {
        assert!(kinds.contains(kind), "no fixture of `{kind}`");
    }
    // No key the plugin reads is camelCase (opaque agent data aside).
    let text = render();
    for camel in [
        "toolCallId",
        "currentModeId",
        "optionId",
        "mimeType",
        "terminalId",
        "exitStatus",
        "loadSession",
    ] {
        assert!(
            !text.contains(&format!("\"{camel}\"")),
            "`{camel}` in the fixtures"
        );
    }
}
