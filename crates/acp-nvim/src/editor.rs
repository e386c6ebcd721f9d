//! Calls from the backend into the Lua plugin.
//!
//! Everything the backend asks of Neovim goes through [`Editor`]: the event
//! batches and the buffer-aware file access. The real implementation calls
//! `nvim_exec_lua` through nvim-rs; tests use an in-memory fake.

use std::fmt;

use async_trait::async_trait;
use futures_io::AsyncWrite;
use nvim_rs::Neovim;
use rmpv::Value;

/// Lua code run for one batch of events.
pub const DISPATCH_LUA: &str = "require('acp.events').dispatch(...)";
/// Lua code run for an agent's read of a file Neovim may have a buffer of.
pub const FS_READ_LUA: &str = "return require('acp.edits.fs').read_for_agent(...)";
/// Lua code run for the one instruction of a write to such a file.
pub const FS_APPLY_LUA: &str = "return require('acp.edits.fs').apply(...)";
/// Lua code run for the editor MCP server's `diagnostics` and `open_buffers`.
pub const EDITOR_STATE_LUA: &str = "return require('acp.edits.editor_tools').state(...)";

/// A call into Neovim failed (Neovim is gone, or the Lua code raised).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LuaError(pub String);

impl fmt::Display for LuaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LuaError {}

/// The Lua side of the protocol, as the backend uses it.
#[async_trait]
pub trait Editor: Send + Sync + 'static {
    /// `require('acp.events').dispatch(events)`: one call per batch.
    async fn dispatch(&self, events: Vec<Value>) -> Result<(), LuaError>;

    /// `require('acp.edits.fs').read_for_agent(args)`: `{text, tick, whole?,
    /// buffer?}`, or nil when no loaded buffer has the path.
    async fn fs_read(&self, args: Value) -> Result<Value, LuaError>;

    /// `require('acp.edits.fs').apply(instruction)`: `{status, revision, ...}`.
    async fn fs_apply(&self, args: Value) -> Result<Value, LuaError>;

    /// `require('acp.edits.editor_tools').state({what, path?})`: the editor's
    /// diagnostics (`what = "diagnostics"`) or open buffers
    /// (`"open_buffers"`) for the editor's MCP server. Nil: not supported.
    async fn editor_state(&self, args: Value) -> Result<Value, LuaError> {
        let _ = args;
        Ok(Value::Nil)
    }
}

/// The running Neovim, reached through nvim-rs.
pub struct NvimEditor<W: AsyncWrite + Send + Unpin + 'static> {
    nvim: Neovim<W>,
}

impl<W: AsyncWrite + Send + Unpin + 'static> fmt::Debug for NvimEditor<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("NvimEditor")
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> NvimEditor<W> {
    /// Wraps the handle nvim-rs gave for the parent Neovim.
    pub fn new(nvim: Neovim<W>) -> Self {
        Self { nvim }
    }

    /// Runs the call in a task of its own: nvim-rs ends its whole I/O loop
    /// (and the backend with it) when Neovim answers a call whose future was
    /// dropped. A hostile agent did just that (issue 25): it sent
    /// `$/cancel_request` for reads the backend was asking Neovim about, and
    /// every chat died. The task keeps waiting for the answer; the caller may
    /// leave.
    async fn exec_lua(&self, code: &'static str, arg: Value) -> Result<Value, LuaError> {
        let nvim = self.nvim.clone();
        tokio::spawn(async move { nvim.exec_lua(code, vec![arg]).await })
            .await
            .map_err(|e| LuaError(format!("the call to Neovim stopped: {e}")))?
            .map_err(|e| LuaError(e.to_string()))
    }
}

#[async_trait]
impl<W: AsyncWrite + Send + Sync + Unpin + 'static> Editor for NvimEditor<W> {
    async fn dispatch(&self, events: Vec<Value>) -> Result<(), LuaError> {
        self.exec_lua(DISPATCH_LUA, Value::Array(events))
            .await
            .map(|_| ())
    }

    async fn fs_read(&self, args: Value) -> Result<Value, LuaError> {
        self.exec_lua(FS_READ_LUA, args).await
    }

    async fn fs_apply(&self, args: Value) -> Result<Value, LuaError> {
        self.exec_lua(FS_APPLY_LUA, args).await
    }

    async fn editor_state(&self, args: Value) -> Result<Value, LuaError> {
        self.exec_lua(EDITOR_STATE_LUA, args).await
    }
}
