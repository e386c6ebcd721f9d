-- Backend memory in a long session: TOOLS tool calls (each a `tool_call` and
-- a `tool_call_update`, the fake agent's `toolCallBurst`) and CHUNKS chunks of
-- 10 bytes (lines of 99 letters and a newline, streamed 10 bytes at a time),
-- through the release backend into this Neovim.
--
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=.' -l bench/rss.lua [TOOLS CHUNKS]
--
-- Prints `RESULT {json}`: the backend's VmRSS when idle, after the session,
-- and its peak (VmHWM), in KiB.

local lib = dofile(vim.fn.getcwd() .. "/bench/lib.lua")
local api = vim.api

local TOOLS = tonumber(_G.arg[1]) or 10000
local CHUNKS = tonumber(_G.arg[2]) or 1000000
local CHUNK = 10
local line = string.rep("abcdefghijklmnopqrstuvwxyz", 4):sub(1, 99) .. "\n"
local lines = math.ceil(CHUNKS * CHUNK / #line)
local text = string.rep(line, lines):sub(1, CHUNKS * CHUNK)

local dir = lib.tempdir()
lib.setup(lib.write_scenario(dir, {
  recordHistory = false,
  turns = {
    {
      steps = {
        { type = "toolCallBurst", count = TOOLS },
        { type = "text", text = text, chunkSize = CHUNK },
      },
    },
  },
}))
local pid = lib.start_backend()
local chat = lib.open_chat(dir)
local idle = lib.vm_kib(pid, "VmRSS")
local t0 = vim.uv.hrtime()
lib.run_turn(chat, "go")
local wall_s = (vim.uv.hrtime() - t0) / 1e9
local after = lib.vm_kib(pid, "VmRSS")
local hwm = lib.vm_kib(pid, "VmHWM")

-- Nothing lost: every tool call and every letter reached the transcript.
local transcript = api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
local letters = 0
local done = 0
for _, l in ipairs(transcript) do
  if l:match("^abc") then
    letters = letters + #l
  end
  if l:find("step %d+: ok") then
    done = done + 1
  end
end
local _, want_letters = text:gsub("[a-z]", "")
if letters < want_letters then
  lib.fail(("the transcript has %d letters, expected %d"):format(letters, want_letters))
end
pcall(require("acp.rpc.backend").stop)

lib.out("RESULT " .. vim.json.encode({
  tool_calls = TOOLS,
  chunks = CHUNKS,
  chunk_bytes = CHUNK,
  payload_mb = CHUNKS * CHUNK / 1e6,
  wall_s = wall_s,
  tool_results_seen = done,
  backend_idle_rss_kib = idle,
  backend_rss_after_kib = after,
  backend_hwm_kib = hwm,
}))
os.exit(0)
