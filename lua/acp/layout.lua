---@mod acp.layout Chat windows: the transcript and, under it, the prompt
--- input, as a split (right/left), a float or a tab page.

local api = vim.api
local config = require("acp.config")
local View = require("acp.view")

local M = {}

local function size(value, total)
  if value < 1 then
    return math.max(1, math.floor(total * value))
  end
  return math.floor(value)
end

--- Show the chat windows in the current tab (or focus them when shown).
---@param chat acp.Chat
function M.show(chat)
  require("acp.chat").last_id = chat.chat_id
  if chat:is_visible() then
    for _, win in ipairs(vim.fn.win_findbuf(chat.prompt_buf)) do
      if api.nvim_win_get_tabpage(win) == api.nvim_get_current_tabpage() then
        api.nvim_set_current_win(win)
        return
      end
    end
  end
  local layout = config.options.layout
  local input_h = math.max(1, math.floor(layout.input_height))
  local twin, pwin
  if layout.position == "float" then
    local w = size(layout.width, vim.o.columns)
    local h = size(layout.height, vim.o.lines - 2)
    local th = math.max(1, h - input_h - 2)
    local row = math.max(0, math.floor((vim.o.lines - h) / 2) - 1)
    local col = math.max(0, math.floor((vim.o.columns - w) / 2))
    twin = api.nvim_open_win(chat.bufnr, false, {
      relative = "editor",
      row = row,
      col = col,
      width = w,
      height = th,
      border = "rounded",
      title = " acp: " .. chat.agent.name .. " ",
    })
    pwin = api.nvim_open_win(chat.prompt_buf, true, {
      relative = "editor",
      row = row + th + 2,
      col = col,
      width = w,
      height = input_h,
      border = "rounded",
      title = " prompt ",
    })
  else
    if layout.position == "tab" then
      vim.cmd("tabnew")
      local empty = api.nvim_get_current_buf()
      api.nvim_win_set_buf(0, chat.bufnr)
      if api.nvim_buf_get_name(empty) == "" and not vim.bo[empty].modified then
        pcall(api.nvim_buf_delete, empty, {})
      end
    else
      vim.cmd((layout.position == "left" and "topleft" or "botright") .. " vsplit")
      api.nvim_win_set_buf(0, chat.bufnr)
      api.nvim_win_set_width(0, size(layout.width, vim.o.columns))
    end
    twin = api.nvim_get_current_win()
    vim.cmd("belowright split")
    pwin = api.nvim_get_current_win()
    api.nvim_win_set_buf(pwin, chat.prompt_buf)
    api.nvim_win_set_height(pwin, input_h)
    vim.wo[pwin][0].winfixheight = true
  end
  View.setup_window(twin)
  vim.wo[pwin][0].number = false
  vim.wo[pwin][0].relativenumber = false
  vim.wo[pwin][0].signcolumn = "no"
  vim.wo[pwin][0].wrap = true
  -- Start at the tail so the transcript follows new output.
  api.nvim_win_set_cursor(twin, { api.nvim_buf_line_count(chat.bufnr), 0 })
  chat:update_winbar()
  api.nvim_set_current_win(pwin)
  -- A new window starts on line 1: go to the end, after any mention that
  -- `:Acp add` put there.
  local last = api.nvim_buf_line_count(chat.prompt_buf)
  api.nvim_win_set_cursor(pwin, { last, #(api.nvim_buf_get_lines(chat.prompt_buf, last - 1, last, false)[1] or "") })
  -- The prompt is for typing: a first letter typed under the "Ask…" hint
  -- must be text, not a Normal-mode command.
  vim.cmd("startinsert!")
end

--- Close the chat windows (all tabs); the chat keeps running.
---@param chat acp.Chat
function M.hide(chat)
  for _, buf in ipairs({ chat.prompt_buf, chat.bufnr }) do
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      if not pcall(api.nvim_win_close, win, false) then
        -- The last window of Neovim cannot close: show an empty buffer.
        api.nvim_win_call(win, function()
          vim.cmd("enew")
        end)
      end
    end
  end
end

return M
