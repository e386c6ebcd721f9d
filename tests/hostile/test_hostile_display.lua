-- The hostile suite in Neovim (issue 25): tests/hostile/agent.py against the
-- real backend and plugin. Agent text with newlines and escapes must render
-- and leave every prompt answerable by its key (U1/E1); URL questions open
-- only plain http(s) links, shown safe and shortened (E2); a duplicated
-- permission option id is refused (P9); writes into .git/ and, with
-- permission.ask_terminal, terminal commands are asked for (Policies); reads
-- an agent cancels do not stop the backend; the backend's memory stays bounded
-- under the read and terminal floods (P11, T3).
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

-- HOSTILE_ONLY=P11 runs the tests whose name holds it.
local only = os.getenv("HOSTILE_ONLY")
local register = T.test
T.test = function(name, fn)
  if not only or name:find(only, 1, true) then
    register(name, fn)
  end
end

local dir = T.tmpdir()
local AGENT = T.root .. "/tests/hostile/agent.py"

local agents = {}
for _, mode in ipairs({ "display", "urls", "p9", "p11", "t3", "cancelread", "gitwrite", "askterm" }) do
  agents[mode] = { cmd = { "python3", AGENT, mode, dir .. "/verdict-" .. mode } }
end
assert(require("acp").setup({
  backend = { cmd = { T.backend_bin() } },
  agents = agents,
  log_level = os.getenv("ACP_TEST_LOG_LEVEL") or "debug",
}))
T.require_binaries()

--- Record vim.notify messages until `stop()`.
local function capture_notify()
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m, l, ...)
    msgs[#msgs + 1] = { msg = tostring(m), level = l }
    return orig(m, l, ...)
  end
  return msgs, function()
    vim.notify = orig
  end
end

local function verdict(mode, timeout)
  local path = dir .. "/verdict-" .. mode
  T.wait(function()
    return vim.fn.filereadable(path) == 1 and T.read_file(path):find("\n")
  end, "the agent's verdict in " .. path, timeout)
  return T.read_file(path)
end

--- No line of the transcript may hold a character that moves, hides or
--- reorders text, nor a forged option line.
local function assert_clean(chat)
  for i, l in ipairs(T.lines(chat.bufnr)) do
    assert(not l:find("[%c\127]"), ("line %d holds a control character: %q"):format(i, l))
    assert(not l:find("\226\128\174", 1, true), ("line %d holds a right-to-left override: %q"):format(i, l))
    assert(#l < 2000, ("line %d is %d bytes long"):format(i, #l))
    assert(not l:match("^%s*2  Allow once  %[allow_once%]"), ("line %d is a forged option: %q"):format(i, l))
  end
end

T.test(
  "U1/E1: newlines and escapes in a tool call, a question and a permission prompt render, and both stay answerable by key",
  function()
    local msgs, stop = capture_notify()
    local chat = T.open_chat("display", dir)
    assert(chat:send({ { type = "text", text = "go" } }))
    T.wait(function()
      return #require("acp.chat.view.permission").for_chat(chat.chat_id) == 1
        and #require("acp.chat.view.elicitation").for_chat(chat.chat_id) == 1
    end, "the permission prompt and the question pending; transcript:\n" .. T.text(chat.bufnr))
    T.wait_text(chat, "Permission needed")
    T.wait_text(chat, "The agent asks: Which one?")
    stop()
    for _, m in ipairs(msgs) do
      T.not_contains(m.msg, "could not be shown", "every event was shown")
    end
    assert_clean(chat)
    local text = T.text(chat.bufnr)
    -- What the agent sent is still there to read, made visible.
    T.contains(text, "Allow⏎once", "the option name, its newline shown")
    T.contains(text, "Reject⏎    2  Allow once  [allow_once]␛[2J", "the forged line stays inside the option")
    T.contains(text, "a⏎b␛[1m.txt:3", "the tool call location")
    T.contains(text, "Edit⏎file ␛[31mred", "the tool call title")
    -- The permission is answered with its key: 2 = the option named NASTY.
    T.cursor_on(chat, "Permission needed")
    vim.api.nvim_feedkeys("2", "x", false)
    T.wait(function()
      return #require("acp.chat.view.permission").for_chat(chat.chat_id) == 0
    end, "the permission answered")
    -- The question is declined with its key.
    T.cursor_on(chat, "The agent asks: Which one?")
    vim.api.nvim_feedkeys("D", "x", false)
    local v = verdict("display")
    T.contains(v, '"permission": "reject"', "the agent got the option the user pressed")
    T.contains(v, '"elicitation": "decline"', "the agent got the decline")
  end
)

T.test("E2: URL questions open only http(s) links, shown safe and shortened, whole with y", function()
  local opened = {}
  local orig = vim.ui.open
  vim.ui.open = function(url)
    opened[#opened + 1] = url
    return { wait = function() end }, nil
  end
  local msgs, stop = capture_notify()
  local chat = T.open_chat("urls", dir)
  assert(chat:send({ { type = "text", text = "go" } }))
  local el = require("acp.chat.view.elicitation")
  local answered = 0
  for i = 0, 4 do
    T.wait(function()
      local e = el.for_chat(chat.chat_id)[1]
      return e and not e.waiting and e.message == ("Open page %d"):format(i)
    end, ("URL question %d; transcript:\n%s"):format(i, T.text(chat.bufnr)))
    assert_clean(chat)
    T.cursor_on(chat, ("Open page %d"):format(i))
    local e = el.for_chat(chat.chat_id)[1]
    vim.api.nvim_feedkeys("a", "x", false)
    if #opened > answered then
      answered = #opened
    else
      -- Not opened: the question is still there, copied whole with y.
      T.truthy(el.pending[e.request_id], "a refused link leaves the question pending")
      vim.api.nvim_feedkeys("y", "x", false)
      T.eq(e.url, vim.fn.getreg('"'), "y copies the whole link")
      vim.api.nvim_feedkeys("D", "x", false)
    end
    T.wait(function()
      local p = el.pending[e.request_id]
      return not p or p.waiting
    end, "question " .. i .. " answered")
    if el.pending[e.request_id] then
      -- An opened link waits for the agent, which moves on: stop waiting.
      vim.api.nvim_feedkeys("X", "x", false)
    end
  end
  vim.ui.open = orig
  stop()
  T.eq({ "https://example.com/fine" }, opened, "only the plain https link was opened")
  local v = verdict("urls")
  T.contains(v, '"decline", "decline", "decline", "decline", "accept"', "the agent's answers")
  local warned = 0
  for _, m in ipairs(msgs) do
    if m.msg:find("was not opened", 1, true) then
      warned = warned + 1
    end
  end
  T.eq(4, warned, "each refused link told the user why")
  assert_clean(chat)
end)

T.test("P9: a permission prompt with a duplicated option id is refused and the user told", function()
  local msgs, stop = capture_notify()
  local chat = T.open_chat("p9", dir)
  assert(chat:send({ { type = "text", text = "go" } }))
  -- Only the second, well-formed request reaches the user: reject it.
  T.wait(function()
    return #require("acp.chat.view.permission").for_chat(chat.chat_id) == 1
  end, "the second prompt; transcript:\n" .. T.text(chat.bufnr))
  T.cursor_on(chat, "Permission needed")
  vim.api.nvim_feedkeys("2", "x", false)
  local v = verdict("p9")
  stop()
  T.contains(v, "PASS", "the agent's verdict")
  local told = false
  for _, m in ipairs(msgs) do
    told = told or m.msg:find("two options sharing the id", 1, true) ~= nil
  end
  T.truthy(told or T.text(chat.bufnr):find("two options sharing the id", 1, true), "the user was told")
end)

T.test("X: reads the agent withdraws while Neovim answers them do not stop the backend", function()
  local chat = T.open_chat("cancelread", dir)
  assert(chat:send({ { type = "text", text = "go" } }))
  T.contains(verdict("cancelread", 60000), "PASS", "the agent's verdict")
  T.eq(true, require("acp.rpc.backend").running(), "the backend still runs")
end)

--- Wait for the one prompt of `chat`, check it names `needle`, press its reject key.
local function reject_prompt(chat, needle)
  T.wait(function()
    return #require("acp.chat.view.permission").for_chat(chat.chat_id) == 1
  end, "the client's own prompt; transcript:\n" .. T.text(chat.bufnr))
  T.wait_text(chat, needle)
  T.cursor_on(chat, "Permission needed")
  vim.api.nvim_feedkeys("2", "x", false)
end

T.test("Policies: a write into .git/ is asked for first; rejected, nothing is written", function()
  local chat = T.open_chat("gitwrite", dir)
  assert(chat:send({ { type = "text", text = "go" } }))
  reject_prompt(chat, "inside .git (hooks and config there run code)")
  T.contains(verdict("gitwrite"), "PASS", "the agent's verdict")
end)

T.test("Policies: permission.ask_terminal asks before a terminal command; rejected, it never runs", function()
  local cfg = require("acp.config").options
  cfg.permission.ask_terminal = true
  local chat = T.open_chat("askterm", dir)
  assert(chat:send({ { type = "text", text = "go" } }))
  local ok, err = pcall(reject_prompt, chat, "Run `touch ")
  cfg.permission.ask_terminal = false
  assert(ok, err)
  T.contains(verdict("askterm"), "PASS", "the agent's verdict")
end)

--- Peak memory (VmHWM) of the backend, in MB.
local function backend_peak_mb()
  local pid = vim.fn.jobpid((assert(require("acp.rpc.backend").channel(), "the backend's channel")))
  for line in io.lines("/proc/" .. pid .. "/status") do
    local kb = line:match("^VmHWM:%s+(%d+)")
    if kb then
      return math.floor(tonumber(kb) / 1024)
    end
  end
end

for _, mode in ipairs({ "p11", "t3" }) do
  T.test(mode:upper() .. ": the backend stays under 400 MB under the flood", function()
    local chat = T.open_chat(mode, dir)
    assert(chat:send({ { type = "text", text = "go" } }))
    -- The agent measures its parent, the backend, and fails above 400 MB.
    local ok, v = pcall(verdict, mode, 90000)
    if not ok then
      -- What the backend saw, for the failure report.
      local log = vim.fn.readfile(require("acp.rpc.backend").log_file())
      local tail = {}
      for i = math.max(1, #log - 120), #log do
        if not log[i]:find("Not enough data") then
          tail[#tail + 1] = log[i]:sub(1, 220)
        end
      end
      error(v .. "\nbackend log:\n" .. table.concat(tail, "\n"))
    end
    io.stdout:write(("  %s: %s"):format(mode, v))
    T.contains(v, "PASS", "the agent's verdict")
    T.truthy(backend_peak_mb() < 400, "backend peak under 400 MB")
  end)
end

T.run()
