//! The settings a chat's sessions are opened with: its first session and
//! the fork a rewind goes on in take the same (chat.rs and rewind.rs both
//! ask here, neither asks the other).

use acp_client::SessionParams;

use crate::command::OpenChat;
use crate::mcp;

/// The settings of every session of the chat `open` describes (its first,
/// and a fork after a rewind): the MCP servers the agent takes (and, when
/// it cannot take some, the warning that names them), the extra
/// directories and the system prompt.
pub(crate) fn session_params(
    open: &OpenChat,
    info: &acp_client::AgentInfo,
    agent_name: &str,
) -> (SessionParams, Option<String>) {
    let mut params = SessionParams::new(open.cwd.clone());
    let (servers, dropped) = mcp::supported(
        open.mcp_servers.clone(),
        &info.capabilities.mcp_capabilities,
        agent_name,
    );
    params.mcp_servers = servers;
    params.additional_directories = open.additional_directories.clone();
    params.system_prompt = open.system_prompt.clone();
    (params, dropped)
}
