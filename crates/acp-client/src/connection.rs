//! The typed, async connection to one agent.
