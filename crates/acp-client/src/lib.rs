//! Editor-side client for the [Agent Client Protocol](https://agentclientprotocol.com) (ACP).
//!
//! ACP is JSON-RPC 2.0 over the stdio of an AI coding agent (claude-agent-acp,
//! codex-acp, Gemini CLI, Goose, OpenCode...). This crate is the editor's
//! half, with nothing editor-specific in it:
//!
//! - spawns and reaps agent processes ([`agents::process`]): own process
//!   group, the full environment, stderr drained into a bounded tail for
//!   error messages;
//! - speaks the protocol ([`Connection`]): typed async calls for every client
//!   method, many requests in flight, `$/cancel_request` both ways, exactly one
//!   reply per agent request;
//! - decodes leniently ([`session::update`]): unknown update kinds, content
//!   types, statuses and option kinds are kept as raw JSON instead of
//!   breaking the turn;
//! - keeps a session model ([`session`]) built only from updates, and emits
//!   fine-grained [`session::SessionChange`]s so a UI can render
//!   incrementally;
//! - serves the agent's requests: permission prompts with a scoped memory of
//!   "always" answers ([`policy::permission`]), `fs/*` sandboxed to the
//!   session's workspace ([`edits::fs`]), and `terminal/*` with real
//!   processes ([`tools::terminal`]);
//! - tracks every file an agent changes, from `fs/*` writes, tool-call diffs
//!   and a file watcher, as hunks an editor can accept or reject one by one
//!   ([`edits::hunks`]), with a three-way merge for buffers holding unsaved edits
//!   ([`edits::merge`]);
//! - keeps an index of the workspace's files for `@` mentions
//!   ([`tools::index`]), honouring `.gitignore` and kept fresh by a file
//!   watcher;
//! - with the `registry` feature (on by default), loads the ACP agent
//!   registry and installs its agents ([`agents::registry`]).
//!
//! # Features
//!
//! - `registry` (default): the `registry` module, the agent index and the
//!   installer (npm, virtualenv, binary archives), with its HTTP, zip, tar,
//!   bzip2 and sha2 dependencies. An editor that starts agents from its own
//!   configuration builds with `default-features = false` and compiles none
//!   of them.
//!
//! An editor implements [`EditorHost`]: a permission prompt is the only
//! required method. Buffer-aware reads and writes and event rendering are
//! optional overrides.
//!
//! What it does not do: render anything, store transcripts, or talk to
//! models. To see the traffic, enable `tracing` at `debug` for the
//! `acp_client` target; the agent's stderr is logged under `acp::agent_stderr`.
//!
//! # What is public, and why
//!
//! Only what an editor uses; one line per group:
//!
//! - [`Connection`], [`ConnectionOptions`] and the rest of [`connection`]
//!   (session params, stop reasons, agent info): the typed calls an editor
//!   makes and how it tunes them.
//! - [`EditorHost`], [`ClientEvent`], [`HostCapabilities`] ([`edits::host`]):
//!   the one trait an editor implements and the events it is sent.
//! - [`session`] ([`session::SessionState`], [`session::SessionChange`]) and
//!   [`session::update`]: the session model and the decoded updates an editor
//!   renders.
//! - [`policy::permission`] and [`policy::elicitation`]: the questions an
//!   agent asks the user, and the editor's answers.
//! - [`edits`] ([`Review`] and the rewind types, [`edits::hunks`],
//!   [`edits::buffer_sync`], [`edits::merge`], [`edits::checkpoint`],
//!   [`edits::fs`]): the agent's file changes an editor shows, merges into
//!   its buffers and lets the user accept or reject.
//! - [`tools::terminal`] and [`tools::index`]: the agent's terminals, whose
//!   output an editor shows, and the file index behind `@` mentions.
//! - [`agents::process`] ([`AgentCommand`]): how an agent is started;
//!   [`agents::registry`] (feature `registry`): finding and installing agents.
//! - [`serve::editor_tools`]: the options of the editor's MCP server and the
//!   stdio bridge an editor runs from its own binary.
//! - [`path::CanonicalPath`]: a file's one key, named by the edits layer's
//!   types.
//! - [`error`]: [`Error`] and [`Result`], and the JSON-RPC objects an editor
//!   can meet: [`error::RpcError`] with its [`error::codes`], and
//!   [`error::RequestId`] (an elicitation scoped to a request names it).
//! - [`schema`]: the ACP schema types the API is written in, so an editor
//!   builds against the same version.
//!
//! Private: the JSON-RPC engine, its line framing, the envelope codec and the
//! method names (`rpc`), the routing of the agent's requests and the live
//! sessions' shared state (the rest of `serve`). The crate's own tests,
//! benches and fuzz targets reach the framing and the envelope decode
//! through a `wire` module that is hidden from these docs and unstable:
//! it may change in any release, and an editor has no use for it.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//! use acp_client::policy::permission::{PermissionDecision, PermissionRequest};
//! use acp_client::{schema, AgentCommand, ClientEvent, Connection, ConnectionOptions,
//!                  EditorHost, SessionParams};
//!
//! struct Host;
//!
//! #[async_trait::async_trait]
//! impl EditorHost for Host {
//!     async fn request_permission(&self, request: PermissionRequest) -> PermissionDecision {
//!         // A real editor asks the user; this one allows once.
//!         match request.options.iter().find(|o| o.kind.as_str() == "allow_once") {
//!             Some(o) => PermissionDecision::Selected { option_id: o.option_id.clone() },
//!             None => PermissionDecision::Cancelled,
//!         }
//!     }
//!     fn on_event(&self, event: ClientEvent) {
//!         println!("{}", serde_json::to_string(&event).unwrap_or_default());
//!     }
//! }
//!
//! # async fn run() -> acp_client::Result<()> {
//! let agent = AgentCommand::new("claude-agent-acp");
//! let conn = Connection::spawn(&agent, Arc::new(Host), ConnectionOptions::default())?;
//! conn.initialize().await?;
//! let session = conn.new_session(SessionParams::new("/path/to/project")).await?;
//! let hello = schema::ContentBlock::Text(schema::TextContent::new("Explain this repo"));
//! let stop = conn.prompt(&session.session_id, vec![hello]).await?;
//! println!("turn ended: {}", stop.as_str());
//! conn.shutdown().await;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod agents;
pub mod connection;
mod disk;
pub mod edits;
pub mod error;
mod options;
pub mod path;
pub mod policy;
mod rpc;
pub mod serve;
pub mod session;
pub mod tools;
#[doc(hidden)]
pub mod wire;

/// The official ACP v1 schema types this crate builds on.
pub use agent_client_protocol_schema::v1 as schema;

pub use agents::process::AgentCommand;
pub use connection::{
    env_denied, AgentInfo, ConfigValue, Connection, ConnectionOptions, ProtocolVersion,
    SessionPage, SessionParams, SessionStarted, StopReason, SystemPrompt, SystemPromptMode,
    SystemPromptSupport, DENIED_ENV_DEFAULT,
};
pub use edits::host::{ClientEvent, EditorHost, HostCapabilities};
pub use edits::review::{Review, RewindFile, RewindPlan, Rewound};
pub use error::{Error, Result};
