//! The editor's MCP server (`editor_tools`), end to end: offered in
//! `session/new`, then driven over HTTP and over the stdio bridge (the chat
//! example re-executed in its `--mcp-bridge` mode), as an agent would.
#![allow(clippy::unwrap_used)] // Tests may unwrap (house rule).

mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use acp_client::edits::buffer_sync::{
    Applied, BufferRead, BufferSync, BufferText, BufferView, Buffers, Instruction,
};
use acp_client::edits::host::ReadTextFile;
use acp_client::policy::permission::{PermissionDecision, PermissionRequest};
use acp_client::serve::editor_tools::{BridgeCommand, EditorToolsOptions, MAX_CONNECTIONS};
use acp_client::session::update::SessionId;
use acp_client::{ClientEvent, Connection, ConnectionOptions, EditorHost, SessionParams};
use async_trait::async_trait;
use serde_json::{json, Value};
use support::{Peer, WAIT};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};

/// An editor's open buffers (path -> text, unsaved edits included, and
/// the buffer's version), as acp-client's buffer sync sees them.
#[derive(Default)]
struct EditorBuffers {
    open: Mutex<HashMap<PathBuf, (String, u64)>>,
}

#[async_trait]
impl Buffers for EditorBuffers {
    async fn read(
        &self,
        request: &ReadTextFile,
        _known: Option<u64>,
    ) -> acp_client::Result<Option<BufferRead>> {
        let Some((text, version)) = self
            .open
            .lock()
            .unwrap()
            .get(request.path.as_path())
            .cloned()
        else {
            return Ok(None);
        };
        let whole: Arc<str> = text.as_str().into();
        Ok(Some(BufferRead {
            text: acp_client::edits::fs::slice_lines(&text, request.line, request.limit)?,
            version,
            view: Some(BufferView {
                whole: whole.clone(),
                buffer: whole,
            }),
        }))
    }

    /// Every open buffer holds unsaved edits: it takes the merge made at
    /// its version, and answers stale otherwise.
    async fn apply(&self, instruction: &Instruction) -> acp_client::Result<Applied> {
        let mut open = self.open.lock().unwrap();
        let Some((text, version)) = open.get_mut(instruction.path.as_path()) else {
            return Ok(Applied::NoBuffer);
        };
        match &instruction.merge {
            Some(merge) if merge.version == *version => {
                *text = merge.text.clone();
                *version += 1;
                Ok(Applied::Merged { version: *version })
            }
            _ => Ok(Applied::Stale(BufferText {
                text: text.as_str().into(),
                version: *version,
            })),
        }
    }
}

/// An editor with open buffers whose writes go through the buffer sync,
/// and diagnostics to give.
struct BufferHost {
    buffers: Arc<EditorBuffers>,
    sync: BufferSync,
    events: Mutex<Vec<ClientEvent>>,
}

impl Default for BufferHost {
    fn default() -> Self {
        let buffers = Arc::new(EditorBuffers::default());
        Self {
            sync: BufferSync::new(buffers.clone()),
            buffers,
            events: Mutex::default(),
        }
    }
}

impl BufferHost {
    /// The text of an open buffer.
    fn buffer(&self, path: &Path) -> String {
        self.buffers.open.lock().unwrap()[path].0.clone()
    }
}

#[async_trait]
impl EditorHost for BufferHost {
    async fn request_permission(&self, _request: PermissionRequest) -> PermissionDecision {
        PermissionDecision::Cancelled
    }

    fn buffer_sync(&self) -> Option<&BufferSync> {
        Some(&self.sync)
    }

    async fn diagnostics(
        &self,
        _session_id: &SessionId,
        path: Option<&Path>,
    ) -> acp_client::Result<Value> {
        Ok(json!([{ "path": path, "severity": "error", "message": "undefined: x" }]))
    }

    fn on_event(&self, event: ClientEvent) {
        self.events.lock().unwrap().push(event);
    }
}

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
    host: Arc<BufferHost>,
    conn: Connection,
    _peer: Peer,
    /// The `editor` entry of the session's `mcpServers`.
    server: Value,
    request: Value,
}

/// A session opened with an agent advertising `agent_caps`; the `editor`
/// server it was offered.
async fn open(agent_caps: Value) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let root = base.join("project");
    let outside = base.join("secret.txt");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(&outside, "hunter2\n").unwrap();
    std::fs::write(root.join("main.rs"), "fn main() {\n    old();\n}\n").unwrap();
    std::fs::write(root.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let host = Arc::new(BufferHost::default());
    // main.rs is open with an unsaved line the disk does not have.
    host.buffers.open.lock().unwrap().insert(
        root.join("main.rs"),
        (
            "fn main() {\n    // unsaved by the user\n    old();\n}\n".into(),
            1,
        ),
    );
    let options = ConnectionOptions {
        editor_tools: Some(EditorToolsOptions {
            bridge: Some(BridgeCommand {
                program: support::chat_example(),
                args: vec!["--mcp-bridge".into()],
            }),
            ..EditorToolsOptions::default()
        }),
        ..ConnectionOptions::default()
    };
    let (client_side, agent_side) = tokio::io::duplex(1 << 20);
    let (cr, cw) = tokio::io::split(client_side);
    let (ar, aw) = tokio::io::split(agent_side);
    let conn = Connection::from_streams(cr, cw, host.clone(), options);
    let mut peer = Peer::from_halves(ar, aw);
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    peer.accept_initialize(agent_caps).await;
    init.await.unwrap().unwrap();
    let c = conn.clone();
    let cwd = root.clone();
    let new = tokio::spawn(async move { c.new_session(SessionParams::new(cwd)).await });
    let request = peer.recv().await;
    assert_eq!(request["method"], "session/new");
    peer.respond(&request["id"], json!({"sessionId": "s1"}))
        .await;
    new.await.unwrap().unwrap();
    let server = request["params"]["mcpServers"][0].clone();
    assert_eq!(server["name"], "editor", "{request}");
    Fixture {
        _dir: dir,
        root,
        outside,
        host,
        conn,
        _peer: peer,
        server,
        request,
    }
}

/// One HTTP exchange on a fresh connection: status and body.
async fn http(url: &str, head: &str, body: &str) -> (u16, String) {
    let addr = url
        .strip_prefix("http://")
        .unwrap()
        .split('/')
        .next()
        .unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(WAIT, stream.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").unwrap().1.to_owned();
    (status, body)
}

fn bearer(server: &Value) -> String {
    assert_eq!(server["headers"][0]["name"], "Authorization");
    server["headers"][0]["value"].as_str().unwrap().to_owned()
}

/// A JSON-RPC request to the server with the session's secret.
async fn mcp(server: &Value, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nAuthorization: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream",
        bearer(server)
    );
    let (status, body) = http(server["url"].as_str().unwrap(), &head, &body).await;
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// `tools/call`: the tool's text and whether it is a tool error.
async fn call(server: &Value, tool: &str, args: Value) -> (String, bool) {
    let answer = mcp(
        server,
        "tools/call",
        json!({"name": tool, "arguments": args}),
    )
    .await;
    let result = &answer["result"];
    (
        result["content"][0]["text"].as_str().unwrap().to_owned(),
        result["isError"].as_bool().unwrap(),
    )
}

#[tokio::test]
async fn over_http_every_tool_works_on_the_editors_view() {
    let f = open(json!({"mcpCapabilities": {"http": true}})).await;
    assert_eq!(f.server["type"], "http");
    assert!(f.server["url"]
        .as_str()
        .unwrap()
        .starts_with("http://127.0.0.1:"));

    let init = mcp(&f.server, "initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})).await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert!(init["result"]["capabilities"]["tools"].is_object());

    let tools = mcp(&f.server, "tools/list", json!({})).await;
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "read_file",
            "write_file",
            "edit_file",
            "diagnostics",
            "open_buffers"
        ]
    );

    // The open buffer's unsaved line, by absolute and by relative path.
    let main = f.root.join("main.rs");
    let (text, err) = call(&f.server, "read_file", json!({"path": main})).await;
    assert!(!err);
    assert!(text.contains("// unsaved by the user"), "{text}");
    let (text, _) = call(
        &f.server,
        "read_file",
        json!({"path": "notes.txt", "line": 2, "limit": 1}),
    )
    .await;
    assert_eq!(text, "two\n");

    // edit_file edits the buffer's text: the unsaved line stays.
    let (text, err) = call(
        &f.server,
        "edit_file",
        json!({"path": main, "old_string": "old();", "new_string": "new();"}),
    )
    .await;
    assert!(!err, "{text}");
    let buffer = f.host.buffer(&main);
    assert_eq!(
        buffer,
        "fn main() {\n    // unsaved by the user\n    new();\n}\n"
    );
    // Recorded as the agent's edit, like an fs/write_text_file.
    assert!(f.host.events.lock().unwrap().iter().any(|e| matches!(
        e,
        ClientEvent::FileEdited(edit) if edit.path == main && edit.new_content.contains("new();")
    )));

    let (text, err) = call(
        &f.server,
        "edit_file",
        json!({"path": main, "old_string": "absent", "new_string": "x"}),
    )
    .await;
    assert!(err);
    assert!(text.contains("was not found"), "{text}");

    // write_file of a closed file goes to disk.
    let new_file = f.root.join("src/new.rs");
    let (text, err) = call(
        &f.server,
        "write_file",
        json!({"path": new_file, "content": "pub fn f() {}\n"}),
    )
    .await;
    assert!(!err, "{text}");
    assert_eq!(
        std::fs::read_to_string(&new_file).unwrap(),
        "pub fn f() {}\n"
    );

    // The sandbox of fs/*: nothing outside the workspace.
    let (text, err) = call(&f.server, "read_file", json!({"path": f.outside})).await;
    assert!(err);
    assert!(text.contains("outside the workspace"), "{text}");
    let (_, err) = call(&f.server, "read_file", json!({"path": "../secret.txt"})).await;
    assert!(err);
    let (_, err) = call(
        &f.server,
        "write_file",
        json!({"path": f.outside, "content": "x"}),
    )
    .await;
    assert!(err);
    assert_eq!(std::fs::read_to_string(&f.outside).unwrap(), "hunter2\n");

    let (text, err) = call(&f.server, "diagnostics", json!({"path": "main.rs"})).await;
    assert!(!err);
    assert!(text.contains("undefined: x"), "{text}");
    let (text, err) = call(&f.server, "open_buffers", json!({})).await;
    assert!(err);
    assert!(text.contains("not supported by this editor"), "{text}");

    // Bad calls get clear errors.
    let unknown = mcp(
        &f.server,
        "tools/call",
        json!({"name": "rm_rf", "arguments": {}}),
    )
    .await;
    assert_eq!(unknown["error"]["code"], -32602);
    assert!(unknown["error"]["message"]
        .as_str()
        .unwrap()
        .contains("read_file"));
    let (text, err) = call(&f.server, "write_file", json!({"path": "a.txt"})).await;
    assert!(err);
    assert!(text.contains("content"), "{text}");
    drop(f.conn);
}

#[tokio::test]
async fn over_http_strangers_and_floods_are_refused() {
    let f = open(json!({"mcpCapabilities": {"http": true}})).await;
    let url = f.server["url"].as_str().unwrap().to_owned();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    let (status, body) = http(
        &url,
        "POST /mcp HTTP/1.1\r\nContent-Type: application/json",
        &ping,
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("Authorization: Bearer"), "{body}");
    let (status, _) = http(
        &url,
        "POST /mcp HTTP/1.1\r\nAuthorization: Bearer 0000",
        &ping,
    )
    .await;
    assert_eq!(status, 401);
    let auth = bearer(&f.server);
    let (status, _) = http(
        &url,
        &format!("GET /mcp HTTP/1.1\r\nAuthorization: {auth}"),
        "",
    )
    .await;
    assert_eq!(status, 405);
    let (status, _) = http(
        &url,
        &format!("POST /mcp HTTP/1.1\r\nAuthorization: {auth}\r\nOrigin: http://evil.example"),
        &ping,
    )
    .await;
    assert_eq!(status, 403);
    let (status, _) = http(
        &url,
        &format!("POST /other HTTP/1.1\r\nAuthorization: {auth}"),
        &ping,
    )
    .await;
    assert_eq!(status, 404);

    // A body over the limit is refused from its Content-Length, unread.
    let addr = url
        .strip_prefix("http://")
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut big = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nAuthorization: {auth}\r\nContent-Length: {}\r\n\r\n",
        64 * 1024 * 1024
    );
    big.write_all(head.as_bytes()).await.unwrap();
    let mut answer = String::new();
    BufReader::new(&mut big)
        .read_line(&mut answer)
        .await
        .unwrap();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");

    // Malformed JSON, a batch, a notification.
    let head =
        format!("POST /mcp HTTP/1.1\r\nAuthorization: {auth}\r\nContent-Type: application/json");
    let (status, body) = http(&url, &head, "{not json").await;
    assert_eq!(status, 200);
    assert!(body.contains("-32700"), "{body}");
    let (_, body) = http(&url, &head, "[]").await;
    assert!(body.contains("-32600"), "{body}");
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (status, body) = http(&url, &head, &note).await;
    assert_eq!((status, body.as_str()), (202, ""));

    // Many connections: past the limit they are turned away, and the
    // server serves again once they close.
    let mut held = Vec::new();
    for _ in 0..MAX_CONNECTIONS {
        held.push(tokio::net::TcpStream::connect(&addr).await.unwrap());
    }
    let (status, _) = http(&url, &head, &ping).await;
    assert_eq!(status, 503);
    drop(held);
    let ok = tokio::time::timeout(WAIT, async {
        loop {
            let (status, _) = http(&url, &head, &ping).await;
            if status == 200 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(ok.is_ok(), "the server did not serve again after the flood");
    drop(f.conn);
}

#[tokio::test]
async fn the_system_prompt_tells_the_model_about_the_tools() {
    let f = open(json!({
        "mcpCapabilities": {"http": true},
        "sessionCapabilities": {"systemPrompt": {}}
    }))
    .await;
    let sp = &f.request["params"]["systemPrompt"];
    assert_eq!(sp["mode"], "append", "{}", f.request);
    assert!(sp["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("unsaved changes"));
    drop(f.conn);
}

/// A line-oriented MCP client over the bridge process.
struct Bridge {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: BufReader<tokio::process::ChildStdout>,
}

impl Bridge {
    fn start(server: &Value, token: Option<&str>) -> Self {
        let mut cmd = tokio::process::Command::new(server["command"].as_str().unwrap());
        for arg in server["args"].as_array().unwrap() {
            cmd.arg(arg.as_str().unwrap());
        }
        for var in server["env"].as_array().unwrap() {
            let name = var["name"].as_str().unwrap();
            let value = match (name, token) {
                ("ACP_EDITOR_TOOLS_TOKEN", Some(t)) => t,
                _ => var["value"].as_str().unwrap(),
            };
            cmd.env(name, value);
        }
        let mut child = cmd
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        Bridge {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
        }
    }

    async fn send(&mut self, message: Value) {
        self.stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn recv(&mut self) -> Value {
        let mut line = String::new();
        tokio::time::timeout(WAIT, self.stdout.read_line(&mut line))
            .await
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }
}

#[tokio::test]
async fn over_the_stdio_bridge_the_same_tools_answer() {
    // No `http` in the agent's capabilities: the stdio bridge is offered.
    let f = open(json!({})).await;
    assert!(
        f.server.get("type").is_none() || f.server["type"] == "stdio",
        "{}",
        f.server
    );
    assert!(Path::new(f.server["command"].as_str().unwrap()).is_absolute());
    let socket = f.server["env"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "ACP_EDITOR_TOOLS_SOCKET")
        .unwrap()["value"]
        .as_str()
        .unwrap()
        .to_owned();
    // The socket's directory is private to the user.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(Path::new(&socket).parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);

    let mut bridge = Bridge::start(&f.server, None);
    bridge
        .send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}))
        .await;
    assert_eq!(
        bridge.recv().await["result"]["protocolVersion"],
        "2025-06-18"
    );
    bridge
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    bridge
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .await;
    assert_eq!(
        bridge.recv().await["result"]["tools"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
    let main = f.root.join("main.rs");
    bridge
        .send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": main}}}))
        .await;
    let read = bridge.recv().await;
    assert!(read["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("// unsaved by the user"));
    bridge
        .send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "edit_file", "arguments": {"path": main, "old_string": "old();", "new_string": "bridged();"}}}))
        .await;
    assert_eq!(bridge.recv().await["result"]["isError"], false);
    assert!(f
        .host
        .buffer(&main)
        .contains("// unsaved by the user\n    bridged();"));
    bridge
        .send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "read_file", "arguments": {"path": f.outside}}}))
        .await;
    assert_eq!(bridge.recv().await["result"]["isError"], true);
    drop(bridge.stdin);
    let status = tokio::time::timeout(WAIT, bridge.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success());

    // A bridge with a wrong secret is refused and ends.
    let mut stranger = Bridge::start(&f.server, Some("0123"));
    let refusal = stranger.recv().await;
    assert!(
        refusal["error"]["message"]
            .as_str()
            .unwrap()
            .contains("refused"),
        "{refusal}"
    );
    drop(f.conn);
}
