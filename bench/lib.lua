-- Helpers shared by the Neovim benchmark scripts (bench/*.lua):
--   local lib = dofile(vim.fn.getcwd() .. "/bench/lib.lua")
-- Each script prints one line `RESULT {json}`; bench/run.sh keeps the last.

local uv = vim.uv

local M = {}

M.root = vim.fn.getcwd()
M.release = M.root .. "/target/release/"

--- One line on stdout (bench/run.sh reads it from the log).
---@param line string
function M.out(line)
  io.stdout:write(line .. "\n")
  io.stdout:flush()
end

--- Prints `ERROR msg` and exits 1.
---@param msg string
function M.fail(msg)
  M.out("ERROR " .. msg)
  os.exit(1)
end

--- vim.wait that fails the bench on timeout (a hang guard, not a measure).
---@param pred fun(): boolean
---@param what string
---@param timeout? integer ms
function M.wait(pred, what, timeout)
  if not vim.wait(timeout or 600000, pred, 1) then
    M.fail("timed out waiting for " .. what)
  end
end

--- This Neovim's user + system CPU time, in seconds.
---@return number
function M.cpu_seconds()
  local r = uv.getrusage()
  return r.utime.sec + r.utime.usec / 1e6 + r.stime.sec + r.stime.usec / 1e6
end

--- VmRSS (or another Vm field such as VmHWM) of a process, in KiB.
---@param pid integer
---@param field string
---@return integer?
function M.vm_kib(pid, field)
  local f = io.open(("/proc/%d/status"):format(pid), "r")
  if not f then
    return nil
  end
  local s = f:read("*a")
  f:close()
  return tonumber(s:match(field .. ":%s*(%d+)"))
end

--- A fresh directory (symlinks resolved, as the backend resolves paths).
---@return string
function M.tempdir()
  local dir = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(dir, "p")
  return dir
end

--- Writes a fake agent scenario into `dir` and returns its path.
---@param dir string
---@param scenario table
---@return string
function M.write_scenario(dir, scenario)
  local path = dir .. "/scenario.json"
  local f = assert(io.open(path, "w"))
  f:write(vim.json.encode(scenario))
  f:close()
  return path
end

--- Loads the plugin with the release backend and a `bench` agent playing
--- `scenario`.
---@param scenario_path string
function M.setup(scenario_path)
  dofile(M.root .. "/plugin/acp.lua")
  require("acp").setup({
    agents = { bench = { cmd = { M.release .. "acp-fake-agent", "--scenario", scenario_path } } },
    backend = { cmd = { M.release .. "acp-nvim" } },
  })
end

--- Starts the backend; returns its pid.
---@return integer
function M.start_backend()
  local backend = require("acp.rpc.backend")
  local ok, err = backend.ensure()
  if not ok then
    M.fail("backend did not start: " .. tostring(err))
  end
  local pid = vim.fn.jobpid(backend.channel())
  M.wait(function()
    return M.vm_kib(pid, "VmRSS") ~= nil
  end, "backend /proc entry", 5000)
  return pid
end

--- Opens a chat on the bench agent in `cwd` and waits for session_started.
---@param cwd string
---@return acp.Chat
function M.open_chat(cwd)
  local chat = require("acp").open({ agent = "bench", cwd = cwd })
  if not chat then
    M.fail("open failed")
  end
  M.wait(function()
    return chat.session_id ~= nil
  end, "session_started", 30000)
  return chat
end

local listeners = nil

--- Calls `on_event(ev)` for every event the backend sends, after the plugin
--- handled its batch.
---@param on_event fun(ev: table)
function M.watch_events(on_event)
  if not listeners then
    listeners = {}
    local events = require("acp.events")
    local dispatch = events.dispatch
    events.dispatch = function(evs)
      dispatch(evs)
      for _, ev in ipairs(evs or {}) do
        for _, l in ipairs(listeners) do
          l(ev)
        end
      end
    end
  end
  listeners[#listeners + 1] = on_event
end

--- Sends `text` as a prompt and waits until the turn ended.
---@param chat acp.Chat
---@param text string
function M.run_turn(chat, text)
  local ended = false
  M.watch_events(function(ev)
    if ev.type == "turn_ended" and ev.chat_id == chat.chat_id then
      ended = true
    end
  end)
  chat:send({ { type = "text", text = text } })
  M.wait(function()
    return ended
  end, "the turn to end")
end

--- Nearest-rank percentile of a sorted list.
---@param sorted number[]
---@param p number 0..1
---@return number
function M.percentile(sorted, p)
  if #sorted == 0 then
    return 0
  end
  return sorted[math.max(1, math.ceil(#sorted * p))]
end

--- Starts a 5 ms repeating timer that records how late it fires (the
--- event-loop stall). Call the returned function to stop it; it returns
--- `{max_ms, p99_ms, samples}`.
---@return fun(): { max_ms: number, p99_ms: number, samples: integer }
function M.stall_meter()
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
  return function()
    timer:stop()
    timer:close()
    table.sort(lateness)
    return { max_ms = lateness[#lateness] or 0, p99_ms = M.percentile(lateness, 0.99), samples = #lateness }
  end
end

return M
