-- End to end: `:Acp agents` with a registry fixture read from a file (no
-- network): pick, install, chat with the installed agent by its id, update,
-- presets resolving to installed registry agents, a failed install,
-- :checkhealth, removal.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
T.require_binaries()

local dir = T.tmpdir()
local registry_file = dir .. "/registry.json"
local scenario = T.scenario(dir, {
  turns = { { steps = { { type = "text", text = "registry agent says {{prompt}}", chunkSize = 4 } } } },
})

-- The fake agent as a binary archive, the way codex-acp is published.
vim.fn.mkdir(dir .. "/pkg/bin", "p")
assert(vim.uv.fs_copyfile(T.fake_agent(), dir .. "/pkg/bin/acp-fake-agent"))
local tar = vim.system({ "tar", "-C", dir .. "/pkg", "-czf", dir .. "/fake.tar.gz", "bin" }):wait()
assert(tar.code == 0, "tar: " .. tostring(tar.stderr))
T.write_file(dir .. "/corrupt.tar.gz", T.read_file(dir .. "/fake.tar.gz"):sub(1, 5000))

-- A loopback HTTP server that announces the whole archive and then sends
-- it 1 KiB every 20 ms: an install slow enough to cancel.
local archive_bytes = T.read_file(dir .. "/fake.tar.gz")
local served = { connections = 0, closed = 0 }
local server = assert(vim.uv.new_tcp())
assert(server:bind("127.0.0.1", 0))
assert(server:listen(8, function()
  local client = assert(vim.uv.new_tcp())
  server:accept(client)
  served.connections = served.connections + 1
  local timer = assert(vim.uv.new_timer())
  local sent, started, done = 0, false, false
  local function close()
    if not done then
      done = true
      served.closed = served.closed + 1
      timer:stop()
      timer:close()
      client:close()
    end
  end
  client:read_start(function(err, data)
    if err or not data then
      return close()
    end
    if not started and data:find("\r\n\r\n", 1, true) then
      started = true
      client:write(("HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"):format(#archive_bytes))
      timer:start(0, 20, function()
        if sent >= #archive_bytes then
          return
        end
        client:write(archive_bytes:sub(sent + 1, sent + 1024), function(werr)
          if werr then
            close()
          end
        end)
        sent = sent + 1024
      end)
    end
  end)
end))
local slow_url = ("http://127.0.0.1:%d/slow.tar.gz"):format(server:getsockname().port)

local function platform()
  local u = vim.uv.os_uname()
  local os_name = ({ Linux = "linux", Darwin = "darwin" })[u.sysname] or u.sysname:lower()
  local arch = ({ arm64 = "aarch64" })[u.machine] or u.machine
  return os_name .. "-" .. arch
end

local function sha256(file)
  local out = vim.system({ "sha256sum", file }):wait()
  assert(out.code == 0, "sha256sum: " .. tostring(out.stderr))
  return out.stdout:match("^(%x+)")
end

-- `checksum = false`: the registry gives no SHA-256, the user is asked.
local function binary(archive, checksum)
  return {
    binary = {
      [platform()] = {
        archive = "file://" .. dir .. "/" .. archive,
        cmd = "./bin/acp-fake-agent",
        env = { ACP_FAKE_SCENARIO = scenario },
        sha256 = checksum ~= false and sha256(dir .. "/" .. archive) or nil,
      },
    },
  }
end

--- Write the registry fixture with fake-bin at `version`.
local function write_registry(version)
  T.write_file(
    registry_file,
    vim.json.encode({
      version = "1.0.0",
      agents = {
        {
          id = "fake-bin",
          name = "Fake Agent",
          version = version,
          description = "the scripted fake agent",
          distribution = binary("fake.tar.gz"),
        },
        {
          id = "codex-acp",
          name = "Codex CLI",
          version = "0.9.2",
          description = "stands in for codex-acp",
          distribution = binary("fake.tar.gz"),
        },
        {
          id = "broken",
          name = "Broken",
          version = "1.0.0",
          description = "an archive cut short",
          distribution = binary("corrupt.tar.gz"),
        },
        {
          id = "slow",
          name = "Slow",
          version = "1.0.0",
          description = "served slowly",
          distribution = {
            binary = {
              [platform()] = {
                archive = slow_url,
                cmd = "./bin/acp-fake-agent",
                sha256 = sha256(dir .. "/fake.tar.gz"),
              },
            },
          },
        },
        {
          id = "nosum",
          name = "No checksum",
          version = "1.0.0",
          description = "a binary the registry gives no SHA-256 for",
          distribution = binary("fake.tar.gz", false),
        },
        {
          id = "elsewhere",
          name = "Elsewhere",
          version = "1.0.0",
          description = "no build here",
          distribution = { binary = { ["plan9-mips"] = { archive = "file:///x", cmd = "x" } } },
        },
      },
    })
  )
end
write_registry("1.0.0")

local function setup(agents)
  return require("acp").setup({
    backend = { cmd = { T.backend_bin() } },
    log_level = os.getenv("ACP_TEST_LOG_LEVEL") or "debug",
    registry = { url = "file://" .. registry_file, dir = dir .. "/agents" },
    agents = agents,
  })
end
assert(setup())

-- vim.ui.select answered by the test: `pick(items)` returns the choice.
local menus = {}
local pick
vim.ui.select = function(items, opts, on_choice)
  menus[#menus + 1] = { items = items, opts = opts }
  local lines = {}
  for _, item in ipairs(items) do
    lines[#lines + 1] = opts.format_item and opts.format_item(item) or tostring(item)
  end
  menus[#menus].lines = lines
  on_choice(pick(items))
end
local function by(field, value)
  return function(items)
    for _, item in ipairs(items) do
      if item[field] == value then
        return item
      end
    end
    error(("no menu item with %s = %s"):format(field, value))
  end
end

local notes = {}
local real_notify = vim.notify
vim.notify = function(msg, level, opts)
  notes[#notes + 1] = { msg = msg, level = level }
  return real_notify(msg, level, opts)
end

local ended = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "AcpAgentInstalled",
  callback = function(a)
    ended[#ended + 1] = a.data
  end,
})
local progress = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "AcpAgentProgress",
  callback = function(a)
    progress[#progress + 1] = a.data
  end,
})

local function wait_install(id)
  local before = #ended
  return function()
    T.wait(function()
      for i = before + 1, #ended do
        if ended[i].id == id then
          return true
        end
      end
    end, "the install of " .. id .. " ended; notes: " .. vim.inspect(notes))
    for i = #ended, before + 1, -1 do
      if ended[i].id == id then
        return ended[i]
      end
    end
  end
end

T.test("the backend's registry events (golden fixtures) decode and are handled", function()
  local data = vim.json.decode(T.read_file(T.root .. "/tests/fixtures/events.json"))
  local by_name = {}
  for _, item in ipairs(data.events) do
    by_name[item.name] = item.event
  end
  local protocol = require("acp.rpc.protocol")
  for _, name in ipairs({
    "agents_listed",
    "agent_install_progress",
    "agent_installed",
    "agent_install_failed",
    "agent_removed",
  }) do
    local ev, err = protocol.decode(by_name[name])
    T.truthy(ev, name .. ": " .. tostring(err))
  end
  local listed = by_name.agents_listed
  T.contains(
    require("acp.agents.registry").format(listed.agents[1]),
    "installed 0.9.1, update to 0.9.2",
    "update shown"
  )
  T.contains(require("acp.agents.registry").format(listed.agents[2]), "installing…", "running install shown")
  local missing = vim.deepcopy(by_name.agent_installed)
  missing.version = nil
  T.eq(nil, protocol.decode(missing), "an agent_installed without version is refused")
  notes = {}
  require("acp.events").dispatch({ by_name.agent_install_failed })
  T.contains(vim.inspect(notes), "npm error code ENOTFOUND", "the failure with its output tail is shown")
end)

T.test(":Acp agents lists the registry and installs the chosen agent", function()
  local n = #menus
  pick = by("id", "fake-bin")
  local done = wait_install("fake-bin")
  vim.cmd("Acp agents")
  T.wait(function()
    return #menus > n
  end, "the agents menu")
  local menu = menus[#menus]
  T.eq("ACP registry agents", menu.opts.prompt, "menu prompt")
  local text = table.concat(menu.lines, "\n")
  T.contains(text, "Fake Agent", "agent name")
  T.contains(text, "fake-bin", "agent id")
  T.contains(text, "1.0.0 via binary", "installable version and kind")
  T.contains(text, "the scripted fake agent", "description")
  T.contains(text, "not installable here", "an agent without a build for this machine")
  local result = done()
  T.truthy(result.ok, "installed: " .. vim.inspect(result))
  T.eq("1.0.0", result.version, "version")
  T.truthy(#progress > 0, "progress was reported")
  local installed = require("acp.agents.registry").installed("fake-bin")
  T.eq(dir .. "/agents/fake-bin/1.0.0/bin/acp-fake-agent", installed.cmd[1], "installed program")
  T.contains(vim.inspect(notes), "start it with :Acp new fake-bin", "the user is told how to start it")
end)

T.test("the installed agent starts by its id with the registry's env and runs turns", function()
  T.truthy(vim.tbl_contains(require("acp.config").agent_names(), "fake-bin"), "listed among agents")
  T.truthy(
    vim.tbl_contains(require("acp.commands").complete("fake", "Acp new fake"), "fake-bin"),
    ":Acp new completes it"
  )
  local chat = T.open_chat("fake-bin", dir)
  T.eq("end_turn", T.turn(chat, "hello"), "first turn")
  T.wait_text(chat, "registry agent says hello")
  T.eq("end_turn", T.turn(chat, "again"), "second turn")
  T.wait_text(chat, "registry agent says again")
end)

T.test("your agents.<id> options apply on top of an installed agent", function()
  local ok, err = setup({ ["fake-bin"] = { env = { EXTRA = "1" }, init_timeout = 5000 } })
  T.truthy(ok, "setup accepts options without cmd for an installed agent: " .. tostring(err))
  local a = require("acp.config").agent("fake-bin")
  T.eq(dir .. "/agents/fake-bin/1.0.0/bin/acp-fake-agent", a.cmd[1], "the installed program")
  T.eq("1", a.env.EXTRA, "your env")
  T.eq(scenario, a.env.ACP_FAKE_SCENARIO, "and the registry's")
  T.eq(5000, a.init_timeout, "your init_timeout")
  assert(setup())
  local bad = require("acp.config").validate({ agents = { ["not-installed"] = { env = { X = "1" } } } })
  T.contains(
    bad,
    "or install not-installed with :Acp agents first",
    "an agent neither installed nor with a cmd is refused, naming both fixes"
  )
end)

T.test(":Acp agents update installs the newer registry version", function()
  write_registry("1.1.0")
  local done = wait_install("fake-bin")
  vim.cmd("Acp agents update")
  local result = done()
  T.truthy(result.ok, "updated")
  T.eq("1.1.0", result.version, "new version")
  T.eq("1.1.0", require("acp.agents.registry").installed("fake-bin").version, "installed.json")
  T.eq(0, vim.fn.isdirectory(dir .. "/agents/fake-bin/1.0.0"), "the old version is gone")
  local chat = T.open_chat("fake-bin", dir)
  T.eq("end_turn", T.turn(chat, "updated"), "turn with the new version")
  T.wait_text(chat, "registry agent says updated")
  notes = {}
  vim.cmd("Acp agents update")
  T.wait(function()
    return vim.inspect(notes):find("up to date", 1, true)
  end, "nothing to update")
end)

T.test("a preset resolves to its installed registry agent, else to PATH", function()
  local config = require("acp.config")
  T.eq("codex-acp", config.agent("codex").cmd[1], "before: the PATH command")
  local done = wait_install("codex-acp")
  require("acp.agents.registry").install("codex-acp")
  T.truthy(done().ok, "codex-acp installed")
  T.eq(dir .. "/agents/codex-acp/0.9.2/bin/acp-fake-agent", config.agent("codex").cmd[1], "after: the installed one")
  T.eq(scenario, config.agent("codex").env.ACP_FAKE_SCENARIO, "with the registry's env")
  -- A preset's other options stay with its registry agent.
  config.presets.codex.quirks = { missing_file_read = "empty" }
  local ok, agent = pcall(config.agent, "codex")
  config.presets.codex.quirks = nil
  T.truthy(ok, tostring(agent))
  T.eq("empty", agent.quirks.missing_file_read, "the preset's quirks kept")
end)

T.test("a failed install says why and installs nothing", function()
  notes = {}
  local done = wait_install("broken")
  require("acp.agents.registry").install("broken")
  local result = done()
  T.eq(false, result.ok, "failed")
  T.contains(result.message, "corrupt", "the reason")
  T.contains(vim.inspect(notes), "corrupt", "the user saw it")
  T.eq(nil, require("acp.agents.registry").installed("broken"), "nothing installed")
  T.eq(0, vim.fn.isdirectory(dir .. "/agents/broken"), "no half-installed version, no empty directory")
end)

T.test("a binary without a checksum is installed only once the user agrees", function()
  notes = {}
  local asked
  pick = function(items)
    asked = items
    return "Do not install"
  end
  local done = wait_install("nosum")
  require("acp.agents.registry").install("nosum")
  local result = done()
  T.eq(false, result.ok, "refused")
  T.truthy(asked and vim.tbl_contains(asked, "Install anyway"), "the user was asked")
  T.contains(menus[#menus].opts.prompt, "SHA-256", "the question says why")
  T.eq(nil, require("acp.agents.registry").installed("nosum"), "nothing installed")
  pick = function()
    return "Install anyway"
  end
  done = wait_install("nosum")
  require("acp.agents.registry").install("nosum")
  result = done()
  T.eq(true, result.ok, "installed after the user agreed: " .. tostring(result.message))
  T.truthy(require("acp.agents.registry").installed("nosum"), "installed")
end)

T.test(":Acp agents cancel stops a running install and leaves nothing", function()
  notes = {}
  local done = wait_install("slow")
  require("acp.agents.registry").install("slow")
  T.wait(function()
    for _, p in ipairs(progress) do
      if p.id == "slow" and (p.done or 0) > 0 then
        return true
      end
    end
  end, "download progress of slow")
  T.truthy(require("acp.agents.registry").installing().slow, "shown as installing")
  T.truthy(
    vim.tbl_contains(require("acp.commands").complete("", "Acp agents cancel "), "slow"),
    ":Acp agents cancel completes the running install"
  )
  vim.cmd("Acp agents cancel slow")
  local result = done()
  T.eq(false, result.ok, "not installed")
  T.contains(result.message, "cancelled", "the reason")
  T.eq(nil, require("acp.agents.registry").installing().slow, "no longer installing")
  T.eq(0, vim.fn.isdirectory(dir .. "/agents/slow"), "nothing left behind")
  T.wait(function()
    return served.closed >= 1
  end, "the download connection closed")
end)

T.test("an install ends when the backend stops, and can run again", function()
  local done = wait_install("slow")
  require("acp.agents.registry").install("slow")
  local seen = #progress
  T.wait(function()
    for i = seen + 1, #progress do
      if progress[i].id == "slow" and (progress[i].done or 0) > 0 then
        return true
      end
    end
  end, "download progress of slow")
  require("acp.rpc.backend").stop()
  local result = done()
  T.eq(false, result.ok, "not installed")
  T.contains(result.message, "stopped with the backend", "the reason")
  T.eq(nil, require("acp.agents.registry").installing().slow, "not shown as installing any more")
  -- The next install starts (a new backend) and is not refused as running.
  local again = wait_install("slow")
  require("acp.agents.registry").install("slow")
  T.wait(function()
    return require("acp.agents.registry").installing().slow ~= nil
  end, "second install started")
  require("acp.agents.registry").cancel("slow")
  T.eq(false, again().ok, "cancelled")
  T.eq(0, vim.fn.isdirectory(dir .. "/agents/slow"), "nothing left behind")
end)

T.test(":checkhealth acp shows installed registry agents and newer versions", function()
  write_registry("1.2.0")
  local refreshed
  require("acp.agents.registry").list("refresh", function(ev)
    refreshed = ev
  end)
  T.wait(function()
    return refreshed
  end, "the registry refreshed")
  vim.cmd("checkhealth acp")
  local text = T.text(vim.api.nvim_get_current_buf())
  T.contains(text, "fake-bin 1.1.0 (binary)", "installed agent")
  T.contains(text, "version 1.2.0 is available", "the newer version")
  T.contains(text, "codex-acp 0.9.2 (binary)", "the other installed agent")
  vim.cmd("bwipeout!")
end)

T.test("an installed agent can be removed from the menu", function()
  local n = #menus
  local removed = false
  vim.api.nvim_create_autocmd("User", {
    pattern = "AcpAgentRemoved",
    once = true,
    callback = function(a)
      removed = a.data
    end,
  })
  local step = 0
  pick = function(items)
    step = step + 1
    if step == 1 then
      return by("id", "fake-bin")(items)
    end
    return by("label", "Remove it")(items)
  end
  vim.cmd("Acp agents")
  T.wait(function()
    return removed
  end, "removal")
  T.eq(n + 2, #menus, "the agents menu, then the actions menu")
  T.contains(table.concat(menus[n + 1].lines, "\n"), "installed 1.1.0, update to 1.2.0", "status shown")
  T.truthy(removed.removed, "removed")
  T.eq(nil, require("acp.agents.registry").installed("fake-bin"), "not installed any more")
  T.eq(0, vim.fn.isdirectory(dir .. "/agents/fake-bin"), "its files are gone")
  local agent, err = require("acp.config").agent("fake-bin")
  T.eq(nil, agent, "no longer an agent")
  T.contains(err, "unknown agent", "error")
end)

T.run()
