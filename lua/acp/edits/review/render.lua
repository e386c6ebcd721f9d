---@mod acp.edits.review.render Drawing a review in the real buffer: hunks
--- (added lines highlighted, removed lines as virtual lines, signs) and
--- conflict blocks in ONE namespace, and the conflict markers tracked as
--- they appear (so an agent's read answers in O(limit)).

local api = vim.api
local util = require("acp.util")
local state = require("acp.edits.review.state")

local R = {}

local CONFLICT_START = state.CONFLICT_START
local CONFLICT_MID = state.CONFLICT_MID
local CONFLICT_END = state.CONFLICT_END
local normalize = state.normalize

--- Conflict blocks written by a merge, found by their marker lines.
---@param lines string[]
---@return acp.ReviewItem[]
local function find_conflicts(lines)
  local out = {}
  local i = 1
  while i <= #lines do
    if lines[i] == CONFLICT_START then
      local mid, last ---@type integer?, integer?
      for j = i + 1, #lines do
        if lines[j] == CONFLICT_MID and not mid then
          mid = j
        elseif lines[j] == CONFLICT_END and mid then
          last = j
          break
        elseif lines[j] == CONFLICT_START then
          break
        end
      end
      if mid and last then
        out[#out + 1] = {
          kind = "conflict",
          first = i - 1,
          last = last - 1,
          ours = vim.list_slice(lines, i + 1, mid - 1),
          theirs = vim.list_slice(lines, mid + 1, last - 1),
        }
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

--- What `fs/read_text_file` answers for a buffer with open conflicts: each
--- conflict block replaced by its agent side, while the blocks exist in the
--- buffer only. An agent shown our marker lines takes them for file content
--- and writes them back (seen with the fake agent's read-modify-write, which
--- any agent rewriting whole files does), and its next edit waits for the
--- conflicts anyway (state.pending), to be merged with the user's choice. Once
--- the user saved the blocks they are the file's text, and the agent reads
--- them as they are: hiding the user's side then would let an agent write
--- the file without the user's lines.
---@param lines string[]
---@param path? string the buffer's file, to see whether it holds the blocks
---@return string[]
function R.agent_view(lines, path)
  local conflicts = find_conflicts(lines)
  if #conflicts == 0 then
    return lines
  end
  local disk = path and util.read_file(path)
  if disk and ("\n" .. disk):find("\n" .. CONFLICT_START .. "\n", 1, true) then
    return lines
  end
  local out, row = {}, 0
  for _, c in ipairs(conflicts) do
    vim.list_extend(out, lines, row + 1, c.first)
    -- find_conflicts gives every block both sides.
    vim.list_extend(out, c.theirs --[[@as string[] ]])
    row = c.last + 1
  end
  vim.list_extend(out, lines, row + 1, #lines)
  return out
end

-- The lines that start a conflict block, tracked as they appear: one extmark
-- per `<<<<<<< buffer` line, placed by an on_lines watcher over the changed
-- rows only, so `fs/read_text_file` answers in O(limit) instead of searching
-- the whole buffer on every read (123x slower at line 900,000 of a 1M-line
-- buffer). A mark whose line was deleted collapses onto a neighbour and is
-- dropped when next looked at.
local marker_ns = api.nvim_create_namespace("acp_review_markers")
--- Buffers watched: true, or "rescan" after an edit too large to scan in
--- its callback (a full search in C at the next query instead).
---@type table<integer, true|"rescan">
local watched = {}
--- Changes of more lines are not scanned inside on_lines.
local SCAN_MAX = 2000
--- The highest change number (`changenr()`) seen per watched buffer: a
--- change that does not raise it is an undo or redo.
---@type table<integer, integer>
local newest_change = {}

--- Mark every conflict start of the buffer (a search in C, run once per
--- buffer and after reloads or huge edits).
---@param buf integer
local function scan_all(buf)
  api.nvim_buf_clear_namespace(buf, marker_ns, 0, -1)
  local rows = api.nvim_buf_call(buf, function()
    local found, view = {}, vim.fn.winsaveview()
    local pattern = "\\V\\^" .. CONFLICT_START .. "\\$"
    vim.fn.cursor(1, 1)
    local flags = "cW"
    while true do
      local l = vim.fn.search(pattern, flags)
      if l == 0 then
        break
      end
      found[#found + 1] = l - 1
      flags = "W"
    end
    vim.fn.winrestview(view)
    return found
  end)
  for _, row in ipairs(rows) do
    api.nvim_buf_set_extmark(buf, marker_ns, row, 0, {})
  end
  watched[buf] = true
end

--- Start tracking a buffer's conflict starts.
---@param buf integer
local function watch(buf)
  if watched[buf] then
    return
  end
  scan_all(buf)
  newest_change[buf] = api.nvim_buf_call(buf, vim.fn.changenr)
  api.nvim_buf_attach(buf, false, {
    on_lines = function(_, b, _, first, _, last_new)
      if not watched[b] then
        return true
      end
      if watched[b] == "rescan" then
        return
      end
      if last_new - first > SCAN_MAX then
        watched[b] = "rescan"
        return
      end
      if b == api.nvim_get_current_buf() then
        -- Undo and redo (only ever of the current buffer) put extmarks
        -- back after this callback, moving a mark set here off its line:
        -- an undo then redo of a merge lost its conflict's mark, and the
        -- agent read the marker lines. Such changes are searched for at
        -- the next query instead.
        local nr = vim.fn.changenr()
        if nr <= (newest_change[b] or -1) then
          watched[b] = "rescan"
          return
        end
        newest_change[b] = nr
      end
      api.nvim_buf_clear_namespace(b, marker_ns, first, last_new)
      for i, l in ipairs(api.nvim_buf_get_lines(b, first, last_new, false)) do
        if l == CONFLICT_START then
          api.nvim_buf_set_extmark(b, marker_ns, first + i - 1, 0, {})
        end
      end
    end,
    on_reload = function(_, b)
      if watched[b] then
        watched[b] = "rescan"
      end
    end,
    on_detach = function(_, b)
      watched[b] = nil
      newest_change[b] = nil
    end,
  })
end

--- Whether a line of the buffer starts a conflict block, from the tracked
--- marks: O(conflict blocks), whatever the buffer's size.
---@param buf integer
---@return boolean
function R.has_marker(buf)
  watch(buf)
  if watched[buf] == "rescan" then
    scan_all(buf)
  end
  for _, m in ipairs(api.nvim_buf_get_extmarks(buf, marker_ns, 0, -1, {})) do
    if api.nvim_buf_get_lines(buf, m[2], m[2] + 1, false)[1] == CONFLICT_START then
      return true
    end
    api.nvim_buf_del_extmark(buf, marker_ns, m[1])
  end
  return false
end

--- Whether the buffer holds conflict blocks of an earlier merge (the
--- search first: most buffers have none, and this runs on every agent write
--- to a modified buffer).
---@param buf integer
---@return boolean
function R.has_conflicts(buf)
  return R.has_marker(buf) and #find_conflicts(api.nvim_buf_get_lines(buf, 0, -1, false)) > 0
end

local function virt(lines, hl, width)
  local out = {}
  for _, l in ipairs(lines) do
    local text = l:gsub("\t", string.rep(" ", vim.o.tabstop))
    out[#out + 1] = { { text .. string.rep(" ", math.max(0, width - vim.fn.strdisplaywidth(text))), hl } }
  end
  return out
end

local function set_mark(buf, row, col, opts)
  opts.priority = opts.priority or 150
  pcall(api.nvim_buf_set_extmark, buf, state.ns, row, col, opts)
end

--- Removed lines shown as virtual lines at `row` (above it; below the last
--- line when `row` is past the end).
local function draw_removed(buf, row, lines, hl)
  if #lines == 0 then
    return
  end
  local count = api.nvim_buf_line_count(buf)
  local width = math.max(vim.o.columns - 10, 20)
  if row >= count then
    set_mark(buf, count - 1, 0, { virt_lines = virt(lines, hl, width) })
  else
    set_mark(buf, row, 0, { virt_lines = virt(lines, hl, width), virt_lines_above = true })
  end
end

--- Draw a review (hunks of the current text) and the conflicts in a buffer.
---@param buf integer
---@param review? table
local function draw(buf, review)
  api.nvim_buf_clear_namespace(buf, state.ns, 0, -1)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local count = #lines
  local items = find_conflicts(lines)
  for _, c in ipairs(items) do
    set_mark(
      buf,
      c.first,
      0,
      { line_hl_group = "AcpReviewConflictMarker", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" }
    )
    for r = c.first + 1, c.first + #c.ours do
      set_mark(
        buf,
        r,
        0,
        { line_hl_group = "AcpReviewConflictOurs", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" }
      )
    end
    local mid = c.first + #c.ours + 1
    set_mark(
      buf,
      mid,
      0,
      { line_hl_group = "AcpReviewConflictMarker", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" }
    )
    for r = mid + 1, c.last - 1 do
      set_mark(
        buf,
        r,
        0,
        { line_hl_group = "AcpReviewConflictTheirs", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" }
      )
    end
    set_mark(
      buf,
      c.last,
      0,
      { line_hl_group = "AcpReviewConflictMarker", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" }
    )
  end
  local function in_conflict(first, last)
    for _, c in ipairs(items) do
      if first <= c.last and c.first <= last then
        return true
      end
    end
    return false
  end
  -- While an agent change waits for the conflicts (state.pending), the review
  -- describes the agent's newer text, not this buffer: its hunks' rows are
  -- not these rows, so only the conflicts are shown and decided.
  local path = normalize(api.nvim_buf_get_name(buf))
  local hunks = not state.pending[path] and review and review.hunks or {}
  for _, h in ipairs(hunks) do
    local new_n, old_n = #(h.new_lines or {}), #(h.old_lines or {})
    local first = h.new_start
    local last = new_n > 0 and (first + new_n - 1) or math.min(first, math.max(count - 1, 0))
    if first <= count and not in_conflict(math.min(first, math.max(count - 1, 0)), last) then
      local sign = (new_n > 0 and old_n > 0) and "~" or (new_n > 0 and "+" or "-")
      local sign_hl = sign == "~" and "AcpReviewSignChange"
        or (sign == "+" and "AcpReviewSignAdd" or "AcpReviewSignDelete")
      for r = first, first + new_n - 1 do
        set_mark(buf, r, 0, { line_hl_group = "AcpReviewAdd", sign_text = sign, sign_hl_group = sign_hl })
      end
      if new_n == 0 then
        set_mark(buf, math.min(first, math.max(count - 1, 0)), 0, { sign_text = sign, sign_hl_group = sign_hl })
      end
      draw_removed(buf, first, h.old_lines or {}, "AcpReviewDelete")
      items[#items + 1] = { kind = "hunk", first = math.min(first, math.max(count - 1, 0)), last = last, hunk = h }
    end
  end
  table.sort(items, function(a, b)
    return a.first < b.first
  end)
  -- An undecorated mark per item follows the user's edits, so the keys
  -- find the item where it is now, also before the next redraw.
  for _, it in ipairs(items) do
    local ok, id = pcall(api.nvim_buf_set_extmark, buf, state.ns, it.first, 0, { end_row = it.last, end_col = 0 })
    it.mark = ok and id or nil
  end
  state.items[buf] = items
end

--- Rows of an item now (its mark moves with edits above it).
---@param buf integer
---@param it acp.ReviewItem
---@return integer first, integer last
local function rows_of(buf, it)
  if it.mark then
    local pos = api.nvim_buf_get_extmark_by_id(buf, state.ns, it.mark, { details = true })
    if pos[1] then
      local last = pos[3] and pos[3].end_row or pos[1]
      return pos[1], math.max(pos[1], last)
    end
  end
  return it.first, it.last
end

R.virt = virt
R.set_mark = set_mark
R.draw = draw
R.rows_of = rows_of

return R
