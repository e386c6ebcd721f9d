---@mod acp.edits.review.changes.sections One file's section of the changes
--- view: its header, counts, hunks (long ones summed up) and the conflict
--- blocks of its buffer, as lines, marks and what each row stands for.

local api = vim.api
local sanitize = require("acp.sanitize")
local turns = require("acp.edits.review.changes.turns")
local record, in_scope, turn_of = turns.record, turns.in_scope, turns.turn_of

local M = {}

--- Lines of one hunk shown before the rest is summed up (a created file of
--- a million lines must not make a million-line view).
M.MAX_HUNK_LINES = 200

local function review()
  return require("acp.edits.review")
end

---@param path string
---@return string
local function shown_path(path)
  return sanitize.line(vim.fn.fnamemodify(path, ":~:."))
end

---@param line string
---@return string
local function shown_line(line)
  return sanitize.line((tostring(line):gsub("\t", string.rep(" ", vim.o.tabstop))))
end

--- The loaded buffer of a file, if any.
local buffer_of = require("acp.util").find_buffer

--- Conflict blocks in the file's buffer (they exist there only), as
--- {first, last, lines} with 0-based rows.
---@param path string
---@return table[]
local function conflicts_of(path)
  local buf = buffer_of(path)
  if not buf or not api.nvim_buf_is_loaded(buf) then
    return {}
  end
  local M = review()
  -- The review tracks the blocks' first lines: most buffers have none, and
  -- this runs on every review change of the file while the view is open.
  if not M.has_conflicts(buf) then
    return {}
  end
  local out, lines = {}, api.nvim_buf_get_lines(buf, 0, -1, false)
  local i = 1
  while i <= #lines do
    if lines[i] == M.CONFLICT_START then
      local last
      for j = i + 1, #lines do
        if lines[j] == M.CONFLICT_END then
          last = j
          break
        elseif lines[j] == M.CONFLICT_START then
          break
        end
      end
      if last then
        out[#out + 1] = { first = i - 1, last = last - 1, lines = vim.list_slice(lines, i, last) }
        i = last + 1
      else
        i = i + 1
      end
    else
      i = i + 1
    end
  end
  return out
end

--- Build the section of one file of one chat from its review, nil when
--- nothing of it is in the scope.
---@param scope acp.ChangesScope
---@param chat_id string
---@param path string
---@param rv? table the file's review (as its `review_changed` carried it)
---@return acp.ChangesSection?
local function build(scope, chat_id, path, rv)
  if type(rv) ~= "table" then
    return nil
  end
  local all = type(rv.hunks) == "table" and rv.hunks or {}
  record(chat_id, all)
  local hunks = {}
  for _, h in ipairs(all) do
    if type(h) == "table" and tonumber(h.id) and in_scope(scope, chat_id, h) then
      hunks[#hunks + 1] = h
    end
  end
  local conflicts = conflicts_of(path)
  -- A created or deleted empty file has no hunk: shown in the whole view.
  local empty_change = #all == 0 and rv.status ~= "modified" and scope.kind == "all"
  if #hunks == 0 and #conflicts == 0 and not empty_change then
    return nil
  end
  local s = {
    key = chat_id .. "\0" .. path,
    chat_id = chat_id,
    path = path,
    status = tostring(rv.status or "modified"),
    hunks = hunks,
    conflicts = #conflicts,
    added = 0,
    removed = 0,
    lines = {},
    rows = {},
    marks = {},
  }
  local function add(text, row, marks)
    s.lines[#s.lines + 1] = text
    s.rows[#s.rows + 1] = row
    for _, m in ipairs(marks or {}) do
      s.marks[#s.marks + 1] = { #s.lines - 1, m[1], m[2] }
    end
  end
  for _, h in ipairs(hunks) do
    s.added = s.added + #(h.new_lines or {})
    s.removed = s.removed + #(h.old_lines or {})
  end
  -- The header: counted after the hunks, filled in below.
  add("", { kind = "file", line = hunks[1] and (tonumber(hunks[1].new_start) or 0) + 1 or 1 })
  for _, c in ipairs(conflicts) do
    add(("conflict at line %d: resolve it in the buffer (<CR> opens it)"):format(c.first + 1), {
      kind = "conflict",
      line = c.first + 1,
      conflict = true,
    }, { { 0, { end_col = 8, hl_group = "AcpReviewSignConflict" } } })
    local side = "AcpReviewConflictOurs"
    for i, l in ipairs(c.lines) do
      local hl = side
      if i == 1 or i == #c.lines then
        hl = "AcpReviewConflictMarker"
      elseif l == review().CONFLICT_MID and side == "AcpReviewConflictOurs" then
        hl, side = "AcpReviewConflictMarker", "AcpReviewConflictTheirs"
      end
      add(
        " " .. shown_line(l),
        { kind = "conflict", line = c.first + i, conflict = true },
        { { 0, { line_hl_group = hl } } }
      )
    end
  end
  if #conflicts > 0 and #hunks > 0 then
    -- The review may describe the agent's text past the conflicts (its
    -- newer edit waits for them): decided once they are resolved.
    add(
      ("%d hunk%s wait until the conflicts are resolved"):format(#hunks, #hunks == 1 and "" or "s"),
      { kind = "note", line = conflicts[1].first + 1 },
      { { 0, { end_col = -1, hl_group = "AcpChangesHelp" } } }
    )
    s.hunks = {}
    hunks = {}
    s.added, s.removed = 0, 0
  end
  for _, h in ipairs(hunks) do
    local old, new = h.old_lines or {}, h.new_lines or {}
    local at = (tonumber(h.new_start) or 0) + 1
    local head = ("@@ -%d,%d +%d,%d @@"):format((tonumber(h.old_start) or 0) + 1, #old, at, #new)
    add(head, { kind = "hunk", hunk = h, line = at }, { { 0, { end_col = #head, hl_group = "AcpChangesHunk" } } })
    local shown = 0
    local function body(lines, sign, hl, line_of)
      for i, l in ipairs(lines) do
        if shown >= M.MAX_HUNK_LINES then
          return
        end
        shown = shown + 1
        add(sign .. shown_line(l), { kind = "hunk", hunk = h, line = line_of(i) }, { { 0, { line_hl_group = hl } } })
      end
    end
    body(old, "-", "AcpReviewDelete", function()
      return at
    end)
    body(new, "+", "AcpReviewAdd", function(i)
      return at + i - 1
    end)
    if #old + #new > shown then
      add(
        ("  … %d more lines (<CR> opens the file)"):format(#old + #new - shown),
        { kind = "hunk", hunk = h, line = at },
        {
          { 0, { end_col = -1, hl_group = "AcpChangesHelp" } },
        }
      )
    end
  end
  local chats = #require("acp.chat.index").list > 1 and (" · chat %s"):format(chat_id) or ""
  local counts = #s.hunks > 0
      and ("%d hunk%s, +%d -%d"):format(#s.hunks, #s.hunks == 1 and "" or "s", s.added, s.removed)
    or (s.conflicts > 0 and ("%d conflict%s"):format(s.conflicts, s.conflicts == 1 and "" or "s") or "no lines")
  local name = shown_path(path)
  s.lines[1] = ("%s  %s · %s%s"):format(name, s.status, counts, chats)
  s.marks[#s.marks + 1] = { 0, 0, { end_col = #name, hl_group = "AcpChangesFile" } }
  s.marks[#s.marks + 1] = { 0, #name, { end_col = #s.lines[1], hl_group = "AcpChangesCount" } }
  add("", { kind = "note" })
  return s
end

---@param scope acp.ChangesScope
---@return string
local function scope_text(scope)
  if scope.kind == "all" then
    return "All under review"
  end
  local now = turn_of(scope.chat_id --[[@as string]]) -- a "since" scope names its chat
  local chat = #require("acp.chat.index").list > 1 and (" of chat %s"):format(scope.chat_id) or ""
  if scope.turn >= now then
    return ("Turn %d%s"):format(scope.turn, chat)
  end
  return ("Turns %d-%d%s"):format(scope.turn, now, chat)
end

M.shown_path = shown_path
M.buffer_of = buffer_of
M.build = build
M.scope_text = scope_text

return M
