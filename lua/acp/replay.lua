---@mod acp.replay History rendered in slices: the work of replaying a
--- session into its chat (a `session/load` replay arriving as event batches,
--- a transcript reopened from its file), queued per chat and done a few
--- milliseconds at a time, yielding to the event loop between slices so keys
--- typed meanwhile, the prompt and redraws are never held for long.
---
--- Work is done in order, per chat. Whoever renders history calls
--- `M.start()` for the time its slice began, runs items itself while
--- `M.over(t)` is false and hands the rest to `M.push`; once a chat has work
--- queued, everything for it goes through the queue (`M.pending`), so
--- nothing overtakes the history. `M.flush` does what is queued at once
--- (the backend died: its last events come before the news of its death).

local uv = vim.uv

local M = {}

--- Milliseconds of work per slice. A slice ends at the first item past it,
--- so one item (an event, a transcript record) is the unit: bounded by the
--- backend's merging of streamed text. Tests set 0 (one item a slice) and
--- math.huge (one slice) to compare the two.
M.SLICE_MS = 4

---@class acp.ReplayItem
---@field fn fun(a: any, b: any): boolean? true: call again, there is more
---@field a any
---@field b any

---@class acp.ReplayQueue
---@field items acp.ReplayItem[]
---@field head integer next item
---@field done? fun() called once the queue is empty

---@type table<string, acp.ReplayQueue> by chat id
local queues = {}
---@type string[] chat ids with work, in the order their work arrived
local order = {}
local scheduled = false

--- The time a slice starts (pass it to `M.over`).
---@return integer
function M.start()
  return uv.hrtime()
end

--- True when a slice that started at `t0` used up its time.
---@param t0 integer
---@return boolean
function M.over(t0)
  return (uv.hrtime() - t0) / 1e6 >= M.SLICE_MS
end

--- True while the chat has history waiting to be rendered.
---@param chat_id string
---@return boolean
function M.pending(chat_id)
  return queues[chat_id] ~= nil
end

---@param chat_id string
---@return acp.Chat?
local function chat_of(chat_id)
  return require("acp.chat").get(chat_id)
end

---@param chat_id string
---@param q acp.ReplayQueue
local function finish(chat_id, q)
  queues[chat_id] = nil
  for i, id in ipairs(order) do
    if id == chat_id then
      table.remove(order, i)
      break
    end
  end
  if q.done and chat_of(chat_id) then
    q.done()
  end
end

--- Run queued items of every chat, oldest chat first, until `t0`'s slice is
--- used up (never when `t0` is nil: everything).
---@param t0? integer
---@param only? string just this chat
local function run(t0, only)
  local touched = {}
  local ids = only and { only } or vim.list_slice(order)
  for _, chat_id in ipairs(ids) do
    local q = queues[chat_id]
    local chat = q and chat_of(chat_id)
    if q and not chat then
      -- Closed meanwhile: its history has nowhere to go.
      finish(chat_id, q)
    elseif q then
      touched[#touched + 1] = chat
      -- At least one item a slice, however short the slice.
      while q.head <= #q.items do
        local item = q.items[q.head]
        local ok, more = xpcall(item.fn, debug.traceback, item.a, item.b)
        if not ok then
          require("acp.util").notify("history could not be shown: " .. tostring(more), vim.log.levels.ERROR)
        end
        if not (ok and more == true) then
          q.items[q.head] = false
          q.head = q.head + 1
        end
        if t0 and M.over(t0) then
          break
        end
      end
      if q.head > #q.items then
        finish(chat_id, q)
      end
    end
    if t0 and M.over(t0) then
      break
    end
  end
  -- The view's batch ends with each slice: read-only again, markdown drawn
  -- over the rows the slice added, following windows at the new tail.
  for _, chat in ipairs(touched) do
    chat.transcript.view:finish()
  end
end

local pump

--- The next slice, after the editor had its turn. A timer, not
--- vim.schedule: Neovim runs scheduled callbacks until none is left before it
--- reads typed keys or redraws, so a chain of them would hold both until the
--- whole history was drawn; a timer fires from the event loop's next poll,
--- after the keys and the redraw.
---@type uv.uv_timer_t?
local timer
local function schedule()
  if scheduled then
    return
  end
  scheduled = true
  timer = timer or assert(uv.new_timer())
  timer:start(0, 0, function()
    vim.schedule(pump)
  end)
end

pump = function()
  scheduled = false
  -- An error here must not leave the rest of the history waiting forever.
  local ok, err = xpcall(run, debug.traceback, M.start())
  if not ok then
    require("acp.util").notify("history could not be shown: " .. tostring(err), vim.log.levels.ERROR)
  end
  if #order > 0 then
    schedule()
  end
end

--- Queue `fn(a, b)` after the chat's other queued work. An `fn` that
--- returns true has more to do: it is called again (in this slice while
--- time is left, else in the next), one step of a long job per call.
---@param chat_id string
---@param fn fun(a: any, b: any): boolean?
---@param a any
---@param b any
function M.push(chat_id, fn, a, b)
  local q = queues[chat_id]
  if not q then
    q = { items = {}, head = 1 }
    queues[chat_id] = q
    order[#order + 1] = chat_id
  end
  q.items[#q.items + 1] = { fn = fn, a = a, b = b }
  schedule()
end

--- Call `fn` once the chat's queued work is done (at once when none is).
---@param chat_id string
---@param fn fun()
function M.when_done(chat_id, fn)
  local q = queues[chat_id]
  if not q then
    fn()
    return
  end
  local prev = q.done
  q.done = function()
    if prev then
      prev()
    end
    fn()
  end
end

--- Do the queued work now: of one chat, else of every chat.
---@param chat_id? string
function M.flush(chat_id)
  if chat_id and not queues[chat_id] then
    return
  end
  run(nil, chat_id)
end

return M
