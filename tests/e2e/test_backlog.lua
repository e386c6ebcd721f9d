-- A loaded session's history drawn newest turn first (acp.backlog) from
-- hand-made replays (no backend): an agent whose later turns change what an
-- earlier turn made (a tool call updated, a plan replaced, a message of the
-- first turn appended to from every turn) still gets exactly the lines,
-- marks and folds of the in-order drawing.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local events = require("acp.events")
local replay = require("acp.replay")
local backlog = require("acp.backlog")
local api = vim.api

T.fake_backend()
vim.o.columns = 200
require("acp").setup({})

local function text(t)
  return { type = "text", text = t }
end

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
  replay.push_behind = function(...)
    behind = behind + 1
    return push_behind(...)
  end
  local chat = assert(require("acp").open({ agent = "demo", cwd = T.root }))
  local evs = {}
  for _, c in ipairs(changes) do
    evs[#evs + 1] = { type = "session", chat_id = chat.chat_id, change = c }
  end
  events.dispatch(evs)
  events.dispatch({
    {
      type = "session_started",
      chat_id = chat.chat_id,
      session_id = "s-" .. chat.chat_id,
      agent_name = "demo",
      capabilities = {},
    },
  })
  T.wait(function()
    return chat.status == "ready" and not replay.pending(chat.chat_id) and not replay.filling(chat.chat_id)
  end, "the history drawn")
  replay.push_behind = push_behind
  replay.SLICE_MS = 4
  backlog.NEWEST_FIRST = true
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

T.run()
