-- `:Acp` inside a real TUI Neovim (started by bench/tui.lua in tmux, with the
-- ordinary config of bench/tui_init.lua): the command a user types, with the
-- default configuration (the demo agent, release binaries when built), once
-- the editor is idle.
--
--   ACP_BENCH_SCRIPT=bench/tui_startup.lua nvim -l bench/tui.lua acp|cheap 0
--
--   ACP_BENCH_CLIENT acp, or cheap: the cheapest possible client, measured
--                   the same way in the same editor set-up (a command that
--                   opens a split with a "starting" line, spawns the same
--                   demo agent itself, and is ready when `session/new`
--                   answers: no backend, no plugin), so a loaded machine
--                   weighs on both
--   ACP_BENCH_OUT   file that gets the line `RESULT {json}` (or `ERROR msg`)
--
-- Measured (milliseconds from the start of `:Acp`):
--   command_ms      the command returned (the editor takes keys again)
--   command_cpu_ms  the main thread's CPU time in the command (its work,
--                   without the waits for a core of a loaded machine)
--   drawn_ms        the first redraw that showed the chat's window ended
--   ready_ms        `session_started` handled (backend spawned and greeted,
--                   the agent initialized, the session opened)
-- and where the command's time went (each on the command path only):
--   require_ms      loading the plugin's modules (first `require`s)
--   spawn_ms        jobstart of the backend
--   rpc_ms          requests the command waited for (acp.hello, acp.open)
-- and what the event loop waited for between the command and "ready" (the
-- command included; the editor takes no keys meanwhile):
--   blocked_rpc_ms  requests (acp.hello when it is a request, acp.open)
--   blocked_spawn_ms jobstart of the backend

local uv = vim.uv
local api = vim.api

-- CPU time of the main thread: on a loaded machine the wall time of a
-- command is mostly waiting for a core; this is the work it did.
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

local root = vim.fn.getcwd()
local plugin_root = (os.getenv("ACP_BENCH_PLUGIN") or "") ~= "" and os.getenv("ACP_BENCH_PLUGIN") or root
local OUT = os.getenv("ACP_BENCH_OUT") or (root .. "/target/bench-results/tui_startup.out")
local CLIENT = os.getenv("ACP_BENCH_CLIENT") or "acp"

local function write_out(line)
  local f = assert(io.open(OUT, "w"))
  f:write(line .. "\n")
  f:close()
end

local function fail(msg)
  write_out("ERROR startup: " .. msg)
  vim.cmd("qall!")
end

-- What the command path spends, by kind. Counted only while `on` (the
-- command runs), so the measuring itself stays out of the way afterwards.
local spent = { require_ms = 0, spawn_ms = 0, rpc_ms = 0, blocked_rpc_ms = 0, blocked_spawn_ms = 0 }
local on = false
-- From the start of the command until `session_started` was handled.
local until_ready = false
local depth = 0
local orig_require = require
_G.require = function(name)
  if not on or package.loaded[name] ~= nil then
    return orig_require(name)
  end
  depth = depth + 1
  local t = uv.hrtime()
  local ok, mod = pcall(orig_require, name)
  depth = depth - 1
  if depth == 0 then
    spent.require_ms = spent.require_ms + (uv.hrtime() - t) / 1e6
  end
  if not ok then
    error(mod, 0)
  end
  return mod
end
local orig_jobstart = vim.fn.jobstart
vim.fn.jobstart = function(...)
  local t = uv.hrtime()
  local r = orig_jobstart(...)
  if on then
    spent.spawn_ms = spent.spawn_ms + (uv.hrtime() - t) / 1e6
  end
  if until_ready then
    spent.blocked_spawn_ms = spent.blocked_spawn_ms + (uv.hrtime() - t) / 1e6
  end
  return r
end
local orig_rpcrequest = vim.rpcrequest
vim.rpcrequest = function(...)
  local t = uv.hrtime()
  local r = { pcall(orig_rpcrequest, ...) }
  if on then
    spent.rpc_ms = spent.rpc_ms + (uv.hrtime() - t) / 1e6
  end
  if until_ready then
    spent.blocked_rpc_ms = spent.blocked_rpc_ms + (uv.hrtime() - t) / 1e6
  end
  if not r[1] then
    error(r[2], 0)
  end
  return unpack(r, 2)
end

vim.opt.rtp:prepend(plugin_root)
dofile(plugin_root .. "/plugin/acp.lua")

local t0, command_ms, drawn_ms, ready_ms, command_cpu_ms
local chat_buf
local ns = api.nvim_create_namespace("acp.bench.startup")
local saw_chat = false
api.nvim_set_decoration_provider(ns, {
  on_win = function(_, _, buf)
    if chat_buf and buf == chat_buf then
      saw_chat = true
    end
  end,
  on_end = function()
    if saw_chat and not drawn_ms then
      drawn_ms = (uv.hrtime() - t0) / 1e6
    end
  end,
})

local function finish()
  if CLIENT == "acp" then
    pcall(require("acp.rpc.backend").stop)
  end
  write_out("RESULT " .. vim.json.encode({
    command_ms = command_ms,
    command_cpu_ms = command_cpu_ms,
    drawn_ms = drawn_ms,
    ready_ms = ready_ms,
    require_ms = spent.require_ms,
    spawn_ms = spent.spawn_ms,
    rpc_ms = spent.rpc_ms,
    blocked_rpc_ms = spent.blocked_rpc_ms,
    blocked_spawn_ms = spent.blocked_spawn_ms,
  }))
  vim.cmd("qall!")
end

--- The cheapest client: `:AcpCheap` draws a split with a "starting" line
--- and spawns the demo agent; ready once `session/new` answers.
local function run_cheap()
  local agent = require("acp.rpc.binary").plugin_binary("acp-fake-agent")
  if not agent then
    return fail("no demo agent built")
  end
  api.nvim_create_user_command("AcpCheap", function()
    t0 = uv.hrtime()
    local c0 = thread_cpu_ms()
    local buf = api.nvim_create_buf(false, true)
    chat_buf = buf
    api.nvim_buf_set_lines(buf, 0, -1, false, { "starting…" })
    vim.cmd("botright vsplit")
    api.nvim_win_set_buf(0, buf)
    local stdin, stdout = uv.new_pipe(), uv.new_pipe()
    uv.spawn(agent, { args = {}, stdio = { stdin, stdout, nil } }, function() end)
    local pending, next_id, waiting = "", 0, {}
    local function request(method, params, cb)
      next_id = next_id + 1
      waiting[next_id] = cb
      stdin:write(vim.json.encode({ jsonrpc = "2.0", id = next_id, method = method, params = params }) .. "\n")
    end
    stdout:read_start(function(_, data)
      if not data then
        return
      end
      vim.schedule(function()
        pending = pending .. data
        while true do
          local nl = pending:find("\n", 1, true)
          if not nl then
            break
          end
          local ok, msg = pcall(vim.json.decode, pending:sub(1, nl - 1))
          pending = pending:sub(nl + 1)
          if ok and type(msg) == "table" and msg.id and waiting[msg.id] then
            local cb = waiting[msg.id]
            waiting[msg.id] = nil
            cb(msg.result)
          end
        end
      end)
    end)
    request("initialize", { protocolVersion = 1, clientCapabilities = {} }, function()
      request("session/new", { cwd = root, mcpServers = {} }, function()
        api.nvim_buf_set_lines(buf, 0, -1, false, { "ready" })
        ready_ms = (uv.hrtime() - t0) / 1e6
        stdin:close()
      end)
    end)
    command_ms = (uv.hrtime() - t0) / 1e6
    command_cpu_ms = thread_cpu_ms() - c0
  end, {})
  api.nvim_input(":AcpCheap<CR>")
end

local function wait_for_both()
  local timer = assert(uv.new_timer())
  local waited = 0
  timer:start(5, 5, function()
    waited = waited + 5
    vim.schedule(function()
      if timer:is_closing() then
        return
      end
      if (ready_ms or CLIENT == "codecompanion") and drawn_ms then
        timer:stop()
        timer:close()
        finish()
      elseif waited > 30000 then
        timer:stop()
        timer:close()
        fail(("timed out: drawn %s, ready %s"):format(tostring(drawn_ms), tostring(ready_ms)))
      end
    end)
  end)
end

--- CodeCompanion.nvim (COMPARE_DIR, PLENARY_DIR: checkouts) set up as in a
--- user's config, with the demo agent as its ACP adapter; `:CodeCompanionChat`
--- typed. It connects to the agent at the first prompt, so only the
--- command and the window are measured (`ready_ms` is left out).
local function run_codecompanion()
  local plugin_dir, plenary_dir = os.getenv("COMPARE_DIR") or "", os.getenv("PLENARY_DIR") or ""
  if
    vim.fn.isdirectory(plugin_dir .. "/lua/codecompanion") ~= 1
    or vim.fn.isdirectory(plenary_dir .. "/lua/plenary") ~= 1
  then
    return fail("COMPARE_DIR and PLENARY_DIR must be checkouts of codecompanion.nvim and plenary.nvim")
  end
  local agent = require("acp.rpc.binary").plugin_binary("acp-fake-agent")
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
            commands = { default = { agent } },
          })
        end,
      },
    },
    interactions = { chat = { adapter = "bench" } },
    strategies = { chat = { adapter = "bench" } },
    opts = { log_level = "ERROR" },
  })
  api.nvim_create_user_command("BenchCC", function()
    local wins = {}
    for _, w in ipairs(api.nvim_list_wins()) do
      wins[w] = true
    end
    t0 = uv.hrtime()
    local c0 = thread_cpu_ms()
    local ok, err = pcall(vim.cmd, "CodeCompanionChat")
    command_ms = (uv.hrtime() - t0) / 1e6
    command_cpu_ms = thread_cpu_ms() - c0
    if not ok then
      return fail(":CodeCompanionChat failed: " .. tostring(err))
    end
    for _, w in ipairs(api.nvim_list_wins()) do
      if not wins[w] then
        chat_buf = api.nvim_win_get_buf(w)
      end
    end
    chat_buf = chat_buf or api.nvim_get_current_buf()
  end, {})
  api.nvim_input(":BenchCC<CR>")
end

local function run()
  if CLIENT == "cheap" then
    run_cheap()
    return wait_for_both()
  elseif CLIENT == "codecompanion" then
    run_codecompanion()
    return wait_for_both()
  end
  -- The chat's buffer is not known before the command creates it.
  api.nvim_create_autocmd("BufNew", {
    callback = function(a)
      if not chat_buf and vim.startswith(api.nvim_buf_get_name(a.buf), "acp://chat/") then
        chat_buf = a.buf
      end
    end,
  })
  -- Typed, as a user would: the keys go through the editor's input loop,
  -- which redraws after the command as it does for a user (a command run
  -- from a callback would be drawn only once the callbacks queued after it
  -- ran). The clock starts when the command's handler is entered.
  local commands = require("acp.commands")
  local orig_run = commands.run
  commands.run = function(...)
    commands.run = orig_run
    on = true
    until_ready = true
    t0 = uv.hrtime()
    local c0 = thread_cpu_ms()
    local ok, err = pcall(orig_run, ...)
    command_ms = (uv.hrtime() - t0) / 1e6
    command_cpu_ms = thread_cpu_ms() - c0
    on = false
    if not ok then
      return fail(":Acp failed: " .. tostring(err))
    end
    local function hook(chat)
      chat_buf = chat.bufnr
      local orig = chat.on_session_started
      chat.on_session_started = function(self, ev)
        orig(self, ev)
        until_ready = false
        ready_ms = ready_ms or (uv.hrtime() - t0) / 1e6
      end
    end
    local loaded = package.loaded["acp.chat"]
    local chat = loaded and loaded.current()
    if chat then
      -- A plugin that makes the chat in the command.
      return hook(chat)
    end
    -- The chat's windows are drawn first (acp.chat.layout.frame) and the chat
    -- made in them after the redraw: its buffer is the frame's.
    for _, win in ipairs(api.nvim_list_wins()) do
      if vim.wo[win].winbar:find("starting", 1, true) then
        chat_buf = api.nvim_win_get_buf(win)
      end
    end
    if not chat_buf then
      return fail(":Acp drew no chat window")
    end
    local poll = assert(uv.new_timer())
    poll:start(0, 1, function()
      vim.schedule(function()
        local mod = package.loaded["acp.chat"]
        local c = mod and mod.of_buf and mod.of_buf(chat_buf)
        if c and not poll:is_closing() then
          poll:stop()
          poll:close()
          hook(c)
        end
      end)
    end)
  end
  api.nvim_input(":Acp<CR>")
  wait_for_both()
end

-- Once the editor is up and idle (the first screen drawn, the config's
-- autocommands run).
vim.defer_fn(run, 500)
