//! The msgpack contract between the backend and the Lua plugin, in one
//! place (described in `doc/protocol.md`):
//!
//! - `crate::command::Command`: what Lua asks (`acp.*` requests and
//!   notifications), decoded once by `Command::decode`, which sits above this
//!   module (its payloads belong to the modules that serve them);
//! - [`Event`]: what the backend tells Lua (`require('acp.events').dispatch`),
//!   encoded once by [`Event::encode`];
//! - [`lua`]: the backend's calls into Lua (`acp.edits.fs.read_for_agent`,
//!   `acp.edits.fs.apply`) and their replies, decoded once.
//!
//! Every key Lua sees is snake_case: values are encoded by [`wire::encode`],
//! which also renames the camelCase keys of acp-client's and the ACP
//! schema's types. Past this module everything is typed.

mod event;
mod ids;
pub mod lua;
pub mod wire;

pub use event::{
    Event, FileSyncView, InstalledListing, LoginMethod, RegistryListing, ReviewView,
    MAX_MERGED_TEXT,
};
pub use ids::{ChatId, PromptId};
