//! A line-based chat with any ACP agent, and a showcase of the `acp-client`
//! API for editor authors.
//!
//! ```text
//! cargo run -p acp-client --example chat -- [OPTIONS] -- AGENT_CMD [ARGS...]
//! cargo run -p acp-client --example chat -- [OPTIONS] --agent REGISTRY_ID
//!
//!   --cwd DIR                 session working directory (default: current directory)
//!   --prompt TEXT             a turn to run (repeatable); without it, prompts are read from stdin
//!   --permission allow|allow-always|reject|ask
//!                             answer permission requests: allow once (an `allow_once` option
//!                             when offered), allow always, reject once, or ask on the terminal
//!                             (default: ask)
//!   --cancel-after MS         send session/cancel MS milliseconds into each turn
//!   --missing-file-read empty|error
//!                             answer a read of a missing file inside --cwd with empty content
//!                             (gemini-cli reads files before creating them, its issue 9280),
//!                             or with the spec's error (default)
//!   --no-editor-tools         do not offer the editor's MCP server (`editor`: read_file,
//!                             write_file, edit_file over the same sandbox as fs/*)
//!   --mcp-bridge              (internal) run as the stdio bridge of that server; the agent
//!                             starts it so
//!   --protocol-version 1|2    the newest ACP version to offer (default 1; with 2, an agent
//!                             answering 1 still works)
//!   --system-prompt TEXT      instructions appended to the agent's system prompt (sent only
//!                             when the agent advertises sessionCapabilities.systemPrompt)
//!   --jsonl                   print one JSON object per line for every event
//!   --ask-terminal            ask (as a permission prompt) before each command the agent
//!                             runs with terminal/create
//!   --agent ID                an agent of the ACP registry, installed first when it is not
//!   --agents-dir DIR          where registry agents are installed (default: the directory
//!                             acp.nvim uses, $XDG_DATA_HOME/nvim/acp/agents)
//!   --registry URL            the registry index (default: the published one); a plain
//!                             http:// or file:// index may name http:// and file://
//!                             archives, the published (https) one only https:// ones
//!   --allow-unverified        install a registry binary that has no SHA-256 checksum
//!                             (refused otherwise, with a message saying so)
//! ```
//!
//! The example serves `fs/*` from disk and `terminal/*` with real processes
//! (both built into `acp-client`), sandboxed to `--cwd`. Questions of the
//! agent (elicitation) are answered on stdin: a form field by field, a URL
//! by opening it yourself and pressing Enter.
//!
//! With `--prompt`, the example exits as soon as the last turn ends, even
//! while stdin stays open.

use std::io::BufRead;
use std::process::ExitCode;
use std::sync::Arc;

use parking_lot::Mutex;

use acp_client::policy::elicitation::{ElicitationRequest, ElicitationResponse};
use acp_client::policy::permission::{OptionKind, PermissionDecision, PermissionRequest};
use acp_client::serve::editor_tools::{BridgeCommand, EditorToolsOptions};
use acp_client::tools::terminal::TerminalEvent;
use acp_client::{
    schema, AgentCommand, ClientEvent, Connection, ConnectionOptions, EditorHost, Error,
    HostCapabilities, SessionParams, SystemPrompt,
};
use async_trait::async_trait;
use serde_json::json;
use tokio::sync::mpsc;

mod args;
mod ask;
mod registry;
mod render;

use args::{parse_args, Options, PermissionMode};
use registry::registry_agent;

/// Lines typed on the terminal, shared by the prompt loop and permission
/// questions (a question is only asked while a turn runs).
type Lines = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>>;

struct ChatHost {
    mode: PermissionMode,
    jsonl: bool,
    lines: Lines,
    /// The entry that streamed text currently goes to, so chunks continue it.
    streaming: Mutex<Option<usize>>,
}

#[async_trait]
impl EditorHost for ChatHost {
    fn capabilities(&self) -> HostCapabilities {
        HostCapabilities {
            elicitation_form: true,
            elicitation_url: true,
            ..HostCapabilities::default()
        }
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionDecision {
        // The preferred kind, then any option of the same family.
        let wanted = match self.mode {
            PermissionMode::Allow => Some(OptionKind::AllowOnce),
            PermissionMode::AllowAlways => Some(OptionKind::AllowAlways),
            PermissionMode::Reject => Some(OptionKind::RejectOnce),
            PermissionMode::Ask => None,
        };
        let decision = match wanted {
            Some(kind) => {
                let family = &kind.as_str()[..kind.as_str().find('_').unwrap_or(0)];
                request
                    .options
                    .iter()
                    .find(|o| o.kind == kind)
                    .or_else(|| {
                        request
                            .options
                            .iter()
                            .find(|o| o.kind.as_str().starts_with(family))
                    })
                    .map(|o| PermissionDecision::Selected {
                        option_id: o.option_id.clone(),
                    })
                    .unwrap_or(PermissionDecision::Cancelled)
            }
            None => self.ask(&request).await,
        };
        if self.jsonl {
            self.jsonl(json!({"type": "permission", "request": request, "decision": decision}));
        } else {
            let chosen = match &decision {
                PermissionDecision::Selected { option_id } => option_id.as_str(),
                PermissionDecision::Cancelled => "cancelled",
            };
            self.out(&format!("[permission] {chosen}\n"));
        }
        decision
    }

    fn on_event(&self, event: ClientEvent) {
        if self.jsonl {
            let mut v =
                serde_json::to_value(&event).unwrap_or_else(|e| json!({"error": e.to_string()}));
            v["type"] = json!("event");
            self.jsonl(v);
            return;
        }
        match &event {
            ClientEvent::Session { change, .. } => self.render_change(change),
            ClientEvent::Terminal(TerminalEvent::Output { data, .. }) => {
                self.end_stream();
                for line in data.lines() {
                    self.out(&format!("  | {line}\n"));
                }
            }
            ClientEvent::FileEdited(edit) => {
                self.end_stream();
                self.out(&format!("[wrote {}]\n", edit.path.display()));
            }
            ClientEvent::PermissionAutoAnswered { decision, .. } => {
                self.end_stream();
                self.out(&format!("[permission remembered] {decision:?}\n"));
            }
            ClientEvent::ElicitationCompleted { elicitation_id, .. } => {
                self.end_stream();
                self.out(&format!("[the agent finished `{elicitation_id}`]\n"));
            }
            ClientEvent::ElicitationCancelled { .. } => {
                self.end_stream();
                self.out("[the agent's question was withdrawn]\n");
            }
            ClientEvent::ProtocolWarning { message } => eprintln!("warning: {message}"),
            _ => {}
        }
    }

    async fn request_elicitation(&self, request: ElicitationRequest) -> ElicitationResponse {
        self.end_stream();
        let response = self.ask_elicitation(&request).await;
        if self.jsonl {
            self.jsonl(json!({"type": "elicitation", "request": request, "response": response}));
        } else {
            self.out(&format!("[elicitation] {}\n", response.action()));
        }
        response
    }
}

fn fail(jsonl: bool, message: &str) -> ExitCode {
    if jsonl {
        println!("{}", json!({"type": "error", "message": message}));
    }
    eprintln!("chat: {message}");
    ExitCode::FAILURE
}

#[tokio::main]
async fn main() -> ExitCode {
    // The agent starts this binary again as the `editor` MCP server over
    // stdio: copy stdin/stdout to the running chat's socket.
    if std::env::args().nth(1).as_deref() == Some("--mcp-bridge") {
        return match acp_client::serve::editor_tools::run_bridge().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("chat --mcp-bridge: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let opts = match parse_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if std::env::var_os("ACP_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_env("ACP_LOG"))
            .with_writer(std::io::stderr)
            .try_init();
    }
    // A `setsid` daemon of the agent is adopted and killed with it (Linux).
    acp_client::agents::process::become_subreaper();
    let (line_tx, line_rx) = mpsc::unbounded_channel();
    // A plain thread, not tokio's stdin: tokio reads stdin on a blocking
    // task that runtime shutdown waits for, so the process would hang after
    // its last --prompt turn until stdin sends a line or closes. Nothing
    // waits for this thread: the process exits when `main` returns.
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if line_tx.send(line).is_err() {
                break;
            }
        }
    });
    let lines: Lines = Arc::new(tokio::sync::Mutex::new(line_rx));
    let host = Arc::new(ChatHost {
        mode: opts.permission,
        jsonl: opts.jsonl,
        lines: lines.clone(),
        streaming: Mutex::new(None),
    });
    match run(&opts, host.clone(), lines).await {
        Ok(()) => {
            host.end_stream();
            ExitCode::SUCCESS
        }
        Err(e) => {
            host.end_stream();
            fail(opts.jsonl, &e.to_string())
        }
    }
}

async fn run(opts: &Options, host: Arc<ChatHost>, lines: Lines) -> Result<(), Error> {
    let (program, env) = match &opts.agent {
        Some(id) => registry_agent(opts, id).await?,
        None => (opts.command.clone(), Vec::new()),
    };
    let mut command = AgentCommand::new(&program[0])
        .args(program[1..].iter().cloned())
        .cwd(&opts.cwd);
    for (k, v) in env {
        command = command.env(k, v);
    }
    let options = ConnectionOptions {
        client_name: "acp-client chat example".into(),
        missing_file_read_empty: opts.missing_file_read_empty,
        ask_before_terminal: opts.ask_terminal,
        // The fs part of the editor's MCP server: this example has no
        // buffers, so diagnostics and open_buffers answer "not supported".
        editor_tools: (!opts.no_editor_tools).then(|| EditorToolsOptions {
            bridge: std::env::current_exe().ok().map(|program| BridgeCommand {
                program,
                args: vec!["--mcp-bridge".into()],
            }),
            ..EditorToolsOptions::default()
        }),
        protocol_version: opts.protocol_version,
        ..ConnectionOptions::default()
    };
    let conn = Connection::spawn(&command, host.clone(), options)?;
    let result = chat(opts, &conn, &host, lines).await;
    conn.shutdown().await;
    result
}

async fn chat(
    opts: &Options,
    conn: &Connection,
    host: &ChatHost,
    lines: Lines,
) -> Result<(), Error> {
    let info = conn.initialize().await?;
    if let Some(agent) = &info.implementation {
        if !opts.jsonl {
            host.out(&format!("Connected to {} {}\n", agent.name, agent.version));
        }
    }
    let mut params = SessionParams::new(&opts.cwd);
    params.system_prompt = opts.system_prompt.clone().map(|text| SystemPrompt {
        text,
        ..SystemPrompt::default()
    });
    let session = match conn.new_session(params.clone()).await {
        Ok(s) => s,
        Err(e) if e.is_auth_required() => {
            // Agents such as gemini answer `session/new` with -32000 until
            // logged in; methods of type `agent` can be driven from here.
            let method = info
                .auth_methods
                .iter()
                .find(|m| matches!(m, schema::AuthMethod::Agent(_)))
                .ok_or_else(|| Error::Host(format!(
                    "the agent requires authentication ({e}); log in with the agent's own command first"
                )))?;
            conn.authenticate(&method.id().0).await?;
            conn.new_session(params).await?
        }
        Err(e) => return Err(e),
    };
    if let Some(why) = &session.system_prompt_skipped {
        if !opts.jsonl {
            host.out(&format!("[note] {why}\n"));
        }
    }
    let sid = session.session_id;
    let mut prompts = opts.prompts.clone().into_iter();
    loop {
        let text = if opts.prompts.is_empty() {
            if !opts.jsonl {
                host.out("you> ");
            }
            match lines.lock().await.recv().await {
                Some(line) if line.trim().is_empty() => continue,
                Some(line) => line,
                None => return Ok(()),
            }
        } else {
            match prompts.next() {
                Some(p) => p,
                None => return Ok(()),
            }
        };
        let canceller = opts.cancel_after.map(|after| {
            let conn = conn.clone();
            let sid = sid.clone();
            tokio::spawn(async move {
                tokio::time::sleep(after).await;
                let _ = conn.cancel(&sid);
            })
        });
        let block = schema::ContentBlock::Text(schema::TextContent::new(text));
        let result = conn.prompt(&sid, vec![block]).await;
        if let Some(c) = canceller {
            c.abort();
        }
        let stop = result?;
        host.end_stream();
        if opts.jsonl {
            host.jsonl(json!({"type": "stop", "stopReason": stop}));
        } else {
            host.out(&format!("[{}]\n", stop.as_str()));
        }
    }
}
