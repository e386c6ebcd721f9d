-- The data safety property's agent steps (tests/e2e/test_e2e_datasafety.lua
-- states the property): the agent's reads and writes through the fake
-- agent, its disk edits, file creation, undo/redo reported as typing, and
-- the steps of issue 24 (saves between agent steps, a second agent). Each
-- is a method of the model's Case (datasafety/case.lua).
--
-- Loaded by the test file after the model:
--   assert(loadfile(".../datasafety/agent.lua"))(ctx, model)
local ctx, model = ...
local T = ctx.T
local uv = ctx.uv
local root = ctx.root
local review = ctx.review
local fs = ctx.fs
local took = ctx.took
local decided = ctx.decided
local latest = ctx.latest
local Case = model.Case
local read_or_nil = model.read_or_nil
local lines_of = model.lines_of
local text_of = model.text_of
local edit_window = model.edit_window

-- Agent steps -------------------------------------------------------------

--- The agent's new text: `view` with one new line at a random place and,
--- sometimes, one of its own earlier lines removed.
function Case:agent_edit(view_lines, s)
  local lines = vim.list_slice(view_lines)
  local own = {}
  for i, l in ipairs(lines) do
    if l:match("^agent%-") then
      own[#own + 1] = i
    end
  end
  local removed
  if #own > 0 and math.random() < 0.3 then
    removed = table.remove(lines, own[math.random(#own)])
  end
  local line = ("agent-%d-%d"):format(self.k, s)
  table.insert(lines, math.random(1, #lines + 1), line)
  return text_of(lines), ("adds %q%s"):format(line, removed and (", removes %q"):format(removed) or "")
end

--- Reads every file every 2 ms while the backend writes: a reader must
--- only ever see complete versions.
function Case:start_poller()
  local timer = assert(uv.new_timer())
  timer:start(0, 2, function()
    for _, f in ipairs(self.files) do
      local seen = read_or_nil(f.path)
      if seen ~= nil and not f.versions[seen] then
        self.torn[#self.torn + 1] = { path = f.path, content = seen }
      end
    end
  end)
  return function()
    timer:stop()
    timer:close()
  end
end

--- The scripted agent's `fs/read_text_file` of `path`, expecting `lines`.
local function read_step(path, lines)
  return {
    type = "call",
    method = "fs/read_text_file",
    params = { path = path },
    expect = { result = { content = text_of(lines) } },
  }
end

--- The scripted agent's `fs/write_text_file` of `content` to `path`.
local function write_step(path, content)
  return {
    type = "call",
    method = "fs/write_text_file",
    params = { path = path, content = content },
    expect = { ok = true },
  }
end

--- An agent turn while the poller checks that readers see only whole
--- versions; the poller stops whether the turn passes or fails.
function Case:polled_turn(chat, steps, what)
  local stop_poller = self:start_poller()
  local ok, err = pcall(self.agent_turn, self, chat, steps, what)
  stop_poller()
  if not ok then
    error(err, 0)
  end
end

function Case:agent_turn(chat, steps, what)
  self.log[#self.log + 1] = what
  local before = T.text(chat.bufnr)
  local stop = T.turn(chat, "steps: " .. vim.json.encode(steps), 30000)
  if stop ~= "end_turn" then
    local after = T.text(chat.bufnr):sub(#before + 1)
    self:fail(("the agent's turn ended %s:\n%s"):format(tostring(stop), after))
  end
end

function Case:agent_fs_write(chat, f, s, view_from_disk)
  local view
  local steps = {}
  if view_from_disk then
    view = lines_of(assert(read_or_nil(f.path)))
  else
    -- Invariant 3: the agent reads the buffer, unsaved lines included, and
    -- an unsaved conflict as its own side (acp.edits.review.agent_view).
    view = review.agent_view(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false), f.path)
    steps[#steps + 1] = read_step(f.path, view)
  end
  local content, change = self:agent_edit(view, s)
  f.versions[content] = true
  steps[#steps + 1] = write_step(f.path, content)
  self:polled_turn(
    chat,
    steps,
    ("agent fs/write of %s from its %s view: %s"):format(f.path, view_from_disk and "disk" or "buffer", change)
  )
end

--- The agent reads the buffer, then names the file in a tool call (the
--- client snapshots the disk at the file's first mention in the turn, which
--- lacks the user's unsaved lines), then writes what it read plus its edit:
--- its write's base is the lines its two views share, and its change is
--- counted from the view it wrote from (FileRecords::view_of_write).
function Case:agent_mention_write(chat, f, s)
  local view = review.agent_view(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false), f.path)
  local content, change = self:agent_edit(view, s)
  f.versions[content] = true
  local id = ("mention-%d-%d"):format(self.k, s)
  self:polled_turn(chat, {
    read_step(f.path, view),
    {
      type = "toolCall",
      toolCallId = id,
      title = "Edit " .. f.path,
      kind = "edit",
      status = "in_progress",
      locations = { { path = f.path } },
    },
    -- Review snapshots the file a moment after the tool call arrives.
    { type = "sleep", ms = 150 },
    write_step(f.path, content),
    { type = "toolCallUpdate", toolCallId = id, status = "completed" },
  }, ("agent reads %s, names it in a tool call, writes from the read: %s"):format(f.path, change))
end

function Case:agent_disk_edit(chat, f, s, diff)
  local content, change = self:agent_edit(lines_of(assert(read_or_nil(f.path))), s)
  f.versions[content] = true
  local key = review.normalize(f.path)
  self:agent_turn(chat, {
    { type = "writeDisk", path = f.path, content = content, diff = diff },
  }, ("agent edits %s on disk %s: %s"):format(f.path, diff and "with a diff" or "without a diff", change))
  -- A disk edit reaches the review a moment after the turn ends (the
  -- backend reads the file once the tool call completed, or when its
  -- watcher fires). A user acts at human speed: the next step comes once
  -- the plugin has seen the edit. (Saving a stale buffer with :w! within
  -- those milliseconds would be taken for part of the agent's edit.) Seen
  -- means both: the buffer synced with the disk, and the backend recorded
  -- the edit (its review's text is the disk's or the buffer's). The disk
  -- can be synced first: a refresh for an earlier event may run between
  -- the agent's write and the backend's record of it. Not an assertion (an
  -- edit that changes nothing is never "seen"), but a later failure names it.
  local seen = vim.wait(2000, function()
    local disk = read_or_nil(f.path)
    if review.pending[key] == nil and took[key] ~= disk and fs.buffer_text(f.buf) ~= disk then
      return false
    end
    local r = latest(chat.chat_id, f.path)
    local current = r and r.current or nil
    return current ~= nil and (current == disk or current == fs.buffer_text(f.buf))
  end, 10)
  if not seen then
    self.log[#self.log + 1] = "  (the disk edit was not seen in the buffer and the review within 2 s)"
  end
end

--- Reports a buffer's edit as typing does (TextChanged, then the review's
--- debounce) and gives the review module time to send it, when the file was
--- ever under review. Not an assertion: what counts is the review after the
--- redo (user_undo_redo), and a report can legitimately be skipped (the disk
--- changed first, and the refresh that follows reports instead).
function Case:report(f)
  vim.api.nvim_exec_autocmds("TextChanged", { buffer = f.buf, modeline = false })
  vim.wait(2000, function()
    local entry = review.files[f.path]
    local reviewed = entry and entry.reviewed_by and next(entry.reviewed_by) ~= nil
    return not reviewed or review.pending[f.path] or entry.reported_tick == fs.tick(f.buf)
  end, 5)
end

--- The backend's hunks of a file, as `{old_lines, new_lines}` pairs.
local function hunks_of(chat, f)
  local r = latest(chat.chat_id, f.path)
  local out = {}
  for _, h in ipairs(r and r.hunks or {}) do
    out[#out + 1] = { h.old_lines or {}, h.new_lines or {} }
  end
  return out
end

--- Undo then redo: the buffer comes back, and so does its review.
function Case:user_undo_redo(chat, f)
  self:refresh_all()
  local text = fs.buffer_text(f.buf)
  local before = hunks_of(chat, f)
  self.log[#self.log + 1] = ("user undoes then redoes in %s"):format(f.path)
  decided.undone = decided.undone + 1
  vim.api.nvim_buf_call(f.buf, function()
    vim.cmd("silent! undo")
  end)
  self:report(f)
  vim.api.nvim_buf_call(f.buf, function()
    vim.cmd("silent! redo")
  end)
  self:report(f)
  if fs.buffer_text(f.buf) ~= text then
    self:fail(("redo did not bring %s back:\n%s"):format(f.path, fs.buffer_text(f.buf)))
  end
  local after
  local ok = vim.wait(10000, function()
    after = hunks_of(chat, f)
    return vim.deep_equal(after, before)
  end, 10)
  if not ok then
    self:fail(
      ("the review of %s did not follow undo and redo: before %s, after %s"):format(
        f.path,
        vim.inspect(before, { newline = " ", indent = "" }),
        vim.inspect(after, { newline = " ", indent = "" })
      )
    )
  end
end

--- The agent reads the unsaved buffer and writes it back with a line next
--- to one the user typed: merged with no conflict, whatever the disk holds.
function Case:agent_reads_back(chat, f, s)
  local view = vim.api.nvim_buf_get_lines(f.buf, 0, -1, false)
  local mine = {}
  for i, l in ipairs(view) do
    if l:match("^user%-") then
      mine[#mine + 1] = i
    end
  end
  if #mine == 0 or review.has_marker(f.buf) then
    return self:agent_fs_write(chat, f, s, false)
  end
  local line = ("agent-%d-%d"):format(self.k, s)
  local i = mine[math.random(#mine)]
  local lines = vim.list_slice(view)
  -- Changes the line right above or below the user's (as claude-code-acp
  -- changed `hello world` above the user's unsaved line), else inserts.
  local at
  for _, n in ipairs(math.random() < 0.5 and { i - 1, i + 1 } or { i + 1, i - 1 }) do
    if not at and lines[n] and not lines[n]:match("^user%-") then
      at = n
    end
  end
  local how
  if at then
    how = ("changes line %d (%q) to %q"):format(at, lines[at], line)
    lines[at] = line
  else
    at = i + math.random(0, 1)
    how = ("inserts %q at line %d"):format(line, at)
    table.insert(lines, at, line)
  end
  local content = text_of(lines)
  f.versions[content] = true
  self:polled_turn(chat, {
    read_step(f.path, view),
    write_step(f.path, content),
  }, ("agent reads %s and writes it back: %s, next to the user's line"):format(f.path, how))
  local merged = vim.wait(5000, function()
    return vim.tbl_contains(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false), line)
  end, 5)
  if not merged then
    self:fail(("the agent's %q never reached the buffer of %s"):format(line, f.path))
  end
  if review.has_marker(f.buf) then
    self:fail(
      ("writing back what the agent read opened a conflict in %s:\n%s"):format(
        f.path,
        table.concat(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false), "\n")
      )
    )
  end
end

--- The agent asks to create a file in a new directory; the user previews
--- it, allows it, and sometimes rejects it while it is on screen.
function Case:agent_creates(chat, s)
  self.created = (self.created or 0) + 1
  local dir = ("%s/new-%d-%d"):format(vim.fs.dirname(self.files[1].path), s, self.created)
  local path = dir .. "/c.txt"
  local content = ("agent-%d-%d\nagent-%d-%d-b\n"):format(self.k, s, self.k, s)
  local steps = {
    {
      type = "requestPermission",
      toolCall = {
        toolCallId = ("create-%d-%d"):format(self.k, s),
        title = "Write " .. path,
        kind = "edit",
        status = "pending",
        content = { { type = "diff", path = path, newText = content } },
      },
      onAllow = {
        write_step(path, content),
      },
    },
  }
  self.log[#self.log + 1] = ("agent asks to create %s; the user previews it, then allows"):format(path)
  local permission = require("acp.chat.view.permission")
  local turns = #(T.turns[chat.chat_id] or {})
  assert(chat:send({ { type = "text", text = "steps: " .. vim.json.encode(steps) } }), "prompt refused")
  T.wait(function()
    return permission.for_chat(chat.chat_id)[1] ~= nil
  end, "the permission request", 10000)
  local req = permission.for_chat(chat.chat_id)[1]
  local win = edit_window()
  review.preview(req)
  if vim.fn.filereadable(path) == 1 then
    self:fail("the preview wrote " .. path)
  end
  for i, o in ipairs(req.options) do
    if o.kind == "allow_once" then
      permission.respond_nth(req, i)
    end
  end
  T.wait(function()
    return #(T.turns[chat.chat_id] or {}) > turns
  end, "the turn's end", 30000)
  local status
  local listed = vim.wait(5000, function()
    local rv = latest(chat.chat_id, path)
    status = rv and rv.status
    return status ~= nil and review.files[path] ~= nil and review.files[path].chat_id ~= nil
  end, 10)
  if not listed or status ~= "created" then
    self:fail(("%s is reviewed as %s, not created"):format(path, tostring(status)))
  end
  if read_or_nil(path) ~= content then
    self:fail(("%s holds %s, not what the agent wrote"):format(path, vim.inspect(read_or_nil(path))))
  end
  vim.api.nvim_set_current_win(win)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  if math.random() < 0.5 then
    self.files[#self.files + 1] =
      { path = path, buf = buf, versions = { [content] = true }, typed = {}, created = true }
    return
  end
  self.log[#self.log + 1] = ("user rejects the created %s while it is on screen"):format(path)
  local confirm = require("acp.edits.review.actions").confirm_delete
  require("acp.edits.review.actions").confirm_delete = function()
    return true
  end
  vim.cmd("Acp reject file")
  local gone = vim.wait(5000, function()
    return vim.fn.filereadable(path) == 0
      and vim.api.nvim_win_is_valid(win)
      and vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)) ~= path
      and vim.fn.isdirectory(dir) == 0
  end, 10)
  require("acp.edits.review.actions").confirm_delete = confirm
  if not gone then
    self:fail(
      ("rejecting the created %s: file readable %d, window %s, directory left %d"):format(
        path,
        vim.fn.filereadable(path),
        vim.api.nvim_win_is_valid(win) and vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)) or "closed",
        vim.fn.isdirectory(dir)
      )
    )
  end
end

-- Steps of issue 24: saves between agent steps --------------------------------

--- An agent turn that may be answered with an error (a refused write).
function Case:agent_turn_quiet(chat, steps, what)
  self.log[#self.log + 1] = what
  local stop = T.turn(chat, "steps: " .. vim.json.encode(steps), 30000)
  if stop ~= "end_turn" then
    self:fail(("the agent's turn ended %s"):format(tostring(stop)))
  end
end

--- The agent reads the buffer; the user types a line and saves it (:w);
--- the agent writes back what it read plus its own line. The saved line
--- stays: merged, or in a conflict block. With `wipe`, the user also wipes
--- the buffer and opens the file again before the write: the new buffer's
--- ticks start over, and the agent's read is of the old one.
---@param wipe? boolean
function Case:agent_stale_after_save(chat, f, s, wipe)
  if review.has_marker(f.buf) then
    return self:agent_fs_write(chat, f, s, false)
  end
  local view = review.agent_view(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false), f.path)
  self:agent_turn(chat, {
    read_step(f.path, view),
  }, ("agent reads %s"):format(f.path))
  self:user_types(f, s, true)
  if wipe then
    self:user_wipes(f)
  end
  local content, change = self:agent_edit(view, s)
  f.versions[content] = true
  self:polled_turn(chat, {
    write_step(f.path, content),
  }, ("agent writes back its read of %s after the user's save: %s"):format(f.path, change))
end

--- The agent writes the whole file from the text it had at the prompt,
--- reading nothing, while the user types a line and saves during the turn
--- (the write waits on a permission prompt meanwhile).
function Case:agent_blind_write(chat, f, s)
  local view = lines_of(assert(read_or_nil(f.path)))
  local content, change = self:agent_edit(view, s)
  f.versions[content] = true
  local steps = {
    {
      type = "requestPermission",
      toolCall = {
        toolCallId = ("blind-%d-%d"):format(self.k, s),
        title = "Write " .. f.path,
        kind = "edit",
        status = "pending",
      },
      onAllow = {
        write_step(f.path, content),
      },
    },
  }
  self.log[#self.log + 1] = ("agent writes %s blind from the text at the prompt: %s"):format(f.path, change)
  local permission = require("acp.chat.view.permission")
  local turns = #(T.turns[chat.chat_id] or {})
  assert(chat:send({ { type = "text", text = "steps: " .. vim.json.encode(steps) } }), "prompt refused")
  T.wait(function()
    return permission.for_chat(chat.chat_id)[1] ~= nil
  end, "the permission request", 10000)
  for _ = 1, math.random(1, 2) do
    self:user_types(f, s, math.random() < 0.8)
  end
  local req = permission.for_chat(chat.chat_id)[1]
  local stop_poller = self:start_poller()
  for i, o in ipairs(req.options) do
    if o.kind == "allow_once" then
      permission.respond_nth(req, i)
    end
  end
  local ok, err = pcall(T.wait, function()
    return #(T.turns[chat.chat_id] or {}) > turns
  end, "the turn's end", 30000)
  stop_poller()
  if not ok then
    error(err, 0)
  end
  local stop = T.turns[chat.chat_id][#T.turns[chat.chat_id]]
  if stop ~= "end_turn" then
    self:fail(("the blind write's turn ended %s:\n%s"):format(tostring(stop), T.text(chat.bufnr):sub(-400)))
  end
end

--- The user makes the buffer 'readonly' or 'nomodifiable'; the agent's
--- write is refused, the buffer, its option and the disk left alone.
function Case:agent_write_readonly(chat, f, s)
  local opt = math.random() < 0.5 and "readonly" or "nomodifiable"
  local view = review.agent_view(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false), f.path)
  local content = self:agent_edit(view, s)
  local text, disk = fs.buffer_text(f.buf), read_or_nil(f.path)
  if opt == "readonly" then
    vim.bo[f.buf].readonly = true
  else
    vim.bo[f.buf].modifiable = false
  end
  local ok, err = pcall(self.agent_turn_quiet, self, chat, {
    {
      type = "call",
      method = "fs/write_text_file",
      params = { path = f.path, content = content },
      expect = { error = true },
    },
  }, ("agent writes %s, which the user made %s"):format(f.path, opt))
  local kept = opt == "readonly" and vim.bo[f.buf].readonly or not vim.bo[f.buf].modifiable
  vim.bo[f.buf].readonly = false
  vim.bo[f.buf].modifiable = true
  if not ok then
    error(err, 0)
  end
  if not kept then
    self:fail(("the agent's write cleared '%s' of %s"):format(opt, f.path))
  end
  if fs.buffer_text(f.buf) ~= text or read_or_nil(f.path) ~= disk then
    self:fail(("the agent's write changed %s, which was %s"):format(f.path, opt))
  end
end

--- The user saves the buffer if it has unsaved edits, wipes it and opens
--- the file again.
function Case:user_wipes(f)
  if vim.bo[f.buf].modified then
    self:user_saves(f, true)
  end
  self.log[#self.log + 1] = ("user wipes the buffer of %s and opens it again"):format(f.path)
  vim.api.nvim_buf_delete(f.buf, { force = true })
  local buf = vim.fn.bufadd(f.path)
  vim.fn.bufload(buf)
  vim.bo[buf].buflisted = true
  f.buf = buf
end

local second_chat

--- A second agent reads the buffer; the first writes the file (and the
--- user may type); the second writes back what it read plus its line.
function Case:two_agents(chat, f, s)
  if review.has_marker(f.buf) then
    return self:agent_fs_write(chat, f, s, false)
  end
  -- Opened again when a test before closed it (the regression cases
  -- replay after the main property, in a test of their own).
  if not (second_chat and vim.api.nvim_buf_is_valid(second_chat.bufnr)) then
    second_chat = T.open_chat("driver", root)
  end
  local view = review.agent_view(vim.api.nvim_buf_get_lines(f.buf, 0, -1, false), f.path)
  self:agent_turn(second_chat, {
    read_step(f.path, view),
  }, ("a second agent reads %s"):format(f.path))
  self:agent_fs_write(chat, f, s, false)
  if math.random() < 0.5 then
    self:user_types(f, s, math.random() < 0.5)
  end
  local content, change = self:agent_edit(view, s + 1000)
  f.versions[content] = true
  self:polled_turn(second_chat, {
    write_step(f.path, content),
  }, ("the second agent writes back its read of %s: %s"):format(f.path, change))
end

--- A conflict block is open in the buffer: a second agent reads the buffer
--- (the agent's side of the block) and writes the file back without one
--- of the agent lines held in the block; then the first agent reads the
--- file on disk through its own tools (no fs/read_text_file: the backend
--- does not know what it saw) and writes it back with a line of its own.
--- Without a conflict block, as two_agents.
function Case:reread_after_other(chat, f, s)
  if not review.has_marker(f.buf) then
    return self:two_agents(chat, f, s)
  end
  if not (second_chat and vim.api.nvim_buf_is_valid(second_chat.bufnr)) then
    second_chat = T.open_chat("driver", root)
  end
  local lines = vim.api.nvim_buf_get_lines(f.buf, 0, -1, false)
  local held, inside = {}, false
  for _, l in ipairs(lines) do
    if l == review.CONFLICT_START then
      inside = true
    elseif l == review.CONFLICT_END then
      inside = false
    elseif inside and l:match("^agent%-") then
      held[l] = true
    end
  end
  local view = review.agent_view(lines, f.path)
  local at = {}
  for i, l in ipairs(view) do
    if held[l] then
      at[#at + 1] = i
    end
  end
  if #at == 0 then
    return self:agent_fs_write(chat, f, s, true)
  end
  decided.reread = decided.reread + 1
  local removed = vim.list_slice(view)
  local gone = table.remove(removed, at[math.random(#at)])
  local content = text_of(removed)
  f.versions[content] = true
  self:polled_turn(second_chat, {
    read_step(f.path, view),
    write_step(f.path, content),
  }, ("a second agent reads %s and writes it back without %q, held in a conflict block"):format(f.path, gone))
  self:agent_fs_write(chat, f, s, true)
end
