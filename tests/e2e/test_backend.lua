-- The plugin's side of the backend protocol, against a stub backend
-- (tests/e2e/stub_backend.lua): handshake, parameter encoding, death, restart.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()
local record = dir .. "/record.jsonl"
vim.env.STUB_RECORD = record

local function use_stub()
  assert(require("acp").setup({
    backend = {
      cmd = { vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-l", T.root .. "/tests/e2e/stub_backend.lua" },
    },
    agents = { stubbed = { cmd = { "true" } } },
  }))
end

local function received()
  local out = {}
  if vim.fn.filereadable(record) == 1 then
    for _, line in ipairs(vim.fn.readfile(record)) do
      out[#out + 1] = vim.json.decode(line)
    end
  end
  return out
end

local function find(method)
  for _, m in ipairs(received()) do
    if m.method == method then
      return m
    end
  end
end

local function capture_errors()
  local errors = {}
  local orig = vim.notify
  vim.notify = function(m, level)
    if level == vim.log.levels.ERROR then
      errors[#errors + 1] = m
    end
  end
  return errors, function()
    vim.notify = orig
  end
end

T.test("handshake, open with an empty env as a map, prompt, close", function()
  use_stub()
  local chat = T.open_chat("stubbed", dir)
  T.eq("stub-" .. chat.chat_id, chat.session_id, "session id from session_started")
  local hello = find("acp.hello")
  T.eq({ plugin_version = "0.1.0" }, hello.params, "hello params")
  local open = find("acp.open")
  T.eq(chat.chat_id, open.params.chat_id, "chat id")
  T.eq({ "true" }, open.params.agent.cmd, "agent cmd")
  T.eq(dir, open.params.cwd, "cwd")
  local is_map
  for _, m in ipairs(received()) do
    if m.raw_env_is_map ~= nil then
      is_map = m.raw_env_is_map
    end
  end
  T.eq(true, is_map, "empty env travels as a map")
  T.eq("end_turn", T.turn(chat, "hello there"), "turn")
  T.eq(
    { chat_id = chat.chat_id, blocks = { { type = "text", text = "hello there" } } },
    find("acp.prompt").params,
    "prompt"
  )
  T.contains(T.text(chat.bufnr), "echo: hello there", "event batch rendered")
  chat:close()
  T.eq({ chat_id = chat.chat_id }, find("acp.close").params, "close")
end)

T.test("open passes a session to load or resume, and the permission policy", function()
  use_stub()
  assert(require("acp").setup({
    backend = require("acp.config").options.backend,
    agents = { stubbed = { cmd = { "true" }, env = { A = "1" } } },
    permission = { auto_allow = { "read" }, remember = false },
  }))
  vim.fn.delete(record)
  local chat = require("acp").open({ agent = "stubbed", cwd = dir, load_session_id = "old-1" })
  local p = find("acp.open").params
  T.eq("old-1", p.load_session_id, "load id")
  T.eq(nil, p.resume_session_id, "no resume id")
  T.eq({ A = "1" }, p.agent.env, "env")
  T.eq({ auto_allow = { "read" }, remember = false }, p.permission, "policy")
  chat:close()
  vim.fn.delete(record)
  chat = require("acp").open({ agent = "stubbed", cwd = dir, resume_session_id = "old-2" })
  T.eq("old-2", find("acp.open").params.resume_session_id, "resume id")
  chat:close()
end)

T.test("a killed backend is reported once; :Acp restart reopens the chats", function()
  use_stub()
  local a = T.open_chat("stubbed", dir)
  local b = T.open_chat("stubbed", dir)
  local errors, restore = capture_errors()
  vim.uv.kill(vim.fn.jobpid(require("acp.rpc.backend").channel()), "sigkill")
  T.wait(function()
    return a.status == "dead" and b.status == "dead"
  end, "chats marked dead")
  restore()
  T.eq(1, #errors, "one notification")
  T.contains(errors[1], require("acp.rpc.backend").log_file(), "names the log file")
  T.contains(errors[1], ":Acp restart", "says how to recover")
  T.eq(false, a:send({ { type = "text", text = "x" } }), "dead chat refuses prompts")
  vim.cmd("Acp restart")
  T.wait(function()
    return a.status == "ready" and b.status == "ready"
  end, "both chats have new sessions")
  T.contains(T.text(a.bufnr), "restarted: new session", "restart noted")
  T.eq("end_turn", T.turn(a, "again"), "works again")
end)

T.test("a version mismatch is shown with the backend's message", function()
  require("acp.rpc.backend").stop()
  vim.env.STUB_HELLO_OK = "0"
  use_stub()
  local errors, restore = capture_errors()
  local chat = require("acp").open({ agent = "stubbed", cwd = dir })
  restore()
  vim.env.STUB_HELLO_OK = nil
  T.eq("failed", chat.status, "chat failed")
  T.contains(errors[1] or "", "does not match plugin 0.1.0", "notified")
  T.contains(T.text(chat.bufnr), "does not match plugin 0.1.0", "in the transcript")
  T.eq(false, require("acp.rpc.backend").running(), "mismatched backend stopped")
end)

T.test(":Acp greets the backend with a notification and never waits for it", function()
  require("acp.rpc.backend").stop()
  vim.fn.delete(record)
  use_stub()
  local chat = require("acp").open({ agent = "stubbed", cwd = dir, background = true })
  T.eq(false, require("acp.rpc.backend").running(), "nothing started before the command returned")
  T.wait(function()
    return chat.status == "ready"
  end, "the chat becomes ready")
  local hello = find("acp.hello")
  T.eq(true, hello.notification, "the greeting is a notification")
  T.eq({ plugin_version = "0.1.0" }, hello.params, "hello params")
  T.eq("0.1.0", require("acp.rpc.backend").info().backend_version, "the answer is kept")
  -- A second chat does not greet again.
  local other = require("acp").open({ agent = "stubbed", cwd = dir, background = true, split = true })
  T.wait(function()
    return other.status == "ready"
  end, "the second chat becomes ready")
  local hellos = 0
  for _, m in ipairs(received()) do
    hellos = hellos + (m.method == "acp.hello" and 1 or 0)
  end
  T.eq(1, hellos, "one handshake per backend")
  chat:close()
  other:close()
end)

T.test(":Acp shows a version mismatch answered to the notification", function()
  require("acp.rpc.backend").stop()
  vim.env.STUB_HELLO_OK = "0"
  use_stub()
  local errors, restore = capture_errors()
  local chat = require("acp").open({ agent = "stubbed", cwd = dir, background = true })
  T.wait(function()
    return chat.status == "failed"
  end, "the chat fails")
  restore()
  vim.env.STUB_HELLO_OK = nil
  T.contains(errors[1] or "", "does not match plugin 0.1.0", "notified")
  T.contains(T.text(chat.bufnr), "does not match plugin 0.1.0", "in the transcript")
  T.eq(false, require("acp.rpc.backend").running(), "mismatched backend stopped")
  chat:close()
end)

T.test(":Acp with a backend that only answers the request form still checks the version", function()
  require("acp.rpc.backend").stop()
  vim.env.STUB_HELLO_OK = "0"
  vim.env.STUB_HELLO_NOTIFY = "0"
  local wait = require("acp.rpc.backend").greeting_wait_ms
  require("acp.rpc.backend").greeting_wait_ms = 200
  use_stub()
  local errors, restore = capture_errors()
  local chat = require("acp").open({ agent = "stubbed", cwd = dir, background = true })
  T.wait(function()
    return chat.status == "failed"
  end, "the chat fails")
  restore()
  require("acp.rpc.backend").greeting_wait_ms = wait
  vim.env.STUB_HELLO_OK = nil
  vim.env.STUB_HELLO_NOTIFY = nil
  T.contains(errors[1] or "", "does not match plugin 0.1.0", "notified")
  T.eq(false, require("acp.rpc.backend").running(), "mismatched backend stopped")
  chat:close()
end)

T.test("a synchronous start during the greeting finishes it as a request", function()
  require("acp.rpc.backend").stop()
  vim.env.STUB_HELLO_NOTIFY = "0"
  use_stub()
  local outcome
  require("acp.rpc.backend").start_async(function(ok, err)
    outcome = { ok, err }
  end)
  T.eq(true, require("acp.rpc.backend").start(), "the request form answers")
  vim.env.STUB_HELLO_NOTIFY = nil
  T.wait(function()
    return outcome ~= nil
  end, "the waiting caller learns it")
  T.eq(true, outcome[1], "ok for both")
  require("acp.rpc.backend").stop()
end)

T.test("a backend dying before its greeting fails the chat with its stderr", function()
  require("acp.rpc.backend").stop()
  local script = dir .. "/dies.sh"
  T.write_file(script, "#!/bin/sh\necho 'cannot start: no config' >&2\nsleep 0.3\nexit 3\n")
  vim.fn.setfperm(script, "rwxr-xr-x")
  assert(require("acp").setup({ backend = { cmd = { script } }, agents = { stubbed = { cmd = { "true" } } } }))
  local errors, restore = capture_errors()
  local chat = require("acp").open({ agent = "stubbed", cwd = dir, background = true })
  T.wait(function()
    return chat.status == "failed"
  end, "the chat fails")
  restore()
  T.contains(errors[1] or "", "did not answer the handshake (it exited with code 3)", "notified")
  T.contains(errors[1] or "", "cannot start: no config", "with its stderr")
  chat:close()
end)

T.test("a missing backend gives the build hint", function()
  require("acp.rpc.backend").stop()
  assert(require("acp").setup({
    backend = { cmd = { dir .. "/no-such-backend" } },
    agents = { stubbed = { cmd = { "true" } } },
  }))
  local errors, restore = capture_errors()
  local chat = require("acp").open({ agent = "stubbed", cwd = dir })
  restore()
  T.eq("failed", chat.status, "chat failed")
  T.contains(errors[1] or "", "acp.nvim: backend.cmd", "one-line error naming the option")
end)

T.test("stop sends acp.shutdown", function()
  use_stub()
  T.open_chat("stubbed", dir)
  vim.fn.delete(record)
  require("acp.rpc.backend").stop()
  T.truthy(find("acp.shutdown"), "shutdown request")
  T.eq(false, require("acp.rpc.backend").running(), "stopped")
end)

T.run()
