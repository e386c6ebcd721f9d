-- A loaded session's history drawn newest turn first (acp.chat.backlog) from
-- hand-made replays (no backend): an agent whose later turns change what an
-- earlier turn made (a tool call updated, a plan replaced, a message of the
-- first turn appended to from every turn) still gets exactly the lines,
-- marks and folds of the in-order drawing.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local events = require("acp.events")
local replay = require("acp.chat.replay")
local backlog = require("acp.chat.backlog")
local api = vim.api

T.fake_backend()
vim.o.columns = 200
require("acp").setup({})

local text = T.text_block

--- The session events of a replay of `turns` turns; `extra(turn, index)`
--- adds changes at the end of a turn (index: the next free entry index).
---@param turns integer
---@param extra? fun(turn: integer, index: integer): table[], integer
---@return table[] changes
local function history(turns, extra)
  local out, index = {}, 0
  local function add(c)
    out[#out + 1] = c
  end
  for turn = 1, turns do
    local u, th, msg, tool = index, index + 1, index + 2, index + 3
    index = index + 4
    add({
      change = "entry_added",
      index = u,
      entry = { type = "user_message", content = { text("question " .. turn) } },
    })
    add({ change = "entry_added", index = th, entry = { type = "thought", content = { text("Thinking ") } } })
    add({ change = "text_appended", index = th, content = text("about " .. turn .. ".") })
    add({
      change = "entry_added",
      index = msg,
      entry = { type = "agent_message", content = { text("# Turn " .. turn .. "\n\n") } },
    })
    add({
      change = "text_appended",
      index = msg,
      content = text("Some **bold** text.\n\n```lua\nlocal x = " .. turn .. "\n```\n"),
    })
    add({
      change = "entry_added",
      index = tool,
      entry = { type = "tool_call", id = "t" .. turn, title = "Read notes " .. turn, kind = "read", status = "pending" },
    })
    add({
      change = "tool_call_changed",
      index = tool,
      tool_call = { id = "t" .. turn, title = "Read notes " .. turn, kind = "read", status = "completed" },
    })
    if extra then
      local more
      more, index = extra(turn, index)
      vim.list_extend(out, more)
    end
  end
  return out
end

--- Dispatch `changes` to `chat` in one batch, as a loaded session's
--- history arrives (with `last` after them, when given).
---@param chat table
---@param changes table[]
---@param last? table
local function feed(chat, changes, last)
  local evs = {}
  for _, c in ipairs(changes) do
    evs[#evs + 1] = T.session_event(chat, c)
  end
  evs[#evs + 1] = last
  events.dispatch(evs)
end

local function decorations(buf)
  local names = {}
  for name, id in pairs(api.nvim_get_namespaces()) do
    names[id] = (name:gsub("%.%d+$", ""))
  end
  local out = {}
  for _, m in ipairs(api.nvim_buf_get_extmarks(buf, -1, 0, -1, { details = true })) do
    local d = m[4]
    local virt = {}
    for _, chunk in ipairs(d.virt_text or {}) do
      virt[#virt + 1] = chunk[1] .. "/" .. tostring(chunk[2])
    end
    out[#out + 1] = table.concat({
      names[d.ns_id] or "?",
      m[2] .. ":" .. m[3],
      tostring(d.end_row) .. ":" .. tostring(d.end_col),
      tostring(d.hl_group),
      tostring(d.conceal),
      table.concat(virt, ","),
    }, " ")
  end
  table.sort(out)
  return out
end

local function folds(win)
  return api.nvim_win_call(win, function()
    local out, l, count = {}, 1, api.nvim_buf_line_count(0)
    while l <= count do
      local e = vim.fn.foldclosedend(l)
      if e ~= -1 then
        out[#out + 1] = { l, e }
        l = e + 1
      else
        l = l + 1
      end
    end
    return out
  end)
end

--- Replay `changes` into a new chat, newest first or in order, a change a
--- slice; returns what was drawn and how many older runs were queued.
---@param changes table[]
---@param newest boolean
local function draw(changes, newest)
  backlog.NEWEST_FIRST = newest
  replay.SLICE_MS = 0
  local behind = 0
  local push_behind = replay.push_behind
  replay.push_behind = function(chat_id, fn, a, b)
    behind = behind + backlog.runs_in(fn, b)
    return push_behind(chat_id, fn, a, b)
  end
  local chat = assert(require("acp").open({ agent = "demo", cwd = T.root }))
  feed(chat, changes)
  events.dispatch({ T.session_started(chat) })
  T.wait(function()
    return chat.status == "ready" and not replay.pending(chat.chat_id) and not replay.filling(chat.chat_id)
  end, "the history drawn")
  replay.push_behind = push_behind
  replay.SLICE_MS = 4
  backlog.NEWEST_FIRST = true
  -- The markdown of turns no window showed waits for one (View:draw_unseen).
  require("acp.chat.blocks").of(chat.bufnr):draw_unseen()
  local got = {
    lines = T.lines(chat.bufnr),
    decorations = decorations(chat.bufnr),
    folds = folds(chat:transcript_wins()[1]),
  }
  chat:close()
  return got, behind
end

--- Newest first draws what in order draws; returns the older runs queued.
local function same(changes, what)
  local want = draw(changes, false)
  local got, behind = draw(changes, true)
  T.eq(want.lines, got.lines, what .. ": same lines")
  T.eq(want.decorations, got.decorations, what .. ": same marks")
  T.eq(want.folds, got.folds, what .. ": same folds")
  return behind
end

T.test("turns that touch only what they made are drawn one run each", function()
  local behind = same(history(6), "six plain turns")
  -- Five older runs, then their folds.
  T.eq(6, behind, "five older runs queued behind the last")
end)

T.test("a later turn that updates an earlier turn's tool call or plan joins the turns between", function()
  local changes = history(8, function(turn, index)
    local out = {}
    if turn == 5 then
      -- The agent reports turn 2's read again (a late status).
      out[#out + 1] = {
        change = "tool_call_changed",
        tool_call = { id = "t2", title = "Read notes 2 again", kind = "read", status = "failed" },
      }
    elseif turn == 7 then
      out[#out + 1] = { change = "plan_updated", plan = { plan_id = "p", format = "markdown", content = "- [ ] one" } }
    elseif turn == 8 then
      out[#out + 1] = { change = "plan_updated", plan = { plan_id = "p", format = "markdown", content = "- [x] one" } }
    end
    return out, index
  end)
  local behind = same(changes, "cross-turn updates")
  -- Runs: 1, 2-5, 6, 7-8: three older runs, then their folds.
  T.eq(4, behind, "the joined turns are one run each")
end)

T.test("an agent appending to the first turn's message from every turn gets one run, drawn as in order", function()
  local changes = history(300, function(turn, index)
    return { { change = "text_appended", index = 2, content = text(" and " .. turn) } }, index
  end)
  local behind = same(changes, "every turn touching turn 1")
  T.eq(0, behind, "one run: nothing older to draw above it")
end)

T.test("an agent that replays and never answers the load: the history is drawn after a quiet period", function()
  local changes = history(6)
  local want = draw(changes, false).lines
  backlog.QUIET_MS = 50
  local chat = assert(require("acp").open({ agent = "demo", cwd = T.root }))
  local evs = {}
  for _, c in ipairs(changes) do
    evs[#evs + 1] = T.session_event(chat, c)
  end
  -- Only the replay's first five turns so far, and no answer.
  local cut = 0
  for i, c in ipairs(changes) do
    if c.change == "entry_added" and c.entry.type == "user_message" and c.entry.content[1].text == "question 6" then
      cut = i - 1
      break
    end
  end
  events.dispatch(vim.list_slice(evs, 1, cut))
  T.eq(true, chat.transcript.view.empty, "held while the replay comes")
  T.wait(function()
    return T.text(chat.bufnr):find("question 1", 1, true) ~= nil and not replay.filling(chat.chat_id)
  end, "the held history drawn without an answer")
  T.eq("opening", chat.status, "the agent still has not answered")
  -- The rest of the replay comes late: below, in order.
  events.dispatch(vim.list_slice(evs, cut + 1))
  T.wait(function()
    return not replay.pending(chat.chat_id) and not replay.filling(chat.chat_id)
  end, "the rest drawn")
  T.eq(want, T.lines(chat.bufnr), "the same lines as the whole history drawn in order")
  backlog.QUIET_MS = 500
  chat:close()
end)

--- A chat whose loaded history of `turns` turns has arrived and is drawn.
---@param turns integer
---@return table chat
local function loaded(turns)
  local chat = assert(require("acp").open({ agent = "demo", cwd = T.root }))
  feed(chat, history(turns))
  events.dispatch({ T.session_started(chat) })
  T.wait(function()
    return not replay.pending(chat.chat_id) and not replay.filling(chat.chat_id)
  end, "the history drawn")
  return chat
end

--- The prompt stays plain text for `ms` while `what` goes on, and gets its
--- markdown filetype once `stop()` ended it.
---@param chat table
---@param ms integer
---@param what string
---@param stop fun()
local function markdown_once_quiet(chat, ms, what, stop)
  vim.wait(ms)
  T.eq("", vim.bo[chat.prompt_buf].filetype, "no markdown while " .. what)
  stop()
  T.wait(function()
    return vim.bo[chat.prompt_buf].filetype == "markdown"
  end, "the prompt's filetype once no more " .. what)
end

T.test(
  "a load holds the collector's own steps while its history comes and is drawn, and gives them back; the prompt's filetype waits for a pause in typing",
  function()
    local Chat = require("acp.chat")
    local idle = Chat.FILETYPE_IDLE_MS
    Chat.FILETYPE_IDLE_MS = 200
    T.wait(function()
      return collectgarbage("isrunning")
    end, "running before (the earlier tests' loads gave it back)")
    local chat = assert(require("acp").open({ agent = "demo", cwd = T.root }))
    feed(chat, history(30))
    T.eq(false, collectgarbage("isrunning"), "held while the replay comes")
    events.dispatch({ T.session_started(chat) })
    -- Keys typed while the older turns are drawn and after: the prompt stays
    -- plain text until none came for FILETYPE_IDLE_MS.
    local typing = true
    local function type_key()
      if typing then
        api.nvim_feedkeys(api.nvim_replace_termcodes("<Ignore>", true, false, true), "xt", false)
        vim.defer_fn(type_key, 20)
      end
    end
    type_key()
    T.wait(function()
      return not replay.pending(chat.chat_id) and not replay.filling(chat.chat_id)
    end, "the history drawn")
    T.wait(function()
      return vim.bo[chat.bufnr].filetype == "acpchat"
    end, "the transcript's filetype, set once the history is drawn")
    markdown_once_quiet(chat, 300, "keys come", function()
      typing = false
    end)
    T.eq(true, collectgarbage("isrunning"), "the collector's own steps given back")
    chat:close()
    -- A collector the user stopped stays stopped.
    collectgarbage("stop")
    local other = loaded(3)
    vim.wait(50)
    T.eq(false, collectgarbage("isrunning"), "still stopped")
    collectgarbage("restart")
    Chat.FILETYPE_IDLE_MS = idle
    other:close()
  end
)

T.test("the prompt's filetype waits for a pause in the agent's answer", function()
  local Chat = require("acp.chat")
  local idle = Chat.FILETYPE_IDLE_MS
  Chat.FILETYPE_IDLE_MS = 200
  local chat = assert(require("acp").open({ agent = "demo", cwd = T.root }))
  events.dispatch({ T.session_started(chat) })
  events.dispatch({
    T.session_event(
      chat,
      { change = "entry_added", index = 0, entry = { type = "agent_message", content = { text("start ") } } }
    ),
  })
  -- The agent streams a batch every 50 ms for 800 ms.
  local streaming = true
  local function chunk()
    if streaming then
      events.dispatch({ T.session_event(chat, { change = "text_appended", index = 0, content = text("more ") }) })
      vim.defer_fn(chunk, 50)
    end
  end
  chunk()
  markdown_once_quiet(chat, 800, "the answer streams", function()
    streaming = false
  end)
  Chat.FILETYPE_IDLE_MS = idle
  chat:close()
end)

T.test("a collector cycle found running is finished first, and older turns wait while a cycle runs", function()
  -- A heap that takes a cycle several slices to mark (300,000 live tables).
  local keep = {}
  for i = 1, 300000 do
    keep[i] = { i }
  end
  -- Every step of the collector acp.chat.replay takes (true: a cycle ended),
  -- and every slice of the older turns, in order.
  local log = {}
  local gc = collectgarbage
  ---@diagnostic disable-next-line: duplicate-set-field
  _G.collectgarbage = function(opt, ...)
    local r = gc(opt, ...)
    if opt == "step" then
      log[#log + 1] = r and "cycle ended" or "step"
    end
    return r
  end
  local draw_runs = backlog.draw_runs
  local push_behind = replay.push_behind
  replay.push_behind = function(chat_id, fn, a, b)
    if fn == draw_runs then
      local inner = fn
      fn = function(x, y)
        log[#log + 1] = "fill"
        return inner(x, y)
      end
    end
    return push_behind(chat_id, fn, a, b)
  end
  local ok, err = pcall(function()
    -- A cycle under way when the load begins: the collector's own steps
    -- started it (allocations past its threshold do the same).
    gc("restart")
    gc("step", 0)
    loaded(40):close()
  end)
  _G.collectgarbage = gc
  replay.push_behind = push_behind
  keep = nil
  assert(ok, err)
  local first_fill = assert(vim.tbl_contains(log, "fill") and vim.fn.index(log, "fill") + 1, "older turns drawn")
  T.truthy(
    vim.tbl_contains(vim.list_slice(log, 1, first_fill), "cycle ended"),
    ("the cycle under way was finished before the older turns were drawn (%d steps before them)"):format(first_fill - 1)
  )
  for i, what in ipairs(log) do
    if what == "fill" and log[i - 1] == "step" then
      error(("older turns drawn (entry %d of %d) in a slice that ended with a cycle still running"):format(i, #log))
    end
  end
  gc("restart")
end)

-- The end of a session drawn from the client's transcript while the agent
-- replays it (acp.chat.tail).

local tail = require("acp.chat.tail")
local history_mod = require("acp.agents.history")

--- Write a transcript of `changes` for session `id` of agent "demo", as
--- the backend writes one: a header, `session_started`, the changes with a
--- `turn_ended` after each turn.
---@param id string
---@param changes table[]
---@param header? table fields of the header to change
local function write_transcript(id, changes, header)
  local h = { type = "transcript", version = 2, agent_name = "demo", session_id = id, opening = "new", opened_at = 0 }
  for k, v in pairs(header or {}) do
    h[k] = v
  end
  local lines = { vim.json.encode(h), vim.json.encode({ type = "session_started", session_id = id }) }
  for i, c in ipairs(changes) do
    if i > 1 and c.change == "entry_added" and c.entry.type == "user_message" then
      lines[#lines + 1] = vim.json.encode({ type = "turn_ended", stop_reason = "end_turn" })
    end
    lines[#lines + 1] = vim.json.encode({ type = "session", change = c })
  end
  lines[#lines + 1] = vim.json.encode({ type = "turn_ended", stop_reason = "end_turn" })
  local path = history_mod.path_for("demo", id)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ":h"), "p")
  vim.fn.writefile(lines, path)
end

--- The replay cut differently from the live stream: each text append in two.
local function rechunked(changes)
  local out = {}
  for _, c in ipairs(changes) do
    local t = c.change == "text_appended" and c.content.text
    if t and #t > 1 then
      local half = math.floor(#t / 2)
      out[#out + 1] = { change = "text_appended", index = c.index, content = text(t:sub(1, half)) }
      out[#out + 1] = { change = "text_appended", index = c.index, content = text(t:sub(half + 1)) }
    else
      out[#out + 1] = c
    end
  end
  return out
end

--- Open a chat loading session `id` (resuming it with `resume`); returns
--- it and the lines it showed before any event once the transcript's end
--- was drawn (in slices right after open() returns: its last turn at the
--- tail, the older ones above).
---@param id string
---@param resume? boolean
local function open_load(id, resume)
  local chat = assert(require("acp").open({
    agent = "demo",
    cwd = T.root,
    load_session_id = not resume and id or nil,
    resume_session_id = resume and id or nil,
  }))
  -- How often what was drawn went (acp.chat.tail: the replay differed).
  chat.resets = 0
  local reset = chat.transcript.reset
  chat.transcript.reset = function(...)
    chat.resets = chat.resets + 1
    return reset(...)
  end
  T.wait(function()
    return not replay.pending(chat.chat_id) and not replay.filling(chat.chat_id)
  end, "the transcript's end drawn")
  return chat, T.lines(chat.bufnr)
end

--- The agent replays `changes` (answering the load unless `no_answer`);
--- waits until everything is drawn.
local function replay_into(chat, changes, no_answer)
  feed(chat, changes, not no_answer and T.session_started(chat) or nil)
  T.wait(function()
    return not tail.shown(chat.chat_id)
      and not backlog.holding(chat.chat_id)
      and not replay.pending(chat.chat_id)
      and not replay.filling(chat.chat_id)
  end, "the replay reconciled and drawn")
end

--- Lines of the lines `lines` that are `line`.
local function count(lines, line)
  local n = 0
  for _, l in ipairs(lines) do
    n = n + (l == line and 1 or 0)
  end
  return n
end

T.test(
  "the end of a session is drawn from its transcript at once; the replay saying the same adds only the older turns",
  function()
    local changes = history(6)
    write_transcript("tail-same", changes)
    local want = draw(changes, false).lines
    local chat, shown = open_load("tail-same")
    local text_now = table.concat(shown, "\n")
    T.contains(text_now, "question 6", "the last turn on screen before any event")
    T.contains(text_now, "question 4", "the last three turns")
    T.not_contains(text_now, "question 3", "not more")
    T.not_contains(text_now, "— end turn —", "drawn as the replay draws it: the conversation only")
    replay_into(chat, rechunked(changes))
    local lines = T.lines(chat.bufnr)
    T.eq(shown, vim.list_slice(lines, #lines - #shown + 1), "what was drawn stays, unmoved, at the end")
    T.eq(want, lines, "the whole history as the replay drawn in order: every turn once")
    T.eq(0, chat.resets, "the replay's last turns were not drawn again")
    T.eq(6, chat.transcript.turn, "the chat counts every turn")
    chat:close()
  end
)

T.test(
  "a replay that differs from the transcript's end (the session went on elsewhere) is drawn in its place",
  function()
    local changes = history(6)
    write_transcript("tail-more", changes)
    local want7 = draw(history(7), false).lines
    local chat, shown = open_load("tail-more")
    T.contains(table.concat(shown, "\n"), "question 6", "the transcript's end drawn")
    replay_into(chat, history(7))
    T.eq(want7, T.lines(chat.bufnr), "exactly the replay, drawn as in order: nothing twice, nothing lost")
    T.eq(1, chat.resets, "what was drawn went")
    chat:close()

    -- The agent's last answer differs from the transcript's (the transcript
    -- lost its last write).
    local other = history(6)
    for _, c in ipairs(other) do
      if c.change == "text_appended" and c.content.text:find("local x = 6", 1, true) then
        c.content = text("Some other text.\n")
      end
    end
    local want_other = draw(other, false).lines
    chat = open_load("tail-more")
    replay_into(chat, other)
    T.eq(want_other, T.lines(chat.bufnr), "the replay's version, drawn in place")
    T.eq(1, chat.resets, "what was drawn went")
    chat:close()
  end
)

T.test("the transcript's end is reconciled when the agent never answers; kept when it replays nothing", function()
  local changes = history(5)
  write_transcript("tail-quiet", changes)
  backlog.QUIET_MS = 50
  local chat, shown = open_load("tail-quiet")
  replay_into(chat, changes, true)
  local lines = T.lines(chat.bufnr)
  T.eq(shown, vim.list_slice(lines, #lines - #shown + 1), "what was drawn stays")
  T.eq(0, chat.resets, "and was not drawn again")
  T.eq(draw(changes, false).lines, lines, "the whole history as in order")
  for i = 1, 5 do
    T.eq(1, count(lines, "question " .. i), ("turn %d once"):format(i))
  end
  backlog.QUIET_MS = 500
  chat:close()

  chat, shown = open_load("tail-quiet")
  replay_into(chat, {})
  T.eq(shown, T.lines(chat.bufnr), "an agent that replays nothing: the transcript's end stays")
  chat:close()
end)

T.test(
  "the transcript's end: nothing drawn in open(), then its last turn, then the older ones above, newest first, without moving the view",
  function()
    local changes = history(6)
    write_transcript("tail-sliced", changes)
    tail.SLICED = false
    local whole_chat, whole = open_load("tail-sliced")
    whole_chat:close()
    tail.SLICED = true
    local order = {}
    local push_behind = replay.push_behind
    replay.push_behind = function(chat_id, fn, job, ...)
      if type(job) == "table" and job.run then
        order[#order + 1] = job.run.changes[1].entry.content[1].text
      end
      return push_behind(chat_id, fn, job, ...)
    end
    local chat = assert(require("acp").open({ agent = "demo", cwd = T.root, load_session_id = "tail-sliced" }))
    replay.push_behind = push_behind
    T.eq({ "" }, T.lines(chat.bufnr), "open() draws nothing itself: it returns at once")
    local resets = 0
    local reset = chat.transcript.reset
    chat.transcript.reset = function(...)
      resets = resets + 1
      return reset(...)
    end
    T.eq({ "question 5", "question 4" }, order, "the older turns queued newest first")
    -- What the window showed as the first older turn started to fill in.
    local win = vim.fn.bufwinid(chat.bufnr)
    local function top_line()
      local top = api.nvim_win_call(win, function()
        return vim.fn.line("w0")
      end)
      return table.concat(vim.list_slice(T.lines(chat.bufnr), top, top + 2), "\n")
    end
    local first_older
    local draw_older = backlog.draw_older
    backlog.draw_older = function(job)
      first_older = first_older or { lines = T.lines(chat.bufnr), top = top_line() }
      return draw_older(job)
    end
    T.wait(function()
      return not replay.pending(chat.chat_id) and not replay.filling(chat.chat_id)
    end, "the older turns drawn")
    backlog.draw_older = draw_older
    local at_once = assert(first_older, "older turns drawn above").lines
    local text_now = table.concat(at_once, "\n")
    T.contains(text_now, "question 6", "the last turn on screen first, in slices right after open()")
    T.not_contains(text_now, "question 5", "the older turns after it")
    local lines = T.lines(chat.bufnr)
    T.eq(whole, lines, "the same lines as the three turns drawn at once")
    T.eq(first_older.top, top_line(), "the window shows the same line at its top")
    T.eq(vim.list_slice(lines, #lines - #at_once + 1), at_once, "the last turn stayed where it was drawn")
    local turns = {}
    for _, block in ipairs(chat.transcript.session_prompts) do
      turns[#turns + 1] = block.data.prompt_turn
    end
    T.eq({ 1, 2, 3 }, turns, "the prompts numbered in order, oldest first")
    T.eq(3, chat.transcript.prompt_turn, "the chat counts them")
    replay_into(chat, rechunked(changes))
    T.eq(draw(changes, false).lines, T.lines(chat.bufnr), "the replay adds only the older turns")
    T.eq(0, resets, "what was drawn stayed")
    chat:close()
  end
)

T.test(
  "a resumed session (no replay) shows the transcript's end and keeps it; its prompts are not numbered turns",
  function()
    local changes = history(5)
    write_transcript("tail-resume", changes)
    local chat, shown = open_load("tail-resume", true)
    local text_now = table.concat(shown, "\n")
    T.contains(text_now, "question 5", "the last turn drawn")
    T.contains(text_now, "question 3", "the last three turns")
    T.not_contains(text_now, "question 2", "not more")
    T.eq(false, tail.shown(chat.chat_id), "nothing waits for a replay")
    T.eq(nil, chat.transcript.prompt_turn, "the resumed prompts are not counted as the chat's turns")
    events.dispatch({ T.session_started(chat, "tail-resume") })
    T.wait(function()
      return chat.status == "ready"
    end, "the session started")
    T.eq(shown, T.lines(chat.bufnr), "what was drawn stays")
    T.eq(0, chat.resets, "and was not drawn again")
    chat:close()
  end
)

T.test("hostile transcripts: another session's, another format, cut or garbled lines", function()
  local changes = history(4)
  -- The file at the session's path names another session.
  write_transcript("tail-h1", changes, { session_id = "someone-else" })
  local chat, shown = open_load("tail-h1")
  T.eq({ "" }, shown, "nothing drawn from a file of another session")
  replay_into(chat, changes)
  T.eq(draw(changes, false).lines, T.lines(chat.bufnr), "the replay drawn as usual")
  chat:close()
  -- An older format (camelCase records): not drawn.
  write_transcript("tail-h2", changes, { version = 1 })
  chat, shown = open_load("tail-h2")
  T.eq({ "" }, shown, "nothing drawn from an older format")
  chat:close()
  -- Garbage and a half-written last line: skipped; the turns drawn.
  write_transcript("tail-h3", changes)
  local path = history_mod.path_for("demo", "tail-h3")
  local f = assert(io.open(path, "a"))
  f:write('not json\n[1,2]\n{"type":"session","change":{"change":"entry_added","ind')
  f:close()
  chat, shown = open_load("tail-h3")
  T.contains(table.concat(shown, "\n"), "question 4", "the turns drawn despite the garbage")
  replay_into(chat, changes)
  local lines = T.lines(chat.bufnr)
  for i = 1, 4 do
    T.eq(1, count(lines, "question " .. i), ("turn %d once"):format(i))
  end
  chat:close()
  -- Turns longer than the first read: read again from further back.
  tail.FIRST_BYTES = 64
  chat, shown = open_load("tail-h3")
  tail.FIRST_BYTES = 64 * 1024
  T.contains(table.concat(shown, "\n"), "question 2", "three turns found reading back from the end")
  T.not_contains(table.concat(shown, "\n"), "question 1", "and no more")
  chat:close()
  -- A session id that would leave the directory names a file inside it.
  T.truthy(
    vim.startswith(history_mod.path_for("../../x", "../../../etc/passwd"), history_mod.dir() .. "/"),
    "paths stay under the transcripts directory"
  )
  T.eq(history_mod.dir() .. "/_.._._x/_.._.._etc_passwd.jsonl", history_mod.path_for("../.:x", "../../etc/passwd"))
  -- One `_` per character, as the backend writes it (not per byte).
  T.eq(history_mod.dir() .. "/a_b/s_.jsonl", history_mod.path_for("aéb", "sé"))
end)

T.run()
