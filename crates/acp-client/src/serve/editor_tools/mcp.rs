//! The editor MCP server's messages: its JSON-RPC 2.0 replies and the
//! results of the methods it serves. MCP's types are not in the ACP schema
//! crate, so the server has its own, encoded once by [`McpReply::encode`]
//! where a reply is written (`http`, `socket`).

use serde::Serialize;
use serde_json::Value;

/// One reply to the holder of a secret.
#[derive(Debug, Serialize)]
pub(crate) struct McpReply {
    jsonrpc: &'static str,
    /// The request's id as it came (JSON-RPC lets it be any JSON value),
    /// or `null` when the request could not be read.
    id: Value,
    #[serde(flatten)]
    outcome: Outcome,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "lowercase")]
enum Outcome {
    Result(McpResult),
    Error(McpError),
}

#[derive(Debug, Serialize)]
struct McpError {
    code: i64,
    message: String,
}

impl McpReply {
    pub(crate) fn result(id: Value, result: McpResult) -> Self {
        McpReply {
            jsonrpc: "2.0",
            id,
            outcome: Outcome::Result(result),
        }
    }

    pub(crate) fn error(id: Value, code: i64, message: impl Into<String>) -> Self {
        McpReply {
            jsonrpc: "2.0",
            id,
            outcome: Outcome::Error(McpError {
                code,
                message: message.into(),
            }),
        }
    }

    /// The reply as one line of JSON.
    pub(crate) fn encode(&self) -> String {
        // Strings, numbers and `Value`s always encode; the fallback only
        // keeps a reply a reply.
        serde_json::to_string(self).unwrap_or_else(|e| {
            tracing::warn!("an editor MCP reply could not be encoded: {e}");
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}"#
                .to_owned()
        })
    }
}

/// The result of one method the server serves.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum McpResult {
    Initialize(InitializeResult),
    /// `ping`'s `{}`.
    Empty {},
    /// `tools/list`: the tools are data, their `inputSchema`s JSON Schema
    /// documents (free-form JSON by nature), written as JSON in
    /// `tool_list`.
    Tools {
        tools: Value,
    },
    ToolCall(ToolCallResult),
}

/// `initialize`'s result.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeResult {
    pub(crate) protocol_version: &'static str,
    pub(crate) capabilities: ServerCapabilities,
    pub(crate) server_info: ServerInfo,
    pub(crate) instructions: &'static str,
}

#[derive(Debug, Serialize)]
pub(crate) struct ServerCapabilities {
    pub(crate) tools: ToolsCapability,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolsCapability {
    pub(crate) list_changed: bool,
}

#[derive(Debug, Serialize)]
pub(crate) struct ServerInfo {
    pub(crate) name: &'static str,
    pub(crate) version: &'static str,
}

/// `tools/call`'s result: one text block, and whether it is a tool error
/// (shown to the model) rather than the tool's answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolCallResult {
    content: [TextContent; 1],
    is_error: bool,
}

#[derive(Debug, Serialize)]
struct TextContent {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
}

impl ToolCallResult {
    pub(crate) fn new(text: String, is_error: bool) -> Self {
        ToolCallResult {
            content: [TextContent { kind: "text", text }],
            is_error,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use serde_json::json;

    use super::*;

    fn same(reply: McpReply, before: Value) {
        assert_eq!(reply.encode(), before.to_string());
    }

    #[test]
    fn replies_keep_their_wire_bytes() {
        same(
            McpReply::error(Value::Null, -32700, "parse error: x"),
            json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "parse error: x" } }),
        );
        same(
            McpReply::result(json!(7), McpResult::Empty {}),
            json!({ "jsonrpc": "2.0", "id": 7, "result": {} }),
        );
        same(
            McpReply::result(json!("a"), McpResult::Tools { tools: json!([]) }),
            json!({ "jsonrpc": "2.0", "id": "a", "result": { "tools": [] } }),
        );
        same(
            McpReply::result(
                json!(1),
                McpResult::ToolCall(ToolCallResult::new("no such file".into(), true)),
            ),
            json!({ "jsonrpc": "2.0", "id": 1, "result": {
                "content": [{ "type": "text", "text": "no such file" }],
                "isError": true,
            } }),
        );
        same(
            McpReply::result(
                json!(0),
                McpResult::Initialize(InitializeResult {
                    protocol_version: "2025-06-18",
                    capabilities: ServerCapabilities {
                        tools: ToolsCapability {
                            list_changed: false,
                        },
                    },
                    server_info: ServerInfo {
                        name: "acp-editor",
                        version: "1.2.3",
                    },
                    instructions: "use the editor",
                }),
            ),
            json!({ "jsonrpc": "2.0", "id": 0, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": { "tools": { "listChanged": false } },
                "serverInfo": { "name": "acp-editor", "version": "1.2.3" },
                "instructions": "use the editor",
            } }),
        );
    }
}
