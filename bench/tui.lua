-- One run of the TUI streaming benchmark (bench/tui_stream.lua): a real
-- Neovim in a 200x50 tmux pane with the ordinary config of
-- bench/tui_init.lua, driven through the terminal tests' tmux driver
-- (tests/tui/tmux.lua).
--
--   nvim --headless -u NONE -i NONE -l bench/tui.lua CLIENT COUNT [BYTES]
--
-- CLIENT: acp | cheap | codecompanion | agentic (the last two need
-- COMPARE_DIR + PLENARY_DIR and AGENTIC_DIR, checkouts; see bench/run.sh).
-- ACP_BENCH_SCRIPT runs another script in the TUI instead of
-- bench/tui_stream.lua (bench/tui_startup.lua, bench/tui_long.lua), with the
-- same environment.
-- Prints the `RESULT {json}` line the run wrote; on an error, the error and
-- the pane's last screen, and exits 1. tmux: scripts/ensure-tmux.sh.

local root = vim.fn.getcwd()
local Tmux = dofile(root .. "/tests/tui/tmux.lua")
local client = assert(_G.arg[1], "client")
local count = assert(_G.arg[2], "count")
local bytes = _G.arg[3] or "100"
local nvim = vim.v.progpath
local script = (os.getenv("ACP_BENCH_SCRIPT") or "") ~= "" and os.getenv("ACP_BENCH_SCRIPT") or "bench/tui_stream.lua"

local out = vim.fn.tempname()
-- A fresh home for Neovim's cache, state and data (no shada, logs or
-- plugins of the machine's user; agentic.nvim writes a log in the cache).
local xdg = vim.fn.tempname()
for _, d in ipairs({ "cache", "state", "data" }) do
  vim.fn.mkdir(xdg .. "/" .. d .. "/nvim", "p")
end

local t = Tmux.start({
  cmd = { nvim, "-u", "bench/tui_init.lua", "-i", "NONE", "-n", "-c", "luafile " .. script },
  width = 200,
  height = 50,
  cwd = root,
  env = {
    COLORTERM = "truecolor",
    XDG_CACHE_HOME = xdg .. "/cache",
    XDG_STATE_HOME = xdg .. "/state",
    XDG_DATA_HOME = xdg .. "/data",
    ACP_BENCH_CLIENT = client,
    ACP_BENCH_COUNT = count,
    ACP_BENCH_BYTES = bytes,
    ACP_BENCH_OUT = out,
    ACP_BENCH_PLUGIN = os.getenv("ACP_BENCH_PLUGIN") or "",
    ACP_BENCH_TRACE = os.getenv("ACP_BENCH_TRACE"),
    ACP_BENCH_TURNS = os.getenv("ACP_BENCH_TURNS"),
    ACP_BENCH_PRESTART = os.getenv("ACP_BENCH_PRESTART"),
    ACP_BENCH_TRANSCRIPT = os.getenv("ACP_BENCH_TRANSCRIPT"),
    ACP_BENCH_BIN_DIR = os.getenv("ACP_BENCH_BIN_DIR"),
    ACP_BENCH_SLICE_MS = os.getenv("ACP_BENCH_SLICE_MS"),
    ACP_BENCH_NEWEST_FIRST = os.getenv("ACP_BENCH_NEWEST_FIRST"),
    ACP_BENCH_GC = os.getenv("ACP_BENCH_GC"),
    COMPARE_DIR = os.getenv("COMPARE_DIR") or "",
    PLENARY_DIR = os.getenv("PLENARY_DIR") or "",
    AGENTIC_DIR = os.getenv("AGENTIC_DIR") or "",
  },
})

-- The run quits Neovim itself; the timeout only guards against a hang.
local timeout = (tonumber(os.getenv("ACP_BENCH_TIMEOUT")) or 900) * 1000
vim.wait(timeout, function()
  return vim.fn.getfsize(out) > 0
end, 200)
local text = vim.fn.filereadable(out) == 1 and table.concat(vim.fn.readfile(out), "\n") or ""
local result = text:match("RESULT [^\n]*")
local screen = result and "" or select(2, pcall(t.screen, t))
t:kill()
vim.fn.delete(out)
vim.fn.delete(xdg, "rf")
if result then
  io.stdout:write(result .. "\n")
  os.exit(0)
end
io.stdout:write(
  ("ERROR tui %s %s: %s\n%s\n"):format(client, count, text ~= "" and text or "no result (timed out)", screen or "")
)
os.exit(1)
