---@mod acp.agents.auth Logging in to an agent that answered `auth_required`.
---
--- The agent's auth methods are offered with vim.ui.select. An `agent`-type
--- method (the default type) opens the chat again with `auth_method_id`: the
--- backend sends `authenticate`, then `session/new`. A `terminal`-type
--- method runs the agent's own command with the method's `args` and `env` in
--- a terminal split; when it exits 0 the chat opens again (a new agent
--- process, which finds the login).

local api = vim.api
local util = require("acp.util")

local M = {}

--- The method's type: "agent" unless it says otherwise.
---@param method table
---@return string
function M.kind(method)
  local t = method.type
  return type(t) == "string" and t or "agent"
end

---@param method table
---@return string
local function describe(method)
  local name = method.name or method.id or "?"
  local desc = method.description
  local text = tostring(name)
  if type(desc) == "string" and desc ~= "" then
    text = text .. ": " .. desc
  end
  if M.kind(method) == "terminal" then
    text = text .. " (in a terminal)"
  end
  return text
end

--- Offer the chat's auth methods; the chosen one logs in and reopens the chat.
---@param chat acp.Chat
function M.choose(chat)
  local methods = chat.auth_methods or {}
  if #methods == 0 then
    util.notify(
      ("%s offers no login method; log in with its own command, then :Acp new %s"):format(
        chat.agent.name,
        chat.agent.name
      ),
      vim.log.levels.WARN
    )
    return
  end
  vim.ui.select(methods, {
    prompt = ("acp.nvim: log in to %s"):format(chat.agent.name),
    format_item = describe,
  }, function(method)
    if method then
      M.login(chat, method)
    end
  end)
end

--- Log in with one method.
---@param chat acp.Chat
---@param method table
---@return boolean ok, string? err
function M.login(chat, method)
  if chat.status == "closed" then
    return false, "the chat is closed"
  end
  if M.kind(method) == "terminal" then
    return M.terminal(chat, method)
  end
  local id = method.id
  chat.transcript.view:batch(function()
    chat.transcript:note(("— logging in with %s —"):format(describe(method)))
  end)
  return chat:start({ auth_method_id = id })
end

--- Run the agent's login command (its `cmd` plus the method's `args`, with
--- its `env`) in a terminal split; reopen the chat when it exits 0. A method
--- of an older agent (marked `_meta["terminal-auth"]`) names its own
--- program: the backend passes it as `command`, run with the `args`.
---@param chat acp.Chat
---@param method table
---@return boolean ok, string? err
function M.terminal(chat, method)
  local cmd = method.command and { method.command } or vim.deepcopy(chat.agent.cmd or {})
  if #cmd == 0 then
    return false, "the agent has no command to log in with"
  end
  for _, a in ipairs(method.args or {}) do
    cmd[#cmd + 1] = tostring(a)
  end
  local env = vim.deepcopy(chat.agent.env or {})
  for k, v in pairs(method.env or {}) do
    env[k] = tostring(v)
  end
  vim.cmd("botright split")
  local win = api.nvim_get_current_win()
  local buf = api.nvim_create_buf(false, true)
  api.nvim_win_set_buf(win, buf)
  local opts = {
    cwd = chat.agent.cwd or chat.cwd,
    env = next(env) and env or nil,
    on_exit = function(_, code)
      vim.schedule(function()
        M.terminal_done(chat, code, win)
      end)
    end,
  }
  local ok, job
  if vim.fn.has("nvim-0.11") == 1 then
    opts.term = true
    ok, job = pcall(vim.fn.jobstart, cmd, opts)
  else
    ok, job = pcall(vim.fn.termopen, cmd, opts)
  end
  if not ok or type(job) ~= "number" or job <= 0 then
    pcall(api.nvim_win_close, win, true)
    local err = ("could not run the login command %s: %s"):format(table.concat(cmd, " "), tostring(job))
    util.notify(err, vim.log.levels.ERROR)
    return false, err
  end
  chat.transcript.view:batch(function()
    chat.transcript:note(("— logging in: %s runs in the terminal below —"):format(table.concat(cmd, " ")))
  end)
  vim.cmd("startinsert")
  return true
end

--- The login command exited.
---@param chat acp.Chat
---@param code integer
---@param win integer the terminal window
function M.terminal_done(chat, code, win)
  if chat.status == "closed" then
    return
  end
  if code ~= 0 then
    chat.transcript.view:batch(function()
      chat.transcript:error(
        ("the login command exited with code %d; read its terminal, then :Acp login to try again"):format(code)
      )
    end)
    return
  end
  if api.nvim_win_is_valid(win) then
    local buf = api.nvim_win_get_buf(win)
    pcall(api.nvim_win_close, win, true)
    pcall(api.nvim_buf_delete, buf, { force = true })
  end
  chat.transcript.view:batch(function()
    chat.transcript:note("— logged in; reconnecting —")
  end)
  chat:start()
end

return M
