---@mod acp.chat.backlog A loaded session's history, drawn newest turn first.
---
--- A `session/load` replay arrives oldest first, before `session_started`,
--- and can be thousands of turns. Drawn in that order the end of the
--- conversation, which is what the user reads and answers, came last (1.5 s
--- at 2,000 turns). Instead the transcript changes of a chat still opening
--- with an empty transcript are held here, cut into runs of whole turns as
--- they come; once the session has started the last run is drawn at the
--- tail (queued in acp.chat.replay, ahead of `session_started` and of every
--- later event, so order holds there), then the older runs, newest first,
--- each above the ones drawn before it (`View:front_open`), in slices that
--- hold nothing back: the chat takes prompts and streams at the tail
--- meanwhile, and windows keep showing the same lines.
---
--- A run is drawn with the transcript state it would have had when drawn in
--- order, so the lines are the same: it starts at a user message that follows
--- the agent's output (the header logic sees the agent as the last side), it
--- carries its turn number, and everything it touches by id (an entry
--- index, a tool call, a plan, a subagent, a compaction) was made in the
--- same run: a change that touches something an earlier run made joins the
--- runs in between into one. Chat state (mode, commands, usage, title) is
--- applied at once, in order: it draws nothing in the transcript.

local M = {}

---@class acp.BacklogRun
---@field changes (acp.SessionChange|false)[] oldest first (false: drawn, let go)
---@field turn integer user messages before the run
---@field agent boolean the agent wrote after the run's last user message (a new run may start)
---@field first integer the run's number: runs joined into it had the numbers after it

---@class acp.Backlog
---@field chat acp.Chat
---@field runs acp.BacklogRun[]
---@field owner table<string, integer> what a change touches ("e:3", "t:call-1") -> number of the run that made it
---@field made integer runs numbered so far
---@field users integer user messages so far
---@field timer? uv.uv_timer_t the quiet period (`QUIET_MS`)

---@type table<string, acp.Backlog> by chat id
local held = {}
---@type table<string, boolean> chats whose history was let go: nothing more is held
local released = {}

--- Milliseconds without a new change after which a held history is drawn
--- although the agent has not answered the load: an agent that replays and
--- never answers still shows the session. Changes that come later are drawn
--- below it, in order.
M.QUIET_MS = 500

--- Tests set false to draw a loaded history in order (the reference the
--- newest-first drawing must match line for line).
M.NEWEST_FIRST = true

--- acp.chat.tail, once loaded: it sets itself here, as it draws the older
--- turns through this module (a name of its own here would be a require
--- cycle). Nil while no session end was drawn from a transcript.
---@class acp.BacklogTail
---@field shown fun(chat_id: string): boolean
---@field reconcile fun(chat: acp.Chat, runs: table[], users: integer): integer
---@field drop fun(chat_id: string)

---@type acp.BacklogTail?
M.tail = nil

--- True while some chat's history is held here.
---@return boolean
function M.any_held()
  return next(held) ~= nil
end
-- acp.chat.replay holds the collector's own steps while this holds a history.
require("acp.chat.replay").history_held = M.any_held

--- True while the chat's history is held here.
---@param chat_id string
---@return boolean
function M.holding(chat_id)
  local tail = M.tail --[[@as acp.BacklogTail?]]
  return held[chat_id] ~= nil or (tail ~= nil and tail.shown(chat_id))
end

--- Whether a `session` event of this chat would be held: the chat is still
--- opening (its history is arriving) with nothing drawn yet.
---@param chat acp.Chat
---@return boolean
function M.would_hold(chat)
  local id = chat.chat_id
  if held[id] then
    return true
  end
  if released[id] or chat.status ~= "opening" then
    return false
  end
  -- The end of the session drawn from the transcript (acp.chat.tail) waits for
  -- the replay to be reconciled with.
  local tail = M.tail --[[@as acp.BacklogTail?]]
  return tail ~= nil and tail.shown(id) or (M.NEWEST_FIRST and chat.transcript.view.empty)
end

--- What a change touches by id, for the rule that a run draws only what it
--- made itself.
---@param change acp.SessionChange
---@return string[]
local function touched(change)
  local keys = {}
  local function key(kind, v)
    if v ~= nil then
      keys[#keys + 1] = kind .. ":" .. tostring(v)
    end
  end
  local c = change.change
  local tool_call = require("acp.chat.view.tool_call")
  if c == "entry_added" or c == "text_appended" or c == "message_replaced" or c == "session_message_changed" then
    key("e", change.index)
  end
  if c == "entry_added" and type(change.entry) == "table" and change.entry.type == "tool_call" then
    -- Read as a table: acp.Entry does not declare the nested `tool_call`.
    local entry = change.entry --[[@as table]]
    key("t", tool_call.id(entry.tool_call or entry))
  elseif c == "tool_call_changed" then
    key("e", change.index)
    key("t", tool_call.id(change.tool_call or {}))
  elseif c == "plan_updated" then
    key("p", type(change.plan) == "table" and change.plan.plan_id or nil)
  elseif c == "plan_removed" then
    key("p", change.plan_id)
  elseif c == "subagent_changed" then
    local info = type(change.subagent) == "table" and change.subagent or {}
    key("s", info.session_id)
    key("t", info.tool_call_id)
  elseif c == "child" then
    ---@type acp.SessionChange?
    local inner = change
    while type(inner) == "table" and inner.change == "child" do
      key("s", inner.session_id)
      inner = inner.child_change
    end
    if type(inner) == "table" and inner.change == "subagent_changed" and type(inner.subagent) == "table" then
      key("s", inner.subagent.session_id)
      key("t", inner.subagent.tool_call_id)
    end
  elseif c == "session_message_changed" and type(change.message) == "table" then
    key("s", change.message.recipient_session_id)
    key("s", change.message.sender_session_id)
  elseif c == "compaction_changed" then
    key("c", change.id)
  end
  return keys
end

--- The index of the run that covers run number `made` (runs are in order
--- of their first number).
---@param runs acp.BacklogRun[]
---@param made integer
---@return integer
local function run_of(runs, made)
  local lo, hi = 1, #runs
  while lo < hi do
    local mid = math.floor((lo + hi + 1) / 2)
    if runs[mid].first <= made then
      lo = mid
    else
      hi = mid - 1
    end
  end
  return lo
end

--- Hold a change of a chat's history (see `would_hold`); false: it is chat
--- state or the chat's history is not held, handle it now.
---@param chat acp.Chat
---@param change acp.SessionChange
---@return boolean
function M.hold(chat, change)
  if require("acp.rpc.protocol").CHAT_STATE_CHANGES[change.change] or not M.would_hold(chat) then
    return false
  end
  local b = held[chat.chat_id]
  if not b then
    b = { chat = chat, runs = {}, owner = {}, users = 0, made = 0 }
    held[chat.chat_id] = b
  end
  local runs = b.runs
  local run = runs[#runs]
  local entry = change.change == "entry_added" and type(change.entry) == "table" and change.entry or nil
  local kind = entry and entry.type
  local function new_run()
    b.made = b.made + 1
    run = { changes = {}, turn = b.users, agent = false, first = b.made }
    runs[#runs + 1] = run
  end
  if kind == "user_message" then
    if not run or run.agent then
      new_run()
    end
    b.users = b.users + 1
  elseif not run then
    new_run()
  end
  if kind == "agent_message" or kind == "thought" then
    run.agent = true
  end
  for _, k in ipairs(touched(change)) do
    local made = b.owner[k]
    local at = made and made < run.first and run_of(runs, made)
    if at then
      -- Made by an earlier run: join the runs from there on into one. The
      -- owners keep the number of the run that made them (a run covers the
      -- numbers from its `first` on), so a join costs the changes it moves,
      -- whatever an agent replays.
      local into = runs[at]
      for i = at + 1, #runs do
        vim.list_extend(into.changes, runs[i].changes)
        into.agent = runs[i].agent
        runs[i] = nil
      end
      run = into
    end
    b.owner[k] = b.made
  end
  run.changes[#run.changes + 1] = change
  -- Drawn after a quiet period if the agent never answers the load.
  b.timer = b.timer or assert(vim.uv.new_timer())
  b.timer:start(M.QUIET_MS, 0, function()
    vim.schedule(function()
      local chat_of = require("acp.chat.index").get(chat.chat_id)
      if held[chat.chat_id] == b and chat_of then
        M.release(chat_of)
      end
    end)
  end)
  return true
end

--- The transcript state a run is drawn with, swapped in and out around
--- each slice of it.
local STATE =
  { "entries", "tools", "plan_block", "thinking", "turn", "side", "after_header", "compactions", "plans", "subagents" }

---@param t acp.Transcript
---@return table
local function take(t)
  local s = {}
  for _, f in ipairs(STATE) do
    s[f] = t[f]
  end
  return s
end

---@param t acp.Transcript
---@param s table
local function put(t, s)
  for _, f in ipairs(STATE) do
    t[f] = s[f]
  end
end

--- What an older run made, for later changes that name it, unless a newer
--- run made the same (drawn in order, the newer would have replaced it).
---@param t acp.Transcript
---@param s table the run's state
local function adopt(t, s)
  for _, f in ipairs({ "entries", "tools", "compactions", "plans", "subagents" }) do
    if s[f] and next(s[f]) then
      t[f] = t[f] or {}
      for k, v in pairs(s[f]) do
        if t[f][k] == nil then
          t[f][k] = v
        end
      end
    end
  end
end

---@class acp.BacklogJob
---@field chat acp.Chat
---@field run {changes: (acp.SessionChange|false)[]}
---@field next integer next change
---@field state table the run's transcript state between slices
---@field cancelled? boolean what it draws above went (acp.chat.tail: the drawn end was replaced)
---@field unnumbered? boolean its prompts are not the chat's numbered turns (acp.chat.tail: a resumed session's)

--- Draw a slice of an older run above what is drawn (one change per call,
--- acp.chat.replay's `push_behind` protocol: true while there is more). Also
--- what acp.chat.tail draws the older turns of a transcript's end with.
---@param job acp.BacklogJob
---@return boolean
local function draw_older(job)
  local chat, run = job.chat, job.run
  local t, view = chat.transcript, chat.transcript.view
  if job.cancelled or not view:valid() then
    return false
  end
  local replay = require("acp.chat.replay")
  local t0 = replay.start()
  local ok, err = true, nil
  if job.next <= #run.changes then
    local live = take(t)
    local following = chat.following
    -- Old tool calls must not move the user's file view (Chat:on_tool_state).
    chat.following = nil
    put(t, job.state)
    view:front_open()
    view.fronting = true
    ok, err = pcall(function()
      -- A quarter of the slice is left for the flush: the lines in one
      -- change, then the marks of every block. Their markdown waits until a
      -- window shows them (View:draw_unseen).
      local budget = replay.SLICE_MS * 0.75
      repeat
        local change = run.changes[job.next]
        run.changes[job.next] = false
        job.next = job.next + 1
        -- false: drawn already (let go for the collector); the index only
        -- moves forward, so this is the guard the checker cannot see.
        if change then
          t:apply(change)
        end
      until job.next > #run.changes or (vim.uv.hrtime() - t0) / 1e6 >= budget
      if job.next > #run.changes then
        -- Drawn in order, the next turn's first entry would have ended it.
        t:_end_thinking()
      end
    end)
    -- The blocks stay staged until the slice ends (View:finish flushes the
    -- runs of the whole slice in one change: acp.chat.view.front).
    view.fronting = nil
    job.state = take(t)
    put(t, live)
    chat.following = following
    if not ok or job.next > #run.changes then
      view:front_close()
      adopt(t, job.state)
    end
  end
  if not ok then
    error(err, 0)
  end
  return job.next <= #run.changes
end

M.draw_older = draw_older

--- Make the folds the older runs' blocks wait for (`View:folds_waiting`),
--- a few dozen a call (acp.chat.replay's `push_behind` protocol).
---@param chat acp.Chat
---@return boolean
local function make_folds(chat)
  return chat.transcript.view:make_waiting_folds(50)
end
M.make_folds = make_folds

--- Draw a change of the newest run at the tail, in order (acp.chat.replay's
--- `push` protocol).
---@param chat acp.Chat
---@param change acp.SessionChange
local function draw_tail(chat, change)
  chat.transcript:apply(change)
end

--- Draw the older runs `a.runs[a.feed.at]` down to the first, one job at a
--- time (acp.chat.replay's `push_behind` protocol: true while there is more).
---@param chat acp.Chat
---@param a {runs: acp.BacklogRun[], feed: {at: integer, job?: acp.BacklogJob}}
---@return boolean
local function draw_runs(chat, a)
  local feed, runs = a.feed, a.runs
  local i = feed.at
  if i < 1 then
    return false
  end
  if not chat.transcript.view:valid() then
    return false
  end
  local job = feed.job
  if not job then
    local run = runs[i]
    ---@type acp.BacklogJob
    job = {
      chat = chat,
      run = run,
      next = 1,
      state = {
        entries = {},
        tools = {},
        turn = run.turn,
        side = i > 1 and "agent" or nil,
        after_header = false,
      },
    }
    feed.job = job
  end
  local ok, more = pcall(draw_older, job)
  if ok and more then
    return true
  end
  if not ok then
    -- This run is lost, not the older ones (each was a queue item of its own).
    require("acp.util").notify("history could not be shown: " .. tostring(more), vim.log.levels.ERROR)
  end
  feed.job = nil
  runs[i] = nil
  feed.at = i - 1
  return feed.at >= 1
end

M.draw_runs = draw_runs

--- The older runs a queue item of `push_behind` draws (for tests: a
--- `draw_runs` item draws several, one at a time; any other item one).
---@param fn function
---@param a any its second argument
---@return integer
function M.runs_in(fn, a)
  if fn == draw_runs then
    return a.feed.at
  end
  return 1
end

--- Let go of a chat's held history: its last run queued (acp.chat.replay) to be
--- drawn at the tail now, ahead of whatever the chat gets next, and the
--- older runs queued newest first to be drawn above it behind everything.
--- When the end of the session was drawn from the chat's transcript
--- (acp.chat.tail), the runs that say the same are not drawn again: the older
--- ones go above what is shown. Later changes of the chat are not held.
---@param chat acp.Chat
function M.release(chat)
  local b = held[chat.chat_id]
  held[chat.chat_id] = nil
  released[chat.chat_id] = true
  if b and b.timer then
    b.timer:stop()
    b.timer:close()
    b.timer = nil
  end
  local runs = b and b.runs or {}
  local tail = M.tail --[[@as acp.BacklogTail?]]
  local older = tail and tail.reconcile(chat, runs, b and b.users or 0) or #runs
  if #runs == 0 then
    return
  end
  local replay = require("acp.chat.replay")
  local t = chat.transcript
  if older == #runs then
    local last = runs[#runs]
    -- The state drawing every run before it in order would have left.
    t.turn = last.turn
    t.side = #runs > 1 and "agent" or nil
    for _, change in ipairs(last.changes) do
      replay.push(chat.chat_id, draw_tail, chat, change)
    end
    older = #runs - 1
  end
  if older > 0 then
    -- One queue item draws the older runs, newest first, each made into a
    -- job only when its turn comes and let go once drawn: a job per run made
    -- here (2,000 at 2,000 turns, 1.4 MB of tables in this one call) paid
    -- the Lua collector's sweep of the whole load's garbage inside this
    -- call (50-65 ms of CPU in bench/tui_long.lua); drawn in slices the
    -- sweep goes with the allocations, slice by slice.
    local feed = { at = older }
    replay.push_behind(chat.chat_id, draw_runs, chat, { runs = runs, feed = feed })
    -- The folds of the older turns' thoughts, once they are all drawn.
    replay.push_behind(chat.chat_id, make_folds, chat)
  end
end

--- Let go of every chat's held history (the backend died: what it sent
--- comes before the news).
function M.release_all()
  for _, b in pairs(held) do
    M.release(b.chat)
  end
end

--- Drop a chat's held history (the chat is gone).
---@param chat_id string
function M.drop(chat_id)
  local b = held[chat_id]
  if b and b.timer then
    b.timer:stop()
    b.timer:close()
  end
  held[chat_id] = nil
  released[chat_id] = nil
  if M.tail then
    M.tail.drop(chat_id)
  end
end

return M
