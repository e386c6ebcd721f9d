//! The Neovim backend of acp.nvim.
pub mod batcher;
pub mod cli;
pub mod command;
pub mod editor;
pub mod event;
pub mod logging;
pub mod msgpack;
