---@mod acp.commands The `:Acp` command and its subcommands.

local util = require("acp.util")

local M = {}

---@class acp.Subcommand
---@field run fun(args: string[], cmd?: table) `cmd`: the user command's opts (range, line1, line2)
---@field complete? fun(arglead: string, words: string[], n: integer): string[] `n`: the index of the word completed (3 = the first argument)
---@field complete_second? boolean complete the second argument too
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

--- A subcommand's `run` that calls `fn` with the current chat, or warns
--- that there is none.
---@param fn fun(chat: acp.Chat, args: string[])
---@return fun(args: string[])
local function on_chat(fn)
  return function(args)
    local chat = current_or_warn()
    if chat then
      fn(chat, args)
    end
  end
end

M.subcommands.new = {
  desc = "open a new chat in place of the one shown: :Acp new [agent] [--split] (--split: beside it)",
  run = function(args)
    local opts = { background = true }
    for _, a in ipairs(args) do
      if a == "--split" then
        opts.split = true
      elseif vim.startswith(a, "-") then
        util.notify(("`:Acp new %s`: unknown flag; use :Acp new [agent] [--split]"):format(a), vim.log.levels.ERROR)
        return
      else
        opts.agent = a
      end
    end
    require("acp").open(opts)
  end,
  complete = function(lead)
    return vim.tbl_filter(function(n)
      return vim.startswith(n, lead)
    end, vim.list_extend({ "--split" }, require("acp.config").agent_names()))
  end,
}

M.subcommands.follow = {
  desc = "follow the agent in the current chat: its tool calls' files open in the editor window: :Acp follow [on|off]",
  run = on_chat(function(chat, args)
    local arg = args[1]
    if arg ~= nil and arg ~= "on" and arg ~= "off" then
      util.notify(
        ("`:Acp follow %s`: use :Acp follow, :Acp follow on or :Acp follow off"):format(arg),
        vim.log.levels.ERROR
      )
      return
    end
    if arg == nil then
      chat:set_follow()
    else
      chat:set_follow(arg == "on")
    end
  end),
  complete = function(lead)
    return vim.tbl_filter(function(s)
      return vim.startswith(s, lead)
    end, { "on", "off" })
  end,
}

M.subcommands.chats = {
  desc = "pick one of the open chats and show it",
  run = function()
    require("acp").pick_chat()
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
  run = on_chat(function(chat)
    chat:close()
  end),
}

M.subcommands.restart = {
  desc = "start a new backend; every chat continues its session (resumed or loaded when the agent can)",
  run = function()
    local backend = require("acp.rpc.backend")
    local ok, err = backend.restart()
    if ok then
      -- One message (two stopped at a hit-Enter prompt).
      local ended = backend.review_ended()
      util.notify(
        ended > 0
            and ("backend restarted; review of %d file%s ended (edits kept)"):format(ended, ended == 1 and "" or "s")
          or "backend restarted"
      )
    else
      util.notify(tostring(err), vim.log.levels.ERROR)
    end
  end,
}

M.subcommands.build = {
  desc = "install the backend for this plugin version: download it (sha256-checked), else build it with cargo",
  run = function(args)
    if #args > 0 then
      util.notify(
        "`:Acp build` takes no arguments; set backend.release_url or $ACP_RELEASE_URL for a mirror",
        vim.log.levels.ERROR
      )
      return
    end
    require("acp.build").run()
  end,
}

M.subcommands.log = {
  desc = "open the backend log file at its newest entries",
  run = function()
    vim.cmd("split " .. vim.fn.fnameescape(require("acp.rpc.backend").log_file()))
    -- The newest entries are what the user came for.
    vim.cmd("normal! G")
  end,
}

--- `:Acp agents list`: the configured agents and whether their command runs.
---@return string[] lines of `:Acp agents list`
function M.agent_lines()
  local config = require("acp.config")
  local default = config.default_agent()
  local names = config.agent_names()
  -- The name column as wide as the longest name (a fixed 10 let longer
  -- names push their command out of line).
  local width = 0
  for _, name in ipairs(names) do
    width = math.max(width, vim.fn.strdisplaywidth(name))
  end
  local lines = {}
  for _, name in ipairs(names) do
    local agent = config.agent(name)
    local cmd = agent and agent.cmd or {}
    local found = cmd[1] and vim.fn.executable(cmd[1]) == 1
    lines[#lines + 1] = ("%s %s%s  %s  (%s)"):format(
      name == default and "*" or " ",
      name,
      (" "):rep(width - vim.fn.strdisplaywidth(name)),
      table.concat(cmd, " "),
      found and "found" or "not found on PATH"
    )
  end
  return lines
end

local function list_agents()
  vim.api.nvim_echo({ { table.concat(M.agent_lines(), "\n") } }, true, {})
end

M.subcommands.agents = {
  desc = "agents from the ACP registry: :Acp agents [update | list | remove {id} | cancel {id}]",
  run = function(args)
    local registry = require("acp.agents.registry")
    local action, id = args[1], args[2]
    if action == nil then
      registry.pick(require("acp").open)
    elseif action == "update" then
      registry.update()
    elseif action == "list" then
      list_agents()
    elseif (action == "remove" or action == "cancel") and id then
      registry[action](id)
    else
      util.notify("usage: :Acp agents [update | list | remove {id} | cancel {id}]", vim.log.levels.WARN)
    end
  end,
  complete_second = true,
  complete = function(lead, words, n)
    local registry = require("acp.agents.registry")
    local pool
    if n == 4 and (words[3] == "remove" or words[3] == "cancel") then
      pool = {}
      if words[3] == "remove" then
        for _, a in ipairs(registry.installed_all()) do
          pool[#pool + 1] = a.id
        end
      else
        pool = vim.tbl_keys(registry.installing())
      end
    elseif n == 3 then
      pool = { "update", "list", "remove", "cancel" }
    else
      pool = {}
    end
    return vim.tbl_filter(function(n)
      return vim.startswith(n, lead)
    end, pool)
  end,
}

M.subcommands.permission = {
  desc = "answer the oldest pending permission request with a menu",
  run = on_chat(function(chat)
    chat:pick_permission()
  end),
}

M.subcommands["add-dir"] = {
  desc = "add a workspace directory to the current chat (its session continues with it): :Acp add-dir {dir}",
  run = on_chat(function(chat, args)
    local dir = args[1]
    if not dir then
      util.notify("give a directory: :Acp add-dir {dir}", vim.log.levels.ERROR)
      return
    end
    local ok, err = chat:add_directory(dir)
    if not ok then
      util.notify(tostring(err), vim.log.levels.ERROR)
    end
  end),
  complete = function(lead)
    return vim.fn.getcompletion(lead, "dir")
  end,
}

M.subcommands.elicitation = {
  desc = "answer the oldest question an agent is waiting on (a form or a page to open)",
  run = function()
    local chat = require("acp.chat").current()
    require("acp.chat.view.elicitation").pick(chat and chat.chat_id or nil)
  end,
}

--- Values of the model option: { value, name } pairs, groups flattened.
---@param opt table
---@return {value: string, name: string}[]
local function model_values(opt)
  local out = {}
  local function walk(options)
    for _, o in ipairs(options or {}) do
      if o.value ~= nil then
        out[#out + 1] = { value = o.value, name = o.name or o.value }
      end
      walk(o.options)
    end
  end
  walk(opt.options)
  return out
end

M.subcommands.mode = {
  desc = "switch the agent's mode: :Acp mode [id] (a menu without id)",
  run = function(args)
    local chat = current_or_warn()
    if not chat then
      return
    end
    local modes = (chat.modes or {}).available_modes or {}
    if #modes == 0 then
      util.notify(chat.agent.name .. " has no modes", vim.log.levels.WARN)
      return
    end
    local function set(id)
      chat:set_mode(id)
    end
    if args[1] then
      -- Checked here: the agent's answer to an unknown id was a raw -32602.
      for _, m in ipairs(modes) do
        if m.id == args[1] or (m.name or ""):lower() == args[1]:lower() then
          set(m.id)
          return
        end
      end
      local ids = {}
      for _, m in ipairs(modes) do
        ids[#ids + 1] = m.name and m.name ~= m.id and ("%s (%s)"):format(m.id, m.name) or m.id
      end
      util.notify(
        ("%s has no mode %q; its modes: %s"):format(chat.agent.name, args[1], table.concat(ids, ", ")),
        vim.log.levels.WARN
      )
      return
    end
    local current = (chat.modes or {}).current_mode_id
    vim.ui.select(modes, {
      prompt = "acp.nvim: mode",
      format_item = function(m)
        return (m.name or m.id) .. (m.id == current and " (current)" or "")
      end,
    }, function(m)
      if m then
        set(m.id)
      end
    end)
  end,
  complete = function(lead)
    local chat = require("acp.chat").current()
    local ids = {}
    for _, m in ipairs(chat and (chat.modes or {}).available_modes or {}) do
      local id = m.id
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
      chat:set_config_option(opt.id, value)
    end
    if args[1] then
      set(args[1])
      return
    end
    local current = opt.current_value
    vim.ui.select(model_values(opt), {
      prompt = "acp.nvim: model",
      format_item = function(v)
        return v.name .. (v.value == current and " (current)" or "")
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

M.subcommands.add = {
  desc = "add lines of the current buffer to the next prompt: :[range]Acp add (whole buffer without a range)",
  run = function(_, opts)
    require("acp.chat.context").add(opts or { range = 0 })
  end,
}

M.subcommands["paste-image"] = {
  desc = "paste the clipboard's image into the next prompt (wl-paste, xclip or pngpaste)",
  run = function()
    require("acp.chat.context").paste_image()
  end,
}

M.subcommands.sessions = {
  desc = "pick a stored session of an agent (or a transcript) to continue, or to delete with --delete: :Acp sessions [agent] [--all] [--delete]",
  run = function(args)
    local opts, delete = {}, false
    for _, a in ipairs(args) do
      if a == "--all" then
        opts.all = true
      elseif a == "--delete" then
        delete = true
      else
        opts.agent = a
      end
    end
    if delete then
      require("acp.agents.sessions").pick_delete(opts)
    else
      opts.open = require("acp").open
      require("acp.agents.sessions").pick(opts)
    end
  end,
  complete = function(lead)
    local names = vim.list_extend({ "--all", "--delete" }, require("acp.config").agent_names())
    return vim.tbl_filter(function(n)
      return vim.startswith(n, lead)
    end, names)
  end,
}

--- Values of a select option, or true/false for a boolean one.
---@param opt table
---@return {value: any, name: string}[]
local function option_values(opt)
  if opt.type == "boolean" then
    return { { value = true, name = "on" }, { value = false, name = "off" } }
  end
  return model_values(opt)
end

--- The display name of an option's current value (not its id).
---@param opt table
---@return string
local function value_name(opt)
  local current = opt.current_value
  for _, v in ipairs(option_values(opt)) do
    if v.value == current then
      return v.name
    end
  end
  return tostring(current)
end

M.subcommands.option = {
  desc = "set one of the agent's config options: :Acp option [id [value]] (menus without arguments)",
  run = function(args)
    local chat = current_or_warn()
    if not chat then
      return
    end
    local options = vim.tbl_filter(function(o)
      local t = o.type
      return t == "select" or t == "boolean"
    end, chat.config_options or {})
    if #options == 0 then
      util.notify(chat.agent.name .. " has no config options", vim.log.levels.WARN)
      return
    end
    local function pick_value(opt)
      local id = opt.id
      if args[2] then
        ---@type string|boolean
        local v = args[2]
        if opt.type == "boolean" then
          v = (v == "true" or v == "on" or v == "1")
        end
        chat:set_config_option(id, v)
        return
      end
      vim.ui.select(option_values(opt), {
        prompt = ("acp.nvim: %s"):format(opt.name or id),
        format_item = function(v)
          local current = opt.current_value
          return v.name .. (v.value == current and " (current)" or "")
        end,
      }, function(v)
        if v then
          chat:set_config_option(id, v.value)
        end
      end)
    end
    if args[1] then
      for _, o in ipairs(options) do
        if o.id == args[1] then
          pick_value(o)
          return
        end
      end
      util.notify(("%s has no option %q"):format(chat.agent.name, args[1]), vim.log.levels.ERROR)
      return
    end
    vim.ui.select(options, {
      prompt = "acp.nvim: option",
      format_item = function(o)
        return ("%s: %s"):format(o.name or o.id, value_name(o))
      end,
    }, function(o)
      if o then
        pick_value(o)
      end
    end)
  end,
  complete = function(lead)
    local chat = require("acp.chat").current()
    local ids = {}
    for _, o in ipairs(chat and chat.config_options or {}) do
      local id = o.id
      if id and vim.startswith(id, lead) then
        ids[#ids + 1] = id
      end
    end
    return ids
  end,
}

M.subcommands.login = {
  desc = "log in to the current chat's agent (after it asked for a login)",
  run = on_chat(function(chat)
    require("acp.agents.auth").choose(chat)
  end),
}

M.subcommands.logout = {
  desc = "log out of the current chat's agent (when the agent supports it)",
  run = function()
    local chat = current_or_warn()
    if not chat then
      return
    end
    local auth = (chat.capabilities or {}).auth or {}
    if auth.logout == nil then
      util.notify(chat.agent.name .. " does not support logging out (no auth.logout capability)", vim.log.levels.WARN)
      return
    end
    local res, err = require("acp.rpc.backend").request("acp.logout", { chat_id = chat.chat_id })
    if res == nil then
      util.notify("could not log out: " .. tostring(err), vim.log.levels.ERROR)
    end
  end,
}

M.subcommands.rewind = {
  desc = "take files and conversation back to before a turn: :Acp rewind [N] [--preview] (a picker without N)",
  run = on_chat(function(chat, args)
    local turn, preview = nil, false
    for _, a in ipairs(args or {}) do
      if a == "--preview" then
        preview = true
      elseif tonumber(a) then
        turn = tonumber(a)
      else
        util.notify(("unknown argument %q; :Acp rewind [N] [--preview]"):format(a), vim.log.levels.ERROR)
        return
      end
    end
    if preview and not turn then
      util.notify(":Acp rewind N --preview needs the turn N; :Acp rewind alone opens the picker", vim.log.levels.ERROR)
      return
    end
    local ok, why = require("acp.edits.rewind").rewind(chat, { turn = turn, preview = preview })
    if not ok then
      util.notify("cannot rewind: " .. tostring(why), vim.log.levels.WARN)
    end
  end),
  complete = function(lead)
    local chat = require("acp.chat").current()
    local out = {}
    for n = (chat and chat.transcript.prompt_turn or 0), 1, -1 do
      if vim.startswith(tostring(n), lead) then
        out[#out + 1] = tostring(n)
      end
    end
    if vim.startswith("--preview", lead) then
      out[#out + 1] = "--preview"
    end
    return out
  end,
}

M.subcommands.continue = {
  desc = "restart the current chat's stopped agent and continue its session (resume, else load)",
  run = on_chat(function(chat)
    chat:restart()
  end),
}

M.subcommands.review = {
  desc = "list every file with agent edits to review in the quickfix list",
  run = function()
    require("acp.edits.review").quickfix()
  end,
}

M.subcommands.changes = {
  desc = "changes [turn|all]: one buffer with the agent's changes of the last turn (from a turn on, or all) to accept or reject",
  run = function(args)
    require("acp.edits.review.changes").show(args)
  end,
  complete = function(lead)
    return vim.tbl_filter(function(s)
      return vim.startswith(s, lead)
    end, { "all" })
  end,
}

--- `:[range]Acp accept|reject [file|all]`.
---@param action "accept"|"reject"
local function decide(action)
  return function(args, cmd)
    local scope = args[1]
    if scope ~= nil and scope ~= "file" and scope ~= "all" then
      util.notify(
        ("`:Acp %s %s`: use `:Acp %s`, `:Acp %s file` or `:Acp %s all`"):format(action, scope, action, action, action),
        vim.log.levels.ERROR
      )
      return
    end
    local opts = { scope = scope or "hunks" }
    if cmd and (cmd.range or 0) > 0 then
      opts.line1, opts.line2 = cmd.line1, cmd.line2
    end
    local changes = require("acp.edits.review.changes")
    if changes.is_view(vim.api.nvim_get_current_buf()) then
      changes.decide(action, opts.scope, opts.line1, opts.line2)
      return
    end
    require("acp.edits.review").decide(action, opts)
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
  if sub and sub.complete and (n == 3 or (n == 4 and sub.complete_second)) then
    return sub.complete(arglead, words, n)
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
