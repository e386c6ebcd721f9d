-- Helpers for the test files: registration, waiting, assertions, fixtures.
local T = {}

local tests = {}

-- print() in `nvim -l` does not always end lines; the runner parses lines.
local function out(line)
  io.stdout:write(line .. "\n")
end

T.root = os.getenv("ACP_TEST_ROOT") or vim.fn.getcwd()

-- `-u NONE` loads no plugin scripts: load ours as a user's Neovim would.
dofile(T.root .. "/plugin/acp.lua")

--- Register a test.
---@param name string
---@param fn fun()
function T.test(name, fn)
  tests[#tests + 1] = { name = name, fn = fn }
end

--- Close every chat so the next test starts clean (the backend keeps running).
function T.reset()
  local chat = require("acp.chat")
  for _, c in ipairs(vim.list_slice(chat.list)) do
    pcall(c.close, c)
  end
  pcall(vim.cmd, "silent! only")
  pcall(vim.cmd, "silent! tabonly")
end

-- A request to the backend from inside an event's dispatch fails the test
-- (see acp.events.dispatch): it can reach the backend while an earlier
-- request waits, and Neovim closes the channel when the answers cross.
local nested = {}
local rpcrequest = vim.rpcrequest

--- acp.events.dispatch is on the call stack.
---@return boolean
local function in_dispatch()
  local events = package.loaded["acp.events"]
  if not events then
    return false
  end
  local level = 3
  while true do
    local info = debug.getinfo(level, "f")
    if not info then
      return false
    end
    if info.func == events.dispatch then
      return true
    end
    level = level + 1
  end
end

---@diagnostic disable-next-line: duplicate-set-field
vim.rpcrequest = function(...)
  if in_dispatch() then
    nested[#nested + 1] =
      debug.traceback(("vim.rpcrequest(%s) inside an event's dispatch"):format(tostring(select(2, ...))), 2)
  end
  return rpcrequest(...)
end

--- Run all registered tests, print results, exit.
function T.run()
  local passed, failed = 0, 0
  for _, t in ipairs(tests) do
    nested = {}
    local ok, err = xpcall(t.fn, debug.traceback)
    if ok and #nested > 0 then
      ok, err = false, nested[1]
    end
    if ok then
      passed = passed + 1
      out("ok - " .. t.name)
    else
      failed = failed + 1
      out("FAIL - " .. t.name)
      for line in tostring(err):gmatch("[^\n]+") do
        out("  " .. line)
      end
    end
    pcall(T.reset)
  end
  pcall(function()
    require("acp.rpc.backend").stop()
  end)
  out(("# passed %d failed %d"):format(passed, failed))
  io.stdout:flush()
  os.exit(failed > 0 and 1 or 0)
end

--- Wait for a condition (never a bare sleep); error with `what` on timeout.
---@param pred fun(): any
---@param what string
---@param timeout? integer ms
function T.wait(pred, what, timeout)
  local ok = vim.wait(timeout or 15000, function()
    local good, v = pcall(pred)
    return good and v
  end, 10)
  if not ok then
    error("timed out waiting for: " .. what, 2)
  end
end

function T.eq(expected, actual, what)
  if not vim.deep_equal(expected, actual) then
    error(
      ("%s\n  expected: %s\n  actual:   %s"):format(what or "values differ", vim.inspect(expected), vim.inspect(actual)),
      2
    )
  end
end

function T.truthy(v, what)
  if not v then
    error(what or "expected a true value", 2)
  end
  return v
end

--- All lines of a buffer.
function T.lines(buf)
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

--- Text of a buffer.
function T.text(buf)
  return table.concat(T.lines(buf), "\n")
end

--- A `session` event of the backend (snake_case, as Lua receives it)
--- carrying one session change for `chat`.
function T.session_event(chat, change)
  return { type = "session", chat_id = chat.chat_id, change = change }
end

--- Chat `chat_id`'s review of `path` as its newest `review_changed`
--- carried it (the plugin's cache of the backend's; nil: nothing under
--- review). Tests observe reviews through these events, as the plugin does.
---@return table?
function T.review_latest(chat_id, path)
  local review = require("acp.edits.review")
  local entry = review.files[review.normalize(path)]
  local rv = entry and entry.latest and entry.latest[chat_id]
  return type(rv) == "table" and rv or nil
end

--- A text content block.
function T.text_block(t)
  return { type = "text", text = t }
end

function T.contains(haystack, needle, what)
  if not haystack:find(needle, 1, true) then
    error(("%s: %q not found in:\n%s"):format(what or "missing text", needle, haystack), 2)
  end
end

function T.not_contains(haystack, needle, what)
  if haystack:find(needle, 1, true) then
    error(("%s: %q unexpectedly found in:\n%s"):format(what or "unexpected text", needle, haystack), 2)
  end
end

--- 1-based number of the first line containing `needle`, or nil.
function T.find_line(buf, needle)
  for i, l in ipairs(T.lines(buf)) do
    if l:find(needle, 1, true) then
      return i
    end
  end
end

--- Count lines containing `needle`.
function T.count_lines(buf, needle)
  local n = 0
  for _, l in ipairs(T.lines(buf)) do
    if l:find(needle, 1, true) then
      n = n + 1
    end
  end
  return n
end

--- A new temporary directory.
function T.tmpdir()
  local d = vim.fn.tempname()
  vim.fn.mkdir(d, "p")
  return vim.fn.resolve(d)
end

--- Write a file.
function T.write_file(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

--- Read a file.
function T.read_file(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

--- Replace the backend's rpc calls by recorders (for tests without a
--- backend). Returns the list of recorded {method, params}.
function T.fake_backend()
  local backend = require("acp.rpc.backend")
  local sent = {}
  backend.notify = function(method, params)
    sent[#sent + 1] = { method, params }
    return true
  end
  backend.request = function(method, params)
    sent[#sent + 1] = { method, params }
    return true
  end
  backend.ensure = function()
    return true
  end
  backend.running = function()
    return true
  end
  return sent
end

--- The `session_started` event of `chat` with the demo agent (session
--- `s-<chat id>` unless named).
---@param chat table
---@param session_id? string
---@return table
function T.session_started(chat, session_id)
  return {
    type = "session_started",
    chat_id = chat.chat_id,
    session_id = session_id or ("s-" .. chat.chat_id),
    agent_name = "demo",
    capabilities = {},
  }
end

--- A chat whose session has started, driven by hand-made events.
function T.fake_chat(opts)
  opts = opts or {}
  require("acp").setup(opts.setup or {})
  local chat = require("acp").open({ agent = opts.agent or "demo", cwd = opts.cwd or T.root })
  require("acp.events").dispatch({
    {
      type = "session_started",
      chat_id = chat.chat_id,
      session_id = "sess-" .. chat.chat_id,
      agent_name = "demo",
      capabilities = {},
      modes = opts.modes,
      config_options = opts.config_options,
    },
  })
  return chat
end

--- Path of the fake agent binary (debug build).
function T.fake_agent()
  return T.root .. "/target/debug/acp-fake-agent"
end

--- Write a scenario for the fake agent as JSON and return its path.
function T.scenario(dir, scenario)
  local path = dir .. "/scenario-" .. tostring(vim.uv and vim.uv.hrtime() or vim.loop.hrtime()) .. ".json"
  T.write_file(path, vim.json.encode(scenario))
  return path
end

--- Path of the backend binary (debug build).
function T.backend_bin()
  return T.root .. "/target/debug/acp-nvim"
end

--- Configure the plugin to use the debug backend and agents playing the given
--- scenarios: `{ name = scenario_table_or_path }`.
---@param scenarios table<string, table|string>
---@param dir string where scenario files are written
function T.setup_fake(scenarios, dir)
  local agents = {}
  for name, sc in pairs(scenarios) do
    local path = type(sc) == "string" and sc or T.scenario(dir, sc)
    agents[name] = { cmd = { T.fake_agent(), "--scenario", path } }
  end
  local cfg = {
    backend = { cmd = { T.backend_bin() } },
    agents = agents,
    log_level = os.getenv("ACP_TEST_LOG_LEVEL") or "debug",
  }
  assert(require("acp").setup(cfg), "setup failed")
end

--- Stop reasons of ended turns per chat id (from AcpTurnEnd).
T.turns = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "AcpTurnEnd",
  callback = function(a)
    local list = T.turns[a.data.chat_id] or {}
    T.turns[a.data.chat_id] = list
    list[#list + 1] = a.data.stop_reason
  end,
})

--- Open a chat and wait until its session started.
function T.open_chat(agent, cwd)
  local chat = assert(require("acp").open({ agent = agent, cwd = cwd or T.root }))
  T.wait(function()
    return chat.session_id ~= nil
  end, "session of " .. agent .. " started; transcript:\n" .. T.text(chat.bufnr))
  return chat
end

--- Send a prompt to a chat and wait for the end of the turn; returns the stop reason.
function T.turn(chat, text, timeout)
  return T.turn_blocks(chat, { { type = "text", text = text } }, timeout)
end

--- Send a prompt of content blocks and wait for its turn to end; returns its stop reason.
function T.turn_blocks(chat, blocks, timeout)
  local before = #(T.turns[chat.chat_id] or {})
  assert(chat:send(blocks), "prompt refused")
  T.wait(function()
    return #(T.turns[chat.chat_id] or {}) > before
  end, "turn end; transcript:\n" .. T.text(chat.bufnr), timeout)
  return T.turns[chat.chat_id][before + 1]
end

--- Wait until the transcript contains `needle`.
function T.wait_text(chat, needle, timeout)
  T.wait(function()
    return T.text(chat.bufnr):find(needle, 1, true) ~= nil
  end, ("%q in the transcript"):format(needle), timeout)
end

--- Put the cursor of the chat's transcript window on the first line holding `needle`.
function T.cursor_on(chat, needle)
  local win = assert(vim.fn.win_findbuf(chat.bufnr)[1], "transcript window")
  vim.api.nvim_set_current_win(win)
  local l = assert(T.find_line(chat.bufnr, needle), needle .. " in the transcript")
  vim.api.nvim_win_set_cursor(win, { l, 0 })
end

--- 0-based rows of `buf` the review highlights with `group` (its
--- line_hl_group, e.g. "AcpReviewAdd"), in order.
---@param buf integer
---@param group string
---@return integer[]
function T.review_rows(buf, group)
  local rows = {}
  local ns = require("acp.edits.review").ns
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })) do
    if m[4].line_hl_group == group then
      rows[#rows + 1] = m[2]
    end
  end
  table.sort(rows)
  return rows
end

--- Skip marker: true when the binaries the end-to-end tests need are built.
function T.have_binaries()
  return vim.fn.executable(T.backend_bin()) == 1 and vim.fn.executable(T.fake_agent()) == 1
end

--- Stop here with one failing test when the binaries are not built (the
--- file's other tests need the backend and the fake agent).
function T.require_binaries()
  if not T.have_binaries() then
    T.test("binaries are built", function()
      error("build them first: cargo build -p acp-nvim -p acp-testkit")
    end)
    T.run()
  end
end

return T
