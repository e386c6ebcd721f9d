-- End to end: real backend + fake agent. The protocol of November 2026:
-- subagents, plan operations, the client system prompt, and what the newest
-- agents send (codex-acp 2.6.0's `_meta` terminals, an echoed prompt).
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

local turns = {
  {
    match = "codex",
    steps = {
      {
        type = "agentTerminal",
        toolCallId = "cmd1",
        command = "echo ran > ran.txt && ls",
        output = { "ran.txt\n", "src\n" },
        exitCode = 0,
      },
      { type = "text", text = "listed" },
    },
  },
  {
    -- codex-acp 2.6.0 on a command it classifies as a read: no terminal
    -- content, the output only in the last update's `_meta` (seen in make
    -- agents).
    match = "cxread",
    steps = {
      {
        type = "update",
        update = {
          sessionUpdate = "tool_call",
          toolCallId = "r1",
          kind = "read",
          title = "List files",
          status = "in_progress",
        },
      },
      {
        type = "update",
        update = {
          sessionUpdate = "tool_call_update",
          toolCallId = "r1",
          status = "completed",
          rawOutput = { exit_code = 0 },
          _meta = { terminal_output_delta = { data = "ran-by-agent\nlisted-file.txt\n", terminal_id = "r1" } },
        },
      },
    },
  },
  {
    match = "echo",
    steps = {
      {
        type = "update",
        update = {
          sessionUpdate = "user_message_chunk",
          messageId = "u-1",
          content = { type = "text", text = "echo me please" },
        },
      },
      { type = "text", text = "echoed" },
    },
  },
  {
    match = "plans",
    steps = {
      {
        type = "planUpdate",
        planId = "checklist",
        entries = { { content = "Read the code", priority = "high", status = "in_progress" } },
      },
      {
        type = "planUpdate",
        planId = "doc",
        markdown = "# Refactor plan\n\n- **split** the module\n- test it",
        path = "{{cwd}}/PLAN.md",
      },
      {
        type = "planUpdate",
        planId = "checklist",
        entries = { { content = "Read the code", priority = "high", status = "completed" } },
      },
      { type = "planRemoved", planId = "doc" },
      { type = "text", text = "plans done" },
    },
  },
  {
    match = "delegate",
    steps = {
      { type = "text", text = "Delegating now. " },
      {
        type = "subagent",
        childId = "child-1",
        toolCallId = "task-1",
        title = "Explorer",
        description = "Find where the bug is",
        state = "running",
        cancel = true,
      },
      {
        type = "sessionMessage",
        messageId = "m1",
        sender = "{{sessionId}}",
        recipient = "child-1",
        text = "Look in src/",
      },
      {
        type = "asSession",
        childId = "child-1",
        steps = {
          { type = "thought", text = "searching the tree" },
          { type = "text", text = "CHILD SAYS hello", chunkSize = 4 },
          { type = "toolCall", toolCallId = "c-read", title = "Read src/lib.rs", kind = "read", status = "completed" },
        },
      },
      { type = "text", text = "Parent continues." },
      { type = "subagent", childId = "child-1", state = "idle", stopReason = "end_turn" },
    },
  },
  {
    match = "child asks",
    steps = {
      { type = "subagent", childId = "child-2", title = "Editor", state = "requires_action" },
      {
        type = "asSession",
        childId = "child-2",
        steps = {
          {
            type = "requestPermission",
            toolCall = { toolCallId = "c-edit", title = "Edit child.txt", kind = "edit" },
          },
        },
      },
      { type = "subagent", childId = "child-2", state = "idle" },
    },
  },
  {
    match = "long child",
    steps = {
      { type = "subagent", childId = "child-3", title = "Worker", state = "running", cancel = true },
      { type = "subagent", childId = "child-4", title = "Locked", state = "running" },
      { type = "asSession", childId = "child-3", steps = { { type = "text", text = "working hard" } } },
      { type = "sleep", ms = 300000 },
    },
  },
  { match = "prompt", steps = { { type = "systemPrompt" } } },
}

T.setup_fake({
  -- vim.empty_dict(): `{}` would travel as a JSON array.
  -- Unique session ids: each test's agent process writes its own transcript.
  nov = {
    initialize = { agentCapabilities = { sessionCapabilities = { systemPrompt = vim.empty_dict() } } },
    uniqueSessionIds = true,
    turns = turns,
  },
  plain = { initialize = { agentCapabilities = vim.empty_dict() }, turns = turns },
}, dir)

T.require_binaries()

T.test("codex-acp 2.6.0's _meta terminal output shows live in its tool call", function()
  T.reset()
  local chat = T.open_chat("nov", dir)
  T.eq("end_turn", T.turn(chat, "codex"))
  local text = T.text(chat.bufnr)
  T.contains(text, "$ echo ran > ran.txt && ls (exited 0)")
  T.contains(text, "│ ran.txt")
  T.contains(text, "│ src")
  T.not_contains(text, "output not kept")
end)

T.test("codex-acp 2.6.0's read commands show their _meta output without terminal content", function()
  T.reset()
  local chat = T.open_chat("nov", dir)
  T.eq("end_turn", T.turn(chat, "cxread"))
  local text = T.text(chat.bufnr)
  T.contains(text, "✓ read · List files")
  T.contains(text, "  output (exited 0)")
  T.not_contains(text, "(running)")
  T.contains(text, "│ ran-by-agent")
  T.contains(text, "│ listed-file.txt")
end)

T.test("a prompt echoed with a messageId is shown once", function()
  T.reset()
  local chat = T.open_chat("nov", dir)
  T.eq("end_turn", T.turn(chat, "echo me please"))
  T.eq(1, T.count_lines(chat.bufnr, "echo me please"), "the prompt once:\n" .. T.text(chat.bufnr))
  T.not_contains(T.text(chat.bufnr), "echo me pleaseecho me please")
end)

T.test("plans by id: checklist and markdown document, updated in place, removal marked", function()
  T.reset()
  local chat = T.open_chat("nov", dir)
  T.eq("end_turn", T.turn(chat, "plans"))
  local text = T.text(chat.bufnr)
  -- The checklist was replaced in place: one block, its last state.
  T.eq(1, T.count_lines(chat.bufnr, "Read the code"), text)
  T.contains(text, "Plan (1/1 done)")
  -- The document stays as one line marked removed.
  T.contains(text, "Plan · Refactor plan (removed)")
  T.not_contains(text, "split")
end)

T.test("the plan document is drawn as markdown and its header opens the file", function()
  T.reset()
  -- A document that is not removed.
  local path = dir .. "/PLAN.md"
  T.write_file(path, "# Refactor plan\n")
  local chat = T.open_chat("nov", dir)
  local t = chat.transcript
  t.view:batch(function()
    t:apply({
      change = "plan_updated",
      plan = { plan_id = "x", format = "markdown", content = "# Refactor plan\n\n- **split** it", path = path },
    })
  end)
  local text = T.text(chat.bufnr)
  T.contains(text, "Plan document  (")
  T.contains(text, "# Refactor plan")
  T.contains(text, "**split** it")
  local block = t.plans.x.block
  T.truthy(block.md, "drawn as markdown")
  T.eq("location", block.actions[0].type)
  T.eq(path, block.actions[0].path)
  -- An update replaces it in place.
  t.view:batch(function()
    t:apply({
      change = "plan_updated",
      plan = { plan_id = "x", format = "markdown", content = "# Refactor plan\n\n- done" },
    })
  end)
  T.eq(1, T.count_lines(chat.bufnr, "Plan document"), T.text(chat.bufnr))
  T.contains(T.text(chat.bufnr), "- done")
end)

T.test("a subagent streams into its own block, never into the parent's answer, folded once idle", function()
  T.reset()
  local chat = T.open_chat("nov", dir)
  T.eq("end_turn", T.turn(chat, "delegate"))
  local text = T.text(chat.bufnr)
  T.contains(text, "Subagent · Explorer — idle")
  T.contains(text, "Find where the bug is")
  T.contains(text, "│ CHILD SAYS hello")
  T.contains(text, "│ (thinking) searching the tree")
  T.contains(text, "│ ✓ read · Read src/lib.rs")
  -- The tool call that started it names it.
  T.contains(text, "⧉ subagent Explorer")
  T.contains(text, "⇢ to Explorer")
  T.contains(text, "Look in src/")
  -- The parent's answer has only the parent's text.
  T.not_contains(text, "Delegating now. CHILD")
  T.not_contains(text, "hello Parent")
  T.truthy(T.find_line(chat.bufnr, "Parent continues."), "parent text")
  -- One block for the child, folded now that it is idle.
  T.eq(1, T.count_lines(chat.bufnr, "Subagent · Explorer"))
  local win = vim.fn.win_findbuf(chat.bufnr)[1]
  local l = T.find_line(chat.bufnr, "Subagent · Explorer")
  vim.api.nvim_win_call(win, function()
    T.truthy(vim.fn.foldclosed(l) ~= -1, "the idle child is folded")
  end)
end)

T.test("a transcript reopened read-only keeps the subagent's nesting", function()
  T.reset()
  local chat = T.open_chat("nov", dir)
  T.eq("end_turn", T.turn(chat, "delegate"))
  local path = assert(chat.transcript_path, "a transcript")
  -- Every opening's delegate turn written whole: the file collects every
  -- opening of the session id, and an earlier test's alone matched the
  -- first form of this wait (under load the reopen then read this turn cut
  -- off after its tool call).
  T.wait(function()
    local ok, text = pcall(T.read_file, path)
    if not ok then
      return false
    end
    local _, asked = text:gsub("Delegating now", "")
    local _, done = text:gsub("Parent continues", "")
    local _, idle = text:gsub('"idle"', "")
    return asked > 0 and done == asked and idle >= asked
  end, "the transcript is written")
  local ro = assert(require("acp.chat.readonly").open(path))
  T.wait_text(ro, "Subagent · Explorer — idle")
  local text = T.text(ro.bufnr)
  T.contains(text, "│ CHILD SAYS hello")
  T.not_contains(text, "Delegating now. CHILD")
  -- One child block per time the session was shown (a transcript file
  -- collects every opening of the same session id).
  T.eq(T.count_lines(ro.bufnr, "Delegating now."), T.count_lines(ro.bufnr, "Subagent · Explorer"), text)
end)

T.test("a subagent's permission request is shown and answered in the parent chat", function()
  T.reset()
  local chat = T.open_chat("nov", dir)
  assert(chat:send({ { type = "text", text = "child asks" } }))
  T.wait(function()
    return #require("acp.chat.view.permission").for_chat(chat.chat_id) > 0
  end, "the child's permission request reaches the parent chat:\n" .. T.text(chat.bufnr))
  T.contains(T.text(chat.bufnr), "Subagent · Editor — needs you")
  local req = require("acp.chat.view.permission").for_chat(chat.chat_id)[1]
  require("acp.chat.view.permission").respond_nth(req, 1)
  T.wait_text(chat, "permission: allow")
  T.wait(function()
    return (T.turns[chat.chat_id] or {})[1] ~= nil
  end, "turn end")
  T.contains(T.text(chat.bufnr), "│ permission: allow_once")
end)

T.test("cancel on a subagent's block cancels only that child, when allowed", function()
  T.reset()
  local chat = T.open_chat("nov", dir)
  assert(chat:send({ { type = "text", text = "long child" } }))
  T.wait_text(chat, "│ working hard")
  local messages = {}
  local notify = vim.notify
  vim.notify = function(msg)
    messages[#messages + 1] = msg
  end
  T.cursor_on(chat, "Subagent · Locked")
  chat:cancel()
  T.cursor_on(chat, "Subagent · Worker")
  chat:cancel()
  vim.notify = notify
  local all = table.concat(messages, "\n")
  T.contains(all, "does not allow cancelling Locked")
  T.contains(all, "cancelling Worker")
  -- The parent's turn goes on: only the child was cancelled.
  T.eq("busy", chat.status)
  -- Elsewhere, the whole turn.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  chat:cancel()
  T.wait(function()
    return (T.turns[chat.chat_id] or {})[1] ~= nil
  end, "the whole turn cancelled")
end)

T.test("the system prompt from the config reaches an agent that takes it", function()
  T.reset()
  require("acp.config").options.agents.nov.system_prompt = "Answer in French."
  local chat = T.open_chat("nov", dir)
  T.eq("end_turn", T.turn(chat, "prompt"))
  T.contains(T.text(chat.bufnr), "system prompt (append): Answer in French.")
  require("acp.config").options.agents.nov.system_prompt = nil
end)

T.test("an agent that ignores the system prompt is named once, and gets none", function()
  T.reset()
  local messages = {}
  local notify = vim.notify
  vim.notify = function(msg)
    messages[#messages + 1] = msg
  end
  require("acp.config").options.system_prompt = { mode = "append", text = "Be terse." }
  local ok, err = pcall(function()
    local chat = T.open_chat("plain", dir)
    T.eq("end_turn", T.turn(chat, "prompt"))
    T.contains(T.text(chat.bufnr), "system prompt: none")
    -- A second chat with the same agent process is not told again.
    local chat2 = T.open_chat("plain", dir)
    T.eq("end_turn", T.turn(chat2, "prompt"))
  end)
  vim.notify = notify
  require("acp.config").options.system_prompt = nil
  assert(ok, err)
  local told = 0
  for _, m in ipairs(messages) do
    if m:find("does not take a client system prompt", 1, true) then
      told = told + 1
    end
  end
  T.eq(1, told, "told once: " .. table.concat(messages, "\n"))
end)

T.run()
