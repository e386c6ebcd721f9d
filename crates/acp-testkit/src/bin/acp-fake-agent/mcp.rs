//! A minimal MCP client, for the `mcpCall` step: calls one tool of an MCP
//! server the session was given (the editor's own, issue 26), over HTTP
//! (one `POST` per message) or by starting its stdio command, the way
//! claude-agent-acp reaches it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

/// How long one exchange may take before the step fails.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The tool's text and whether it is a tool error; `Err` for a protocol
/// failure (the server unreachable, refused, or answering garbage).
pub fn call_tool(server: &Value, tool: &str, arguments: Value) -> Result<(String, bool), String> {
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "acp-fake-agent", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": tool, "arguments": arguments}}),
    ];
    let answer = match server.get("url").and_then(Value::as_str) {
        Some(url) => over_http(url, server, &messages)?,
        None => over_stdio(server, &messages)?,
    };
    if let Some(error) = answer.get("error") {
        return Err(format!("the server answered an error: {error}"));
    }
    let result = &answer["result"];
    let text = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("");
    Ok((text, result["isError"].as_bool().unwrap_or(false)))
}

fn over_http(url: &str, server: &Value, messages: &[Value]) -> Result<Value, String> {
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| format!("only http:// URLs are supported, not {url}"))?;
    let (addr, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let headers: String = server["headers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| {
            format!(
                "{}: {}\r\n",
                h["name"].as_str().unwrap_or(""),
                h["value"].as_str().unwrap_or("")
            )
        })
        .collect();
    let mut last = Value::Null;
    for message in messages {
        let body = message.to_string();
        let mut stream = TcpStream::connect(addr).map_err(|e| format!("connect {addr}: {e}"))?;
        let _ = stream.set_read_timeout(Some(TIMEOUT));
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream
            .write_all(request.as_bytes())
            .map_err(|e| e.to_string())?;
        let mut answer = String::new();
        stream
            .read_to_string(&mut answer)
            .map_err(|e| e.to_string())?;
        let status = answer.get(9..12).unwrap_or("");
        let body = answer.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
        match status {
            "200" => {
                last = serde_json::from_str(body).map_err(|e| format!("{e}: {body}"))?;
            }
            "202" => {}
            other => return Err(format!("HTTP {other}: {}", body.trim())),
        }
    }
    Ok(last)
}

fn over_stdio(server: &Value, messages: &[Value]) -> Result<Value, String> {
    let command = server["command"]
        .as_str()
        .ok_or("the server has neither `url` nor `command`")?;
    let mut cmd = Command::new(command);
    for arg in server["args"].as_array().into_iter().flatten() {
        cmd.arg(arg.as_str().unwrap_or(""));
    }
    for var in server["env"].as_array().into_iter().flatten() {
        cmd.env(
            var["name"].as_str().unwrap_or(""),
            var["value"].as_str().unwrap_or(""),
        );
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("could not start {command}: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
    let mut last = Value::Null;
    for message in messages {
        writeln!(stdin, "{message}").map_err(|e| e.to_string())?;
        if message.get("id").is_none() {
            continue;
        }
        let mut line = String::new();
        stdout.read_line(&mut line).map_err(|e| e.to_string())?;
        last = serde_json::from_str(&line).map_err(|e| format!("{e}: {line:?}"))?;
    }
    drop(stdin);
    let _ = child.wait();
    Ok(last)
}
