---@mod acp.commands The `:Acp` command and its subcommands.

local util = require("acp.util")

local M = {}

---@class acp.Subcommand
---@field run fun(args: string[], cmd?: table) `cmd`: the user command's opts (range, line1, line2)
---@field complete? fun(arglead: string): string[]
---@field desc string

---@type table<string, acp.Subcommand>
M.subcommands = {}

local function current_or_warn()
  local chat = require("acp.chat").current()
  if not chat then
    util.notify("no chat yet; open one with :Acp", vim.log.levels.WARN)
  end
  return chat
end

M.subcommands.new = {
  desc = "open a new chat: :Acp new [agent]",
  run = function(args)
    require("acp").open({ agent = args[1] })
  end,
  complete = function(lead)
    return vim.tbl_filter(function(n)
      return vim.startswith(n, lead)
    end, require("acp.config").agent_names())
  end,
}

M.subcommands.cancel = {
  desc = "cancel the running turn of the current chat",
  run = function()
    require("acp").cancel()
  end,
}

M.subcommands.close = {
  desc = "close the current chat (ends its session)",
  run = function()
    local chat = current_or_warn()
    if chat then
      chat:close()
    end
  end,
}

M.subcommands.restart = {
  desc = "start a new backend; every chat gets a new session",
  run = function()
    local ok, err = require("acp.backend").restart()
    if ok then
      util.notify("backend restarted")
    else
      util.notify(tostring(err), vim.log.levels.ERROR)
    end
  end,
}

M.subcommands.log = {
  desc = "open the backend log file",
  run = function()
    vim.cmd("split " .. vim.fn.fnameescape(require("acp.backend").log_file()))
  end,
}

M.subcommands.agents = {
  desc = "list the configured agents and whether their command is on PATH",
  run = function()
    local config = require("acp.config")
    local default = config.default_agent()
    local lines = {}
    for _, name in ipairs(config.agent_names()) do
      local agent = config.agent(name)
      local cmd = agent and agent.cmd or {}
      local found = cmd[1] and vim.fn.executable(cmd[1]) == 1
      lines[#lines + 1] = ("%s %-10s %s  (%s)"):format(
        name == default and "*" or " ",
        name,
        table.concat(cmd, " "),
        found and "found" or "not found on PATH"
      )
    end
    vim.api.nvim_echo({ { table.concat(lines, "\n") } }, true, {})
  end,
}

M.subcommands.permission = {
  desc = "answer the oldest pending permission request with a menu",
  run = function()
    local chat = current_or_warn()
    if chat then
      chat:pick_permission()
    end
  end,
}

--- Values of the model option: { value, name } pairs, groups flattened.
---@param opt table
---@return {value: string, name: string}[]
local function model_values(opt)
  local out = {}
  local function walk(options)
    for _, o in ipairs(options or {}) do
      if util.field(o, "value") ~= nil then
        out[#out + 1] = { value = util.field(o, "value"), name = util.field(o, "name") or util.field(o, "value") }
      end
      walk(util.field(o, "options"))
    end
  end
  walk(util.field(opt, "options"))
  return out
end

M.subcommands.mode = {
  desc = "switch the agent's mode: :Acp mode [id] (a menu without id)",
  run = function(args)
    local chat = current_or_warn()
    if not chat then
      return
    end
    local modes = util.field(chat.modes, "availableModes", "available_modes") or {}
    if #modes == 0 then
      util.notify(chat.agent.name .. " has no modes", vim.log.levels.WARN)
      return
    end
    local function set(id)
      chat:set_mode(id)
    end
    if args[1] then
      set(args[1])
      return
    end
    vim.ui.select(modes, {
      prompt = "acp.nvim: mode",
      format_item = function(m)
        return util.field(m, "name") or util.field(m, "id")
      end,
    }, function(m)
      if m then
        set(util.field(m, "id"))
      end
    end)
  end,
  complete = function(lead)
    local chat = require("acp.chat").current()
    local ids = {}
    for _, m in ipairs(chat and util.field(chat.modes, "availableModes", "available_modes") or {}) do
      local id = util.field(m, "id")
      if id and vim.startswith(id, lead) then
        ids[#ids + 1] = id
      end
    end
    return ids
  end,
}

M.subcommands.model = {
  desc = "switch the model (the config option of category model): :Acp model [value]",
  run = function(args)
    local chat = current_or_warn()
    if not chat then
      return
    end
    local opt = chat:model_option()
    if not opt then
      util.notify(chat.agent.name .. " offers no model choice", vim.log.levels.WARN)
      return
    end
    local function set(value)
      chat:set_config_option(util.field(opt, "id"), value)
    end
    if args[1] then
      set(args[1])
      return
    end
    vim.ui.select(model_values(opt), {
      prompt = "acp.nvim: model",
      format_item = function(v)
        return v.name
      end,
    }, function(v)
      if v then
        set(v.value)
      end
    end)
  end,
  complete = function(lead)
    local chat = require("acp.chat").current()
    local opt = chat and chat:model_option()
    local vals = {}
    for _, v in ipairs(opt and model_values(opt) or {}) do
      if vim.startswith(tostring(v.value), lead) then
        vals[#vals + 1] = tostring(v.value)
      end
    end
    return vals
  end,
}

M.subcommands.review = {
  desc = "list every file with agent edits to review in the quickfix list",
  run = function()
    require("acp.review").quickfix()
  end,
}

--- `:[range]Acp accept|reject [file|all]`.
---@param action "accept"|"reject"
local function decide(action)
  return function(args, cmd)
    local scope = args[1]
    if scope ~= nil and scope ~= "file" and scope ~= "all" then
      util.notify(("`:Acp %s %s`: use `:Acp %s`, `:Acp %s file` or `:Acp %s all`"):format(action, scope, action, action, action), vim.log.levels.ERROR)
      return
    end
    local opts = { scope = scope or "hunks" }
    if cmd and (cmd.range or 0) > 0 then
      opts.line1, opts.line2 = cmd.line1, cmd.line2
    end
    require("acp.review").decide(action, opts)
  end
end

M.subcommands.accept = {
  desc = "[range]Acp accept [file|all]: accept the agent hunks in the range (default: under the cursor), the file, or everything",
  run = decide("accept"),
  complete = function(lead)
    return vim.tbl_filter(function(s)
      return vim.startswith(s, lead)
    end, { "all", "file" })
  end,
}

M.subcommands.reject = {
  desc = "[range]Acp reject [file|all]: undo the agent hunks in the range (default: under the cursor), the file, or everything",
  run = decide("reject"),
  complete = M.subcommands.accept.complete,
}

--- Run `:Acp {args}`.
---@param fargs string[]
---@param cmd? table the user command's opts (for ranges)
function M.run(fargs, cmd)
  local name = fargs[1]
  if not name then
    require("acp").toggle()
    return
  end
  local sub = M.subcommands[name]
  if not sub then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    util.notify(("unknown subcommand %q; use one of: %s"):format(name, table.concat(names, ", ")), vim.log.levels.ERROR)
    return
  end
  sub.run(vim.list_slice(fargs, 2), cmd)
end

--- Completion of `:Acp`.
---@param arglead string
---@param cmdline string
---@return string[]
function M.complete(arglead, cmdline)
  local words = vim.split(vim.trim(cmdline), "%s+")
  -- words[1] is the command itself.
  local n = #words
  if cmdline:match("%s$") then
    n = n + 1
  end
  if n <= 2 then
    local names = vim.tbl_keys(M.subcommands)
    table.sort(names)
    return vim.tbl_filter(function(s)
      return vim.startswith(s, arglead)
    end, names)
  end
  local sub = M.subcommands[words[2]]
  if sub and sub.complete and n == 3 then
    return sub.complete(arglead)
  end
  return {}
end

--- Create the user command.
function M.setup()
  vim.api.nvim_create_user_command("Acp", function(opts)
    M.run(opts.fargs, opts)
  end, {
    nargs = "*",
    range = true,
    complete = M.complete,
    desc = "acp.nvim: chat with coding agents (:Acp toggles the chat)",
  })
end

return M
