---@mod tests.tui.tmux Drive a real terminal Neovim in tmux: start it at a
--- fixed size, type into it, read its screen, wait for text with a deadline.
---
--- A small module (no test framework in it) so the terminal tests
--- (tests/tui) and the tmux benches (bench/) share one driver. Runs inside
--- `nvim -l` (it uses vim.system and vim.wait). Each driver owns a private
--- tmux server (`-L`), so it never touches the user's tmux sessions, and
--- reads no tmux config (`-f /dev/null`).
---
---   local Tmux = dofile("tests/tui/tmux.lua")
---   local t = Tmux.start({ cmd = { nvim, "-u", "init.lua" }, width = 180, height = 50 })
---   t:wait_for("Ask demo", "the prompt hint")
---   t:type("hello"); t:keys("C-s")
---   print(t:screen())
---   t:kill()

local M = {}

---@class tui.Tmux
---@field socket string private server name (`tmux -L`)
---@field name string session name
---@field width integer
---@field height integer
local Tmux = {}
Tmux.__index = Tmux

local seq = 0

--- Whether tmux is installed.
---@return boolean
function M.available()
  return vim.fn.executable("tmux") == 1
end

---@param args string[]
---@return string stdout
function Tmux:_tmux(args)
  local cmd = { "tmux", "-L", self.socket, "-f", "/dev/null" }
  vim.list_extend(cmd, args)
  local res = vim.system(cmd, { text = true }):wait(10000)
  if res.code ~= 0 then
    error(("tmux %s failed (%s): %s"):format(args[1], tostring(res.code), res.stderr or ""), 2)
  end
  return res.stdout or ""
end

--- Start `cmd` in a new detached tmux session of `width` x `height`.
---@param opts {cmd: string[], width?: integer, height?: integer, env?: table<string,string>, cwd?: string}
---@return tui.Tmux
function M.start(opts)
  seq = seq + 1
  local pid = vim.fn.getpid()
  local self = setmetatable({
    socket = ("acp-tui-%d-%d"):format(pid, seq),
    name = "t" .. seq,
    width = opts.width or 180,
    height = opts.height or 50,
  }, Tmux)
  local words = { "env" }
  for k, v in pairs(opts.env or {}) do
    words[#words + 1] = k .. "=" .. v
  end
  vim.list_extend(words, opts.cmd)
  local quoted = {}
  for _, w in ipairs(words) do
    quoted[#quoted + 1] = vim.fn.shellescape(w)
  end
  local args = {
    "new-session",
    "-d",
    "-s",
    self.name,
    "-x",
    tostring(self.width),
    "-y",
    tostring(self.height),
  }
  if opts.cwd then
    vim.list_extend(args, { "-c", opts.cwd })
  end
  args[#args + 1] = table.concat(quoted, " ")
  self:_tmux(args)
  -- Keep the pane after the program exits, so a crash leaves its last screen.
  pcall(self._tmux, self, { "set-option", "-t", self.name, "remain-on-exit", "on" })
  return self
end

--- Send keys in tmux's notation (`Escape`, `C-s`, `Enter`, `i`...), each
--- argument one key or key name.
---@param ... string
function Tmux:keys(...)
  local args = { "send-keys", "-t", self.name }
  vim.list_extend(args, { ... })
  self:_tmux(args)
end

--- Type literal text (no key names).
---@param text string
function Tmux:type(text)
  self:_tmux({ "send-keys", "-t", self.name, "-l", text })
end

--- The visible screen, as text (one line per row, trailing blanks trimmed).
---@return string
function Tmux:screen()
  return self:_tmux({ "capture-pane", "-p", "-t", self.name })
end

--- Wait until `pred(screen)` is true (a string: the screen contains it,
--- plainly), polling the screen until `timeout` ms have passed. Returns the
--- screen; on timeout raises an error with `what` and the last screen.
---@param pred string|fun(screen: string): boolean
---@param what string
---@param timeout? integer ms (default 15000)
---@return string screen
function Tmux:wait_for(pred, what, timeout)
  local check = pred
  if type(pred) == "string" then
    check = function(s)
      return s:find(pred, 1, true) ~= nil
    end
  end
  local screen = ""
  local ok = vim.wait(timeout or 15000, function()
    local good, s = pcall(self.screen, self)
    if not good then
      return false
    end
    screen = s
    return check(s) and true or false
  end, 30)
  if not ok then
    error(("timed out waiting for %s; the screen was:\n%s"):format(what, screen), 2)
  end
  return screen
end

--- Wait until the screen no longer changes for `quiet` ms (default 150), at
--- most `timeout` ms: the program has drawn everything for now.
---@param timeout? integer
---@param quiet? integer
---@return string screen
function Tmux:settle(timeout, quiet)
  quiet = quiet or 150
  local last, since = nil, vim.uv.now()
  local screen = ""
  vim.wait(timeout or 5000, function()
    screen = self:screen()
    if screen ~= last then
      last, since = screen, vim.uv.now()
      return false
    end
    return vim.uv.now() - since >= quiet
  end, 30)
  return screen
end

--- Stop the session and its private server.
function Tmux:kill()
  pcall(self._tmux, self, { "kill-server" })
end

return M
