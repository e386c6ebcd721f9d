---@mod acp.chat.opening The `acp.open` command: its parameters (built here only)
--- and the early open of `:Acp`, which sends it before the chat exists.
---
--- `:Acp` spawned the backend, loaded the chat's modules (30-40 ms with an
--- ordinary config), waited for the greeting, asked `acp.open` and only
--- then did the backend start the agent: ready at 77-140 ms on a loaded
--- machine (issue #30). Sent early, right behind the greeting as a
--- notification, the open starts the backend and the agent while the
--- modules load. The chat's number is taken first, so the backend knows
--- the chat's id before the chat is made.

local config = require("acp.config")

local M = {}

local counter = 0

--- The number of a new chat (`acp://chat/<n>`, its id is the number as a
--- string). One counter for every chat, taken before the chat is created
--- when its open goes first.
---@return integer
function M.next_n()
  counter = counter + 1
  return counter
end

---@class acp.OpenSpec
---@field chat_id string
---@field agent acp.ResolvedAgent
---@field cwd string absolute directory
---@field additional_directories? string[]
---@field resume? {load_session_id?: string, resume_session_id?: string, auth_method_id?: string, checkpoints?: string}

--- The parameters of `acp.open` (see doc/protocol.md).
---@param spec acp.OpenSpec
---@return table
function M.params(spec)
  local agent, resume = spec.agent, spec.resume
  local cfg = config.options
  return {
    chat_id = spec.chat_id,
    agent = {
      name = agent.name,
      cmd = agent.cmd,
      -- An empty Lua table would travel as an msgpack array.
      env = next(agent.env or {}) and agent.env or vim.empty_dict(),
      cwd = agent.cwd,
      init_timeout_ms = agent.init_timeout,
      protocol_version = agent.protocol_version,
      missing_file_read = (agent.quirks or {}).missing_file_read,
      ask_terminal = cfg.permission.ask_terminal or nil,
      -- The editor's MCP server (`:help acp-editor-tools`): on unless false.
      editor_tools = agent.editor_tools ~= false,
      editor_tools_prompt = agent.editor_tools_prompt,
    },
    cwd = spec.cwd,
    additional_directories = spec.additional_directories or {},
    mcp_servers = agent.mcp_servers or {},
    system_prompt = agent.system_prompt,
    auth_method_id = resume and resume.auth_method_id or nil,
    transcript_dir = cfg.transcripts and require("acp.agents.history").dir() or nil,
    -- The backend answers auto_allow kinds itself (reported as
    -- `permission_auto`); the plugin also applies the list to requests that
    -- still reach it. `remember` switches the backend's memory of "always"
    -- answers; both belong to the agent process, the last open wins. The
    -- memory is saved per project under `permission_dir`, so it survives
    -- `:Acp restart` and new Neovim sessions.
    permission = { auto_allow = cfg.permission.auto_allow, remember = cfg.permission.remember },
    permission_dir = vim.fn.stdpath("state") .. "/acp/permissions",
    load_session_id = resume and resume.load_session_id or nil,
    resume_session_id = resume and resume.resume_session_id or nil,
    -- After a rewind: the new session keeps the earlier turns' checkpoints.
    checkpoints = resume and resume.checkpoints or nil,
  }
end

--- Make the first chat cheap (the `backend.prestart` option, called by
--- setup()): once Neovim is idle (after its first screen), the backend is
--- started and greeted (acp.rpc.backend.prestart), then the chat's modules are
--- loaded, one a timer tick so keys typed meanwhile wait for one at most.
--- `:Acp` then only makes the chat's buffers and starts the agent.
---@param modules string[] the chat's modules, in the order to load them (acp's CHAT_MODULES)
function M.prepare(modules)
  local i = 0
  local function step()
    i = i + 1
    local name = modules[i]
    if not name or vim.v.exiting ~= vim.NIL then
      return
    end
    pcall(require, name)
    vim.defer_fn(step, 0)
  end
  -- A timer, not vim.schedule: it runs after the redraw.
  local function start()
    vim.defer_fn(function()
      require("acp.rpc.backend").prestart()
      vim.defer_fn(step, 0)
    end, 0)
  end
  if vim.v.vim_did_enter == 1 then
    start()
  else
    -- One pending start however often setup() runs before the first screen.
    vim.api.nvim_create_autocmd("VimEnter", {
      group = vim.api.nvim_create_augroup("acp_prestart", { clear = true }),
      once = true,
      callback = start,
    })
  end
end

--- Start the backend when none runs and send it the chat's `acp.open`
--- without waiting for the greeting or for an answer (a notification, sent
--- behind the greeting on the same channel, so the backend reads them in
--- that order). The outcome arrives as the chat's `session_started` or
--- `open_failed` event; `failed(err)` is called instead when the backend
--- could not be spawned (at once) or its greeting failed (later, from the
--- event loop: the backend is stopped then, the agent with it).
---@param spec acp.OpenSpec
---@param failed fun(err: string)
function M.send_early(spec, failed)
  local backend = require("acp.rpc.backend")
  backend.start_async(function(ok, err)
    if not ok then
      failed(tostring(err))
    end
  end)
  if backend.running() and not backend.notify("acp.open", M.params(spec)) then
    failed("could not send the chat's open to the backend; see :Acp log")
  end
end

return M
