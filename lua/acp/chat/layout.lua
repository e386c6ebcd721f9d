---@mod acp.chat.layout Chat windows: the transcript and, under it, the prompt
--- input, as a split (right/left), a float or a tab page.

local api = vim.api
local config = require("acp.config")

local M = {}

local function size(value, total)
  if value < 1 then
    return math.max(1, math.floor(total * value))
  end
  return math.floor(value)
end

--- The transcript and prompt windows of a chat in the current tab.
---@param chat acp.Chat
---@return integer? twin, integer? pwin
local function wins_in_tab(chat)
  local tab = api.nvim_get_current_tabpage()
  local function find(buf)
    for _, win in ipairs(vim.fn.win_findbuf(buf)) do
      if api.nvim_win_get_tabpage(win) == tab then
        return win
      end
    end
  end
  return find(chat.bufnr), find(chat.prompt_buf)
end

--- Windows set up: transcript at its tail, the cursor at the end of the
--- prompt, in Insert mode.
---@param chat acp.Chat
---@param twin integer
---@param pwin integer
local function finish(chat, twin, pwin)
  require("acp.chat.blocks").setup_window(twin)
  vim.wo[pwin][0].number = false
  vim.wo[pwin][0].relativenumber = false
  vim.wo[pwin][0].signcolumn = "no"
  vim.wo[pwin][0].wrap = true
  -- Start at the tail so the transcript follows new output.
  api.nvim_win_set_cursor(twin, { api.nvim_buf_line_count(chat.bufnr), 0 })
  chat:update_winbar()
  if chat.readonly then
    -- A read-only transcript takes no prompt: the cursor goes where there
    -- is something to read, in Normal mode (it opened in Insert mode in
    -- the prompt).
    api.nvim_set_current_win(twin)
    vim.cmd("stopinsert")
    return
  end
  api.nvim_set_current_win(pwin)
  -- A new window starts on line 1: go to the end, after any mention that
  -- `:Acp add` put there.
  local last = api.nvim_buf_line_count(chat.prompt_buf)
  api.nvim_win_set_cursor(pwin, { last, #(api.nvim_buf_get_lines(chat.prompt_buf, last - 1, last, false)[1] or "") })
  -- The prompt is for typing: a first letter typed under the "Ask…" hint
  -- must be text, not a Normal-mode command.
  vim.cmd("startinsert!")
end

--- Put `chat` in the windows of another chat shown in this tab (that chat
--- keeps running, hidden). Returns false when no other chat is shown.
---@param chat acp.Chat
---@return boolean
local function replace_visible(chat)
  for _, other in ipairs(require("acp.chat.index").list) do
    if other ~= chat then
      local twin, pwin = wins_in_tab(other)
      if twin and pwin then
        api.nvim_win_set_buf(twin, chat.bufnr)
        api.nvim_win_set_buf(pwin, chat.prompt_buf)
        if api.nvim_win_get_config(twin).relative ~= "" then
          api.nvim_win_set_config(twin, { title = " acp: " .. chat.agent.name .. " " })
        end
        finish(chat, twin, pwin)
        return true
      end
    end
  end
  return false
end

--- Open the transcript and prompt windows of the configured layout for two
--- buffers; the prompt's is the current window.
---@param bufnr integer
---@param prompt_buf integer
---@param name string the agent, for a float's title
---@return integer twin, integer pwin
local function open_wins(bufnr, prompt_buf, name)
  local twin, pwin
  local layout = config.options.layout
  local input_h = math.max(1, math.floor(layout.input_height))
  if layout.position == "float" then
    local w = size(layout.width, vim.o.columns)
    local h = size(layout.height, vim.o.lines - 2)
    local th = math.max(1, h - input_h - 2)
    local row = math.max(0, math.floor((vim.o.lines - h) / 2) - 1)
    local col = math.max(0, math.floor((vim.o.columns - w) / 2))
    twin = api.nvim_open_win(bufnr, false, {
      relative = "editor",
      row = row,
      col = col,
      width = w,
      height = th,
      border = "rounded",
      title = " acp: " .. name .. " ",
    })
    pwin = api.nvim_open_win(prompt_buf, true, {
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
      api.nvim_win_set_buf(0, bufnr)
      if api.nvim_buf_get_name(empty) == "" and not vim.bo[empty].modified then
        pcall(api.nvim_buf_delete, empty, {})
      end
    else
      vim.cmd((layout.position == "left" and "topleft" or "botright") .. " vsplit")
      api.nvim_win_set_buf(0, bufnr)
      api.nvim_win_set_width(0, size(layout.width, vim.o.columns))
    end
    twin = api.nvim_get_current_win()
    vim.cmd("belowright split")
    pwin = api.nvim_get_current_win()
    api.nvim_win_set_buf(pwin, prompt_buf)
    api.nvim_win_set_height(pwin, input_h)
    vim.wo[pwin][0].winfixheight = true
  end
  return twin, pwin
end

--- Show the chat windows in the current tab (or focus them when shown). A
--- chat shown in this tab gives its windows to this one (it keeps running;
--- `:Acp chats` brings it back) unless `opts.split` asks for windows of its
--- own: four chats made four narrow columns, or floats stacked on floats.
---@param chat acp.Chat
---@param opts? {split?: boolean}
function M.show(chat, opts)
  opts = opts or {}
  require("acp.chat.index").last_id = chat.chat_id
  local twin, pwin = wins_in_tab(chat)
  if twin and pwin then
    api.nvim_set_current_win(pwin)
    return
  end
  if pwin and not twin then
    -- A prompt window left without its transcript (closed on another
    -- tab page, or before the prompt closed with it): the transcript goes
    -- above it, never into another chat's windows beside it.
    api.nvim_set_current_win(pwin)
    vim.cmd("aboveleft split")
    twin = api.nvim_get_current_win()
    api.nvim_win_set_buf(twin, chat.bufnr)
    api.nvim_win_set_height(pwin, math.max(1, math.floor(config.options.layout.input_height)))
    finish(chat, twin, pwin)
    return
  end
  if twin then
    -- The user closed the prompt window: a new one under the transcript.
    api.nvim_set_current_win(twin)
    vim.cmd("belowright split")
    pwin = api.nvim_get_current_win()
    api.nvim_win_set_buf(pwin, chat.prompt_buf)
    api.nvim_win_set_height(pwin, math.max(1, math.floor(config.options.layout.input_height)))
    finish(chat, twin, pwin)
    return
  end
  if not opts.split and replace_visible(chat) then
    return
  end
  local twin2, pwin2 = open_wins(chat.bufnr, chat.prompt_buf, chat.agent.name)
  finish(chat, twin2, pwin2)
end

--- The chat windows of every tab page fitted to the new size of the
--- screen (`VimResized`): from 200 to 80 columns the chat kept one column,
--- and growing back it took 157. Also after a window of ours below the
--- chat closes (the rewind preview), which hands its rows around.
function M.relayout()
  local layout = config.options.layout
  for _, chat in ipairs(require("acp.chat.index").list) do
    for _, twin in ipairs(vim.fn.win_findbuf(chat.bufnr)) do
      local cfg = api.nvim_win_get_config(twin)
      if cfg.relative ~= "" then
        if layout.position == "float" then
          local tab = api.nvim_win_get_tabpage(twin)
          local pwin
          for _, w in ipairs(vim.fn.win_findbuf(chat.prompt_buf)) do
            if api.nvim_win_get_tabpage(w) == tab then
              pwin = w
            end
          end
          local input_h = math.max(1, math.floor(layout.input_height))
          local w = size(layout.width, vim.o.columns)
          local h = size(layout.height, vim.o.lines - 2)
          local th = math.max(1, h - input_h - 2)
          local row = math.max(0, math.floor((vim.o.lines - h) / 2) - 1)
          local col = math.max(0, math.floor((vim.o.columns - w) / 2))
          pcall(api.nvim_win_set_config, twin, { relative = "editor", row = row, col = col, width = w, height = th })
          if pwin then
            pcall(
              api.nvim_win_set_config,
              pwin,
              { relative = "editor", row = row + th + 2, col = col, width = w, height = input_h }
            )
          end
        end
      elseif layout.position ~= "tab" and api.nvim_win_get_width(twin) < vim.o.columns then
        -- A column beside the editor windows (the prompt under it follows).
        pcall(api.nvim_win_set_width, twin, size(layout.width, vim.o.columns))
        -- The prompt back at its height: a full-width window opened below
        -- and closed again (the rewind preview) left its rows to the prompt
        -- despite 'winfixheight' (21 rows instead of 5, seen in tmux).
        local input_h = math.max(1, math.floor(layout.input_height))
        local tab = api.nvim_win_get_tabpage(twin)
        for _, pwin in ipairs(vim.fn.win_findbuf(chat.prompt_buf)) do
          if api.nvim_win_get_tabpage(pwin) == tab and api.nvim_win_get_height(pwin) ~= input_h then
            pcall(api.nvim_win_set_height, pwin, input_h)
          end
        end
      end
    end
  end
end

local group = api.nvim_create_augroup("acp_layout", { clear = true })
api.nvim_create_autocmd("VimResized", {
  group = group,
  callback = function()
    M.relayout()
  end,
})
-- A transcript window closed (`:q` in it): its prompt window goes with it
-- (it stayed at full height, and `:Acp chats` then put the chat in another
-- chat's windows: two prompts on screen).
api.nvim_create_autocmd("WinClosed", {
  group = group,
  callback = function(a)
    local chat = require("acp.chat.index").of_buf(a.buf)
    if not chat or a.buf ~= chat.bufnr then
      return
    end
    local closed = tonumber(a.match) --[[@as integer?]] -- WinClosed's match is a window id
    local tab = closed and api.nvim_win_is_valid(closed) and api.nvim_win_get_tabpage(closed)
    vim.schedule(function()
      if not (tab and api.nvim_tabpage_is_valid(tab)) then
        return
      end
      for _, win in ipairs(api.nvim_tabpage_list_wins(tab)) do
        if api.nvim_win_get_buf(win) == chat.bufnr then
          return -- still shown in this tab
        end
      end
      for _, win in ipairs(vim.fn.win_findbuf(chat.prompt_buf)) do
        if api.nvim_win_get_tabpage(win) == tab and #api.nvim_tabpage_list_wins(tab) > 1 then
          pcall(api.nvim_win_close, win, false)
        end
      end
    end)
  end,
})

---@class acp.Frame
---@field bufnr integer the transcript's buffer, for the chat to take
---@field prompt_buf integer the prompt's

--- The windows of a chat about to be created, drawn before it (`:Acp`: the
--- chat's modules load after the first redraw, issue #30): two empty
--- buffers in the configured layout, the prompt current and in Insert mode,
--- the transcript's winbar saying the agent is starting. Chat.create takes
--- the buffers, `adopt` the windows.
---@param name string the agent
---@return acp.Frame
function M.frame(name)
  local function buf()
    local b = api.nvim_create_buf(false, true)
    vim.bo[b].buftype = "nofile"
    vim.bo[b].bufhidden = "hide"
    vim.bo[b].swapfile = false
    return b
  end
  local frame = { bufnr = buf(), prompt_buf = buf() }
  local twin, pwin = open_wins(frame.bufnr, frame.prompt_buf, name)
  vim.wo[twin][0].winbar = (" acp: %s · starting…"):format(name:gsub("%%", "%%%%"))
  vim.wo[pwin][0].number = false
  vim.wo[pwin][0].relativenumber = false
  vim.wo[pwin][0].signcolumn = "no"
  api.nvim_set_current_win(pwin)
  vim.cmd("startinsert!")
  return frame
end

--- The frame's windows and buffers go (the chat could not be created).
---@param frame acp.Frame
function M.drop_frame(frame)
  for _, b in ipairs({ frame.prompt_buf, frame.bufnr }) do
    for _, win in ipairs(vim.fn.win_findbuf(b)) do
      pcall(api.nvim_win_close, win, true)
    end
    pcall(api.nvim_buf_delete, b, { force = true })
  end
end

--- Set up the windows of a frame for the chat that took its buffers (or
--- show the chat when they were closed meanwhile).
---@param chat acp.Chat
function M.adopt(chat)
  require("acp.chat.index").last_id = chat.chat_id
  local twin, pwin = wins_in_tab(chat)
  if twin and pwin then
    -- Typed meanwhile: the prompt keeps it and the cursor stays.
    local typed = api.nvim_buf_line_count(chat.prompt_buf) > 1
      or (api.nvim_buf_get_lines(chat.prompt_buf, 0, 1, false)[1] or "") ~= ""
    if typed then
      require("acp.chat.blocks").setup_window(twin)
      api.nvim_win_set_cursor(twin, { api.nvim_buf_line_count(chat.bufnr), 0 })
      chat:update_winbar()
    else
      finish(chat, twin, pwin)
    end
  else
    M.show(chat)
  end
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
