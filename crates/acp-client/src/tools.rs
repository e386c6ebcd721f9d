//! Services the agent and the editor use beside the chat: the agent's
//! `terminal/*` processes ([`terminal`]) and the workspace file index behind
//! `@` mentions ([`index`]).

pub mod index;
pub mod terminal;
