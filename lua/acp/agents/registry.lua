---@mod acp.agents.registry `:Acp agents`: agents from the ACP registry.
---
--- The protocol project publishes a registry of agents (id, name, version,
--- how to install). The backend loads it (cached, with a snapshot bundled
--- in `registry/registry.json` for offline use) and installs agents under
--- `stdpath("data")/acp/agents/<id>/<version>`; each installed agent's
--- `<id>/installed.json` (written by the backend) says how to start it, and
--- an installed agent is started by its id: `:Acp new <id>`.

local util = require("acp.util")
local config = require("acp.config")
local installed = require("acp.config.installed")

local M = {}

--- The registry's published index (its README).
M.DEFAULT_URL = installed.DEFAULT_URL

--- Registry ids a preset resolves to when one of them is installed, best first.
M.preset_ids = installed.preset_ids

---@class acp.RegistryState
---@field pending table<string, fun(ev: table)> request_id -> callback
---@field installing table<string, {message: string, done?: integer, total?: integer}>
---@field on_installed table<string, fun(ok: boolean, ev: table)[]>
local state = { pending = {}, installing = {}, on_installed = {} }
local counter = 0

--- Where registry agents are installed (absolute, `~` expanded).
---@return string
function M.dir()
  return installed.dir(config.options.registry)
end

--- What every `acp.agents_*` command carries: where things are.
---@return table
function M.places()
  local opts = config.options.registry or {}
  local bundled = util.plugin_root() .. "/registry/registry.json"
  return {
    url = opts.url or M.DEFAULT_URL,
    dir = M.dir(),
    cache_dir = vim.fn.stdpath("cache") .. "/acp",
    bundled = vim.fn.filereadable(bundled) == 1 and bundled or nil,
  }
end

--- The installed agent `id`, from its `installed.json`.
---@param id string
---@return acp.InstalledAgent?
function M.installed(id)
  return installed.get(id, config.options.registry)
end

--- Every installed agent, sorted by id.
---@return acp.InstalledAgent[]
function M.installed_all()
  return installed.all(config.options.registry)
end

--- The installed agent an agent name starts (see acp.config.installed).
---@param name string
---@return acp.InstalledAgent?
function M.resolve(name)
  return installed.resolve(name, config.options.registry)
end

--- Send an `acp.agents_*` command, starting the backend if needed.
---@param method string
---@param params table
---@return boolean ok, string? err
local function send(method, params)
  local backend = require("acp.rpc.backend")
  local ok, err = backend.ensure()
  if not ok then
    return false, err
  end
  local res, rerr = backend.request(method, params)
  if res == nil then
    return false, rerr
  end
  return true
end

--- Ask for the registry's agents; `cb` gets the `agents_listed` event.
---@param mode "cached"|"refresh"|"offline"
---@param cb fun(ev: table)
---@return boolean ok, string? err
function M.list(mode, cb)
  counter = counter + 1
  local id = "agents-" .. counter
  state.pending[id] = cb
  local ok, err = send("acp.agents_list", { request_id = id, registry = M.places(), mode = mode })
  if not ok then
    state.pending[id] = nil
  end
  return ok, err
end

local function fire(pattern, data)
  vim.api.nvim_exec_autocmds("User", { pattern = pattern, data = data, modeline = false })
end

--- A one-line status in the command line, not kept in :messages (unless
--- `hl`: a warning, kept); replaces the previous one.
---@param text string
---@param hl? string
local function status(text, hl)
  -- Cut to the screen so that it never scrolls into a hit-enter prompt.
  local width = math.max(vim.o.columns - 12, 10)
  if vim.fn.strdisplaywidth(text) > width then
    text = vim.fn.strcharpart(text, 0, width - 1) .. "…"
  end
  vim.api.nvim_echo({ { text, hl } }, hl ~= nil, {})
end

local function progress_text(id, p)
  local text = ("%s: %s"):format(id, p.message)
  if p.done and p.total and p.total > 0 then
    text = text .. (" %d%%"):format(math.floor(p.done * 100 / p.total))
  elseif p.done then
    text = text .. (" %.1f MB"):format(p.done / 1e6)
  end
  return text
end

--- Install (or update) the registry agent `id`. Progress is shown in the
--- command line and sent as `User AcpAgentProgress` autocommands (data:
--- `{id, message, done?, total?}`), for fidget-style displays; `cb` runs
--- when it ends.
--- A binary the registry gives no SHA-256 for is refused by the backend
--- until the user agrees (asked with vim.ui.select); `opts.allow_unverified`
--- skips the question.
---@param id string
---@param cb? fun(ok: boolean, ev: table)
---@param opts? { allow_unverified?: boolean }
function M.install(id, cb, opts)
  if state.installing[id] then
    util.notify(("%s is already being installed; :Acp agents cancel %s stops it"):format(id, id), vim.log.levels.WARN)
    return
  end
  state.installing[id] = { message = "starting" }
  if cb then
    state.on_installed[id] = state.on_installed[id] or {}
    table.insert(state.on_installed[id], cb)
  end
  local ok, err = send("acp.agents_install", {
    id = id,
    registry = M.places(),
    allow_unverified = (opts and opts.allow_unverified) == true,
  })
  if not ok then
    state.installing[id] = nil
    state.on_installed[id] = nil
    util.notify(("could not install %s: %s"):format(id, tostring(err)), vim.log.levels.ERROR)
    return
  end
  -- After a vim.ui.select the screen still shows the menu: redraw first,
  -- or each progress line would ask "Press ENTER".
  vim.cmd.redraw()
  status(("acp.nvim: installing %s…"):format(id))
end

--- Cancel the running install of `id`.
---@param id string
function M.cancel(id)
  if not state.installing[id] then
    util.notify(("%s is not being installed"):format(id), vim.log.levels.WARN)
    return
  end
  send("acp.agents_cancel", { id = id })
end

--- Remove the installed agent `id`.
---@param id string
function M.remove(id)
  local ok, err = send("acp.agents_remove", { id = id, registry = M.places() })
  if not ok then
    util.notify(("could not remove %s: %s"):format(id, tostring(err)), vim.log.levels.ERROR)
  end
end

--- Installs in progress: id -> last progress.
---@return table<string, {message: string, done?: integer, total?: integer}>
function M.installing()
  return state.installing
end

local function finish(id, ok, ev)
  state.installing[id] = nil
  local cbs = state.on_installed[id] or {}
  state.on_installed[id] = nil
  fire("AcpAgentInstalled", { id = id, ok = ok, message = ev.message, version = ev.version })
  for _, cb in ipairs(cbs) do
    cb(ok, ev)
  end
end

--- The backend stopped: its installs and listings will not answer. An
--- install it was running left nothing behind but a temporary directory,
--- which the next install of the agent removes.
function M.on_backend_exit()
  for id in pairs(state.installing) do
    finish(id, false, { message = ("the install of %s stopped with the backend; run it again"):format(id) })
  end
  state.pending = {}
end
require("acp.rpc.hooks").on("stopped", "acp.agents.registry", M.on_backend_exit)

--- The backend's registry events.
---@param ev acp.ev.AgentsListed|acp.ev.AgentInstallProgress|acp.ev.AgentInstalled|acp.ev.AgentInstallFailed|acp.ev.AgentRemoved
function M.on_event(ev)
  local t = ev.type
  if t == "agents_listed" then
    local cb = state.pending[tostring(ev.request_id)]
    state.pending[tostring(ev.request_id)] = nil
    if cb then
      vim.schedule(function()
        cb(ev)
      end)
    end
  elseif t == "agent_install_progress" then
    local p = { message = ev.message, done = ev.done, total = ev.total }
    state.installing[ev.id] = p
    status("acp.nvim: " .. progress_text(ev.id, p))
    fire("AcpAgentProgress", { id = ev.id, message = ev.message, done = ev.done, total = ev.total })
  elseif t == "agent_installed" then
    util.notify(("%s %s is installed; start it with :Acp new %s"):format(ev.name, ev.version, ev.id))
    finish(ev.id, true, ev)
  elseif t == "agent_install_failed" and ev.unverified then
    -- No checksum: the user decides, told why (the backend installs
    -- nothing until then). Callbacks wait for the second attempt.
    local cbs = state.on_installed[ev.id]
    state.installing[ev.id] = nil
    state.on_installed[ev.id] = nil
    vim.schedule(function()
      vim.ui.select({ "Install anyway", "Do not install" }, {
        prompt = ev.message .. "\nInstall it anyway?",
      }, function(choice)
        if choice == "Install anyway" then
          M.install(ev.id, nil, { allow_unverified = true })
          state.on_installed[ev.id] = cbs
        else
          util.notify(("%s was not installed"):format(ev.id), vim.log.levels.WARN)
          state.on_installed[ev.id] = cbs
          finish(ev.id, false, ev)
        end
      end)
    end)
  elseif t == "agent_install_failed" then
    local failed = ev --[[@as acp.ev.AgentInstallFailed]] -- its type says which event it is
    util.notify(failed.message, failed.cancelled and vim.log.levels.WARN or vim.log.levels.ERROR)
    finish(failed.id, false, failed)
  elseif t == "agent_removed" then
    if ev.removed then
      util.notify(("%s is removed"):format(ev.id))
    else
      util.notify(tostring(ev.message), vim.log.levels.WARN)
    end
    fire("AcpAgentRemoved", { id = ev.id, removed = ev.removed })
  end
end

--- One line of the picker.
---@param a table an agent of `agents_listed`
---@return string
function M.format(a)
  local status
  if state.installing[a.id] or a.installing then
    status = "installing…"
  elseif a.update then
    status = ("installed %s, update to %s"):format(a.installed_version, a.version)
  elseif a.installed_version then
    status = "installed " .. a.installed_version
  elseif #(a.kinds or {}) == 0 then
    status = "not installable here"
  else
    status = ("%s via %s"):format(a.version, table.concat(a.kinds, "/"))
    if a.unverified then
      status = status .. " (no checksum)"
    end
  end
  local desc = a.description ~= vim.NIL and a.description or ""
  return ("%-22s %-14s %-32s %s"):format(a.name, a.id, status, desc)
end

--- What to do with an installed agent.
---@param a table
---@param open fun(opts: acp.OpenOpts) opens a chat (the caller's, `require("acp").open`)
local function actions(a, open)
  ---@type {label: string, run: fun()}[]
  local choices = {
    {
      label = "Open a chat with it",
      run = function()
        open({ agent = a.id })
      end,
    },
    {
      label = a.update and ("Update to " .. a.version) or "Reinstall",
      run = function()
        M.install(a.id)
      end,
    },
    {
      label = "Remove it",
      run = function()
        M.remove(a.id)
      end,
    },
  }
  if state.installing[a.id] then
    choices = { {
      label = "Cancel the install",
      run = function()
        M.cancel(a.id)
      end,
    } }
  end
  vim.ui.select(choices, {
    prompt = ("%s (%s %s)"):format(a.name, a.id, a.installed_version or a.version),
    format_item = function(c)
      return c.label
    end,
  }, function(choice)
    if choice then
      choice.run()
    end
  end)
end

--- The notice of a listing served from a copy: which copy, in a line that
--- fits 80 columns (the backend's message, with the reason, is logged).
---@param ev table an `agents_listed` event with a `message`
---@return string
function M.copy_notice(ev)
  if ev.origin == "bundled" then
    return "registry not fetched; bundled list shown (see :Acp log)"
  elseif ev.origin == "cache" and tonumber(ev.fetched_at) then
    local age = math.max(0, os.time() - ev.fetched_at)
    local when = age < 120 and "just now"
      or age < 7200 and ("%d min ago"):format(age / 60)
      or age < 172800 and ("%d h ago"):format(age / 3600)
      or ("%d days ago"):format(age / 86400)
    return ("registry not fetched; list of %s shown (see :Acp log)"):format(when)
  end
  return tostring(ev.message)
end

--- List the registry for a command: its failure, or why a copy was used,
--- is told to the user; `fn` gets a listing that has agents.
---@param mode "cached"|"refresh"|"offline"
---@param fn fun(ev: table)
local function with_listing(mode, fn)
  status(mode == "refresh" and "acp.nvim: fetching the agent registry…" or "acp.nvim: reading the agent registry…")
  local ok, err = M.list(mode, function(ev)
    if not ev.agents then
      util.notify(tostring(ev.message), vim.log.levels.ERROR)
      return
    end
    if ev.message then
      -- Offline this came with every listing, two lines that needed Enter
      -- before the picker: now one short line (the reason is in the log).
      status("acp.nvim: " .. M.copy_notice(ev), "WarningMsg")
    end
    fn(ev)
  end)
  if not ok then
    util.notify(tostring(err), vim.log.levels.ERROR)
  end
end

--- `:Acp agents`: pick an agent of the registry; an agent not installed is
--- installed, an installed one offers chat, update/reinstall and removal.
---@param open fun(opts: acp.OpenOpts) opens a chat with an installed agent (`require("acp").open`: the registry is below the chats and does not require them)
function M.pick(open)
  with_listing("cached", function(ev)
    local items = vim.deepcopy(ev.agents)
    local listed = {}
    for _, a in ipairs(items) do
      listed[a.id] = true
    end
    -- Installed agents the registry no longer lists stay manageable.
    for _, i in ipairs(ev.installed or {}) do
      if not listed[i.id] then
        items[#items + 1] = {
          id = i.id,
          name = i.name,
          version = i.version,
          installed_version = i.version,
          description = "(no longer in the registry)",
          kinds = {},
        }
      end
    end
    vim.ui.select(items, { prompt = "ACP registry agents", format_item = M.format, kind = "acp_agents" }, function(a)
      if not a then
        return
      end
      if a.installed_version or state.installing[a.id] then
        actions(a, open)
      elseif #(a.kinds or {}) == 0 then
        util.notify(
          ("%s cannot be installed on this machine (no build for it, and no npm or PyPI package)"):format(a.name),
          vim.log.levels.WARN
        )
      else
        M.install(a.id)
      end
    end)
  end)
end

--- `:Acp agents update`: fetch the registry and update every installed
--- agent with a newer version there.
function M.update()
  with_listing("refresh", function(ev)
    local n = 0
    for _, a in ipairs(ev.agents) do
      if a.update then
        n = n + 1
        M.install(a.id)
      end
    end
    if n == 0 then
      util.notify(
        #(ev.installed or {}) == 0 and "no registry agent is installed; see :Acp agents"
          or "every installed registry agent is up to date"
      )
    end
  end)
end

return M
