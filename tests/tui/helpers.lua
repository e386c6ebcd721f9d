-- Helpers of the terminal tests: registration, a Neovim in tmux with the
-- ordinary config of tests/tui/init.lua, remote evaluation, assertions.
-- One instance for the runner and every test file (they dofile it).
if _G.acp_tui_helpers then
  return _G.acp_tui_helpers
end
local Tmux = dofile(vim.fn.getcwd() .. "/tests/tui/tmux.lua")

local H = { tests = {}, root = vim.fn.getcwd() }

--- Register a test.
---@param name string
---@param fn fun()
function H.test(name, fn)
  H.tests[#H.tests + 1] = { name = name, fn = fn }
end

--- A new temporary directory.
function H.tmpdir()
  local d = vim.fn.tempname()
  vim.fn.mkdir(d, "p")
  return vim.fn.resolve(d)
end

--- Write a scenario for the fake agent (a table, or JSON text when the order
--- of an object's keys matters, as a form's fields do); returns its path.
function H.scenario(dir, name, scenario)
  local path = ("%s/%s.json"):format(dir, name)
  local text = type(scenario) == "string" and scenario or vim.json.encode(scenario)
  vim.fn.writefile(vim.split(text, "\n", { plain = true }), path)
  return path
end

---@class tui.Nvim: tui.Tmux
---@field chan integer RPC channel to the Neovim in tmux
---@field home string

--- Start Neovim in tmux (180x50 unless given) with the ordinary config.
---@param opts? {files?: table<string, string>, agents?: table<string, table>, default?: string, width?: integer, height?: integer, cwd?: string, args?: string[], init?: string, env?: table}
---@return table nvim driver + `lua(code, ...)` evaluation + `kill()`
function H.nvim(opts)
  opts = opts or {}
  local home = H.tmpdir()
  local agents = {}
  for name, sc in pairs(opts.agents or {}) do
    agents[name] = H.scenario(home, name, sc)
  end
  for name, text in pairs(opts.files or {}) do
    vim.fn.writefile(vim.split(text, "\n", { plain = true }), home .. "/" .. name)
  end
  local sock = home .. "/nvim.sock"
  local env = {
    XDG_STATE_HOME = home .. "/state",
    XDG_DATA_HOME = home .. "/data",
    XDG_CONFIG_HOME = home .. "/config",
    XDG_CACHE_HOME = home .. "/cache",
    ACP_TEST_ROOT = H.root,
    ACP_TUI_AGENTS = vim.json.encode(next(agents) and agents or vim.empty_dict()),
    ACP_TUI_DEFAULT = opts.default or "demo",
    TERM = "tmux-256color",
  }
  for k, v in pairs(opts.env or {}) do
    env[k] = v
  end
  local cmd = { vim.v.progpath, "--listen", sock, "-i", "NONE" }
  -- Before -u: a later --clean would drop the -u file.
  vim.list_extend(cmd, opts.args or {})
  vim.list_extend(cmd, { "-u", opts.init or (H.root .. "/tests/tui/init.lua") })
  local t = Tmux.start({ cmd = cmd, width = opts.width, height = opts.height, env = env, cwd = opts.cwd or home })
  t.home = home
  -- The socket file may exist a moment before Neovim accepts on it.
  local ok = vim.wait(10000, function()
    if not vim.uv.fs_stat(sock) then
      return false
    end
    local good, chan = pcall(vim.fn.sockconnect, "pipe", sock, { rpc = true })
    if good and chan > 0 then
      t.chan = chan
      return true
    end
    return false
  end, 20)
  if not ok then
    local screen = t:screen()
    t:kill()
    error("Neovim did not start in tmux; screen:\n" .. screen)
  end
  --- Evaluate Lua in the Neovim under test.
  function t:lua(code, ...)
    return vim.rpcrequest(self.chan, "nvim_exec_lua", code, { ... })
  end
  local kill = t.kill
  function t:kill()
    pcall(vim.fn.chanclose, self.chan)
    kill(self)
    vim.fn.delete(self.home, "rf")
  end
  return t
end

function H.contains(haystack, needle, what)
  if not haystack:find(needle, 1, true) then
    error(("%s: %q not found in:\n%s"):format(what or "missing text", needle, haystack), 2)
  end
end

function H.not_contains(haystack, needle, what)
  if haystack:find(needle, 1, true) then
    error(("%s: %q unexpectedly found in:\n%s"):format(what or "unexpected text", needle, haystack), 2)
  end
end

function H.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(
      ("%s\n  expected: %s\n  actual:   %s"):format(what or "values differ", vim.inspect(expected), vim.inspect(actual)),
      2
    )
  end
end

function H.truthy(v, what)
  if not v then
    error(what or "expected a true value", 2)
  end
  return v
end

--- Count the occurrences of a plain string.
function H.count(haystack, needle)
  local n, i = 0, 1
  while true do
    local s, e = haystack:find(needle, i, true)
    if not s then
      return n
    end
    n, i = n + 1, e + 1
  end
end

H.Tmux = Tmux
_G.acp_tui_helpers = H
return H
