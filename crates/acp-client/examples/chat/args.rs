//! The command line: options, usage, and their parsing.

use std::path::PathBuf;
use std::time::Duration;

use acp_client::ProtocolVersion;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum PermissionMode {
    Allow,
    AllowAlways,
    Reject,
    Ask,
}

#[derive(Debug)]
pub(super) struct Options {
    pub(super) cwd: PathBuf,
    pub(super) prompts: Vec<String>,
    pub(super) permission: PermissionMode,
    pub(super) cancel_after: Option<Duration>,
    pub(super) missing_file_read_empty: bool,
    /// `--protocol-version 1|2`: the newest ACP version to offer.
    pub(super) protocol_version: ProtocolVersion,
    /// `--ask-terminal`: `ConnectionOptions::ask_before_terminal`.
    pub(super) ask_terminal: bool,
    pub(super) jsonl: bool,
    pub(super) system_prompt: Option<String>,
    pub(super) command: Vec<String>,
    /// `--agent`: a registry agent instead of `command`.
    pub(super) agent: Option<String>,
    pub(super) agents_dir: Option<PathBuf>,
    pub(super) registry: Option<String>,
    /// `--allow-unverified`: install a binary without a registry SHA-256.
    pub(super) allow_unverified: bool,
    /// `--no-editor-tools`: offer no `editor` MCP server.
    pub(super) no_editor_tools: bool,
}

const USAGE: &str = "usage: chat [--cwd DIR] [--prompt TEXT]... [--permission allow|allow-always|reject|ask] [--cancel-after MS] [--missing-file-read empty|error] [--protocol-version 1|2] [--system-prompt TEXT] [--jsonl] [--ask-terminal] [--no-editor-tools] (-- AGENT_CMD [ARGS...] | --agent REGISTRY_ID [--agents-dir DIR] [--registry URL] [--allow-unverified])";

pub(super) fn parse_args(args: impl Iterator<Item = String>) -> Result<Options, String> {
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
