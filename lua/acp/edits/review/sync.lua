---@mod acp.edits.review.sync Keeping the review and the buffers in sync: the
--- user's edits reported to the backend (`acp.user_edit`, with the buffer's
--- tick, acp.edits.buffer.tick), the review drawn from `review_changed`, which carries
--- the whole review and a revision (an older one coming late is dropped):
--- nothing is asked of the backend. The agent's edits reach the buffers as
--- the backend's instructions (`acp.edits.fs.apply`): this part only draws and
--- reports.

local api = vim.api
local util = require("acp.util")
local buffer = require("acp.edits.buffer")
local state = require("acp.edits.review.state")
local draw = require("acp.edits.review.render").draw

local function backend()
  return require("acp.rpc.backend")
end

local S = {}

---@type table<string, boolean> refreshes scheduled
local scheduled = {}
local qf_scheduled = false

local normalize = state.normalize
local entry_of_buf = state.entry_of_buf

---@class acp.ReviewSyncHooks what the parts above this one do when it calls
---@field keys fun(buf: integer, on: boolean) the review keys of a buffer on (something to review) or off (acp.edits.review.keys)
---@field list_changed fun() a review changed: the `:Acp review` list follows (acp.edits.review.actions)

--- Set by acp.edits.review when it loads its parts: this part draws and
--- reports, the parts above it (keys, the quickfix list) build on it, and it
--- calls them back instead of requiring them.
---@type acp.ReviewSyncHooks?
local hooks

---@param h acp.ReviewSyncHooks
function S.set_hooks(h)
  hooks = h
end

---@return acp.ReviewSyncHooks
local function hooked()
  if not hooks then
    error("acp.edits.review.sync is used through acp.edits.review, which sets its hooks", 2)
  end
  return hooks
end

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
    text = buffer.buffer_text(buf)
    if text ~= util.read_file(entry.path) then
      -- Undoing the agent's reload lands on the text Neovim read and so
      -- reads as unmodified; the buffer differs from its file: say so, or
      -- the agent's next disk edit would be reloaded over the undo.
      vim.bo[buf].modified = true
    end
  end
  local tick = buffer.tick(buf)
  if tick == entry.reported_tick and not accept_lines and not disk then
    return
  end
  text = text or buffer.buffer_text(buf)
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
  local text = buffer.buffer_text(buf)
  local settled = vim.wait(SETTLE_MS, function()
    for chat_id in pairs(entry.reviewed_by or entry.chats) do
      local latest = entry.latest and entry.latest[chat_id]
      if latest and latest.current ~= text then
        return false
      end
    end
    return true
  end, 5)
  return settled
end

--- Draw the shown chat's review of a path (the newest its `review_changed`
--- carried), reporting its buffer's unsaved text the review lacks.
---@param path string
function S.refresh(path)
  local entry = state.files[path]
  if not entry then
    return
  end
  local chat_id = entry.chat_id
  local latest = chat_id and entry.latest and entry.latest[chat_id]
  entry.review = latest or nil
  entry.review_chat = entry.review and chat_id or nil
  local buf = util.find_buffer(path)
  if not buf then
    return
  end
  local tick = buffer.tick(buf)
  if tick ~= entry.reported_tick and entry.review and every_review_has(entry, buffer.buffer_text(buf)) then
    -- The reviews have the buffer's text: nothing of this tick to report.
    entry.reported_tick = tick
  end
  -- Unsaved user text the review does not know yet.
  if vim.bo[buf].modified then
    send_user_edit(buf)
  end
  S.redraw(buf)
end

--- Redraw a buffer from the last fetched review (e.g. after typing).
---@param buf integer
function S.redraw(buf)
  if state.previews[buf] then
    return
  end
  local entry = entry_of_buf(buf)
  if not entry then
    api.nvim_buf_clear_namespace(buf, state.ns, 0, -1)
    state.items[buf] = nil
    hooked().keys(buf, false)
    return
  end
  draw(buf, entry.review)
  hooked().keys(buf, #state.items[buf] > 0 or entry.chat_id ~= nil)
end

local function schedule_refresh(path)
  if scheduled[path] then
    return
  end
  scheduled[path] = true
  vim.schedule(function()
    scheduled[path] = nil
    local ok, err = pcall(S.refresh, path)
    if not ok then
      util.notify("could not show the review of " .. path .. ": " .. tostring(err), vim.log.levels.ERROR)
    end
  end)
end

--- `review_changed` from the backend.
---@param chat_id string
---@param ev acp.ev.ReviewChanged
function S.on_changed(chat_id, ev)
  local raw = ev.path
  if not raw then
    return
  end
  local path = normalize(raw)
  local summary = ev.summary or {}
  local entry = state.files[path] or { path = path, chats = {} }
  state.files[path] = entry
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
      local ok, err = pcall(hooked().list_changed)
      if not ok then
        util.notify("could not refresh the list of agent edits: " .. tostring(err), vim.log.levels.ERROR)
      end
    end)
  end
end

--- Forget every review of a chat (closed, or its agent died).
---@param chat_id string
function S.drop_chat(chat_id)
  for path, entry in pairs(state.files) do
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
