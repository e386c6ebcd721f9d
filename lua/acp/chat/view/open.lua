---@mod acp.chat.view.open What a line of the chat or of a review points at,
--- opened in the editor: a diff of two texts in a tab page, a file at a
--- location in a normal window (never a chat's), a tool call's location.

local util = require("acp.util")

local M = {}

--- Open a diff of old and new text in a new tab page (two scratch buffers in
--- diff mode; `q` closes the tab).
---@param action {path: string, old: string, new: string}
function M.open_diff(action)
  local ft = vim.filetype.match({ filename = action.path }) or ""
  vim.cmd("tabnew")
  local tab = vim.api.nvim_get_current_tabpage()
  local function scratch(text, suffix)
    local buf = vim.api.nvim_create_buf(false, true)
    local lines = util.split_lines(text)
    if lines[#lines] == "" and #lines > 1 then
      lines[#lines] = nil
    end
    vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
    vim.bo[buf].bufhidden = "wipe"
    vim.bo[buf].modifiable = false
    if ft ~= "" then
      vim.bo[buf].filetype = ft
    end
    -- The tab line shortens every path component: `acp://diff/7//tmp/...`
    -- showed as `a//d/7//t/...`. The file's own name reads as itself.
    pcall(
      vim.api.nvim_buf_set_name,
      buf,
      ("%s%s [acp diff %d]"):format(vim.fn.fnamemodify(action.path, ":~:."), suffix, buf)
    )
    vim.keymap.set("n", "q", function()
      if vim.api.nvim_tabpage_is_valid(tab) and #vim.api.nvim_list_tabpages() > 1 then
        vim.cmd("tabclose " .. vim.api.nvim_tabpage_get_number(tab))
      end
    end, { buffer = buf, desc = "acp.nvim: close the diff" })
    return buf
  end
  local scratch_tab_buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_win_set_buf(0, scratch(action.old, " (before)"))
  if vim.api.nvim_buf_is_valid(scratch_tab_buf) and vim.api.nvim_buf_get_name(scratch_tab_buf) == "" then
    pcall(vim.api.nvim_buf_delete, scratch_tab_buf, {})
  end
  vim.cmd("diffthis")
  vim.cmd("rightbelow vsplit")
  vim.api.nvim_win_set_buf(0, scratch(action.new, " (after)"))
  vim.cmd("diffthis")
end

--- The line of a tool call location, nil when it names none. ACP lines
--- are 1-based; claude-code-acp 0.16 sends `line: 0` for a read from the top
--- of the file (its Read tool's missing offset), which is no line at all
--- (shown as `file:0` it reads like a bug, and there is no line 0 to jump to).
---@param line any
---@return integer?
function M.location_line(line)
  line = tonumber(line)
  if line and line >= 1 then
    return math.floor(line)
  end
end

--- Where a tool call works: its first location, else the file of its
--- first diff.
---@param tc table
---@return {path: string, line?: integer}?
function M.location(tc)
  local loc = (tc.locations or {})[1]
  if type(loc) == "table" and type(loc.path) == "string" then
    return { path = loc.path, line = M.location_line(loc.line) }
  end
  for _, item in ipairs(tc.content or {}) do
    if type(item) == "table" and item.type == "diff" and type(item.path) == "string" then
      return { path = item.path }
    end
  end
end

--- Show a location in the editor window of the current tab (the first
--- normal window that is no chat), without moving the cursor out of where
--- the user is. Opens a window left of `beside` when there is none.
---@param action {path: string, line?: integer}
---@param beside? integer window to split when no editor window exists
---@return integer? win the window showing it
function M.show(action, beside)
  local chat_mod = require("acp.chat.index")
  local target ---@type integer?
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    local buf = vim.api.nvim_win_get_buf(win)
    if
      vim.bo[buf].buftype == ""
      and vim.api.nvim_win_get_config(win).relative == ""
      and chat_mod.of_buf(buf) == nil
    then
      target = win
      break
    end
  end
  local buf = vim.fn.bufadd(action.path)
  vim.bo[buf].buflisted = true
  if not target then
    if not (beside and vim.api.nvim_win_is_valid(beside)) then
      return nil
    end
    -- A window that is not entered does not load its buffer by itself.
    vim.fn.bufload(buf)
    target = vim.api.nvim_open_win(buf, false, { split = "left", win = beside })
  end
  local win = target
  local ok = pcall(vim.api.nvim_win_call, win, function()
    if vim.api.nvim_win_get_buf(win) ~= buf then
      vim.cmd("keepalt buffer " .. buf)
    end
    if action.line then
      local count = vim.api.nvim_buf_line_count(buf)
      vim.api.nvim_win_set_cursor(win, { math.max(1, math.min(action.line, count)), 0 })
      vim.cmd("normal! zz")
    end
  end)
  return ok and win or nil
end

--- Jump to a location in a normal window (not a chat window; a split is made
--- when there is none).
---@param action {path: string, line?: integer}
function M.jump(action)
  local function usable(win)
    local buf = vim.api.nvim_win_get_buf(win)
    return vim.bo[buf].buftype == "" and vim.api.nvim_win_get_config(win).relative == ""
  end
  local target
  local prev = vim.fn.win_getid(vim.fn.winnr("#"))
  if prev ~= 0 and usable(prev) then
    target = prev
  else
    for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
      if usable(win) then
        target = win
        break
      end
    end
  end
  if target then
    vim.api.nvim_set_current_win(target)
  else
    vim.cmd("leftabove vsplit")
  end
  -- A loaded buffer is shown, not `:edit`ed: editing the file shown
  -- reloads it, an undo step that changes nothing (`gd` on a preview).
  local open = util.find_buffer(action.path)
  if open then
    vim.api.nvim_win_set_buf(0, open)
  else
    vim.cmd("edit " .. vim.fn.fnameescape(action.path))
  end
  if action.line then
    local count = vim.api.nvim_buf_line_count(0)
    pcall(vim.api.nvim_win_set_cursor, 0, { math.max(1, math.min(action.line, count)), 0 })
    vim.cmd("normal! zz")
  end
end

return M
