-- Loading a long stored session inside a real TUI Neovim (started by
-- bench/tui.lua in tmux, with the ordinary config of bench/tui_init.lua):
--
--   ACP_BENCH_SCRIPT=bench/tui_long.lua ACP_BENCH_TURNS=2000 nvim -l bench/tui.lua acp 0
--   ... nvim -l bench/tui.lua codecompanion 0   (COMPARE_DIR, PLENARY_DIR: the
--                   same session loaded by CodeCompanion.nvim, see
--                   run_codecompanion)
--
-- The fake agent's session store gets one session of ACP_BENCH_TURNS turns,
-- each like a real one: a prompt, ~30 lines of markdown with a code block
-- and a table, a plan, a read with its output and an edit with a diff. The
-- session is loaded (`session/load`: the agent replays it, the backend
-- forwards it in event batches) while Neovim runs its event loop and redraws
-- as it would for a user. The chat's own transcript of the session is
-- there, as for a session that ran in acp.nvim (ACP_BENCH_TRANSCRIPT=0: not),
-- so its end is drawn from it at once (acp.chat.tail). Measured from the load's
-- start:
--   last_turn_ms    the last turn's closing line drawn on screen
--   ready_ms        the session ready (`session_started` handled: the
--                   agent's replay all arrived, the last turn drawn)
--   total_ms        the whole history drawn and the session ready
--   stall_max_ms    longest wait of a vim.schedule callback queued every
--                   5 ms (how long a key typed meanwhile would wait), the
--                   open() call included (the command holds the editor),
--                   until the whole history was drawn
--   stalls_16       waits of 16 ms or more, as long
--   stall_cpu_max_ms the most CPU time of the main thread over one such
--                   wait (the wait with a core to itself: on a loaded
--                   machine the wall time is mostly waiting for one)
--   stall_loading_max_ms, stall_filling_max_ms  the longest wait until the
--                   session was ready (the replay arriving), and after it
--                   (the older turns filling in above)
--   stall_p99_ms, stall_cpu_p99_ms  the 99th percentile of those waits (and
--                   of the CPU in them) until the whole history was drawn
--   after_max_ms, after_cpu_max_ms  the longest wait (and the most CPU in
--                   one) from then until the prompt's filetype was set
--   filetype_at_ms, filetype_cpu_ms, transcript_filetype_cpu_ms  when the
--                   prompt's filetype was set and the CPU of setting it (the
--                   config's FileType autocommands), and of the transcript's
--   key_max_ms      longest wait of a key typed every 20 ms for its mapping
--   redraw_max_ms   longest redraw (a decoration provider's on_start..on_end)
--   dispatch_max_ms longest call of an event batch from the backend (with
--                   dispatch_max_cpu_ms, _events, _kinds: its CPU time, its
--                   size and its event types)
--   open_ms         the open() call (the end drawn from the transcript, the
--                   spawn of the agent, session/load sent)
--   tail_kept       what was drawn from the transcript stayed (the replay's
--                   last turns said the same)
--   nvim_cpu_s, backend_cpu_s, nvim_rss_mb, backend_rss_mb, lines
-- then, once loaded (medians, each redrawn at once, `:redraw` included):
--   chat_G_ms, chat_gg_ms, chat_ctrl_d_ms   motions in the transcript window
--   plain_G_ms, plain_gg_ms, plain_ctrl_d_ms the same in a plain buffer of the
--                   same lines shown in that window; *_max_ms: the slowest of nine
--                   (the first gg draws the markdown of the turns it shows)
--   prompt_key_ms   a letter typed in the prompt (Insert mode and back)
--   idle_nvim_cpu_ms, idle_backend_cpu_ms  CPU over one idle second
--   first_chunk_ms  a prompt sent, until its answer's first chunk is drawn

local uv = vim.uv

-- CPU time of the main thread: on a loaded machine a wait is mostly the
-- process waiting for a core; the main thread's CPU time over the same
-- wait is the work that held the callback back (what the wait would be
-- with a core to itself).
local ffi = require("ffi")
pcall(
  ffi.cdef,
  [[
  typedef struct { long tv_sec; long tv_nsec; } acp_bench_timespec;
  int clock_gettime(int clk_id, acp_bench_timespec *tp);
]]
)
local ts = ffi.new("acp_bench_timespec")
local function thread_cpu_ms()
  ffi.C.clock_gettime(3, ts) -- CLOCK_THREAD_CPUTIME_ID
  return tonumber(ts.tv_sec) * 1e3 + tonumber(ts.tv_nsec) / 1e6
end
local api = vim.api

local root = vim.fn.getcwd()
-- ACP_BENCH_BIN_DIR: other binaries (a debug build, for a quick check).
local release = os.getenv("ACP_BENCH_BIN_DIR") or (root .. "/target/release/")
local plugin_root = (os.getenv("ACP_BENCH_PLUGIN") or "") ~= "" and os.getenv("ACP_BENCH_PLUGIN") or root
local TURNS = tonumber(os.getenv("ACP_BENCH_TURNS")) or 200
-- ACP_BENCH_TRANSCRIPT=0: no transcript of the session (an agent's session
-- that never ran in acp.nvim): nothing can be drawn before the replay.
local TRANSCRIPT = os.getenv("ACP_BENCH_TRANSCRIPT") ~= "0"
local transcript_bytes
local OUT = os.getenv("ACP_BENCH_OUT") or (root .. "/target/bench-results/tui_long.out")
local AGENT = release .. "acp-fake-agent"

local function write_out(line)
  local f = assert(io.open(OUT, "w"))
  f:write(line .. "\n")
  f:close()
end

local function fail(msg)
  write_out("ERROR long: " .. msg)
  vim.cmd("qall!")
end

-- ---------------------------------------------------------------------------
-- The stored session (bench/long_session.lua).

local long_session = dofile(root .. "/bench/long_session.lua")
local stored = long_session.write(TURNS)
local dir, scenario = stored.dir, stored.scenario

-- ---------------------------------------------------------------------------
-- Meters.

local function proc_cpu(pid)
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

local function rss_mb(pid)
  local f = io.open(("/proc/%s/status"):format(pid), "r")
  if not f then
    return 0
  end
  local kb = tonumber(f:read("*a"):match("VmRSS:%s*(%d+)")) or 0
  f:close()
  return kb / 1024
end

local t0, last_turn_ms, total_ms, open_ms, ready_ms
local resets = 0
local dispatch_max = 0
local key_max, key_n = 0, 0
local stall_max, stalls_16, stall_n = 0, 0, 0
local phase_max = { loading = 0, filling = 0 }
local stall_cpu_max = 0
-- Every wait until the whole history was drawn, and the CPU in each (p99).
local waits, wait_cpus = {}, {}
local after_max, after_cpu_max = 0, 0
-- The filetypes' FileType autocommands: CPU and when, by method.
local ft_cpu, ft_at = {}, {}
-- ACP_BENCH_GC=log (a diagnosis, not a measurement): each wait of 16 ms or
-- more with the Lua heap around it and what ran inside it (scheduled
-- callbacks, event batches, redraws; the rest was C work or another
-- process's), batches of over 10 ms of CPU, backlog.release, the prompt's
-- filetype, and the collector's longest step at rest; =stop: no collector
-- during the load (neither its own steps nor acp.chat.replay's).
local gclog = {}
local GC_MODE = os.getenv("ACP_BENCH_GC") or ""
-- {start ms, ms, cpu ms, what} and {start ms, ms}.
local spans, long_waits = {}, {}
local dispatch_max_cpu, dispatch_max_events, dispatch_max_kinds = 0, 0, ""
local last_marker = ("End of answer %d."):format(TURNS)
local marker_in_buf = false
local chat
local ns = api.nvim_create_namespace("acp.bench.long")
local redraw_max, redraw_t = 0, nil
local redraws = 0
api.nvim_set_decoration_provider(ns, {
  on_start = function()
    redraw_t = uv.hrtime()
    if t0 and not total_ms then
      redraws = redraws + 1
    end
  end,
  on_end = function()
    if t0 and redraw_t and not total_ms then
      redraw_max = math.max(redraw_max, (uv.hrtime() - redraw_t) / 1e6)
      if GC_MODE == "log" then
        spans[#spans + 1] = { (redraw_t - t0) / 1e6, (uv.hrtime() - redraw_t) / 1e6, 0, "redraw (providers)" }
      end
    end
    if marker_in_buf and not last_turn_ms then
      last_turn_ms = (uv.hrtime() - t0) / 1e6
    end
  end,
})

--- History still to draw: queued, or older turns filling in above
--- (acp.chat.backlog; `filling` is absent in a plugin from before it).
local function pending()
  local ok, replay = pcall(require, "acp.chat.replay")
  return ok and (replay.pending(chat.chat_id) or (replay.filling ~= nil and replay.filling(chat.chat_id)))
end

--- Median milliseconds of `fn(); redraw` over `n` runs, each after
--- `before(); redraw` (untimed).
local function timed(n, fn, before)
  local v = {}
  for i = 1, n do
    if before then
      before()
      vim.cmd("redraw")
    end
    local t = uv.hrtime()
    fn(i)
    vim.cmd("redraw")
    v[#v + 1] = (uv.hrtime() - t) / 1e6
  end
  table.sort(v)
  return v[math.ceil(n / 2)], v[n]
end

--- After the load, in the chat's windows: motions in the transcript against
--- a plain buffer of the same lines shown in the same window, a letter typed
--- in the prompt (each redrawn at once: the time to the new screen), and
--- the CPU of an idle minute's second.
local function after_load(backend_pid)
  local m = {}
  local win = vim.fn.bufwinid(chat.bufnr)
  if win == -1 then
    return m
  end
  -- Each motion from where it moves the view: G from the top, gg from the
  -- end, <C-d> from the middle.
  local motions = {
    G = { "normal! G", "normal! gg" },
    gg = { "normal! gg", "normal! G" },
    ctrl_d = { 'exe "normal! \\<C-d>"', "normal! 50%" },
  }
  local function measure_in(buf, prefix)
    api.nvim_win_set_buf(win, buf)
    api.nvim_set_current_win(win)
    for name, c in pairs(motions) do
      m[prefix .. name .. "_ms"], m[prefix .. name .. "_max_ms"] = timed(9, function()
        vim.cmd(c[1])
      end, function()
        vim.cmd(c[2])
      end)
    end
  end
  measure_in(chat.bufnr, "chat_")
  local plain = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(plain, 0, -1, false, api.nvim_buf_get_lines(chat.bufnr, 0, -1, false))
  measure_in(plain, "plain_")
  api.nvim_win_set_buf(win, chat.bufnr)
  local pwin = vim.fn.bufwinid(chat.prompt_buf)
  if pwin ~= -1 then
    api.nvim_set_current_win(pwin)
    m.prompt_key_ms = timed(21, function()
      api.nvim_feedkeys("ax\27", "nx", false)
    end)
  end
  -- Idle: nothing happens for a second.
  local c0, b0 = self_cpu(), proc_cpu(backend_pid)
  vim.wait(1000, function()
    return false
  end, 100)
  m.idle_nvim_cpu_ms = (self_cpu() - c0) * 1000
  m.idle_backend_cpu_ms = (proc_cpu(backend_pid) - b0) * 1000
  -- A prompt sent into the long chat: until the answer's first chunk (the
  -- agent answers "ok") is in the buffer and redrawn.
  local answered = false
  api.nvim_buf_attach(chat.bufnr, false, {
    on_lines = function(_, buf, _, first, _, last)
      for _, l in ipairs(api.nvim_buf_get_lines(buf, first, last, false)) do
        if l == "ok" then
          answered = true
          return true
        end
      end
    end,
  })
  api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { "one more" })
  local t = uv.hrtime()
  chat:submit()
  if vim.wait(10000, function()
    return answered
  end, 1) then
    vim.cmd("redraw")
    m.first_chunk_ms = (uv.hrtime() - t) / 1e6
  end
  return m
end

---@param v number[]
---@return number?
local function p99(v)
  if #v == 0 then
    return nil
  end
  table.sort(v)
  return v[math.max(1, math.ceil(#v * 0.99))]
end

local function finish(backend_pid, cpu0, bcpu0)
  local result = {
    turns = TURNS,
    transcript = TRANSCRIPT,
    transcript_bytes = transcript_bytes,
    tail_kept = TRANSCRIPT and (resets == 0 and 1 or 0) or nil,
    lines = api.nvim_buf_line_count(chat.bufnr),
    last_turn_ms = last_turn_ms,
    ready_ms = ready_ms,
    total_ms = total_ms,
    stall_max_ms = stall_max,
    stalls_16 = stalls_16,
    stall_samples = stall_n,
    stall_cpu_max_ms = stall_cpu_max,
    stall_p99_ms = p99(waits),
    stall_cpu_p99_ms = p99(wait_cpus),
    after_max_ms = after_max,
    after_cpu_max_ms = after_cpu_max,
    filetype_at_ms = ft_at.set_prompt_filetype,
    filetype_cpu_ms = ft_cpu.set_prompt_filetype,
    transcript_filetype_cpu_ms = ft_cpu.set_transcript_filetype,
    stall_loading_max_ms = phase_max.loading,
    stall_filling_max_ms = phase_max.filling,
    redraw_max_ms = redraw_max,
    redraws = redraws,
    key_max_ms = key_max,
    keys = key_n,
    dispatch_max_ms = dispatch_max,
    dispatch_max_cpu_ms = dispatch_max_cpu,
    dispatch_max_events = dispatch_max_events,
    dispatch_max_kinds = dispatch_max_kinds,
    open_ms = open_ms,
    nvim_cpu_s = self_cpu() - cpu0,
    backend_cpu_s = proc_cpu(backend_pid) - bcpu0,
    nvim_rss_mb = rss_mb("self"),
    backend_rss_mb = rss_mb(backend_pid),
  }
  for k, v in pairs(after_load(backend_pid)) do
    result[k] = v
  end
  for _, w in ipairs(long_waits) do
    local inside, sum = {}, 0
    for _, sp in ipairs(spans) do
      if sp[1] + sp[2] > w[1] and sp[1] < w[1] + w[2] and sp[2] >= 0.5 then
        inside[#inside + 1] = ("%s %.1f ms (cpu %.1f) at %.0f"):format(sp[4], sp[2], sp[3], sp[1])
        sum = sum + sp[2]
      end
    end
    local head = ("wait %.1f ms at %.0f: %.1f ms in spans: "):format(w[2], w[1], sum)
    gclog[#gclog + 1] = head .. table.concat(inside, "; ")
  end
  if GC_MODE == "log" then
    -- The heap, then a whole cycle of the collector at rest in its smallest
    -- steps: its longest step (the indivisible one) against those of the load.
    local heap = collectgarbage("count")
    collectgarbage("stop")
    local n, max = 0, 0
    repeat
      n = n + 1
    until collectgarbage("step", 0) or n > 1e6
    repeat
      local t = uv.hrtime()
      local done = collectgarbage("step", 0)
      max, n = math.max(max, (uv.hrtime() - t) / 1e6), n + 1
    until done or n > 2e6
    collectgarbage("restart")
    local rest = collectgarbage("count") / 1024
    gclog[#gclog + 1] = ("heap %.1f MB; at rest %.1f MB: longest step %.1f ms"):format(heap / 1024, rest, max)
  end
  if #gclog > 0 then
    result.gclog = gclog
  end
  write_out("RESULT " .. vim.json.encode(result))
  pcall(require("acp.rpc.backend").stop)
  vim.fn.delete(dir, "rf")
  vim.cmd("qall!")
end

local function run()
  vim.opt.rtp:prepend(plugin_root)
  dofile(plugin_root .. "/plugin/acp.lua")
  -- ACP_BENCH_SLICE_MS: another slice length (acp.chat.replay), to weigh it.
  local slice = tonumber(os.getenv("ACP_BENCH_SLICE_MS") or "")
  if slice then
    require("acp.chat.replay").SLICE_MS = slice
  end
  -- ACP_BENCH_NEWEST_FIRST=0: the history drawn in order (acp.chat.backlog), to
  -- weigh newest-first drawing against it in the same run.
  if os.getenv("ACP_BENCH_NEWEST_FIRST") == "0" then
    local ok, backlog = pcall(require, "acp.chat.backlog")
    if ok then
      backlog.NEWEST_FIRST = false
    end
  end
  require("acp").setup({
    agents = {
      long = { cmd = { AGENT, "--scenario", scenario } },
      long_capture = { cmd = { AGENT, "--scenario", scenario } },
    },
    backend = { cmd = { release .. "acp-nvim" } },
  })
  -- The backend runs before the clock starts (its start is measured by
  -- bench/tui_startup.lua): a warm-up chat, closed.
  local warm = require("acp").open({ agent = "long", cwd = dir, show = false })
  if not warm then
    return fail("open failed")
  end
  local backend_pid = vim.fn.jobpid(require("acp.rpc.backend").channel())
  vim.wait(10000, function()
    return warm.session_id ~= nil
  end)
  warm:close()
  if TRANSCRIPT then
    local err
    err, transcript_bytes = long_session.write_transcript(dir)
    if err then
      return fail(err)
    end
  end

  local timer = assert(uv.new_timer())
  -- The capture above left the garbage of a whole load (a user's editor has
  -- not just loaded the session unseen): collected before the clock starts.
  collectgarbage("collect")
  if GC_MODE == "stop" then
    collectgarbage("stop")
    local replay = require("acp.chat.replay")
    replay.hold_collector = function() end
    replay.assist = function() end
  end
  local cpu0, bcpu0 = self_cpu(), proc_cpu(backend_pid)
  t0 = uv.hrtime()
  local events = require("acp.events")
  local dispatch = events.dispatch
  events.dispatch_inner = function(evs)
    local t, c = uv.hrtime(), thread_cpu_ms()
    dispatch(evs)
    if not total_ms then
      local d = (uv.hrtime() - t) / 1e6
      if d > dispatch_max then
        dispatch_max, dispatch_max_cpu, dispatch_max_events = d, thread_cpu_ms() - c, #(evs or {})
        local kinds = {}
        for _, e in ipairs(evs or {}) do
          kinds[e.type] = (kinds[e.type] or 0) + 1
        end
        dispatch_max_kinds = vim.inspect(kinds, { newline = "", indent = "" })
      end
    end
  end
  events.dispatch = events.dispatch_inner
  -- What was drawn from the transcript going (the replay differed: it is
  -- drawn in its place) is counted: the bench expects it kept.
  local Transcript = require("acp.chat.transcript")
  local reset = Transcript.reset
  Transcript.reset = function(...)
    resets = resets + 1
    return reset(...)
  end
  -- The filetypes (the transcript's alone from the prompt's since acp.chat
  -- sets them apart): their CPU and when.
  local Chat = require("acp.chat").Chat
  for _, name in ipairs({ "set_transcript_filetype", "set_prompt_filetype" }) do
    local f = Chat[name]
    if f then
      Chat[name] = function(self)
        local c, t = thread_cpu_ms(), uv.hrtime()
        f(self)
        if self == chat then
          ft_cpu[name], ft_at[name] = thread_cpu_ms() - c, (t - t0) / 1e6
        end
      end
    end
  end
  -- As `:Acp sessions` opens it: the open sent as a notification.
  if GC_MODE == "log" then
    local schedule = vim.schedule
    ---@diagnostic disable-next-line: duplicate-set-field
    vim.schedule = function(fn)
      local info = debug.getinfo(fn, "S")
      local what = ("%s:%d"):format(info.short_src:gsub(".*/lua/", ""), info.linedefined)
      return schedule(function()
        local t, c = uv.hrtime(), thread_cpu_ms()
        fn()
        local d = (uv.hrtime() - t) / 1e6
        if d >= 0.5 and not total_ms then
          spans[#spans + 1] = { (t - t0) / 1e6, d, thread_cpu_ms() - c, what }
        end
      end)
    end
    local Chat = require("acp.chat").Chat
    local spf = Chat.set_prompt_filetype
    Chat.set_prompt_filetype = function(self)
      local c = os.clock()
      spf(self)
      gclog[#gclog + 1] = ("set_prompt_filetype %s cpu %.1f at %.0f"):format(
        self == chat and "load" or "other",
        (os.clock() - c) * 1e3,
        (uv.hrtime() - t0) / 1e6
      )
    end
    local backlog = require("acp.chat.backlog")
    local release = backlog.release
    backlog.release = function(...)
      local c, k = os.clock(), collectgarbage("count")
      release(...)
      local at, k1 = (uv.hrtime() - t0) / 1e6, collectgarbage("count")
      gclog[#gclog + 1] = ("release cpu %.1f heap %.1f->%.1f MB at %.0f"):format(
        (os.clock() - c) * 1e3,
        k / 1024,
        k1 / 1024,
        at
      )
    end
    events.dispatch = function(evs)
      local c, k = os.clock(), collectgarbage("count")
      local t = uv.hrtime()
      local r = events.dispatch_inner(evs)
      local cpu = os.clock() - c
      if not total_ms then
        spans[#spans + 1] = { (t - t0) / 1e6, (uv.hrtime() - t) / 1e6, cpu * 1e3, ("dispatch of %d"):format(#evs) }
      end
      if cpu > 0.010 and not total_ms then
        gclog[#gclog + 1] = ("dispatch %.0f@%.0f heap %.1f->%.1f n%d"):format(
          cpu * 1e3,
          (uv.hrtime() - t0) / 1e6,
          k / 1024,
          collectgarbage("count") / 1024,
          #evs
        )
      end
      return r
    end
  end
  local oc = thread_cpu_ms()
  chat = require("acp").open({ agent = "long", cwd = dir, load_session_id = "long", background = true })
  open_ms = (uv.hrtime() - t0) / 1e6
  stall_cpu_max = math.max(stall_cpu_max, thread_cpu_ms() - oc)
  -- The call itself held the event loop: a key typed with the command
  -- waited for it as for any stall.
  stall_max = math.max(stall_max, open_ms)
  if open_ms >= 16 then
    stalls_16 = stalls_16 + 1
  end
  if not chat then
    return fail("the load failed")
  end
  -- Drawn by open() itself when it came from the transcript.
  for _, l in ipairs(api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)) do
    if l:find(last_marker, 1, true) then
      marker_in_buf = true
    end
  end
  api.nvim_buf_attach(chat.bufnr, false, {
    on_lines = function(_, buf, _, first, _, last)
      for _, l in ipairs(api.nvim_buf_get_lines(buf, first, last, false)) do
        if l:find(last_marker, 1, true) then
          marker_in_buf = true
          return true
        end
      end
    end,
  })
  -- A key "typed" every 20 ms (nvim_input, as the terminal would): how long
  -- it waits before its mapping runs is the freeze a user feels.
  local keys = {}
  vim.keymap.set({ "n", "i" }, "<F20>", function()
    local t = table.remove(keys, 1)
    if t then
      key_max = math.max(key_max, (uv.hrtime() - t) / 1e6)
      key_n = key_n + 1
    end
  end)
  local key_timer = assert(uv.new_timer())
  key_timer:start(20, 20, function()
    if total_ms then
      key_timer:stop()
      key_timer:close()
      return
    end
    keys[#keys + 1] = uv.hrtime()
    api.nvim_input("<F20>")
  end)
  timer:start(5, 5, function()
    local t, c = uv.hrtime(), thread_cpu_ms()
    local k0 = collectgarbage("count")
    vim.schedule(function()
      if timer:is_closing() then
        return
      end
      local d = (uv.hrtime() - t) / 1e6
      if GC_MODE == "log" and d >= 16 and not total_ms then
        long_waits[#long_waits + 1] = { (t - t0) / 1e6, d }
        gclog[#gclog + 1] = ("%.0f@%.0f cpu %.0f heap %.1f->%.1f MB"):format(
          d,
          (t - t0) / 1e6,
          thread_cpu_ms() - c,
          k0 / 1024,
          collectgarbage("count") / 1024
        )
      end
      local cpu = thread_cpu_ms() - c
      stall_n = stall_n + 1
      if not total_ms then
        stall_cpu_max = math.max(stall_cpu_max, cpu)
        waits[#waits + 1], wait_cpus[#wait_cpus + 1] = d, cpu
        stall_max = math.max(stall_max, d)
        if d >= 16 then
          stalls_16 = stalls_16 + 1
        end
      else
        -- After the load: the prompt's filetype, reported apart.
        after_max, after_cpu_max = math.max(after_max, d), math.max(after_cpu_max, cpu)
      end
      if not total_ms then
        -- While the replay arrives (until ready) and while the older turns
        -- fill in above (after), apart.
        local k = ready_ms and "filling" or "loading"
        phase_max[k] = math.max(phase_max[k], d)
      end
      if not ready_ms and chat.status == "ready" then
        ready_ms = (uv.hrtime() - t0) / 1e6
      end
      if not total_ms and chat.status == "ready" and not pending() then
        total_ms = (uv.hrtime() - t0) / 1e6
      end
      -- The prompt's filetype set too: its FileType autocommands come once
      -- the history is drawn and the keys stopped.
      if total_ms and last_turn_ms and #keys == 0 and chat.prompt_ft == nil then
        timer:stop()
        timer:close()
        finish(backend_pid, cpu0, bcpu0)
      elseif (uv.hrtime() - t0) / 1e6 > 300000 then
        timer:stop()
        timer:close()
        fail("timed out loading the session")
      end
    end)
  end)
end

--- CodeCompanion.nvim (COMPARE_DIR, PLENARY_DIR: checkouts) loading the
--- same stored session as its `/resume` slash command does once a session
--- is picked: `session/load` waited for in a loop of `vim.wait` (typed keys
--- wait; timers and scheduled callbacks run), then the collected replay
--- rendered in one call (messages only: it draws no tool calls or plans).
--- It opens its chat and connects first (not timed). Measured as ours:
--- `call_ms` is the picked session's call, counted as a stall as open() is.
local function run_codecompanion()
  local plugin_dir, plenary_dir = os.getenv("COMPARE_DIR") or "", os.getenv("PLENARY_DIR") or ""
  if
    vim.fn.isdirectory(plugin_dir .. "/lua/codecompanion") ~= 1
    or vim.fn.isdirectory(plenary_dir .. "/lua/plenary") ~= 1
  then
    return fail("COMPARE_DIR and PLENARY_DIR must be checkouts of codecompanion.nvim and plenary.nvim")
  end
  vim.opt.rtp:prepend(plenary_dir)
  vim.opt.rtp:prepend(plugin_dir)
  vim.cmd("runtime! plugin/codecompanion.lua")
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
  vim.cmd("CodeCompanionChat")
  local cc = require("codecompanion").last_chat()
  if not cc then
    return fail(":CodeCompanionChat made no chat")
  end
  if
    not vim.wait(20000, function()
      return cc.acp_connection ~= nil and cc.acp_connection:is_ready() and cc.acp_connection.session_id ~= nil
    end, 5)
  then
    return fail("CodeCompanion did not connect to the agent")
  end
  local buf = cc.bufnr
  local found = false
  api.nvim_buf_attach(buf, false, {
    on_lines = function(_, b, _, first, _, last)
      for _, l in ipairs(api.nvim_buf_get_lines(b, first, last, false)) do
        if l:find(last_marker, 1, true) then
          found = true
          return true
        end
      end
    end,
  })
  local keys = {}
  vim.keymap.set({ "n", "i" }, "<F20>", function()
    local t = table.remove(keys, 1)
    if t then
      key_max = math.max(key_max, (uv.hrtime() - t) / 1e6)
      key_n = key_n + 1
    end
  end)
  local cpu0 = self_cpu()
  local timer = assert(uv.new_timer())
  local key_timer = assert(uv.new_timer())
  timer:start(5, 5, function()
    local t, c = uv.hrtime(), thread_cpu_ms()
    vim.schedule(function()
      if not t0 or timer:is_closing() then
        return
      end
      local d = (uv.hrtime() - t) / 1e6
      local cpu = thread_cpu_ms() - c
      if not total_ms then
        stall_cpu_max = math.max(stall_cpu_max, cpu)
        waits[#waits + 1], wait_cpus[#wait_cpus + 1] = d, cpu
      else
        after_max, after_cpu_max = math.max(after_max, d), math.max(after_cpu_max, cpu)
      end
      stall_n = stall_n + 1
      stall_max = math.max(stall_max, d)
      if d >= 16 then
        stalls_16 = stalls_16 + 1
      end
      if total_ms and last_turn_ms and #keys == 0 then
        timer:stop()
        timer:close()
        key_timer:stop()
        key_timer:close()
        local m = {}
        local win = vim.fn.bufwinid(buf)
        if win ~= -1 then
          api.nvim_set_current_win(win)
          m.chat_G_ms = timed(9, function()
            vim.cmd("normal! G")
          end, function()
            vim.cmd("normal! gg")
          end)
          m.chat_gg_ms = timed(9, function()
            vim.cmd("normal! gg")
          end, function()
            vim.cmd("normal! G")
          end)
        end
        m.turns, m.client = TURNS, "codecompanion"
        m.lines = api.nvim_buf_line_count(buf)
        m.last_turn_ms, m.total_ms, m.ready_ms, m.call_ms = last_turn_ms, total_ms, total_ms, open_ms
        m.stall_max_ms, m.stalls_16, m.stall_samples = stall_max, stalls_16, stall_n
        m.stall_cpu_max_ms = stall_cpu_max
        m.key_max_ms, m.keys = key_max, key_n
        m.nvim_cpu_s, m.nvim_rss_mb = self_cpu() - cpu0, rss_mb("self")
        write_out("RESULT " .. vim.json.encode(m))
        vim.fn.delete(dir, "rf")
        vim.cmd("qall!")
      end
    end)
  end)
  key_timer:start(20, 20, function()
    if t0 and not total_ms then
      keys[#keys + 1] = uv.hrtime()
      api.nvim_input("<F20>")
    end
  end)
  -- The picker's callback of `/resume`, as it runs once the session is
  -- picked (codecompanion/interactions/chat/slash_commands/builtin/resume.lua).
  vim.defer_fn(function()
    t0 = uv.hrtime()
    local oc = thread_cpu_ms()
    local updates = {}
    local ok = cc.acp_connection:load_session("long", {
      on_session_update = function(update)
        updates[#updates + 1] = update
      end,
    })
    if not ok then
      return fail("CodeCompanion could not load the session")
    end
    require("codecompanion.interactions.chat.acp.commands").link_buffer_to_session(buf, cc.acp_connection.session_id)
    require("codecompanion.interactions.chat.acp.render").restore_session(cc, updates)
    open_ms = (uv.hrtime() - t0) / 1e6
    stall_cpu_max = math.max(stall_cpu_max, thread_cpu_ms() - oc)
    stall_max = math.max(stall_max, open_ms)
    if open_ms >= 16 then
      stalls_16 = stalls_16 + 1
    end
    total_ms = open_ms
    marker_in_buf = found
    if not found then
      return fail("the session's last turn is not in CodeCompanion's chat")
    end
  end, 50)
end

if os.getenv("ACP_BENCH_CLIENT") == "codecompanion" then
  vim.defer_fn(run_codecompanion, 300)
else
  vim.defer_fn(run, 300)
end
