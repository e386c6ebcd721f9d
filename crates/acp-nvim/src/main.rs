//! `acp-nvim`: the backend process of the acp.nvim Neovim plugin.

use std::process::ExitCode;

use acp_nvim::cli::{self, Cli};

fn main() -> ExitCode {
    let cli = match cli::parse(std::env::args().skip(1)) {
        Ok(cli) => cli,
        Err(e) => {
            eprintln!("acp-nvim: {e}\n{}", cli::USAGE);
            return ExitCode::from(2);
        }
    };
    match cli {
        Cli::Version => {
            println!("acp-nvim {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Cli::Help => {
            println!("{}", cli::USAGE);
            ExitCode::SUCCESS
        }
        Cli::McpBridge => {
            // Started by an agent as the `editor` MCP server: no log file,
            // stdout belongs to MCP, errors go to stderr (the agent's log).
            let bridged = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .and_then(|rt| rt.block_on(acp_client::serve::editor_tools::run_bridge()));
            match bridged {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("acp-nvim --mcp-bridge: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cli::Serve { log_file, level } => {
            let warning = acp_nvim::logging::init(log_file.as_deref(), level);
            // Before any agent starts: daemons an agent starts with
            // `setsid` are adopted, and killed when their agent closes
            // (Linux; elsewhere they outlive it, see doc/security.md).
            acp_client::agents::process::become_subreaper();
            let runtime = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!("cannot start the async runtime: {e}");
                    eprintln!("acp-nvim: cannot start the async runtime: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let log_file = if warning.is_some() { None } else { log_file };
            let result = runtime.block_on(acp_nvim::serve(log_file, warning));
            runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            match result {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!("acp-nvim stopped: {e}");
                    eprintln!("acp-nvim: {e}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}
