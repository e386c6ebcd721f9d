---@mod acp.backend The backend process (`acp-nvim`): discovery, start,
--- handshake, requests, death.
---
--- One backend per Neovim, started on first use with jobstart(rpc=true). Fast
--- calls use vim.rpcrequest; anything that may take time is a notification
--- whose outcome arrives as events (see doc/protocol.md).

local util = require("acp.util")
local config = require("acp.config")

local M = {}

---@class acp.BackendState
---@field job? integer job id == channel id
---@field hello? table the `acp.hello` answer
---@field stopping boolean an exit now is expected
---@field stderr string[] last stderr lines of the process
---@field exit_reported table<integer, boolean> jobs whose death was reported

---@type acp.BackendState
local state = { job = nil, hello = nil, stopping = false, stderr = {}, exit_reported = {} }

--- Most stderr lines kept for messages.
local STDERR_LINES = 20

--- The log file the backend writes.
---@return string
function M.log_file()
  return vim.fn.stdpath("log") .. "/acp.log"
end

--- The backend command: `backend.cmd` from the config, else the release
--- build, else the debug build in the plugin directory.
---@return string[]? cmd, string? err
function M.find_cmd()
  local c = config.options.backend and config.options.backend.cmd
  if type(c) == "string" then
    c = { c }
  end
  if c then
    if vim.fn.executable(c[1]) ~= 1 then
      return nil, ("backend.cmd %q is not an executable file; fix `backend.cmd` in setup()"):format(c[1])
    end
    return vim.deepcopy(c)
  end
  local root = util.plugin_root()
  for _, profile in ipairs({ "release", "debug" }) do
    local bin = ("%s/target/%s/acp-nvim"):format(root, profile)
    if vim.fn.executable(bin) == 1 then
      return { bin }
    end
  end
  return nil, ("backend not built; run `cargo build --release` in %s"):format(root)
end

--- True while a backend process runs.
---@return boolean
function M.running()
  return state.job ~= nil
end

--- The job id (== rpc channel) of the running backend.
---@return integer?
function M.channel()
  return state.job
end

--- The handshake answer of the running backend.
---@return table?
function M.info()
  return state.hello
end

local function on_exit(job, code)
  if state.job ~= job then
    return
  end
  state.job = nil
  state.hello = nil
  -- Installs and listings ran in that backend: they will not answer.
  require("acp.registry").on_backend_exit()
  if state.stopping or state.exit_reported[job] then
    return
  end
  state.exit_reported[job] = true
  -- History still being drawn came before the death: show it first, so a
  -- queued `session_started` cannot mark the chat ready after it died.
  local replay = package.loaded["acp.replay"]
  if replay then
    replay.flush()
  end
  local tail = table.concat(state.stderr, "\n")
  local msg = ("the backend exited (code %d); its log is %s. Run :Acp restart to start it again."):format(
    code,
    M.log_file()
  )
  if tail ~= "" then
    msg = msg .. "\n" .. tail
  end
  util.notify(msg, vim.log.levels.ERROR)
  for _, chat in ipairs(require("acp.chat").list) do
    pcall(chat.on_backend_died, chat, M.log_file())
  end
end

local function on_stderr(_, data)
  for _, line in ipairs(data or {}) do
    if line ~= "" then
      state.stderr[#state.stderr + 1] = line
      if #state.stderr > STDERR_LINES then
        table.remove(state.stderr, 1)
      end
    end
  end
end

local leave_autocmd = false

--- Start the backend and do the handshake.
---@return boolean ok, string? err
function M.start()
  if state.job then
    return true
  end
  local cmd, err = M.find_cmd()
  if not cmd then
    return false, err
  end
  local log_file = M.log_file()
  vim.fn.mkdir(vim.fn.fnamemodify(log_file, ":h"), "p")
  vim.list_extend(cmd, { "--log-file", log_file, "--log-level", config.options.log_level or "info" })
  state.stderr = {}
  state.stopping = false
  local ok, job = pcall(vim.fn.jobstart, cmd, { rpc = true, on_exit = on_exit, on_stderr = on_stderr })
  if not ok or type(job) ~= "number" or job <= 0 then
    return false, ("could not start the backend %s: %s"):format(cmd[1], tostring(job))
  end
  state.job = job
  local hok, hello = pcall(vim.rpcrequest, job, "acp.hello", { plugin_version = require("acp.version") })
  if not hok or type(hello) ~= "table" then
    M.stop()
    local tail = table.concat(state.stderr, "\n")
    return false,
      ("the backend %s did not answer the handshake (%s); see %s%s"):format(
        cmd[1],
        tostring(hello),
        log_file,
        tail ~= "" and ("\n" .. tail) or ""
      )
  end
  if not hello.ok then
    M.stop()
    return false, tostring(hello.message or "the backend refused this plugin version")
  end
  state.hello = hello
  if not leave_autocmd then
    leave_autocmd = true
    vim.api.nvim_create_autocmd("VimLeavePre", {
      group = vim.api.nvim_create_augroup("acp_backend", { clear = true }),
      callback = function()
        M.stop()
      end,
    })
  end
  return true
end

--- The backend, started if needed. Errors are returned, not raised.
---@return boolean ok, string? err
function M.ensure()
  if state.job then
    return true
  end
  return M.start()
end

--- A fast request. Returns nil and an error sentence on failure.
---@param method string
---@param params table
---@return any result, string? err
function M.request(method, params)
  if not state.job then
    return nil, "the backend is not running; run :Acp restart"
  end
  local ok, res = pcall(vim.rpcrequest, state.job, method, params)
  if not ok then
    return nil, tostring(res)
  end
  return res
end

--- A notification (never blocks). Returns false when there is no backend.
---@param method string
---@param params table
---@return boolean
function M.notify(method, params)
  if not state.job then
    util.notify("the backend is not running; run :Acp restart", vim.log.levels.ERROR)
    return false
  end
  return pcall(vim.rpcnotify, state.job, method, params)
end

--- Stop the backend (agents are shut down by it first).
function M.stop()
  local job = state.job
  if not job then
    return
  end
  state.stopping = true
  pcall(vim.rpcrequest, job, "acp.shutdown", vim.empty_dict())
  pcall(vim.fn.jobstop, job)
  -- Wait for the exit so a restart never overlaps two backends.
  vim.fn.jobwait({ job }, 2000)
  state.job = nil
  state.hello = nil
  require("acp.registry").on_backend_exit()
end

--- Stop the backend if it runs, start a new one and open every chat again
--- (with new sessions).
---@return boolean ok, string? err
function M.restart()
  M.stop()
  local ok, err = M.start()
  if not ok then
    return false, err
  end
  for _, chat in ipairs(require("acp.chat").list) do
    chat:reopen()
  end
  return true
end

return M
