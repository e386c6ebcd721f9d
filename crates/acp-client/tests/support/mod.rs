//! Shared test helpers: an editor host that records everything, and a peer
//! that plays the agent over in-memory pipes, line by line.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use acp_client::edits::buffer_sync::{
    Applied, BufferRead, BufferSync, BufferView, Buffers, Instruction,
};
use acp_client::edits::host::{HostCapabilities, ReadTextFile};
use acp_client::policy::elicitation::{ElicitationRequest, ElicitationResponse};
use acp_client::policy::permission::{PermissionDecision, PermissionRequest};
use acp_client::{ClientEvent, Connection, ConnectionOptions, EditorHost};
use async_trait::async_trait;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, ReadHalf, WriteHalf};
use tokio::sync::{mpsc, oneshot};

/// How the test host answers permission prompts.
pub enum PermissionMode {
    /// Forward to the test through a channel; the test answers.
    Manual(mpsc::UnboundedSender<(PermissionRequest, oneshot::Sender<PermissionDecision>)>),
    /// Pick the first option of this kind (e.g. "allow_once").
    Pick(&'static str),
}

pub struct TestHost {
    pub caps: HostCapabilities,
    pub events: Mutex<Vec<ClientEvent>>,
    pub events_tx: mpsc::UnboundedSender<ClientEvent>,
    pub permission: PermissionMode,
    /// The editor's buffers (one simulated open buffer).
    pub buffers: Arc<TestBuffers>,
    /// The buffer sync over them: a test tells it the buffers a prompt
    /// went out with.
    pub sync: BufferSync,
    /// Where elicitations go, once a test sets it (else they are cancelled).
    pub elicitations: Mutex<Option<mpsc::UnboundedSender<Elicited>>>,
}

/// An elicitation handed to the test, with the channel for its answer.
pub type Elicited = (ElicitationRequest, oneshot::Sender<ElicitationResponse>);

impl TestHost {
    pub fn new(permission: PermissionMode) -> (Arc<Self>, mpsc::UnboundedReceiver<ClientEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let buffers = Arc::new(TestBuffers::default());
        (
            Arc::new(Self {
                caps: HostCapabilities::default(),
                events: Mutex::new(Vec::new()),
                events_tx: tx,
                permission,
                buffers: buffers.clone(),
                sync: BufferSync::new(buffers),
                elicitations: Default::default(),
            }),
            rx,
        )
    }

    pub fn with_caps(
        caps: HostCapabilities,
        permission: PermissionMode,
    ) -> (Arc<Self>, mpsc::UnboundedReceiver<ClientEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let buffers = Arc::new(TestBuffers::default());
        (
            Arc::new(Self {
                caps,
                events: Mutex::new(Vec::new()),
                events_tx: tx,
                permission,
                buffers: buffers.clone(),
                sync: BufferSync::new(buffers),
                elicitations: Default::default(),
            }),
            rx,
        )
    }

    /// Hands every later elicitation to the returned receiver.
    pub fn take_elicitations(&self) -> mpsc::UnboundedReceiver<Elicited> {
        let (tx, rx) = mpsc::unbounded_channel();
        *self.elicitations.lock().unwrap() = Some(tx);
        rx
    }

    pub fn events(&self) -> Vec<ClientEvent> {
        self.events.lock().unwrap().clone()
    }
}

#[async_trait]
impl EditorHost for TestHost {
    fn capabilities(&self) -> HostCapabilities {
        self.caps
    }

    async fn request_permission(&self, request: PermissionRequest) -> PermissionDecision {
        match &self.permission {
            PermissionMode::Manual(tx) => {
                let (answer_tx, answer_rx) = oneshot::channel();
                if tx.send((request, answer_tx)).is_err() {
                    return PermissionDecision::Cancelled;
                }
                answer_rx.await.unwrap_or(PermissionDecision::Cancelled)
            }
            PermissionMode::Pick(kind) => request
                .options
                .iter()
                .find(|o| o.kind.as_str() == *kind)
                .map(|o| PermissionDecision::Selected {
                    option_id: o.option_id.clone(),
                })
                .unwrap_or(PermissionDecision::Cancelled),
        }
    }

    async fn request_elicitation(&self, request: ElicitationRequest) -> ElicitationResponse {
        let tx = self.elicitations.lock().unwrap().clone();
        let Some(tx) = tx else {
            return ElicitationResponse::Cancel;
        };
        let (answer_tx, answer_rx) = oneshot::channel();
        if tx.send((request, answer_tx)).is_err() {
            return ElicitationResponse::Cancel;
        }
        answer_rx.await.unwrap_or(ElicitationResponse::Cancel)
    }

    fn buffer_sync(&self) -> Option<&BufferSync> {
        Some(&self.sync)
    }

    fn on_event(&self, event: ClientEvent) {
        self.events.lock().unwrap().push(event.clone());
        let _ = self.events_tx.send(event);
    }
}

/// The test editor's buffers: reads of one path see its text; writes go
/// to disk (no buffer takes them).
#[derive(Default)]
pub struct TestBuffers {
    /// Text returned for buffer reads of this path (simulating an open buffer).
    pub buffer: Mutex<Option<(std::path::PathBuf, String)>>,
    /// Make every buffer read fail, as an editor whose UI thread is gone.
    pub fail_reads: std::sync::atomic::AtomicBool,
}

#[async_trait]
impl Buffers for TestBuffers {
    async fn read(
        &self,
        request: &ReadTextFile,
        _known: Option<u64>,
    ) -> acp_client::Result<Option<BufferRead>> {
        if self.fail_reads.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(acp_client::Error::Host("the editor is gone".into()));
        }
        let buffer = self.buffer.lock().unwrap().clone();
        match buffer {
            Some((path, text)) if path == request.path => Ok(Some(BufferRead {
                text: acp_client::edits::fs::slice_lines(&text, request.line, request.limit)?,
                version: 1,
                view: Some(BufferView {
                    whole: text.as_str().into(),
                    buffer: text.as_str().into(),
                }),
            })),
            _ => Ok(None),
        }
    }

    async fn apply(&self, _instruction: &Instruction) -> acp_client::Result<Applied> {
        Ok(Applied::NoBuffer)
    }
}

/// The agent side of an in-memory connection.
pub struct Peer {
    reader: BufReader<ReadHalf<DuplexStream>>,
    writer: WriteHalf<DuplexStream>,
}

pub const WAIT: Duration = Duration::from_secs(10);

impl Peer {
    /// The agent side over the given pipe halves.
    pub fn from_halves(reader: ReadHalf<DuplexStream>, writer: WriteHalf<DuplexStream>) -> Self {
        Self {
            reader: BufReader::new(reader),
            writer,
        }
    }

    /// Reads the next message the client sent.
    pub async fn recv(&mut self) -> Value {
        let mut line = String::new();
        let n = tokio::time::timeout(WAIT, self.reader.read_line(&mut line))
            .await
            .expect("timed out waiting for a message from the client")
            .expect("read failed");
        assert!(n > 0, "client closed the pipe");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("client sent bad JSON {line:?}: {e}"))
    }

    /// Reads messages until one satisfies `pred`; returns it.
    pub async fn recv_until(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Value {
        loop {
            let v = self.recv().await;
            if pred(&v) {
                return v;
            }
        }
    }

    /// True when nothing arrives within `ms` milliseconds.
    pub async fn silent_for(&mut self, ms: u64) -> bool {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_millis(ms), self.reader.read_line(&mut line))
            .await
            .is_err()
    }

    pub async fn send(&mut self, v: Value) {
        let mut bytes = serde_json::to_vec(&v).unwrap();
        bytes.push(b'\n');
        self.writer.write_all(&bytes).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).await.unwrap();
        self.writer.flush().await.unwrap();
    }

    pub async fn respond(&mut self, id: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    pub async fn notify_update(&mut self, session_id: &str, update: Value) {
        self.send(json!({"jsonrpc":"2.0","method":"session/update","params":{"sessionId": session_id, "update": update}}))
            .await;
    }

    /// Answers the `initialize` request with these agent capabilities.
    pub async fn accept_initialize(&mut self, agent_capabilities: Value) -> Value {
        let req = self.recv().await;
        assert_eq!(req["method"], "initialize");
        self.respond(
            &req["id"],
            json!({"protocolVersion": 1, "agentCapabilities": agent_capabilities, "authMethods": []}),
        )
        .await;
        req
    }

    /// Closes the agent's end (as if it exited).
    pub fn close(self) {}
}

pub fn connect(host: Arc<TestHost>) -> (Connection, Peer) {
    connect_with(host, ConnectionOptions::default(), 1 << 20)
}

pub fn connect_with(
    host: Arc<TestHost>,
    options: ConnectionOptions,
    pipe_bytes: usize,
) -> (Connection, Peer) {
    let (client_side, agent_side) = tokio::io::duplex(pipe_bytes);
    let (client_read, client_write) = tokio::io::split(client_side);
    let (agent_read, agent_write) = tokio::io::split(agent_side);
    let conn = Connection::from_streams(client_read, client_write, host, options);
    (
        conn,
        Peer {
            reader: BufReader::new(agent_read),
            writer: agent_write,
        },
    )
}

/// Initializes and opens one session with id `s1` rooted at `cwd`.
pub async fn open_session(
    conn: &Connection,
    peer: &mut Peer,
    caps: Value,
    cwd: &std::path::Path,
) -> acp_client::session::update::SessionId {
    let c = conn.clone();
    let init = tokio::spawn(async move { c.initialize().await });
    peer.accept_initialize(caps).await;
    init.await.unwrap().expect("initialize");
    let c = conn.clone();
    let cwd2 = cwd.to_path_buf();
    let new =
        tokio::spawn(async move { c.new_session(acp_client::SessionParams::new(cwd2)).await });
    let req = peer.recv().await;
    assert_eq!(req["method"], "session/new");
    peer.respond(&req["id"], json!({"sessionId": "s1"})).await;
    new.await.unwrap().expect("session/new").session_id
}

/// Waits for an event matching `pred`.
pub async fn wait_event(
    rx: &mut mpsc::UnboundedReceiver<ClientEvent>,
    mut pred: impl FnMut(&ClientEvent) -> bool,
) -> ClientEvent {
    tokio::time::timeout(WAIT, async {
        loop {
            let e = rx.recv().await.expect("event channel closed");
            if pred(&e) {
                return e;
            }
        }
    })
    .await
    .expect("timed out waiting for an event")
}

/// A permission prompt forwarded by a [`PermissionMode::Manual`] host.
pub type Prompt = (PermissionRequest, oneshot::Sender<PermissionDecision>);

/// Waits for the next permission prompt.
pub async fn next_prompt(prompts: &mut mpsc::UnboundedReceiver<Prompt>) -> Prompt {
    tokio::time::timeout(WAIT, prompts.recv())
        .await
        .expect("timed out waiting for a permission prompt")
        .expect("prompt channel closed")
}

/// Answers a prompt with the option `option_id`.
pub fn choose(answer: oneshot::Sender<PermissionDecision>, option_id: &str) {
    let _ = answer.send(PermissionDecision::Selected {
        option_id: option_id.to_owned(),
    });
}

/// The fake agent playing `scenario`, started in `cwd`.
pub fn fake_agent(scenario: &std::path::Path, cwd: &std::path::Path) -> acp_client::AgentCommand {
    acp_client::AgentCommand::new(acp_testkit::fake_agent_bin().to_string_lossy().into_owned())
        .arg("--scenario")
        .arg(scenario.to_string_lossy().into_owned())
        .cwd(cwd)
}

/// A text content block.
pub fn text(s: &str) -> acp_client::schema::ContentBlock {
    acp_client::schema::ContentBlock::Text(acp_client::schema::TextContent::new(s))
}

/// Everything the agent said in a session, one message per line (to look
/// for the fake agent's reports such as "permission: ..." or
/// "EXPECTATION FAILED").
pub fn agent_text(conn: &Connection, sid: &acp_client::session::update::SessionId) -> String {
    conn.with_session(sid, |s| {
        s.entries()
            .iter()
            .filter_map(|e| match e {
                acp_client::session::Entry::AgentMessage(m) => Some(m.text()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    })
    .expect("unknown session")
}

/// True while `pid` runs. A zombie counts as dead: nothing reaps orphans in
/// some sandboxes.
pub fn pid_alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The chat example's binary (built once per test process).
pub fn chat_example() -> std::path::PathBuf {
    // Examples land in target/<profile>/examples, next to this test's deps/
    // directory. `cargo test --all-targets` builds them as test harnesses
    // instead, so build the real binary once when it is missing.
    static BUILT: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let dir = exe.parent().unwrap().parent().unwrap();
            let path = dir.join("examples").join("chat");
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "-p", "acp-client", "--example", "chat"])
                .status()
                .unwrap();
            assert!(status.success(), "building the chat example failed");
            assert!(
                path.exists(),
                "{} is missing after the build",
                path.display()
            );
            path
        })
        .clone()
}

/// A session of the fake agent, for the review and rewind tests.
pub struct Setup {
    pub conn: Connection,
    pub _host: Arc<TestHost>,
    pub rx: mpsc::UnboundedReceiver<ClientEvent>,
    pub sid: acp_client::session::update::SessionId,
    /// The session's cwd, symlinks resolved (as review paths are).
    pub root: std::path::PathBuf,
    pub _dir: tempfile::TempDir,
}

/// Starts the fake agent on `turns` in a fresh directory holding `files`.
pub async fn start(files: &[(&str, &str)], turns: Value) -> Setup {
    start_with_permission(files, turns, PermissionMode::Pick("allow_once")).await
}

/// [`start`], with permission prompts answered as `permission` says.
pub async fn start_with_permission(
    files: &[(&str, &str)],
    turns: Value,
    permission: PermissionMode,
) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (name, content) in files {
        std::fs::write(root.join(name), content).unwrap();
    }
    let scenario = acp_testkit::write_scenario(&root, &json!({ "turns": turns }));
    let agent =
        acp_client::AgentCommand::new(acp_testkit::fake_agent_bin().to_string_lossy().into_owned())
            .arg("--scenario")
            .arg(scenario.to_string_lossy().into_owned())
            .cwd(&root);
    let (host, rx) = TestHost::new(permission);
    let conn = Connection::spawn(&agent, host.clone(), ConnectionOptions::default()).unwrap();
    conn.initialize().await.unwrap();
    let sid = conn
        .new_session(acp_client::SessionParams::new(&root))
        .await
        .unwrap()
        .session_id;
    Setup {
        conn,
        _host: host,
        rx,
        sid,
        root,
        _dir: dir,
    }
}
