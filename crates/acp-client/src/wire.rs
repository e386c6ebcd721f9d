//! Unstable: the JSON-RPC wire internals, for this crate's own tests,
//! benches and fuzz targets only. Not part of the public API, hidden from
//! the docs, and free to change in any release.
//!
//! The framing (one message a line, a line-length limit) and the envelope
//! decode are tested from outside the crate, on bytes no agent would send
//! (the property model, the fuzz targets, the transport bench), so they are
//! reachable here. An editor never needs them: it talks to an agent through
//! [`Connection`](crate::Connection), and its limits are set in
//! [`ConnectionOptions`](crate::ConnectionOptions).

pub use crate::rpc::codec::{LineReader, DEFAULT_MAX_LINE_BYTES};
pub use crate::rpc::{notification_params, DecodeError, Incoming};
