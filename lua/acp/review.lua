---@mod acp.review Review of agent edits in the real buffers: inline diff
--- (added lines highlighted, removed lines as virtual lines, signs), keys and
--- commands to accept or reject hunks, buffers kept in sync with what the
--- agent wrote on disk, and the preview of a proposed edit before approving.
---
--- The backend tracks the edits (per chat) and reports `review_changed`;
--- this module asks for the file's hunks (`acp.review_file`) and draws them
--- in ONE namespace. Keeping buffers in sync:
--- - an unmodified buffer whose file the agent changed is reloaded with
---   minimal edits (no "file changed" prompt; cursor and folds survive);
--- - a buffer with unsaved edits gets the agent's change merged in
---   (`acp.merge`, base: the text the buffer was last in sync with) as one
---   undo step; it stays modified. Conflicts are written between
---   `<<<<<<< buffer` / `=======` / `>>>>>>> agent` lines and shown as
---   conflict hunks: accept keeps the agent's side, reject keeps yours;
--- - what the user types in a reviewed buffer is reported (`acp.user_edit`),
---   so it is never shown as the agent's nor undone by a reject.

local api = vim.api
local util = require("acp.util")
local fs = require("acp.fs")

local M = {}

--- The one namespace of the inline diff (and of the permission preview).
M.ns = api.nvim_create_namespace("acp_review")

--- Debounce of user edits sent to the backend while typing.
M.USER_EDIT_DEBOUNCE_MS = 300

local CONFLICT_START = "<<<<<<< buffer"
local CONFLICT_MID = "======="
local CONFLICT_END = ">>>>>>> agent"

---@class acp.ReviewHunk
---@field id integer
---@field old_start integer 0-based
---@field old_lines string[]
---@field new_start integer 0-based
---@field new_lines string[]

---@class acp.ReviewItem one thing the keys act on, in buffer rows (0-based)
---@field kind "hunk"|"conflict"
---@field first integer first row
---@field last integer last row (== first for a pure deletion)
---@field hunk? acp.ReviewHunk
---@field ours? string[] conflict: the buffer's side
---@field theirs? string[] conflict: the agent's side
---@field mark? integer extmark following the item's rows

---@class acp.ReviewEntry
---@field path string
---@field chats table<string, table> chat id -> summary ({status, hunks, added, removed, first_line})
---@field chat_id? string the chat whose review is shown
---@field review? table the last `acp.review_file` answer of that chat
---@field known? string the text the backend was last told (or told us) the file has
---@field reviewed_by? table<string, true> chats that had edits of the file under review: told of the user's edits also once nothing is left to review, so an undo then redo brings the review back
---@field latest? table<string, table|false> chat id -> the review its last `review_changed` carried (false: nothing left to review)
---@field asked? boolean a user edit or decision of this file was sent since the last `acp.review_file`: the next refresh asks (its answer comes after them)

---@type table<string, acp.ReviewEntry>
M.files = {}
--- Disk text each reviewed buffer was last in sync with (path -> text).
---@type table<string, string>
M.synced = {}
---@type table<integer, acp.ReviewItem[]> buffer -> items drawn
M.items = {}
--- Files whose buffer still holds conflict blocks when the agent changed the
--- file again: that change waits on disk until the conflicts are resolved
--- (merging it now would nest conflict blocks), path -> true.
---@type table<string, true>
M.pending = {}
--- Rows the user resolved a conflict to while the agent's newer change
--- waited (`M.pending`): range extmarks in this namespace, so typing and the
--- other resolutions move them. Their lines are accepted once that change is
--- merged (see merge_pending).
M.resolved_ns = api.nvim_create_namespace("acp_review_resolved")
---@type table<integer, boolean> buffers with review keys
local attached = {}
---@type table<integer, boolean> buffers whose edits are reported
local reporting = {}
---@type table<string, boolean> paths whose BufWritePost is ours (fs.write)
local own_writes = {}
---@type table<string, boolean> refreshes scheduled
local scheduled = {}
---@type table<integer, {request_id: integer, path: string, opened?: boolean}> buffer -> preview shown (opened: its buffer was made for the preview, of a file that does not exist yet)
M.previews = {}

local function normalize(path)
  local full = vim.fn.fnamemodify(path, ":p")
  return util.uv.fs_realpath(full) or full
end
M.normalize = normalize

local function backend()
  return require("acp.backend")
end

local function keymaps()
  return require("acp.config").options.keymaps
end

--- The buffer's text was just synced with the disk text `text` (the
--- backend's fs.write calls this after applying or merging a write).
---@param path string
---@param text string
function M.set_synced(path, text)
  M.synced[normalize(path)] = text
end

--- Run `fn` (which saves the buffer of `path`) without reporting the save
--- as the user's edit.
---@param path string
---@param fn fun()
function M.own_write(path, fn)
  local key = normalize(path)
  own_writes[key] = true
  local ok, err = pcall(fn)
  own_writes[key] = nil
  if not ok then
    error(err, 0)
  end
end

-- Rendering ------------------------------------------------------------------

--- Conflict blocks written by a merge, found by their marker lines.
---@param lines string[]
---@return acp.ReviewItem[]
local function find_conflicts(lines)
  local out = {}
  local i = 1
  while i <= #lines do
    if lines[i] == CONFLICT_START then
      local mid, last
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
--- conflicts anyway (M.pending), to be merged with the user's choice. Once
--- the user saved the blocks they are the file's text, and the agent reads
--- them as they are: hiding the user's side then would let an agent write
--- the file without the user's lines.
---@param lines string[]
---@param path? string the buffer's file, to see whether it holds the blocks
---@return string[]
function M.agent_view(lines, path)
  local conflicts = find_conflicts(lines)
  if #conflicts == 0 then
    return lines
  end
  local disk = path and fs.read_disk(path)
  if disk and ("\n" .. disk):find("\n" .. CONFLICT_START .. "\n", 1, true) then
    return lines
  end
  local out, row = {}, 0
  for _, c in ipairs(conflicts) do
    vim.list_extend(out, lines, row + 1, c.first)
    vim.list_extend(out, c.theirs)
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
    end,
  })
end

--- Whether a line of the buffer starts a conflict block, from the tracked
--- marks: O(conflict blocks), whatever the buffer's size.
---@param buf integer
---@return boolean
function M.has_marker(buf)
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
function M.has_conflicts(buf)
  return M.has_marker(buf) and #find_conflicts(api.nvim_buf_get_lines(buf, 0, -1, false)) > 0
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
  pcall(api.nvim_buf_set_extmark, buf, M.ns, row, col, opts)
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
  api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  local count = #lines
  local items = find_conflicts(lines)
  for _, c in ipairs(items) do
    set_mark(buf, c.first, 0, { line_hl_group = "AcpReviewConflictMarker", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" })
    for r = c.first + 1, c.first + #c.ours do
      set_mark(buf, r, 0, { line_hl_group = "AcpReviewConflictOurs", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" })
    end
    local mid = c.first + #c.ours + 1
    set_mark(buf, mid, 0, { line_hl_group = "AcpReviewConflictMarker", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" })
    for r = mid + 1, c.last - 1 do
      set_mark(buf, r, 0, { line_hl_group = "AcpReviewConflictTheirs", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" })
    end
    set_mark(buf, c.last, 0, { line_hl_group = "AcpReviewConflictMarker", sign_text = "!", sign_hl_group = "AcpReviewSignConflict" })
  end
  local function in_conflict(first, last)
    for _, c in ipairs(items) do
      if first <= c.last and c.first <= last then
        return true
      end
    end
    return false
  end
  -- While an agent change waits for the conflicts (M.pending), the review
  -- describes the agent's newer text, not this buffer: its hunks' rows are
  -- not these rows, so only the conflicts are shown and decided.
  local path = normalize(api.nvim_buf_get_name(buf))
  local hunks = not M.pending[path] and review and review.hunks or {}
  for _, h in ipairs(hunks) do
    local new_n, old_n = #(h.new_lines or {}), #(h.old_lines or {})
    local first = h.new_start
    local last = new_n > 0 and (first + new_n - 1) or math.min(first, math.max(count - 1, 0))
    if first <= count and not in_conflict(math.min(first, math.max(count - 1, 0)), last) then
      local sign = (new_n > 0 and old_n > 0) and "~" or (new_n > 0 and "+" or "-")
      local sign_hl = sign == "~" and "AcpReviewSignChange" or (sign == "+" and "AcpReviewSignAdd" or "AcpReviewSignDelete")
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
    local ok, id = pcall(api.nvim_buf_set_extmark, buf, M.ns, it.first, 0, { end_row = it.last, end_col = 0 })
    it.mark = ok and id or nil
  end
  M.items[buf] = items
end

--- Rows of an item now (its mark moves with edits above it).
---@param buf integer
---@param it acp.ReviewItem
---@return integer first, integer last
local function rows_of(buf, it)
  if it.mark then
    local pos = api.nvim_buf_get_extmark_by_id(buf, M.ns, it.mark, { details = true })
    if pos[1] then
      local last = pos[3] and pos[3].end_row or pos[1]
      return pos[1], math.max(pos[1], last)
    end
  end
  return it.first, it.last
end

-- Keys and autocmds of reviewed buffers -----------------------------------------

local function entry_of_buf(buf)
  local name = api.nvim_buf_get_name(buf)
  if name == "" then
    return nil
  end
  return M.files[normalize(name)]
end

local function map(buf, lhs, fn, desc)
  if lhs then
    vim.keymap.set("n", lhs, fn, { buffer = buf, silent = true, desc = "acp.nvim: " .. desc })
  end
end

local send_user_edit

--- Report the user's edits of a reviewed buffer (debounced). Stays when
--- the review is done with: an undo then redo of the agent's edit makes it
--- the review's again.
---@param buf integer
local function report_edits(buf)
  if reporting[buf] then
    return
  end
  reporting[buf] = true
  local timer
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI" }, {
    group = api.nvim_create_augroup("acp_review_buf_" .. buf, { clear = true }),
    buffer = buf,
    callback = function()
      if not entry_of_buf(buf) then
        return
      end
      if timer and not timer:is_closing() then
        timer:stop()
        timer:close()
      end
      local t = util.uv.new_timer()
      timer = t
      t:start(
        M.USER_EDIT_DEBOUNCE_MS,
        0,
        vim.schedule_wrap(function()
          if not t:is_closing() then
            t:close()
          end
          if timer ~= t then
            -- A newer change restarted the debounce.
            return
          end
          timer = nil
          if api.nvim_buf_is_valid(buf) then
            send_user_edit(buf)
            M.redraw(buf)
          end
        end)
      )
    end,
  })
end

local function attach(buf)
  report_edits(buf)
  if attached[buf] then
    return
  end
  attached[buf] = true
  local k = keymaps()
  map(buf, k.review_next, function()
    M.jump(1)
  end, "next agent hunk")
  map(buf, k.review_prev, function()
    M.jump(-1)
  end, "previous agent hunk")
  map(buf, k.review_accept, function()
    M.decide("accept", {})
  end, "accept the agent hunk under the cursor")
  map(buf, k.review_reject, function()
    M.decide("reject", {})
  end, "reject the agent hunk under the cursor")
  map(buf, k.review_accept_file, function()
    M.decide("accept", { scope = "file" })
  end, "accept every agent change of this file")
  map(buf, k.review_reject_file, function()
    M.decide("reject", { scope = "file" })
  end, "reject every agent change of this file")
end

local function detach(buf)
  if not attached[buf] then
    return
  end
  attached[buf] = nil
  -- Its keys go away with the review: say so, or the accept of the last
  -- hunk (and `]h` after it) looked like nothing happened.
  util.notify(
    ("%s: no agent changes left to review (:Acp review lists the other files)"):format(
      vim.fn.fnamemodify(api.nvim_buf_get_name(buf), ":~:.")
    )
  )
  local k = keymaps()
  for _, key in ipairs({ "review_next", "review_prev", "review_accept", "review_reject", "review_accept_file", "review_reject_file" }) do
    if k[key] then
      pcall(vim.keymap.del, "n", k[key], { buffer = buf })
    end
  end
end

--- Tell the backend what the user made of a reviewed buffer, unless the
--- disk changed since the buffer was synced (the agent's change is then
--- merged first, by the refresh that follows).
---@param buf integer
---@param accept_lines? integer[] {start, end}: then accept those lines (a resolution)
function send_user_edit(buf, accept_lines)
  local entry = entry_of_buf(buf)
  if not entry then
    return
  end
  local text = fs.buffer_text(buf)
  local synced = M.synced[entry.path]
  if synced ~= nil and fs.read_disk(entry.path) ~= synced then
    if M.pending[entry.path] and M.has_conflicts(buf) then
      -- The agent's newer text waits for the conflicts (see sync); the
      -- buffer would pass for the user undoing it. Reported after the merge.
      return
    end
    M.refresh(entry.path)
    return
  end
  if text == entry.known and not accept_lines then
    return
  end
  entry.known = text
  entry.asked = true
  for chat_id in pairs(entry.reviewed_by or entry.chats) do
    backend().notify("acp.user_edit", {
      chat_id = chat_id,
      path = entry.path,
      content = text,
      accept_lines = accept_lines,
      tick = api.nvim_buf_get_changedtick(buf),
    })
  end
end

-- Syncing buffers with the disk ------------------------------------------------

--- Bring a loaded buffer up to date with what the agent wrote on disk.
---@param buf integer
---@param entry acp.ReviewEntry
local function sync(buf, entry)
  local disk = fs.read_disk(entry.path)
  if disk == nil then
    return
  end
  local text = fs.buffer_text(buf)
  if text == disk then
    M.synced[entry.path] = disk
    return
  end
  if not vim.bo[buf].modified then
    if M.synced[entry.path] == disk then
      -- The disk did not change since the buffer was last in sync with it:
      -- the difference is the user's. Undoing the agent's reload lands on
      -- the text Neovim read and so reads as unmodified; reloading now would
      -- take the undo back and lose its redo. The buffer differs from its
      -- file: say so.
      vim.bo[buf].modified = true
      return
    end
    fs.apply_text(buf, disk)
    vim.bo[buf].modified = false
    -- Neovim remembers when it last read or wrote the file and would ask
    -- "changed since reading it" at the next :write; acp.filestamp quiets
    -- that while the disk holds this text. Saving the identical text instead
    -- would race the agent: one that rewrites the file in place (truncate,
    -- then write) can be read half way, and saving that clobbered its
    -- finished write (found by the data-safety property test).
    require("acp.filestamp").merged(buf, disk)
    M.synced[entry.path] = disk
    return
  end
  local base = M.synced[entry.path] or (entry.review and entry.review.baseline)
  if base == nil or base == vim.NIL or base == disk then
    -- The disk did not change since the buffer was in sync: the difference
    -- is the user's unsaved work.
    return
  end
  local ours = fs.buffer_text(buf)
  local ok, merged, conflicts = pcall(fs.merge_text, base, ours, disk)
  if not ok then
    util.notify(tostring(merged), vim.log.levels.ERROR)
    return
  end
  if conflicts > 0 and M.has_conflicts(buf) then
    -- New conflict blocks next to (or inside) the open ones would nest
    -- them: the agent's text waits on disk (M.synced keeps the older
    -- text), and resolving the open conflicts merges it (merge_pending).
    if not M.pending[entry.path] then
      M.pending[entry.path] = true
      util.notify(
        ("the agent changed %s again where conflicts are open; accept or reject them first, then its newer edit is merged"):format(
          vim.fn.fnamemodify(entry.path, ":~:.")
        ),
        vim.log.levels.WARN
      )
    end
    return
  end
  M.pending[entry.path] = nil
  if merged ~= ours then
    fs.apply_text(buf, merged)
  end
  M.synced[entry.path] = disk
  -- Resolutions waiting for this merge are done with (merge_pending read
  -- them; a hand-made resolution leaves nothing to accept).
  api.nvim_buf_clear_namespace(buf, M.resolved_ns, 0, -1)
  require("acp.filestamp").merged(buf, disk)
  if conflicts > 0 then
    util.notify(
      ("the agent changed %s where your unsaved edits are: %d conflict(s) kept both sides in the buffer; accept (agent's side) or reject (yours) them"):format(
        vim.fn.fnamemodify(entry.path, ":~:."),
        conflicts
      ),
      vim.log.levels.WARN
    )
  end
end

--- Fetch the shown chat's review of a path, sync its buffer, draw.
---@param path string
function M.refresh(path)
  local entry = M.files[path]
  if not entry then
    return
  end
  local chat_id = entry.chat_id
  local latest = chat_id and entry.latest and entry.latest[chat_id]
  if latest ~= nil and not entry.asked then
    -- The review its last `review_changed` carried: nothing of ours is on
    -- the way, so that is the newest (an agent's edit costs no request).
    entry.review = latest or nil
  elseif chat_id then
    -- Our user edits and decisions are applied in order before this
    -- answer, so the hunks the keys act on next are the ones drawn. (Events
    -- handled while it waits may change entry.chat_id: the answer is kept
    -- for the chat it was asked of.)
    entry.asked = nil
    local review = backend().request("acp.review_file", { chat_id = chat_id, path = path })
    entry.review = type(review) == "table" and review or nil
    entry.latest = entry.latest or {}
    entry.latest[chat_id] = entry.review or false
  else
    entry.review = nil
  end
  if entry.review then
    entry.known = entry.review.current or entry.known
  end
  local buf = fs.find_buffer(path)
  if not buf then
    return
  end
  sync(buf, entry)
  -- Unsaved user text (or a merge just made) the review does not know yet.
  if vim.bo[buf].modified then
    send_user_edit(buf)
  end
  M.redraw(buf)
end

--- Redraw a buffer from the last fetched review (e.g. after typing).
---@param buf integer
function M.redraw(buf)
  if M.previews[buf] then
    return
  end
  local entry = entry_of_buf(buf)
  if not entry then
    api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
    M.items[buf] = nil
    detach(buf)
    return
  end
  draw(buf, entry.review)
  if #M.items[buf] > 0 or entry.chat_id then
    attach(buf)
  else
    detach(buf)
  end
end

local function schedule_refresh(path)
  if scheduled[path] then
    return
  end
  scheduled[path] = true
  vim.schedule(function()
    scheduled[path] = nil
    local ok, err = pcall(M.refresh, path)
    if not ok then
      util.notify("could not show the review of " .. path .. ": " .. tostring(err), vim.log.levels.ERROR)
    end
  end)
end

-- Events -------------------------------------------------------------------

--- `review_changed` from the backend.
---@param chat_id string
---@param ev acp.ev.ReviewChanged
function M.on_changed(chat_id, ev)
  local raw = ev.path
  if not raw then
    return
  end
  local path = normalize(raw)
  local summary = ev.summary or {}
  local entry = M.files[path] or { path = path, chats = {} }
  M.files[path] = entry
  entry.latest = entry.latest or {}
  entry.latest[chat_id] = type(ev.review) == "table" and ev.review or false
  if (tonumber(summary.hunks) or 0) > 0 then
    entry.chats[chat_id] = summary
    entry.chat_id = chat_id
    entry.reviewed_by = entry.reviewed_by or {}
    entry.reviewed_by[chat_id] = true
  else
    entry.chats[chat_id] = nil
    if entry.chat_id == chat_id then
      entry.chat_id = next(entry.chats)
    end
  end
  if next(entry.chats) == nil then
    -- Nothing left to review; the buffer is still synced (and redrawn: the
    -- conflicts, if any, stay marked) once more.
    entry.chat_id = nil
  end
  schedule_refresh(path)
  -- The `:Acp review` list follows the decisions and the agent's edits.
  if not qf_scheduled then
    qf_scheduled = true
    vim.schedule(function()
      qf_scheduled = false
      local ok, err = pcall(M.quickfix, true)
      if not ok then
        util.notify("could not refresh the list of agent edits: " .. tostring(err), vim.log.levels.ERROR)
      end
    end)
  end
end

--- Forget every review of a chat (closed, or its agent died).
---@param chat_id string
function M.drop_chat(chat_id)
  for path, entry in pairs(M.files) do
    if entry.reviewed_by then
      entry.reviewed_by[chat_id] = nil
    end
    if entry.latest then
      entry.latest[chat_id] = nil
    end
    if entry.chats[chat_id] then
      entry.chats[chat_id] = nil
      if entry.chat_id == chat_id then
        entry.chat_id = next(entry.chats)
      end
      schedule_refresh(path)
    end
  end
end

--- Wipe a buffer without closing the windows that show it: each shows its
--- alternate buffer instead, else an empty one.
---@param buf integer
function M.drop_buffer(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    api.nvim_win_call(win, function()
      local alt = vim.fn.bufnr("#")
      if alt > 0 and alt ~= buf and vim.fn.buflisted(alt) == 1 then
        vim.cmd("buffer " .. alt)
      else
        vim.cmd("enew")
      end
    end)
  end
  pcall(api.nvim_buf_delete, buf, {})
end

--- Ask the user before deleting a file; tests replace it.
---@param path string
---@return boolean
function M.confirm_delete(path)
  local choice = vim.fn.confirm(
    ("acp.nvim: the agent created %s. Delete it?"):format(vim.fn.fnamemodify(path, ":~:.")),
    "&Delete\n&Keep",
    2
  )
  return choice == 1
end

--- `review_delete_pending`: the user rejected the creation of a file.
---@param chat_id string
---@param ev acp.ev.ReviewDeletePending
function M.on_delete_pending(chat_id, ev)
  local path = ev.path
  if not path then
    return
  end
  vim.schedule(function()
    if not M.confirm_delete(path) then
      util.notify(("kept %s"):format(path))
      return
    end
    local entry = M.files[normalize(path)]
    if entry then
      entry.asked = true
    end
    backend().notify("acp.review_delete", { chat_id = chat_id, path = path })
    local buf = fs.find_buffer(path)
    if buf and not vim.bo[buf].modified then
      M.drop_buffer(buf)
    end
  end)
end

-- Actions ------------------------------------------------------------------

--- The items of the current buffer touching rows [first, last].
---@param buf integer
---@param first integer
---@param last integer
---@return acp.ReviewItem[]
local function items_in(buf, first, last)
  local out = {}
  for _, it in ipairs(M.items[buf] or {}) do
    local a, b = rows_of(buf, it)
    if a <= last and first <= b then
      it.first, it.last = a, b
      out[#out + 1] = it
    end
  end
  return out
end

--- Move the cursor to the next (dir 1) or previous (-1) hunk or conflict.
---@param dir integer
function M.jump(dir)
  local buf = api.nvim_get_current_buf()
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local items = M.items[buf] or {}
  for _, it in ipairs(items) do
    it.first, it.last = rows_of(buf, it)
  end
  local target
  if dir > 0 then
    for _, it in ipairs(items) do
      if it.first > row then
        target = it
        break
      end
    end
  else
    for i = #items, 1, -1 do
      if items[i].first < row then
        target = items[i]
        break
      end
    end
  end
  if not target then
    util.notify(dir > 0 and "no agent hunk below" or "no agent hunk above")
    return
  end
  api.nvim_win_set_cursor(0, { target.first + 1, 0 })
end

--- Rows of `before` that are still the same lines in `after`, as 0-based
--- ranges of `after` [s, e), for each range [first, last) of `before` (an
--- empty range: the spot, where the row after it is unchanged).
---@param before string[]
---@param after string[]
---@param ranges integer[][]
---@return integer[][]
local function surviving_rows(before, after, ranges)
  local a, b = table.concat(before, "\n") .. "\n", table.concat(after, "\n") .. "\n"
  ---@type integer[][] {start_a, count_a, start_b, count_b}, 1-based starts
  local changes = vim.diff(a, b, { result_type = "indices", algorithm = "histogram" }) --[[@as integer[][] ]]
  --- The row of `after` holding row `r` of `before`, nil when it was changed.
  local function map(r)
    local shift = 0
    for _, c in ipairs(changes) do
      -- A pure insertion (count_a 0) sits after row start_a - 1 (1-based).
      local s0 = c[2] == 0 and c[1] or c[1] - 1
      if r < s0 then
        break
      end
      if c[2] > 0 and r < s0 + c[2] then
        return nil
      end
      shift = shift + c[4] - c[2]
    end
    return r + shift
  end
  local out = {}
  local total = 0
  for _, c in ipairs(changes) do
    total = total + c[4] - c[2]
  end
  for _, range in ipairs(ranges) do
    if range[1] == range[2] then
      -- A spot between rows: kept where the row after it is kept.
      local m = range[1] >= #before and range[1] + total or map(range[1])
      if m then
        out[#out + 1] = { m, m }
      end
    end
    local run
    for r = range[1], range[2] - 1 do
      local m = map(r)
      if m and run and m == run[2] then
        run[2] = m + 1
      else
        run = m and { m, m + 1 } or nil
        if run then
          out[#out + 1] = run
        end
      end
    end
  end
  return out
end

--- The conflicts are resolved and an agent change waited (M.pending): merge
--- it now, then accept the rows the user resolved to (their choice is the
--- file's text now), as far as the agent's newer change left those rows
--- alone; what it changed there stays under review.
---@param buf integer
---@param path string normalized
local function merge_pending(buf, path)
  local entry = M.files[path]
  local before = api.nvim_buf_get_lines(buf, 0, -1, false)
  local ranges = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(buf, M.resolved_ns, 0, -1, { details = true })) do
    ranges[#ranges + 1] = { m[2], math.max(m[2], m[4] and m[4].end_row or m[2]) }
  end
  api.nvim_buf_clear_namespace(buf, M.resolved_ns, 0, -1)
  -- No conflict is left: nothing waits any more (sync marks it again if
  -- the merge cannot be done).
  M.pending[path] = nil
  if not entry then
    return
  end
  sync(buf, entry)
  local rows = surviving_rows(before, api.nvim_buf_get_lines(buf, 0, -1, false), ranges)
  -- The merged text is reported with each run of rows, so its hunks there
  -- are accepted as a resolution's are (also the pure deletions the marker
  -- lines leave at the run's edges).
  if #rows == 0 then
    send_user_edit(buf)
  end
  for _, run in ipairs(rows) do
    send_user_edit(buf, run)
  end
  -- The review shown is fetched again after the accepts.
  schedule_refresh(path)
end

--- Resolve a conflict block in the buffer: `side` "theirs" keeps the
--- agent's lines, "ours" the buffer's. One undo step; the review is told and
--- the kept lines are accepted (the chosen text is now the file's).
---@param buf integer
---@param c acp.ReviewItem
---@param side "ours"|"theirs"
local function resolve(buf, c, side)
  local keep = side == "theirs" and c.theirs or c.ours
  local path = normalize(api.nvim_buf_get_name(buf))
  local synced = M.synced[path]
  if not M.pending[path] and (synced == nil or fs.read_disk(path) == synced) then
    -- Typing not reported yet goes first, on its own: reported with the
    -- resolution, a line typed right next to the block reads as part of
    -- the agent's hunk there, and a later reject would take it.
    send_user_edit(buf)
  end
  api.nvim_buf_call(buf, function()
    vim.go.undolevels = vim.go.undolevels
  end)
  api.nvim_buf_set_lines(buf, c.first, c.last + 1, false, keep)
  if M.pending[path] then
    -- The review describes the agent's newer text, which is not in the
    -- buffer yet: the kept rows are remembered (marks move with typing and
    -- the other resolutions) and accepted once it is merged. Insertions at
    -- either edge stay outside.
    -- An empty side still leaves the marker lines' deletions to accept:
    -- a mark without rows.
    pcall(api.nvim_buf_set_extmark, buf, M.resolved_ns, c.first, 0, {
      end_row = #keep > 0 and c.first + #keep or nil,
      end_col = #keep > 0 and 0 or nil,
      right_gravity = true,
      end_right_gravity = false,
    })
    if not M.has_conflicts(buf) then
      merge_pending(buf, path)
    end
    M.redraw(buf)
    return
  end
  -- The marker lines and the other side went into the review as the user's
  -- (they were typed by the merge); removing them leaves a pure deletion
  -- right after the kept lines, which the range's end reaches (an agent
  -- hunk starting there is not accepted with it).
  send_user_edit(buf, { c.first, c.first + #keep })
  M.redraw(buf)
end

--- Resolve every conflict of a buffer to one side, bottom-up. Resolving the
--- last one merges an agent change that waited (M.pending), which can open
--- new conflicts; those the user has not seen, so they are left for them.
---@param buf integer
---@param side "ours"|"theirs"
---@return boolean settled false when new conflicts were opened
local function resolve_all(buf, side)
  local items = M.items[buf] or {}
  local any = false
  for i = #items, 1, -1 do
    local it = items[i]
    if it.kind == "conflict" then
      it.first, it.last = rows_of(buf, it)
      resolve(buf, it, side)
      any = true
    end
  end
  return not (any and M.has_conflicts(buf))
end

--- Tell the user that a file's decision was held back (resolve_all).
---@param path string
---@param action string
local function held_back(path, action)
  util.notify(
    ("resolving the conflicts in %s merged the agent's newer edit, which conflicts with your lines: accept or reject those conflicts, then run :Acp %s again for that file"):format(
      vim.fn.fnamemodify(path, ":~:."),
      action
    ),
    vim.log.levels.WARN
  )
end

---@class acp.DecideOpts
---@field scope? "hunks"|"file"|"all" default "hunks"
---@field line1? integer 1-based first line (a range); default: the cursor line
---@field line2? integer 1-based last line

--- Accept or reject agent changes: the hunks (and conflicts) touching a
--- range of the current buffer, the whole file, or every change of every
--- chat (`scope = "all"`).
---@param action "accept"|"reject"
---@param opts acp.DecideOpts
function M.decide(action, opts)
  local method = action == "accept" and "acp.review_accept" or "acp.review_reject"
  -- The refreshes that follow ask for the reviews: they answer after these.
  if opts.scope == "all" then
    for _, e in pairs(M.files) do
      e.asked = true
    end
  else
    local e = entry_of_buf(api.nvim_get_current_buf())
    if e then
      e.asked = true
    end
  end
  if opts.scope == "all" then
    -- Conflicts first, in every buffer: they live in the buffers only, and
    -- a restore merged around one would nest its blocks.
    local held = {}
    for _, buf in ipairs(vim.tbl_keys(M.items)) do
      if api.nvim_buf_is_valid(buf) and not resolve_all(buf, action == "accept" and "theirs" or "ours") then
        local path = normalize(api.nvim_buf_get_name(buf))
        held[path] = true
        held_back(path, action .. " all")
      end
    end
    local any = false
    for _, chat in ipairs(require("acp.chat").list) do
      if chat.session_id then
        any = true
        if next(held) == nil then
          backend().notify(method, { chat_id = chat.chat_id })
        else
          -- File by file, leaving out the ones with new conflicts. The
          -- backend's list, not M.files: review_changed events can lag it.
          local files = backend().request("acp.review_files", { chat_id = chat.chat_id })
          for _, f in ipairs(type(files) == "table" and files or {}) do
            local path = f.path
            if path and not held[normalize(path)] then
              backend().notify(method, { chat_id = chat.chat_id, path = path })
            end
          end
        end
      end
    end
    if not any then
      util.notify("no chat has edits to review", vim.log.levels.WARN)
    end
    return
  end
  local buf = api.nvim_get_current_buf()
  local entry = entry_of_buf(buf)
  if not entry or (not entry.chat_id and #(M.items[buf] or {}) == 0) then
    util.notify("this buffer has no agent edits under review (:Acp review lists them)", vim.log.levels.WARN)
    return
  end
  if opts.scope == "file" then
    -- Conflicts first: they live in the buffer only.
    if not resolve_all(buf, action == "accept" and "theirs" or "ours") then
      held_back(entry.path, action .. " file")
      return
    end
    for chat_id in pairs(entry.chats) do
      backend().notify(method, { chat_id = chat_id, path = entry.path })
    end
    return
  end
  local cursor = api.nvim_win_get_cursor(0)[1]
  local first = (opts.line1 or cursor) - 1
  local last = (opts.line2 or opts.line1 or cursor) - 1
  local items = items_in(buf, first, last)
  if #items == 0 then
    if M.pending[entry.path] then
      util.notify(
        "the agent changed this file again while conflicts were open: accept or reject the conflicts first (]h jumps to them); its newer edit is merged and shown then",
        vim.log.levels.WARN
      )
    else
      util.notify("no agent hunk here; ]h / [h jump to one", vim.log.levels.WARN)
    end
    return
  end
  local ids = {}
  -- Bottom-up, so resolving a conflict does not move the rows of the others.
  for i = #items, 1, -1 do
    local it = items[i]
    if it.kind == "conflict" then
      resolve(buf, it, action == "accept" and "theirs" or "ours")
    else
      table.insert(ids, 1, it.hunk.id)
    end
  end
  if #ids > 0 and entry.chat_id then
    backend().notify(method, { chat_id = entry.chat_id, path = entry.path, hunks = ids })
  end
end

local QF_TITLE = "acp.nvim: agent edits to review"
local qf_scheduled = false

--- Every file with agent edits, of every chat, in the quickfix list (one
--- entry per file, at its first hunk), and open it. With `refresh`, only
--- replace the entries of that list when it is the current one (after a
--- decision or an agent edit), without opening anything.
---@param refresh? boolean
function M.quickfix(refresh)
  if refresh and vim.fn.getqflist({ title = 0 }).title ~= QF_TITLE then
    return
  end
  local items = {}
  for _, chat in ipairs(require("acp.chat").list) do
    if chat.session_id then
      local files = backend().request("acp.review_files", { chat_id = chat.chat_id })
      for _, f in ipairs(type(files) == "table" and files or {}) do
        local n = tonumber(f.hunks) or 0
        local first = tonumber(f.first_line)
        items[#items + 1] = {
          filename = f.path,
          lnum = (first or 0) + 1,
          text = ("%s, %d hunk%s, +%d -%d (chat %s, %s)"):format(
            f.status or "modified",
            n,
            n == 1 and "" or "s",
            tonumber(f.added) or 0,
            tonumber(f.removed) or 0,
            chat.chat_id,
            chat.agent and chat.agent.name or "agent"
          ),
        }
      end
    end
  end
  if refresh then
    vim.fn.setqflist({}, "r", { title = QF_TITLE, items = items })
    return
  end
  vim.fn.setqflist({}, " ", { title = QF_TITLE, items = items })
  if #items == 0 then
    util.notify("no agent edits to review")
    return
  end
  vim.cmd("copen")
end

--- Open a file in a normal window with its review drawn, at its first
--- hunk (the "open diff" of a tool call block).
---@param path string
function M.open(path)
  path = normalize(path)
  local entry = M.files[path]
  local line = entry and entry.chat_id and tonumber((entry.chats[entry.chat_id] or {}).first_line)
  require("acp.tool_call").jump({ path = path, line = line and (line + 1) or nil })
  if entry then
    M.refresh(path)
  else
    util.notify(("%s has no agent edits under review"):format(vim.fn.fnamemodify(path, ":~:.")))
  end
end

-- Permission preview -----------------------------------------------------------

--- The first `diff` content of a tool call.
---@param tc table
---@return table?
function M.diff_of(tc)
  for _, item in ipairs(tc.content or {}) do
    if item.type == "diff" then
      return item
    end
  end
end

--- Show what a permission request's edit would do, in the file's real
--- buffer, as virtual text only: lines it would remove are highlighted,
--- lines it would add are virtual lines. Nothing is applied; the preview
--- goes away when the request is answered.
---@param req acp.PermissionRequest
function M.preview(req)
  local d = M.diff_of(req.tool_call or {})
  if not d then
    util.notify("this permission request carries no diff to preview", vim.log.levels.WARN)
    return
  end
  local path = d.path
  local old = d.old_text
  local new = d.new_text or ""
  local existed = fs.find_buffer(path) ~= nil
  require("acp.tool_call").jump({ path = path })
  local buf = api.nvim_get_current_buf()
  local unborn = fs.is_unborn(buf)
  local text = unborn and "" or fs.buffer_text(buf)
  local proposed
  if old == nil or old == "" then
    proposed = new
  else
    local s, e = text:find(old, 1, true)
    if not s then
      util.notify("the proposed edit does not match the buffer; showing it side by side", vim.log.levels.WARN)
      require("acp.tool_call").open_diff({ path = path, old = old, new = new })
      return
    end
    proposed = text:sub(1, s - 1) .. new .. text:sub(e + 1)
  end
  local function norm(s)
    return (s ~= "" and s:sub(-1) ~= "\n") and (s .. "\n") or s
  end
  local new_lines = util.split_lines(norm(proposed))
  new_lines[#new_lines] = nil
  api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
  -- A buffer opened only to preview a file that does not exist yet goes
  -- away with the preview (end_preview): a preview leaves no trace.
  M.previews[buf] = { request_id = req.request_id, path = path, opened = unborn and not existed }
  local count = api.nvim_buf_line_count(buf)
  local width = math.max(vim.o.columns - 10, 20)
  local first_row
  for _, h in ipairs(util.diff_indices(norm(text), norm(proposed))) do
    local sa, ca, sb, cb = unpack(h)
    local start = ca == 0 and sa or (sa - 1)
    for r = start, start + ca - 1 do
      set_mark(buf, r, 0, { line_hl_group = "AcpReviewPreviewDelete", sign_text = "-", sign_hl_group = "AcpReviewSignDelete" })
    end
    local added = vim.list_slice(new_lines, sb, sb + cb - 1)
    if #added > 0 then
      -- After the removed lines (or the line the insertion follows).
      local anchor = start + ca - 1
      if anchor < 0 then
        set_mark(buf, 0, 0, { virt_lines = virt(added, "AcpReviewPreviewAdd", width), virt_lines_above = true, sign_text = "+", sign_hl_group = "AcpReviewSignAdd" })
      else
        set_mark(buf, math.min(anchor, count - 1), 0, { virt_lines = virt(added, "AcpReviewPreviewAdd", width) })
      end
    end
    first_row = first_row or math.min(start, count - 1)
  end
  if first_row then
    pcall(api.nvim_win_set_cursor, 0, { first_row + 1, 0 })
  end
  util.notify("preview of the proposed edit (nothing applied); answer the permission request in the chat")
end

--- The permission request was answered or withdrawn: drop its preview.
---@param request_id integer
function M.end_preview(request_id)
  for buf, p in pairs(M.previews) do
    if p.request_id == request_id then
      M.previews[buf] = nil
      if api.nvim_buf_is_valid(buf) then
        api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
        if p.opened and fs.is_unborn(buf) then
          M.drop_buffer(buf)
        else
          M.redraw(buf)
        end
      end
    end
  end
end

-- Setup ----------------------------------------------------------------------

--- Global autocmds: saves of reviewed files, buffers loaded later, and no
--- "file changed" prompt for files the review keeps in sync.
function M.setup()
  require("acp.filestamp").setup()
  local group = api.nvim_create_augroup("acp_review", { clear = true })
  api.nvim_create_autocmd("BufWritePost", {
    group = group,
    callback = function(a)
      local path = normalize(a.match)
      if own_writes[path] or not M.files[path] then
        return
      end
      M.synced[path] = fs.buffer_text(a.buf)
      send_user_edit(a.buf)
    end,
  })
  api.nvim_create_autocmd("BufReadPost", {
    group = group,
    callback = function(a)
      local path = normalize(a.match)
      if M.files[path] then
        M.synced[path] = fs.buffer_text(a.buf)
        schedule_refresh(path)
      end
    end,
  })
  api.nvim_create_autocmd("FileChangedShell", {
    group = group,
    callback = function(a)
      local path = normalize(a.match)
      if M.files[path] and next(M.files[path].chats) ~= nil then
        -- The review syncs this buffer itself (reload or merge).
        vim.v.fcs_choice = ""
        schedule_refresh(path)
      else
        vim.v.fcs_choice = "ask"
      end
    end,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = group,
    callback = function(a)
      M.items[a.buf] = nil
      M.previews[a.buf] = nil
      attached[a.buf] = nil
      reporting[a.buf] = nil
    end,
  })
end

return M
