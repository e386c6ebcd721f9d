---@mod acp.rpc.hooks What the layers above the transport want to hear of the
--- backend's life, registered by them when they load.
---
--- The transport (acp.rpc.backend) requires no UI: like Neovim's
--- `vim.lsp.rpc`, it calls back instead. A module that keeps state tied to
--- one backend (the review, the registry's installs, the chats) registers
--- here under its own name, so loading it twice replaces its hook. A module
--- never loaded has nothing to clean up, and is not loaded by the transport.
--- Kept apart from acp.rpc.backend so that registering loads no backend.

local M = {}

---@alias acp.BackendHookKind
---| "stopped" the backend stopped or exited, asked for or not: fun(quiet: boolean): integer? (files whose review ended)
---| "died" it exited unasked, after its greeting: fun(log_file: string)
---| "restarted" `:Acp restart` started a new one: fun()

---@type table<acp.BackendHookKind, {name: string, fn: function}[]>
local hooks = { stopped = {}, died = {}, restarted = {} }

--- Register (or replace) `name`'s hook of a kind; hooks run in the order
--- they were first registered.
---@param kind acp.BackendHookKind
---@param name string the registering module
---@param fn function
function M.on(kind, name, fn)
  local list = hooks[kind]
  for _, h in ipairs(list) do
    if h.name == name then
      h.fn = fn
      return
    end
  end
  list[#list + 1] = { name = name, fn = fn }
end

--- Run every hook of a kind; a failing hook does not stop the others (its
--- error is shown).
--- Returns the sum of the numbers they returned.
---@param kind acp.BackendHookKind
---@return integer
function M.run(kind, ...)
  local sum = 0
  for _, h in ipairs(hooks[kind]) do
    local ok, n = pcall(h.fn, ...)
    if not ok then
      require("acp.util").notify(("%s hook failed: %s"):format(kind, tostring(n)), vim.log.levels.ERROR)
    elseif type(n) == "number" then
      -- The hooks return counts (reviews ended): integers.
      sum = sum + n --[[@as integer]]
    end
  end
  return sum
end

return M
