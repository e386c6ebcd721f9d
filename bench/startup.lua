-- Start-up as a user sees it: `:Acp` (the real command, no arguments) with
-- the default configuration, i.e. the demo agent (the bundled fake agent and
-- its demo scenario) and the release backend, in a fresh headless Neovim.
--
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=.' -l bench/startup.lua
--
-- Prints `RESULT {json}`: milliseconds from running `:Acp` to the chat
-- window showing the transcript, and to `session_started` (the backend
-- spawned, the agent initialized, the session opened). One cold start per
-- process; bench/run.sh runs it several times and the report takes the median.

local lib = dofile(vim.fn.getcwd() .. "/bench/lib.lua")
local uv = vim.uv

dofile(lib.root .. "/plugin/acp.lua")
require("acp").setup({})
local chats = require("acp.chat")

local t0 = uv.hrtime()
vim.cmd("Acp")
-- `:Acp` draws the chat's windows and makes the chat in them after the
-- redraw (acp.layout.frame): it is there once the event loop ran.
---@type acp.Chat?
local chat
lib.wait(function()
  chat = chats.current()
  return chat ~= nil and vim.fn.bufwinid(chat.bufnr) ~= -1
end, "the chat window", 10000)
---@cast chat acp.Chat
local window_ms = (uv.hrtime() - t0) / 1e6
lib.wait(function()
  return chat.session_id ~= nil
end, "session_started", 30000)
local session_ms = (uv.hrtime() - t0) / 1e6
if chat.agent.name ~= "demo" then
  lib.fail("expected the demo agent, got " .. tostring(chat.agent.name))
end
pcall(require("acp.rpc.backend").stop)
lib.out("RESULT " .. vim.json.encode({ window_ms = window_ms, session_started_ms = session_ms }))
os.exit(0)
