---@mod acp.health `:checkhealth acp`

local M = {}

local function probe_backend(cmd)
  -- With a log file the probe sends no "logging to stderr" warning event.
  local log = require("acp.rpc.backend").log_file()
  pcall(vim.fn.mkdir, vim.fn.fnamemodify(log, ":h"), "p")
  local args = vim.list_extend(vim.deepcopy(cmd), { "--log-file", log, "--log-level", "error" })
  local job = vim.fn.jobstart(args, { rpc = true })
  if job <= 0 then
    return nil, "could not start it"
  end
  local ok, hello = pcall(vim.rpcrequest, job, "acp.hello", { plugin_version = require("acp.version") })
  pcall(vim.rpcrequest, job, "acp.shutdown", vim.empty_dict())
  pcall(vim.fn.jobstop, job)
  if not ok then
    return nil, tostring(hello)
  end
  return hello
end

function M.check()
  local health = vim.health
  local backend = require("acp.rpc.backend")
  local config = require("acp.config")
  health.start("acp.nvim")

  if vim.fn.has("nvim-0.10") == 1 then
    -- vim.version is callable (a __call the runtime's annotations miss).
    local v = (vim.version --[[@as fun(): vim.Version]])()
    health.ok(("Neovim %d.%d.%d"):format(v.major, v.minor, v.patch))
  else
    health.error("Neovim >= 0.10 is required", { "Upgrade Neovim" })
  end

  M.check_backend(health)

  health.start("acp.nvim agents")
  local default = config.default_agent()
  for _, name in ipairs(config.agent_names()) do
    local agent = config.agent(name)
    local prog = agent and agent.cmd and agent.cmd[1]
    local label = ("%s%s: %s"):format(
      name,
      name == default and " (default)" or "",
      table.concat(agent and agent.cmd or {}, " ")
    )
    local found = prog and vim.fn.executable(prog) == 1
    local installed = name ~= "demo" and require("acp.agents.registry").resolve(name)
    if installed and found then
      health.ok(("%s (installed from the ACP registry: %s %s)"):format(label, installed.id, installed.version))
    elseif name ~= default and config.options.agents[name] == nil then
      -- A preset the user never configured is an offer, not a problem.
      health.info(("%s (preset, not configured)%s"):format(label, found and "" or "; not installed"))
    elseif found then
      health.ok(label)
    elseif name == default then
      health.error(label .. " is not found on PATH", { "Install it, or set `default_agent` in setup()" })
    else
      health.warn(label .. " is not found on PATH", { "Install it to use :Acp new " .. name })
    end
  end

  M.check_registry(health)

  health.start("acp.nvim log")
  local log = backend.log_file()
  local log_dir = vim.fn.fnamemodify(log, ":h")
  -- The backend creates the directory on start; do the same so the check is
  -- about permissions, not about a first run.
  pcall(vim.fn.mkdir, log_dir, "p")
  if vim.fn.filewritable(log_dir) == 2 then
    health.ok("log file: " .. log)
  else
    health.warn("the log directory is not writable: " .. log)
  end
end

--- The backend: which one runs (or would), where it came from, whether its
--- version is the plugin's, and where :Acp build downloads from.
---@param health table vim.health
function M.check_backend(health)
  local backend = require("acp.rpc.backend")
  local build = require("acp.build")
  local version = require("acp.version")
  local fix = { "Run :Acp build (it downloads the backend for " .. version .. ", or builds it with cargo)" }
  local cmd, err, source
  local hello = backend.info()
  if hello then
    -- The running one: what the user's chats talk to.
    cmd, source = { "(running)" }, backend.source()
  else
    cmd, err, source = backend.find_cmd()
  end
  if not cmd then
    health.error(tostring(err), fix)
  else
    local where = source and source.detail or "unknown origin"
    if hello then
      health.ok("backend running, " .. where)
    else
      health.ok(("backend: %s, %s"):format(table.concat(cmd, " "), where))
    end
    local perr
    if not hello then
      hello, perr = probe_backend(cmd)
    end
    if not hello then
      health.error("the backend did not answer the handshake: " .. tostring(perr), {
        fix[1],
        "See the log: " .. backend.log_file(),
      })
    else
      local mismatch = backend.mismatch(hello, source)
      if mismatch then
        health.error(mismatch, source and source.kind == "configured" and {} or fix)
      else
        health.ok(("backend version %s matches the plugin"):format(tostring(hello.backend_version)))
      end
    end
  end
  if require("acp.config").options.backend.prestart then
    health.info(
      "`backend.prestart` is on: setup() starts the backend and loads the chat's modules once Neovim is idle; a failure there is reported by the first :Acp"
    )
  else
    health.info("`backend.prestart` is off: the first :Acp starts the backend")
  end
  local target, platform = build.target()
  health.info(
    ("`:Acp build` downloads from %s (%s)"):format(
      build.base_url(),
      target and ("the " .. build.asset_name(version, target) .. " archive")
        or ("no archive for " .. platform .. ": it builds with cargo")
    )
  )
end

--- Installed registry agents, and whether the registry (the cached copy,
--- or the bundled one: no network here) has a newer version.
---@param health table vim.health
function M.check_registry(health)
  local registry = require("acp.agents.registry")
  health.start("acp.nvim registry agents")
  local installed = registry.installed_all()
  if #installed == 0 then
    health.info("no agent installed from the ACP registry; :Acp agents lists them (" .. registry.dir() .. ")")
    return
  end
  local listed
  if require("acp.rpc.backend").running() then
    registry.list("offline", function(ev)
      listed = ev
    end)
    vim.wait(3000, function()
      return listed ~= nil
    end, 20)
  end
  local latest = {}
  for _, a in ipairs(listed and listed.agents or {}) do
    latest[a.id] = a
  end
  for _, a in ipairs(installed) do
    local label = ("%s %s (%s): %s"):format(a.id, a.version, a.kind, table.concat(a.cmd, " "))
    local entry = latest[a.id]
    if vim.fn.executable(a.cmd[1]) ~= 1 then
      health.error(label .. " is missing its program", { "Reinstall it: :Acp agents, then pick " .. a.id })
    elseif entry and entry.update then
      health.warn(("%s; version %s is available"):format(label, entry.version), { "Update it: :Acp agents update" })
    else
      health.ok(label)
    end
  end
  if not listed then
    health.info("start the backend (:Acp) to compare with the registry's versions")
  elseif listed.message then
    health.info(listed.message)
  end
end

return M
