-- End to end: the chat as users live it over several turns (issue 17).
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
T.require_binaries()

local dir = T.tmpdir()

local function step_plan(status)
  return {
    type = "plan",
    entries = { { content = "Do it", priority = "high", status = status } },
  }
end

T.setup_fake({
  ux = {
    turns = {
      {
        match = "slow",
        steps = {
          { type = "text", text = "working", chunkSize = 100 },
          { type = "waitForCancel" },
        },
      },
      {
        match = "ask me",
        steps = {
          { type = "toolCall", toolCallId = "p1", title = "Run make", kind = "execute", status = "pending" },
          { type = "requestPermission", toolCall = { toolCallId = "p1", title = "Run make", kind = "execute" } },
        },
      },
      {
        match = "follow",
        steps = {
          {
            type = "toolCall",
            toolCallId = "r1",
            title = "Read notes",
            kind = "read",
            status = "in_progress",
            locations = { { path = "{{cwd}}/notes.txt", line = 3 } },
          },
          { type = "toolCallUpdate", toolCallId = "r1", status = "completed" },
          { type = "text", text = "followed" },
        },
      },
      {
        match = "again",
        steps = {
          step_plan("in_progress"),
          { type = "toolCall", toolCallId = "same", title = "Second edit", kind = "edit", status = "pending" },
          { type = "toolCallUpdate", toolCallId = "same", status = "failed" },
          { type = "text", text = "second turn done" },
        },
      },
      {
        match = "first",
        steps = {
          step_plan("completed"),
          { type = "toolCall", toolCallId = "same", title = "First edit", kind = "edit", status = "pending" },
          { type = "toolCallUpdate", toolCallId = "same", status = "completed" },
          { type = "text", text = "first turn done" },
        },
      },
    },
  },
}, dir)

T.test("a second turn reusing tool call ids gets blocks of its own, and its own plan", function()
  local chat = T.open_chat("ux", dir)
  T.eq("end_turn", T.turn(chat, "first"), "turn 1")
  T.eq("end_turn", T.turn(chat, "again"), "turn 2")
  local buf = chat.bufnr
  local first = T.truthy(T.find_line(buf, "✓ edit · First edit"), "turn 1 call stays completed:\n" .. T.text(buf))
  local second = T.truthy(T.find_line(buf, "✗ edit · Second edit"), "turn 2 call is a new block:\n" .. T.text(buf))
  T.eq(2, T.count_lines(buf, "Plan ("), "one plan per turn")
  local plan1 = T.find_line(buf, "Plan (1/1 done)")
  local plan2 = T.find_line(buf, "Plan (0/1 done)")
  local you2 = T.find_line(buf, "again")
  T.truthy(plan1 and plan1 < first and first < you2, "turn 1's plan and call are in turn 1")
  T.truthy(plan2 and you2 < plan2 and plan2 < second, "turn 2's plan and call are in turn 2")
end)

T.test("opening a session that is open in a chat shows that chat, which goes on working", function()
  local chat = T.open_chat("ux", dir)
  T.eq("end_turn", T.turn(chat, "first"), "turn 1")
  vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { "half-written" })
  vim.cmd("silent! only")
  vim.cmd("enew")
  local n = #require("acp.chat").list
  local item = { action = "load", session_id = chat.session_id, agent_name = "ux", cwd = dir }
  T.eq(chat, require("acp.agents.sessions").open(item, dir), "the open chat")
  T.eq(n, #require("acp.chat").list, "no second chat")
  T.truthy(chat:is_visible(), "shown")
  T.eq(chat, require("acp").open({ agent = "ux", load_session_id = chat.session_id }), "open() too")
  T.eq({ "half-written" }, T.lines(chat.prompt_buf), "the prompt text is kept")
  T.eq("end_turn", T.turn(chat, "again"), "the chat goes on")
end)

T.test("in float layout a new chat takes the floats of the one shown", function()
  require("acp.config").options.layout.position = "float"
  local ok, err = pcall(function()
    local one = T.open_chat("ux", dir)
    local two = T.open_chat("ux", dir)
    local floats = vim.tbl_filter(function(w)
      return vim.api.nvim_win_get_config(w).relative ~= ""
    end, vim.api.nvim_tabpage_list_wins(0))
    T.eq(2, #floats, "one transcript float and one prompt float")
    T.truthy(two:is_visible() and not one:is_visible(), "the new chat is shown, the old one hidden")
    T.eq(" acp: ux ", vim.api.nvim_win_get_config(vim.fn.win_findbuf(two.bufnr)[1]).title[1][1], "float title")
  end)
  require("acp.config").options.layout.position = "right"
  assert(ok, err)
end)

T.test("a narrow winbar keeps the agent name and the title, dropping cost and context first", function()
  local chat = T.open_chat("ux", dir)
  chat.title = "Fix the parser"
  chat.usage = { used = 18200, size = 200000, cost = { amount = 1.5, currency = "USD" } }
  local winbar = require("acp.chat.view.winbar")
  local wide = winbar.text(chat, 200)
  T.contains(wide, "$1.50", "cost when there is room")
  local narrow = winbar.text(chat, 40)
  T.truthy(narrow:find("^%%#AcpWinbar# ux │ Fix the parser"), "name and title first: " .. narrow)
  T.not_contains(narrow, "$1.50", "cost dropped")
  T.not_contains(narrow, "ctx", "context dropped")
  local tiny = winbar.text(chat, 12)
  T.truthy(tiny:find("^%%#AcpWinbar# ux │ Fix"), "the title shortened, never the name: " .. tiny)
  T.contains(tiny, "…", "marked as shortened")
  local win = vim.fn.win_findbuf(chat.bufnr)[1]
  vim.api.nvim_win_set_width(win, 30)
  chat:update_winbar()
  T.truthy(vim.wo[win].winbar:find("ux │ Fix the parser", 1, true), "the window's winbar fits its width")
end)

T.test(":Acp log opens at the newest entry", function()
  T.open_chat("ux", dir)
  vim.cmd("Acp log")
  local count = vim.api.nvim_buf_line_count(0)
  T.truthy(count > 1, "the log has entries")
  T.eq(count, vim.api.nvim_win_get_cursor(0)[1], "cursor on the last line")
  vim.cmd("close")
end)

T.test("sending a prompt scrolls the transcript to it even with the cursor up in the chat", function()
  local chat = T.open_chat("ux", dir)
  T.eq("end_turn", T.turn(chat, "first"), "turn 1")
  local win = vim.fn.win_findbuf(chat.bufnr)[1]
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  T.eq("end_turn", T.turn(chat, "again"), "turn 2")
  T.eq(
    vim.api.nvim_buf_line_count(chat.bufnr),
    vim.api.nvim_win_get_cursor(win)[1],
    "the transcript follows the new turn"
  )
end)

--- Run `fn` with vim.notify recorded; returns the messages.
local function notified(fn)
  local msgs, orig = {}, vim.notify
  vim.notify = function(m)
    msgs[#msgs + 1] = m
  end
  local ok, err = pcall(fn)
  vim.notify = orig
  assert(ok, err)
  return msgs
end

T.test("a hidden chat or an unfocused Neovim gets a notification when a turn ends or a permission waits", function()
  local chat = T.open_chat("ux", dir)
  local shown = notified(function()
    T.turn(chat, "first")
  end)
  T.eq({}, shown, "nothing while the chat is in view")
  chat:hide()
  local hidden = notified(function()
    T.turn(chat, "again")
    assert(chat:send({ { type = "text", text = "ask me" } }))
    T.wait(function()
      return #require("acp.chat.view.permission").for_chat(chat.chat_id) > 0
    end, "the permission request")
  end)
  T.contains(table.concat(hidden, "\n"), "chat " .. chat.n .. " (ux): turn ended (end turn)", "turn end")
  T.contains(table.concat(hidden, "\n"), "asks permission: Run make", "permission")
  chat:cancel()
  T.wait(function()
    return chat.status == "ready"
  end, "cancelled")
  chat:show()
  vim.api.nvim_exec_autocmds("FocusLost", {})
  local unfocused = notified(function()
    T.turn(chat, "first")
  end)
  vim.api.nvim_exec_autocmds("FocusGained", {})
  T.eq(1, #unfocused, "Neovim not focused: notified although the chat is shown")
  require("acp.config").options.notify.turn_end = false
  chat:hide()
  local off = notified(function()
    T.turn(chat, "first")
  end)
  require("acp.config").options.notify.turn_end = true
  T.eq({}, off, "notify.turn_end = false turns it off")
end)

T.test("a chat that follows the agent shows the file and line of its tool call in the editor window", function()
  T.write_file(dir .. "/notes.txt", "one\ntwo\nthree\nfour\n")
  vim.cmd("enew")
  local editor = vim.api.nvim_get_current_win()
  local chat = T.open_chat("ux", dir)
  T.eq("end_turn", T.turn(chat, "follow please"), "not following: nothing opens")
  T.eq("", vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(editor)), "the editor window is untouched")
  vim.cmd("Acp follow")
  T.truthy(chat.following, "following")
  T.contains(vim.wo[vim.fn.win_findbuf(chat.bufnr)[1]].winbar, "following", "the winbar says so")
  local from = vim.api.nvim_get_current_win()
  T.eq("end_turn", T.turn(chat, "follow again"), "turn")
  T.wait(function()
    return vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(editor)) == dir .. "/notes.txt"
  end, "notes.txt in the editor window")
  T.eq(3, vim.api.nvim_win_get_cursor(editor)[1], "at the tool call's line")
  T.eq(from, vim.api.nvim_get_current_win(), "the cursor stays where the user is")
  vim.cmd("Acp follow off")
  T.eq(false, chat.following, "off")
end)

T.test("the end of a turn is not drawn as a markdown error", function()
  vim.cmd("syntax on")
  local chat = T.open_chat("ux", dir)
  T.eq("end_turn", T.turn(chat, "first"), "turn")
  local l = T.truthy(T.find_line(chat.bufnr, "— end turn —"), "the stop reason in words")
  local win = vim.fn.win_findbuf(chat.bufnr)[1]
  vim.api.nvim_win_call(win, function()
    local line = vim.fn.getline(l)
    for col = 1, #line do
      local name = vim.fn.synIDattr(vim.fn.synIDtrans(vim.fn.synID(l, col, 1)), "name")
      T.truthy(name ~= "Error", ("column %d of %q is highlighted as an error"):format(col, line))
    end
  end)
end)

T.run()
