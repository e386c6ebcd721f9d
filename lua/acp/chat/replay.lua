---@mod acp.chat.replay History rendered in slices: the work of replaying a
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
---
--- Work queued with `M.push_behind` runs in the time a slice has left once
--- no chat has work queued with `M.push`, and holds nothing back: a chat's
--- new events do not wait for it (acp.chat.backlog: the older turns of a loaded
--- session, drawn above the newer ones while the chat is in use).

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
---@field items (acp.ReplayItem|false)[] false: done, let go
---@field head integer next item
---@field done? fun() called once the queue is empty

---@type table<string, acp.ReplayQueue> by chat id
local queues = {}
---@type string[] chat ids with work, in the order their work arrived
local order = {}
---@type table<string, acp.ReplayQueue> work that holds nothing back, by chat id
local behind = {}
---@type string[] chat ids with such work, in order
local behind_order = {}
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
  return require("acp.chat.index").get(chat_id)
end

--- True while the chat has work queued with `M.push_behind` (older turns
--- of a loaded session still being drawn above the rest).
---@param chat_id string
---@return boolean
function M.filling(chat_id)
  return behind[chat_id] ~= nil
end

--- True while any chat has history queued or older turns being drawn.
---@return boolean
function M.busy()
  return next(queues) ~= nil or next(behind) ~= nil
end

---@param chat_id string
---@param q acp.ReplayQueue
---@param set table<string, acp.ReplayQueue>
---@param ids string[]
local function finish(chat_id, q, set, ids)
  set[chat_id] = nil
  for i, id in ipairs(ids) do
    if id == chat_id then
      table.remove(ids, i)
      break
    end
  end
  if q.done and chat_of(chat_id) then
    q.done()
  end
end

--- Run the items of one queue until `t0`'s slice is used up (never when
--- `t0` is nil: all of them); at least one item, however short the slice.
---@param q acp.ReplayQueue
---@param t0? integer
local function drain(q, t0)
  while q.head <= #q.items do
    -- Items before `head` are the false ones (done); this one is not.
    local item = q.items[q.head] --[[@as acp.ReplayItem]]
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
end

--- One pass over the chats of `set`: their items in order, until the slice
--- is used up.
---@param set table<string, acp.ReplayQueue>
---@param ids string[]
---@param t0? integer
---@param only? string
---@param touched acp.Chat[]
---@param skip? table<string, acp.ReplayQueue> chats whose work here waits for work there
local function run_set(set, ids, t0, only, touched, skip)
  for _, chat_id in ipairs(only and { only } or vim.list_slice(ids)) do
    local q = set[chat_id]
    local chat = q and chat_of(chat_id)
    if q and not chat then
      -- Closed meanwhile: its history has nowhere to go.
      finish(chat_id, q, set, ids)
    elseif q and not (skip and skip[chat_id]) then
      touched[#touched + 1] = chat
      drain(q, t0)
      if q.head > #q.items then
        finish(chat_id, q, set, ids)
      end
    end
    if t0 and M.over(t0) then
      return
    end
  end
end

--- Run queued items of every chat, oldest chat first, until `t0`'s slice is
--- used up (never when `t0` is nil: everything), then, with time left, the
--- work that holds nothing back.
---@param t0? integer
---@param only? string just this chat
---@param hold_behind? boolean not the work that holds nothing back (a collector cycle runs)
local function run(t0, only, hold_behind)
  local touched = {}
  run_set(queues, order, t0, only, touched)
  -- At least one item a slice here too: after a slice spent on the other
  -- queue, or when the slice is shorter than any item.
  if not hold_behind and (#touched == 0 or not (t0 and M.over(t0))) then
    run_set(behind, behind_order, t0, only, touched, queues)
  end
  -- The view's batch ends with each slice: read-only again, markdown drawn
  -- over the rows the slice added, following windows at the new tail.
  for _, chat in ipairs(touched) do
    chat.transcript.view:finish()
  end
end

--- The Lua collector while a history arrives or is drawn. Left to itself
--- it works in proportion to what is allocated, inside whatever allocates:
--- Neovim turning a batch of 500 events from the backend into Lua tables
--- (4-5 ms of CPU) paid up to 17 ms more of collector work in the same
--- callback, and a cycle ending there swept 8 MB at once (22-36 ms of CPU
--- in one wait of a 2,000-turn load in bench/tui_long.lua; a step after each
--- batch did not prevent it). So from the first event of a history until
--- neither this module nor acp.chat.backlog has work left, the collector's
--- own steps are stopped and its work is done here, `GC_MS` at a time at
--- the start of a slice, or in a callback of its own every `GC_EVERY_MS`
--- while no slice is queued (the replay arriving). As the collector's
--- pause would, a new cycle starts only once the heap grew to 'pause' times
--- its size when the last cycle ended (or when the hold began). A collector
--- the user stopped is left alone.
M.GC_MS = 2
M.GC_EVERY_MS = 10

---@type uv.uv_timer_t?
local gc_timer
--- The collector's own steps are held (by `hold_collector`).
local gc_held = false
--- The heap (KB) past which a new cycle starts; nil while one runs.
---@type number?
local gc_next
---@type number
local gc_pause = 2
local gc_queued = false

--- True while acp.chat.backlog holds a history (it sets this: a name of
--- its own here would be a require cycle).
---@type fun(): boolean
M.history_held = function()
  return false
end

--- The collector's work, when a cycle runs or is due: up to `GC_MS`, or
--- the whole slice while older turns fill in (they wait for the cycle's end).
--- Every object made while a cycle marks, and reachable, is marked in the
--- cycle's last, indivisible step: with the fill going on meanwhile that
--- step took 14-22 ms of CPU in one slice at 2,000 turns (bench/tui_long.lua;
--- a cycle of the same heap at rest: 0.8-2.7 ms), so the fill makes nothing while a
--- cycle runs, and a new cycle waits for twice the heap while a replay still
--- arrives or older turns fill in (13.8 ms in one slice at 2,000 turns, the
--- cycle having started 80 ms before the replay was whole).
---@return boolean cycle a cycle runs: the fill waits
local function gc_work()
  local filling = next(behind) ~= nil
  if gc_next and collectgarbage("count") < gc_next * ((M.history_held() or filling) and 2 or 1) then
    return false
  end
  gc_next = nil
  local t = uv.hrtime()
  local budget = filling and math.max(M.SLICE_MS, M.GC_MS) or M.GC_MS
  repeat
    if collectgarbage("step", 0) then
      gc_next = collectgarbage("count") * gc_pause
      break
    end
  until (uv.hrtime() - t) / 1e6 >= budget
  -- A step hands the collector its own steps back.
  collectgarbage("stop")
  return gc_next == nil
end

local function gc_tick()
  gc_queued = false
  if not (M.busy() or M.history_held()) then
    if gc_timer then
      gc_timer:stop()
    end
    gc_held = false
    gc_next = nil
    collectgarbage("restart")
    return
  end
  -- A slice is queued: it does this work at its start instead of a
  -- callback of its own in the same turn of the event loop
  -- (the two together were the longest waits while older turns filled in).
  if not scheduled then
    gc_work()
  end
end

--- Hold the collector's own steps while a history arrives or is drawn
--- (acp.events calls this for each batch then, and `push` and
--- `push_behind` for each item); idempotent.
function M.hold_collector()
  if gc_held then
    return
  end
  -- "isrunning" is LuaJIT's and Lua 5.2's; a PUC Lua 5.1 build cannot
  -- tell, and is taken as running.
  local ok, running = pcall(collectgarbage, "isrunning")
  if ok and not running then
    return
  end
  -- 'pause' read back (setting it is the only way to read it).
  local pause = collectgarbage("setpause", 200)
  collectgarbage("setpause", pause)
  gc_pause = math.max(pause, 100) / 100
  -- The collector may be inside a cycle (it runs one as soon as it has its
  -- own steps back): that cycle is finished first, in `gc_work`'s steps.
  -- Taken for a pause, it was carried on at the next cycle's heap, and its
  -- last step marked everything made since the hold began (13.5-18.9 ms in
  -- one slice of a 2,000-turn fill).
  gc_next = nil
  collectgarbage("stop")
  gc_held = true
  gc_timer = gc_timer or assert(uv.new_timer())
  gc_timer:start(M.GC_EVERY_MS, M.GC_EVERY_MS, function()
    if not gc_queued then
      gc_queued = true
      vim.schedule(gc_tick)
    end
  end)
end

---@type fun()
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
  -- The collector's share first, on top of the slice's time: taken from
  -- it, a 200-turn history took a quarter longer to draw.
  local cycle = gc_held and gc_work()
  -- An error here must not leave the rest of the history waiting forever.
  local ok, err = xpcall(run, debug.traceback, M.start(), nil, cycle)
  if not ok then
    require("acp.util").notify("history could not be shown: " .. tostring(err), vim.log.levels.ERROR)
  end
  if #order > 0 or #behind_order > 0 then
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
  M.hold_collector()
  schedule()
end

--- Queue `fn(a, b)` after the chat's other work of this kind, to run only
--- while no chat has work queued with `M.push`; the chat's new events do not
--- wait for it (`M.pending` does not count it). `fn` as in `M.push`.
---@param chat_id string
---@param fn fun(a: any, b: any): boolean?
---@param a any
---@param b any
function M.push_behind(chat_id, fn, a, b)
  local q = behind[chat_id]
  if not q then
    q = { items = {}, head = 1 }
    behind[chat_id] = q
    behind_order[#behind_order + 1] = chat_id
  end
  q.items[#q.items + 1] = { fn = fn, a = a, b = b }
  M.hold_collector()
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
  if chat_id and not queues[chat_id] and not behind[chat_id] then
    return
  end
  run(nil, chat_id)
end

return M
