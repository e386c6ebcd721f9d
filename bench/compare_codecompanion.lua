-- Benchmark 2 against CodeCompanion.nvim: the same fake agent streams COUNT
-- chunks of BYTES bytes (99 letters and a newline) into CodeCompanion's ACP
-- chat, measured as bench/stream.lua measures acp.nvim: wall time from the
-- prompt to the end of the turn (CodeCompanionRequestFinished), Neovim's CPU
-- time, and the lateness of a 5 ms repeating timer.
--
--   COMPARE_DIR=/path/to/codecompanion.nvim PLENARY_DIR=/path/to/plenary.nvim \
--     nvim --headless -u NONE -i NONE --cmd 'set rtp^=.' -l bench/compare_codecompanion.lua COUNT BYTES
--
-- The plugin is never part of this repository: bench/run.sh finds or clones
-- it into a throwaway directory (see doc/benchmarks.md). Its ACP adapter is
-- configured the documented way (`adapters.acp` with `extend`), with the
-- fake agent as the command; a first short turn starts the connection so
-- the measured turn is streaming only.

local lib = dofile(vim.fn.getcwd() .. "/bench/lib.lua")
local api = vim.api
local uv = vim.uv

local COUNT = tonumber(_G.arg[1]) or 20000
local BYTES = tonumber(_G.arg[2]) or 100
local plugin_dir = os.getenv("COMPARE_DIR")
local plenary_dir = os.getenv("PLENARY_DIR")
if not plugin_dir or vim.fn.isdirectory(plugin_dir .. "/lua/codecompanion") ~= 1 then
  lib.fail("COMPARE_DIR must be a checkout of codecompanion.nvim")
end
if not plenary_dir or vim.fn.isdirectory(plenary_dir .. "/lua/plenary") ~= 1 then
  lib.fail("PLENARY_DIR must be a checkout of plenary.nvim (a dependency of codecompanion.nvim)")
end
vim.opt.rtp:prepend(plenary_dir)
vim.opt.rtp:prepend(plugin_dir)

local letters = string.rep("abcdefghijklmnopqrstuvwxyz", math.ceil(BYTES / 26) + 1)
local chunk = letters:sub(1, BYTES - 1) .. "\n"
local dir = lib.tempdir()
local scenario = lib.write_scenario(dir, {
  recordHistory = false,
  turns = {
    { match = "warm", steps = { { type = "text", text = "ready" } } },
    { match = "go", steps = { { type = "text", text = string.rep(chunk, COUNT), chunkSize = BYTES } } },
  },
})

vim.cmd.cd(dir)
require("codecompanion").setup({
  adapters = {
    acp = {
      bench = function()
        return require("codecompanion.adapters").extend("goose", {
          name = "bench",
          formatted_name = "Bench",
          commands = { default = { lib.release .. "acp-fake-agent", "--scenario", scenario } },
        })
      end,
    },
  },
  interactions = { chat = { adapter = "bench" } },
  opts = { log_level = "ERROR" },
})

local finished = 0
api.nvim_create_autocmd("User", {
  pattern = "CodeCompanionRequestFinished",
  callback = function()
    finished = finished + 1
  end,
})

local chat = require("codecompanion").chat({ messages = { { role = "user", content = "warm" } }, auto_submit = true })
if not chat then
  lib.fail("CodeCompanion opened no chat")
end
lib.wait(function()
  return finished >= 1
end, "the warm-up turn", 60000)
-- Let the chat settle (it adds the next user header after the turn).
vim.wait(200)

-- The prompt goes where a user types it: at the end of the chat buffer.
local n = api.nvim_buf_line_count(chat.bufnr)
api.nvim_buf_set_lines(chat.bufnr, n, n, false, { "go" })

local stop_stall = lib.stall_meter()
local c0 = lib.cpu_seconds()
local t0 = uv.hrtime()
chat:submit()
lib.wait(function()
  return finished >= 2
end, "the streamed turn")
local wall_ms = (uv.hrtime() - t0) / 1e6
local cpu = lib.cpu_seconds() - c0
local stall = stop_stall()

-- Nothing lost: every letter of every chunk is in the chat buffer.
local seen = 0
for _, l in ipairs(api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)) do
  if l:match("^abc") then
    local _, k = l:gsub("[a-z]", "")
    seen = seen + k
  end
end
local _, per_chunk = chunk:gsub("[a-z]", "")
if seen < COUNT * per_chunk then
  lib.fail(("the chat has %d letters, expected at least %d"):format(seen, COUNT * per_chunk))
end

local payload_mb = COUNT * BYTES / 1e6
lib.out("RESULT " .. vim.json.encode({
  client = "codecompanion.nvim",
  count = COUNT,
  bytes = BYTES,
  payload_mb = payload_mb,
  wall_ms = wall_ms,
  cpu_s = cpu,
  cpu_s_per_mb = cpu / payload_mb,
  stall_max_ms = stall.max_ms,
  stall_p99_ms = stall.p99_ms,
  timer_samples = stall.samples,
}))
os.exit(0)
