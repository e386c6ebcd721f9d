-- End to end: history drawn in slices (acp.chat.replay), a loaded session's
-- newest turn first (acp.chat.backlog). A session/load replay and a reopened
-- transcript render the same lines, marks and folds in the same order
-- whether drawn in order at once, a slice per event or newest first; the
-- last turn and the prompt come first and the older turns fill in above
-- without moving the view; a prompt sent while the history is still being
-- drawn is answered below it.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
vim.o.columns = 200

local replay = require("acp.chat.replay")
local backlog = require("acp.chat.backlog")
local dir = T.tmpdir()

-- Everything a turn can show (markdown, a table, a code block, a plan, a tool
-- call with output), so slicing has to keep every kind of block whole.
local turn = {
  steps = {
    { type = "thought", text = "Thinking about {{prompt}}.", chunkSize = 4 },
    { type = "text", text = "# About {{prompt}}\n\nA paragraph on **{{prompt}}**.\n\n", chunkSize = 7 },
    { type = "text", text = "| a | b |\n|---|---|\n| 1 | 2 |\n\n```lua\nlocal x = 1\nprint(x)\n```\n", chunkSize = 5 },
    {
      type = "plan",
      entries = {
        { content = "Read", priority = "high", status = "completed" },
        { content = "Write", priority = "medium", status = "in_progress" },
      },
    },
    { type = "toolCall", toolCallId = "t-{{prompt}}", title = "Read notes", kind = "read", status = "pending" },
    {
      type = "toolCallUpdate",
      toolCallId = "t-{{prompt}}",
      status = "completed",
      content = { { type = "content", content = { type = "text", text = "notes read\nsecond line" } } },
    },
    { type = "text", text = "Done with {{prompt}}.", chunkSize = 3 },
  },
}

-- The same agent under several names: each load runs in an agent process of
-- its own. Loading a session right after closing it in the same process
-- raced the close (the backend's close could drop the new load's replay:
-- "updates for unknown session"), which is not what these tests are about.
local scenario = {
  sessionStore = dir .. "/long-store.json",
  replayUserMessages = true,
  turns = { turn },
}
local agents = { long = scenario }
for i = 1, 10 do
  agents["long" .. i] = scenario
end
T.setup_fake(agents, dir)
local used = 0
--- A fresh agent name for the next load.
local function next_agent()
  used = used + 1
  return "long" .. used
end

--- Transcript lines with the agent's heading made the same for every name.
local function norm(lines)
  local out = {}
  for i, l in ipairs(lines) do
    out[i] = l:match("^## long%d*$") and "## agent" or l
  end
  return out
end

local PROMPTS = { "one", "two", "three", "four", "five", "six" }

--- A live session of several turns, closed; returns its id and transcript path.
local function make_session()
  local live = T.open_chat("long", dir)
  for _, p in ipairs(PROMPTS) do
    T.eq("end_turn", T.turn(live, p), "turn " .. p)
  end
  local id, path = live.session_id, live.transcript_path
  live:close()
  return id, path
end

local session_id, transcript_path = make_session()

--- Load the session with slices of `ms`, newest turn first unless
--- `in_order`; returns the chat once it is ready and its history is drawn,
--- and how many items were queued for later slices.
---@param ms number
---@param in_order? boolean
local function load(ms, in_order)
  replay.SLICE_MS = ms
  backlog.NEWEST_FIRST = not in_order
  local push, push_behind = replay.push, replay.push_behind
  local queued = 0
  replay.push = function(...)
    queued = queued + 1
    return push(...)
  end
  replay.push_behind = function(...)
    queued = queued + 1
    return push_behind(...)
  end
  local chat = assert(require("acp").open({ agent = next_agent(), cwd = dir, load_session_id = session_id }))
  -- Whole: the backend can hand session_started over before the last
  -- replayed updates (a race of its own, seen once under heavy load), so
  -- "ready" alone does not mean the history is all there.
  local ok = pcall(T.wait, function()
    return chat.status == "ready"
      and not replay.pending(chat.chat_id)
      and not replay.filling(chat.chat_id)
      and T.text(chat.bufnr):find("Done with six.", 1, true) ~= nil
      and T.text(chat.bufnr):find("About one", 1, true) ~= nil
  end, "the loaded session ready; transcript:\n" .. T.text(chat.bufnr))
  if not ok then
    error(
      ("status %s pending %s filling %s\n%s"):format(
        chat.status,
        replay.pending(chat.chat_id),
        replay.filling(chat.chat_id),
        T.text(chat.bufnr)
      )
    )
  end
  replay.push, replay.push_behind = push, push_behind
  replay.SLICE_MS = 4
  backlog.NEWEST_FIRST = true
  return chat, queued
end

local api = vim.api

--- Every decoration of a buffer, as text that does not depend on extmark
--- ids or buffer numbers: namespace, position, range, highlight, conceal,
--- virtual text.
---@param buf integer
---@return string[]
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
      tostring(d.virt_text_pos),
      tostring(d.hl_eol),
    }, " ")
  end
  table.sort(out)
  return out
end

--- The closed folds of a window, as {first, last} lines.
---@param win integer
---@return integer[][]
local function folds(win)
  return api.nvim_win_call(win, function()
    local out = {}
    local l, count = 1, api.nvim_buf_line_count(0)
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

T.test("a history drawn newest turn first renders what the in-order replay rendered", function()
  local once, queued_once = load(math.huge, true)
  local expected = norm(T.lines(once.bufnr))
  local expected_decor = decorations(once.bufnr)
  local expected_folds = folds(once:transcript_wins()[1])
  once:close()
  T.eq(0, queued_once, "in order in one slice: nothing queued")
  T.contains(table.concat(expected, "\n"), "Done with six.", "the whole history is there")

  for _, ms in ipairs({ math.huge, 0, 4 }) do
    local chat, queued = load(ms)
    if ms == 0 then
      T.truthy(queued > 10, ("the replay was sliced (%d items queued)"):format(queued))
    end
    T.eq(expected, norm(T.lines(chat.bufnr)), ("same lines, same order (slices of %s ms)"):format(ms))
    -- The markdown of turns no window showed waits for one (View:draw_unseen).
    require("acp.chat.blocks").of(chat.bufnr):draw_unseen()
    T.eq(expected_decor, decorations(chat.bufnr), ("same highlights, markdown and marks (%s ms)"):format(ms))
    T.eq(expected_folds, folds(chat:transcript_wins()[1]), ("same folds (%s ms)"):format(ms))
    chat:close()
  end
end)

T.test(
  "the last turn is drawn and the prompt usable before the older turns; they fill in above without moving the view",
  function()
    local once = load(math.huge, true)
    local history = norm(T.lines(once.bufnr))
    once:close()

    -- The older turns are held back until the test lets them go.
    local held = {}
    local push_behind = replay.push_behind
    replay.push_behind = function(...)
      held[#held + 1] = { ... }
    end
    local chat = assert(require("acp").open({ agent = next_agent(), cwd = dir, load_session_id = session_id }))
    T.wait(function()
      return chat.status == "ready" and not replay.pending(chat.chat_id)
    end, "the chat ready")
    replay.push_behind = push_behind
    local text = T.text(chat.bufnr)
    T.contains(text, "About six", "the last turn is drawn")
    T.contains(text, "Done with six.", "the last turn is drawn to its end")
    T.not_contains(text, "About five", "older turns are not drawn yet")
    local waiting = 0
    for _, h in ipairs(held) do
      waiting = waiting + backlog.runs_in(h[2], h[4])
    end
    T.truthy(waiting == 6, ("five older turns and then their folds wait (%d)"):format(waiting))
    T.eq(
      norm(T.lines(chat.bufnr)),
      vim.list_slice(history, #history - #T.lines(chat.bufnr) + 1),
      "the last turn as in order"
    )
    T.truthy(vim.bo[chat.prompt_buf].modifiable, "the prompt takes input")

    -- The user sends a prompt at once: it is answered below the last turn.
    api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { "eight" })
    chat:submit()
    T.wait_text(chat, "Done with eight.")
    T.not_contains(T.text(chat.bufnr), "About five", "answered before the older turns were drawn")

    -- Then reads a line of the last turn, scrolled to the top of a small
    -- window, while the older turns are drawn (a change a slice).
    local win = chat:transcript_wins()[1]
    api.nvim_win_set_height(win, 6)
    local row = T.find_line(chat.bufnr, "About six")
    api.nvim_win_set_cursor(win, { row, 0 })
    api.nvim_win_call(win, function()
      vim.cmd("normal! zt")
    end)
    local function view()
      local v = api.nvim_win_call(win, vim.fn.winsaveview)
      return {
        top = api.nvim_buf_get_lines(chat.bufnr, v.topline - 1, v.topline, false)[1],
        cursor = api.nvim_buf_get_lines(chat.bufnr, v.lnum - 1, v.lnum, false)[1],
        col = v.col,
      }
    end
    local before = view()
    T.contains(before.top, "About six", "the view is on the last turn")
    replay.SLICE_MS = 0
    local moved = {}
    local function check()
      local now = view()
      if not vim.deep_equal(now, before) then
        moved[#moved + 1] = now
      end
    end
    for _, h in ipairs(held) do
      replay.push_behind(unpack(h))
      -- Looked at between slices too.
      replay.push_behind(chat.chat_id, check)
    end
    T.wait(function()
      return not replay.filling(chat.chat_id)
    end, "the older turns drawn")
    replay.SLICE_MS = 4
    T.eq({}, moved, "the window showed the same lines between slices")
    T.eq(before, view(), "the window shows the same lines")
    local lines = norm(T.lines(chat.bufnr))
    T.eq(history, vim.list_slice(lines, 1, #history), "the history first, whole and in order")
    local rest = table.concat(vim.list_slice(lines, #history + 1), "\n")
    T.contains(rest, "eight", "the new prompt below the history")
    T.contains(rest, "Done with eight.", "its answer below the history")
    chat:close()
  end
)

T.test("the prompt takes a prompt while the history is drawn; it is answered below the history", function()
  local once = load(math.huge, true)
  local history = norm(T.lines(once.bufnr))
  once:close()

  replay.SLICE_MS = 0
  local chat = assert(require("acp").open({ agent = next_agent(), cwd = dir, load_session_id = session_id }))
  -- Between two slices, once an older turn is on screen, the user types a
  -- prompt and sends it (what a key typed then would run).
  local sent
  vim.api.nvim_buf_attach(chat.bufnr, false, {
    on_lines = function(_, buf, _, first, _, last)
      for _, l in ipairs(vim.api.nvim_buf_get_lines(buf, first, last, false)) do
        if l:find("About three", 1, true) then
          vim.schedule(function()
            vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { "nine" })
            sent = {
              filling = replay.filling(chat.chat_id),
              whole = T.text(chat.bufnr):find("About one", 1, true) ~= nil,
              modifiable = vim.bo[chat.prompt_buf].modifiable,
            }
            chat:submit()
          end)
          return true
        end
      end
    end,
  })
  T.wait(function()
    return sent
  end, "the prompt sent half way")
  T.truthy(sent.filling, "sent while the history was still being drawn")
  T.truthy(not sent.whole, "the history was not whole yet")
  T.truthy(sent.modifiable, "the prompt was editable")
  T.wait_text(chat, "Done with nine.")
  T.wait(function()
    return not replay.filling(chat.chat_id)
  end, "the history drawn")
  replay.SLICE_MS = 4
  local lines = norm(T.lines(chat.bufnr))
  T.eq(history, vim.list_slice(lines, 1, #history), "the history first, whole and in order")
  local after = table.concat(vim.list_slice(lines, #history + 1), "\n")
  T.contains(after, "nine", "the new prompt below the history")
  T.contains(after, "Done with nine.", "its answer below the history")
  chat:close()
end)

T.test("a transcript reopened a slice per line renders what the one-shot reopen rendered", function()
  T.truthy(transcript_path and vim.fn.filereadable(transcript_path) == 1, "the live chat wrote a transcript")
  replay.SLICE_MS = math.huge
  local once = assert(require("acp.chat.readonly").open(transcript_path))
  T.eq(false, replay.pending(once.chat_id), "one slice: drawn on return")
  local expected = T.lines(once.bufnr)
  once:close()
  T.contains(table.concat(expected, "\n"), "Done with six.", "the whole transcript is there")

  replay.SLICE_MS = 0
  local sliced = assert(require("acp.chat.readonly").open(transcript_path))
  T.truthy(replay.pending(sliced.chat_id), "still drawing on return")
  T.truthy(#T.lines(sliced.bufnr) < #expected, "shown before it is whole")
  T.wait(function()
    return not replay.pending(sliced.chat_id)
  end, "the transcript drawn")
  replay.SLICE_MS = 4
  T.eq(expected, T.lines(sliced.bufnr), "same lines, same order")
  sliced:close()
end)

T.test("a chat closed while its history is drawn stops drawing it", function()
  replay.SLICE_MS = 0
  local chat = assert(require("acp.chat.readonly").open(transcript_path))
  T.truthy(replay.pending(chat.chat_id), "drawing")
  chat:close()
  T.wait(function()
    return not replay.pending(chat.chat_id)
  end, "the queue dropped")
  replay.SLICE_MS = 4
end)

T.test(
  "a session with a transcript shows its end at once; the agent's replay adds the older turns, none twice",
  function()
    -- A session of its own: the tests above went on with the first one.
    local id, live_path = make_session()
    -- The live chat's transcript, as the agent it is loaded with wrote it.
    local agent = next_agent()
    local lines = vim.fn.readfile(live_path)
    for i, l in ipairs(lines) do
      local r = vim.json.decode(l)
      if r.type == "transcript" then
        r.agent_name = agent
        lines[i] = vim.json.encode(r)
      end
    end
    local path = require("acp.agents.history").path_for(agent, id)
    vim.fn.mkdir(vim.fn.fnamemodify(path, ":h"), "p")
    vim.fn.writefile(lines, path)

    -- What the chat showed as the first older turn started to fill in
    -- above (the last turn is drawn first, in slices right after open()).
    local backlog = require("acp.chat.backlog")
    local draw_older = backlog.draw_older
    local shown
    local chat
    backlog.draw_older = function(job)
      shown = shown or T.lines(chat.bufnr)
      return draw_older(job)
    end
    chat = assert(require("acp").open({ agent = agent, cwd = dir, load_session_id = id }))
    local resets = 0
    local reset = chat.transcript.reset
    chat.transcript.reset = function(...)
      resets = resets + 1
      return reset(...)
    end
    T.wait(function()
      return chat.status == "ready"
        and not require("acp.chat.tail").shown(chat.chat_id)
        and not replay.pending(chat.chat_id)
        and not replay.filling(chat.chat_id)
    end, "the replay reconciled")
    backlog.draw_older = draw_older
    local text = table.concat(assert(shown, "older turns drawn above"), "\n")
    T.contains(text, "Done with six.", "the last turn drawn first")
    T.not_contains(text, "About one", "not the whole session")
    local got = T.lines(chat.bufnr)
    T.eq(shown, vim.list_slice(got, #got - #shown + 1), "the agent's replay said the same: what was drawn stays")
    T.eq(0, resets, "and was not drawn again")
    local last = 0
    for _, p in ipairs(PROMPTS) do
      local rows = {}
      for i, l in ipairs(got) do
        if l == "# About " .. p then
          rows[#rows + 1] = i
        end
      end
      T.eq(1, #rows, "turn " .. p .. " once")
      T.truthy(rows[1] > last, "turn " .. p .. " in order")
      last = rows[1]
    end
    chat:close()
  end
)

T.run()
