//! Which of the configured MCP servers an agent gets.
//!
//! ACP requires every agent to take stdio MCP servers; `http` and `sse`
//! servers only when the agent advertises `mcpCapabilities.http` / `.sse`.
//! Sending one anyway makes strict agents refuse the whole session, so
//! those are dropped with a warning that names the fix.

use acp_client::schema::{McpCapabilities, McpServer};

/// The servers the agent can take, and a sentence about the dropped ones.
pub fn supported(
    servers: Vec<McpServer>,
    caps: &McpCapabilities,
    agent_name: &str,
) -> (Vec<McpServer>, Option<String>) {
    let mut kept = Vec::with_capacity(servers.len());
    let mut dropped = Vec::new();
    for server in servers {
        let refused = match &server {
            McpServer::Http(s) if !caps.http => Some(("http", s.name.clone())),
            McpServer::Sse(s) if !caps.sse => Some(("sse", s.name.clone())),
            _ => None,
        };
        match refused {
            Some((transport, name)) => dropped.push(format!("`{name}` ({transport})")),
            None => kept.push(server),
        }
    }
    let warning = (!dropped.is_empty()).then(|| {
        format!(
            "agent {agent_name} does not support MCP servers over http/sse, so {} {} not passed to it; \
             remove {} from `mcp_servers` in your acp.nvim setup() or run the server over stdio",
            dropped.join(", "),
            if dropped.len() == 1 { "was" } else { "were" },
            if dropped.len() == 1 { "it" } else { "them" },
        )
    });
    (kept, warning)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use serde_json::json;

    fn servers() -> Vec<McpServer> {
        serde_json::from_value(json!([
            {"name": "files", "command": "/bin/mcp-files", "args": [], "env": []},
            {"type": "http", "name": "web", "url": "https://mcp.example/", "headers": []},
            {"type": "sse", "name": "events", "url": "https://sse.example/", "headers": []}
        ]))
        .unwrap()
    }

    fn names(servers: &[McpServer]) -> Vec<String> {
        servers
            .iter()
            .map(|s| {
                serde_json::to_value(s).unwrap()["name"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn stdio_always_passes_http_and_sse_only_when_advertised() {
        let none = McpCapabilities::default();
        let (kept, warning) = supported(servers(), &none, "demo");
        assert_eq!(names(&kept), ["files"]);
        let warning = warning.unwrap();
        assert!(
            warning.contains("`web` (http), `events` (sse) were not passed"),
            "{warning}"
        );
        assert!(warning.contains("agent demo"), "{warning}");
        assert!(warning.contains("mcp_servers"), "{warning}");

        let http: McpCapabilities = serde_json::from_value(json!({"http": true})).unwrap();
        let (kept, warning) = supported(servers(), &http, "demo");
        assert_eq!(names(&kept), ["files", "web"]);
        assert!(warning.unwrap().contains("`events` (sse) was not passed"));

        let all: McpCapabilities =
            serde_json::from_value(json!({"http": true, "sse": true})).unwrap();
        let (kept, warning) = supported(servers(), &all, "demo");
        assert_eq!(kept.len(), 3);
        assert_eq!(warning, None);
    }
}
