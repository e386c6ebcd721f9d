//! The agents themselves: starting and reaping their processes
//! ([`process`]) and, with the `registry` feature, finding and installing
//! them from the ACP registry ([`registry`]).

pub mod process;
#[cfg(feature = "registry")]
pub mod registry;
