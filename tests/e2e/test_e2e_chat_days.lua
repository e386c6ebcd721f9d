-- End to end: the chat as users live it, round three (issue 29): what a day
-- in the chat still tripped over, each checked the way the user met it.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
-- Wide enough for the whole winbar.
vim.o.columns = 200

local dir = T.tmpdir()

local NINE = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n"

T.setup_fake({
  days = {
    turns = {
      {
        match = "ask a question",
        steps = {
          {
            type = "elicit",
            message = "Whom to greet?",
            requestedSchema = { type = "object", properties = { greeting = { type = "string", title = "Greeting" } } },
          },
          { type = "text", text = "greeted" },
        },
      },
      {
        match = "propose an edit",
        steps = {
          {
            type = "requestPermission",
            toolCall = {
              toolCallId = "pe-1",
              title = "Edit proposed.txt",
              kind = "edit",
              status = "pending",
              content = { { type = "diff", path = "{{cwd}}/proposed.txt", oldText = "l3\n", newText = "L3 new\n" } },
            },
            onAllow = { { type = "text", text = "allowed" } },
            onReject = { { type = "text", text = "rejected" } },
          },
        },
      },
      {
        match = "propose a file",
        steps = {
          {
            type = "requestPermission",
            toolCall = {
              toolCallId = "pf-1",
              title = "Write born.txt",
              kind = "edit",
              status = "pending",
              content = { { type = "diff", path = "{{cwd}}/born.txt", newText = "one\ntwo\nthree\n" } },
            },
            onAllow = { { type = "text", text = "allowed" } },
            onReject = { { type = "text", text = "rejected" } },
          },
        },
      },
      {
        match = "edit on disk",
        steps = {
          { type = "writeDisk", path = "reviewed.txt", content = "l1\nL2 agent\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n" },
          { type = "text", text = "edited reviewed.txt" },
        },
      },
      { match = "crash", steps = { { type = "crash", stderr = "killed", code = 9 } } },
      { steps = { { type = "text", text = "echo: {{prompt}}" } } },
    },
  },
  -- Loads sessions but cannot resume them: a restart after a crash tries
  -- `session/load`, which the new process answers with an error.
  loadonly = {
    initialize = { agentCapabilities = { loadSession = true } },
    turns = {
      { match = "crash", steps = { { type = "crash", stderr = "killed", code = 9 } } },
      { steps = { { type = "text", text = "echo: {{prompt}}" } } },
    },
  },
  -- The same, keeping its sessions on disk: the restarted agent loads it.
  loadstore = {
    initialize = { agentCapabilities = { loadSession = true } },
    sessionStore = dir .. "/loadstore-sessions.json",
    turns = {
      { match = "crash", steps = { { type = "crash", stderr = "killed", code = 9 } } },
      { steps = { { type = "text", text = "echo: {{prompt}}" } } },
    },
  },
}, dir)
T.require_binaries()

local NOTES = {}
local orig_notify = vim.notify
vim.notify = function(m, ...)
  NOTES[#NOTES + 1] = m
  return orig_notify(m, ...)
end

--- A file of `dir` opened in the current window.
local function open_file(name, text)
  local path = dir .. "/" .. name
  T.write_file(path, text)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  return vim.api.nvim_get_current_buf(), path
end

-- First: no chat has been opened in this Neovim yet.
T.test("a selection made before the first chat is offered first after @", function()
  local buf = open_file("sel.txt", NINE)
  vim.api.nvim_win_set_cursor(0, { 2, 0 })
  vim.api.nvim_feedkeys("Vj" .. vim.api.nvim_replace_termcodes("<Esc>", true, false, true), "x", false)
  T.eq(2, vim.api.nvim_buf_get_mark(buf, "<")[1], "the selection was made")
  local chat = T.open_chat("days", dir)
  local items = require("acp.chat.prompt").mention_items(chat, "@")
  T.eq("@selection", (items[1] or {}).word, "@selection first: " .. vim.inspect(items[1]))
  T.contains(items[1].info or "", "sel.txt#L2-3", "the selected lines")
end)

T.test("completion: nothing selected by itself, / completes commands only at the start", function()
  local prompt = require("acp.chat.prompt")
  for _, global in ipairs({ "menu,popup", "menuone,noinsert", "menu,preview,longest" }) do
    local opt = prompt.completeopt(global)
    T.truthy(vim.tbl_contains(vim.split(opt, ","), "noselect"), global .. " -> " .. opt)
    T.truthy(vim.tbl_contains(vim.split(opt, ","), "noinsert"), global .. " -> " .. opt)
  end
  T.eq(true, prompt.starts_completion("", "/"), "/ at the start of the prompt")
  T.eq(false, prompt.starts_completion("files under ", "/"), "/ in a sentence")
  T.eq(true, prompt.starts_completion("look at ", "@"), "@ in a sentence")
  local chat = T.open_chat("days", dir)
  chat:show()
  local function findstart(line)
    vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { line })
    vim.api.nvim_win_set_cursor(0, { 1, #line })
    return prompt.omnifunc(1, "")
  end
  T.eq(vim.api.nvim_get_current_buf(), chat.prompt_buf, "in the prompt")
  T.eq(0, findstart("/expl"), "a command at the start")
  T.truthy(findstart("files under /us") < 0, "no command in a sentence")
  T.eq(6, findstart("about @READ"), "a mention anywhere")
  -- A second line is not the start of the prompt either.
  vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { "first line", "/pl" })
  vim.api.nvim_win_set_cursor(0, { 2, 3 })
  T.truthy(prompt.omnifunc(1, "") < 0, "no command on a later line")
  vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, {})
  vim.cmd("stopinsert")
end)

T.test("an answered question keeps its text next to the answer", function()
  local chat = T.open_chat("days", dir)
  assert(chat:send({ { type = "text", text = "ask a question" } }))
  T.wait_text(chat, "Whom to greet?")
  local e = T.truthy(require("acp.chat.view.elicitation").for_chat(chat.chat_id)[1], "pending")
  assert(require("acp").elicitation_respond(e.request_id, { action = "accept", content = { greeting = "hi" } }))
  T.wait_text(chat, "greeted")
  local text = T.text(chat.bufnr)
  T.contains(text, "Whom to greet?", "the question stays")
  T.contains(text, "answered: Greeting = hi", "with its answer")
end)

T.test("gd on a proposed edit adds no undo step to the real buffer", function()
  local buf = open_file("proposed.txt", NINE)
  local before = vim.fn.undotree(buf)
  local chat = T.open_chat("days", dir)
  assert(chat:send({ { type = "text", text = "propose an edit" } }))
  T.wait_text(chat, "preview the change in its buffer")
  T.cursor_on(chat, "Edit proposed.txt")
  chat:open_review(vim.api.nvim_win_get_cursor(0)[1] - 1)
  T.eq(buf, vim.api.nvim_get_current_buf(), "the real buffer")
  local after = vim.fn.undotree(buf)
  T.eq(before.seq_last, after.seq_last, "no undo step")
  T.eq(false, vim.bo[buf].modified, "not modified")
  local req = require("acp.chat.view.permission").for_chat(chat.chat_id)[1]
  require("acp.chat.view.permission").respond_nth(req, #req.options)
  T.wait_text(chat, "rejected")
  T.eq(before.seq_last, vim.fn.undotree(buf).seq_last, "still none after the answer")
end)

T.test("gd on a proposed new file shows its lines at once", function()
  local chat = T.open_chat("days", dir)
  assert(chat:send({ { type = "text", text = "propose a file" } }))
  T.wait_text(chat, "preview the change in its buffer")
  T.cursor_on(chat, "Write born.txt")
  chat:open_review(vim.api.nvim_win_get_cursor(0)[1] - 1)
  T.eq(dir .. "/born.txt", vim.api.nvim_buf_get_name(0), "the new file's buffer")
  -- The proposed lines are virtual lines above line 1: the window must
  -- show them (filler lines at the top), not only after scrolling up.
  T.eq(3, vim.fn.winsaveview().topfill, "three lines shown above line 1")
  local req = require("acp.chat.view.permission").for_chat(chat.chat_id)[1]
  require("acp.chat.view.permission").respond_nth(req, #req.options)
  T.wait_text(chat, "rejected")
end)

T.test("restarting a killed agent says what happened once; a dead chat names the same way out", function()
  local chat = T.open_chat("days", dir)
  assert(chat:send({ { type = "text", text = "crash" } }))
  T.wait(function()
    return chat.status == "dead"
  end, "the agent died")
  local died = T.text(chat.bufnr)
  local n = #NOTES
  local ok = chat:send({ { type = "text", text = "anyone?" } })
  T.eq(false, ok, "refused")
  local msg = NOTES[n + 1] or ""
  -- The transcript says "Press R ... (:Acp continue)": so does the refusal.
  T.contains(died, ":Acp continue", "the transcript's way out")
  T.contains(msg, ":Acp continue", "the refusal's way out: " .. msg)
  T.contains(msg, "R", "and the key")
  local lines_before = #T.lines(chat.bufnr)
  chat:restart()
  T.wait(function()
    return chat.status == "ready"
  end, "restarted; transcript:\n" .. T.text(chat.bufnr))
  local added = table.concat(vim.list_slice(T.lines(chat.bufnr), lines_before + 1), "\n")
  T.not_contains(added, "session resumed", "no claim that the session was resumed")
  T.not_contains(added, "could not resume", "no separate error")
  T.eq(1, select(2, added:gsub("restarted", "")), "one note: " .. added)
  T.contains(added, "new session", "which says a new session started: " .. added)
  T.eq("end_turn", T.turn(chat, "hello"), "the chat works")
end)

T.test(":Acp restart does not leave a review drawn but dead", function()
  local buf = open_file("reviewed.txt", NINE)
  local chat = T.open_chat("days", dir)
  T.eq("end_turn", T.turn(chat, "edit on disk"), "turn")
  T.wait(function()
    return #T.review_rows(buf, "AcpReviewAdd") == 1
  end, "the edit is under review")
  local n = #NOTES
  vim.cmd("Acp restart")
  T.wait(function()
    return chat.status == "ready"
  end, "restarted")
  T.wait(function()
    return #T.review_rows(buf, "AcpReviewAdd") == 0
  end, "nothing drawn as under review")
  local review = require("acp.edits.review")
  T.eq(nil, review.files[dir .. "/reviewed.txt"], "no review entry left")
  local said = table.concat(vim.list_slice(NOTES, n + 1), "\n")
  T.contains(said, "review", "the user is told: " .. said)
  T.eq(1, select(2, said:gsub("review", "")), "once: " .. said)
  T.eq({ "l1", "L2 agent", "l3", "l4", "l5", "l6", "l7", "l8", "l9" }, T.lines(buf), "the edit stays in the buffer")
end)

T.test("a load-only restart that fails says what happened once", function()
  local chat = T.open_chat("loadonly", dir)
  assert(chat:send({ { type = "text", text = "crash" } }))
  T.wait(function()
    return chat.status == "dead"
  end, "the agent died")
  local lines_before = #T.lines(chat.bufnr)
  chat:restart()
  T.wait(function()
    return chat.status == "ready"
  end, "restarted; transcript:\n" .. T.text(chat.bufnr))
  local added = table.concat(vim.list_slice(T.lines(chat.bufnr), lines_before + 1), "\n")
  T.not_contains(added, "loaded again", "no claim that the session was loaded: " .. added)
  T.eq(1, select(2, added:gsub("restarted", "")), "one note: " .. added)
  T.contains(added, "new session", "which says a new session started: " .. added)
  T.eq("end_turn", T.turn(chat, "hello"), "the chat works")
end)

T.test("a load-only restart that loads says so once, above the history it replays", function()
  local chat = T.open_chat("loadstore", dir)
  T.eq("end_turn", T.turn(chat, "remember me"), "turn")
  assert(chat:send({ { type = "text", text = "crash" } }))
  T.wait(function()
    return chat.status == "dead"
  end, "the agent died")
  local lines_before = #T.lines(chat.bufnr)
  chat:restart()
  T.wait(function()
    return chat.status == "ready"
  end, "restarted; transcript:\n" .. T.text(chat.bufnr))
  T.wait_text(chat, "echo: remember me")
  local added = table.concat(vim.list_slice(T.lines(chat.bufnr), lines_before + 1), "\n")
  T.eq(1, select(2, added:gsub("restarted", "")), "one note: " .. added)
  local note = added:find("loaded again", 1, true)
  local replayed = added:find("echo: remember me", 1, true)
  T.truthy(note and replayed and note < replayed, "the note above the replayed history: " .. added)
end)

T.test("a prompt window left without its transcript gets the transcript back above it", function()
  local chat = T.open_chat("days", dir)
  chat:show()
  local twin = vim.fn.win_findbuf(chat.bufnr)[1]
  local pwin = vim.fn.win_findbuf(chat.prompt_buf)[1]
  vim.api.nvim_set_current_win(twin)
  -- As when closed where no autocommand ran (another tab page, a plugin).
  vim.cmd("noautocmd close")
  T.eq({ pwin }, vim.fn.win_findbuf(chat.prompt_buf), "the prompt window stayed")
  local wins = #vim.api.nvim_tabpage_list_wins(0)
  chat:show()
  T.eq({ pwin }, vim.fn.win_findbuf(chat.prompt_buf), "the same prompt window, no second one")
  T.eq(wins + 1, #vim.api.nvim_tabpage_list_wins(0), "one window more: the transcript")
  local t = vim.fn.win_findbuf(chat.bufnr)[1]
  T.eq(vim.api.nvim_win_get_position(pwin)[2], vim.api.nvim_win_get_position(t)[2], "in the prompt's column")
  T.truthy(vim.api.nvim_win_get_position(t)[1] < vim.api.nvim_win_get_position(pwin)[1], "above it")
  vim.cmd("stopinsert")
end)

T.run()
