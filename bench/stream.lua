-- Streaming into Neovim end to end: a real headless Neovim with the plugin,
-- the release backend and the fake agent. Also measures start-up.
--
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=.' -l bench/stream.lua COUNT BYTES [MODE]
--
-- MODE `lines` (default): the agent streams COUNT chunks of BYTES bytes, each
-- ending in a newline (prose and code arrive as lines). MODE `burst`: the fake
-- agent's `burst` step, COUNT identical chunks of BYTES letters and no newline,
-- so the whole answer is ONE line that grows with every chunk.
--
-- Prints one line `RESULT {json}`: wall time from the prompt to the batch
-- that put the last byte in the transcript, Neovim's CPU time for it
-- (vim.uv.getrusage), the event-loop stall (lateness of a 5 ms repeating
-- timer), the same CPU measure for the cheapest pure-Lua loop (vim.json.decode
-- of each JSON line, append to a buffer), start-up times and backend RSS.

local uv = vim.uv
local api = vim.api

local COUNT = tonumber(_G.arg[1]) or 20000
local BYTES = tonumber(_G.arg[2]) or 100
local MODE = _G.arg[3] or "lines"
local root = vim.fn.getcwd()
local release = root .. "/target/release/"

local function out(line)
  io.stdout:write(line .. "\n")
  io.stdout:flush()
end

local function fail(msg)
  out("ERROR " .. msg)
  os.exit(1)
end

local function wait(pred, what, timeout)
  if not vim.wait(timeout or 600000, pred, 1) then
    fail("timed out waiting for " .. what)
  end
end

local function cpu_seconds()
  local r = uv.getrusage()
  return r.utime.sec + r.utime.usec / 1e6 + r.stime.sec + r.stime.usec / 1e6
end

--- VmRSS (or another Vm field) of a process, in KiB.
local function vm_kib(pid, field)
  local f = io.open(("/proc/%d/status"):format(pid), "r")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  return tonumber(s:match(field .. ":%s*(%d+)"))
end

-- The chunk text: BYTES ASCII letters, or BYTES - 1 letters and "\n".
local letters = string.rep("abcdefghijklmnopqrstuvwxyz", math.ceil(BYTES / 26) + 1)
local chunk = MODE == "burst" and letters:sub(1, BYTES) or (letters:sub(1, BYTES - 1) .. "\n")
local payload_mb = COUNT * BYTES / 1e6

-- ---------------------------------------------------------------------------
-- Baseline: the cheapest pure-Lua loop over the same wire lines.

local function baseline()
  local line = vim.json.encode({
    jsonrpc = "2.0",
    method = "session/update",
    params = {
      sessionId = "bench",
      update = { sessionUpdate = "agent_message_chunk", content = { type = "text", text = chunk } },
    },
  })
  local buf = api.nvim_create_buf(false, true)
  -- Like the transcript: no undo history to keep.
  vim.bo[buf].undolevels = -1
  local row, col = 0, 0
  local c0 = cpu_seconds()
  for _ = 1, COUNT do
    local text = vim.json.decode(line).params.update.content.text
    local parts = vim.split(text, "\n", { plain = true })
    api.nvim_buf_set_text(buf, row, col, row, col, parts)
    if #parts == 1 then
      col = col + #parts[1]
    else
      row = row + #parts - 1
      col = #parts[#parts]
    end
  end
  local cpu = cpu_seconds() - c0
  api.nvim_buf_delete(buf, { force = true })
  return cpu
end

-- ---------------------------------------------------------------------------
-- The plugin.

dofile(root .. "/plugin/acp.lua")
local dir = vim.fn.resolve(vim.fn.tempname())
vim.fn.mkdir(dir, "p")

local steps
if MODE == "burst" then
  steps = { { type = "burst", count = COUNT, bytes = BYTES } }
else
  steps = { { type = "text", text = string.rep(chunk, COUNT), chunkSize = BYTES } }
end
local scenario = dir .. "/scenario.json"
local f = assert(io.open(scenario, "w"))
f:write(vim.json.encode({ recordHistory = false, turns = { { steps = steps } } }))
f:close()

require("acp").setup({
  agents = { bench = { cmd = { release .. "acp-fake-agent", "--scenario", scenario } } },
  backend = { cmd = { release .. "acp-nvim" } },
})

-- Start-up: backend spawn to `acp.hello` answered, then open to session_started.
local backend = require("acp.rpc.backend")
local t_spawn = uv.hrtime()
local ok, err = backend.ensure()
if not ok then
  fail("backend did not start: " .. tostring(err))
end
local hello_ms = (uv.hrtime() - t_spawn) / 1e6
local backend_pid = vim.fn.jobpid(backend.channel())
wait(function()
  return vm_kib(backend_pid, "VmRSS") ~= nil
end, "backend /proc entry", 5000)
local idle_rss = vm_kib(backend_pid, "VmRSS")

local t_open = uv.hrtime()
local chat = require("acp").open({ agent = "bench", cwd = dir })
if not chat then
  fail("open failed")
end
wait(function()
  return chat.session_id ~= nil
end, "session_started", 30000)
local open_ms = (uv.hrtime() - t_open) / 1e6

-- Time of the end of the batch that ended the turn: all text of the turn
-- arrived in that batch or earlier (batches are in order).
local events = require("acp.events")
local dispatch = events.dispatch
local t_last, batches, max_batch = nil, 0, 0
events.dispatch = function(evs)
  dispatch(evs)
  batches = batches + 1
  max_batch = math.max(max_batch, #(evs or {}))
  for _, ev in ipairs(evs or {}) do
    if ev.type == "turn_ended" then
      t_last = uv.hrtime()
    end
  end
end

-- Event-loop stall: how late a 5 ms repeating timer fires while streaming.
local lateness = {}
local timer = assert(uv.new_timer())
local prev
timer:start(5, 5, function()
  local now = uv.hrtime()
  if prev then
    lateness[#lateness + 1] = math.max(0, (now - prev) / 1e6 - 5)
  end
  prev = now
end)

local c0 = cpu_seconds()
local t0 = uv.hrtime()
chat:send({ { type = "text", text = "go" } })
wait(function()
  return t_last ~= nil
end, "the turn to end")
local wall_ms = (t_last - t0) / 1e6
local cpu = cpu_seconds() - c0
timer:stop()
timer:close()
local stream_rss = vm_kib(backend_pid, "VmRSS")
local backend_hwm = vm_kib(backend_pid, "VmHWM")

-- Nothing lost: every letter of every chunk is in the transcript.
local letters_seen = 0
for _, l in ipairs(api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)) do
  local _, n = l:gsub("[a-z]", "")
  letters_seen = letters_seen + n
end
local _, per_chunk = chunk:gsub("[a-z]", "")
if letters_seen < COUNT * per_chunk then
  fail(("the transcript has %d letters, expected at least %d"):format(letters_seen, COUNT * per_chunk))
end

table.sort(lateness)
local function pct(p)
  if #lateness == 0 then
    return 0
  end
  return lateness[math.max(1, math.ceil(#lateness * p))]
end

local base_cpu = baseline()
pcall(backend.stop)

out("RESULT " .. vim.json.encode({
  mode = MODE,
  count = COUNT,
  bytes = BYTES,
  payload_mb = payload_mb,
  wall_ms = wall_ms,
  cpu_s = cpu,
  cpu_s_per_mb = cpu / payload_mb,
  baseline_cpu_s = base_cpu,
  baseline_cpu_s_per_mb = base_cpu / payload_mb,
  cpu_ratio = cpu / base_cpu,
  stall_max_ms = lateness[#lateness] or 0,
  stall_p99_ms = pct(0.99),
  timer_samples = #lateness,
  batches = batches,
  max_batch = max_batch,
  hello_ms = hello_ms,
  open_ms = open_ms,
  backend_idle_rss_kib = idle_rss,
  backend_rss_after_kib = stream_rss,
  backend_hwm_kib = backend_hwm,
}))
os.exit(0)
