---@mod acp.chat.window The chat's windows and keys: shown, hidden, focused;
--- the transcript's keys and what `<CR>` does on a line; the winbar; telling
--- the user (vim.notify) when a chat they cannot see needs them.

local api = vim.api
local util = require("acp.util")
local config = require("acp.config")
local permission = require("acp.chat.view.permission")

---@class (partial) acp.Chat
local Chat = {}

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
  require("acp.chat.layout").show(self, opts)
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
  require("acp.chat.layout").hide(self)
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
      require("acp.chat.view.tool_call").open_diff(a)
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
    require("acp.chat.view.code_block").yank(self)
  end, "yank the code block under the cursor")
  map(tb, "n", k.open_code, function()
    require("acp.chat.view.code_block").open(self)
  end, "open the code block under the cursor in a split")
  map(tb, "n", k.edit_prompt, function()
    require("acp.chat.prompt").edit_again(self, api.nvim_win_get_cursor(0)[1] - 1)
  end, "edit the prompt under the cursor to send it again")
  map(tb, "n", k.rewind_prompt, function()
    local ok, why = require("acp.edits.rewind").edit_from(self, api.nvim_win_get_cursor(0)[1] - 1)
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
  local review = require("acp.edits.review")
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
    require("acp.chat.view.tool_call").open_diff(a)
  elseif a.type == "location" then
    require("acp.chat.view.tool_call").jump(a)
  elseif a.type == "permission" then
    local req = permission.pending[a.request_id]
    if req then
      permission.select(self.chat_id, req)
    end
  elseif a.type == "elicitation" then
    require("acp.chat.view.elicitation").activate(a.request_id)
  end
end

--- The config option with category "model", if any.
---@return table?
function Chat:model_option()
  return require("acp.chat.view.winbar").model_option(self)
end

--- Refresh the winbar of every window showing the transcript.
function Chat:update_winbar()
  require("acp.chat.view.winbar").update(self)
end

-- Event handlers (called by acp.events) --------------------------------------

-- Whether Neovim has the focus (the terminal reports FocusLost and
-- FocusGained; without those events it counts as focused).
local focused = true
api.nvim_create_autocmd({ "FocusGained", "FocusLost" }, {
  group = api.nvim_create_augroup("acp.focus", { clear = true }),
  callback = function(a)
    focused = a.event == "FocusGained"
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
  if self:is_visible() and focused then
    return false
  end
  util.notify(("chat %d (%s): %s"):format(self.n, self.agent.name, message), level)
  return true
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

return Chat
