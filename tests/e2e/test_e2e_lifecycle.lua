-- End to end: agent crash, backend death and restart, two agents at once.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

T.setup_fake({
  crashy = {
    turns = {
      {
        steps = {
          { type = "text", text = "about to crash" },
          { type = "crash", stderr = "fatal: the fake agent crashed on purpose", code = 3 },
        },
      },
    },
  },
  alpha = { turns = { { steps = { { type = "text", text = "alpha says hi", chunkSize = 2 } } } } },
  beta = { turns = { { steps = { { type = "text", text = "beta says yo", chunkSize = 2 } } } } },
}, dir)

T.require_binaries()

T.test("an agent crash shows the error with the stderr tail, and a new chat works", function()
  local chat = T.open_chat("crashy", dir)
  assert(chat:send({ { type = "text", text = "go" } }))
  T.wait_text(chat, "fatal: the fake agent crashed on purpose")
  T.wait(function()
    return chat.status == "dead"
  end, "chat marked dead")
  T.contains(T.text(chat.bufnr), "exited", "exit reported")
  local other = T.open_chat("alpha", dir)
  T.eq("end_turn", T.turn(other, "hello"), "new chat works")
  T.contains(T.text(other.bufnr), "alpha says hi", "answer")
end)

T.test("two chats with two agents at once stay separate", function()
  local a = T.open_chat("alpha", dir)
  local b = T.open_chat("beta", dir)
  assert(a:send({ { type = "text", text = "to alpha" } }))
  assert(b:send({ { type = "text", text = "to beta" } }))
  T.wait(function()
    return T.turns[a.chat_id] and T.turns[b.chat_id]
  end, "both turns ended")
  local ta, tb = T.text(a.bufnr), T.text(b.bufnr)
  T.contains(ta, "alpha says hi", "alpha's answer in alpha's chat")
  T.contains(tb, "beta says yo", "beta's answer in beta's chat")
  T.not_contains(ta, "beta says", "nothing of beta in alpha's chat")
  T.not_contains(tb, "alpha says", "nothing of alpha in beta's chat")
end)

T.test("a killed backend is reported once and :Acp restart recovers", function()
  local chat = T.open_chat("alpha", dir)
  local errors = {}
  local orig = vim.notify
  vim.notify = function(m, level)
    if level == vim.log.levels.ERROR then
      errors[#errors + 1] = m
    end
  end
  local job = require("acp.rpc.backend").channel()
  local pid = vim.fn.jobpid(job)
  vim.uv.kill(pid, "sigkill")
  T.wait(function()
    return chat.status == "dead"
  end, "chat marked dead")
  vim.notify = orig
  T.eq(1, #errors, "reported once")
  T.contains(errors[1], require("acp.rpc.backend").log_file(), "with the log path")
  T.contains(T.text(chat.bufnr), ":Acp restart", "the chat says how to recover")
  vim.cmd("Acp restart")
  -- dead -> opening (restart) -> ready (session_started of the new backend)
  T.wait(function()
    return chat.status == "ready" and chat.session_id ~= nil
  end, "new session after restart")
  T.eq("end_turn", T.turn(chat, "again"), "the chat works again")
end)

T.run()
