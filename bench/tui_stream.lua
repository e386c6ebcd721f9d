-- Streaming benchmark inside a real TUI Neovim (started by bench/tui.lua in
-- tmux, with the ordinary config of bench/tui_init.lua). One client per run:
--
--   ACP_BENCH_CLIENT  acp | cheap | codecompanion | agentic
--   ACP_BENCH_COUNT   chunks (default 20000), ACP_BENCH_BYTES bytes each (100)
--   ACP_BENCH_OUT     file that gets the line `RESULT {json}` (or `ERROR msg`)
--
-- The fake agent streams COUNT chunks of BYTES bytes (BYTES - 1 letters and
-- a newline) into the client's chat window, which follows the tail. Measured
-- from the prompt to the end of the turn, while Neovim runs its event loop
-- and redraws as it would for a user (nothing here waits with vim.wait):
--   wall_ms             prompt sent to the turn's end handled
--   nvim_cpu_s          this Neovim (the server process) + its TUI process
--   backend_cpu_s       the acp.nvim backend (0 for the others: in-process)
--   schedule_max_ms     longest wait of a vim.schedule callback queued every
--                       5 ms (the stall a user feels as a frozen editor)
--   redraw_max_ms       longest redraw: a decoration provider's on_start..on_end
--   redraws             redraws during the stream
--   screen_updates      redraws that drew new text of the chat
--   update_gap_max_ms   longest time between two of those from the first
--                       line of streamed text on (not the echo of the prompt)
--
-- `cheap` is the cheapest possible pure-Lua client: it spawns the agent,
-- decodes each line and appends the text of each pipe read to a buffer with
-- one nvim_buf_set_text, no other UI.

local uv = vim.uv
local api = vim.api

local root = vim.fn.getcwd()
local release = root .. "/target/release/"
-- The plugin measured: this checkout, or another one (a "before" run).
local plugin_root = (os.getenv("ACP_BENCH_PLUGIN") or "") ~= "" and os.getenv("ACP_BENCH_PLUGIN") or root
local CLIENT = os.getenv("ACP_BENCH_CLIENT") or "acp"
local COUNT = tonumber(os.getenv("ACP_BENCH_COUNT")) or 20000
local BYTES = tonumber(os.getenv("ACP_BENCH_BYTES")) or 100
local OUT = os.getenv("ACP_BENCH_OUT") or (root .. "/target/bench-results/tui.out")

local function write_out(line)
  local f = assert(io.open(OUT, "w"))
  f:write(line .. "\n")
  f:close()
end

local function fail(msg)
  write_out("ERROR " .. CLIENT .. ": " .. msg)
  vim.cmd("qall!")
end

local letters = string.rep("abcdefghijklmnopqrstuvwxyz", math.ceil(BYTES / 26) + 1)
local chunk = letters:sub(1, BYTES - 1) .. "\n"
local dir = vim.fn.resolve(vim.fn.tempname())
vim.fn.mkdir(dir, "p")
local scenario = dir .. "/scenario.json"
do
  local turns = {
    { match = "warm", steps = { { type = "text", text = "ready" } } },
    { steps = { { type = "text", text = string.rep(chunk, COUNT), chunkSize = BYTES } } },
  }
  local f = assert(io.open(scenario, "w"))
  f:write(vim.json.encode({ recordHistory = false, turns = turns }))
  f:close()
end
local AGENT = release .. "acp-fake-agent"

--- CPU seconds of a process, every thread (/proc/PID/task/*/schedstat:
--- nanoseconds on a CPU, finer than the 10 ms ticks of /proc/PID/stat).
local function proc_cpu(pid)
  if not pid then
    return 0
  end
  local ns = 0
  for name in vim.fs.dir(("/proc/%d/task"):format(pid)) do
    local f = io.open(("/proc/%d/task/%s/schedstat"):format(pid, name), "r")
    if f then
      ns = ns + (tonumber(f:read("*a"):match("^(%d+)")) or 0)
      f:close()
    end
  end
  return ns / 1e9
end

local function self_cpu()
  local r = uv.getrusage()
  return r.utime.sec + r.utime.usec / 1e6 + r.stime.sec + r.stime.usec / 1e6
end

--- Poll `pred` every 10 ms from the event loop, then call `k`.
local function when(pred, what, k, timeout)
  local t0 = uv.hrtime()
  local timer = assert(uv.new_timer())
  timer:start(10, 10, function()
    vim.schedule(function()
      if timer:is_closing() then
        return
      end
      local ok, v = pcall(pred)
      if ok and v then
        timer:stop()
        timer:close()
        k()
      elseif (uv.hrtime() - t0) / 1e6 > (timeout or 600000) then
        timer:stop()
        timer:close()
        fail("timed out waiting for " .. what)
      end
    end)
  end)
end

-- ---------------------------------------------------------------------------
-- Meters.

local meter = { on = false, checks = {} }
local provider_ns = api.nvim_create_namespace("acp.bench.redraw")

function meter.start(buf)
  meter.buf = buf
  meter.on = true
  meter.redraws, meter.updates, meter.redraw_max, meter.gap_max = 0, 0, 0, 0
  meter.sched_max, meter.sched_n = 0, 0
  meter.last_tick = api.nvim_buf_get_changedtick(buf)
  meter.last_update = nil
  meter.first_text = nil
  meter.stream_start = nil
  -- The stream starts with the first line of the agent's letters (not the
  -- echo of the prompt): gaps are counted from there.
  api.nvim_buf_attach(buf, false, {
    on_lines = function(_, b, _, first, _, last_new)
      if meter.first_text then
        return true
      end
      if meter.t0 then
        for _, l in ipairs(api.nvim_buf_get_lines(b, first, last_new, false)) do
          if l:find("abcdefghij", 1, true) then
            meter.stream_start = uv.hrtime()
            meter.first_text = (meter.stream_start - meter.t0) / 1e6
            return true
          end
        end
      end
    end,
  })
  meter.timer = assert(uv.new_timer())
  meter.timer:start(5, 5, function()
    local t = uv.hrtime()
    local c0 = os.clock()
    vim.schedule(function()
      local now = uv.hrtime()
      -- The bench's own scans of the chat (check_letters, 0.3 s at 100,000
      -- lines) inside the wait are not the client's.
      local own = 0
      for _, c in ipairs(meter.checks) do
        own = own + math.max(0, math.min(now, c[2]) - math.max(t, c[1]))
      end
      local d = (now - t - own) / 1e6
      if d > 16 and meter.on and meter.t0 then
        meter.waits = meter.waits or {}
        table.insert(meter.waits, { (t - meter.t0) / 1e6, d, (os.clock() - c0) * 1e3 })
      end
      meter.sched_n = meter.sched_n + 1
      if meter.on and d > meter.sched_max then
        meter.sched_max = d
      end
    end)
  end)
end

local redraw_t0
api.nvim_set_decoration_provider(provider_ns, {
  on_start = function()
    redraw_t0 = uv.hrtime()
  end,
  on_end = function()
    if not meter.on or not redraw_t0 then
      return
    end
    local now = uv.hrtime()
    local d = (now - redraw_t0) / 1e6
    meter.redraws = meter.redraws + 1
    if d > meter.redraw_max then
      meter.redraw_max = d
    end
    local tick = api.nvim_buf_get_changedtick(meter.buf)
    if tick ~= meter.last_tick then
      meter.last_tick = tick
      meter.updates = meter.updates + 1
      local streaming = meter.stream_start and meter.last_update and meter.last_update >= meter.stream_start
      if streaming and (now - meter.last_update) / 1e6 > meter.gap_max then
        meter.gap_max = (now - meter.last_update) / 1e6
        meter.gap_end = meter.t0 and (now - meter.t0) / 1e6
      end
      meter.last_update = now
    end
  end,
})

function meter.stop()
  meter.on = false
  meter.timer:stop()
  meter.timer:close()
end

--- Every letter of every chunk is in the buffer.
local check_letters0
local function check_letters(buf)
  local t = uv.hrtime()
  local err = check_letters0(buf)
  meter.checks[#meter.checks + 1] = { t, uv.hrtime() }
  return err
end
check_letters0 = function(buf)
  local seen = 0
  for _, l in ipairs(api.nvim_buf_get_lines(buf, 0, -1, false)) do
    if l:match("^abc") then
      local _, k = l:gsub("[a-z]", "")
      seen = seen + k
    end
  end
  local _, per_chunk = chunk:gsub("[a-z]", "")
  if seen < COUNT * per_chunk then
    return ("the chat has %d letters, expected at least %d"):format(seen, COUNT * per_chunk)
  end
end

-- ---------------------------------------------------------------------------
-- Clients: open(k) shows the chat and calls k(buf, backend_pid); send(done)
-- sends the prompt and calls done() when the turn's end was handled.

local clients = {}

clients.acp = {}
function clients.acp.open(k)
  vim.opt.rtp:prepend(plugin_root)
  dofile(plugin_root .. "/plugin/acp.lua")
  require("acp").setup({
    agents = { bench = { cmd = { AGENT, "--scenario", scenario } } },
    backend = { cmd = { release .. "acp-nvim" } },
  })
  local chat = require("acp").open({ agent = "bench", cwd = dir })
  if not chat then
    return fail("open failed")
  end
  clients.acp.chat = chat
  when(
    function()
      return chat.session_id ~= nil
    end,
    "session_started",
    function()
      k(chat.bufnr, vim.fn.jobpid(require("acp.rpc.backend").channel()))
    end,
    30000
  )
end
function clients.acp.send(done)
  local chat = clients.acp.chat
  local events = require("acp.events")
  local dispatch = events.dispatch
  events.dispatch = function(evs)
    -- A span per batch: how long the plugin held the event loop.
    local t = uv.hrtime()
    if meter.t0 then
      meter.dispatches = meter.dispatches or {}
      table.insert(meter.dispatches, { (t - meter.t0) / 1e6, #evs })
    end
    dispatch(evs)
    meter.dispatch_max = math.max(meter.dispatch_max or 0, (uv.hrtime() - t) / 1e6)
    if meter.t0 then
      meter.dispatches[#meter.dispatches][3] = (uv.hrtime() - t) / 1e6
    end
    for _, ev in ipairs(evs or {}) do
      if ev.type == "turn_ended" and ev.chat_id == chat.chat_id then
        events.dispatch = dispatch
        done()
      end
    end
  end
  chat:send({ { type = "text", text = "go" } })
end

clients.cheap = {}
function clients.cheap.open(k)
  local c = clients.cheap
  c.buf = api.nvim_create_buf(false, true)
  vim.bo[c.buf].undolevels = -1
  vim.cmd("botright vsplit")
  c.win = api.nvim_get_current_win()
  api.nvim_win_set_buf(c.win, c.buf)
  api.nvim_win_set_width(c.win, math.floor(vim.o.columns * 0.4))
  c.row, c.col = 0, 0
  c.stdin, c.stdout, c.stderr = uv.new_pipe(), uv.new_pipe(), uv.new_pipe()
  c.handle = uv.spawn(
    AGENT,
    { args = { "--scenario", scenario }, stdio = { c.stdin, c.stdout, c.stderr } },
    function() end
  )
  c.stderr:read_start(function() end)
  c.next_id, c.waiting = 0, {}
  local pending = ""
  c.stdout:read_start(function(_, data)
    if not data then
      return
    end
    vim.schedule(function()
      local buf = pending .. data
      local texts, replies = {}, {}
      local s = 1
      while true do
        local nl = buf:find("\n", s, true)
        if not nl then
          break
        end
        local msg = vim.json.decode(buf:sub(s, nl - 1))
        s = nl + 1
        if msg.method == "session/update" then
          local u = msg.params.update
          if u.sessionUpdate == "agent_message_chunk" and u.content.type == "text" then
            texts[#texts + 1] = u.content.text
          end
        elseif msg.id and c.waiting[msg.id] then
          replies[#replies + 1] = msg
        end
      end
      pending = buf:sub(s)
      if #texts > 0 then
        -- One append per pipe read.
        local parts = vim.split(table.concat(texts), "\n", { plain = true })
        api.nvim_buf_set_text(c.buf, c.row, c.col, c.row, c.col, parts)
        if #parts == 1 then
          c.col = c.col + #parts[1]
        else
          c.row = c.row + #parts - 1
          c.col = #parts[#parts]
        end
        api.nvim_win_set_cursor(c.win, { c.row + 1, 0 })
      end
      for _, r in ipairs(replies) do
        local cb = c.waiting[r.id]
        c.waiting[r.id] = nil
        cb(r.result)
      end
    end)
  end)
  local function request(method, params, cb)
    c.next_id = c.next_id + 1
    c.waiting[c.next_id] = cb
    c.stdin:write(vim.json.encode({ jsonrpc = "2.0", id = c.next_id, method = method, params = params }) .. "\n")
  end
  c.request = request
  request("initialize", { protocolVersion = 1, clientCapabilities = {} }, function()
    request("session/new", { cwd = dir, mcpServers = {} }, function(res)
      c.session = res.sessionId
      k(c.buf)
    end)
  end)
end
function clients.cheap.send(done)
  local c = clients.cheap
  c.request("session/prompt", { sessionId = c.session, prompt = { { type = "text", text = "go" } } }, function()
    done()
    c.stdin:close()
  end)
end

clients.codecompanion = {}
function clients.codecompanion.open(k)
  local plugin_dir, plenary_dir = os.getenv("COMPARE_DIR"), os.getenv("PLENARY_DIR")
  if not plugin_dir or vim.fn.isdirectory(plugin_dir .. "/lua/codecompanion") ~= 1 then
    return fail("COMPARE_DIR must be a checkout of codecompanion.nvim")
  end
  if not plenary_dir or vim.fn.isdirectory(plenary_dir .. "/lua/plenary") ~= 1 then
    return fail("PLENARY_DIR must be a checkout of plenary.nvim")
  end
  vim.opt.rtp:prepend(plenary_dir)
  vim.opt.rtp:prepend(plugin_dir)
  vim.cmd("runtime! plugin/codecompanion.lua")
  vim.cmd.cd(dir)
  require("codecompanion").setup({
    adapters = {
      acp = {
        bench = function()
          return require("codecompanion.adapters").extend("goose", {
            name = "bench",
            formatted_name = "Bench",
            commands = { default = { AGENT, "--scenario", scenario } },
          })
        end,
      },
    },
    interactions = { chat = { adapter = "bench" } },
    strategies = { chat = { adapter = "bench" } },
    opts = { log_level = "ERROR" },
  })
  local c = clients.codecompanion
  c.finished = 0
  api.nvim_create_autocmd("User", {
    pattern = "CodeCompanionRequestFinished",
    callback = function()
      c.finished = c.finished + 1
      if c.on_finish then
        local f = c.on_finish
        c.on_finish = nil
        f()
      end
    end,
  })
  c.chat = require("codecompanion").chat({ messages = { { role = "user", content = "warm" } }, auto_submit = true })
  if not c.chat then
    return fail("CodeCompanion opened no chat")
  end
  when(
    function()
      return c.finished >= 1
    end,
    "the warm-up turn",
    function()
      -- Let the chat settle (it adds the next user header after the turn).
      vim.defer_fn(function()
        k(c.chat.bufnr)
      end, 300)
    end,
    60000
  )
end
function clients.codecompanion.send(done)
  local c = clients.codecompanion
  local n = api.nvim_buf_line_count(c.chat.bufnr)
  api.nvim_buf_set_lines(c.chat.bufnr, n, n, false, { "go" })
  c.on_finish = done
  c.chat:submit()
end

clients.agentic = {}
function clients.agentic.open(k)
  local plugin_dir = os.getenv("AGENTIC_DIR")
  if not plugin_dir or vim.fn.isdirectory(plugin_dir .. "/lua/agentic") ~= 1 then
    return fail("AGENTIC_DIR must be a checkout of agentic.nvim")
  end
  vim.opt.rtp:prepend(plugin_dir)
  vim.cmd.cd(dir)
  local c = clients.agentic
  -- Its session object is kept per tab page, out of reach: catch it when made.
  local SM = require("agentic.session_manager")
  local new = SM.new
  SM.new = function(...)
    c.session = new(...)
    return c.session
  end
  require("agentic").setup({
    provider = "claude-acp",
    acp_providers = { ["claude-acp"] = { command = AGENT, args = { "--scenario", scenario }, env = {} } },
  })
  -- Its setup turns debug logging on (messages on screen, each line of the
  -- agent's stderr echoed): off, as for a user.
  require("agentic.config").debug = false
  require("agentic").open()
  when(
    function()
      return c.session and c.session.session_id ~= nil
    end,
    "agentic's session",
    function()
      vim.defer_fn(function()
        k(c.session.widget.buf_nrs.chat)
      end, 300)
    end,
    30000
  )
end
function clients.agentic.send(done)
  local c = clients.agentic
  local agent = c.session.agent
  local send_prompt = agent.send_prompt
  agent.send_prompt = function(self, sid, prompt, cb)
    return send_prompt(self, sid, prompt, function(res, err)
      cb(res, err)
      -- After its own scheduled end-of-turn message.
      vim.schedule(done)
    end)
  end
  ---@diagnostic disable-next-line: invisible
  c.session:_handle_input_submit("go")
end

-- ---------------------------------------------------------------------------

local client = clients[CLIENT]
if not client then
  fail("unknown client " .. CLIENT)
  return
end

local function run()
  client.open(function(buf, backend_pid)
    local tui_pid = uv.os_getppid()
    meter.start(buf)
    local c0, b0, u0 = self_cpu(), proc_cpu(backend_pid), proc_cpu(tui_pid)
    local t0 = uv.hrtime()
    meter.t0 = t0
    local finished = false
    local function snapshot()
      -- The time since the last new text on screen counts too: a client
      -- that draws nothing until the end has one gap, the whole stream.
      if meter.stream_start then
        local since = math.max(meter.last_update or 0, meter.stream_start)
        meter.gap_max = math.max(meter.gap_max, (uv.hrtime() - since) / 1e6)
      end
      return {
        wall = (uv.hrtime() - t0) / 1e6,
        cpu = self_cpu() - c0,
        tui_cpu = proc_cpu(tui_pid) - u0,
        backend_cpu = backend_pid and (proc_cpu(backend_pid) - b0) or 0,
      }
    end
    local function measured(m)
      -- Gaps end with the stream (the check below scans the whole chat).
      meter.stream_start = nil
      local wall, cpu, tui_cpu, backend_cpu = m.wall, m.cpu, m.tui_cpu, m.backend_cpu
      -- The redraw after the last text: keep measuring until it happened.
      vim.defer_fn(function()
        meter.stop()
        local err = check_letters(buf)
        if err then
          return fail(err)
        end
        write_out("RESULT " .. vim.json.encode({
          client = CLIENT,
          count = COUNT,
          bytes = BYTES,
          payload_mb = COUNT * BYTES / 1e6,
          wall_ms = wall,
          nvim_cpu_s = cpu + tui_cpu,
          nvim_server_cpu_s = cpu,
          tui_cpu_s = tui_cpu,
          backend_cpu_s = backend_cpu,
          schedule_max_ms = meter.sched_max,
          schedule_samples = meter.sched_n,
          redraw_max_ms = meter.redraw_max,
          redraws = meter.redraws,
          screen_updates = meter.updates,
          update_gap_max_ms = meter.gap_max,
          lines = api.nvim_buf_line_count(buf),
          dispatch_max_ms = meter.dispatch_max,
          first_text_ms = meter.first_text,
          gap_end_ms = meter.gap_end,
          dispatches = os.getenv("ACP_BENCH_TRACE") and meter.dispatches or nil,
          waits = os.getenv("ACP_BENCH_TRACE") and meter.waits or nil,
        }))
        if CLIENT == "acp" then
          pcall(require("acp.rpc.backend").stop)
        end
        vim.cmd("qall!")
      end, 100)
    end
    client.send(function()
      if finished then
        return
      end
      finished = true
      -- A client may end the turn before its queued updates are drawn
      -- (agentic.nvim schedules one callback per update): the stream ends
      -- when every letter is in the buffer.
      local m = snapshot()
      if not check_letters(buf) then
        return measured(m)
      end
      when(
        function()
          return check_letters(buf) == nil
        end,
        "every letter in the chat",
        function()
          measured(snapshot())
        end
      )
    end)
  end)
end

-- Start once the UI is attached and the first screen is drawn.
when(
  function()
    return #api.nvim_list_uis() > 0
  end,
  "the TUI",
  function()
    vim.defer_fn(function()
      local ok, err = pcall(run)
      if not ok then
        fail(tostring(err))
      end
    end, 200)
  end,
  10000
)
