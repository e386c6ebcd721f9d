//! Serving the agent: `dispatch` routes every request and notification
//! the agent sends to its handler, `live` holds the state of the
//! connection's live sessions those handlers share, and [`editor_tools`]
//! is the MCP server through which the agent calls the editor's tools.
//!
//! Only [`editor_tools`] is public: an editor sets its options and runs its
//! stdio bridge. The dispatch and the live sessions are the crate's own.

pub(crate) mod dispatch;
pub mod editor_tools;
pub(crate) mod live;
