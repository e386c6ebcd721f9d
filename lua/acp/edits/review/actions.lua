---@mod acp.edits.review.actions What the user does with a review: jump between
--- hunks, accept or reject them (conflicts resolved in the buffer), the
--- `:Acp review` quickfix list, opening a file at its review, and deleting
--- a created file whose creation was rejected.

local api = vim.api
local util = require("acp.util")
local buffer = require("acp.edits.buffer")
local state = require("acp.edits.review.state")
local render = require("acp.edits.review.render")
local S = require("acp.edits.review.sync")

local function backend()
  return require("acp.rpc.backend")
end

local A = {}

local normalize = state.normalize
local send_user_edit, schedule_refresh = S.send_user_edit, S.schedule_refresh
local rows_of = render.rows_of
local entry_of_buf = state.entry_of_buf

--- Wipe a buffer without closing the windows that show it: each shows its
--- alternate buffer instead, else an empty one.
---@param buf integer
function A.drop_buffer(buf)
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
function A.confirm_delete(path)
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
function A.on_delete_pending(chat_id, ev)
  local path = ev.path
  if not path then
    return
  end
  vim.schedule(function()
    if not A.confirm_delete(path) then
      util.notify(("kept %s"):format(path))
      return
    end
    backend().notify("acp.review_delete", { chat_id = chat_id, path = path })
    local buf = util.find_buffer(path)
    if buf and not vim.bo[buf].modified then
      A.drop_buffer(buf)
    end
  end)
end

--- The items of the current buffer touching rows [first, last].
---@param buf integer
---@param first integer
---@param last integer
---@return acp.ReviewItem[]
local function items_in(buf, first, last)
  local out = {}
  for _, it in ipairs(state.items[buf] or {}) do
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
function A.jump(dir)
  local buf = api.nvim_get_current_buf()
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local items = state.items[buf] or {}
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

--- `acp.edits.fs.apply` answered `waiting` to the agent's disk edit of `path`:
--- its buffer has open conflicts the edit would nest new ones in. The
--- backend keeps the text and sends it again once a report of the buffer
--- has no conflict blocks; until then only the conflicts are drawn.
---@param path string
function A.disk_waiting(path)
  local key = normalize(path)
  if state.pending[key] then
    return
  end
  state.pending[key] = true
  util.notify(
    ("the agent changed %s again where conflicts are open; accept or reject them first, then its newer edit is merged"):format(
      vim.fn.fnamemodify(path, ":~:.")
    ),
    vim.log.levels.WARN
  )
  schedule_refresh(key)
end

--- The rows the user resolved conflicts to while an agent edit waited, as
--- [first, last) ranges (read before that edit is merged: the marks move).
---@param buf integer
---@return integer[][]
function A.resolved_rows(buf)
  local ranges = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(buf, state.resolved_ns, 0, -1, { details = true })) do
    ranges[#ranges + 1] = { m[2], math.max(m[2], m[4] and m[4].end_row or m[2]) }
  end
  return ranges
end

--- `acp.edits.fs.apply` applied the agent's disk edit of `path` to `buf` (reloaded,
--- or merged into unsaved edits from the rows `before`, where the user had
--- resolved conflicts to `ranges`: A.resolved_rows). Nothing waits any
--- more. The rows the user resolved conflicts to while it waited are
--- accepted (their choice is the file's text now), as far as the agent's
--- newer change left them alone; what it changed there stays under review.
--- The merged text is reported (not from inside the backend's request) and
--- the review drawn again.
---@param buf integer
---@param path string
---@param before? string[] the buffer's rows before a merge
---@param ranges? integer[][] A.resolved_rows before the merge
function A.disk_applied(buf, path, before, ranges)
  local key = normalize(path)
  state.pending[key] = nil
  ranges = ranges or {}
  api.nvim_buf_clear_namespace(buf, state.resolved_ns, 0, -1)
  local rows = (before and #ranges > 0) and surviving_rows(before, api.nvim_buf_get_lines(buf, 0, -1, false), ranges)
    or {}
  local entry = state.files[key]
  if before and entry then
    -- The backend made the merge and gets this tick in the answer: it
    -- records the merged text in every chat's review itself (issue 24:
    -- sending it back cost a crossing and a review request), so this tick
    -- is not reported again.
    entry.reported_tick = buffer.tick(buf)
  end
  vim.schedule(function()
    if not api.nvim_buf_is_valid(buf) then
      return
    end
    -- The rows the user resolved conflicts to while the edit waited are
    -- reported with the merged text, so its hunks there are accepted as a
    -- resolution's are (also the pure deletions the marker lines leave at
    -- the run's edges).
    for _, run in ipairs(rows) do
      send_user_edit(buf, run)
    end
    schedule_refresh(key)
  end)
end

--- How long resolving the last conflict waits for the agent's newer edit
--- to be merged (one instruction of the backend, a few milliseconds).
local MERGE_WAIT_MS = 2000

--- The conflicts of `buf` are resolved while the agent's newer edit waited
--- (state.pending): the report of the buffer without conflict blocks makes the
--- backend send it (acp.edits.fs.apply merges it: A.disk_applied). The command
--- returns once it is merged, as the user sees it: what they do next acts
--- on the merged buffer (and the merge can open new conflicts, which
--- resolve_all holds the file's decision back for).
---@param buf integer
---@param path string normalized
local function merge_pending(buf, path)
  send_user_edit(buf)
  local merged = vim.wait(MERGE_WAIT_MS, function()
    return not state.pending[path]
  end, 5)
  if not merged then
    util.notify(
      ("the agent's newer edit of %s is not merged yet; it is shown once it is"):format(
        vim.fn.fnamemodify(path, ":~:.")
      ),
      vim.log.levels.WARN
    )
  end
end

--- Resolve a conflict block in the buffer: `side` "theirs" keeps the
--- agent's lines, "ours" the buffer's. One undo step; the review is told and
--- the kept lines are accepted (the chosen text is now the file's).
---@param buf integer
---@param c acp.ReviewItem
---@param side "ours"|"theirs"
local function resolve(buf, c, side)
  -- A conflict block has both sides.
  local keep = (side == "theirs" and c.theirs or c.ours) --[[@as string[] ]]
  local path = normalize(api.nvim_buf_get_name(buf))
  -- Typing not reported yet goes first, on its own: reported with the
  -- resolution, a line typed right next to the block reads as part of the
  -- agent's hunk there, and a later reject would take it. Also while an
  -- agent edit waits (the buffer still has this block, so the report does
  -- not send it): the reviews that did not record that edit take the
  -- typing (data-safety seed 896943918, case 397).
  send_user_edit(buf)
  api.nvim_buf_call(buf, function()
    vim.go.undolevels = vim.go.undolevels
  end)
  api.nvim_buf_set_lines(buf, c.first, c.last + 1, false, keep)
  if state.pending[path] then
    -- The review describes the agent's newer text, which is not in the
    -- buffer yet: the kept rows are remembered (marks move with typing and
    -- the other resolutions) and accepted once it is merged. Insertions at
    -- either edge stay outside.
    -- An empty side still leaves the marker lines' deletions to accept:
    -- a mark without rows.
    pcall(api.nvim_buf_set_extmark, buf, state.resolved_ns, c.first, 0, {
      end_row = #keep > 0 and c.first + #keep or nil,
      end_col = #keep > 0 and 0 or nil,
      right_gravity = true,
      end_right_gravity = false,
    })
    if not render.has_conflicts(buf) then
      merge_pending(buf, path)
    end
    S.redraw(buf)
    return
  end
  -- The marker lines and the other side went into the review as the user's
  -- (they were typed by the merge); removing them leaves a pure deletion
  -- right after the kept lines, which the range's end reaches (an agent
  -- hunk starting there is not accepted with it).
  send_user_edit(buf, { c.first, c.first + #keep })
  S.redraw(buf)
end

--- Resolve every conflict of a buffer to one side, bottom-up. Resolving the
--- last one merges an agent change that waited (state.pending), which can open
--- new conflicts; those the user has not seen, so they are left for them.
---@param buf integer
---@param side "ours"|"theirs"
---@return boolean settled false when new conflicts were opened
local function resolve_all(buf, side)
  local items = state.items[buf] or {}
  local any = false
  for i = #items, 1, -1 do
    local it = items[i]
    if it.kind == "conflict" then
      it.first, it.last = rows_of(buf, it)
      resolve(buf, it, side)
      any = true
    end
  end
  return not (any and render.has_conflicts(buf))
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
function A.decide(action, opts)
  local method = action == "accept" and "acp.review_accept" or "acp.review_reject"
  if opts.scope == "all" then
    -- Conflicts first, in every buffer: they live in the buffers only, and
    -- a restore merged around one would nest its blocks.
    local held = {}
    for _, buf in ipairs(vim.tbl_keys(state.items)) do
      if api.nvim_buf_is_valid(buf) and not resolve_all(buf, action == "accept" and "theirs" or "ours") then
        local path = normalize(api.nvim_buf_get_name(buf))
        held[path] = true
        held_back(path, action .. " all")
      end
    end
    local any = false
    for _, chat in ipairs(require("acp.chat.index").list) do
      any = any or chat.session_id ~= nil
    end
    if not any then
      util.notify("no chat has edits to review", vim.log.levels.WARN)
      return
    end
    -- One decision, no chat named: the backend applies it for every chat,
    -- leaving out the files with new conflicts. It knows which files each
    -- chat reviews; the review_changed events here can lag it.
    backend().notify(method, next(held) and { except = vim.tbl_keys(held) } or vim.empty_dict())
    return
  end
  local buf = api.nvim_get_current_buf()
  local entry = entry_of_buf(buf)
  if not entry or (not entry.chat_id and #(state.items[buf] or {}) == 0) then
    util.notify("this buffer has no agent edits under review (:Acp review lists them)", vim.log.levels.WARN)
    return
  end
  if opts.scope == "file" then
    -- Conflicts first: they live in the buffer only.
    if not resolve_all(buf, action == "accept" and "theirs" or "ours") then
      held_back(entry.path, action .. " file")
      return
    end
    -- No chat named: the backend decides for every chat whose review holds
    -- the file now. Not state.files: a `review_changed` still on its way lags
    -- it, and `:Acp accept file` then told no chat and left the agent's
    -- newer hunks under review (data-safety seed 537081754, case 9).
    backend().notify(method, { path = entry.path })
    return
  end
  local cursor = api.nvim_win_get_cursor(0)[1]
  local first = (opts.line1 or cursor) - 1
  local last = (opts.line2 or opts.line1 or cursor) - 1
  local items = items_in(buf, first, last)
  if #items == 0 then
    if state.pending[entry.path] then
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
  ---@type integer[][] the range's hunks as rows {first, last}
  local hunk_rows = {}
  local resolved = false
  -- The chat whose review the user sees and decides on.
  local drawn = entry.review_chat or entry.chat_id
  -- Bottom-up, so resolving a conflict does not move the rows of the others.
  for i = #items, 1, -1 do
    local it = items[i]
    if it.kind == "conflict" then
      local keep = action == "accept" and it.theirs or it.ours
      resolve(buf, it, action == "accept" and "theirs" or "ours")
      resolved = true
      -- The hunks below it move up or down by what the block lost.
      local shift = #keep - (it.last - it.first + 1)
      for _, rows in ipairs(hunk_rows) do
        rows[1], rows[2] = rows[1] + shift, rows[2] + shift
      end
    elseif it.hunk then
      table.insert(ids, 1, it.hunk.id)
      hunk_rows[#hunk_rows + 1] = { it.first, it.last }
    end
  end
  if resolved and #ids > 0 and not state.pending[entry.path] then
    -- The resolution's report renumbers the file's hunks: a hunk right
    -- after the block joins the kept lines and gets a new id (data-safety
    -- seed 117216006, case 131: the reject named a hunk that no longer
    -- existed and the agent's line stayed). Once the backend's review has
    -- that report (its `review_changed`), the hunks at those rows are
    -- decided.
    S.settle(buf)
    -- The resolution's events can make another chat's review the newest,
    -- and so the one drawn: the range then decided that chat's hunks at
    -- those rows, unseen (data-safety seed 62102677, case 657: the first
    -- chat's deletion was rejected, and the second chat's line the range
    -- covered stayed). The chat decided on stays drawn.
    if drawn and entry.chats[drawn] then
      entry.chat_id = drawn
    end
    S.refresh(entry.path)
    ids = {}
    entry = entry_of_buf(buf) or entry
    local seen = {}
    for _, rows in ipairs((entry.review_chat or entry.chat_id) == drawn and hunk_rows or {}) do
      for _, it in ipairs(items_in(buf, rows[1], rows[2])) do
        local h = it.kind ~= "conflict" and it.hunk
        if h and not seen[h.id] then
          seen[h.id] = true
          ids[#ids + 1] = h.id
        end
      end
    end
  end
  -- The hunk ids are those of the review drawn, which is the chat's whose
  -- review was fetched last: `entry.chat_id` follows the newest event and
  -- can name the other chat before the refresh draws its review (the
  -- decision then named a hunk that chat did not have: data-safety seed
  -- 588734806, case 110).
  local chat_id = entry.review_chat or entry.chat_id
  if #ids > 0 and chat_id then
    backend().notify(method, { chat_id = chat_id, path = entry.path, hunks = ids })
  end
end

local QF_TITLE = "acp.nvim: agent edits to review"

--- Every file with agent edits, of every chat, in the quickfix list (one
--- entry per file, at its first hunk), and open it. With `refresh`, only
--- replace the entries of that list when it is the current one (after a
--- decision or an agent edit), without opening anything.
---@param refresh? boolean
function A.quickfix(refresh)
  if refresh and vim.fn.getqflist({ title = 0 }).title ~= QF_TITLE then
    return
  end
  local items = {}
  -- From the summaries the `review_changed` events carried (state.files), not
  -- a request per chat: the list follows every event while it is shown.
  local paths = vim.tbl_keys(state.files)
  table.sort(paths)
  for _, chat in ipairs(require("acp.chat.index").list) do
    if chat.session_id then
      for _, path in ipairs(paths) do
        local f = state.files[path].chats[chat.chat_id]
        local n = f and tonumber(f.hunks) or 0
        if n > 0 then
          ---@cast f table
          local first = tonumber(f.first_line)
          items[#items + 1] = {
            filename = path,
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
function A.open(path)
  path = normalize(path)
  local entry = state.files[path]
  -- The backend's summary gives the first line as an integer.
  local line = entry and entry.chat_id and tonumber((entry.chats[entry.chat_id] or {}).first_line) --[[@as integer?]]
  require("acp.chat.view.open").jump({ path = path, line = line and (line + 1) or nil })
  if entry then
    S.refresh(path)
  else
    util.notify(("%s has no agent edits under review"):format(vim.fn.fnamemodify(path, ":~:.")))
  end
end

return A
