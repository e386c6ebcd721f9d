//! The editor-agnostic session model, built only from updates.

use serde::Serialize;

/// A fine-grained change to a session model, for incremental rendering.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "change", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SessionChange {}
