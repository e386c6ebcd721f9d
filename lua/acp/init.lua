---@mod acp acp.nvim: chat with ACP coding agents in Neovim.
---
--- Public API (stable; see :help acp-api):
---   require("acp").setup(opts)
---   require("acp").open({ agent = NAME, cwd = DIR }) -> handle
---   require("acp").prompt(TEXT)
---   require("acp").cancel()
---   require("acp").permission_respond(request_id, option_id)
---   require("acp").toggle()

local util = require("acp.util")
local config = require("acp.config")

local M = {}

local did_init = false
local function init()
  if did_init then
    return
  end
  did_init = true
  require("acp.highlights").setup()
  require("acp.edits.review").setup()
end

--- What a chat loads before its session can start, in the order their
--- first `require`s come (acp.chat pulls in the transcript, the view and
--- markdown): 15-32 ms of `:Acp` on a loaded machine, while the agent was
--- ready sooner (issue #30).
M.CHAT_MODULES = {
  "acp.chat.view.markdown",
  "acp.chat.blocks",
  "acp.chat.transcript",
  "acp.chat",
  "acp.chat.prompt",
  "acp.chat.view.winbar",
  "acp.events",
}

--- Configure the plugin. An invalid option is left out (its default
--- applies) and named in an error message; every valid option applies.
---@param opts? table see :help acp-config
---@return boolean ok false when some options were left out
function M.setup(opts)
  init()
  local ok, errors = config.setup(opts)
  if config.options.backend.prestart then
    require("acp.chat.opening").prepare(M.CHAT_MODULES)
  end
  if not ok then
    util.notify(
      ("setup: %d option%s ignored, the rest applies:\n%s"):format(
        #errors,
        #errors == 1 and "" or "s",
        table.concat(errors, "\n")
      ),
      vim.log.levels.ERROR
    )
    return false
  end
  return true
end

---@class acp.OpenOpts
---@field agent? string agent name (default: `default_agent`)
---@field cwd? string absolute directory of the session (default: the agent's cwd, else the current directory)
---@field show? boolean show the chat windows (default true)
---@field split? boolean windows of its own, beside a chat already shown (default: it takes that chat's windows)
---@field load_session_id? string continue a stored session with session/load (history replayed)
---@field resume_session_id? string continue a stored session with session/resume (no replay)
---@field additional_directories? string[] more workspace directories of the session (see :help acp-dirs)
---@field background? boolean start the backend and the session after returning (the chat is drawn first, its winbar says "starting…"); what `:Acp` does. Default: started before returning
---@field frame? acp.Frame windows drawn already for the chat (acp.chat.layout.frame, what `:Acp` does)

--- A chat handle: `bufnr` (transcript), `chat_id`, and `session_id` (nil until
--- the session has started; filled in by the `session_started` event).
---@alias acp.Handle acp.Chat

--- Open a chat with an agent. The session starts in the background; errors
--- are shown in the transcript and with vim.notify.
---@param opts? acp.OpenOpts
---@return acp.Handle? handle, string? err
function M.open(opts)
  opts = opts or {}
  if opts.load_session_id and opts.resume_session_id then
    local err = "pass load_session_id or resume_session_id, not both"
    util.notify(err, vim.log.levels.ERROR)
    return nil, err
  end
  local name = opts.agent or config.default_agent()
  local wanted = opts.load_session_id or opts.resume_session_id
  if wanted then
    -- The session is open in a chat already: go there. A second chat on the
    -- same session broke the first when it was closed.
    local open_chat = require("acp.chat").of_session(name, wanted)
    if open_chat then
      if opts.show ~= false then
        open_chat:show()
      end
      util.notify(("this session is open in chat %d already: showing it"):format(open_chat.n))
      return open_chat
    end
  end
  local agent, err = config.agent(name)
  if not agent then
    util.notify(tostring(err), vim.log.levels.ERROR)
    return nil, err
  end
  local cwd = opts.cwd or agent.cwd or vim.fn.getcwd()
  cwd = vim.fn.fnamemodify(cwd, ":p")
  if #cwd > 1 then
    cwd = cwd:gsub("/+$", "")
  end
  if vim.fn.isdirectory(cwd) ~= 1 then
    err = ("cwd %q is not a directory; pass an existing absolute directory"):format(cwd)
    util.notify(err, vim.log.levels.ERROR)
    return nil, err
  end
  local dirs = {}
  for _, d in ipairs(opts.additional_directories or {}) do
    local full = vim.fn.fnamemodify(d, ":p"):gsub("(.)/+$", "%1")
    if vim.fn.isdirectory(full) ~= 1 then
      err = ("additional directory %q is not a directory"):format(d)
      util.notify(err, vim.log.levels.ERROR)
      return nil, err
    end
    dirs[#dirs + 1] = full
  end
  local resume = { load_session_id = opts.load_session_id, resume_session_id = opts.resume_session_id }
  local opening = require("acp.chat.opening")
  local n = opening.next_n()
  ---@type acp.Chat?
  local chat
  ---@type string? the backend failed before the chat was made
  local early_err
  --- The backend could not start, or its greeting failed (it is stopped
  --- then, the agent with it): the chat says so.
  ---@param err string
  local function failed(err)
    if not chat then
      early_err = err
      return
    end
    if require("acp.chat").get(chat.chat_id) == chat and chat.status ~= "closed" then
      chat:start_failed(err)
    end
    util.notify(err, vim.log.levels.ERROR)
  end
  ---@type acp.OpenSpec
  local spec = { chat_id = tostring(n), agent = agent, cwd = cwd, additional_directories = dirs, resume = resume }
  local greeted = package.loaded["acp.rpc.backend"] and require("acp.rpc.backend").info() ~= nil
  if opts.background and (opts.frame or greeted) then
    -- After the redraw already (`:Acp`, see toggle), or the backend runs
    -- (a notification costs nothing): the agent starts now, while the
    -- chat's modules load and the end of a loaded session is drawn below.
    opening.send_early(spec, failed)
  elseif opts.background then
    -- Spawning the backend took 20-60 ms: done once the window is drawn.
    -- A timer, not vim.schedule: scheduled callbacks run before the redraw
    -- that follows the command, a timer's after it. Armed before the chat
    -- is created so it comes before the chat's own deferred work (the
    -- transcript's filetype). A chat closed meanwhile is not started.
    vim.defer_fn(function()
      local c = chat
      if c and require("acp.chat").get(c.chat_id) == c and c.status == "opening" and not c.session_id then
        opening.send_early(spec, failed)
      end
    end, 0)
  end
  init()
  chat = require("acp.chat").create(agent, cwd, opts.frame, n)
  chat.additional_directories = dirs
  if opts.background then
    -- Its open is (being) sent: the outcome arrives as an event.
    chat.opening = resume
  end
  if early_err then
    failed(early_err)
  end
  if opts.frame then
    require("acp.chat.layout").adopt(chat)
  elseif opts.show ~= false then
    chat:show({ split = opts.split })
  end
  local drawn = false
  if wanted and require("acp.chat.backlog").NEWEST_FIRST then
    -- The end of the session at once, from the chat's own transcript of it;
    -- the agent's replay of a load is reconciled with it once whole, a
    -- resume replays nothing and keeps it (acp.chat.tail).
    drawn = require("acp.chat.tail").draw(chat, wanted, { resume = opts.resume_session_id ~= nil })
  end
  if not opts.background then
    local ok, serr = chat:start(resume, drawn)
    if not ok then
      util.notify(tostring(serr), vim.log.levels.ERROR)
    end
  end
  return chat
end

---@type acp.Frame? the windows of a chat `toggle` is creating
local framed

--- Show or hide the current chat; open one with the default agent when there
--- is none: its windows at once (acp.chat.layout.frame), the chat in them once
--- they are drawn. `:Acp` then loads a third of the modules it did and
--- returns in a few milliseconds (issue #30); the rest loads while the
--- backend starts.
function M.toggle()
  local loaded = package.loaded["acp.chat"]
  local chat = loaded and loaded.current()
  if chat then
    chat:toggle()
    return
  end
  if framed then
    for _, win in ipairs(vim.fn.win_findbuf(framed.prompt_buf)) do
      vim.api.nvim_set_current_win(win)
      return
    end
  end
  local frame = require("acp.chat.layout").frame(config.default_agent())
  framed = frame
  -- A timer, not vim.schedule: it runs after the redraw (see open()).
  vim.defer_fn(function()
    framed = nil
    if vim.v.exiting ~= vim.NIL then
      -- Quit right after `:Acp`: a chat made while Neovim exits hung it.
      return
    end
    -- The backend and the agent start while the chat's modules load
    -- (acp.chat.opening.send_early, in open()).
    local opened = M.open({ background = true, frame = frame })
    if not opened then
      require("acp.chat.layout").drop_frame(frame)
      return
    end
    -- What the session's first events need (5-20 ms of module loading),
    -- loaded while the agent starts rather than when `session_started`
    -- arrives. Scheduled: the greeting's answer may come first.
    vim.schedule(function()
      require("acp.events")
      require("acp.chat.view.winbar")
    end)
  end, 0)
end

--- Send text to the current chat.
---@param text string
---@return boolean ok, string? err
function M.prompt(text)
  local chat = require("acp.chat").current()
  if not chat then
    local err = "no chat to send to; open one with :Acp or require('acp').open()"
    util.notify(err, vim.log.levels.ERROR)
    return false, err
  end
  return chat:send({ { type = "text", text = text } })
end

--- Rewind the current chat: files and conversation back to before turn
--- `opts.turn` (a picker of the turns without it; `opts.preview` only shows
--- what would change). The outcome fires `User AcpRewound` with
--- `{chat_id, turn, ok, reason}`. See |acp-rewind|.
---@param opts? {turn?: integer, preview?: boolean}
---@return boolean ok, string? reason why the rewind did not start
function M.rewind(opts)
  local chat = require("acp.chat").current()
  if not chat then
    return false, "no chat to rewind; open one with :Acp"
  end
  return require("acp.edits.rewind").rewind(chat, opts)
end

--- Cancel the running turn of the current chat.
function M.cancel()
  local chat = require("acp.chat").current()
  if chat then
    chat:cancel()
  else
    util.notify("no chat to cancel", vim.log.levels.WARN)
  end
end

--- Answer a permission request (from an `AcpPermissionRequest` autocmd).
--- `option_id` nil dismisses it (the agent is told "cancelled").
---@param request_id integer
---@param option_id? string
---@return boolean ok false when the request is not pending
function M.permission_respond(request_id, option_id)
  return require("acp.chat.view.permission").respond(request_id, option_id)
end

--- Answer an agent's question (from an `AcpElicitationRequest` autocmd).
--- `response` is `{ action = "accept", content = { field = value, ... } }`
--- (a URL is accepted without content), `{ action = "decline" }` or
--- `{ action = "cancel" }`. A form answer that does not fit the form is
--- refused: `false` and a sentence naming every problem; the question stays
--- open.
---@param request_id integer
---@param response {action: "accept"|"decline"|"cancel", content?: table}
---@return boolean ok, string? err
function M.elicitation_respond(request_id, response)
  return require("acp.chat.view.elicitation").respond(request_id, response)
end

--- Pick a chat with vim.ui.select and show it (in place of the chat shown).
function M.pick_chat()
  local list = require("acp.chat").list
  if #list == 0 then
    util.notify("no chat yet; open one with :Acp")
    return
  end
  vim.ui.select(vim.list_slice(list), {
    prompt = "acp.nvim: chats",
    format_item = function(chat)
      return chat:describe()
    end,
    kind = "acp.chat",
  }, function(chat)
    if chat and require("acp.chat").get(chat.chat_id) then
      chat:show()
    end
  end)
end

--- All open chats, oldest first.
---@return acp.Handle[]
function M.chats()
  return vim.list_slice(require("acp.chat").list)
end

return M
