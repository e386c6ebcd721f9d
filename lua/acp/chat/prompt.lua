---@mod acp.chat.prompt The prompt input buffer: the hint shown while it is empty,
--- completion of the agent's slash commands and of `@` mentions.

local api = vim.api
local config = require("acp.config")

local M = {}

local hint_ns = api.nvim_create_namespace("acp.prompt_hint")

--- A hint in the empty prompt: how to send.
---@param chat acp.Chat
function M.hint(chat)
  local buf = chat.prompt_buf
  local function update()
    if not api.nvim_buf_is_valid(buf) then
      return true
    end
    api.nvim_buf_clear_namespace(buf, hint_ns, 0, -1)
    local lines = api.nvim_buf_get_lines(buf, 0, 2, false)
    if #lines == 1 and lines[1] == "" then
      local k = config.options.keymaps
      local keys = {}
      if k.submit then
        keys[#keys + 1] = k.submit
      end
      if k.submit_insert then
        keys[#keys + 1] = k.submit_insert .. " (insert)"
      end
      api.nvim_buf_set_extmark(buf, hint_ns, 0, 0, {
        virt_text = { { ("Ask %s… %s to send"):format(chat.agent.name, table.concat(keys, " or ")), "AcpNote" } },
        virt_text_pos = "overlay",
      })
    end
  end
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI", "BufEnter" }, { buffer = buf, callback = update })
  update()
end

--- Completion items for the agent's slash commands (from
--- `available_commands_update`), with their descriptions and input hints.
---@param chat acp.Chat?
---@param base string what was typed, `/` included
---@return table[]
function M.command_items(chat, base)
  local items = {}
  for _, c in ipairs(chat and chat.commands or {}) do
    local name = "/" .. tostring(c.name or "")
    if vim.startswith(name:lower(), base:lower()) then
      local desc = c.description or ""
      local hint = (c.input or {}).hint
      local info = desc
      if hint and hint ~= "" then
        info = (desc ~= "" and (desc .. "\n\n") or "") .. "Input: " .. hint
      end
      items[#items + 1] = {
        word = name,
        menu = hint and hint ~= "" and ("%s <%s>"):format(desc, hint) or desc,
        info = info,
        kind = "command",
        icase = 1,
      }
    end
  end
  return items
end

--- Completion items for `@` mentions: `@selection`, open buffers, then
--- workspace files from the backend's index (respects .gitignore).
---@param chat acp.Chat?
---@param base string what was typed, `@` included
---@return table[]
function M.mention_items(chat, base)
  if not chat then
    return {}
  end
  local context = require("acp.chat.context")
  local query = base:sub(2):gsub('^"', "")
  local items, seen = {}, {}
  local function add(word, menu, info)
    if not seen[word] then
      seen[word] = true
      items[#items + 1] = { word = word, menu = menu, info = info, kind = "file", icase = 1 }
    end
  end
  local sel = context.selection()
  if sel and vim.startswith("selection", query:lower()) then
    local path = api.nvim_buf_get_name(sel.buf)
    add("@selection", "[selection]", context.mention(path, chat.cwd, sel.l1, sel.l2):sub(2))
  end
  local bufs = {}
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local name = api.nvim_buf_get_name(buf)
    if
      api.nvim_buf_is_loaded(buf)
      and vim.bo[buf].buflisted
      and vim.bo[buf].buftype == ""
      and name ~= ""
      and require("acp.chat.index").of_buf(buf) == nil
    then
      bufs[#bufs + 1] = { path = name, shown = context.display_path(name, chat.cwd), modified = vim.bo[buf].modified }
    end
  end
  if query ~= "" then
    bufs = vim.fn.matchfuzzy(bufs, query, { key = "shown" })
  end
  for _, b in ipairs(bufs) do
    add(context.mention(b.path, chat.cwd), b.modified and "[buffer +]" or "[buffer]", b.path)
  end
  local backend = require("acp.rpc.backend")
  if backend.running() then
    local res = backend.request("acp.complete_files", {
      cwd = chat.cwd,
      query = query,
      limit = 50,
      hidden = config.options.context.hidden_files,
    })
    for _, rel in ipairs(type(res) == "table" and res.paths or {}) do
      add(context.mention(chat.cwd .. "/" .. rel, chat.cwd), "[file]", rel)
    end
  end
  return items
end

--- 'omnifunc' of the prompt: the agent's slash commands after `/`, files,
--- buffers and `@selection` after `@`. nvim-cmp and blink.cmp use it
--- through their omni sources.
---@param findstart integer
---@param base string
---@return integer|table
function M.omnifunc(findstart, base)
  local line = api.nvim_get_current_line()
  local col = api.nvim_win_get_cursor(0)[2]
  if findstart == 1 then
    local before = line:sub(1, col)
    for _, pat in ipairs({ '@"[^"]*$', "@[^%s]*$" }) do
      local start = before:find(pat)
      if start and (start == 1 or before:sub(start - 1, start - 1):match("%s")) then
        return start - 1
      end
    end
    -- A slash command means something only at the start of the prompt
    -- (`files under /` is a path).
    if api.nvim_win_get_cursor(0)[1] == 1 and before:find("^/[^%s/]*$") then
      return 0
    end
    return -3
  end
  local chat = require("acp.chat.index").of_buf(api.nvim_get_current_buf())
  if base:sub(1, 1) == "@" then
    return M.mention_items(chat, base)
  end
  return M.command_items(chat, base)
end

--- Whether typing `char` after `before` (the line up to the cursor) starts
--- a completion: `@` at the start of a word, `/` at the start of the prompt
--- (its first line, `row` 1). Mid-word characters (`me@example.com`,
--- `src/main.rs`) and `/` in a sentence (`files under /`) never do.
---@param before string
---@param char string
---@param row? integer the cursor's line (1-based; default 1)
---@return boolean
function M.starts_completion(before, char, row)
  if char == "/" then
    return before == "" and (row or 1) == 1
  end
  if char ~= "@" then
    return false
  end
  return before == "" or before:sub(-1):match("%s") ~= nil
end

--- Open the omni menu in the prompt when it is the current buffer in
--- Insert mode and no menu shows.
---@param buf integer
---@param again? boolean also after a completion that found nothing (Insert mode's CTRL-X submode)
local function open_menu(buf, again)
  local mode = api.nvim_get_mode().mode
  if
    api.nvim_get_current_buf() == buf
    and (mode == "i" or (again and mode:sub(1, 1) == "i"))
    and vim.fn.pumvisible() == 0
  then
    -- Where 'completeopt' is global (Neovim 0.10) the menu inserts its
    -- first entry (`/` became `/plan`, then typing `explain` gave
    -- `/planexplain`): <C-p> goes back to what was typed.
    -- With "noselect" nothing is inserted and <C-p> would pick the
    -- last entry.
    local plain = M.completeopt_local or vim.tbl_contains(vim.opt.completeopt:get(), "noselect")
    local keys = plain and "<C-x><C-o>" or "<C-x><C-o><C-p>"
    api.nvim_feedkeys(api.nvim_replace_termcodes(keys, true, false, true), "n", false)
  end
end

--- Opens the omni menu when `@` or `/` starts a word in the prompt, so the
--- agent's commands and the workspace files show without <C-x><C-o>.
--- Users of nvim-cmp or blink.cmp (which trigger on their own) turn it off
--- with `context.auto_complete = false`.
---@param buf integer
local function auto_complete(buf)
  api.nvim_create_autocmd("InsertCharPre", {
    buffer = buf,
    callback = function()
      if not config.options.context.auto_complete then
        return
      end
      local row, col = unpack(api.nvim_win_get_cursor(0))
      if not M.starts_completion(api.nvim_get_current_line():sub(1, col), vim.v.char, row) then
        return
      end
      -- The character is not in the buffer yet: complete once it is.
      vim.schedule(function()
        open_menu(buf)
      end)
    end,
  })
end

--- The agent's commands arrived (`available_commands_update`): a `/`
--- typed before them (the prompt takes keys while the agent starts, see
--- acp.chat.layout.frame) found nothing to complete and left Insert mode's
--- CTRL-X submode without a menu, so the menu opens now.
---@param buf integer the chat's prompt
function M.commands_arrived(buf)
  if not config.options.context.auto_complete or api.nvim_get_current_buf() ~= buf then
    return
  end
  local row, col = unpack(api.nvim_win_get_cursor(0))
  if row == 1 and api.nvim_get_current_line():sub(1, col):match("^/%S*$") then
    -- Keys fed inside the backend's call would wait for the next key typed.
    vim.schedule(function()
      open_menu(buf, true)
    end)
  end
end

--- The prompt's 'completeopt': the user's, but never inserting nor
--- selecting an entry the user did not pick (with the default "menu,popup"
--- the first entry was inserted while typing; with it only selected, <CR>
--- after `files under /` took `/update-config`), and a menu even for one
--- match.
---@param global string the global 'completeopt'
---@return string
function M.completeopt(global)
  local flags, seen = {}, {}
  for _, f in ipairs(vim.split(global or "", ",", { trimempty = true })) do
    if f ~= "longest" and f ~= "menu" and not seen[f] then
      seen[f] = true
      flags[#flags + 1] = f
    end
  end
  for _, f in ipairs({ "menuone", "noinsert", "noselect" }) do
    if not seen[f] then
      flags[#flags + 1] = f
    end
  end
  return table.concat(flags, ",")
end

--- Whether 'completeopt' can be set for one buffer (Neovim 0.11+).
M.completeopt_local = api.nvim_get_option_info2("completeopt", {}).scope == "buf"

--- Prompts sent, oldest first, shared by every chat (like a shell's).
---@type string[]
M.history = {}
--- Most prompts kept in the history.
M.MAX_HISTORY = 200

--- Remember a sent prompt (not twice in a row).
---@param text string
function M.remember(text)
  if text ~= "" and M.history[#M.history] ~= text then
    M.history[#M.history + 1] = text
    if #M.history > M.MAX_HISTORY then
      table.remove(M.history, 1)
    end
  end
end

--- Put an older (dir -1) or newer (dir 1) prompt of the history in the
--- chat's prompt input; past the newest comes back what was being written.
---@param chat acp.Chat
---@param dir integer
---@return boolean moved
function M.recall(chat, dir)
  local buf = chat.prompt_buf
  local h = M.history
  if chat.history_pos == nil then
    chat.history_pos = #h + 1
    chat.history_draft = api.nvim_buf_get_lines(buf, 0, -1, false)
  end
  local pos = chat.history_pos + dir
  if pos < 1 or pos > #h + 1 then
    return false
  end
  chat.history_pos = pos
  local lines = pos == #h + 1 and chat.history_draft or vim.split(h[pos], "\n", { plain = true })
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  local win = api.nvim_get_current_win()
  if api.nvim_win_get_buf(win) == buf then
    local last = #lines
    api.nvim_win_set_cursor(win, { last, #lines[last] })
  end
  return true
end

--- The text of the user's prompt at `row` of the transcript, as typed (its
--- text blocks; mentions are in the text), nil when the row holds none.
---@param chat acp.Chat
---@param row integer 0-based
---@return string?
function M.message_text(chat, row)
  local block = chat.transcript.view:block_at(row)
  local content = block and block.data.user_content
  if not content then
    return nil
  end
  local parts = {}
  for _, b in ipairs(content) do
    if b.type == "text" and type(b.text) == "string" and not require("acp.chat.context").is_rewind_context(b) then
      parts[#parts + 1] = b.text
    end
  end
  return table.concat(parts, "")
end

--- Edit a prompt sent before, to send it again: its text goes into the
--- prompt input (what was being written there goes to the history, <Up>
--- brings it back), the cursor at its end in Insert mode.
---@param chat acp.Chat
---@param row integer 0-based row of the transcript
---@return boolean
function M.edit_again(chat, row)
  local text = M.message_text(chat, row)
  if not text then
    require("acp.util").notify("no prompt of yours under the cursor")
    return false
  end
  if chat.readonly then
    require("acp.util").notify("this chat is a read-only transcript; yc copies the prompt", vim.log.levels.WARN)
    return false
  end
  local buf = chat.prompt_buf
  local draft = table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
  if vim.trim(draft) ~= "" and draft ~= text then
    M.remember(draft)
  end
  chat.history_pos = nil
  local lines = vim.split(text, "\n", { plain = true })
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  chat:focus_prompt()
  local win = api.nvim_get_current_win()
  if api.nvim_win_get_buf(win) == buf then
    api.nvim_win_set_cursor(win, { #lines, #lines[#lines] })
  end
  return true
end

--- Map the history keys: they recall prompts on the first (older) or last
--- (newer) line of the input, and move the cursor everywhere else.
---@param chat acp.Chat
local function history_keys(chat)
  local k = config.options.keymaps
  for _, spec in ipairs({ { k.history_prev, -1 }, { k.history_next, 1 } }) do
    local lhs, dir = spec[1], spec[2]
    if lhs then
      vim.keymap.set({ "n", "i" }, lhs, function()
        local row = api.nvim_win_get_cursor(0)[1]
        local edge = dir < 0 and 1 or api.nvim_buf_line_count(chat.prompt_buf)
        if vim.fn.pumvisible() == 1 or row ~= edge then
          return lhs
        end
        return "<Cmd>lua require('acp.chat.prompt').recall(require('acp.chat.index').get('"
          .. chat.chat_id
          .. "'), "
          .. dir
          .. ")<CR>"
      end, {
        buffer = chat.prompt_buf,
        expr = true,
        desc = dir < 0 and "acp.nvim: previous prompt (history)" or "acp.nvim: next prompt (history)",
      })
    end
  end
end

--- Set up a chat's prompt buffer (hint, completion).
---@param chat acp.Chat
function M.attach(chat)
  M.hint(chat)
  if not vim.g.acp_tracks_selection then
    -- plugin/acp.lua tracks it already; acp.chat.context loads at first use.
    require("acp.chat.context").track_selection()
  end
  vim.bo[chat.prompt_buf].omnifunc = "v:lua.require'acp.chat.prompt'.omnifunc"
  history_keys(chat)
  if M.completeopt_local then
    vim.bo[chat.prompt_buf].completeopt = M.completeopt(vim.go.completeopt)
  end
  auto_complete(chat.prompt_buf)
end

return M
