//! The msgpack-RPC handler: a router, not a worker.
//!
//! nvim-rs runs notification handlers one at a time, in order, and holds
//! back later messages while one runs. So each message is decoded once
//! ([`Command::decode`]) and forwarded to the command loop; nothing here
//! waits for an agent. Only `acp.hello` is answered here (in the reply to
//! a request, or by calling the plugin back for a notification), and
//! `acp.shutdown` waits for the agents to stop (it is a request, which
//! nvim-rs runs on its own task).

use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_io::AsyncWrite;
use nvim_rs::{Handler, Neovim};
use rmpv::Value;
use tokio::sync::{mpsc, oneshot};

use crate::backend::Routed;
use crate::batcher::EventQueue;
use crate::command::{BadCommand, Command};
use crate::files::{FileQuery, WorkspaceFiles};
use crate::msgpack;
use crate::prompts::Prompts;
use crate::protocol::{wire, Event};

/// How long `acp.shutdown` waits for the agents before answering anyway.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);
/// What the answer to an `acp.hello` notification calls in Neovim: the
/// plugin greets with a notification so that `:Acp` never waits for the
/// backend to start (issue #30).
const HELLO_LUA: &str = "require('acp.rpc.backend').on_hello(...)";
/// How long a review query waits for the command loop (which never waits
/// for anything slow, so this is only a guard).
const QUERY_WAIT: Duration = Duration::from_secs(5);

/// What `acp.hello` reports.
#[derive(Debug, Clone)]
pub struct HelloInfo {
    /// This backend's version (the crate version).
    pub backend_version: String,
    /// The log file, when logging goes to one.
    pub log_file: Option<PathBuf>,
}

impl HelloInfo {
    /// The version of this build.
    pub fn new(log_file: Option<PathBuf>) -> Self {
        Self {
            backend_version: env!("CARGO_PKG_VERSION").into(),
            log_file,
        }
    }

    /// The answer to `acp.hello {plugin_version}`.
    pub fn reply(&self, plugin_version: &str) -> Value {
        let ok = plugin_version == self.backend_version;
        wire::encode(&HelloReply {
            backend_version: &self.backend_version,
            ok,
            log_file: self
                .log_file
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
            // `:Acp build` downloads the backend of the plugin's version
            // (or builds it with cargo): the one fix that works for users
            // with and without a Rust toolchain.
            message: (!ok).then(|| {
                format!(
                    "acp.nvim backend {} does not match plugin {plugin_version}; run :Acp build to install the backend for {plugin_version}",
                    self.backend_version
                )
            }),
        })
    }
}

/// The answer to `acp.hello`.
#[derive(Debug, serde::Serialize)]
struct HelloReply<'a> {
    backend_version: &'a str,
    ok: bool,
    /// Absent when logging goes nowhere.
    log_file: Option<String>,
    /// Why the versions differ, with the fix.
    message: Option<String>,
}

/// Routes the plugin's messages to the command loop.
pub struct NvimHandler<W> {
    tx: mpsc::UnboundedSender<Routed>,
    events: EventQueue,
    hello: Arc<HelloInfo>,
    files: Arc<WorkspaceFiles>,
    prompts: Arc<Prompts>,
    _writer: PhantomData<fn() -> W>,
}

impl<W> Clone for NvimHandler<W> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            events: self.events.clone(),
            hello: self.hello.clone(),
            files: self.files.clone(),
            prompts: self.prompts.clone(),
            _writer: PhantomData,
        }
    }
}

impl<W> std::fmt::Debug for NvimHandler<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NvimHandler")
            .field("hello", &self.hello)
            .finish_non_exhaustive()
    }
}

/// What the handler does with one message.
#[derive(Debug)]
pub enum Reply {
    /// Answer at once with this value.
    Now(Value),
    /// Answer with an error (bad input).
    Error(Value),
    /// Wait for the command loop, then answer `true`.
    AfterShutdown(oneshot::Receiver<()>),
    /// Answer from the workspace file index (`acp.complete_files`).
    Files(Arc<WorkspaceFiles>, FileQuery),
    /// Wait for the command loop's answer (review queries).
    Later(oneshot::Receiver<Value>),
}

impl<W> NvimHandler<W> {
    /// A handler forwarding to `tx`; bad input is also reported on `events`.
    pub fn new(tx: mpsc::UnboundedSender<Routed>, events: EventQueue, hello: HelloInfo) -> Self {
        Self {
            tx,
            events,
            hello: Arc::new(hello),
            files: Arc::new(WorkspaceFiles::new()),
            prompts: Arc::new(Prompts::new()),
            _writer: PhantomData,
        }
    }

    /// Answers elicitations from `prompts` (the set the agents register
    /// them in).
    pub fn with_prompts(mut self, prompts: Arc<Prompts>) -> Self {
        self.prompts = prompts;
        self
    }

    fn forward(&self, routed: Routed) {
        if self.tx.send(routed).is_err() {
            tracing::warn!("command dropped: the command loop has stopped");
        }
    }

    fn warn(&self, bad: &BadCommand) {
        tracing::warn!("{bad}");
        self.events.push(Event::Warning {
            chat_id: None,
            message: bad.to_string(),
        });
    }

    /// Handles a request: decode, forward, and say how to answer.
    pub fn request(&self, method: &str, args: &[Value]) -> Reply {
        match Command::decode(method, args) {
            Err(bad) => {
                self.warn(&bad);
                Reply::Error(Value::from(bad.to_string()))
            }
            Ok(Command::Hello { plugin_version }) => Reply::Now(self.greet(&plugin_version)),
            Ok(Command::Shutdown) => {
                let (ack, done) = oneshot::channel();
                self.forward(Routed::Shutdown(Some(ack)));
                Reply::AfterShutdown(done)
            }
            Ok(Command::CompleteFiles(q)) => Reply::Files(self.files.clone(), q),
            // Answered here, not in the command loop: the check against the
            // form is quick and its problems go back to the caller.
            Ok(Command::ElicitationRespond {
                request_id,
                response,
            }) => match self.prompts.elicitations.answer(request_id, response) {
                Ok(()) => Reply::Now(Value::Boolean(true)),
                Err(message) => Reply::Error(Value::from(message)),
            },
            Ok(Command::Review(query)) if query.is_query() => {
                let (tx, rx) = oneshot::channel();
                self.forward(Routed::Query(query, tx));
                Reply::Later(rx)
            }
            Ok(cmd) => {
                self.forward(Routed::Command(cmd));
                Reply::Now(Value::Boolean(true))
            }
        }
    }

    /// The answer to `acp.hello`, logged.
    fn greet(&self, plugin_version: &str) -> Value {
        let reply = self.hello.reply(plugin_version);
        if msgpack::field(&reply, "ok").and_then(Value::as_bool) != Some(true) {
            tracing::warn!(plugin_version, "plugin and backend versions differ");
        } else {
            tracing::info!(plugin_version, "handshake done");
        }
        reply
    }

    /// Handles a notification: decode and forward. Returns the answer to
    /// an `acp.hello` notification, which the caller sends to
    /// `acp.rpc.backend.on_hello`.
    pub fn notify(&self, method: &str, args: &[Value]) -> Option<Value> {
        match Command::decode(method, args) {
            Err(bad) => {
                self.warn(&bad);
                if let Some(chat_id) = Command::open_chat_id(method, args) {
                    self.events.push(Event::OpenFailed {
                        chat_id,
                        message: bad.to_string(),
                        stderr_tail: None,
                    });
                }
            }
            Ok(cmd) if cmd.needs_request() => self.warn(&BadCommand {
                method: method.to_owned(),
                reason: "it must be sent with vim.rpcrequest, it has an answer".into(),
            }),
            Ok(Command::Hello { plugin_version }) => return Some(self.greet(&plugin_version)),
            Ok(Command::Shutdown) => self.forward(Routed::Shutdown(None)),
            Ok(cmd) => self.forward(Routed::Command(cmd)),
        }
        None
    }
}

#[async_trait]
impl<W: AsyncWrite + Send + Sync + Unpin + 'static> Handler for NvimHandler<W> {
    type Writer = W;

    async fn handle_request(
        &self,
        name: String,
        args: Vec<Value>,
        _neovim: Neovim<W>,
    ) -> Result<Value, Value> {
        match self.request(&name, &args) {
            Reply::Now(v) => Ok(v),
            Reply::Error(e) => Err(e),
            Reply::AfterShutdown(done) => {
                if tokio::time::timeout(SHUTDOWN_WAIT, done).await.is_err() {
                    tracing::warn!("agents did not stop within {SHUTDOWN_WAIT:?}");
                }
                Ok(Value::Boolean(true))
            }
            Reply::Files(files, q) => files.complete(q).await,
            Reply::Later(answer) => match tokio::time::timeout(QUERY_WAIT, answer).await {
                Ok(Ok(value)) => Ok(value),
                _ => Err(Value::from(format!(
                    "acp.nvim backend did not answer `{name}`; see :Acp log"
                ))),
            },
        }
    }

    async fn handle_notify(&self, name: String, args: Vec<Value>, neovim: Neovim<W>) {
        if let Some(reply) = self.notify(&name, &args) {
            // On a task of its own: the handler holds back later messages
            // (the `acp.open` sent right behind the greeting) while it runs.
            tokio::spawn(async move {
                if let Err(e) = neovim.exec_lua(HELLO_LUA, vec![reply]).await {
                    tracing::warn!("could not answer acp.hello: {e}");
                }
            });
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // Tests may unwrap (house rule).
mod tests {
    use super::*;
    use crate::command::{ChatId, ReviewCommand};
    use crate::msgpack::{from_json, map};
    use serde_json::json;

    fn hello_info() -> HelloInfo {
        HelloInfo {
            backend_version: "0.1.0".into(),
            log_file: Some("/tmp/acp.log".into()),
        }
    }

    fn handler() -> (
        NvimHandler<Vec<u8>>,
        mpsc::UnboundedReceiver<Routed>,
        crate::batcher::EventReceiver,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (events, events_rx) = EventQueue::new();
        (NvimHandler::new(tx, events, hello_info()), rx, events_rx)
    }

    #[test]
    fn hello_with_the_same_version_is_ok() {
        let reply = hello_info().reply("0.1.0");
        assert_eq!(msgpack::field(&reply, "ok"), Some(&Value::from(true)));
        assert_eq!(
            msgpack::field(&reply, "log_file").and_then(Value::as_str),
            Some("/tmp/acp.log")
        );
        assert!(msgpack::field(&reply, "message").is_none());
    }

    #[test]
    fn hello_with_another_version_says_how_to_rebuild() {
        let reply = hello_info().reply("0.2.0");
        assert_eq!(msgpack::field(&reply, "ok"), Some(&Value::from(false)));
        assert_eq!(
            msgpack::field(&reply, "message").and_then(Value::as_str),
            Some("acp.nvim backend 0.1.0 does not match plugin 0.2.0; run :Acp build to install the backend for 0.2.0")
        );
    }

    #[test]
    fn the_lua_side_declares_the_version_of_this_crate() {
        // lua/acp/version.lua is what the plugin sends in acp.hello and what
        // `:Acp build` downloads; a release tag must move both together.
        let lua = include_str!("../../../lua/acp/version.lua");
        let declared = lua
            .lines()
            .filter(|l| !l.trim_start().starts_with("--"))
            .find_map(|l| l.split('"').nth(1));
        assert_eq!(declared, Some(env!("CARGO_PKG_VERSION")));
    }

    #[test]
    fn requests_are_forwarded_and_answered_true_at_once() {
        let (h, mut rx, _events) = handler();
        let reply = h.request("acp.close", &[map([("chat_id", Value::from("c"))])]);
        assert!(matches!(reply, Reply::Now(Value::Boolean(true))));
        match rx.try_recv().unwrap() {
            Routed::Command(Command::Close { chat_id }) => assert_eq!(chat_id, ChatId("c".into())),
            other => panic!("unexpected {other:?}"),
        }
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn hello_is_answered_without_the_command_loop() {
        let (h, mut rx, _events) = handler();
        let reply = h.request(
            "acp.hello",
            &[from_json(&json!({"plugin_version": "0.1.0"}))],
        );
        assert!(matches!(reply, Reply::Now(Value::Map(_))));
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn hello_as_a_notification_is_answered_without_the_command_loop() {
        let (h, mut rx, mut events) = handler();
        let reply = h
            .notify(
                "acp.hello",
                &[from_json(&json!({"plugin_version": "0.2.0"}))],
            )
            .unwrap();
        assert_eq!(
            msgpack::field(&reply, "ok").and_then(Value::as_bool),
            Some(false)
        );
        assert!(rx.try_recv().is_err());
        assert!(
            events.try_recv().is_err(),
            "no warning: a notification is fine"
        );
        // Any other notification has no answer.
        assert!(h
            .notify("acp.close", &[from_json(&json!({"chat_id": "c"}))])
            .is_none());
    }

    #[test]
    fn bad_input_is_an_error_reply_and_a_warning_event() {
        let (h, mut rx, mut events) = handler();
        let reply = h.request("acp.open", &[Value::from(3)]);
        assert!(matches!(reply, Reply::Error(Value::String(_))));
        assert!(rx.try_recv().is_err());
        match events.try_recv().unwrap() {
            Event::Warning {
                chat_id: None,
                message,
            } => assert!(message.contains("acp.open")),
            other => panic!("unexpected {other:?}"),
        }

        h.notify("acp.prompt", &[from_json(&json!({"chat_id": "c"}))]);
        assert!(rx.try_recv().is_err());
        assert!(matches!(events.try_recv().unwrap(), Event::Warning { .. }));
    }

    #[test]
    fn an_open_notification_that_cannot_be_read_fails_its_chat() {
        let (h, mut rx, mut events) = handler();
        h.notify("acp.open", &[from_json(&json!({"chat_id": "7", "cwd": 3}))]);
        assert!(rx.try_recv().is_err(), "nothing reached the command loop");
        assert!(matches!(events.try_recv().unwrap(), Event::Warning { .. }));
        match events.try_recv().unwrap() {
            Event::OpenFailed {
                chat_id, message, ..
            } => {
                assert_eq!(chat_id, ChatId::from("7"));
                assert!(message.contains("acp.open"), "{message}");
            }
            other => panic!("unexpected {other:?}"),
        }
        // Without a chat id there is no chat to fail: the warning only.
        h.notify("acp.open", &[from_json(&json!({"cwd": 3}))]);
        assert!(matches!(events.try_recv().unwrap(), Event::Warning { .. }));
        assert!(events.try_recv().is_err());
    }

    #[test]
    fn notifications_keep_their_order() {
        let (h, mut rx, _events) = handler();
        h.notify(
            "acp.prompt",
            &[from_json(
                &json!({"chat_id": "c", "blocks": [{"type": "text", "text": "x"}]}),
            )],
        );
        h.notify("acp.cancel", &[from_json(&json!({"chat_id": "c"}))]);
        assert!(matches!(
            rx.try_recv().unwrap(),
            Routed::Command(Command::Prompt { .. })
        ));
        assert!(matches!(
            rx.try_recv().unwrap(),
            Routed::Command(Command::Cancel { .. })
        ));
    }

    #[test]
    fn file_completion_is_answered_by_the_handler() {
        let (h, mut rx, mut events) = handler();
        let reply = h.request(
            "acp.complete_files",
            &[from_json(&json!({"cwd": "/tmp", "query": "x"}))],
        );
        assert!(matches!(reply, Reply::Files(_, FileQuery { ref query, .. }) if query == "x"));
        assert!(rx.try_recv().is_err(), "the command loop is not involved");
        h.notify(
            "acp.complete_files",
            &[from_json(&json!({"cwd": "/tmp", "query": "x"}))],
        );
        assert!(rx.try_recv().is_err());
        assert!(matches!(events.try_recv().unwrap(), Event::Warning { .. }));
    }

    #[test]
    fn queries_wait_for_the_loop() {
        let (h, mut rx, _events) = handler();
        let reply = h.request("acp.review_files", &[from_json(&json!({"chat_id": "c"}))]);
        let Reply::Later(answer) = reply else {
            panic!("queries wait for the command loop");
        };
        match rx.try_recv().unwrap() {
            Routed::Query(ReviewCommand::Files { chat_id }, tx) => {
                assert_eq!(chat_id, ChatId("c".into()));
                tx.send(Value::Array(vec![])).unwrap();
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(answer.blocking_recv().unwrap(), Value::Array(vec![]));
    }

    #[test]
    fn review_decisions_go_to_the_command_loop_and_queries_need_a_request() {
        let (h, mut rx, mut events) = handler();
        h.notify(
            "acp.review_accept",
            &[from_json(
                &json!({"chat_id": "c", "path": "/p/a", "hunks": [1]}),
            )],
        );
        assert!(matches!(
            rx.try_recv().unwrap(),
            Routed::Command(Command::Review(ReviewCommand::Accept { .. }))
        ));
        h.notify("acp.review_files", &[from_json(&json!({"chat_id": "c"}))]);
        assert!(rx.try_recv().is_err());
        assert!(matches!(events.try_recv().unwrap(), Event::Warning { .. }));
    }

    #[tokio::test]
    async fn shutdown_waits_for_the_command_loop() {
        let (h, mut rx, _events) = handler();
        let Reply::AfterShutdown(done) = h.request("acp.shutdown", &[]) else {
            panic!("shutdown must wait");
        };
        match rx.try_recv().unwrap() {
            Routed::Shutdown(Some(ack)) => ack.send(()).unwrap(),
            other => panic!("unexpected {other:?}"),
        }
        done.await.unwrap();
    }
}
