---@mod acp.chat A chat: its transcript and prompt buffers, windows, keys,
--- lifecycle state and the handlers of the backend events that concern it.

local api = vim.api
local util = require("acp.util")
local config = require("acp.config")
local Transcript = require("acp.transcript")
local View = require("acp.view")
local permission = require("acp.permission")

local M = {}

---@alias acp.ChatStatus "opening"|"ready"|"busy"|"cancelling"|"failed"|"dead"|"closed"|"readonly"

---@class acp.Chat
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
---@field readonly? boolean a transcript reopened from its file: no session, no prompts
---@field transcript_path? string where the backend writes this session's transcript
---@field auth_methods? table[] the agent's auth methods, after `auth_required`
---@field opening? table the load/resume/auth options of the running `acp.open`
---@field following? boolean the editor window follows the agent's tool calls
---@field followed? string the last location shown while following
---@field history_pos? integer position in the prompt history while recalling
---@field history_draft? string[] what was in the prompt when recalling began
---@field prompt_ft? string the prompt's filetype, until it is set (set_prompt_filetype)
local Chat = {}
Chat.__index = Chat

---@class acp.QueuedPrompt
---@field blocks table[]|fun(): table[] content blocks, or a function building them when sent
---@field text? string what the user typed (put back in the prompt when the queue is cancelled)

---@type table<string, acp.Chat>
M.chats = {}
---@type acp.Chat[] in creation order
M.list = {}
---@type string? the chat used by commands when the cursor is in no chat
M.last_id = nil

--- The chat with this id.
---@param chat_id string
---@return acp.Chat?
function M.get(chat_id)
  return M.chats[chat_id]
end

--- The chat of a buffer (transcript or prompt).
---@param buf integer
---@return acp.Chat?
function M.of_buf(buf)
  for _, chat in ipairs(M.list) do
    if chat.bufnr == buf or chat.prompt_buf == buf then
      return chat
    end
  end
end

--- The live chat (not a read-only transcript) on a session of an agent.
---@param agent_name string
---@param session_id string
---@return acp.Chat?
function M.of_session(agent_name, session_id)
  for _, chat in ipairs(M.list) do
    if chat.session_id == session_id and chat.agent.name == agent_name and not chat.readonly then
      return chat
    end
  end
end

--- The current chat: the one of the current buffer, else the last used one.
---@return acp.Chat?
function M.current()
  local chat = M.of_buf(api.nvim_get_current_buf())
  if chat then
    return chat
  end
  if M.last_id and M.chats[M.last_id] then
    return M.chats[M.last_id]
  end
end

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
---@param buf? integer a buffer made already (acp.layout's frame)
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
  pcall(vim.cmd, ("noautocmd call nvim_buf_set_name(%d, %s)"):format(buf, vim.fn.string(name)))
  return buf
end

--- Create a chat (buffers, no windows, not started).
---@param agent acp.ResolvedAgent
---@param cwd string absolute directory
---@param frame? acp.Frame buffers drawn already (acp.layout.frame), taken
---@param n? integer its number, taken already (acp.opening.next_n: its open was sent first)
---@return acp.Chat
function M.create(agent, cwd, frame, n)
  n = n or require("acp.opening").next_n()
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
  -- transcript draws its own markdown, incrementally (acp.markdown).
  self.bufnr = scratch("acp://chat/" .. n, frame and frame.bufnr)
  -- The filetype is set with the prompt's (set_prompt_filetype): setting
  -- it searches the runtime path for its syntax, ftplugin and indent files
  -- and runs the user's FileType autocommands (a treesitter start: 7-14 ms
  -- of loading vim.treesitter with an ordinary config, which held the
  -- session's start behind it, issue #30).
  -- With 'breakindentopt' list:-1 (acp.view), a wrapped line of tool output
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
  vim.defer_fn(function()
    self:set_prompt_filetype()
  end, 1000)
  self.transcript = Transcript.new(self, self.bufnr)
  M.chats[self.chat_id] = self
  M.list[#M.list + 1] = self
  M.last_id = self.chat_id
  self:_keymaps()
  require("acp.prompt").attach(self)
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
        M.last_id = self.chat_id
      end,
    })
  end
  return self
end

--- Give the transcript and the prompt their filetypes, once (see M.create).
function Chat:set_prompt_filetype()
  local pb, ft = self.prompt_buf, self.prompt_ft
  self.prompt_ft = nil
  if api.nvim_buf_is_valid(self.bufnr) and vim.bo[self.bufnr].filetype == "" then
    vim.bo[self.bufnr].filetype = "acpchat"
  end
  if ft and api.nvim_buf_is_valid(pb) and vim.bo[pb].filetype == "" then
    set_filetype_keeping_ours(pb, ft)
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
---@param drawn? boolean the prompts already drawn are this opening's (acp.tail drew the end of the loaded session from the transcript): they keep counting as its turns
---@return boolean ok, string? err
function Chat:start(resume, drawn)
  if self.readonly then
    return false, "this chat is a read-only transcript"
  end
  self.opening = resume
  local backend = require("acp.backend")
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
  local params = require("acp.opening").params({
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

---@return integer[] windows showing the transcript
function Chat:transcript_wins()
  return vim.fn.win_findbuf(self.bufnr)
end

---@return boolean
function Chat:is_visible()
  local tab = api.nvim_get_current_tabpage()
  for _, win in ipairs(self:transcript_wins()) do
    if api.nvim_win_get_tabpage(win) == tab then
      return true
    end
  end
  return false
end

--- Show the chat windows in the current tab (or focus them when shown),
--- in place of another chat shown there unless `opts.split`.
---@param opts? {split?: boolean}
function Chat:show(opts)
  require("acp.layout").show(self, opts)
end

--- One line describing the chat (for pickers).
---@return string
function Chat:describe()
  local status = self.readonly and "read-only" or self.status
  local pending = #permission.for_chat(self.chat_id)
  return ("%d  %s  %s  [%s%s]%s"):format(
    self.n,
    self.agent.name,
    self.title or self.listed_title or self.first_prompt or self.session_id or "(new session)",
    status,
    pending > 0 and (", " .. pending .. " waiting for you") or "",
    self:is_visible() and "  (shown)" or ""
  )
end

--- Close the chat windows (all tabs); the chat keeps running.
function Chat:hide()
  require("acp.layout").hide(self)
end

--- Show or hide.
function Chat:toggle()
  if self:is_visible() then
    self:hide()
  else
    self:show()
  end
end

--- Put the cursor in the prompt input, in insert mode.
function Chat:focus_prompt()
  for _, win in ipairs(vim.fn.win_findbuf(self.prompt_buf)) do
    api.nvim_set_current_win(win)
    vim.cmd("startinsert!")
    return
  end
  self:show()
end

-- Keys ---------------------------------------------------------------------

local function map(buf, mode, lhs, fn, desc)
  if lhs then
    vim.keymap.set(mode, lhs, fn, { buffer = buf, nowait = true, silent = true, desc = "acp.nvim: " .. desc })
  end
end

function Chat:_keymaps()
  local k = config.options.keymaps
  local tb, pb = self.bufnr, self.prompt_buf
  map(pb, "n", k.submit, function()
    self:submit()
  end, "send the prompt")
  map(pb, "i", k.submit_insert, function()
    self:submit()
  end, "send the prompt")
  -- In Insert mode too, as :help says: the user is typing the next prompt
  -- while the agent works.
  map(pb, "i", k.cancel, function()
    self:cancel()
  end, "cancel the turn")
  for _, b in ipairs({ tb, pb }) do
    map(b, "n", k.cancel, function()
      self:cancel()
    end, "cancel the turn")
    map(b, "n", k.close, function()
      self:hide()
    end, "hide the chat")
  end
  map(tb, "n", k.jump, function()
    self:activate(api.nvim_win_get_cursor(0)[1] - 1)
  end, "open the diff, location or permission under the cursor")
  map(tb, "n", k.diff, function()
    local a = self.transcript:diff_at(api.nvim_win_get_cursor(0)[1] - 1)
    if a then
      require("acp.tool_call").open_diff(a)
    else
      util.notify("no diff under the cursor")
    end
  end, "open the diff of the tool call")
  map(tb, "n", k.permission, function()
    self:pick_permission()
  end, "answer a permission request")
  map(tb, "n", k.focus_prompt, function()
    self:focus_prompt()
  end, "write a prompt")
  map(tb, "n", k.restart, function()
    self:restart()
  end, "restart a stopped agent and continue the session")
  map(tb, "n", k.open_review, function()
    self:open_review(api.nvim_win_get_cursor(0)[1] - 1)
  end, "open the edited file with its inline diff (or preview a pending edit)")
  map(tb, "n", k.yank_code, function()
    require("acp.code_block").yank(self)
  end, "yank the code block under the cursor")
  map(tb, "n", k.open_code, function()
    require("acp.code_block").open(self)
  end, "open the code block under the cursor in a split")
  map(tb, "n", k.edit_prompt, function()
    require("acp.prompt").edit_again(self, api.nvim_win_get_cursor(0)[1] - 1)
  end, "edit the prompt under the cursor to send it again")
  map(tb, "n", k.rewind_prompt, function()
    local ok, why = require("acp.rewind").edit_from(self, api.nvim_win_get_cursor(0)[1] - 1)
    if not ok then
      util.notify(tostring(why), vim.log.levels.WARN)
    end
  end, "rewind to before the prompt under the cursor and edit it to send again")
end

--- The tool call block at `row`: with a pending permission whose tool call
--- carries a diff, preview the edit in its buffer; else open the file it
--- edited with the inline review diff.
---@param row integer 0-based
function Chat:open_review(row)
  local review = require("acp.review")
  local block = self.transcript.view:block_at(row)
  if not block or block.kind ~= "tool_call" then
    util.notify("no tool call under the cursor")
    return
  end
  local req = block.data.permission
  if req and permission.pending[req.request_id] and review.diff_of(req.tool_call or {}) then
    review.preview(req)
    return
  end
  local state = block.data.state or {}
  local d = review.diff_of(state)
  local path = d and d.path
  if not path then
    local loc = (state.locations or {})[1]
    path = loc and loc.path
  end
  if not path then
    util.notify("this tool call names no file")
    return
  end
  review.open(path)
end

--- Act on the line at `row` of the transcript (0-based).
---@param row integer
function Chat:activate(row)
  local a = self.transcript:action_at(row)
  if not a then
    return
  end
  if a.type == "diff" then
    require("acp.tool_call").open_diff(a)
  elseif a.type == "location" then
    require("acp.tool_call").jump(a)
  elseif a.type == "permission" then
    local req = permission.pending[a.request_id]
    if req then
      permission.select(self.chat_id, req)
    end
  elseif a.type == "elicitation" then
    require("acp.elicitation").activate(a.request_id)
  end
end

--- The permission request the keys answer: the one under the cursor when the
--- cursor is in the transcript, else the oldest pending one.
---@return acp.PermissionRequest?
function Chat:target_permission()
  if api.nvim_get_current_buf() == self.bufnr then
    local req = self.transcript:permission_at(api.nvim_win_get_cursor(0)[1] - 1)
    if req and permission.pending[req.request_id] then
      return req
    end
  end
  return permission.for_chat(self.chat_id)[1]
end

--- Answer a permission request with vim.ui.select.
function Chat:pick_permission()
  local req = self:target_permission()
  if req then
    permission.select(self.chat_id, req)
  else
    util.notify("no permission request is waiting in this chat")
  end
end

--- Map 1..9 in the transcript while a permission request is pending (and
--- only then, so counts work the rest of the time).
function Chat:update_permission_keys()
  local pending = #permission.for_chat(self.chat_id) > 0
  if pending == self.digit_keys or not api.nvim_buf_is_valid(self.bufnr) then
    return
  end
  self.digit_keys = pending
  -- The prompt too (normal mode): the user is often there when the agent
  -- asks, and the transcript says "press 1-4". Counts come back when no
  -- permission is pending.
  local bufs = { self.bufnr }
  if self.prompt_buf and api.nvim_buf_is_valid(self.prompt_buf) then
    bufs[2] = self.prompt_buf
  end
  for _, buf in ipairs(bufs) do
    for i = 1, 9 do
      local lhs = tostring(i)
      if pending then
        map(buf, "n", lhs, function()
          local req = self:target_permission()
          if req then
            permission.respond_nth(req, i)
          end
        end, "answer the permission request with option " .. i)
      else
        pcall(vim.keymap.del, "n", lhs, { buffer = buf })
      end
    end
  end
  -- After <C-s> the user is still in Insert mode in the prompt when the
  -- agent asks: digits typed into an empty prompt answer (the prompt says
  -- so); once the user writes the next prompt, digits are text again.
  if self.prompt_buf and api.nvim_buf_is_valid(self.prompt_buf) then
    for i = 1, 9 do
      local lhs = tostring(i)
      if pending then
        vim.keymap.set("i", lhs, function()
          if not self:prompt_is_empty() then
            return lhs
          end
          local req = self:target_permission()
          if req then
            -- Not while the mapping runs: answering redraws the transcript.
            vim.schedule(function()
              permission.respond_nth(req, i)
            end)
            return ""
          end
          return lhs
        end, {
          buffer = self.prompt_buf,
          expr = true,
          nowait = true,
          desc = "acp.nvim: answer the permission request with option " .. i .. " (empty prompt)",
        })
      else
        pcall(vim.keymap.del, "i", lhs, { buffer = self.prompt_buf })
      end
    end
  end
end

---@return boolean the prompt input holds no text
function Chat:prompt_is_empty()
  if not api.nvim_buf_is_valid(self.prompt_buf) then
    return true
  end
  local lines = api.nvim_buf_get_lines(self.prompt_buf, 0, -1, false)
  return vim.trim(table.concat(lines, "")) == ""
end

-- Prompts ------------------------------------------------------------------

--- Send the text of the prompt buffer and clear it.
function Chat:submit()
  local lines = api.nvim_buf_get_lines(self.prompt_buf, 0, -1, false)
  local text = vim.trim(table.concat(lines, "\n"))
  if text == "" then
    return
  end
  local context = require("acp.context")
  -- Mentions become content blocks when the prompt is sent: by then the
  -- agent's capabilities are known and buffers are read as they are.
  local blocks = context.has_mentions(text) and context.deferred(self, text) or { { type = "text", text = text } }
  if self:send(blocks, text) then
    require("acp.prompt").remember(text)
    self.history_pos, self.history_draft = nil, nil
    api.nvim_buf_set_lines(self.prompt_buf, 0, -1, false, {})
    if vim.fn.pumvisible() == 1 and api.nvim_get_mode().mode:sub(1, 1) == "i" then
      -- Sent with <C-s> while the menu of a `/command` was open: the menu
      -- and its info window stayed over the emptied prompt. No matches
      -- close it; <C-e> would close it too but put the typed text back.
      vim.fn.complete(1, {})
    end
  end
end

--- Send a prompt (ACP content blocks). While the session is opening or a turn
--- runs, the prompt is queued and sent when the chat is ready. `blocks` may
--- be a function returning the blocks, called when the prompt is sent.
---@param blocks table[]|fun(): table[]
---@param text? string the text the user typed (default: the text blocks)
---@return boolean ok, string? err
function Chat:send(blocks, text)
  if self.status == "readonly" then
    local err =
      "this chat is a read-only transcript; start a new one with :Acp new, or pick a session with :Acp sessions"
    util.notify(err, vim.log.levels.ERROR)
    return false, err
  end
  if self.status == "dead" or self.status == "failed" or self.status == "closed" then
    -- The way out the transcript names (it named other commands).
    local err = self.status == "closed" and "this chat is closed; start a new one with :Acp new"
      or ("this chat's agent %s; %s, or start a new chat with :Acp new"):format(
        self.status == "dead" and "stopped" or "did not start",
        self:way_out()
      )
    util.notify(err, vim.log.levels.ERROR)
    return false, err
  end
  if text == nil and type(blocks) == "table" then
    local parts = {}
    for _, b in ipairs(blocks) do
      if b.type == "text" and type(b.text) == "string" then
        parts[#parts + 1] = b.text
      end
    end
    text = table.concat(parts, "\n")
  end
  if not self.first_prompt and type(text) == "string" then
    -- A name for pickers until the agent gives a title (Claude gives none
    -- in the session, only in its session list: `:Acp chats` showed ids).
    local line = vim.trim((text:match("[^\n]*%S[^\n]*") or ""))
    if line ~= "" then
      self.first_prompt = vim.fn.strcharlen(line) > 60 and (vim.fn.strcharpart(line, 0, 59) .. "…") or line
    end
  end
  self.queue[#self.queue + 1] = { blocks = blocks, text = text }
  -- The user sent something: show it, wherever the transcript was scrolled.
  self.transcript.view:follow_all()
  self:_flush()
  self:update_winbar()
  return true
end

function Chat:_flush()
  if self.status ~= "ready" or #self.queue == 0 then
    return
  end
  local entry = table.remove(self.queue, 1)
  local blocks = entry.blocks
  if type(blocks) == "function" then
    blocks = blocks()
  end
  if self.rewind_context then
    -- The first prompt after a rewind that could not fork: the agent gets
    -- the conversation before the rewound turn (acp.rewind).
    local meta = { [require("acp.rewind").CONTEXT_META] = true }
    blocks = vim.list_extend({ { type = "text", text = self.rewind_context, _meta = meta } }, blocks)
    self.rewind_context = nil
  end
  self.status = "busy"
  -- Before the agent can change anything: the "before" of edits that come
  -- without a diff (acp.fs.prompt_buffers).
  local unsaved = require("acp.fs").prompt_buffers(self.cwd)
  local args = { chat_id = self.chat_id, blocks = blocks, buffers = #unsaved > 0 and unsaved or nil }
  if not require("acp.backend").notify("acp.prompt", args) then
    -- No backend (it just died): keep the prompt for after :Acp restart.
    table.insert(self.queue, 1, { blocks = blocks, text = entry.text })
    self.status = "ready"
  end
end

--- Ask the agent to switch mode; the change arrives as an event.
---@param mode_id string
---@return boolean
function Chat:set_mode(mode_id)
  if not self.session_id then
    util.notify("the session has not started yet", vim.log.levels.WARN)
    return false
  end
  local res, err = require("acp.backend").request("acp.set_mode", { chat_id = self.chat_id, mode_id = mode_id })
  if res == nil then
    util.notify("could not switch mode: " .. tostring(err), vim.log.levels.ERROR)
    return false
  end
  return true
end

--- Set a session config option (e.g. the model); the new option list arrives
--- as an event.
---@param config_id string
---@param value any
---@return boolean
function Chat:set_config_option(config_id, value)
  if not self.session_id then
    util.notify("the session has not started yet", vim.log.levels.WARN)
    return false
  end
  local res, err = require("acp.backend").request(
    "acp.set_config_option",
    { chat_id = self.chat_id, config_id = config_id, value = value }
  )
  if res == nil then
    util.notify("could not set " .. tostring(config_id) .. ": " .. tostring(err), vim.log.levels.ERROR)
    return false
  end
  return true
end

--- Put the text of queued prompts back into the prompt input (before what
--- is there), so nothing the user wrote is lost; empties the queue.
---@return integer n how many prompts were put back
function Chat:_unqueue()
  local texts = {}
  for _, entry in ipairs(self.queue) do
    if entry.text and entry.text ~= "" then
      texts[#texts + 1] = entry.text
    end
  end
  local n = #self.queue
  self.queue = {}
  if #texts > 0 and api.nvim_buf_is_valid(self.prompt_buf) then
    local lines = {}
    for _, t in ipairs(texts) do
      vim.list_extend(lines, vim.split(t, "\n", { plain = true }))
    end
    if not self:prompt_is_empty() then
      vim.list_extend(lines, api.nvim_buf_get_lines(self.prompt_buf, 0, -1, false))
    end
    api.nvim_buf_set_lines(self.prompt_buf, 0, -1, false, lines)
  end
  return n
end

--- Cancel the running turn. Queued prompts go back into the prompt input,
--- to edit or send again. The turn shows as cancelling until the agent ends
--- it; cancelling again stops waiting for an agent that does not (the
--- backend withdraws the prompt and ends the turn as cancelled).
function Chat:cancel()
  -- On a subagent's block, only that child (when the agent allows it).
  if require("acp.subagent").cancel_at_cursor(self) then
    return
  end
  local dropped = self:_unqueue()
  if dropped > 0 then
    util.notify(
      ("%d queued prompt%s put back in the prompt input"):format(dropped, dropped == 1 and " was" or "s were")
    )
  end
  if self.status == "busy" then
    if require("acp.backend").notify("acp.cancel", { chat_id = self.chat_id }) then
      self.status = "cancelling"
    end
  elseif self.status == "cancelling" then
    if require("acp.backend").notify("acp.cancel", { chat_id = self.chat_id }) then
      util.notify(("stopped waiting for %s to end the cancelled turn"):format(self.agent.name))
    end
  elseif dropped == 0 then
    util.notify("nothing to cancel: the agent is not working")
  end
  self:update_winbar()
end

--- Close the chat: end the session, wipe its buffers.
function Chat:close()
  if self.status ~= "closed" and not self.readonly then
    local backend = require("acp.backend")
    if backend.running() then
      backend.request("acp.close", { chat_id = self.chat_id })
    end
  end
  self.status = "closed"
  permission.drop_chat(self.chat_id)
  require("acp.elicitation").close_chat(self.chat_id, "the chat was closed")
  require("acp.review").drop_chat(self.chat_id)
  if package.loaded["acp.backlog"] then
    package.loaded["acp.backlog"].drop(self.chat_id)
  end
  self:hide()
  M.chats[self.chat_id] = nil
  for i, c in ipairs(M.list) do
    if c == self then
      table.remove(M.list, i)
      break
    end
  end
  if M.last_id == self.chat_id then
    M.last_id = M.list[#M.list] and M.list[#M.list].chat_id or nil
  end
  for _, b in ipairs({ self.prompt_buf, self.bufnr }) do
    if api.nvim_buf_is_valid(b) then
      pcall(api.nvim_buf_delete, b, { force = true })
    end
  end
end

--- The config option with category "model", if any.
---@return table?
function Chat:model_option()
  return require("acp.winbar").model_option(self)
end

--- Refresh the winbar of every window showing the transcript.
function Chat:update_winbar()
  require("acp.winbar").update(self)
end

-- Event handlers (called by acp.events) --------------------------------------

---@param ev acp.ev.SessionStarted
function Chat:on_session_started(ev)
  self.session_id = ev.session_id
  self.status = "ready"
  self.modes = ev.modes
  self.config_options = ev.config_options
  self.capabilities = ev.capabilities
  self.transcript_path = ev.transcript_path
  if ev.turn_base then
    self.transcript:number_turns(ev.turn_base)
  end
  self.opening = nil
  self.backend_died = nil
  self:_write_load_note()
  if self.restart_note then
    -- Said once the outcome is known: "session resumed" came before the
    -- agent answered that it no longer knew the session.
    self.transcript:note(self.restart_note)
    self.restart_note = nil
  end
  self:_flush()
  self:update_winbar()
end

---@param ev acp.ev.OpenFailed
function Chat:on_open_failed(ev)
  local opening = self.opening
  self.opening = nil
  self.status = "failed"
  self.restart_note = nil
  self.load_note = nil
  if opening and opening.fallback_new then
    -- A restart could not continue the session (the agent forgot it, e.g.
    -- a killed fake or claude-agent-acp answering -32002): carry on in a
    -- new one rather than leave the chat dead, and say so once.
    local why = tostring(ev.message or "no reason given"):gsub("\n", " ")
    -- The agent's answer, not the whole sentence around it.
    why = why:match("with (error %-?%d+[^;]*)") or why
    self.transcript:note(("— restarted: new session, the agent could not take the old one back (%s) —"):format(why))
    self:start()
    return
  end
  self.transcript:error(ev.message or "the session could not start", ev.stderr_tail)
  self:_unqueue()
  self:update_winbar()
end

---@param ev acp.ev.AuthRequired
function Chat:on_auth_required(ev)
  self.status = "failed"
  self.opening = nil
  self.auth_methods = ev.auth_methods or {}
  local lines = {
    ("✗ %s needs you to log in first: pick a method (:Acp login), then the chat continues."):format(self.agent.name),
  }
  for _, m in ipairs(ev.auth_methods or {}) do
    local desc = m.description
    lines[#lines + 1] = ("  - %s%s"):format(m.name or m.id or "?", desc and (": " .. desc) or "")
  end
  self.transcript:note(lines, "AcpError")
  self:update_winbar()
  if #self.auth_methods > 0 then
    -- Not inside the event batch: choosing calls the backend again.
    vim.schedule(function()
      if self.status == "failed" then
        require("acp.auth").choose(self)
      end
    end)
  end
end

---@param _ev acp.ev.LoggedOut
function Chat:on_logged_out(_ev)
  self.transcript:note(("— logged out of %s —"):format(self.agent.name))
  util.notify(("logged out of %s"):format(self.agent.name))
end

---@param change acp.SessionChange
function Chat:on_session_change(change)
  local c = change.change
  if c == "mode_changed" then
    self.modes = self.modes or {}
    self.modes.current_mode_id = change.current_mode_id
    self:update_winbar()
  elseif c == "modes_changed" then
    self.modes = {
      current_mode_id = change.current_mode_id,
      available_modes = change.available_modes or {},
    }
    self:update_winbar()
  elseif c == "config_options_changed" then
    self.config_options = change.config_options or {}
    self:update_winbar()
  elseif c == "commands_changed" then
    self.commands = change.available_commands or {}
    require("acp.prompt").commands_arrived(self.prompt_buf)
  elseif c == "usage_changed" then
    self.usage = change.usage
    self:update_winbar()
  elseif c == "info_changed" then
    -- The change carries the info after the change: no title = none.
    self.title = change.title
    self:update_winbar()
  else
    self:_write_load_note()
    self.transcript:apply(change)
  end
end

--- The note of a restart that loads the session, once the load is under
--- way (its first replayed entry, or the session back without one).
function Chat:_write_load_note()
  local note = self.load_note
  if note then
    self.load_note = nil
    self.transcript.view:batch(function()
      self.transcript:note(note)
    end)
  end
end

-- Whether Neovim has the focus (the terminal reports FocusLost and
-- FocusGained; without those events it counts as focused).
M.focused = true
api.nvim_create_autocmd({ "FocusGained", "FocusLost" }, {
  group = api.nvim_create_augroup("acp.focus", { clear = true }),
  callback = function(a)
    M.focused = a.event == "FocusGained"
  end,
})

--- Tell the user through vim.notify (so nvim-notify, snacks or fidget show
--- it) that the chat needs them, when they may not see it: the chat is not
--- shown in this tab, or Neovim is not focused. `what` is the `notify`
--- option that allows it (turn_end, permission, question).
---@param what "turn_end"|"permission"|"question"
---@param message string
---@param level? integer
---@return boolean notified
function Chat:attention(what, message, level)
  if not config.options.notify[what] then
    return false
  end
  if self:is_visible() and M.focused then
    return false
  end
  util.notify(("chat %d (%s): %s"):format(self.n, self.agent.name, message), level)
  return true
end

---@param ev acp.ev.PermissionRequest
---@return acp.PermissionRequest req, boolean waiting
function Chat:on_permission_request(ev)
  local req, waiting = permission.add(self.chat_id, ev)
  if waiting then
    self.transcript:permission_shown(req)
    self:update_permission_keys()
    self:attention(
      "permission",
      ("asks permission: %s (:Acp permission to answer)"):format(
        require("acp.sanitize").line(req.tool_call.title or "a tool call", 200)
      ),
      vim.log.levels.WARN
    )
  end
  return req, waiting
end

--- Follow the agent: show the file and line of the tool call it works on
--- in the editor window (as Zed and avante do). Off by default.
---@param on? boolean default: toggle
function Chat:set_follow(on)
  if on == nil then
    on = not self.following
  end
  self.following = on
  self.followed = nil
  self:update_winbar()
  util.notify(
    ("chat %d %s"):format(
      self.n,
      on and "follows the agent: its files open in the editor window" or "stopped following the agent"
    )
  )
end

--- A tool call's state changed (called by the transcript).
---@param state table
function Chat:on_tool_state(state)
  if not self.following or type(state) ~= "table" then
    return
  end
  if state.status == "failed" or state.status == "cancelled" then
    return
  end
  local loc = require("acp.tool_call").location(state)
  if not loc then
    return
  end
  local key = loc.path .. ":" .. tostring(loc.line)
  if key == self.followed then
    return
  end
  self.followed = key
  -- Not inside the event batch: opening a file runs the user's autocmds.
  vim.schedule(function()
    if self.following and self.followed == key and vim.fn.filereadable(loc.path) == 1 then
      require("acp.tool_call").show(loc, self:transcript_wins()[1])
    end
  end)
end

--- A request was answered or withdrawn: replace its prompt by a note.
---@param req acp.PermissionRequest
---@param note string
function Chat:permission_settled(req, note)
  require("acp.review").end_preview(req.request_id)
  self.transcript.view:batch(function()
    self.transcript:permission_settled(req, note)
  end)
  self:update_permission_keys()
end

---@param ev acp.ev.PermissionAuto
function Chat:on_permission_auto(ev)
  local req = {
    request_id = -1,
    chat_id = self.chat_id,
    tool_call = ev.tool_call or {},
    options = {},
  }
  self.transcript:permission_settled(req, permission.auto_note(ev.option, ev.tool_call))
end

--- Most bytes of terminal output kept per terminal.
M.MAX_TERMINAL_BYTES = 64 * 1024

---@param ev acp.ev.Terminal
function Chat:on_terminal(ev)
  local id = ev.terminal_id
  if not id then
    return
  end
  local term = self.terminals[id] or { output = "", released = false, truncated = false }
  self.terminals[id] = term
  local kind = ev.kind
  if kind == "started" then
    term.command = ev.command
  elseif kind == "output" then
    local data = ev.data or ""
    if ev.truncated then
      term.truncated = true
    end
    term.output = term.output .. data
    if #term.output > M.MAX_TERMINAL_BYTES then
      term.output = term.output:sub(-M.MAX_TERMINAL_BYTES)
      term.truncated = true
    end
  elseif kind == "exited" then
    term.exit_status = ev.exit_status or {}
  elseif kind == "released" then
    term.released = true
  end
  self.transcript:terminal_changed(id)
end

---@param ev acp.ev.TurnEnded
function Chat:on_turn_ended(ev)
  local reason = ev.stop_reason or "end_turn"
  if self.status == "busy" or self.status == "cancelling" then
    self.status = "ready"
  end
  self.transcript:turn_ended(reason)
  if #self.queue == 0 then
    self:attention(
      "turn_end",
      ("turn ended (%s)"):format((reason:gsub("_", " "))),
      reason == "end_turn" and vim.log.levels.INFO or vim.log.levels.WARN
    )
  end
  self:_flush()
  self:update_winbar()
end

---@param ev acp.ev.PromptFailed
function Chat:on_prompt_failed(ev)
  if self.status == "busy" or self.status == "cancelling" then
    self.status = "ready"
  end
  self.transcript:error(ev.message or "the prompt failed")
  self:_flush()
  self:update_winbar()
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

---@param ev acp.ev.AgentExited
function Chat:on_agent_exited(ev)
  self.status = "dead"
  self.backend_died = nil
  self:_unqueue()
  self:_close_permissions("the agent exited")
  self:update_permission_keys()
  self.transcript:end_unfinished_tools("failed")
  local status = ev.status
  local key = config.options.keymaps.restart
  local msg = ("The agent %s exited%s. %s to restart it and continue this session (:Acp continue)."):format(
    self.agent.name,
    status ~= nil and (" (" .. tostring(status) .. ")") or "",
    key and ("Press " .. key) or "Run :Acp continue"
  )
  self.transcript:error(msg, ev.stderr_tail)
  self:update_winbar()
end

--- Close the prompts of every pending permission request of the chat: no
--- one waits for their answer any more (whichever of `agent_exited` and
--- `permission_cancelled` comes first, the prompt does not stay open).
---@param why string
function Chat:_close_permissions(why)
  for _, req in ipairs(permission.for_chat(self.chat_id)) do
    self:permission_settled(req, "permission request closed: " .. why)
  end
  permission.drop_chat(self.chat_id)
  require("acp.elicitation").close_chat(self.chat_id, why)
end

--- The backend died: nothing of this chat runs any more.
---@param log_file string
function Chat:on_backend_died(log_file)
  if self.status == "closed" then
    return
  end
  self.status = "dead"
  self.backend_died = true
  self:_unqueue()
  self:_close_permissions("the backend stopped")
  self:update_permission_keys()
  self.transcript.view:batch(function()
    self.transcript:end_unfinished_tools("failed")
    self.transcript:error(("The acp.nvim backend stopped (log: %s). Run :Acp restart to continue."):format(log_file))
  end)
  self:update_winbar()
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
  local backend = require("acp.backend")
  if not backend.running() then
    -- :Acp restart also reopens every other chat.
    return backend.restart()
  end
  return self:reopen()
end

M.Chat = Chat

return M
