-- The plugin's side of the backend protocol, against a stub backend
-- (tests/e2e/stub_backend.lua): handshake, parameter encoding, death, restart.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()
local record = dir .. "/record.jsonl"
vim.env.STUB_RECORD = record

local function use_stub()
  assert(require("acp").setup({
    backend = { cmd = { vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-l", T.root .. "/tests/e2e/stub_backend.lua" } },
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
  T.eq({ chat_id = chat.chat_id, blocks = { { type = "text", text = "hello there" } } }, find("acp.prompt").params, "prompt")
  T.contains(T.text(chat.bufnr), "echo: hello there", "event batch rendered")
  chat:close()
  T.eq({ chat_id = chat.chat_id }, find("acp.close").params, "close")
end)

T.test("a killed backend is reported once; :Acp restart reopens the chats", function()
  use_stub()
  local a = T.open_chat("stubbed", dir)
  local b = T.open_chat("stubbed", dir)
  local errors, restore = capture_errors()
  vim.uv.kill(vim.fn.jobpid(require("acp.backend").channel()), "sigkill")
  T.wait(function()
    return a.status == "dead" and b.status == "dead"
  end, "chats marked dead")
  restore()
  T.eq(1, #errors, "one notification")
  T.contains(errors[1], require("acp.backend").log_file(), "names the log file")
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
  require("acp.backend").stop()
  vim.env.STUB_HELLO_OK = "0"
  use_stub()
  local errors, restore = capture_errors()
  local chat = require("acp").open({ agent = "stubbed", cwd = dir })
  restore()
  vim.env.STUB_HELLO_OK = nil
  T.eq("failed", chat.status, "chat failed")
  T.contains(errors[1] or "", "does not match plugin 0.1.0", "notified")
  T.contains(T.text(chat.bufnr), "does not match plugin 0.1.0", "in the transcript")
  T.eq(false, require("acp.backend").running(), "mismatched backend stopped")
end)

T.test("a missing backend gives the build hint", function()
  require("acp.backend").stop()
  assert(require("acp").setup({ backend = { cmd = { dir .. "/no-such-backend" } }, agents = { stubbed = { cmd = { "true" } } } }))
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
  require("acp.backend").stop()
  T.truthy(find("acp.shutdown"), "shutdown request")
  T.eq(false, require("acp.backend").running(), "stopped")
end)

T.run()
