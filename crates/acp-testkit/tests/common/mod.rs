//! A minimal ACP client for driving the fake agent over pipes with plain
//! JSON: write requests, read lines, answer the agent's requests.

#![allow(dead_code, clippy::unwrap_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Hang guard only: no test waits this long unless something is broken.
pub const HANG_GUARD: Duration = Duration::from_secs(30);

/// The answer a test gives to a request from the agent.
pub type Answer = Result<Value, (i64, String)>;

pub struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Vec<u8>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    next_id: u64,
    /// A fresh directory to use as the session cwd.
    pub dir: tempfile::TempDir,
}

impl Driver {
    /// Starts the agent with a scenario file.
    pub fn spawn(scenario: &Path) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Self::start(Some(scenario.to_owned()), dir)
    }

    /// Starts the agent with a scenario given inline.
    pub fn inline(scenario: Value) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let path = acp_testkit::write_scenario(dir.path(), &scenario);
        Self::start(Some(path), dir)
    }

    /// Starts the agent with no scenario: the bundled demo.
    pub fn demo() -> Self {
        Self::start(None, tempfile::tempdir().unwrap())
    }

    fn start(scenario: Option<PathBuf>, dir: tempfile::TempDir) -> Self {
        let mut command = Command::new(acp_testkit::fake_agent_bin());
        if let Some(path) = scenario {
            command.arg("--scenario").arg(path);
        }
        let mut child = command
            .env_remove(acp_testkit::SCENARIO_ENV)
            .env(acp_testkit::LOG_ENV, "debug")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = pipe.read(&mut buf) {
                if n == 0 {
                    return;
                }
                sink.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            stderr,
            next_id: 0,
            dir,
        }
    }

    pub fn cwd(&self) -> String {
        self.dir.path().to_str().unwrap().to_owned()
    }

    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    pub fn send(&mut self, message: &Value) {
        self.send_raw(format!("{message}\n").as_bytes());
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Sends a request; returns its id.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The next raw line from the agent's stdout (newline included).
    pub fn next_line(&mut self) -> Vec<u8> {
        self.try_next_line(HANG_GUARD).unwrap_or_else(|| {
            panic!(
                "the agent sent nothing within {HANG_GUARD:?}; stderr:\n{}",
                self.stderr()
            )
        })
    }

    pub fn try_next_line(&mut self, wait: Duration) -> Option<Vec<u8>> {
        self.lines.recv_timeout(wait).ok()
    }

    pub fn next_message(&mut self) -> Value {
        let line = self.next_line();
        serde_json::from_slice(&line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", String::from_utf8_lossy(&line)))
    }

    /// Reads until the response to `id`, answering the agent's requests with
    /// `answer`. Returns every other message (notifications and requests) in
    /// order, and the response.
    pub fn until_response(
        &mut self,
        id: &Value,
        answer: &mut dyn FnMut(&str, &Value) -> Answer,
    ) -> (Vec<Value>, Value) {
        let mut seen = Vec::new();
        loop {
            let message = self.next_message();
            if message.get("method").is_none() {
                if &message["id"] == id {
                    return (seen, message);
                }
                panic!("response to an unknown request: {message}");
            }
            if let Some(request_id) = message.get("id") {
                let method = message["method"].as_str().unwrap().to_owned();
                let reply = match answer(&method, &message["params"]) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": request_id, "result": result}),
                    Err((code, text)) => json!({"jsonrpc": "2.0", "id": request_id,
                        "error": {"code": code, "message": text}}),
                };
                self.send(&reply);
            }
            seen.push(message);
        }
    }

    /// A request whose answer comes with no agent requests in between;
    /// returns the whole response message.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params);
        let (_, response) = self.until_response(&id, &mut refuse);
        response
    }

    /// A request that must succeed; returns its result.
    pub fn ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        assert!(
            response.get("error").is_none(),
            "{method} failed: {response}"
        );
        response["result"].clone()
    }

    pub fn initialize(&mut self) -> Value {
        self.ok(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {
                "fs": {"readTextFile": true, "writeTextFile": true}, "terminal": true}}),
        )
    }

    pub fn new_session(&mut self) -> String {
        let cwd = self.cwd();
        let result = self.ok("session/new", json!({"cwd": cwd, "mcpServers": []}));
        result["sessionId"].as_str().unwrap().to_owned()
    }

    /// Initializes and opens a session.
    pub fn session(&mut self) -> String {
        self.initialize();
        self.new_session()
    }

    /// Sends a prompt and plays the turn; returns the updates of this
    /// session (in order) and the stop reason.
    pub fn prompt(
        &mut self,
        session_id: &str,
        text: &str,
        answer: &mut dyn FnMut(&str, &Value) -> Answer,
    ) -> Turn {
        let id = self.request(
            "session/prompt",
            json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}),
        );
        let (messages, response) = self.until_response(&id, answer);
        let stop_reason = response["result"]["stopReason"]
            .as_str()
            .unwrap_or_else(|| panic!("prompt failed: {response}"))
            .to_owned();
        Turn {
            messages,
            stop_reason,
        }
    }

    /// Waits for the agent to exit.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the agent did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits until stderr contains `needle` (the stderr thread may lag).
    pub fn wait_stderr(&self, needle: &str) -> String {
        let deadline = Instant::now() + HANG_GUARD;
        loop {
            let text = self.stderr();
            if text.contains(needle) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "stderr never had {needle:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What one prompt turn produced.
pub struct Turn {
    /// Every message from the agent during the turn, in order.
    pub messages: Vec<Value>,
    pub stop_reason: String,
}

impl Turn {
    /// The `update` objects of `session/update` notifications.
    pub fn updates(&self) -> Vec<Value> {
        self.messages
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// The updates of one kind.
    pub fn of_kind(&self, kind: &str) -> Vec<Value> {
        self.updates()
            .into_iter()
            .filter(|u| u["sessionUpdate"] == kind)
            .collect()
    }

    /// All agent message text, concatenated.
    pub fn text(&self) -> String {
        self.of_kind("agent_message_chunk")
            .iter()
            .filter_map(|u| u["content"]["text"].as_str().map(str::to_owned))
            .collect()
    }

    /// The methods of the agent's requests, in order.
    pub fn requests(&self) -> Vec<String> {
        self.messages
            .iter()
            .filter(|m| m.get("id").is_some())
            .map(|m| m["method"].as_str().unwrap().to_owned())
            .collect()
    }
}

/// Answers no agent request: fails the test if one arrives.
pub fn refuse(method: &str, params: &Value) -> Answer {
    panic!("unexpected request from the agent: {method} {params}")
}

/// Answers permission requests with `option_id` (or "cancelled").
pub fn choose(option_id: &'static str) -> impl FnMut(&str, &Value) -> Answer {
    move |method, params| {
        assert_eq!(method, "session/request_permission", "{params}");
        if option_id == "cancelled" {
            Ok(json!({"outcome": {"outcome": "cancelled"}}))
        } else {
            Ok(json!({"outcome": {"outcome": "selected", "optionId": option_id}}))
        }
    }
}
