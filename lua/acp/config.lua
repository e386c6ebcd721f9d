---@mod acp.config Configuration: defaults, agent presets, validation.

local util = require("acp.util")

local M = {}

---@class acp.AgentConfig
---@field cmd string[] program and arguments
---@field env? table<string,string> extra environment (added to Neovim's own)
---@field cwd? string working directory of the agent process
---@field init_timeout? integer ms the agent may take to answer `initialize` (default 60000)
---@field mcp_servers? table[] MCP servers for this agent's sessions (added to the global `mcp_servers`)
---@field quirks? acp.AgentQuirks workarounds for one agent's bugs (see :help acp-quirks)
---@field system_prompt? string|acp.SystemPrompt instructions for the agent's system prompt (replaces the global `system_prompt`)
---@field protocol_version? 1|2 newest ACP version to offer (default 1; 2 is a preview, an agent answering 1 still works)
---@field editor_tools? boolean|acp.EditorToolsConfig offer the editor's MCP server to this agent (default true; see :help acp-editor-tools)

---@class acp.EditorToolsConfig
---@field prompt? string the sentence appended to the client system prompt about the tools ("" sends none)

---@class acp.AgentQuirks
---@field missing_file_read? "error"|"empty" `fs/read_text_file` of a missing file inside the workspace: the spec's error (default), or empty content

---@class acp.ResolvedAgent
---@field name string
---@field cmd string[]
---@field env table<string,string>
---@field cwd? string
---@field init_timeout? integer ms
---@field protocol_version? 1|2 newest ACP version to offer
---@field mcp_servers table[] ACP McpServer objects (global ones first)
---@field quirks acp.AgentQuirks
---@field system_prompt? acp.SystemPrompt the agent's or the global `system_prompt`, normalized
---@field editor_tools boolean offer the editor's MCP server
---@field editor_tools_prompt? string its system prompt sentence; the backend's default when nil

---@class acp.LayoutConfig
---@field position "right"|"left"|"float"|"tab"
---@field width number columns, or a fraction of the editor width when < 1
---@field height number float height: rows, or a fraction when < 1
---@field input_height integer rows of the prompt input window

---@class acp.KeymapConfig
---@field submit string|false prompt buffer, normal mode
---@field submit_insert string|false prompt buffer, insert mode
---@field cancel string|false both buffers, normal mode
---@field close string|false both buffers, normal mode: hide the chat windows
---@field jump string|false transcript: open the location or diff under the cursor
---@field diff string|false transcript: open the diff of the tool call under the cursor
---@field permission string|false transcript: answer a pending permission with vim.ui.select
---@field focus_prompt string|false transcript: jump to the prompt input
---@field restart string|false transcript: restart a stopped agent and continue the session
---@field open_review string|false transcript: open the file of the tool call under the cursor with its inline diff (a pending edit: preview it)
---@field yank_code string|false transcript: yank the fenced code block under the cursor
---@field open_code string|false transcript: open the fenced code block under the cursor in a split, with its language's filetype
---@field edit_prompt string|false transcript: on a prompt you sent, put its text in the prompt input to edit and send again
---@field rewind_prompt string|false transcript: on a prompt you sent, rewind to before its turn and put its text in the prompt input
---@field history_prev string|false prompt, both modes, on its first line: the previous prompt sent
---@field history_next string|false prompt, both modes, on its last line: the next prompt sent (then the draft)
---@field review_next string|false reviewed buffers: next agent hunk
---@field review_prev string|false reviewed buffers: previous agent hunk
---@field review_accept string|false reviewed buffers: accept the hunk under the cursor
---@field review_reject string|false reviewed buffers: reject the hunk under the cursor
---@field review_accept_file string|false reviewed buffers: accept every change of the file
---@field review_reject_file string|false reviewed buffers: reject every change of the file

---@class acp.PermissionConfig
---@field auto_allow string[] tool kinds answered "allow" without asking (e.g. "read")
---@field remember boolean remember "always" answers for the project (saved under stdpath("state"), kept across restarts)
---@field ask_terminal boolean ask before every command an agent runs in a terminal (terminal/create), even when the agent did not ask; off by default

---@class acp.ContextConfig
---@field hidden_files boolean `@` completion also offers hidden files (names starting with ".")
---@field max_embed_bytes integer larger files are sent as links, not embedded
---@field max_image_bytes integer larger images are not sent
---@field auto_complete boolean typing `@` or `/` at the start of a word in the prompt opens the completion menu

---@class acp.NotifyConfig
---@field turn_end boolean a turn ended while its chat is hidden or Neovim is not focused
---@field permission boolean a permission request waits (same condition)
---@field question boolean the agent asks the user a question (same condition)

---@class acp.ElicitationConfig
---@field ui "form"|"vim.ui" how an agent's question (a form) is answered: one floating form, or vim.ui.input / vim.ui.select field by field

---@class acp.Config
---@field elicitation acp.ElicitationConfig
---@field notify acp.NotifyConfig vim.notify when a chat needs you and you may not see it
---@field agents table<string, acp.AgentConfig|false>
---@field default_agent? string
---@field layout acp.LayoutConfig
---@field keymaps acp.KeymapConfig
---@field permission acp.PermissionConfig
---@field log_level "error"|"warn"|"info"|"debug"|"trace"
---@field backend { cmd?: string[]|string, release_url?: string, prestart: boolean }
---@field mcp_servers table[] MCP server descriptions passed to every new session
---@field system_prompt? string|acp.SystemPrompt instructions sent to every agent that takes a client system prompt (see :help acp-system-prompt)
---@field context acp.ContextConfig
---@field transcripts boolean keep a JSONL transcript of every session under stdpath("state")/acp/transcripts
---@field registry { url?: string, dir?: string } the ACP agent registry (`:Acp agents`): its index URL (default: the published one) and where agents are installed (default: stdpath("data")/acp/agents)

--- Built-in agents. `demo` is resolved at use time (see `M.agent`).
---@type table<string, acp.AgentConfig>
M.presets = {
  claude = { cmd = { "claude-agent-acp" } },
  codex = { cmd = { "codex-acp" } },
  -- `--experimental-acp` is deprecated. gemini-cli reads a file before it
  -- creates it and gives up when that read fails (its issue 9280), so it
  -- cannot create files through a client that answers the spec's error.
  gemini = { cmd = { "gemini", "--acp" }, quirks = { missing_file_read = "empty" } },
  goose = { cmd = { "goose", "acp" } },
  opencode = { cmd = { "opencode", "acp" } },
}

---@type acp.Config
M.defaults = {
  agents = {},
  default_agent = nil,
  layout = { position = "right", width = 0.4, height = 0.8, input_height = 5 },
  keymaps = {
    submit = "<CR>",
    submit_insert = "<C-s>",
    cancel = "<C-c>",
    close = "q",
    jump = "<CR>",
    diff = "d",
    permission = "p",
    focus_prompt = "i",
    restart = "R",
    open_review = "gd",
    yank_code = "yc",
    open_code = "gC",
    edit_prompt = "cc",
    rewind_prompt = "cR",
    history_prev = "<Up>",
    history_next = "<Down>",
    review_next = "]h",
    review_prev = "[h",
    review_accept = "<localleader>aa",
    review_reject = "<localleader>ar",
    review_accept_file = "<localleader>aA",
    review_reject_file = "<localleader>aR",
  },
  permission = { auto_allow = {}, remember = true, ask_terminal = false },
  log_level = "info",
  backend = { cmd = nil, prestart = true },
  mcp_servers = {},
  context = {
    hidden_files = false,
    max_embed_bytes = 256 * 1024,
    max_image_bytes = 5 * 1024 * 1024,
    auto_complete = true,
  },
  transcripts = true,
  registry = {},
  notify = { turn_end = true, permission = true, question = true },
  elicitation = { ui = "form" },
}

---@type acp.Config
M.options = vim.deepcopy(M.defaults)

--- Path of the bundled fake agent: the newest of the one `:Acp build`
--- installed and the cargo builds (as for the backend), else where the
--- release build would put it.
---@return string
function M.demo_agent_path()
  return require("acp.binary").plugin_binary("acp-fake-agent")
    or (util.plugin_root() .. "/target/release/acp-fake-agent")
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
  if a.cmd == nil and not M.presets[name] and name ~= "demo" and not require("acp.registry").installed(name) then
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

--- A `system_prompt` as `{mode, text}`; nil for none or blank text.
---@param sp string|acp.SystemPrompt|nil
---@return acp.SystemPrompt?
function M.system_prompt(sp)
  if type(sp) == "string" then
    sp = { text = sp }
  end
  if type(sp) ~= "table" or type(sp.text) ~= "string" or not sp.text:find("%S") then
    return nil
  end
  return { mode = sp.mode or "append", text = sp.text }
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

-- Listed explicitly: keys whose default is nil are absent from M.defaults.
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
    err = check_keys(opts.layout, M.defaults.layout, "layout.")
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
    err = check_keys(opts.keymaps, M.defaults.keymaps, "keymaps.")
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
    err = check_keys(opts.permission, M.defaults.permission, "permission.")
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
    err = check_keys(opts.backend, { cmd = true, release_url = true, prestart = true }, "backend.")
    if err then
      return err
    end
    if opts.backend.prestart ~= nil and type(opts.backend.prestart) ~= "boolean" then
      return ("`backend.prestart` must be true or false (got %s)"):format(describe(opts.backend.prestart))
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
    err = check_keys(opts.notify, M.defaults.notify, "notify.")
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
    err = check_keys(opts.elicitation, M.defaults.elicitation, "elicitation.")
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
    err = check_keys(opts.context, M.defaults.context, "context.")
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
      or (M.presets[opts.default_agent] ~= nil and agents[opts.default_agent] ~= false)
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

--- Validate and apply options. Invalid options are left out (their defaults
--- apply) and named in the returned errors; everything valid applies.
---@param opts? table
---@return boolean ok false when some options were left out, string[] errors
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
  for _, a in ipairs(require("acp.registry").installed_all()) do
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
    local installed = require("acp.registry").resolve(name)
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
