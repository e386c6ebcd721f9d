//! Editor-side client for the [Agent Client Protocol](https://agentclientprotocol.com) (ACP).

pub mod codec;
pub mod connection;
mod dispatch;
pub mod error;
pub mod fs;
pub mod host;
pub mod methods;
pub mod permission;
pub mod process;
pub mod rpc;
pub mod session;
pub mod terminal;
mod transport;
pub mod update;

/// The official ACP v1 schema types this crate builds on.
pub use agent_client_protocol_schema::v1 as schema;

pub use connection::{
    AgentInfo, ConfigValue, Connection, ConnectionOptions, SessionPage, SessionParams,
    SessionStarted, StopReason,
};
pub use error::{Error, Result};
pub use host::{ClientEvent, EditorHost, HostCapabilities};
pub use process::AgentCommand;
