---@mod acp.review.sync Keeping the review and the buffers in sync: the
--- user's edits reported to the backend (`acp.user_edit`, with the buffer's
--- changedtick), an agent's disk edits brought into the buffers (minimal
--- reload, or a merge into unsaved edits through `acp.merge`), the review
--- drawn from `review_changed` (asked for with `acp.review_file` only after
--- our own user edits or decisions).

local api = vim.api
local util = require("acp.util")
local fs = require("acp.fs")
local M = require("acp.review")

local function backend()
  return require("acp.backend")
end

local S = {}

---@type table<string, boolean> refreshes scheduled
local scheduled = {}
local qf_scheduled = false

local normalize = M.normalize

-- Loaded before this part (acp.review's init loads them in order).
local keys = require("acp.review.keys")
local entry_of_buf, attach, detach = keys.entry_of_buf, keys.attach, keys.detach
local draw = require("acp.review.render").draw

--- Tell the backend what the user made of a reviewed buffer, unless the
--- disk changed since the buffer was synced (the agent's change is then
--- merged first, by the refresh that follows).
---@param buf integer
---@param accept_lines? integer[] {start, end}: then accept those lines (a resolution)
local function send_user_edit(buf, accept_lines)
  local entry = entry_of_buf(buf)
  if not entry then
    return
  end
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
  local tick = api.nvim_buf_get_changedtick(buf)
  if tick == entry.reported_tick and not accept_lines then
    return
  end
  local text = fs.buffer_text(buf)
  entry.reported_tick = tick
  entry.asked = true
  for chat_id in pairs(entry.reviewed_by or entry.chats) do
    backend().notify("acp.user_edit", {
      chat_id = chat_id,
      path = entry.path,
      content = text,
      accept_lines = accept_lines,
      tick = tick,
    })
  end
end


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
  local buf = fs.find_buffer(path)
  if not buf then
    return
  end
  sync(buf, entry)
  if entry.review and entry.review.current == fs.buffer_text(buf) then
    -- The review has the buffer's text: nothing of this tick to report.
    entry.reported_tick = api.nvim_buf_get_changedtick(buf)
  end
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
S.send_user_edit = send_user_edit
S.sync = sync
S.schedule_refresh = schedule_refresh

return S
