---@mod acp.chat A chat: the list of chats, its transcript and prompt
--- buffers and its life (created, started, closed, reopened, restarted). Its
--- other methods, by idea: acp.chat.window (windows, keys, winbar),
--- acp.chat.turns (prompts sent or queued, cancel, turn end),
--- acp.chat.session (the backend's events of its session) and
--- acp.chat.permissions (the pending permission requests' keys).

local api = vim.api
local util = require("acp.util")
local config = require("acp.config")
local Transcript = require("acp.chat.transcript")
local View = require("acp.chat.blocks")
local permission = require("acp.chat.view.permission")
local hooks = require("acp.rpc.hooks")
local index = require("acp.chat.index")

local M = {}

---@alias acp.ChatStatus "opening"|"ready"|"busy"|"cancelling"|"failed"|"dead"|"closed"|"readonly"

---@class (partial) acp.Chat
---@field chat_id string id shared with the backend
---@field n integer number in the buffer name `acp://chat/<n>`
---@field bufnr integer transcript buffer
---@field prompt_buf integer prompt input buffer
---@field session_id? string set when `session_started` arrives
---@field restart_note? string what a restart did, written once the session is back
---@field load_note? string the note of a restart loading the session, written before its replayed history
---@field backend_died? boolean the chat is dead because the backend stopped (`:Acp restart`, not `R`)
---@field agent acp.ResolvedAgent
---@field cwd string
---@field status acp.ChatStatus
---@field transcript acp.Transcript
---@field queue acp.QueuedPrompt[] prompts waiting to be sent
---@field modes? acp.Modes
---@field config_options? table[]
---@field usage? table {used, size, cost?}
---@field title? string
---@field listed_title? string the session's title in the agent's session list (`:Acp sessions`)
---@field first_prompt? string the first line of the first prompt sent, a name until there is a title
---@field commands table[]
---@field capabilities? table
---@field terminals table<string, acp.TerminalState>
---@field digit_keys boolean digit keys are mapped (a permission is pending)
---@field ["readonly"]? boolean a transcript reopened from its file: no session, no prompts
---@field transcript_path? string where the backend writes this session's transcript
---@field auth_methods? table[] the agent's auth methods, after `auth_required`
---@field opening? table the load/resume/auth options of the running `acp.open`
---@field following? boolean the editor window follows the agent's tool calls
---@field followed? string the last location shown while following
---@field history_pos? integer position in the prompt history while recalling
---@field history_draft? string[] what was in the prompt when recalling began
---@field prompt_ft? string the prompt's filetype, until it is set (set_prompt_filetype)
---@field rewind_pending? {turn?: integer, preview?: boolean, edit?: string} a rewind sent to the backend, until its answer (acp.edits.rewind)
local Chat = {}
Chat.__index = Chat

---@class acp.QueuedPrompt
---@field blocks table[]|fun(): table[] content blocks, or a function building them when sent
---@field text? string what the user typed (put back in the prompt when the queue is cancelled)

-- The chats, found by id, buffer or session (acp.chat.index, which the
-- views require instead of this module).
M.chats = index.chats
M.list = index.list
M.get = index.get
M.of_buf = index.of_buf
M.of_session = index.of_session
M.current = index.current

--- Options a filetype change must not take back.
local NOT_OURS = { filetype = true, syntax = true, modified = true }

--- Set a buffer's filetype after the plugin set its own buffer options
--- (the prompt's 'omnifunc', 'completeopt', ...): every option the plugin
--- gave a value other than the default keeps it, as when the filetype came
--- first (the markdown ftplugin sets the HTML 'omnifunc').
---@param buf integer
---@param ft string
local function set_filetype_keeping_ours(buf, ft)
  local ours = {}
  for name, info in pairs(api.nvim_get_all_options_info()) do
    if info.scope == "buf" and not NOT_OURS[name] then
      local v = api.nvim_get_option_value(name, { buf = buf })
      if v ~= api.nvim_get_option_value(name, { scope = "global" }) then
        ours[name] = v
      end
    end
  end
  vim.bo[buf].filetype = ft
  for name, v in pairs(ours) do
    if api.nvim_get_option_value(name, { buf = buf }) ~= v then
      pcall(api.nvim_set_option_value, name, v, { buf = buf })
    end
  end
end

---@param name string
---@param buf? integer a buffer made already (acp.chat.layout's frame)
---@return integer
local function scratch(name, buf)
  if not (buf and api.nvim_buf_is_valid(buf)) then
    buf = api.nvim_create_buf(false, true)
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "hide"
    vim.bo[buf].swapfile = false
  end
  -- Naming a buffer runs BufFilePost, which only file plugins listen to
  -- (Neovim's editorconfig loads and reads the disk for it): a name of
  -- ours is no file.
  pcall(vim.api.nvim_exec2, ("noautocmd call nvim_buf_set_name(%d, %s)"):format(buf, vim.fn.string(name)), {})
  return buf
end

--- Create a chat (buffers, no windows, not started).
---@param agent acp.ResolvedAgent
---@param cwd string absolute directory
---@param frame? acp.Frame buffers drawn already (acp.chat.layout.frame), taken
---@param n? integer its number, taken already (acp.chat.opening.next_n: its open was sent first)
---@return acp.Chat
function M.create(agent, cwd, frame, n)
  n = n or require("acp.chat.opening").next_n()
  local self = setmetatable({
    chat_id = tostring(n),
    n = n,
    agent = agent,
    cwd = cwd,
    status = "opening",
    queue = {},
    commands = {},
    terminals = {},
    digit_keys = false,
  }, Chat)
  -- Not "markdown": its regex syntax (and a user's treesitter FileType
  -- autocommand) would parse the whole transcript on every redraw; the
  -- transcript draws its own markdown, incrementally (acp.chat.view.markdown).
  self.bufnr = scratch("acp://chat/" .. n, frame and frame.bufnr)
  -- The filetype is set with the prompt's (set_prompt_filetype): setting
  -- it searches the runtime path for its syntax, ftplugin and indent files
  -- and runs the user's FileType autocommands (a treesitter start: 7-14 ms
  -- of loading vim.treesitter with an ordinary config, which held the
  -- session's start behind it, issue #30).
  -- With 'breakindentopt' list:-1 (acp.chat.blocks), a wrapped line of tool output
  -- (`  │ ...`) or of a list item continues under its text.
  vim.bo[self.bufnr].formatlistpat = [[^\s*\%(│\|[-*+]\|\d\+[.)]\)\s\+]]
  vim.bo[self.bufnr].undolevels = -1
  vim.bo[self.bufnr].modifiable = false
  -- The prompt is markdown for the user's own markdown set-up, which an
  -- ordinary config makes cost 30-80 ms (the regex syntax, a FileType
  -- autocommand starting treesitter): set once the session started
  -- (acp.events), off the `:Acp` path and after the agent's answer instead
  -- of in front of it; after a second when no session starts.
  self.prompt_buf = scratch("acp://prompt/" .. n, frame and frame.prompt_buf)
  self.prompt_ft = "markdown"
  self:set_prompt_filetype_later(1000)
  self.transcript = Transcript.new(self, self.bufnr)
  M.chats[self.chat_id] = self
  M.list[#M.list + 1] = self
  index.last_id = self.chat_id
  self:_keymaps()
  require("acp.chat.prompt").attach(self)
  api.nvim_create_autocmd("BufWinEnter", {
    buffer = self.bufnr,
    callback = function()
      local win = api.nvim_get_current_win()
      View.setup_window(win)
      self:update_winbar()
    end,
  })
  for _, b in ipairs({ self.bufnr, self.prompt_buf }) do
    api.nvim_create_autocmd({ "BufEnter", "WinEnter" }, {
      buffer = b,
      callback = function()
        index.last_id = self.chat_id
      end,
    })
  end
  return self
end

--- Milliseconds without a typed key or an event batch before the prompt's
--- filetype is set (`set_prompt_filetype_later`).
M.FILETYPE_IDLE_MS = 300

--- When acp.events last dispatched a batch (`vim.uv.hrtime()`).
M.last_event = 0

--- When a key was last typed (`vim.uv.hrtime()`), watched while a chat
--- waits to set its prompt's filetype.
local last_key = 0
local key_ns = api.nvim_create_namespace("acp.chat.filetype_keys")
--- Chats waiting to set the prompt's filetype, by id.
---@type table<string, true>
local waiting_ft = {}

--- Give the transcript its filetype, once (see M.create).
function Chat:set_transcript_filetype()
  if api.nvim_buf_is_valid(self.bufnr) and vim.bo[self.bufnr].filetype == "" then
    vim.bo[self.bufnr].filetype = "acpchat"
  end
end

--- Give the prompt its filetype, once (see M.create).
function Chat:set_prompt_filetype()
  local pb, ft = self.prompt_buf, self.prompt_ft
  self.prompt_ft = nil
  if ft and api.nvim_buf_is_valid(pb) and vim.bo[pb].filetype == "" then
    set_filetype_keeping_ours(pb, ft)
  end
end

--- Set the transcript's and the prompt's filetypes in `ms`, once the chat's
--- history is neither arriving nor being drawn (acp.chat.backlog,
--- acp.chat.replay): the user's FileType autocommands for them were the
--- longest wait of a 2,000-turn load, in its middle. Until then the prompt
--- is plain text. The two are set in callbacks of their own, and the
--- prompt's once no key was typed and no event came for `FILETYPE_IDLE_MS`:
--- under the ordinary config of bench/tui_init.lua its `markdown` costs
--- 45-65 ms of CPU in one call that nothing here can cut (the regex
--- syntax/markdown.vim, ~21 ms for every buffer, and the config's treesitter
--- start compiling the markdown highlights query, 25-40 ms once per Neovim),
--- and a user who types the next prompt while the older turns fill in or the
--- agent answers should not wait for it between two letters.
---@param ms integer
function Chat:set_prompt_filetype_later(ms)
  self:watch_keys()
  vim.defer_fn(function()
    local id = self.chat_id
    if not self.prompt_ft or not index.get(id) then
      self:unwatch_keys()
      return
    end
    local replay = require("acp.chat.replay")
    if replay.pending(id) or replay.filling(id) or require("acp.chat.backlog").holding(id) then
      self:set_prompt_filetype_later(100)
      return
    end
    if api.nvim_buf_is_valid(self.bufnr) and vim.bo[self.bufnr].filetype == "" then
      self:set_transcript_filetype()
      self:set_prompt_filetype_later(0)
      return
    end
    -- Nor in the middle of an answer: set while the agent streamed, it was
    -- a wait of 60-65 ms between two batches of a 100,000-chunk answer in
    -- bench/tui_stream.lua.
    local idle = (vim.uv.hrtime() - math.max(last_key, M.last_event)) / 1e6
    if idle < M.FILETYPE_IDLE_MS then
      self:set_prompt_filetype_later(math.ceil(M.FILETYPE_IDLE_MS - idle))
      return
    end
    self:unwatch_keys()
    self:set_prompt_filetype()
  end, ms)
end

--- Note the time of typed keys while this chat waits to set its prompt's
--- filetype (one watcher for every chat, from its creation on).
function Chat:watch_keys()
  if not next(waiting_ft) then
    vim.on_key(function()
      last_key = vim.uv.hrtime()
    end, key_ns)
  end
  waiting_ft[self.chat_id] = true
end

--- Stop noting typed keys for this chat (the last one: the watcher goes).
function Chat:unwatch_keys()
  waiting_ft[self.chat_id] = nil
  if not next(waiting_ft) then
    vim.on_key(nil, key_ns)
  end
end

--- Mark the chat failed: its backend could not start (the sentence is
--- shown in the transcript).
---@param err? string
function Chat:start_failed(err)
  self.status = "failed"
  self.transcript.view:batch(function()
    self.transcript:error(err or "the backend could not start")
  end)
  self:update_winbar()
end

--- Ask the backend to open the session. The outcome arrives as an event.
---@param resume? {load_session_id?: string, resume_session_id?: string, auth_method_id?: string, fallback_new?: boolean, checkpoints?: string} continue a stored session; log in first; open a new session if the load/resume fails
---@param drawn? boolean the prompts already drawn are this opening's (acp.chat.tail drew the end of the loaded session from the transcript): they keep counting as its turns
---@return boolean ok, string? err
function Chat:start(resume, drawn)
  if self.readonly then
    return false, "this chat is a read-only transcript"
  end
  self.opening = resume
  local backend = require("acp.rpc.backend")
  local ok, err = backend.ensure()
  if not ok then
    self:start_failed(err)
    return false, err
  end
  self.status = "opening"
  self.session_id = nil
  if not drawn then
    self.transcript:session_opening()
  end
  local params = require("acp.chat.opening").params({
    chat_id = self.chat_id,
    agent = self.agent,
    cwd = self.cwd,
    additional_directories = self.additional_directories,
    resume = resume,
  })
  local res, rerr = backend.request("acp.open", params)
  if res == nil then
    self.status = "failed"
    self.transcript.view:batch(function()
      self.transcript:error("could not open the chat: " .. tostring(rerr))
    end)
    self:update_winbar()
    return false, rerr
  end
  self:update_winbar()
  return true
end

-- Windows ------------------------------------------------------------------

--- Close the chat: end the session, wipe its buffers.
function Chat:close()
  if self.status ~= "closed" and not self.readonly then
    local backend = require("acp.rpc.backend")
    if backend.running() then
      backend.request("acp.close", { chat_id = self.chat_id })
    end
  end
  self.status = "closed"
  permission.drop_chat(self.chat_id)
  require("acp.chat.view.elicitation").close_chat(self.chat_id, "the chat was closed")
  require("acp.edits.review").drop_chat(self.chat_id)
  if package.loaded["acp.chat.backlog"] then
    package.loaded["acp.chat.backlog"].drop(self.chat_id)
  end
  self:hide()
  M.chats[self.chat_id] = nil
  for i, c in ipairs(M.list) do
    if c == self then
      table.remove(M.list, i)
      break
    end
  end
  if index.last_id == self.chat_id then
    index.last_id = M.list[#M.list] and M.list[#M.list].chat_id or nil
  end
  for _, b in ipairs({ self.prompt_buf, self.bufnr }) do
    if api.nvim_buf_is_valid(b) then
      pcall(api.nvim_buf_delete, b, { force = true })
    end
  end
end

--- How to bring the chat back, as its transcript says it: the agent
--- restarted by the transcript's key or `:Acp continue`, or, when the
--- backend stopped, `:Acp restart`.
---@return string
function Chat:way_out()
  if self.backend_died then
    return "run :Acp restart to continue"
  end
  local key = config.options.keymaps.restart
  return (key and ("press %s in the transcript or run"):format(key) or "run") .. " :Acp continue to restart it"
end

--- Open the chat's session again after its agent or the backend stopped:
--- resumed when the agent can (no replay, the transcript stays), else
--- loaded (the agent replays the history below a note), else a new session.
--- When the agent no longer knows the session, a new one starts.
---@return boolean ok, string? err
function Chat:reopen()
  if self.status == "closed" or self.readonly then
    return false, self.readonly and "this chat is a read-only transcript" or "closed"
  end
  self.terminals = {}
  local caps = self.capabilities or {}
  local session_caps = caps.session_capabilities or {}
  local id = self.session_id
  local opts
  self.restart_note = nil
  self.load_note = nil
  if id and session_caps.resume ~= nil then
    opts = { resume_session_id = id, fallback_new = true }
    -- Written once the agent took the session back (on_session_started).
    self.restart_note = "— restarted: session resumed —"
  elseif id and caps.load_session == true then
    opts = { load_session_id = id, fallback_new = true }
    -- Written before the first entry of the history it announces (or once
    -- the session is back, when it has none): not now, as a load the agent
    -- then refuses (the fake killed and restarted, -32002) was followed by
    -- a second note saying a new session started.
    self.load_note = "— restarted: the session is loaded again; its history is replayed below —"
  else
    self.restart_note = "— restarted: new session (the agent cannot resume or load sessions) —"
  end
  self.transcript.view:batch(function()
    -- The new session numbers its entries from 0 again.
    self.transcript:forget_entries()
  end)
  return self:start(opts)
end

--- Add a workspace directory to the chat (`:Acp add-dir`): the session
--- continues (resumed or loaded) with it among its roots. Only between turns.
---@param dir string
---@return boolean ok, string? err
function Chat:add_directory(dir)
  local full = vim.fn.fnamemodify(dir, ":p"):gsub("(.)/+$", "%1")
  if vim.fn.isdirectory(full) ~= 1 then
    return false, ("%q is not a directory"):format(dir)
  end
  if self.status ~= "ready" then
    return false, ("the chat is %s; add directories between turns"):format(self.status)
  end
  self.additional_directories = self.additional_directories or {}
  if full == self.cwd or vim.tbl_contains(self.additional_directories, full) then
    return false, ("%s is a workspace directory of this chat already"):format(full)
  end
  table.insert(self.additional_directories, full)
  self.transcript.view:batch(function()
    self.transcript:note(("— directory added: %s —"):format(full))
  end)
  return self:reopen()
end

--- Restart a stopped agent (or backend) and continue the session.
---@return boolean ok, string? err
function Chat:restart()
  if self.readonly then
    util.notify("this chat is a read-only transcript; :Acp sessions opens the session itself", vim.log.levels.WARN)
    return false
  end
  if self.status ~= "dead" and self.status ~= "failed" then
    util.notify(("the agent of this chat is running (%s); nothing to restart"):format(self.status))
    return false
  end
  local backend = require("acp.rpc.backend")
  if not backend.running() then
    -- :Acp restart also reopens every other chat.
    return backend.restart()
  end
  return self:reopen()
end

-- The backend died: nothing of any chat runs any more. History still being
-- drawn came before the death: shown first, so a queued `session_started`
-- cannot mark the chat ready after it died.
hooks.on("died", "acp.chat", function(log_file)
  local backlog = package.loaded["acp.chat.backlog"]
  if backlog then
    backlog.release_all()
  end
  local replay = package.loaded["acp.chat.replay"]
  if replay then
    replay.flush()
  end
  for _, chat in ipairs(M.list) do
    pcall(chat.on_backend_died, chat, log_file)
  end
end)

-- `:Acp restart` started a new backend: every chat opens again.
hooks.on("restarted", "acp.chat", function()
  for _, chat in ipairs(M.list) do
    chat:reopen()
  end
end)

-- The chat's methods, by idea: each part returns its methods and requires
-- neither this module nor another part.
for _, methods in ipairs({
  require("acp.chat.window"),
  require("acp.chat.turns"),
  require("acp.chat.session"),
  require("acp.chat.permissions"),
}) do
  for name, fn in pairs(methods) do
    Chat[name] = fn
  end
end

M.Chat = Chat

return M
