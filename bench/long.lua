-- Long transcripts: the plugin's cost per streamed chunk and per tool call
-- status update, in a short transcript and in a long one. Drives the real
-- transcript code with hand-made backend events (no backend process), so
-- only the Lua rendering is measured.
--
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=.' -l bench/long.lua SHORT LONG
--
-- Prints `RESULT {json}` with microseconds per event at SHORT and LONG lines
-- already in the transcript. Budget: the long one within 20% of the short one.

local uv = vim.uv
local api = vim.api
local SHORT = tonumber(_G.arg[1]) or 1000
local LONG = tonumber(_G.arg[2]) or 200000
local REPS = 2000
local root = vim.fn.getcwd()

dofile(root .. "/plugin/acp.lua")
-- No backend: record nothing, answer everything.
local backend = require("acp.rpc.backend")
backend.notify = function()
  return true
end
backend.request = function()
  return true
end
backend.ensure = function()
  return true
end
backend.running = function()
  return true
end
local events = require("acp.events")

local function session(chat, change)
  return { type = "session", chat_id = chat.chat_id, change = change }
end

local function text(t)
  return { type = "text", text = t }
end

local function tool(status)
  return { id = "t1", title = "Run tests", kind = "execute", status = status }
end

--- A chat whose transcript has a tool call at the top and then `lines` lines
--- of agent text; returns it and the entry index of the agent message.
local function chat_with(lines)
  require("acp").setup({})
  local chat = require("acp").open({ agent = "demo", cwd = root, show = false })
  events.dispatch({
    {
      type = "session_started",
      chat_id = chat.chat_id,
      session_id = "s-" .. chat.chat_id,
      agent_name = "demo",
      capabilities = {},
    },
    session(
      chat,
      { change = "entry_added", index = 0, entry = vim.tbl_extend("force", { type = "tool_call" }, tool("pending")) }
    ),
    session(
      chat,
      { change = "entry_added", index = 1, entry = { type = "agent_message", content = { text("start\n") } } }
    ),
  })
  local line = string.rep("x", 79) .. "\n"
  local batch = {}
  for _ = 1, lines do
    batch[#batch + 1] = session(chat, { change = "text_appended", index = 1, content = text(line) })
    if #batch == 500 then
      events.dispatch(batch)
      batch = {}
    end
  end
  events.dispatch(batch)
  return chat
end

--- Microseconds per event for REPS events dispatched in batches of 100
--- (what the backend sends while streaming).
local function per_event_us(make)
  local t0 = uv.hrtime()
  local batch = {}
  for i = 1, REPS do
    batch[#batch + 1] = make(i)
    if #batch == 100 then
      events.dispatch(batch)
      batch = {}
    end
  end
  events.dispatch(batch)
  return (uv.hrtime() - t0) / 1e3 / REPS
end

local function measure(lines)
  local chat = chat_with(lines)
  local n = api.nvim_buf_line_count(chat.bufnr)
  local chunk = per_event_us(function(i)
    return session(chat, { change = "text_appended", index = 1, content = text(("chunk %d "):format(i)) })
  end)
  local status = per_event_us(function(i)
    return session(
      chat,
      { change = "tool_call_changed", index = 0, toolCall = tool(i % 2 == 0 and "pending" or "in_progress") }
    )
  end)
  chat:close()
  return { lines = n, chunk_us = chunk, tool_status_us = status }
end

local short = measure(SHORT)
local long = measure(LONG)
io.stdout:write("RESULT " .. vim.json.encode({
  short = short,
  long = long,
  chunk_ratio = long.chunk_us / short.chunk_us,
  tool_status_ratio = long.tool_status_us / short.tool_status_us,
}) .. "\n")
os.exit(0)
