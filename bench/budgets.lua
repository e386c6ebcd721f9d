-- The budgets of the streaming and read benchmarks, checked from the results
-- of one `make bench` run (bench/run.sh calls this after the benches).
--
--   nvim --headless -u NONE -i NONE -l bench/budgets.lua RESULTS_DIR
--
-- Prints one `PASS name: detail` or `FAIL name: detail` line per budget
-- (`SKIP` when its bench did not run, e.g. the comparison without
-- COMPARE=1), writes them to RESULTS_DIR/budgets.json for the report, and
-- exits 1 when a budget failed. The TUI runs are repeated (bench/run.sh,
-- TUI_RUNS) and each measure is the median over the runs, so one burst of
-- load from elsewhere on the machine does not decide a budget.

local dir = _G.arg[1]

local function json(name)
  local f = io.open(dir .. "/" .. name, "r")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  local ok, v = pcall(vim.json.decode, s)
  return ok and v or nil
end

local function median(values)
  if #values == 0 then
    return nil
  end
  table.sort(values)
  local n = #values
  if n % 2 == 1 then
    return values[(n + 1) / 2]
  end
  return (values[n / 2] + values[n / 2 + 1]) / 2
end

--- Medians over the runs of one client at one size (nil when none ran).
---@return table?
local function tui(client, count)
  local runs = {}
  for i = 1, 20 do
    local r = json(("tui_%s_%d_%d.json"):format(client, count, i))
    if r then
      runs[#runs + 1] = r
    end
  end
  if #runs == 0 then
    return nil
  end
  local m = { runs = #runs }
  for _, k in ipairs({
    "wall_ms",
    "nvim_cpu_s",
    "backend_cpu_s",
    "schedule_max_ms",
    "redraw_max_ms",
    "screen_updates",
    "update_gap_max_ms",
  }) do
    local v = {}
    for _, r in ipairs(runs) do
      v[#v + 1] = r[k] or 0
    end
    m[k] = median(v)
  end
  m.cpu_s = m.nvim_cpu_s + m.backend_cpu_s
  return m
end

local results = {}
local failed = false
--- The medians of every TUI client and size that ran, for the report.
local summary = {}
for _, client in ipairs({ "cheap", "acp", "codecompanion", "agentic" }) do
  for _, n in ipairs({ 20000, 100000 }) do
    summary[client .. "_" .. n] = tui(client, n)
  end
end
local function budget(name, ok, detail)
  local status = ok == nil and "SKIP" or (ok and "PASS" or "FAIL")
  if ok == false then
    failed = true
  end
  results[#results + 1] = { name = name, status = status, detail = detail }
  io.stdout:write(("%s %s: %s\n"):format(status, name, detail))
end

for _, n in ipairs({ 20000, 100000 }) do
  local a, c = tui("acp", n), tui("cheap", n)
  local label = ("TUI %dk"):format(n / 1000)
  if a and c then
    local wr = a.wall_ms / c.wall_ms
    budget(
      label .. " wall <= 1.5x cheapest client",
      wr <= 1.5,
      ("%.0f ms vs %.0f ms = %.2fx (median of %d runs)"):format(a.wall_ms, c.wall_ms, wr, a.runs)
    )
    local cr = a.cpu_s / c.cpu_s
    budget(
      label .. " Neovim+backend CPU <= 2x cheapest client",
      cr <= 2,
      ("%.0f + %.0f ms vs %.0f ms = %.2fx"):format(a.nvim_cpu_s * 1000, a.backend_cpu_s * 1000, c.cpu_s * 1000, cr)
    )
    budget(
      label .. " max vim.schedule latency < 16 ms",
      a.schedule_max_ms < 16,
      ("%.1f ms (cheapest client %.1f ms)"):format(a.schedule_max_ms, c.schedule_max_ms)
    )
    budget(
      label .. " longest redraw < 16 ms",
      a.redraw_max_ms < 16,
      ("%.2f ms over %d screen updates"):format(a.redraw_max_ms, a.screen_updates)
    )
    budget(
      label .. " new text on screen at least every 100 ms",
      a.update_gap_max_ms < 100,
      ("longest gap %.0f ms"):format(a.update_gap_max_ms)
    )
  else
    budget(label .. " (wall, CPU, latency, redraw)", nil, "the TUI runs did not run")
  end
end

local fr = json("fsread.json")
if fr then
  budget(
    "fs read at line 900,000 of a modified 1M-line buffer <= 2x a 1k-line buffer",
    fr.p50_ratio <= 2 and fr.p99_ratio <= 2,
    ("p50 %.0f vs %.0f µs = %.2fx, p99 %.2fx"):format(fr.big_p50_us, fr.small_p50_us, fr.p50_ratio, fr.p99_ratio)
  )
else
  budget("fs read at line 900,000 of a modified 1M-line buffer <= 2x a 1k-line buffer", nil, "not run")
end

local a20, cc = tui("acp", 20000), tui("codecompanion", 20000)
if a20 and cc then
  local r = cc.wall_ms / a20.wall_ms
  budget(
    "TUI 20k at least 20x faster than CodeCompanion.nvim",
    r >= 20,
    ("%.0f ms vs %.0f ms = %.1fx"):format(cc.wall_ms, a20.wall_ms, r)
  )
else
  budget("TUI 20k at least 20x faster than CodeCompanion.nvim", nil, "run `make bench COMPARE=1`")
end

--- Medians of the runs saved as `<prefix>_<i>.json` (nil when none ran).
---@param prefix string
---@param keys string[]
---@return table?
local function medians(prefix, keys)
  local runs = {}
  for i = 1, 20 do
    local r = json(("%s_%d.json"):format(prefix, i))
    if r then
      runs[#runs + 1] = r
    end
  end
  if #runs == 0 then
    return nil
  end
  local m = { runs = #runs }
  for _, k in ipairs(keys) do
    local v = {}
    for _, r in ipairs(runs) do
      v[#v + 1] = r[k] or math.huge
    end
    m[k] = median(v)
  end
  return m
end

-- `:Acp` in the terminal with the ordinary config (bench/tui_startup.lua).
local st = medians("tui_startup", { "command_ms", "command_cpu_ms", "drawn_ms", "ready_ms", "require_ms" })
-- The cheapest client in the same runs, interleaved (bench/tui_startup.lua).
local sc = medians("tui_startup_cheap", { "command_ms", "command_cpu_ms", "drawn_ms", "ready_ms" })
-- CodeCompanion.nvim's `:CodeCompanionChat` under COMPARE=1.
local scc = medians("tui_startup_codecompanion", { "command_ms", "command_cpu_ms", "drawn_ms" })
summary.startup = st
summary.startup_cheap = sc
summary.startup_codecompanion = scc
if st then
  local cheap = sc
      and (" (cheapest client: returns %.1f ms, CPU %.1f ms, drawn %.1f ms, ready %.1f ms)"):format(
        sc.command_ms,
        sc.command_cpu_ms,
        sc.drawn_ms,
        sc.ready_ms
      )
    or ""
  if scc then
    cheap = cheap
      .. (" (CodeCompanion.nvim's :CodeCompanionChat: returns %.1f ms, CPU %.1f ms, drawn %.1f ms)"):format(
        scc.command_ms,
        scc.command_cpu_ms,
        scc.drawn_ms
      )
  end
  budget(
    "TUI :Acp returns in < 10 ms",
    st.command_ms < 10,
    ("%.1f ms (main thread CPU %.1f ms, loading modules %.1f ms), window drawn at %.1f ms, median of %d runs%s"):format(
      st.command_ms,
      st.command_cpu_ms,
      st.require_ms,
      st.drawn_ms,
      st.runs,
      cheap
    )
  )
  budget("TUI :Acp session ready in < 50 ms", st.ready_ms < 50, ("%.1f ms%s"):format(st.ready_ms, cheap))
else
  budget("TUI :Acp returns in < 10 ms, ready in < 50 ms", nil, "not run")
end

-- Loading a long session in the terminal (bench/tui_long.lua).
for _, n in ipairs({ 200, 2000 }) do
  local l = medians(("tui_long_%d"):format(n), {
    "last_turn_ms",
    "total_ms",
    "stall_max_ms",
    "stall_cpu_max_ms",
    "stalls_16",
    "key_max_ms",
    "dispatch_max_ms",
    "nvim_cpu_s",
    "backend_cpu_s",
    "nvim_rss_mb",
    "backend_rss_mb",
    "lines",
    "chat_G_ms",
    "chat_gg_ms",
    "chat_ctrl_d_ms",
    "chat_G_max_ms",
    "chat_gg_max_ms",
    "chat_ctrl_d_max_ms",
    "plain_G_ms",
    "plain_gg_ms",
    "plain_ctrl_d_ms",
    "prompt_key_ms",
    "idle_nvim_cpu_ms",
    "idle_backend_cpu_ms",
    "ready_ms",
    "first_chunk_ms",
    "tail_kept",
  })
  summary["long_" .. n] = l
  local label = ("TUI load of %d turns"):format(n)
  if l then
    budget(
      label .. ": no vim.schedule stall >= 16 ms",
      l.stall_max_ms < 16,
      ("longest %.1f ms (the main thread's CPU in it %.1f ms), %d stalls >= 16 ms; longest event batch %.1f ms; a key waited at most %.1f ms (median of %d runs)"):format(
        l.stall_max_ms,
        l.stall_cpu_max_ms,
        l.stalls_16,
        l.dispatch_max_ms,
        l.key_max_ms,
        l.runs
      )
    )
    budget(
      label .. ": last turn on screen within 100 ms",
      l.last_turn_ms < 100,
      ("%.0f ms (drawn from the chat's transcript; the agent's replay was whole at %.0f ms, %s); whole history %.0f ms, %d lines; CPU %.2f s Neovim, %.2f s backend; RSS %.0f MB Neovim, %.0f MB backend"):format(
        l.last_turn_ms,
        l.ready_ms or 0 / 0,
        l.tail_kept == 1 and "what was drawn stayed" or "what was drawn was replaced",
        l.total_ms,
        l.lines,
        l.nvim_cpu_s,
        l.backend_cpu_s,
        l.nvim_rss_mb,
        l.backend_rss_mb
      )
    )
    if n == 2000 then
      -- Issue 30: the whole history within what drawing it in order cost
      -- when the issue was filed (1.3-1.5 s in 25 batches that froze Neovim).
      budget(
        label .. ": whole history drawn within 1,500 ms",
        l.total_ms < 1500,
        ("%.0f ms; CPU %.2f s Neovim"):format(l.total_ms, l.nvim_cpu_s)
      )
    end
    -- The slowest of each motion's nine: the first gg draws the markdown of
    -- the turns it shows (View:draw_unseen).
    local worst = math.max(l.chat_G_max_ms or 0 / 0, l.chat_gg_max_ms or 0 / 0, l.chat_ctrl_d_max_ms or 0 / 0)
    budget(
      label .. ": G, gg, <C-d> in the transcript redrawn in < 16 ms, every time",
      worst < 16,
      ("G %.2f, gg %.2f, <C-d> %.2f ms, slowest %.2f ms (a plain buffer of the same lines: %.2f, %.2f, %.2f ms)"):format(
        l.chat_G_ms,
        l.chat_gg_ms,
        l.chat_ctrl_d_ms,
        worst,
        l.plain_G_ms,
        l.plain_gg_ms,
        l.plain_ctrl_d_ms
      )
    )
    budget(
      label .. ": a letter in the prompt redrawn in < 16 ms",
      l.prompt_key_ms < 16,
      ("%.2f ms; idle CPU %.1f ms/s Neovim, %.1f ms/s backend; a prompt's first chunk drawn %.1f ms after it was sent"):format(
        l.prompt_key_ms,
        l.idle_nvim_cpu_ms,
        l.idle_backend_cpu_ms,
        l.first_chunk_ms or 0 / 0
      )
    )
  else
    budget(label, nil, "not run")
  end
end

-- CodeCompanion.nvim loading the same 2,000-turn session (COMPARE=1,
-- bench/tui_long.lua run_codecompanion): the last turn drawn and the
-- longest time the editor took no keys, against ours.
local lcc = medians(
  "tui_long_codecompanion_2000",
  { "last_turn_ms", "call_ms", "stall_max_ms", "stalls_16", "key_max_ms", "lines", "nvim_cpu_s" }
)
summary.long_codecompanion_2000 = lcc
local l2 = summary.long_2000
local cc_label = "TUI load of 2000 turns: last turn on screen sooner than CodeCompanion.nvim"
if l2 and lcc then
  budget(
    cc_label,
    l2.last_turn_ms < lcc.last_turn_ms,
    ("%.0f ms vs %.0f ms; longest stall %.1f ms vs %.1f ms (its load is one call of %.0f ms: keys wait %.0f ms); %d vs %d lines (it draws messages only)"):format(
      l2.last_turn_ms,
      lcc.last_turn_ms,
      l2.stall_max_ms,
      lcc.stall_max_ms,
      lcc.call_ms,
      lcc.key_max_ms,
      l2.lines,
      lcc.lines
    )
  )
else
  budget(cc_label, nil, "run `make bench COMPARE=1`")
end

local f = assert(io.open(dir .. "/budgets.json", "w"))
f:write(vim.json.encode({ budgets = results, tui = summary }))
f:close()
os.exit(failed and 1 or 0)
