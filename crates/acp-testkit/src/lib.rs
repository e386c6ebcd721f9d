//! Scripted fake ACP agent and test helpers.
