---@mod acp.rpc.backend The backend process (`acp-nvim`): discovery, start,
--- handshake, requests, death.
---
--- One backend per Neovim, started on first use with jobstart(rpc=true). Fast
--- calls use vim.rpcrequest; anything that may take time is a notification
--- whose outcome arrives as events (see doc/protocol.md).
---
--- The handshake (`acp.hello`) is a request when a caller needs the backend
--- at once (M.start), and a notification answered by a call of M.on_hello
--- when it can wait (M.start_async, what `:Acp` uses): the process starts
--- while Neovim keeps drawing and taking keys (issue #30).

local util = require("acp.util")
local config = require("acp.config")
local hooks = require("acp.rpc.hooks")

local M = {}

---@class acp.BackendState
---@field job? integer job id == channel id
---@field hello? table the `acp.hello` answer
---@field stopping boolean an exit now is expected
---@field stderr string[] last stderr lines of the process
---@field source? acp.BackendSource where the running backend came from
---@field exit_reported table<integer, boolean> jobs whose death was reported
---@field greeting? acp.Greeting the handshake sent as a notification, not answered yet
---@field review_ended integer files whose review ended with the backend the last stop() stopped

---@class acp.Greeting
---@field job integer
---@field cmd string the program, for messages
---@field waiting fun(ok: boolean, err?: string)[] called with the outcome
---@field timer? uv.uv_timer_t the wait for an answer

---@type acp.BackendState
local state = { job = nil, hello = nil, stopping = false, stderr = {}, exit_reported = {}, review_ended = 0 }

--- Most stderr lines kept for messages.
local STDERR_LINES = 20

--- How long an `acp.hello` notification waits for its answer before the
--- handshake is done as a request: a backend older than the notification
--- form answers only that (and then names the version mismatch). A field
--- so tests can shorten it.
M.greeting_wait_ms = 5000

--- The log file the backend writes.
---@return string
function M.log_file()
  return vim.fn.stdpath("log") .. "/acp.log"
end

--- The plugin's own backend or demo agent (see acp.rpc.binary).
---@param name string "acp-nvim" or "acp-fake-agent"
---@param root? string plugin directory
---@return string? path, acp.BackendSource? source
function M.plugin_binary(name, root)
  return require("acp.rpc.binary").plugin_binary(name, root)
end

--- The backend command and where it comes from: $ACP_BACKEND, else
--- `backend.cmd` from the config, else the plugin's own (see plugin_binary).
---@return string[]? cmd, string? err, acp.BackendSource? source
function M.find_cmd()
  local env = vim.env.ACP_BACKEND
  if env and env ~= "" then
    if vim.fn.executable(env) ~= 1 then
      return nil, ("ACP_BACKEND=%s is not an executable file; point it at an acp-nvim binary or unset it"):format(env)
    end
    return { env }, nil, { kind = "configured", detail = "configured by $ACP_BACKEND" }
  end
  local configured = config.options.backend and config.options.backend.cmd
  local c = type(configured) == "string" and { configured } or configured --[[@as string[]?]]
  if c then
    if vim.fn.executable(c[1]) ~= 1 then
      return nil, ("backend.cmd %q is not an executable file; fix `backend.cmd` in setup()"):format(c[1])
    end
    return vim.deepcopy(c), nil, { kind = "configured", detail = "configured by backend.cmd in setup()" }
  end
  local bin, source = M.plugin_binary("acp-nvim")
  if bin then
    return { bin }, nil, source
  end
  return nil,
    ("the backend is not installed; run :Acp build (it downloads the backend for %s, or builds it with cargo)"):format(
      require("acp.version")
    )
end

--- Where the running backend came from (nil when none runs).
---@return acp.BackendSource?
function M.source()
  return state.job and state.source or nil
end

--- The sentence for a backend whose version is not the plugin's, naming
--- the fix: :Acp build for the plugin's own backend; for one the user
--- configured, rebuilding it or dropping the setting.
---@param hello table the `acp.hello` answer
---@param source? acp.BackendSource
---@return string? message nil when the versions match
function M.mismatch(hello, source)
  local version = require("acp.version")
  if hello.ok and hello.backend_version == version then
    return nil
  end
  local head = ("acp.nvim backend %s does not match plugin %s"):format(tostring(hello.backend_version), version)
  if source and source.kind == "configured" then
    return ("%s (%s); rebuild that backend from this plugin's version, or remove the setting so :Acp build can install the matching one"):format(
      head,
      source.detail
    )
  end
  return ("%s; run :Acp build to install the backend for %s"):format(head, version)
end

--- True while a backend process runs.
---@return boolean
function M.running()
  return state.job ~= nil
end

--- The job id (== rpc channel) of the running backend.
---@return integer?
function M.channel()
  return state.job
end

--- The handshake answer of the running backend.
---@return table?
function M.info()
  return state.hello
end

---@type fun(g?: acp.Greeting, ok: boolean, err?: string)
local finish_greeting

local function on_exit(job, code)
  if state.job ~= job then
    return
  end
  state.job = nil
  state.hello = nil
  -- Installs and listings ran in that backend: they will not answer. So
  -- did the review: never drawn but dead (issue 29). A stop asked for
  -- (`:Acp restart`) says it in its own message.
  state.review_ended = (state.review_ended or 0) + hooks.run("stopped", state.stopping == true)
  local g = state.greeting
  if g and g.job == job then
    -- Died before it answered: as the request form says it.
    local tail = table.concat(state.stderr, "\n")
    state.greeting = nil
    finish_greeting(
      g,
      false,
      ("the backend %s did not answer the handshake (it exited with code %d); see %s%s"):format(
        g.cmd,
        code,
        M.log_file(),
        tail ~= "" and ("\n" .. tail) or ""
      )
    )
    return
  end
  if state.stopping or state.exit_reported[job] then
    return
  end
  state.exit_reported[job] = true
  local tail = table.concat(state.stderr, "\n")
  local msg = ("the backend exited (code %d); its log is %s. Run :Acp restart to start it again."):format(
    code,
    M.log_file()
  )
  if tail ~= "" then
    msg = msg .. "\n" .. tail
  end
  util.notify(msg, vim.log.levels.ERROR)
  hooks.run("died", M.log_file())
end

local function on_stderr(_, data)
  for _, line in ipairs(data or {}) do
    if line ~= "" then
      state.stderr[#state.stderr + 1] = line
      if #state.stderr > STDERR_LINES then
        table.remove(state.stderr, 1)
      end
    end
  end
end

local leave_autocmd = false

--- Spawn the backend (no handshake yet).
---@return integer? job, string? err, string? prog
local function spawn()
  local cmd, err, source = M.find_cmd()
  if not cmd then
    return nil, err
  end
  state.source = source
  local log_file = M.log_file()
  vim.fn.mkdir(vim.fn.fnamemodify(log_file, ":h"), "p")
  vim.list_extend(cmd, { "--log-file", log_file, "--log-level", config.options.log_level or "info" })
  state.stderr = {}
  state.stopping = false
  local ok, job = pcall(vim.fn.jobstart, cmd, { rpc = true, on_exit = on_exit, on_stderr = on_stderr })
  if not ok or type(job) ~= "number" or job <= 0 then
    return nil, ("could not start the backend %s: %s"):format(cmd[1], tostring(job))
  end
  state.job = job
  return job, nil, cmd[1]
end

--- Check a handshake answer and keep it, or stop the backend.
---@param hello any the `acp.hello` answer (or the request's error)
---@param hok boolean the request did not fail
---@param prog string
---@return boolean ok, string? err
local function accept_hello(hello, hok, prog)
  if not hok or type(hello) ~= "table" then
    M.stop()
    local tail = table.concat(state.stderr, "\n")
    return false,
      ("the backend %s did not answer the handshake (%s); see %s%s"):format(
        prog,
        tostring(hello),
        M.log_file(),
        tail ~= "" and ("\n" .. tail) or ""
      )
  end
  -- Compared here too, not only by the backend: an old backend names an
  -- old fix, and only the plugin knows where the backend came from.
  local mismatch = M.mismatch(hello, state.source)
  if mismatch then
    M.stop()
    return false, mismatch
  end
  state.hello = hello
  if not leave_autocmd then
    leave_autocmd = true
    vim.api.nvim_create_autocmd("VimLeavePre", {
      group = vim.api.nvim_create_augroup("acp_backend", { clear = true }),
      callback = function()
        M.stop()
      end,
    })
  end
  return true
end

--- End a greeting (already taken out of `state`): its callers learn the
--- outcome (after the current call, never inside the RPC call that brought
--- the answer).
---@param g? acp.Greeting
---@param ok boolean
---@param err? string
function finish_greeting(g, ok, err)
  if not g then
    return
  end
  if g.timer then
    g.timer:stop()
    g.timer:close()
  end
  vim.schedule(function()
    for _, cb in ipairs(g.waiting) do
      local cok, cerr = pcall(cb, ok, err)
      if not cok then
        util.notify("starting the backend: " .. tostring(cerr), vim.log.levels.ERROR)
      end
    end
  end)
end

--- The handshake as a request (waits for the answer).
---@param job integer
---@param prog string
---@return boolean ok, string? err
local function greet_now(job, prog)
  local g = state.greeting
  state.greeting = nil
  local hok, hello = pcall(vim.rpcrequest, job, "acp.hello", { plugin_version = require("acp.version") })
  local ok, err = accept_hello(hello, hok, prog)
  finish_greeting(g, ok, err)
  return ok, err
end

--- Start the backend and do the handshake, waiting for it. A greeting
--- sent by start_async and not answered yet is done now, as a request.
---@return boolean ok, string? err
function M.start()
  if state.job and state.hello then
    return true
  end
  local g = state.greeting
  if g and state.job == g.job then
    return greet_now(g.job, g.cmd)
  end
  local job, err, prog = spawn()
  if not job then
    return false, err
  end
  ---@cast prog string
  return greet_now(job, prog)
end

--- Start the backend without waiting: the handshake goes as a notification
--- and `done(ok, err)` is called (from the event loop) when it is answered.
--- With a backend already greeted, `done` is called at once.
---@param done fun(ok: boolean, err?: string)
function M.start_async(done)
  if state.job and state.hello then
    done(true)
    return
  end
  local g = state.greeting
  if g and state.job == g.job then
    g.waiting[#g.waiting + 1] = done
    return
  end
  local job, err, prog = spawn()
  if not job then
    done(false, err)
    return
  end
  ---@cast prog string
  g = { job = job, cmd = prog, waiting = { done } }
  state.greeting = g
  local sent = pcall(vim.rpcnotify, job, "acp.hello", { plugin_version = require("acp.version") })
  if not sent then
    greet_now(job, prog)
    return
  end
  -- A backend older than the notification form never answers it (it warns
  -- that acp.hello must be a request): ask again the way it understands.
  local uv = vim.uv or vim.loop
  local timer = assert(uv.new_timer())
  g.timer = timer
  timer:start(
    M.greeting_wait_ms,
    0,
    vim.schedule_wrap(function()
      if state.greeting == g and state.job == job then
        g.timer = nil
        greet_now(job, prog)
      end
    end)
  )
end

--- Start the backend ahead of the first chat (the `backend.prestart`
--- option; acp.chat.opening.prepare calls this once Neovim has drawn its
--- first screen), so `:Acp` finds it running and only the agent starts then
--- (spawning the backend blocked the editor 16-40 ms of the 69-75 ms to a
--- ready chat on a loaded machine, issue #30). Silent: a backend that is
--- missing, fails the handshake or has another version is reported by the
--- first command that needs it, which tries again.
function M.prestart()
  if state.job or vim.v.exiting ~= vim.NIL then
    return
  end
  M.start_async(function() end)
end

--- The backend's answer to an `acp.hello` notification (it calls this with
--- nvim_exec_lua). An answer nobody waits for (the handshake was done as a
--- request meanwhile, or that backend was stopped) is ignored.
---@param hello table
function M.on_hello(hello)
  local g = state.greeting
  if not g or state.job ~= g.job or state.hello then
    return
  end
  state.greeting = nil
  local ok, err = accept_hello(hello, true, g.cmd)
  finish_greeting(g, ok, err)
end

--- The backend, started if needed. Errors are returned, not raised.
---@return boolean ok, string? err
function M.ensure()
  if state.job and state.hello then
    return true
  end
  return M.start()
end

--- A fast request. Returns nil and an error sentence on failure.
---@param method string
---@param params table
---@return any result, string? err
function M.request(method, params)
  if not state.job then
    return nil, "the backend is not running; run :Acp restart"
  end
  local ok, res = pcall(vim.rpcrequest, state.job, method, params)
  if not ok then
    return nil, tostring(res)
  end
  return res
end

--- A notification (never blocks). Returns false when there is no backend.
---@param method string
---@param params table
---@return boolean
function M.notify(method, params)
  if not state.job then
    util.notify("the backend is not running; run :Acp restart", vim.log.levels.ERROR)
    return false
  end
  local ok = pcall(vim.rpcnotify, state.job, method, params)
  return ok
end

--- Stop the backend (agents are shut down by it first).
function M.stop()
  local job = state.job
  state.review_ended = 0
  if not job then
    return
  end
  local g = state.greeting
  state.greeting = nil
  finish_greeting(g, false, "the backend was stopped before it answered the handshake")
  state.stopping = true
  pcall(vim.rpcrequest, job, "acp.shutdown", vim.empty_dict())
  pcall(vim.fn.jobstop, job)
  -- Wait for the exit so a restart never overlaps two backends.
  vim.fn.jobwait({ job }, 2000)
  -- Its exit may come later than the wait (and is then ignored): the
  -- review and the installs go now.
  state.review_ended = state.review_ended + hooks.run("stopped", true)
  state.job = nil
  state.hello = nil
end

--- Files whose review ended with the backend the last `stop()` stopped.
---@return integer
function M.review_ended()
  return state.review_ended or 0
end

--- Stop the backend if it runs, start a new one and open every chat again
--- (with new sessions).
---@return boolean ok, string? err
function M.restart()
  M.stop()
  local ok, err = M.start()
  if not ok then
    return false, err
  end
  hooks.run("restarted")
  return true
end

return M
