//! Client-side terminals (`terminal/*`).

use serde::Serialize;

/// Terminal output and lifecycle, for live display in the tool call that
/// embeds the terminal.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum TerminalEvent {}
