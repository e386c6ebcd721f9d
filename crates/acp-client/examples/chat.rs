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

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use acp_client::policy::elicitation::{
    ElicitationMode, ElicitationRequest, ElicitationResponse, FieldKind, FormSchema,
};
use acp_client::policy::permission::{OptionKind, PermissionDecision, PermissionRequest};
use acp_client::serve::editor_tools::{BridgeCommand, EditorToolsOptions};
use acp_client::session::update::{Content, PlanBody};
use acp_client::session::{Entry, SessionChange};
use acp_client::tools::terminal::TerminalEvent;
use acp_client::{
    schema, AgentCommand, ClientEvent, Connection, ConnectionOptions, EditorHost, Error,
    HostCapabilities, ProtocolVersion, SessionParams, SystemPrompt,
};
use async_trait::async_trait;
use serde_json::json;
use tokio::sync::mpsc;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum PermissionMode {
    Allow,
    AllowAlways,
    Reject,
    Ask,
}

#[derive(Debug)]
struct Options {
    cwd: PathBuf,
    prompts: Vec<String>,
    permission: PermissionMode,
    cancel_after: Option<Duration>,
    missing_file_read_empty: bool,
    /// `--protocol-version 1|2`: the newest ACP version to offer.
    protocol_version: ProtocolVersion,
    /// `--ask-terminal`: `ConnectionOptions::ask_before_terminal`.
    ask_terminal: bool,
    jsonl: bool,
    system_prompt: Option<String>,
    command: Vec<String>,
    /// `--agent`: a registry agent instead of `command`.
    agent: Option<String>,
    agents_dir: Option<PathBuf>,
    registry: Option<String>,
    /// `--allow-unverified`: install a binary without a registry SHA-256.
    allow_unverified: bool,
    /// `--no-editor-tools`: offer no `editor` MCP server.
    no_editor_tools: bool,
}

const USAGE: &str = "usage: chat [--cwd DIR] [--prompt TEXT]... [--permission allow|allow-always|reject|ask] [--cancel-after MS] [--missing-file-read empty|error] [--protocol-version 1|2] [--system-prompt TEXT] [--jsonl] [--ask-terminal] [--no-editor-tools] (-- AGENT_CMD [ARGS...] | --agent REGISTRY_ID [--agents-dir DIR] [--registry URL] [--allow-unverified])";

fn parse_args(args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut args = args.peekable();
    let mut opts = Options {
        cwd: std::env::current_dir()
            .map_err(|e| format!("cannot read the current directory: {e}"))?,
        prompts: Vec::new(),
        permission: PermissionMode::Ask,
        cancel_after: None,
        missing_file_read_empty: false,
        protocol_version: ProtocolVersion::V1,
        ask_terminal: false,
        jsonl: false,
        system_prompt: None,
        command: Vec::new(),
        agent: None,
        agents_dir: None,
        registry: None,
        allow_unverified: false,
        no_editor_tools: false,
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .ok_or_else(|| format!("{name} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--cwd" => opts.cwd = PathBuf::from(value("--cwd")?),
            "--prompt" => opts.prompts.push(value("--prompt")?),
            "--permission" => {
                opts.permission = match value("--permission")?.as_str() {
                    "allow" => PermissionMode::Allow,
                    "allow-always" => PermissionMode::AllowAlways,
                    "reject" => PermissionMode::Reject,
                    "ask" => PermissionMode::Ask,
                    other => {
                        return Err(format!(
                            "--permission takes allow, allow-always, reject or ask, not `{other}`"
                        ))
                    }
                }
            }
            "--cancel-after" => {
                let v = value("--cancel-after")?;
                let ms: u64 = v
                    .parse()
                    .map_err(|_| format!("--cancel-after takes milliseconds, not `{v}`"))?;
                opts.cancel_after = Some(Duration::from_millis(ms));
            }
            "--protocol-version" => {
                opts.protocol_version = match value("--protocol-version")?.as_str() {
                    "1" => ProtocolVersion::V1,
                    "2" => ProtocolVersion::V2,
                    other => return Err(format!("--protocol-version takes 1 or 2, not `{other}`")),
                }
            }
            "--missing-file-read" => {
                opts.missing_file_read_empty = match value("--missing-file-read")?.as_str() {
                    "empty" => true,
                    "error" => false,
                    other => {
                        return Err(format!(
                            "--missing-file-read takes empty or error, not `{other}`"
                        ))
                    }
                }
            }
            "--jsonl" => opts.jsonl = true,
            "--ask-terminal" => opts.ask_terminal = true,
            "--no-editor-tools" => opts.no_editor_tools = true,
            "--allow-unverified" => opts.allow_unverified = true,
            "--system-prompt" => opts.system_prompt = Some(value("--system-prompt")?),
            "--agent" => opts.agent = Some(value("--agent")?),
            "--agents-dir" => opts.agents_dir = Some(PathBuf::from(value("--agents-dir")?)),
            "--registry" => opts.registry = Some(value("--registry")?),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            "--" => {
                opts.command = args.by_ref().collect();
                break;
            }
            other => return Err(format!("unknown option `{other}`\n{USAGE}")),
        }
    }
    match (opts.command.is_empty(), &opts.agent) {
        (true, None) => return Err(format!("no agent command given\n{USAGE}")),
        (false, Some(_)) => {
            return Err(format!(
                "give an agent command or --agent, not both\n{USAGE}"
            ))
        }
        _ => {}
    }
    opts.cwd = std::path::absolute(&opts.cwd)
        .map_err(|e| format!("cannot use --cwd {}: {e}", opts.cwd.display()))?;
    Ok(opts)
}

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

impl ChatHost {
    fn out(&self, text: &str) {
        let mut stdout = std::io::stdout().lock();
        let _ = stdout.write_all(text.as_bytes());
        let _ = stdout.flush();
    }

    fn jsonl(&self, value: serde_json::Value) {
        self.out(&format!("{value}\n"));
    }

    fn end_stream(&self) {
        if self.streaming.lock().take().is_some() {
            self.out("\n");
        }
    }

    fn render_change(&self, change: &SessionChange) {
        match change {
            SessionChange::EntryAdded { index, entry } => match entry {
                Entry::AgentMessage(m) | Entry::Thought(m) => {
                    self.end_stream();
                    if matches!(entry, Entry::Thought(_)) {
                        self.out("(thinking) ");
                    }
                    self.out(&message_text(&m.content));
                    *self.streaming.lock() = Some(*index);
                }
                Entry::UserMessage(m) => {
                    self.end_stream();
                    self.out(&format!("> {}\n", message_text(&m.content)));
                }
                Entry::ToolCall(t) => {
                    self.end_stream();
                    self.out(&format!(
                        "[tool {}] {} ({})\n",
                        t.kind.as_str(),
                        t.title,
                        t.status.as_str()
                    ));
                }
                Entry::SessionMessage(m) => {
                    self.end_stream();
                    self.out(&format!("[message {}]\n", message_text(&m.content)));
                }
                Entry::Unknown { kind, .. } => {
                    self.end_stream();
                    self.out(&format!("[unknown update `{kind}`]\n"));
                }
            },
            SessionChange::PlanUpdated { plan } => {
                self.end_stream();
                match &plan.body {
                    PlanBody::Items { entries } => {
                        self.out(&format!("[plan {}]\n", plan.plan_id));
                        for e in entries {
                            self.out(&format!("  [{}] {}\n", e.status, e.content));
                        }
                    }
                    PlanBody::Markdown { content, path } => {
                        let file = path
                            .as_deref()
                            .map(|p| format!(" ({p})"))
                            .unwrap_or_default();
                        self.out(&format!("[plan {}{file}]\n{content}\n", plan.plan_id));
                    }
                }
            }
            SessionChange::PlanRemoved { plan_id } => {
                self.end_stream();
                self.out(&format!("[plan {plan_id} removed]\n"));
            }
            SessionChange::SubagentChanged { subagent } => {
                self.end_stream();
                let state = subagent.state.as_ref().map_or("?", |s| s.state.as_str());
                self.out(&format!(
                    "[subagent {}: {}]\n",
                    subagent.title.as_deref().unwrap_or(&subagent.session_id),
                    state
                ));
            }
            SessionChange::Child {
                session_id,
                child_change,
            } => {
                // A subagent's own output: on lines of its own, never glued
                // to the parent's streamed answer.
                self.end_stream();
                if let SessionChange::EntryAdded { entry, .. } = &**child_change {
                    if let Entry::AgentMessage(m) | Entry::Thought(m) = entry {
                        self.out(&format!("  [{session_id}] {}\n", message_text(&m.content)));
                    }
                } else if let SessionChange::TextAppended { content, .. } = &**child_change {
                    self.out(&format!(
                        "  [{session_id}] {}\n",
                        message_text(std::slice::from_ref(content))
                    ));
                }
            }
            SessionChange::TextAppended { index, content, .. } => {
                let mut streaming = self.streaming.lock();
                if *streaming != Some(*index) {
                    *streaming = Some(*index);
                    drop(streaming);
                    self.out("\n");
                }
                self.out(&message_text(std::slice::from_ref(content)));
            }
            SessionChange::ToolCallChanged { tool_call, .. } => {
                self.end_stream();
                self.out(&format!(
                    "[tool {}] {} ({})\n",
                    tool_call.kind.as_str(),
                    tool_call.title,
                    tool_call.status.as_str()
                ));
            }
            SessionChange::PlanReplaced { entries } => {
                self.end_stream();
                self.out("[plan]\n");
                for e in entries {
                    let mark = match e.status.as_str() {
                        "completed" => "[x]",
                        "in_progress" => "[~]",
                        _ => "[ ]",
                    };
                    self.out(&format!("  {mark} {} ({})\n", e.content, e.priority));
                }
            }
            SessionChange::ModeChanged { current_mode_id } => {
                self.end_stream();
                self.out(&format!("[mode: {current_mode_id}]\n"));
            }
            SessionChange::CommandsChanged { available_commands } => {
                self.end_stream();
                let names: Vec<String> = available_commands
                    .iter()
                    .map(|c| format!("/{}", c.name))
                    .collect();
                self.out(&format!("[commands: {}]\n", names.join(" ")));
            }
            SessionChange::Notice {
                severity,
                title,
                description,
            } => {
                self.end_stream();
                let detail = description
                    .as_deref()
                    .map(|d| format!(": {d}"))
                    .unwrap_or_default();
                self.out(&format!("[{severity}] {title}{detail}\n"));
            }
            SessionChange::CompactionChanged { status, error, .. } => {
                self.end_stream();
                let why = error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default();
                self.out(&format!("[context compaction {status}{why}]\n"));
            }
            SessionChange::UsageChanged { usage } => {
                self.end_stream();
                self.out(&format!(
                    "[context: {}/{} tokens]\n",
                    usage.used, usage.size
                ));
            }
            _ => {}
        }
    }
}

fn message_text(content: &[Content]) -> String {
    content
        .iter()
        .map(|c| match c {
            Content::Known(schema::ContentBlock::Text(t)) => t.text.clone(),
            Content::Known(other) => {
                let kind = serde_json::to_value(other)
                    .ok()
                    .and_then(|v| v["type"].as_str().map(str::to_owned))
                    .unwrap_or_default();
                format!("[{kind}]")
            }
            Content::Unknown(_) => "[unknown content]".to_owned(),
        })
        .collect()
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

impl ChatHost {
    async fn ask(&self, request: &PermissionRequest) -> PermissionDecision {
        self.end_stream();
        let mut text = format!(
            "The agent asks permission for: {}\n",
            request.tool_call.title.as_deref().unwrap_or("a tool call")
        );
        for (i, o) in request.options.iter().enumerate() {
            text.push_str(&format!("  {}) {} [{}]\n", i + 1, o.name, o.kind.as_str()));
        }
        text.push_str("Choose a number (empty line = cancel): ");
        self.say(&text);
        let line = self.lines.lock().await.recv().await.unwrap_or_default();
        match line.trim().parse::<usize>() {
            Ok(n) if n >= 1 && n <= request.options.len() => PermissionDecision::Selected {
                option_id: request.options[n - 1].option_id.clone(),
            },
            _ => PermissionDecision::Cancelled,
        }
    }
}

/// What a typed answer line means besides a value.
enum Typed {
    Line(String),
    Decline,
    Cancel,
}

impl ChatHost {
    /// Questions go to stderr in --jsonl mode so stdout stays JSON.
    fn say(&self, text: &str) {
        if self.jsonl {
            eprint!("{text}");
        } else {
            self.out(text);
        }
    }

    async fn read_line(&self) -> Typed {
        match self.lines.lock().await.recv().await {
            None => Typed::Cancel,
            Some(l) if l.trim() == "!decline" => Typed::Decline,
            Some(l) if l.trim() == "!cancel" => Typed::Cancel,
            Some(l) => Typed::Line(l),
        }
    }

    async fn ask_elicitation(&self, request: &ElicitationRequest) -> ElicitationResponse {
        let schema = match &request.mode {
            ElicitationMode::Url { url, .. } => {
                self.say(&format!(
                    "The agent asks you to open a page: {}\n  {url}\nOpen it, then press Enter (`!decline` or `!cancel` to refuse): ",
                    request.message
                ));
                return match self.read_line().await {
                    Typed::Line(_) => ElicitationResponse::Accept {
                        content: serde_json::Map::new(),
                    },
                    Typed::Decline => ElicitationResponse::Decline,
                    Typed::Cancel => ElicitationResponse::Cancel,
                };
            }
            ElicitationMode::Form { schema } => schema,
        };
        self.say(&format!(
            "The agent asks: {}\n(one line per field; empty = default or none; `!decline` or `!cancel` to refuse)\n",
            request.message
        ));
        let mut content = serde_json::Map::new();
        loop {
            for field in &schema.fields {
                if matches!(field.kind, FieldKind::Unknown { .. }) {
                    continue;
                }
                loop {
                    let default = field
                        .default
                        .as_ref()
                        .map(|d| format!(" [{d}]"))
                        .unwrap_or_default();
                    let required = if field.required { "*" } else { "" };
                    let help = field
                        .description
                        .as_deref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default();
                    self.say(&format!("  {}{required}{help}{default}: ", field.label()));
                    let text = match self.read_line().await {
                        Typed::Line(l) => l,
                        Typed::Decline => return ElicitationResponse::Decline,
                        Typed::Cancel => return ElicitationResponse::Cancel,
                    };
                    match FormSchema::parse_text(field, &text) {
                        Ok(Some(v)) => {
                            content.insert(field.name.clone(), v);
                            break;
                        }
                        Ok(None) => {
                            match &field.default {
                                Some(d) => content.insert(field.name.clone(), d.clone()),
                                None => content.remove(&field.name),
                            };
                            break;
                        }
                        Err(why) => self.say(&format!("  {why}; try again\n")),
                    }
                }
            }
            match schema.validate(&content) {
                Ok(content) => return ElicitationResponse::Accept { content },
                Err(e) => self.say(&format!("{e}\n")),
            }
        }
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

/// `$XDG_<kind>_HOME/nvim/acp` (`~/.local/share`, `~/.cache` by default):
/// where acp.nvim keeps registry agents and the registry cache, so that
/// both share them.
fn nvim_dir(var: &str, fallback: &str) -> Option<PathBuf> {
    let base = std::env::var_os(var)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(fallback)))?;
    Some(base.join("nvim").join("acp"))
}

/// The program, arguments and environment of registry agent `id`,
/// installing it first when it is not installed.
async fn registry_agent(
    opts: &Options,
    id: &str,
) -> Result<(Vec<String>, Vec<(String, String)>), Error> {
    use acp_client::agents::registry::install::{CancelToken, InstallOptions, Installer};
    use acp_client::agents::registry::{self, LoadMode, RegistrySource};
    let no_home =
        || Error::Registry("set HOME or --agents-dir to say where agents are installed".into());
    let agents_dir = match &opts.agents_dir {
        Some(d) => d.clone(),
        None => nvim_dir("XDG_DATA_HOME", ".local/share")
            .ok_or_else(no_home)?
            .join("agents"),
    };
    let cache_dir =
        nvim_dir("XDG_CACHE_HOME", ".cache").unwrap_or_else(|| agents_dir.join(".cache"));
    let mut source = RegistrySource::new(cache_dir);
    if let Some(url) = &opts.registry {
        source.url = url.clone();
    }
    let id = id.to_owned();
    let allow_unverified = opts.allow_unverified;
    let installed = tokio::task::spawn_blocking(move || {
        let installer = Installer::new(
            agents_dir,
            InstallOptions {
                insecure_urls: registry::user_index_is_plain(&source.url),
                allow_unverified,
                ..InstallOptions::default()
            },
        );
        if let Some(installed) = installer.installed_agent(&id)? {
            return Ok(installed);
        }
        let loaded = registry::load(&source, LoadMode::Cached)?;
        if let Some(warning) = &loaded.warning {
            eprintln!("{warning}");
        }
        let agent = loaded.registry.agent(&id).ok_or_else(|| {
            let ids: Vec<&str> = loaded
                .registry
                .agents
                .iter()
                .map(|a| a.id.as_str())
                .collect();
            Error::Registry(format!(
                "the registry has no agent `{id}`; it has: {}",
                ids.join(", ")
            ))
        })?;
        if installer.unverified(agent) {
            // Told before anything is downloaded.
            if !allow_unverified {
                return Err(Error::Registry(format!(
                    "{}'s registry entry gives no SHA-256 checksum for its archive, so the download cannot be verified; it was not installed (pass --allow-unverified to install it anyway)",
                    agent.name
                )));
            }
            eprintln!(
                "warning: {} has no SHA-256 checksum in the registry; installing it unverified (--allow-unverified)",
                agent.name
            );
        }
        eprintln!("installing {} {}...", agent.name, agent.version);
        let mut last = String::new();
        installer.install(agent, &CancelToken::new(), &mut |p| {
            if p.message != last {
                eprintln!("  {}", p.message);
                last = p.message;
            }
        })
    })
    .await
    .map_err(|e| Error::Registry(format!("the install task failed: {e}")))??;
    Ok((installed.cmd, installed.env.into_iter().collect()))
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
