---@mod acp.edits.review.changes One place to review a turn (`:Acp changes`): a
--- buffer listing every file with agent edits under review, each with its
--- hunks inline (diff lines highlighted by extmarks, file headers, counts).
--- Keys there accept or reject a hunk, a file or everything shown; `<CR>`
--- opens the real buffer at the hunk. The view is scoped to the last turn of
--- the current chat, to the turns from a chosen one on, or to everything
--- under review, and follows the review live: a decision taken elsewhere or
--- a new agent edit redraws that file's section only.
---
--- It owns no review state: the reviews the backend's `review_changed`
--- events carried (acp.edits.review's cache, newest revision per chat and file)
--- are what it draws, asking the backend nothing, and decisions go to it by
--- stable hunk id (`acp.review_accept`/`acp.review_reject`), never by
--- editing files here. Conflict blocks live in the real buffer only: they
--- are shown, and resolved there. What it adds is the turn a hunk first
--- appeared in, which the backend does not track: recorded from every
--- `review_changed` (with the hunk's lines, so an id a restarted backend
--- hands out again is not taken for the old hunk).

local api = vim.api
local util = require("acp.util")
local turns = require("acp.edits.review.changes.turns")
local sections = require("acp.edits.review.changes.sections")
local record, turn_of = turns.record, turns.turn_of
local shown_path, buffer_of, build, scope_text =
  sections.shown_path, sections.buffer_of, sections.build, sections.scope_text

local C = {}

C.hunk_turn = turns.hunk_turn

--- The view buffer's name.
C.NAME = "acp://changes"

--- Lines of one hunk shown before the rest is summed up.
C.MAX_HUNK_LINES = sections.MAX_HUNK_LINES

--- Rows above the first file: title, help, blank.
local TOP = 3

local function backend()
  return require("acp.rpc.backend")
end

local function review()
  return require("acp.edits.review")
end

---@class acp.ChangesScope
---@field kind "all"|"since"
---@field chat_id? string since: the chat whose turns count
---@field turn? integer since: the first turn shown

---@class acp.ChangesRow what a row of a section stands for
---@field kind "file"|"hunk"|"conflict"|"note"
---@field hunk? acp.ReviewHunk
---@field line? integer 1-based line of the real buffer to open
---@field conflict? boolean a row of a conflict block

---@class acp.ChangesSection one file of one chat
---@field key string
---@field chat_id string
---@field path string
---@field status string
---@field hunks acp.ReviewHunk[] shown (decidable from the view)
---@field conflicts integer conflict blocks in the file's buffer
---@field added integer
---@field removed integer
---@field lines string[]
---@field rows acp.ChangesRow[]
---@field marks table[] {row, col, opts} relative to the section

---@class acp.ChangesView
---@field buf integer
---@field scope acp.ChangesScope
---@field sections acp.ChangesSection[] sorted by path
---@field fresh? true drawn by `:Acp changes` just before its window shows it (no second draw on entering)

---@type acp.ChangesView?
local view

--- The view when its buffer still exists.
---@return acp.ChangesView?
local function live()
  if view and api.nvim_buf_is_valid(view.buf) then
    return view
  end
  view = nil
end

--- The keys, in full and for narrow windows (80 columns with the chat
--- beside the view leave it 47).
local HELP = "a/r hunk  A/R file  gA/gR all shown  <CR> open  ]h [h  q close"
local HELP_SHORT = "a/r hunk A/R file gA/gR all <CR> open q"

--- The title and help rows.
---@param v acp.ChangesView
---@return string[] lines, table[] marks
local function top(v)
  local files, hunks, added, removed = 0, 0, 0, 0
  for _, s in ipairs(v.sections) do
    files = files + 1
    hunks = hunks + #s.hunks
    added, removed = added + s.added, removed + s.removed
  end
  local title = ("%s · %d file%s, %d hunk%s, +%d -%d"):format(
    scope_text(v.scope),
    files,
    files == 1 and "" or "s",
    hunks,
    hunks == 1 and "" or "s",
    added,
    removed
  )
  local win = vim.fn.bufwinid(v.buf)
  local width = win ~= -1 and api.nvim_win_get_width(win) or vim.o.columns
  local help = #HELP <= width and HELP or HELP_SHORT
  if files == 0 then
    help = v.scope.kind == "all" and "No agent edits under review."
      -- A "since" scope names its chat.
      or (
        v.scope.turn >= turn_of(v.scope.chat_id --[[@as string]])
        and "Nothing of this turn under review (:Acp changes all)"
      )
      or "Nothing of these turns under review (:Acp changes all)"
  end
  return { title, help, "" }, {
    { 0, 0, { end_col = #title, hl_group = "AcpChangesTitle" } },
    { 1, 0, { end_col = #help, hl_group = "AcpChangesHelp" } },
  }
end

--- The first row of a section in the buffer (0-based).
---@param v acp.ChangesView
---@param index integer
---@return integer
local function start_of(v, index)
  local row = TOP
  for i = 1, index - 1 do
    row = row + #v.sections[i].lines
  end
  return row
end

---@param buf integer
---@param first integer
---@param marks table[]
local function place(buf, first, marks)
  local ns = review().ns
  for _, m in ipairs(marks) do
    local opts = vim.deepcopy(m[3])
    if opts.end_col == -1 then
      opts.end_col = nil
      opts.end_row = first + m[1] + 1
    end
    opts.priority = 150
    pcall(api.nvim_buf_set_extmark, buf, ns, first + m[1], m[2], opts)
  end
end

--- Replace rows [first, last) of the view by `lines`, with their marks.
---@param buf integer
---@param first integer
---@param last integer
---@param lines string[]
---@param marks table[]
local function replace(buf, first, last, lines, marks)
  api.nvim_buf_clear_namespace(buf, review().ns, first, last)
  vim.bo[buf].modifiable = true
  api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
  place(buf, first, marks)
end

--- Redraw the title and help rows (counts change with every section).
---@param v acp.ChangesView
local function redraw_top(v)
  local lines, marks = top(v)
  replace(v.buf, 0, TOP, lines, marks)
end

--- The newest review of `path` the backend sent for `chat_id` (nil:
--- nothing under review).
---@param chat_id string
---@param path string normalized
---@return table?
local function review_of(chat_id, path)
  local entry = review().files[path]
  local rv = entry and entry.latest and entry.latest[chat_id]
  return type(rv) == "table" and rv or nil
end

--- Every section of the scope, from the reviews the backend sent.
---@param scope acp.ChangesScope
---@return acp.ChangesSection[]
local function collect(scope)
  local out = {}
  for _, chat in ipairs(require("acp.chat.index").list) do
    if chat.session_id and (scope.kind == "all" or scope.chat_id == chat.chat_id) then
      for path in pairs(review().files) do
        local rv = review_of(chat.chat_id, path)
        local s = rv and build(scope, chat.chat_id, path, rv)
        if s then
          out[#out + 1] = s
        end
      end
    end
  end
  table.sort(out, function(a, b)
    return a.path == b.path and a.chat_id < b.chat_id or a.path < b.path
  end)
  return out
end

--- Draw the whole view.
---@param v acp.ChangesView
local function draw_all(v)
  v.sections = collect(v.scope)
  local lines, marks = top(v)
  local all_marks = {}
  for _, m in ipairs(marks) do
    all_marks[#all_marks + 1] = m
  end
  for _, s in ipairs(v.sections) do
    local first = #lines
    vim.list_extend(lines, s.lines)
    for _, m in ipairs(s.marks) do
      all_marks[#all_marks + 1] = { first + m[1], m[2], m[3] }
    end
  end
  replace(v.buf, 0, -1, lines, all_marks)
end

--- Redraw one file of one chat: only its rows change (and the counts).
---@param chat_id string
---@param path string
function C.refresh_file(chat_id, path)
  local v = live()
  if not v or (v.scope.kind == "since" and v.scope.chat_id ~= chat_id) then
    return
  end
  local s = build(v.scope, chat_id, path, review_of(chat_id, path))
  local key = chat_id .. "\0" .. path
  local index, old ---@type integer?, acp.ChangesSection?
  for i, sec in ipairs(v.sections) do
    if sec.key == key then
      index, old = i, sec
      break
    end
  end
  if not old and not s then
    return
  end
  if not index then
    -- A new file: in path order.
    index = #v.sections + 1
    for i, sec in ipairs(v.sections) do
      if path < sec.path or (path == sec.path and chat_id < sec.chat_id) then
        index = i
        break
      end
    end
  end
  local first = start_of(v, index)
  local last = old and first + #old.lines or first
  local was_empty = #v.sections == 0
  if s and old then
    v.sections[index] = s
  elseif s then
    table.insert(v.sections, index, s)
  else
    table.remove(v.sections, index)
  end
  replace(v.buf, first, last, s and s.lines or {}, s and s.marks or {})
  redraw_top(v)
  if was_empty and s then
    -- The view was opened before any review reached the plugin (the
    -- review of a disk edit comes after the turn's end: seen at 80x24 in
    -- tests/tui under load): the cursor goes to the first hunk, where
    -- :Acp changes puts it, unless the user moved it.
    for _, win in ipairs(vim.fn.win_findbuf(v.buf)) do
      if api.nvim_win_get_cursor(win)[1] == 1 then
        pcall(api.nvim_win_set_cursor, win, { TOP + 2, 0 })
      end
    end
  end
end

---@type table<string, boolean> sections whose refresh is scheduled
local scheduled = {}

--- Refresh a section at the next tick (a burst of events draws once).
---@param chat_id string
---@param path string
local function schedule(chat_id, path)
  local key = chat_id .. "\0" .. path
  if scheduled[key] then
    return
  end
  scheduled[key] = true
  vim.schedule(function()
    scheduled[key] = nil
    local ok, err = pcall(C.refresh_file, chat_id, path)
    if not ok then
      util.notify("could not update the changes view: " .. tostring(err), vim.log.levels.ERROR)
    end
  end)
end

--- `review_changed` of a chat: remember the turn of new hunks, follow it.
---@param chat_id string
---@param ev acp.ev.ReviewChanged
function C.on_changed(chat_id, ev)
  if type(ev.review) == "table" and type(ev.review.hunks) == "table" then
    record(chat_id, ev.review.hunks)
  end
  if live() and type(ev.path) == "string" then
    schedule(chat_id, review().normalize(ev.path))
  end
end

--- What the cursor row of the view stands for.
---@return acp.ChangesSection? section, acp.ChangesRow? row
local function at_cursor()
  local v = live()
  if not v then
    return
  end
  local win = vim.fn.bufwinid(v.buf)
  local row = (
    api.nvim_get_current_buf() == v.buf and api.nvim_win_get_cursor(0)[1]
    or (win ~= -1 and api.nvim_win_get_cursor(win)[1] or 1)
  ) - 1
  local first = TOP
  for _, s in ipairs(v.sections) do
    if row < first + #s.lines then
      if row >= first then
        return s, s.rows[row - first + 1]
      end
      return
    end
    first = first + #s.lines
  end
end

--- Decide hunks of one file of one chat by id, after the typing not yet
--- reported of its buffer (the ids are those of the text the backend has).
---@param action "accept"|"reject"
---@param s acp.ChangesSection
---@param ids? integer[] nil: the whole file
local function send(action, s, ids)
  local buf = buffer_of(s.path)
  if buf and api.nvim_buf_is_loaded(buf) then
    review().send_user_edit(buf)
  end
  backend().notify(action == "accept" and "acp.review_accept" or "acp.review_reject", {
    chat_id = s.chat_id,
    path = s.path,
    hunks = ids,
  })
end

---@param s acp.ChangesSection
---@return integer[]
local function ids_of(s)
  local ids = {}
  for _, h in ipairs(s.hunks) do
    ids[#ids + 1] = tonumber(h.id)
  end
  return ids
end

--- Accept or reject from the view: the hunk under the cursor (on a file's
--- header: the file), the file under the cursor, or everything shown.
---@param action "accept"|"reject"
---@param scope? "hunks"|"file"|"all"
---@param line1? integer a range of view rows (1-based): every hunk touching it
---@param line2? integer
function C.decide(action, scope, line1, line2)
  local v = live()
  if not v then
    return
  end
  if scope == "all" then
    local any, held = false, 0
    for _, s in ipairs(v.sections) do
      if s.conflicts > 0 then
        held = held + 1
      elseif v.scope.kind == "all" then
        -- The whole file (also a created or deleted empty one).
        send(action, s, nil)
        any = true
      elseif #s.hunks > 0 then
        send(action, s, ids_of(s))
        any = true
      end
    end
    if held > 0 then
      util.notify(
        ("%d file%s with conflicts left as they are: resolve the conflicts in the buffer (<CR> opens it)"):format(
          held,
          held == 1 and "" or "s"
        ),
        vim.log.levels.WARN
      )
    elseif not any then
      util.notify("nothing shown to " .. action)
    end
    return
  end
  if line1 and line2 and scope ~= "file" then
    -- A range: the hunks of the rows, file by file.
    local picked = {}
    local first = TOP
    for _, s in ipairs(v.sections) do
      for i, r in ipairs(s.rows) do
        local row = first + i
        if row >= line1 and row <= line2 and r.hunk and s.conflicts == 0 then
          picked[s] = picked[s] or {}
          picked[s][tonumber(r.hunk.id)] = true
        end
      end
      first = first + #s.lines
    end
    if next(picked) == nil then
      util.notify("no agent hunk in these lines", vim.log.levels.WARN)
      return
    end
    for s, set in pairs(picked) do
      local ids = vim.tbl_keys(set)
      table.sort(ids)
      send(action, s, ids)
    end
    return
  end
  local s, r = at_cursor()
  if not s or not r then
    util.notify("no file here: put the cursor on a file or a hunk", vim.log.levels.WARN)
    return
  end
  if r.conflict or s.conflicts > 0 then
    util.notify(
      ("%s has open conflicts: resolve them in the buffer (<CR> opens it at the conflict)"):format(shown_path(s.path)),
      vim.log.levels.WARN
    )
    return
  end
  if scope == "file" or r.kind == "file" then
    send(action, s, v.scope.kind == "all" and nil or ids_of(s))
    return
  end
  if not r.hunk then
    util.notify("no agent hunk here; ]h / [h move to one", vim.log.levels.WARN)
    return
  end
  local id = tonumber(r.hunk.id) --[[@as integer]] -- hunk ids are integers
  send(action, s, { id })
end

--- Open the real buffer at the row under the cursor, in another window
--- than the view's (the view stays and keeps following the review).
function C.open()
  local s, r = at_cursor()
  if not s then
    util.notify("no file here: put the cursor on a file or a hunk", vim.log.levels.WARN)
    return
  end
  local line = r and r.line or 1
  local here = api.nvim_get_current_win()
  local target
  local prev = vim.fn.win_getid(vim.fn.winnr("#"))
  local function usable(win)
    local b = api.nvim_win_get_buf(win)
    return win ~= here and vim.bo[b].buftype == "" and api.nvim_win_get_config(win).relative == ""
  end
  if prev ~= 0 and usable(prev) then
    target = prev
  else
    for _, win in ipairs(api.nvim_tabpage_list_wins(0)) do
      if usable(win) then
        target = win
        break
      end
    end
  end
  if target then
    api.nvim_set_current_win(target)
  end
  -- No other window for files (80 columns, the chat beside it): the file
  -- takes the view's window; `:Acp changes` brings the view back.
  local open = buffer_of(s.path)
  if open then
    api.nvim_win_set_buf(0, open)
  else
    vim.cmd("edit " .. vim.fn.fnameescape(s.path))
  end
  local count = api.nvim_buf_line_count(0)
  pcall(api.nvim_win_set_cursor, 0, { math.max(1, math.min(line, count)), 0 })
  vim.cmd("normal! zz")
end

--- Move to the next (1) or previous (-1) hunk or conflict header.
---@param dir integer
function C.move(dir)
  local v = live()
  if not v then
    return
  end
  local cur = api.nvim_win_get_cursor(0)[1]
  local heads = {}
  local first = TOP
  for _, s in ipairs(v.sections) do
    for i, r in ipairs(s.rows) do
      local prev = s.rows[i - 1]
      local starts = (r.kind == "hunk" and (not prev or prev.hunk ~= r.hunk))
        or (r.kind == "conflict" and s.lines[i]:match("^conflict"))
      if starts then
        heads[#heads + 1] = first + i
      end
    end
    first = first + #s.lines
  end
  local target
  if dir > 0 then
    for _, row in ipairs(heads) do
      if row > cur then
        target = row
        break
      end
    end
  else
    for i = #heads, 1, -1 do
      if heads[i] < cur then
        target = heads[i]
        break
      end
    end
  end
  if not target then
    util.notify(dir > 0 and "no agent hunk below" or "no agent hunk above")
    return
  end
  api.nvim_win_set_cursor(0, { target, 0 })
end

--- Whether a buffer is the changes view (`:Acp accept` there decides in it).
---@param buf integer
---@return boolean
function C.is_view(buf)
  local v = live()
  return v ~= nil and v.buf == buf
end

---@param buf integer
local function keys(buf)
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = buf, silent = true, nowait = true, desc = "acp.nvim changes: " .. desc })
  end
  map("a", function()
    C.decide("accept")
  end, "accept the hunk (on a file's header: the file)")
  map("r", function()
    C.decide("reject")
  end, "reject the hunk (on a file's header: the file)")
  map("A", function()
    C.decide("accept", "file")
  end, "accept the file")
  map("R", function()
    C.decide("reject", "file")
  end, "reject the file")
  map("gA", function()
    C.decide("accept", "all")
  end, "accept everything shown")
  map("gR", function()
    C.decide("reject", "all")
  end, "reject everything shown")
  map("<CR>", C.open, "open the file at the hunk")
  map("q", function()
    -- The last window is not closed: it shows the buffer before the view.
    if not pcall(vim.cmd.close) then
      local alt = vim.fn.bufnr("#")
      if alt > 0 and alt ~= buf and vim.fn.buflisted(alt) == 1 then
        api.nvim_win_set_buf(0, alt)
      else
        vim.cmd("enew")
      end
    end
  end, "close the view")
  api.nvim_create_autocmd("BufEnter", {
    group = api.nvim_create_augroup("acp_changes_" .. buf, { clear = true }),
    buffer = buf,
    callback = function()
      -- Drawn anew when the user comes back: a backend restart in between
      -- took the review with it (nothing told the view), and the chats
      -- may have changed.
      local v = live()
      if v and v.fresh then
        -- Just drawn by :Acp changes.
        v.fresh = nil
      elseif v then
        local cursor = api.nvim_win_get_cursor(0)
        draw_all(v)
        pcall(api.nvim_win_set_cursor, 0, { math.min(cursor[1], api.nvim_buf_line_count(buf)), 0 })
      end
    end,
  })
  local k = require("acp.config").options.keymaps or {}
  for name, fn in pairs({
    review_next = function()
      C.move(1)
    end,
    review_prev = function()
      C.move(-1)
    end,
    review_accept = function()
      C.decide("accept")
    end,
    review_reject = function()
      C.decide("reject")
    end,
    review_accept_file = function()
      C.decide("accept", "file")
    end,
    review_reject_file = function()
      C.decide("reject", "file")
    end,
  }) do
    if k[name] then
      map(k[name], fn, name:gsub("_", " "))
    end
  end
  map("]h", function()
    C.move(1)
  end, "next hunk")
  map("[h", function()
    C.move(-1)
  end, "previous hunk")
end

--- Parse the arguments of `:Acp changes`: none (the current chat's last
--- turn), a turn number (from that turn on), or `all`.
---@param args string[]
---@return acp.ChangesScope? scope, string? err
function C.scope(args)
  local arg = args[1]
  if arg == "all" then
    return { kind = "all" }
  end
  if #args > 1 or (arg ~= nil and not arg:match("^%d+$")) then
    return nil,
      ("`:Acp changes %s`: use `:Acp changes` (the last turn), `:Acp changes {turn}` or `:Acp changes all`"):format(
        table.concat(args, " ")
      )
  end
  local chat = require("acp.chat.index").current()
  if not chat then
    return { kind = "all" }
  end
  local now = turn_of(chat.chat_id)
  local turn = arg and tonumber(arg) or math.max(now, 1)
  if turn < 1 or turn > math.max(now, 1) then
    return nil,
      ("chat %s has turns 1 to %d; `:Acp changes all` shows everything under review"):format(chat.chat_id, now)
  end
  return { kind = "since", chat_id = chat.chat_id, turn = turn }
end

--- Open the view (`:Acp changes [turn|all]`) in the current window, or in
--- a window for files when the current one is a chat's.
---@param args string[]
function C.show(args)
  local scope, err = C.scope(args)
  if not scope then
    -- C.scope says why whenever it gives no scope.
    util.notify(err --[[@as string]], vim.log.levels.ERROR)
    return
  end
  local v = live()
  if not v then
    local buf = api.nvim_create_buf(false, true)
    api.nvim_buf_set_name(buf, C.NAME)
    vim.bo[buf].buftype = "nofile"
    vim.bo[buf].bufhidden = "hide"
    vim.bo[buf].swapfile = false
    vim.bo[buf].modifiable = false
    vim.bo[buf].filetype = "acpchanges"
    keys(buf)
    v = { buf = buf, scope = scope, sections = {} }
    view = v
  end
  v.scope = scope
  draw_all(v)
  v.fresh = api.nvim_get_current_buf() ~= v.buf or nil
  local win = vim.fn.bufwinid(v.buf)
  if win ~= -1 then
    api.nvim_set_current_win(win)
  else
    if require("acp.chat.index").of_buf(api.nvim_get_current_buf()) or vim.bo.buftype ~= "" then
      -- From the chat: where files are shown (else a new window left of it).
      local target
      for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
        local b = api.nvim_win_get_buf(w)
        if vim.bo[b].buftype == "" and api.nvim_win_get_config(w).relative == "" then
          target = w
          break
        end
      end
      if target then
        api.nvim_set_current_win(target)
      else
        vim.cmd("leftabove vsplit")
      end
    end
    api.nvim_win_set_buf(0, v.buf)
    vim.wo[0][0].wrap = false
    vim.wo[0][0].number = false
    vim.wo[0][0].relativenumber = false
    vim.wo[0][0].signcolumn = "no"
    vim.wo[0][0].foldenable = false
  end
  -- The keys fitted to the window it is shown in now.
  redraw_top(v)
  -- At the first hunk.
  local first = (v.sections[1] and TOP + 2) or 1
  pcall(api.nvim_win_set_cursor, 0, { first, 0 })
end

return C
