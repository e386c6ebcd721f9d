-- End to end: what the user sees when the agent or the backend fails. Each
-- test injects one fault with the fake agent (or kills the backend), checks
-- the chat's state and transcript, then checks that the way out works.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
-- Wide enough for the whole winbar (it drops parts to fit narrow windows).
vim.o.columns = 300

local dir = T.tmpdir()

--- Files whose creation unsticks a `waitForFile` step.
local function release_path(name)
  return dir .. "/release-" .. name
end

local scenarios = {
  -- Asks before running a migration: the "always" answers test.
  remember = {
    turns = {
      {
        match = "migrate",
        steps = {
          { type = "toolCall", toolCallId = "m1", title = "Run migrate", kind = "execute", status = "pending" },
          { type = "requestPermission", toolCall = { toolCallId = "m1", title = "Run migrate", kind = "execute" } },
        },
      },
    },
  },
  -- Ignores a cancel until the test creates the release file, then sends
  -- the late text after answering the (by then withdrawn) prompt.
  stuck = {
    turns = {
      {
        match = "hang",
        steps = {
          { type = "toolCall", toolCallId = "h1", title = "Long job", kind = "execute", status = "in_progress" },
          { type = "text", text = "stuck working" },
          { type = "late", steps = { { type = "text", text = "late words of the abandoned turn" } } },
          { type = "waitForFile", path = release_path("stuck") },
        },
      },
      { steps = { { type = "text", text = "fresh answer" } } },
    },
  },
  -- Never ends a turn, cancel or not.
  forever = {
    turns = {
      {
        match = "hang",
        steps = { { type = "text", text = "stuck for good" }, { type = "waitForCancel", ignoreCancel = true } },
      },
      { steps = { { type = "text", text = "alive again" } } },
    },
  },
  -- One process serves both chats of this agent: the crash in one chat
  -- hits the permission prompt open in the other.
  shared = {
    turns = {
      {
        match = "ask",
        steps = {
          { type = "toolCall", toolCallId = "p1", title = "Deploy", kind = "execute", status = "pending" },
          { type = "requestPermission", toolCall = { toolCallId = "p1", title = "Deploy", kind = "execute" } },
        },
      },
      {
        match = "crash",
        steps = { { type = "crash", stderr = "fatal: crashed while a prompt was open", code = 4 } },
      },
    },
  },
  midcrash = {
    turns = {
      {
        match = "work",
        steps = {
          { type = "text", text = "Let me build it. ", chunkSize = 4 },
          { type = "toolCall", toolCallId = "b1", title = "Build", kind = "execute", status = "in_progress" },
          { type = "toolCall", toolCallId = "b2", title = "Run tests", kind = "execute", status = "pending" },
          { type = "text", text = "The build is half" },
          { type = "crash", stderr = "panic: died mid tool call", code = 5 },
        },
      },
    },
  },
  slowpoke = {
    turns = {
      {
        match = "slow",
        steps = {
          { type = "toolCall", toolCallId = "s1", title = "Slow job", kind = "execute", status = "in_progress" },
          { type = "text", text = "halfway there" },
          { type = "waitForCancel" },
        },
      },
    },
  },
  idle = {},
  exits = { initialize = { fault = { type = "exit", stderr = "error: OPENAI_API_KEY is not set", code = 2 } } },
  silent = { initialize = { fault = { type = "never" } } },
}

local agents = {}
for name, sc in pairs(scenarios) do
  agents[name] = { cmd = { T.fake_agent(), "--scenario", T.scenario(dir, sc) } }
end
-- Fast enough for a test, far above what the fake agent needs to start.
agents.silent.init_timeout = 300
assert(require("acp").setup({ backend = { cmd = { T.backend_bin() } }, agents = agents, log_level = "debug" }))

T.require_binaries()

--- Record vim.notify messages of at least `level` until `stop()` is called.
local function capture_notify(level)
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m, l, ...)
    if (l or vim.log.levels.INFO) >= level then
      msgs[#msgs + 1] = m
    end
    return orig(m, l, ...)
  end
  return msgs, function()
    vim.notify = orig
  end
end

--- The winbar of the chat's transcript window.
local function winbar(chat)
  local win = assert(vim.fn.win_findbuf(chat.bufnr)[1], "transcript window")
  return vim.wo[win].winbar
end

local function acp_in(chat, cmd)
  local win = assert(vim.fn.win_findbuf(chat.bufnr)[1], "transcript window")
  vim.api.nvim_set_current_win(win)
  vim.cmd("Acp " .. cmd)
end

local function wait_status(chat, status)
  T.wait(function()
    return chat.status == status
  end, ("chat %s %s (is %s); transcript:\n%s"):format(chat.chat_id, status, chat.status, T.text(chat.bufnr)))
end

local function restart_and_wait(chats)
  vim.cmd("Acp restart")
  for _, chat in ipairs(chats) do
    T.wait(function()
      return chat.status == "ready" and chat.session_id ~= nil
    end, "new session after restart; transcript:\n" .. T.text(chat.bufnr))
  end
end

T.test("a turn the agent does not end after cancel shows cancelling; cancelling again ends it", function()
  local chat = T.open_chat("stuck", dir)
  assert(chat:send({ { type = "text", text = "hang" } }))
  T.wait_text(chat, "stuck working")
  acp_in(chat, "cancel")
  wait_status(chat, "cancelling")
  T.contains(winbar(chat), "cancelling…", "the window bar says so")
  -- The client marks the turn's unfinished tool calls cancelled at once.
  T.wait(function()
    return T.find_line(chat.bufnr, "⊘ execute · Long job") ~= nil
  end, "tool call shown cancelled")
  T.eq(nil, T.turns[chat.chat_id], "the agent has not ended the turn")

  acp_in(chat, "cancel")
  T.wait(function()
    return T.turns[chat.chat_id] ~= nil
  end, "the turn ended after the second cancel")
  T.eq({ "cancelled" }, T.turns[chat.chat_id], "ended once, as cancelled")
  wait_status(chat, "ready")
  T.not_contains(winbar(chat), "cancelling", "window bar back to idle")
  T.truthy(T.find_line(chat.bufnr, "— cancelled —"), "stop reason shown")

  -- The agent comes back: its late output joins the message of the turn
  -- it belongs to (ACP chunks carry no turn id; the session model appends
  -- them to the last agent message), and the chat works as before.
  T.write_file(release_path("stuck"), "")
  T.wait_text(chat, "late words of the abandoned turn")
  T.eq(
    T.find_line(chat.bufnr, "stuck working"),
    T.find_line(chat.bufnr, "late words of the abandoned turn"),
    "late output in the abandoned turn's message"
  )
  T.truthy(T.find_line(chat.bufnr, "— cancelled —") > T.find_line(chat.bufnr, "stuck working"), "before its end")
  T.eq("end_turn", T.turn(chat, "next please"), "a new prompt works")
  T.contains(T.text(chat.bufnr), "fresh answer", "answered")
  T.eq({ "cancelled", "end_turn" }, T.turns[chat.chat_id], "one outcome per prompt")
end)

T.test(":Acp restart recovers a chat whose agent hangs for good", function()
  local chat = T.open_chat("forever", dir)
  assert(chat:send({ { type = "text", text = "hang" } }))
  T.wait_text(chat, "stuck for good")
  acp_in(chat, "cancel")
  wait_status(chat, "cancelling")
  restart_and_wait({ chat })
  T.truthy(T.find_line(chat.bufnr, "— restarted:"), "the chat says it restarted")
  T.eq("end_turn", T.turn(chat, "hello"), "the restarted chat works")
  T.contains(T.text(chat.bufnr), "alive again", "answered by the new agent")
end)

T.test("a crash while a permission prompt is open closes it, shows stderr, and restart works", function()
  local asking = T.open_chat("shared", dir)
  local crasher = T.open_chat("shared", dir)
  assert(asking:send({ { type = "text", text = "ask me" } }))
  T.wait_text(asking, "Permission needed")
  T.eq(1, #require("acp.chat.view.permission").for_chat(asking.chat_id), "one prompt pending")
  T.truthy(asking.digit_keys, "digit keys answer it")

  assert(crasher:send({ { type = "text", text = "crash now" } }))
  wait_status(asking, "dead")
  wait_status(crasher, "dead")
  for _, chat in ipairs({ asking, crasher }) do
    T.wait_text(chat, "fatal: crashed while a prompt was open")
    T.contains(T.text(chat.bufnr), "exited (exit code 4)", "exit status shown")
  end
  T.eq(nil, T.find_line(asking.bufnr, "Permission needed"), "prompt closed")
  T.eq(0, #require("acp.chat.view.permission").for_chat(asking.chat_id), "nothing pending")
  T.eq(false, asking.digit_keys, "digit keys released")
  T.truthy(T.find_line(asking.bufnr, "✗ execute · Deploy"), "the tool call failed")
  -- The UI stays usable: a prompt to the dead chat is refused with the way out.
  local msgs, stop = capture_notify(vim.log.levels.ERROR)
  local ok = asking:send({ { type = "text", text = "anyone?" } })
  stop()
  T.eq(false, ok, "a dead chat takes no prompt")
  T.contains(msgs[1] or "", ":Acp continue", "the user is told how to recover, as the transcript does")

  restart_and_wait({ asking, crasher })
  assert(asking:send({ { type = "text", text = "ask again" } }))
  T.wait(function()
    return #require("acp.chat.view.permission").for_chat(asking.chat_id) == 1
  end, "a new prompt in the restarted chat")
  -- The second chat took the windows (a new chat replaces the one shown).
  asking:show()
  T.cursor_on(asking, "Permission needed")
  vim.api.nvim_feedkeys("1", "x", false)
  T.wait(function()
    return T.turns[asking.chat_id] ~= nil
  end, "turn end")
  T.eq({ "end_turn" }, T.turns[asking.chat_id], "the restarted turn ends normally")
  T.wait_text(asking, "permission: allow_once")
end)

T.test("a crash mid-stream and mid-tool-call fails the tool calls and shows stderr", function()
  local chat = T.open_chat("midcrash", dir)
  assert(chat:send({ { type = "text", text = "work" } }))
  wait_status(chat, "dead")
  T.wait_text(chat, "panic: died mid tool call")
  local text = T.text(chat.bufnr)
  T.contains(text, "Let me build it.", "text streamed before the crash stays")
  T.contains(text, "The build is half", "the unfinished message stays")
  T.contains(text, "exited (exit code 5)", "exit status")
  T.truthy(T.find_line(chat.bufnr, "✗ execute · Build"), "the running tool call is shown failed")
  T.truthy(T.find_line(chat.bufnr, "✗ execute · Run tests"), "the pending tool call is shown failed")
  T.eq(nil, T.find_line(chat.bufnr, "◐"), "nothing shown running")
  T.contains(winbar(chat), "stopped", "the window bar says the agent stopped")
  restart_and_wait({ chat })
  T.eq("end_turn", T.turn(chat, "just echo"), "the restarted chat works")
end)

T.test("a backend killed mid-turn is reported once, in every chat, and recovers", function()
  local busy = T.open_chat("slowpoke", dir)
  local quiet = T.open_chat("idle", dir)
  assert(busy:send({ { type = "text", text = "slow job" } }))
  T.wait_text(busy, "halfway there")
  local errors, stop = capture_notify(vim.log.levels.ERROR)
  vim.uv.kill(vim.fn.jobpid(require("acp.rpc.backend").channel()), "sigkill")
  wait_status(busy, "dead")
  wait_status(quiet, "dead")
  stop()
  T.eq(1, #errors, "reported once: " .. vim.inspect(errors))
  T.contains(errors[1], require("acp.rpc.backend").log_file(), "with the log path")
  for _, chat in ipairs({ busy, quiet }) do
    T.contains(T.text(chat.bufnr), "The acp.nvim backend stopped", "chat " .. chat.chat_id .. " shows it")
    T.contains(T.text(chat.bufnr), ":Acp restart", "and the way out")
  end
  T.truthy(T.find_line(busy.bufnr, "✗ execute · Slow job"), "the running tool call is shown failed")
  T.eq(false, require("acp.rpc.backend").running(), "no backend")

  -- The next :Acp new starts a backend by itself.
  vim.cmd("Acp new idle")
  local fresh = require("acp.chat").current()
  T.truthy(fresh ~= busy and fresh ~= quiet, "a new chat")
  T.wait(function()
    return fresh.session_id ~= nil
  end, "the new chat's session")
  T.eq("end_turn", T.turn(fresh, "hi"), "the new chat works")

  -- :Acp restart brings the old chats back.
  restart_and_wait({ busy, quiet })
  T.eq("end_turn", T.turn(quiet, "back?"), "the idle chat works again")
  assert(busy:send({ { type = "text", text = "slow again" } }))
  T.wait(function()
    return T.count_lines(busy.bufnr, "halfway there") == 2
  end, "the busy chat works again")
  busy:show()
  acp_in(busy, "cancel")
  T.wait(function()
    return T.turns[busy.chat_id] ~= nil
  end, "turn end")
  T.eq({ "cancelled" }, T.turns[busy.chat_id], "and cancels as usual")
end)

T.test("an agent that exits before initialize fails the chat with its stderr and the fix", function()
  local chat = assert(require("acp").open({ agent = "exits", cwd = dir }))
  wait_status(chat, "failed")
  local text = T.text(chat.bufnr)
  T.contains(text, "exited while starting (exit code 2)", "what happened")
  T.contains(text, "check its command line in your acp.nvim setup()", "the fix")
  T.contains(text, "error: OPENAI_API_KEY is not set", "the agent's own words")
  T.contains(winbar(chat), "failed", "the window bar")
end)

T.test("an agent that never answers initialize fails the chat after init_timeout", function()
  local chat = assert(require("acp").open({ agent = "silent", cwd = dir }))
  -- init_timeout is 300 ms; the guard only catches a hang.
  wait_status(chat, "failed")
  local text = T.text(chat.bufnr)
  T.contains(text, "did not answer `initialize` within 300ms", "what happened")
  T.contains(text, "--acp", "the usual cause")
  T.contains(text, "raise `init_timeout` of agent silent", "the option to change")
  T.eq(nil, chat.session_id, "no session")
end)

T.test("init_timeout is validated", function()
  local err = require("acp.config").validate({ agents = { x = { cmd = { "x" }, init_timeout = 0 } } })
  T.contains(err or "", "`agents.x.init_timeout` must be a whole number of milliseconds", "zero refused")
  err = require("acp.config").validate({ agents = { x = { cmd = { "x" }, init_timeout = "1s" } } })
  T.contains(err or "", "init_timeout", "a string refused")
  T.eq(nil, require("acp.config").validate({ agents = { x = { cmd = { "x" }, init_timeout = 5000 } } }), "ms accepted")
end)

T.test('an "always" answer survives :Acp restart, and a remembered rejection reads rejected', function()
  local chat = T.open_chat("remember", dir)
  assert(chat:send({ { type = "text", text = "migrate" } }))
  T.wait_text(chat, "Permission needed")
  T.cursor_on(chat, "Permission needed")
  vim.api.nvim_feedkeys("4", "x", false) -- Always reject
  T.wait_text(chat, "permission: reject_always")
  T.wait(function()
    return (T.turns[chat.chat_id] or {})[1] ~= nil
  end, "turn end")

  restart_and_wait({ chat })
  T.eq("end_turn", T.turn(chat, "migrate"), "the restarted agent's turn ends without asking")
  T.wait_text(chat, "permission: reject_once")
  T.eq(0, #require("acp.chat.view.permission").for_chat(chat.chat_id), "nothing was asked")
  T.truthy(
    T.find_line(chat.bufnr, "rejected by memory: you answered “always reject” to this before"),
    "the note says rejected; transcript:\n" .. T.text(chat.bufnr)
  )
  T.eq(nil, T.find_line(chat.bufnr, "allowed by memory"), "never reads allowed")
end)

T.run()
