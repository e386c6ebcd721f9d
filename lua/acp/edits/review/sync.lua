---@mod acp.edits.review.sync Keeping the review and the buffers in sync: the
--- user's edits reported to the backend (`acp.user_edit`, with the buffer's
--- tick, acp.edits.fs.tick), the review drawn from `review_changed`, which carries
--- the whole review and a revision (an older one coming late is dropped):
--- nothing is asked of the backend. The agent's edits reach the buffers as
--- the backend's instructions (`acp.edits.fs.apply`): this part only draws and
--- reports.

local api = vim.api
local util = require("acp.util")
local fs = require("acp.edits.fs")
local M = require("acp.edits.review")

local function backend()
  return require("acp.rpc.backend")
end

local S = {}

---@type table<string, boolean> refreshes scheduled
local scheduled = {}
local qf_scheduled = false

local normalize = M.normalize

-- Loaded before this part (acp.review's init loads them in order).
local keys = require("acp.edits.review.keys")
local entry_of_buf, attach, detach = keys.entry_of_buf, keys.attach, keys.detach
local draw = require("acp.edits.review.render").draw

--- Tell the backend what the user made of a reviewed buffer. While the
--- agent's newer disk text waits for this buffer, the backend keeps the
--- report as the buffer's state only (it is not the user undoing that
--- change) and sends the merge; the merged buffer is reported again.
---@param buf integer
---@param accept_lines? integer[] {start, end}: then accept those lines (a resolution)
---@param disk? "saved"|"read" the buffer's text is the file's on disk (saved, or just read)
local function send_user_edit(buf, accept_lines, disk)
  local entry = entry_of_buf(buf)
  if not entry then
    return
  end
  local text
  if not disk and not vim.bo[buf].modified then
    text = fs.buffer_text(buf)
    if text ~= fs.read_disk(entry.path) then
      -- Undoing the agent's reload lands on the text Neovim read and so
      -- reads as unmodified; the buffer differs from its file: say so, or
      -- the agent's next disk edit would be reloaded over the undo.
      vim.bo[buf].modified = true
    end
  end
  local tick = fs.tick(buf)
  if tick == entry.reported_tick and not accept_lines and not disk then
    return
  end
  text = text or fs.buffer_text(buf)
  entry.reported_tick = tick
  for chat_id in pairs(entry.reviewed_by or entry.chats) do
    backend().notify("acp.user_edit", {
      chat_id = chat_id,
      path = entry.path,
      content = text,
      accept_lines = accept_lines,
      tick = tick,
      disk = disk,
    })
  end
end

--- Whether every chat reviewing the file has `text` as its review's text
--- (as its last `review_changed` said; the shown chat's from `entry.review`).
--- Not the shown chat's alone: another chat's agent write merged into the
--- buffer reaches only that chat's review, and the first chat kept a hunk
--- of a line the merge had removed (data-safety seed 230495178, case 7).
---@param entry acp.ReviewEntry
---@param text string
---@return boolean
local function every_review_has(entry, text)
  if not entry.review or entry.review.current ~= text then
    return false
  end
  for chat_id in pairs(entry.reviewed_by or entry.chats) do
    if chat_id ~= entry.review_chat then
      local latest = entry.latest and entry.latest[chat_id]
      if not latest or latest.current ~= text then
        return false
      end
    end
  end
  return true
end

--- How long `settle` waits for the backend's reviews to take the reports
--- sent (one event batch, a few milliseconds).
local SETTLE_MS = 1000

--- Wait until every chat's review has the buffer's text: the reports sent
--- (a resolution's, which renumbers the hunks) are applied and their
--- `review_changed` drawn from. A chat with nothing under review (or no
--- review yet) has nothing to wait for. Returns false on timeout (the
--- review drawn is then the newest the backend sent).
---@param buf integer
---@return boolean
function S.settle(buf)
  local entry = entry_of_buf(buf)
  if not entry then
    return true
  end
  local text = fs.buffer_text(buf)
  return vim.wait(SETTLE_MS, function()
    for chat_id in pairs(entry.reviewed_by or entry.chats) do
      local latest = entry.latest and entry.latest[chat_id]
      if latest and latest.current ~= text then
        return false
      end
    end
    return true
  end, 5)
end

--- Draw the shown chat's review of a path (the newest its `review_changed`
--- carried), reporting its buffer's unsaved text the review lacks.
---@param path string
function M.refresh(path)
  local entry = M.files[path]
  if not entry then
    return
  end
  local chat_id = entry.chat_id
  local latest = chat_id and entry.latest and entry.latest[chat_id]
  entry.review = latest or nil
  entry.review_chat = entry.review and chat_id or nil
  local buf = fs.find_buffer(path)
  if not buf then
    return
  end
  local tick = fs.tick(buf)
  if tick ~= entry.reported_tick and entry.review and every_review_has(entry, fs.buffer_text(buf)) then
    -- The reviews have the buffer's text: nothing of this tick to report.
    entry.reported_tick = tick
  end
  -- Unsaved user text the review does not know yet.
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

--- The backend's instruction for the agent's disk edit of `path` names the
--- chat whose agent made it (acp.edits.fs.apply): the buffer's saves are reported
--- to that chat from now on, also before the edit's `review_changed`
--- arrives (the instruction can come first; a save in between, unreported,
--- would be taken for part of the agent's edit).
---@param path string
---@param chat_id string
function M.disk_edit_by(path, chat_id)
  local key = normalize(path)
  local entry = M.files[key] or { path = key, chats = {} }
  M.files[key] = entry
  entry.reviewed_by = entry.reviewed_by or {}
  entry.reviewed_by[chat_id] = true
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
  entry.revision = entry.revision or {}
  local revision = tonumber(ev.revision)
  if revision and revision <= (entry.revision[chat_id] or 0) then
    -- Older than the review already taken: it came late.
    return
  end
  entry.revision[chat_id] = revision
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
    if entry.revision then
      entry.revision[chat_id] = nil
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
S.schedule_refresh = schedule_refresh

return S
