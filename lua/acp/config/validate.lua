---@mod acp.config.validate Checking user options: one sentence naming the
--- bad key, or the valid part of the options with one sentence per option
--- left out.

local D = require("acp.config.defaults")

local M = {}

--- Whether an agent of that id is installed from the registry. Set by
--- acp.config, which knows where the options in effect install agents.
---@type fun(name: string): boolean
M.is_installed = function(_)
  return false
end

local function describe(v)
  if type(v) == "table" then
    return "a table"
  end
  return type(v) .. " " .. vim.inspect(v)
end

local function is_list_of_strings(v, allow_empty)
  if type(v) ~= "table" then
    return false
  end
  if not allow_empty and #v == 0 then
    return false
  end
  local n = 0
  for k, item in pairs(v) do
    n = n + 1
    if type(k) ~= "number" or type(item) ~= "string" then
      return false
    end
  end
  return n == #v
end

local function check_keys(tbl, allowed, path)
  for k in pairs(tbl) do
    if allowed[k] == nil then
      local names = vim.tbl_keys(allowed)
      table.sort(names)
      return ("`%s%s` is not a known option (known: %s)"):format(path, tostring(k), table.concat(names, ", "))
    end
  end
end

local function validate_agent(name, a)
  local path = "agents." .. name
  if a == false then
    return nil
  end
  if type(a) ~= "table" then
    return ('`%s` must be a table like { cmd = { "prog", "arg" } } or false (got %s)'):format(path, describe(a))
  end
  local err = check_keys(a, {
    cmd = true,
    env = true,
    cwd = true,
    init_timeout = true,
    mcp_servers = true,
    quirks = true,
    system_prompt = true,
    editor_tools = true,
    protocol_version = true,
  }, path .. ".")
  if err then
    return err
  end
  -- An agent installed from the registry brings its own command.
  if a.cmd == nil and not D.presets[name] and name ~= "demo" and not M.is_installed(name) then
    return ('`%s.cmd` is required: a list like { "%s", "acp" } (or install %s with :Acp agents first)'):format(
      path,
      name,
      name
    )
  end
  if a.cmd ~= nil and not is_list_of_strings(a.cmd, false) then
    return ("`%s.cmd` must be a non-empty list of strings (got %s)"):format(path, describe(a.cmd))
  end
  if a.env ~= nil then
    if type(a.env) ~= "table" then
      return ('`%s.env` must be a table of NAME = "value" (got %s)'):format(path, describe(a.env))
    end
    for k, v in pairs(a.env) do
      if type(k) ~= "string" or (type(v) ~= "string" and type(v) ~= "number") then
        return ("`%s.env` must map names to strings; `%s` is %s"):format(path, tostring(k), describe(v))
      end
    end
  end
  if a.cwd ~= nil and type(a.cwd) ~= "string" then
    return ("`%s.cwd` must be a directory path string (got %s)"):format(path, describe(a.cwd))
  end
  if a.init_timeout ~= nil and (type(a.init_timeout) ~= "number" or a.init_timeout < 1 or a.init_timeout % 1 ~= 0) then
    return ("`%s.init_timeout` must be a whole number of milliseconds, at least 1 (got %s)"):format(
      path,
      describe(a.init_timeout)
    )
  end
  if a.protocol_version ~= nil and a.protocol_version ~= 1 and a.protocol_version ~= 2 then
    return ("`%s.protocol_version` must be 1 or 2 (got %s)"):format(path, describe(a.protocol_version))
  end
  if a.quirks ~= nil then
    if type(a.quirks) ~= "table" then
      return ('`%s.quirks` must be a table like { missing_file_read = "empty" } (got %s)'):format(
        path,
        describe(a.quirks)
      )
    end
    local qerr = check_keys(a.quirks, { missing_file_read = true }, path .. ".quirks.")
    if qerr then
      return qerr
    end
    local m = a.quirks.missing_file_read
    if m ~= nil and m ~= "empty" and m ~= "error" then
      return ('`%s.quirks.missing_file_read` must be "empty" or "error" (got %s)'):format(path, describe(m))
    end
  end
  if a.editor_tools ~= nil and type(a.editor_tools) ~= "boolean" then
    if type(a.editor_tools) ~= "table" then
      return ('`%s.editor_tools` must be true, false or { prompt = "..." } (got %s)'):format(
        path,
        describe(a.editor_tools)
      )
    end
    local eerr = check_keys(a.editor_tools, { prompt = true }, path .. ".editor_tools.")
    if eerr then
      return eerr
    end
    if a.editor_tools.prompt ~= nil and type(a.editor_tools.prompt) ~= "string" then
      return ('`%s.editor_tools.prompt` must be a string ("" sends none) (got %s)'):format(
        path,
        describe(a.editor_tools.prompt)
      )
    end
  end
  if a.system_prompt ~= nil then
    local serr = M.validate_system_prompt(a.system_prompt, path .. ".system_prompt")
    if serr then
      return serr
    end
  end
  if a.mcp_servers ~= nil then
    return M.validate_mcp_servers(a.mcp_servers, path .. ".mcp_servers")
  end
end

---@class acp.SystemPrompt
---@field mode "append"|"override" append to the agent's instructions (default), or replace them (only agents that offer it)
---@field text string

--- Check a `system_prompt`: a string, or `{ mode = "append"|"override", text = "..." }`.
---@param sp any
---@param path string
---@return string? err
function M.validate_system_prompt(sp, path)
  if type(sp) == "string" then
    return nil
  end
  if type(sp) ~= "table" then
    return ('`%s` must be a string or a table like { mode = "override", text = "..." } (got %s)'):format(
      path,
      describe(sp)
    )
  end
  local err = check_keys(sp, { mode = true, text = true }, path .. ".")
  if err then
    return err
  end
  if sp.mode ~= nil and sp.mode ~= "append" and sp.mode ~= "override" then
    return ('`%s.mode` must be "append" or "override" (got %s)'):format(path, describe(sp.mode))
  end
  if type(sp.text) ~= "string" then
    return ("`%s.text` must be a string (got %s)"):format(path, describe(sp.text))
  end
end

--- Check a list of MCP servers: each needs a `name`, and `command` (stdio)
--- or `type = "http"|"sse"` with a `url`.
---@param list any
---@param path string
---@return string? err
function M.validate_mcp_servers(list, path)
  if type(list) ~= "table" or (next(list) ~= nil and #list == 0) then
    return ("`%s` must be a list of MCP server tables (got %s)"):format(path, describe(list))
  end
  for i, s in ipairs(list) do
    local where = ("%s[%d]"):format(path, i)
    if type(s) ~= "table" or type(s.name) ~= "string" then
      return ("`%s` needs a `name` string"):format(where)
    end
    if s.type == "http" or s.type == "sse" then
      if type(s.url) ~= "string" then
        return ("`%s` (%s) needs a `url` string"):format(where, s.type)
      end
    elseif s.type ~= nil then
      return ('`%s.type` must be "http" or "sse", or absent for a stdio server (got %s)'):format(
        where,
        describe(s.type)
      )
    elseif type(s.command) ~= "string" then
      return ('`%s` needs a `command` (an absolute path), or `type = "http"` and a `url`'):format(where)
    end
  end
end

-- Listed explicitly: keys whose default is nil are absent from D.defaults.
local TOP_KEYS = {
  agents = true,
  default_agent = true,
  layout = true,
  keymaps = true,
  permission = true,
  log_level = true,
  backend = true,
  mcp_servers = true,
  context = true,
  transcripts = true,
  registry = true,
  notify = true,
  system_prompt = true,
  elicitation = true,
}
local LEVELS = { error = true, warn = true, info = true, debug = true, trace = true }
local POSITIONS = { right = true, left = true, float = true, tab = true }

--- Validate user options (before merging). Returns an error sentence naming
--- the bad key, or nil.
---@param opts table
---@return string? err
function M.validate(opts)
  if opts == nil then
    return nil
  end
  if type(opts) ~= "table" then
    return ("setup() takes a table of options (got %s)"):format(describe(opts))
  end
  local err = check_keys(opts, TOP_KEYS, "")
  if err then
    return err
  end
  if opts.agents ~= nil then
    if type(opts.agents) ~= "table" then
      return ("`agents` must be a table of name = { cmd = {...} } (got %s)"):format(describe(opts.agents))
    end
    for name, a in pairs(opts.agents) do
      if type(name) ~= "string" then
        return ("`agents` keys must be agent names (got %s)"):format(describe(name))
      end
      err = validate_agent(name, a)
      if err then
        return err
      end
    end
  end
  if opts.default_agent ~= nil and type(opts.default_agent) ~= "string" then
    return ("`default_agent` must be an agent name (got %s)"):format(describe(opts.default_agent))
  end
  if opts.layout ~= nil then
    if type(opts.layout) ~= "table" then
      return ("`layout` must be a table (got %s)"):format(describe(opts.layout))
    end
    err = check_keys(opts.layout, D.defaults.layout, "layout.")
    if err then
      return err
    end
    local l = opts.layout
    if l.position ~= nil and not POSITIONS[l.position] then
      return ("`layout.position` must be one of right, left, float, tab (got %s)"):format(describe(l.position))
    end
    for _, k in ipairs({ "width", "height", "input_height" }) do
      if l[k] ~= nil and (type(l[k]) ~= "number" or l[k] <= 0) then
        return ("`layout.%s` must be a positive number (got %s)"):format(k, describe(l[k]))
      end
    end
  end
  if opts.keymaps ~= nil then
    if type(opts.keymaps) ~= "table" then
      return ("`keymaps` must be a table (got %s)"):format(describe(opts.keymaps))
    end
    err = check_keys(opts.keymaps, D.defaults.keymaps, "keymaps.")
    if err then
      return err
    end
    for k, v in pairs(opts.keymaps) do
      if v ~= false and (type(v) ~= "string" or v == "") then
        return ('`keymaps.%s` must be a key like "<CR>" or false to disable it (got %s)'):format(k, describe(v))
      end
    end
  end
  if opts.permission ~= nil then
    if type(opts.permission) ~= "table" then
      return ("`permission` must be a table (got %s)"):format(describe(opts.permission))
    end
    err = check_keys(opts.permission, D.defaults.permission, "permission.")
    if err then
      return err
    end
    local p = opts.permission
    if p.auto_allow ~= nil and not is_list_of_strings(p.auto_allow, true) then
      return ('`permission.auto_allow` must be a list of tool kinds like { "read", "search" } (got %s)'):format(
        describe(p.auto_allow)
      )
    end
    if p.remember ~= nil and type(p.remember) ~= "boolean" then
      return ("`permission.remember` must be true or false (got %s)"):format(describe(p.remember))
    end
    if p.ask_terminal ~= nil and type(p.ask_terminal) ~= "boolean" then
      return ("`permission.ask_terminal` must be true or false (got %s)"):format(describe(p.ask_terminal))
    end
  end
  if opts.log_level ~= nil and not LEVELS[opts.log_level] then
    return ("`log_level` must be one of error, warn, info, debug, trace (got %s)"):format(describe(opts.log_level))
  end
  if opts.backend ~= nil then
    if type(opts.backend) ~= "table" then
      return ('`backend` must be a table like { cmd = { "/path/to/acp-nvim" } } (got %s)'):format(
        describe(opts.backend)
      )
    end
    err = check_keys(opts.backend, { cmd = true, release_url = true }, "backend.")
    if err then
      return err
    end
    local c = opts.backend.cmd
    if c ~= nil and type(c) ~= "string" and not is_list_of_strings(c, false) then
      return ("`backend.cmd` must be a path or a non-empty list of strings (got %s)"):format(describe(c))
    end
    local u = opts.backend.release_url
    if u ~= nil and (type(u) ~= "string" or not (u:match("^https?://") or u:match("^file://"))) then
      return ("`backend.release_url` must be an http(s):// or file:// URL of a release mirror (got %s)"):format(
        describe(u)
      )
    end
  end
  if opts.mcp_servers ~= nil then
    err = M.validate_mcp_servers(opts.mcp_servers, "mcp_servers")
    if err then
      return err
    end
  end
  if opts.system_prompt ~= nil then
    err = M.validate_system_prompt(opts.system_prompt, "system_prompt")
    if err then
      return err
    end
  end
  if opts.notify ~= nil then
    if type(opts.notify) ~= "table" then
      return ("`notify` must be a table like { turn_end = true, permission = true, question = true } (got %s)"):format(
        describe(opts.notify)
      )
    end
    err = check_keys(opts.notify, D.defaults.notify, "notify.")
    if err then
      return err
    end
    for k, v in pairs(opts.notify) do
      if type(v) ~= "boolean" then
        return ("`notify.%s` must be true or false (got %s)"):format(k, describe(v))
      end
    end
  end
  if opts.elicitation ~= nil then
    if type(opts.elicitation) ~= "table" then
      return ('`elicitation` must be a table like { ui = "form" } (got %s)'):format(describe(opts.elicitation))
    end
    err = check_keys(opts.elicitation, D.defaults.elicitation, "elicitation.")
    if err then
      return err
    end
    local ui = opts.elicitation.ui
    if ui ~= nil and ui ~= "form" and ui ~= "vim.ui" then
      return ('`elicitation.ui` must be "form" or "vim.ui" (got %s)'):format(describe(ui))
    end
  end
  if opts.transcripts ~= nil and type(opts.transcripts) ~= "boolean" then
    return ("`transcripts` must be true or false (got %s)"):format(describe(opts.transcripts))
  end
  if opts.registry ~= nil then
    if type(opts.registry) ~= "table" then
      return ('`registry` must be a table like { url = "https://..." } (got %s)'):format(describe(opts.registry))
    end
    err = check_keys(opts.registry, { url = true, dir = true }, "registry.")
    if err then
      return err
    end
    for _, k in ipairs({ "url", "dir" }) do
      local v = opts.registry[k]
      if v ~= nil and (type(v) ~= "string" or v == "") then
        return ("`registry.%s` must be a non-empty string (got %s)"):format(k, describe(v))
      end
    end
  end
  if opts.context ~= nil then
    if type(opts.context) ~= "table" then
      return ("`context` must be a table (got %s)"):format(describe(opts.context))
    end
    err = check_keys(opts.context, D.defaults.context, "context.")
    if err then
      return err
    end
    local c = opts.context
    for _, k in ipairs({ "hidden_files", "auto_complete" }) do
      if c[k] ~= nil and type(c[k]) ~= "boolean" then
        return ("`context.%s` must be true or false (got %s)"):format(k, describe(c[k]))
      end
    end
    for _, k in ipairs({ "max_embed_bytes", "max_image_bytes" }) do
      if c[k] ~= nil and (type(c[k]) ~= "number" or c[k] < 0) then
        return ("`context.%s` must be a number of bytes >= 0 (got %s)"):format(k, describe(c[k]))
      end
    end
  end
  if opts.default_agent ~= nil then
    local agents = opts.agents or {}
    local known = (agents[opts.default_agent] ~= nil and agents[opts.default_agent] ~= false)
      or (D.presets[opts.default_agent] ~= nil and agents[opts.default_agent] ~= false)
      or opts.default_agent == "demo"
    if not known then
      return ("`default_agent` names %q, which is not in `agents` nor a preset"):format(opts.default_agent)
    end
  end
end

-- Tables whose keys are checked one by one (one bad key drops only itself).
local NESTED = {
  layout = true,
  keymaps = true,
  permission = true,
  context = true,
  backend = true,
  notify = true,
  registry = true,
  elicitation = true,
}

--- The valid part of user options, and one sentence per option left out.
--- One typo must not cost the user every other option (agents included).
---@param opts any
---@return table valid, string[] errors
function M.sanitize(opts)
  if opts == nil then
    return {}, {}
  end
  local err = M.validate(opts)
  if not err then
    return opts, {}
  end
  if type(opts) ~= "table" then
    return {}, { err }
  end
  local valid, errors = {}, {}
  local function try(key, value)
    local e = M.validate({ [key] = value })
    if e then
      errors[#errors + 1] = e
      return false
    end
    return true
  end
  local keys = vim.tbl_keys(opts)
  table.sort(keys, function(a, b)
    return tostring(a) < tostring(b)
  end)
  for _, k in ipairs(keys) do
    local v = opts[k]
    if k == "default_agent" then
      -- Checked below, against the agents that survived.
    elseif k == "agents" and type(v) == "table" then
      valid.agents = {}
      for name, a in pairs(v) do
        if try("agents", { [name] = a }) then
          valid.agents[name] = a
        end
      end
    elseif NESTED[k] and type(v) == "table" then
      valid[k] = {}
      for sk, sv in pairs(v) do
        if try(k, { [sk] = sv }) then
          valid[k][sk] = sv
        end
      end
    elseif try(k, v) then
      valid[k] = v
    end
  end
  if opts.default_agent ~= nil then
    local e = M.validate({ default_agent = opts.default_agent, agents = valid.agents })
    if e then
      errors[#errors + 1] = e
    else
      valid.default_agent = opts.default_agent
    end
  end
  return valid, errors
end

return M
