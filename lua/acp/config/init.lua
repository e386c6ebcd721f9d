---@mod acp.config Configuration: the options in effect (`setup`) and the
--- agents they name, resolved into commands. The option types, defaults and
--- presets are in acp.config.defaults, their checks in acp.config.validate.

local util = require("acp.util")
local D = require("acp.config.defaults")
local V = require("acp.config.validate")
local installed = require("acp.config.installed")

local M = {}

--- Built-in agents. `demo` is resolved at use time (see `M.agent`).
---@type table<string, acp.AgentConfig>
M.presets = D.presets

---@type acp.Config
M.defaults = D.defaults

M.validate = V.validate
M.sanitize = V.sanitize
M.validate_system_prompt = V.validate_system_prompt
M.validate_mcp_servers = V.validate_mcp_servers

-- An agent installed from the registry brings its own command: the checks
-- look where the options in effect say agents are installed.
V.is_installed = function(name)
  return installed.get(name, M.options.registry) ~= nil
end

---@type acp.Config
M.options = vim.deepcopy(M.defaults)

--- Path of the bundled fake agent: the newest of the one `:Acp build`
--- installed and the cargo builds (as for the backend), else where the
--- release build would put it.
---@return string
function M.demo_agent_path()
  return require("acp.rpc.binary").plugin_binary("acp-fake-agent")
    or (util.plugin_root() .. "/target/release/acp-fake-agent")
end

--- A `system_prompt` as `{mode, text}`; nil for none or blank text.
---@param sp string|acp.SystemPrompt|nil
---@return acp.SystemPrompt?
function M.system_prompt(sp)
  local mode, text = "append", sp ---@type "append"|"override", any
  if type(sp) == "table" then
    mode, text = sp.mode or "append", sp.text
  end
  if type(text) ~= "string" or not text:find("%S") then
    return nil
  end
  return { mode = mode, text = text }
end

--- An MCP server from the config as ACP wants it: `env` and `headers` may be
--- written as { NAME = "value" } maps and become [{name, value}] lists;
--- `args`, `env` and `headers` default to empty lists.
---@param s table
---@return table
function M.mcp_server_for_acp(s)
  local out = vim.deepcopy(s)
  local function pairs_list(v)
    if type(v) ~= "table" then
      return {}
    end
    if #v > 0 or next(v) == nil then
      return v
    end
    local list = {}
    for k, val in pairs(v) do
      list[#list + 1] = { name = tostring(k), value = tostring(val) }
    end
    table.sort(list, function(a, b)
      return a.name < b.name
    end)
    return list
  end
  if out.type == "http" or out.type == "sse" then
    out.headers = pairs_list(out.headers)
  else
    out.args = out.args or {}
    out.env = pairs_list(out.env)
  end
  return out
end

--- Validate and apply options. Invalid options are left out (their defaults
--- apply) and named in the returned errors; everything valid applies.
---@param opts? table
---@return boolean ok false when some options were left out
---@return string[] errors
function M.setup(opts)
  local errors
  opts, errors = M.sanitize(opts)
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts)
  -- Lists replace, they do not merge index by index.
  if opts.permission and opts.permission.auto_allow then
    merged.permission.auto_allow = vim.deepcopy(opts.permission.auto_allow)
  end
  merged.agents = vim.deepcopy(opts.agents or {})
  if opts.mcp_servers then
    merged.mcp_servers = vim.deepcopy(opts.mcp_servers)
  end
  M.options = merged
  return #errors == 0, errors
end

--- Names of the configured agents (presets not disabled + user agents), sorted.
---@return string[]
function M.agent_names()
  local names = {}
  local seen = {}
  local function add(n)
    if not seen[n] and M.options.agents[n] ~= false then
      seen[n] = true
      names[#names + 1] = n
    end
  end
  for n in pairs(M.presets) do
    add(n)
  end
  add("demo")
  for _, a in ipairs(installed.all(M.options.registry)) do
    add(a.id)
  end
  for n, a in pairs(M.options.agents) do
    if a ~= false then
      add(n)
    end
  end
  table.sort(names)
  return names
end

--- The agent used by `:Acp` and `open()` without a name: `default_agent`, else
--- the only (or first, sorted) agent the user configured that is not a preset
--- override, else "demo".
---@return string
function M.default_agent()
  if M.options.default_agent then
    return M.options.default_agent
  end
  local own = {}
  for n, a in pairs(M.options.agents) do
    if a ~= false and not M.presets[n] and n ~= "demo" then
      own[#own + 1] = n
    end
  end
  if #own == 0 then
    -- A preset the user touched counts as "configured" too.
    for n, a in pairs(M.options.agents) do
      if a ~= false and n ~= "demo" then
        own[#own + 1] = n
      end
    end
  end
  table.sort(own)
  return own[1] or "demo"
end

--- Resolve an agent by name into a spawnable command.
---@param name string
---@return acp.ResolvedAgent? agent, string? err
function M.agent(name)
  local user = M.options.agents[name]
  if user == false then
    return nil, ("agent %q is disabled in your config (agents.%s = false)"):format(name, name)
  end
  local base
  if name == "demo" then
    base = { cmd = { M.demo_agent_path() } }
  else
    -- An agent installed from the registry (`:Acp agents`) under this id,
    -- or for a preset: its command and env replace the preset's PATH
    -- command, the preset's other options (quirks) stay.
    local installed = installed.resolve(name, M.options.registry)
    base = M.presets[name] and vim.deepcopy(M.presets[name])
    if installed then
      base = base or {}
      base.cmd = installed.cmd
      base.env = vim.tbl_extend("force", base.env or {}, installed.env or {})
    end
  end
  if not base and not user then
    return nil, ("unknown agent %q; configured agents: %s"):format(name, table.concat(M.agent_names(), ", "))
  end
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(base or {}), vim.deepcopy(user or {}))
  if user and user.cmd then
    merged.cmd = vim.deepcopy(user.cmd)
  end
  local env = {}
  for k, v in pairs(merged.env or {}) do
    env[k] = tostring(v)
  end
  local servers = {}
  for _, list in ipairs({ M.options.mcp_servers or {}, merged.mcp_servers or {} }) do
    for _, s in ipairs(list) do
      servers[#servers + 1] = M.mcp_server_for_acp(s)
    end
  end
  return {
    name = name,
    cmd = merged.cmd,
    env = env,
    cwd = merged.cwd and vim.fn.fnamemodify(merged.cwd, ":p") or nil,
    init_timeout = merged.init_timeout,
    protocol_version = merged.protocol_version,
    mcp_servers = servers,
    quirks = merged.quirks or {},
    -- The agent's own replaces the global one (it is not appended to it).
    system_prompt = M.system_prompt(user and user.system_prompt or M.options.system_prompt),
    editor_tools = merged.editor_tools ~= false,
    editor_tools_prompt = type(merged.editor_tools) == "table" and merged.editor_tools.prompt or nil,
  }
end

return M
