-- The data safety property's model (tests/e2e/test_e2e_datasafety.lua
-- states the property): one case's files, what was written to them and
-- what the user typed; the invariants checked after every step; the user's
-- steps and the review decisions.
--
-- Loaded by the test file with its shared state:
--   local model = assert(loadfile(".../datasafety/case.lua"))(ctx)
-- ctx carries what the test file set up before any case runs (the helpers,
-- the plugin's modules with their watched functions, the seed).
local ctx = ...
local T = ctx.T
local root = ctx.root
local review = ctx.review
local fs = ctx.fs
local decided = ctx.decided
local notes = ctx.notes
local latest = ctx.latest
local settle = ctx.settle
local kept = ctx.kept

local function read_or_nil(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  return s
end

local function lines_of(text)
  local lines = vim.split(text, "\n", { plain = true })
  if lines[#lines] == "" then
    lines[#lines] = nil
  end
  return lines
end

local function text_of(lines)
  return #lines == 0 and "" or (table.concat(lines, "\n") .. "\n")
end

--- One case: its files, what was written to them, what the user typed.
---@class Case
---@field k integer
---@field files {path: string, buf: integer, versions: table<string, boolean>, typed: string[], created?: boolean}[]
---@field log string[] steps played, for the failure message
---@field torn string[] contents the poller saw that no writer wrote

local Case = {}
Case.__index = Case

function Case.new(k)
  local self = setmetatable({ k = k, files = {}, log = {}, torn = {} }, Case)
  -- A directory of its own per seed: the regression cases replay in one
  -- session, and two of them with the same case number would otherwise
  -- share paths (and the backend's state of those files: a waiting agent
  -- write of one case merged into the next one's buffer).
  local d = ("%s/case-%d-%d"):format(root, k, ctx.SEED)
  vim.fn.mkdir(d, "p")
  for i = 1, math.random(2, 3) do
    local path = ("%s/f%d.txt"):format(d, i)
    local lines = {}
    for j = 1, math.random(1, 4) do
      lines[#lines + 1] = ("base-%d-%d-%d"):format(k, i, j)
    end
    local content = text_of(lines)
    T.write_file(path, content)
    local buf = vim.fn.bufadd(path)
    vim.fn.bufload(buf)
    vim.bo[buf].buflisted = true
    self.files[i] = { path = path, buf = buf, versions = { [content] = true }, typed = {} }
  end
  return self
end

function Case:fail(what)
  if os.getenv("ACP_DATASAFETY_LOG") then
    local log = read_or_nil(vim.fn.stdpath("state") .. "/acp.log") or ""
    T.write_file(os.getenv("ACP_DATASAFETY_LOG"), log)
  end
  error(
    ("data safety violated: %s\n  seed %d, case %d (replay: ACP_DATASAFETY_SEED=%d ACP_DATASAFETY_CASES=%d ACP_DATASAFETY_CASE=%d)\n  steps:\n    %s\n  last messages:\n    %s"):format(
      what,
      ctx.SEED,
      self.k,
      ctx.SEED,
      self.k,
      self.k,
      table.concat(self.log, "\n    "),
      table.concat(vim.list_slice(notes, math.max(1, #notes - 5)), "\n    ")
    ),
    0
  )
end

function Case:close()
  for _, f in ipairs(self.files) do
    if vim.api.nvim_buf_is_valid(f.buf) then
      vim.api.nvim_buf_delete(f.buf, { force = true })
    end
  end
end

--- Invariants 1 and 2.
function Case:check()
  -- A merge the plugin saved is a version; the poller may have seen it
  -- before the step ended.
  for _, f in ipairs(self.files) do
    if vim.api.nvim_buf_is_valid(f.buf) and not vim.bo[f.buf].modified then
      local disk = read_or_nil(f.path)
      if disk ~= nil and disk == fs.buffer_text(f.buf) then
        f.versions[disk] = true
      end
    end
  end
  local torn = {}
  for _, t in ipairs(self.torn) do
    local f
    for _, g in ipairs(self.files) do
      if g.path == t.path then
        f = g
      end
    end
    if not (f and f.versions[t.content]) then
      torn[#torn + 1] = t
    end
  end
  self.torn = torn
  for _, f in ipairs(self.files) do
    local disk = read_or_nil(f.path)
    if disk == nil then
      self:fail(f.path .. " is gone from disk")
    end
    if not f.versions[disk] then
      self:fail(("%s holds a version nobody wrote (truncated or mixed):\n%s"):format(f.path, disk))
    end
    local present = {}
    for _, l in ipairs(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false)) do
      present[l] = true
    end
    for _, l in ipairs(lines_of(disk)) do
      present[l] = true
    end
    for _, l in ipairs(f.typed) do
      if not present[l] then
        self:fail(("the user's line %q of %s is neither in the buffer nor on disk"):format(l, f.path))
      end
    end
  end
  if #self.torn > 0 then
    self:fail("a reader saw a half-written file: " .. vim.inspect(self.torn))
  end
  self:check_sync()
end

--- Invariant 5: the text the backend holds of a buffer at a changedtick
--- (the base of merging the agent's next write into it, `acp.file_sync`)
--- is the buffer's text at that tick; it may lag (an older tick: the merge
--- is then answered stale), never be wrong.
function Case:check_sync()
  if not self.chat then
    return
  end
  for _, f in ipairs(self.files) do
    local state, err =
      require("acp.rpc.backend").request("acp.file_sync", { chat_id = self.chat.chat_id, path = f.path })
    if err then
      self:fail("acp.file_sync: " .. err)
    end
    -- Read after the answer: an instruction applied meanwhile moved the tick on.
    local tick = fs.tick(f.buf)
    if type(state) == "table" and state.tick then
      -- Ticks are acp.edits.fs.tick's: the changedtick is the low 32 bits.
      if state.tick > tick then
        self:fail(
          ("the backend holds %s at changedtick %d, newer than the buffer's %d"):format(
            f.path,
            state.tick % 4294967296,
            tick % 4294967296
          )
        )
      elseif state.tick == tick and state.text ~= fs.buffer_text(f.buf) then
        self:fail(
          ("the backend holds a text of %s at changedtick %d that the buffer does not have:\n  backend %s\n  buffer  %s"):format(
            f.path,
            tick % 4294967296,
            vim.inspect(state.text),
            vim.inspect(fs.buffer_text(f.buf))
          )
        )
      end
    end
  end
end

-- User steps --------------------------------------------------------------

function Case:user_types(f, s, save)
  local buf = f.buf
  local n = vim.api.nvim_buf_line_count(buf)
  local at = math.random(0, n)
  local line = ("user-%d-%d-%d"):format(self.k, s, math.random(1000, 9999))
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("normal! " .. (at == 0 and "ggO" or (at .. "Go")) .. line)
  end)
  f.typed[#f.typed + 1] = line
  self.log[#self.log + 1] = ("user types %q after line %d of %s%s"):format(line, at, f.path, save and ", saves" or "")
  if save then
    self:user_saves(f, true)
  end
end

function Case:user_saves(f, quiet)
  local expected = text_of(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false))
  f.versions[expected] = true
  vim.api.nvim_buf_call(f.buf, function()
    vim.cmd("silent write!")
  end)
  if not quiet then
    self.log[#self.log + 1] = "user saves " .. f.path
  end
  if vim.bo[f.buf].modified then
    self:fail(f.path .. " is still modified after :write!")
  end
end

--- Types a line and fires TextChanged as typing does, then waits until the
--- review module reported the buffer (if the file is under review).
function Case:user_types_reported(f, s)
  self:user_types(f, s, false)
  self.log[#self.log] = self.log[#self.log] .. " (TextChanged)"
  decided.reported = decided.reported + 1
  vim.api.nvim_exec_autocmds("TextChanged", { buffer = f.buf, modeline = false })
  T.wait(function()
    local entry = review.files[f.path]
    local attached = entry and (entry.chat_id ~= nil or #(review.items[f.buf] or {}) > 0)
    -- While an agent change waits for conflicts to be resolved, typing is
    -- reported after that merge (acp.review's pending).
    return not attached or review.pending[f.path] or entry.reported_tick == fs.tick(f.buf)
  end, "the typed line reported to the review (acp.user_edit)", 5000)
end

-- Review steps ------------------------------------------------------------

--- Draws the current review of every file (synchronously), so the items
--- the keys act on are the backend's latest.
function Case:refresh_all()
  for _, f in ipairs(self.files) do
    if review.files[f.path] then
      review.refresh(f.path)
    end
  end
  settle(self.chat.chat_id, self.files[1].path)
  -- A refresh reports unsaved typing (acp.user_edit), which gives hunks new
  -- ids; wait until the review shown is the one that knows the buffer's text,
  -- as a user sees it settle before pressing a key.
  local lagging = "?"
  local ok, err = pcall(T.wait, function()
    for _, f in ipairs(self.files) do
      local entry = review.files[f.path]
      lagging = ("%s: modified %s, pending %s, reported tick %s of %d"):format(
        f.path,
        tostring(vim.bo[f.buf].modified),
        tostring(review.pending[f.path]),
        tostring(entry and entry.reported_tick),
        fs.tick(f.buf)
      )
      if entry and entry.chat_id and vim.bo[f.buf].modified and not review.pending[f.path] then
        local current = entry.review and entry.review.current
        if current ~= fs.buffer_text(f.buf) then
          return false
        end
      end
      -- The review drawn is the newest `review_changed` of its chat (it
      -- comes a frame after the backend recorded an edit).
      if entry and entry.chat_id then
        local r = latest(entry.chat_id, f.path)
        local ids = function(rv)
          local out = {}
          for _, h in ipairs(type(rv) == "table" and rv.hunks or {}) do
            out[#out + 1] = h.id
          end
          return out
        end
        if not vim.deep_equal(ids(r), ids(entry.review)) then
          return false
        end
      end
    end
    return true
  end, "the review caught up with the buffers", 5000)
  if not ok then
    -- Which file lagged, to tell a lost report from a slow one, and the
    -- steps that led there (a case that times out may not replay alone).
    self:fail(("%s\n  last file checked: %s"):format(tostring(err), lagging))
  end
end

--- Lines of the review items (hunks: the agent's lines; conflicts: both
--- sides) of a file that touch buffer rows [first, last] (0-based).
local function item_lines(f, first, last)
  local agent, ours, theirs, ids = {}, {}, {}, {}
  for _, it in ipairs(review.items[f.buf] or {}) do
    if it.first <= last and first <= it.last then
      if it.kind == "hunk" then
        vim.list_extend(agent, it.hunk.new_lines or {})
        ids[#ids + 1] = it.hunk.id
      else
        vim.list_extend(ours, it.ours or {})
        vim.list_extend(theirs, it.theirs or {})
      end
    end
  end
  return agent, ours, theirs, ids
end

--- Waits until the backend's review of `f` has none of the hunks `ids`
--- (decisions are applied in order, after the command returned).
---@param chat { chat_id: string }
---@param f table
---@param ids integer[]
function Case:wait_decided(chat, f, ids)
  if #ids == 0 then
    return
  end
  local want = {}
  for _, id in ipairs(ids) do
    want[id] = true
  end
  local left
  local ok = vim.wait(5000, function()
    local r = latest(chat.chat_id, f.path)
    left = r
    for _, h in ipairs(type(r) == "table" and r.hunks or {}) do
      if want[h.id] then
        return false
      end
    end
    return true
  end, 10)
  if not ok then
    self:fail(
      ("the decision on %s was not applied: hunks %s still under review: %s"):format(
        f.path,
        vim.inspect(ids),
        vim.inspect(left, { newline = " ", indent = "" })
      )
    )
  end
end

--- The user drops lines explicitly: they no longer need to survive.
local function drop_typed(f, lines)
  local gone = {}
  for _, l in ipairs(lines) do
    gone[l] = true
  end
  local kept = {}
  for _, l in ipairs(f.typed) do
    if not gone[l] then
      kept[#kept + 1] = l
    end
  end
  f.typed = kept
end

local edit_win

function Case:decide(chat, action)
  self:refresh_all()
  for k in pairs(kept) do
    kept[k] = nil
  end
  local with_items = {}
  for _, f in ipairs(self.files) do
    if #(review.items[f.buf] or {}) > 0 then
      with_items[#with_items + 1] = f
    end
  end
  if #with_items == 0 then
    self.log[#self.log + 1] = ("%s: nothing under review"):format(action)
    return
  end
  decided[action] = decided[action] + 1
  -- Files still reviewed as created: rejecting them asks to delete them.
  local created = {}
  for _, g in ipairs(self.files) do
    local rv = latest(chat.chat_id, g.path)
    created[g.path] = rv ~= nil and rv.status == "created"
  end
  local f = with_items[math.random(#with_items)]
  local scope = ({ "hunk", "range", "file", "all" })[math.random(4)]
  local targets = {} -- file -> {agent lines, ours, theirs}
  -- A hunk or a range acts on the chat whose review the buffer shows (a
  -- second agent's, after two_agents): its hunk ids are that chat's.
  local shown = review.files[f.path] and review.files[f.path].chat_id
  local decider = (shown and shown ~= chat.chat_id) and { chat_id = shown } or chat
  -- A window of its own, in its own tab page (the chat keeps its windows).
  if not (edit_win and vim.api.nvim_win_is_valid(edit_win)) then
    vim.cmd("tabnew")
    edit_win = vim.api.nvim_get_current_win()
  end
  local win = edit_win
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_buf(win, f.buf)
  if scope == "hunk" or scope == "range" then
    local items = review.items[f.buf]
    local it = items[math.random(#items)]
    local count = vim.api.nvim_buf_line_count(f.buf)
    local first, last = it.first, it.last
    if scope == "range" then
      first = math.max(0, first - math.random(0, 1))
      last = math.min(count - 1, last + math.random(0, 1))
    end
    local agent, ours, theirs, ids = item_lines(f, first, last)
    targets[f] = {
      agent,
      ours,
      theirs,
      { { chat = decider, ids = ids } },
      vim.api.nvim_buf_get_lines(f.buf, 0, -1, false),
    }
    vim.api.nvim_win_set_cursor(win, { first + 1, 0 })
    local cmd = scope == "range" and ("%d,%dAcp %s"):format(first + 1, last + 1, action) or ("Acp " .. action)
    self.log[#self.log + 1] = ("user runs :%s in %s"):format(cmd, f.path)
    vim.cmd(cmd)
  else
    for _, g in ipairs(scope == "all" and self.files or { f }) do
      -- Every hunk of the file, also those hidden under a conflict.
      local _, ours, theirs = item_lines(g, 0, math.huge)
      -- `file` and `all` are decided for every chat whose review holds the
      -- file, a second agent's too (data-safety seed 971275426, case 364:
      -- waiting for the driver's alone, the step ended before the second
      -- chat's reject saved the file, and the user's next typing hid that
      -- version from the check).
      local agent, waits = {}, {}
      for _, c in ipairs(require("acp.chat.index").list) do
        local r = c.chat_id and latest(c.chat_id, g.path)
        local ids = {}
        for _, h in ipairs(type(r) == "table" and r.hunks or {}) do
          vim.list_extend(agent, h.new_lines or {})
          ids[#ids + 1] = h.id
        end
        waits[#waits + 1] = { chat = c, ids = ids }
      end
      -- `file` and `all` resolve the conflicts too (in the buffers).
      targets[g] = { agent, ours, theirs, waits, vim.api.nvim_buf_get_lines(g.buf, 0, -1, false) }
    end
    self.log[#self.log + 1] = ("user runs :Acp %s %s%s"):format(
      action,
      scope,
      scope == "file" and (" in " .. f.path) or ""
    )
    vim.cmd(("Acp %s %s"):format(action, scope))
  end
  for g, t in pairs(targets) do
    local agent, ours, theirs, waits, shown = t[1], t[2], t[3], t[4], t[5]
    if (scope == "file" or scope == "all") and review.has_conflicts(g.buf) then
      -- Resolving the conflicts merged an agent edit that waited and opened
      -- new ones: the plugin holds the file's decision back until the user
      -- resolved those. Only the resolved conflicts count as decided.
      self.log[#self.log] = self.log[#self.log] .. (" (held back for %s: new conflicts)"):format(g.path)
      agent, waits = {}, {}
    end
    for _, w in ipairs(waits) do
      self:wait_decided(w.chat, g, w.ids)
    end
    if action == "reject" and #ours > 0 then
      -- A reject resolves a conflict to the user's side, which stays even
      -- where the agent's hunk held the same lines (the user saved the
      -- conflict block, and the agent wrote it back).
      local kept = {}
      for _, l in ipairs(ours) do
        kept[l] = true
      end
      agent = vim.tbl_filter(function(l)
        return not kept[l]
      end, agent)
    end
    if action == "reject" then
      -- The user saw these lines as the agent's and undid them: the hunks'
      -- lines, and the agent's side of a conflict (which keeps the user's
      -- side), even a line typed into it.
      drop_typed(g, agent)
      drop_typed(g, theirs)
      local before = {}
      for _, l in ipairs(shown) do
        before[l] = (before[l] or 0) + 1
      end
      -- Rejecting the creation of a file asks before deleting it, and this
      -- user keeps it (confirm_delete): its lines stay. Also when it was
      -- not shown as created before the command: resolving a conflict
      -- block back to the creating agent's text makes its review the
      -- creation again (data-safety seed 1030302589, case 248).
      if not created[g.path] then
        self:wait_gone(g, agent, before)
      end
      if kept[vim.fn.resolve(g.path)] then
        self.log[#self.log + 1] = ("  the user kept %s, whose creation the reject undid"):format(g.path)
      end
    else
      drop_typed(g, ours)
    end
  end
end

--- Invariant 4: a reject's agent lines leave the buffer, and the disk when
--- the buffer has no unsaved edits; the restored disk text is a version.
function Case:wait_gone(f, lines, before)
  local function counts(list)
    local n = {}
    for _, l in ipairs(list) do
      n[l] = (n[l] or 0) + 1
    end
    return n
  end
  local rejected = counts(lines)
  -- A line can be there more than once (an agent writing it again from an
  -- older view): each rejected occurrence must go, not every copy.
  local function absent(list)
    local now = counts(list)
    for l, k in pairs(rejected) do
      if (now[l] or 0) > math.max(0, (before[l] or 0) - k) then
        return false
      end
    end
    return true
  end
  local ok = vim.wait(5000, function()
    if kept[vim.fn.resolve(f.path)] then
      return true
    end
    if not absent(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false)) then
      return false
    end
    if vim.bo[f.buf].modified then
      return true
    end
    local disk = read_or_nil(f.path)
    return disk ~= nil and disk == fs.buffer_text(f.buf)
  end, 10)
  if not ok then
    self:fail(
      ("rejected agent lines %s are still in %s (buffer: %s, disk: %s)"):format(
        vim.inspect(lines),
        f.path,
        vim.inspect(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false)),
        vim.inspect(read_or_nil(f.path))
      )
    )
  end
  local disk = read_or_nil(f.path)
  if disk and not vim.bo[f.buf].modified then
    f.versions[disk] = true
  end
end

--- The edit window (its own tab page; the chat keeps its windows).
local function edit_window()
  if not (edit_win and vim.api.nvim_win_is_valid(edit_win)) then
    vim.cmd("tabnew")
    edit_win = vim.api.nvim_get_current_win()
  end
  vim.api.nvim_set_current_win(edit_win)
  return edit_win
end

return {
  Case = Case,
  read_or_nil = read_or_nil,
  lines_of = lines_of,
  text_of = text_of,
  edit_window = edit_window,
}
