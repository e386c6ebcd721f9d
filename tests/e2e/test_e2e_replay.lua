-- End to end: history drawn in slices (acp.replay). A session/load replay
-- and a reopened transcript render the same lines in the same order whether
-- drawn at once or a slice per event, and the prompt takes a prompt while
-- the history is still being drawn (it is sent after, its answer below it).
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
vim.o.columns = 200

local replay = require("acp.replay")
local dir = T.tmpdir()

-- Everything a turn can show (markdown, a table, a code block, a plan, a tool
-- call with output), so slicing has to keep every kind of block whole.
local turn = {
  steps = {
    { type = "thought", text = "Thinking about {{prompt}}.", chunkSize = 4 },
    { type = "text", text = "# About {{prompt}}\n\nA paragraph on **{{prompt}}**.\n\n", chunkSize = 7 },
    { type = "text", text = "| a | b |\n|---|---|\n| 1 | 2 |\n\n```lua\nlocal x = 1\nprint(x)\n```\n", chunkSize = 5 },
    { type = "plan", entries = {
      { content = "Read", priority = "high", status = "completed" },
      { content = "Write", priority = "medium", status = "in_progress" },
    } },
    { type = "toolCall", toolCallId = "t-{{prompt}}", title = "Read notes", kind = "read", status = "pending" },
    { type = "toolCallUpdate", toolCallId = "t-{{prompt}}", status = "completed",
      content = { { type = "content", content = { type = "text", text = "notes read\nsecond line" } } } },
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
for i = 1, 8 do
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

--- Load the session with slices of `ms`; returns the chat once it is ready and
--- its history is drawn, and how many items were queued for later slices.
local function load(ms)
  replay.SLICE_MS = ms
  local push = replay.push
  local queued = 0
  replay.push = function(...)
    queued = queued + 1
    return push(...)
  end
  local chat = assert(require("acp").open({ agent = next_agent(), cwd = dir, load_session_id = session_id }))
  -- Whole: the backend can hand session_started over before the last
  -- replayed updates (a race of its own, seen once under heavy load), so
  -- "ready" alone does not mean the history is all there.
  T.wait(function()
    return chat.status == "ready"
      and not replay.pending(chat.chat_id)
      and T.text(chat.bufnr):find("Done with six.", 1, true) ~= nil
  end, "the loaded session ready; transcript:\n" .. T.text(chat.bufnr))
  replay.push = push
  replay.SLICE_MS = 4
  return chat, queued
end

T.test("a session/load replay drawn a slice per event renders what the one-shot replay rendered", function()
  local once, queued_once = load(math.huge)
  local expected = norm(T.lines(once.bufnr))
  once:close()
  T.eq(0, queued_once, "one slice: nothing queued")
  T.contains(table.concat(expected, "\n"), "Done with six.", "the whole history is there")

  local sliced, queued = load(0)
  T.truthy(queued > 10, ("the replay was sliced (%d items queued)"):format(queued))
  T.eq(expected, norm(T.lines(sliced.bufnr)), "same lines, same order")
  sliced:close()
end)

T.test("the prompt takes a prompt while the history is drawn; it is answered below the history", function()
  local once = load(math.huge)
  local history = norm(T.lines(once.bufnr))
  once:close()

  replay.SLICE_MS = 0
  local chat = assert(require("acp").open({ agent = next_agent(), cwd = dir, load_session_id = session_id }))
  -- Between two slices, once the third turn is on screen, the user types a
  -- prompt and sends it (what a key typed then would run).
  local sent
  vim.api.nvim_buf_attach(chat.bufnr, false, {
    on_lines = function(_, buf, _, first, _, last)
      for _, l in ipairs(vim.api.nvim_buf_get_lines(buf, first, last, false)) do
        if l:find("About three", 1, true) then
          vim.schedule(function()
            vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { "seven" })
            sent = {
              pending = replay.pending(chat.chat_id),
              whole = T.text(chat.bufnr):find("Done with six.", 1, true) ~= nil,
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
  T.truthy(sent.pending, "sent while the history was still being drawn")
  T.truthy(not sent.whole, "the history was not whole yet")
  T.truthy(sent.modifiable, "the prompt was editable")
  replay.SLICE_MS = 4
  T.wait_text(chat, "Done with seven.")
  local lines = norm(T.lines(chat.bufnr))
  T.eq(history, vim.list_slice(lines, 1, #history), "the history first, whole and in order")
  local after = table.concat(vim.list_slice(lines, #history + 1), "\n")
  T.contains(after, "seven", "the new prompt below the history")
  T.contains(after, "Done with seven.", "its answer below the history")
  chat:close()
end)

T.test("a transcript reopened a slice per line renders what the one-shot reopen rendered", function()
  T.truthy(transcript_path and vim.fn.filereadable(transcript_path) == 1, "the live chat wrote a transcript")
  local history = require("acp.history")
  replay.SLICE_MS = math.huge
  local once = assert(history.open_readonly(transcript_path))
  T.eq(false, replay.pending(once.chat_id), "one slice: drawn on return")
  local expected = T.lines(once.bufnr)
  once:close()
  T.contains(table.concat(expected, "\n"), "Done with six.", "the whole transcript is there")

  replay.SLICE_MS = 0
  local sliced = assert(history.open_readonly(transcript_path))
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
  local chat = assert(require("acp.history").open_readonly(transcript_path))
  T.truthy(replay.pending(chat.chat_id), "drawing")
  chat:close()
  T.wait(function()
    return not replay.pending(chat.chat_id)
  end, "the queue dropped")
  replay.SLICE_MS = 4
end)

T.run()
