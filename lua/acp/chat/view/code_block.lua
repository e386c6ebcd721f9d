---@mod acp.chat.view.code_block The fenced code blocks of the transcript, as the
--- user acts on them: yank the one under the cursor (`yc`; on a prompt of
--- the user, its text), or open it in a split of the editor with its
--- language's filetype (`gC`).

local api = vim.api
local util = require("acp.util")

local M = {}

---@class acp.CodeBlock
---@field lines string[] the code, without the fences and their indent
---@field lang string the fence's language ("" when none)
---@field first integer buffer row (0-based) of the opening fence
---@field last integer buffer row of the closing fence (or the block's end)

--- The fenced code block holding `row` (its fences included) in the
--- transcript block there: messages, and tool results drawn as markdown.
---@param view acp.View
---@param row integer 0-based
---@return acp.CodeBlock?
function M.at(view, row)
  local block = view:block_at(row)
  if not block then
    return nil
  end
  local sr, er = view:range(block)
  local lines = api.nvim_buf_get_lines(view.buf, sr, er + 1, false)
  local open -- {row, indent, char, len, lang}
  for i, line in ipairs(lines) do
    local r = sr + i - 1
    local indent, run, info = line:match("^(%s*)(```+)%s*([^`]*)$")
    if not run then
      indent, run, info = line:match("^(%s*)(~~~+)%s*(.*)$")
    end
    if open then
      if run and run:sub(1, 1) == open.char and #run >= open.len and vim.trim(info or "") == "" then
        if row >= open.row and row <= r then
          return M._make(lines, sr, open, r)
        end
        open = nil
      end
    elseif run and #indent < 4 + 2 then
      open = {
        row = r,
        indent = #indent,
        char = run:sub(1, 1),
        len = #run,
        lang = vim.trim(info or ""):match("^[^%s{]*") or "",
      }
    end
  end
  -- A block still streaming (or never closed) ends with the transcript block.
  if open and row >= open.row then
    return M._make(lines, sr, open, er + 1)
  end
end

---@param lines string[] the buffer's rows from `sr` on
---@param sr integer the buffer row (0-based) of lines[1]
---@param open {row: integer, indent: integer, lang: string} the opening fence
---@param close_row integer the closing fence's row (or one past the block's end)
---@return acp.CodeBlock
function M._make(lines, sr, open, close_row)
  local code = {}
  for r = open.row + 1, close_row - 1 do
    local line = lines[r - sr + 1] or ""
    -- The fence's indent (tool output is indented by two) is not code.
    local lead = #(line:match("^%s*"))
    code[#code + 1] = line:sub(math.min(lead, open.indent) + 1)
  end
  return { lines = code, lang = open.lang, first = open.row, last = math.min(close_row, sr + #lines - 1) }
end

--- The code block under the cursor of the current window, or a notice.
---@param chat acp.Chat
---@return acp.CodeBlock?
local function under_cursor(chat)
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local cb = M.at(chat.transcript.view, row)
  if not cb then
    util.notify("no code block under the cursor")
  end
  return cb
end

--- Yank the code block under the cursor (the register the user named,
--- else the unnamed one), linewise; on a prompt of the user, its text.
---@param chat acp.Chat
---@return acp.CodeBlock?
function M.yank(chat)
  local reg = vim.v.register ~= "" and vim.v.register or '"'
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local cb = M.at(chat.transcript.view, row)
  local prompt = not cb and require("acp.chat.prompt").message_text(chat, row)
  if prompt then
    vim.fn.setreg(reg, vim.split(prompt, "\n", { plain = true }), "l")
    util.notify("yanked your prompt")
    return nil
  end
  cb = cb or under_cursor(chat)
  if not cb then
    return nil
  end
  vim.fn.setreg(reg, cb.lines, "l")
  util.notify(
    ("yanked %d line%s%s"):format(#cb.lines, #cb.lines == 1 and "" or "s", cb.lang ~= "" and (" of " .. cb.lang) or "")
  )
  return cb
end

--- A filetype for a fence's language: itself when Neovim knows it, else
--- what a file with that extension would be.
---@param lang string
---@return string
function M.filetype(lang)
  if lang == "" then
    return ""
  end
  if vim.tbl_contains(vim.fn.getcompletion(lang, "filetype"), lang) then
    return lang
  end
  return vim.filetype.match({ filename = "code." .. lang }) or ""
end

--- Open the code block under the cursor in a scratch buffer, split from
--- the editor window the chat was opened from (not in the chat's column).
---@param chat acp.Chat
---@return integer? buf
function M.open(chat)
  local cb = under_cursor(chat)
  if not cb then
    return nil
  end
  local target
  for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
    local b = api.nvim_win_get_buf(win)
    if api.nvim_win_get_config(win).relative == "" and require("acp.chat.index").of_buf(b) == nil then
      target = win
      break
    end
  end
  if target then
    api.nvim_set_current_win(target)
    vim.cmd("belowright split")
  else
    vim.cmd("topleft vsplit")
  end
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, cb.lines)
  vim.bo[buf].bufhidden = "wipe"
  api.nvim_win_set_buf(0, buf)
  local ft = M.filetype(cb.lang)
  if ft ~= "" then
    vim.bo[buf].filetype = ft
  end
  return buf
end

return M
