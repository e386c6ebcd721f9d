-- Rendering from the backend's golden fixtures (tests/fixtures/events.json,
-- written by crates/acp-nvim/tests/fixtures.rs) and from small events in the
-- same snake_case shapes (no backend): fast and deterministic.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local events = require("acp.events")
local protocol = require("acp.rpc.protocol")

--- The backend's golden fixtures: name -> event, and the names in order.
---@return table<string, acp.Event>, string[]
local function fixtures()
  local data = vim.json.decode(T.read_file(T.root .. "/tests/fixtures/events.json"))
  local by_name, names = {}, {}
  for _, item in ipairs(data.events) do
    by_name[item.name] = item.event
    names[#names + 1] = item.name
  end
  return by_name, names
end

local sent = T.fake_backend()
-- Wide enough for the whole winbar (it drops parts to fit narrow windows).
vim.o.columns = 300

local function session(chat, change)
  return { type = "session", chat_id = chat.chat_id, change = change }
end

local function text(t)
  return { type = "text", text = t }
end

T.test("streamed chunks are appended at the tail in order", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, { change = "entry_added", index = 0, entry = { type = "user_message", content = { text("hi") } } }),
    session(chat, { change = "entry_added", index = 1, entry = { type = "agent_message", content = { text("Hel") } } }),
  })
  events.dispatch({
    session(chat, { change = "text_appended", index = 1, content = text("lo\nsecond ") }),
    session(chat, { change = "text_appended", index = 1, content = text("line") }),
  })
  for i = 1, 200 do
    events.dispatch({ session(chat, { change = "text_appended", index = 1, content = text(" " .. i) }) })
  end
  local lines = T.lines(chat.bufnr)
  T.eq("## You", lines[1], "user header")
  T.eq("hi", lines[2], "user text")
  T.eq("", lines[3], "blank line between blocks")
  T.eq("## demo", lines[4], "agent header")
  T.eq("Hello", lines[5], "first agent line")
  local expect = "second line"
  for i = 1, 200 do
    expect = expect .. " " .. i
  end
  T.eq(expect, lines[6], "second agent line holds every chunk in order")
  T.eq(6, #lines, "no extra lines")
  T.eq(false, vim.bo[chat.bufnr].modifiable, "transcript is read-only between batches")
end)

T.test("a location at line 0 is shown and opened as the file (claude-code-acp's read from the top)", function()
  local chat = T.fake_chat()
  local path = T.tmpdir() .. "/zero.txt"
  T.write_file(path, "one\ntwo\n")
  events.dispatch({
    session(chat, {
      change = "entry_added",
      index = 0,
      entry = {
        type = "tool_call",
        id = "z1",
        title = "Read zero.txt",
        kind = "read",
        status = "completed",
        locations = { { path = path, line = 0 } },
      },
    }),
  })
  local l = T.truthy(T.find_line(chat.bufnr, "→ " .. path), "location line:\n" .. T.text(chat.bufnr))
  T.eq("  → " .. path, T.lines(chat.bufnr)[l], "no `:0` after the file")
  T.eq(
    { path = path },
    require("acp.chat.view.tool_call").location({ locations = { { path = path, line = 0 } } }),
    "no line to jump to"
  )
  T.eq(
    3,
    require("acp.chat.view.tool_call").location({ locations = { { path = path, line = 3 } } }).line,
    "a real line stays"
  )
end)

T.test("a tool call block is updated in place, later blocks stay intact", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, {
      change = "entry_added",
      index = 0,
      entry = { type = "tool_call", id = "t1", title = "Read config", kind = "read", status = "pending" },
    }),
    session(
      chat,
      { change = "entry_added", index = 1, entry = { type = "agent_message", content = { text("after") } } }
    ),
  })
  local buf = chat.bufnr
  T.truthy(T.find_line(buf, "○ read · Read config"), "pending header")
  events.dispatch({
    session(chat, {
      change = "tool_call_changed",
      index = 0,
      tool_call = {
        id = "t1",
        title = "Read config",
        kind = "read",
        status = "completed",
        content = { { type = "content", content = text("line a\nline b") } },
        locations = { { path = "/tmp/x.lua", line = 3 } },
      },
    }),
  })
  T.eq(nil, T.find_line(buf, "○ read"), "old header replaced")
  T.eq(1, T.count_lines(buf, "✓ read · Read config"), "one header, completed")
  local l = T.find_line(buf, "✓ read")
  local lines = T.lines(buf)
  T.eq("  line a", lines[l + 1], "content line 1")
  T.eq("  line b", lines[l + 2], "content line 2")
  T.eq("  → /tmp/x.lua:3", lines[l + 3], "location")
  T.eq("after", lines[#lines], "the message after the tool call is still last")
  -- Text streamed into the later message still lands there.
  events.dispatch({ session(chat, { change = "text_appended", index = 1, content = text(" more") }) })
  lines = T.lines(buf)
  T.eq("after more", lines[#lines], "append after an in-place update")
  -- Shrinking the block keeps the neighbours right too.
  events.dispatch({
    session(chat, {
      change = "tool_call_changed",
      index = 0,
      tool_call = { id = "t1", title = "Read config", kind = "read", status = "failed" },
    }),
  })
  lines = T.lines(buf)
  l = T.find_line(buf, "✗ read · Read config")
  T.truthy(l, "failed header")
  T.eq("", lines[l + 1], "separator after the shrunk block")
  T.eq("after more", lines[l + 2], "message follows")
end)

T.test("a diff content shows +N -M and the diff key opens both sides", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, {
      change = "entry_added",
      index = 0,
      entry = {
        type = "tool_call",
        id = "e1",
        title = "Edit",
        kind = "edit",
        status = "in_progress",
        content = { { type = "diff", path = "/p/a.txt", old_text = "one\ntwo\n", new_text = "one\n2\nthree\n" } },
      },
    }),
  })
  local l = T.truthy(T.find_line(chat.bufnr, "± /p/a.txt +2 -1"), "diff summary")
  local win = vim.fn.win_findbuf(chat.bufnr)[1]
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { l, 0 })
  local tabs = #vim.api.nvim_list_tabpages()
  vim.api.nvim_feedkeys("d", "x", false)
  T.eq(tabs + 1, #vim.api.nvim_list_tabpages(), "a diff tab opened")
  local wins = vim.api.nvim_tabpage_list_wins(0)
  T.eq(2, #wins, "two sides")
  T.eq({ "one", "two" }, T.lines(vim.api.nvim_win_get_buf(wins[1])), "old side")
  T.eq({ "one", "2", "three" }, T.lines(vim.api.nvim_win_get_buf(wins[2])), "new side")
  T.truthy(vim.wo[wins[1]].diff and vim.wo[wins[2]].diff, "diff mode")
end)

T.test("the plan is one block replaced where it first appeared", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, {
      change = "plan_replaced",
      entries = {
        { content = "Read", priority = "high", status = "in_progress" },
        { content = "Write", priority = "low", status = "pending" },
      },
    }),
    session(
      chat,
      { change = "entry_added", index = 0, entry = { type = "agent_message", content = { text("working") } } }
    ),
  })
  events.dispatch({
    session(chat, {
      change = "plan_replaced",
      entries = {
        { content = "Read", priority = "high", status = "completed" },
        { content = "Write", priority = "low", status = "in_progress" },
        { content = "Test", priority = "medium", status = "pending" },
      },
    }),
  })
  local buf = chat.bufnr
  T.eq(1, T.count_lines(buf, "Plan ("), "one plan block")
  local l = T.find_line(buf, "Plan (1/3 done)")
  T.truthy(l, "updated header")
  local lines = T.lines(buf)
  T.eq("  [x] Read (high)", lines[l + 1], "entry 1")
  T.eq("  [~] Write (low)", lines[l + 2], "entry 2")
  T.eq("  [ ] Test (medium)", lines[l + 3], "entry 3")
  T.eq("working", lines[#lines], "the message after the plan stays after it")
end)

T.test("thoughts are dimmed and folded, unknown updates are folded JSON", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, { change = "entry_added", index = 0, entry = { type = "thought", content = { text("hmm") } } }),
  })
  events.dispatch({
    session(chat, { change = "text_appended", index = 0, content = text("\nmore thinking") }),
    session(chat, { change = "unknown", kind = "future_update", raw = { sessionUpdate = "future_update", x = 1 } }),
  })
  local buf = chat.bufnr
  local win = vim.fn.win_findbuf(buf)[1]
  local l = T.find_line(buf, "▸ Thinking")
  T.truthy(l, "thought header")
  vim.api.nvim_win_call(win, function()
    T.eq(l, vim.fn.foldclosed(l + 1), "thought folded from its header")
    T.eq(l + 2, vim.fn.foldclosedend(l), "fold covers the streamed lines")
  end)
  local view = chat.transcript.view
  local marks = vim.api.nvim_buf_get_extmarks(
    buf,
    view.ns,
    { l - 1, 0 },
    { l - 1, -1 },
    { details = true, overlap = true }
  )
  local dim = false
  for _, m in ipairs(marks) do
    if m[4].hl_group == "AcpThought" and m[4].end_row == l + 1 then
      dim = true
    end
  end
  T.truthy(dim, "the thought range (including streamed text) is highlighted AcpThought")
  local u = T.find_line(buf, "▸ Unknown update: future_update")
  T.truthy(u, "unknown header")
  T.truthy(T.find_line(buf, '"x": 1'), "raw JSON shown")
  vim.api.nvim_win_call(win, function()
    T.eq(u, vim.fn.foldclosed(u + 1), "unknown block folded")
  end)
end)

T.test("a thought streamed while the user types in the prompt is folded as it grows", function()
  local chat = T.fake_chat()
  local buf = chat.bufnr
  local win = vim.fn.win_findbuf(buf)[1]
  local chunks = { "Let me ", "think.\nFirst", " step,\nsecond ", "step.\n", "Done", " thinking." }
  -- The demo's sequence: the prompt was sent from Insert mode, the user keeps
  -- typing, and the thought arrives as entry_added then text_appended
  -- batches. Neovim updates no expression fold in Insert mode.
  _G.acp_test_stream = function()
    T.eq("i", vim.api.nvim_get_mode().mode, "streaming while in Insert mode")
    events.dispatch({
      session(chat, { change = "entry_added", index = 0, entry = { type = "user_message", content = { text("go") } } }),
    })
    events.dispatch({
      session(chat, { change = "entry_added", index = 1, entry = { type = "thought", content = { text("Hmm. ") } } }),
    })
    for _, c in ipairs(chunks) do
      events.dispatch({ session(chat, { change = "text_appended", index = 1, content = text(c) }) })
      -- What a redraw does between batches: look at the fold.
      vim.api.nvim_win_call(win, function()
        vim.fn.foldclosed(vim.fn.line("$"))
      end)
    end
  end
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(chat.prompt_buf)[1])
  vim.api.nvim_feedkeys(vim.keycode("i<Cmd>lua acp_test_stream()<CR><Esc>"), "x", false)
  local l = T.truthy(T.find_line(buf, "▸ Thinking"), "thought header")
  T.eq("Done thinking.", T.lines(buf)[l + 4], "every chunk rendered")
  vim.api.nvim_win_call(win, function()
    T.eq(l, vim.fn.foldclosed(l), "the header starts a closed fold, without zx")
    T.eq(l + 4, vim.fn.foldclosedend(l), "the fold covers every streamed line")
  end)
  -- A fold the user opened stays open while the thought grows.
  vim.api.nvim_win_call(win, function()
    vim.cmd(l .. "foldopen")
  end)
  events.dispatch({ session(chat, { change = "text_appended", index = 1, content = text("\nAnd more.") }) })
  vim.api.nvim_win_call(win, function()
    T.eq(-1, vim.fn.foldclosed(l), "still open after growing")
    vim.cmd(l .. "foldclose")
    T.eq(l + 5, vim.fn.foldclosedend(l), "the fold grew with the block")
  end)
  -- A later block is outside the fold.
  events.dispatch({
    session(
      chat,
      { change = "entry_added", index = 2, entry = { type = "agent_message", content = { text("answer") } } }
    ),
  })
  local a = T.truthy(T.find_line(buf, "answer"), "message after the thought")
  vim.api.nvim_win_call(win, function()
    T.eq(l + 5, vim.fn.foldclosedend(l), "the fold stops at the thought")
    T.eq(-1, vim.fn.foldclosed(a), "the message is not folded")
  end)
end)

T.test("a transcript shown again in a new window gets its folds", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, { change = "entry_added", index = 0, entry = { type = "thought", content = { text("a\nb") } } }),
  })
  chat:hide()
  events.dispatch({
    session(
      chat,
      { change = "entry_added", index = 1, entry = { type = "agent_message", content = { text("x\ny") } } }
    ),
    session(chat, { change = "entry_added", index = 2, entry = { type = "thought", content = { text("zeta") } } }),
  })
  chat:show()
  local win = vim.fn.win_findbuf(chat.bufnr)[1]
  local first = T.truthy(T.find_line(chat.bufnr, "▸ Thinking"), "first thought")
  local second = T.truthy(T.find_line(chat.bufnr, "zeta"), "second thought")
  vim.api.nvim_win_call(win, function()
    T.eq(first + 2, vim.fn.foldclosedend(first), "first thought folded")
    T.eq(second - 1, vim.fn.foldclosed(second), "second thought, added while hidden, folded")
    T.eq(-1, vim.fn.foldclosed(T.find_line(chat.bufnr, "x")), "message not folded")
  end)
end)

T.test("one blank line between blocks, whatever line breaks a message ends with", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, { change = "entry_added", index = 0, entry = { type = "user_message", content = { text("go\n") } } }),
    session(
      chat,
      { change = "entry_added", index = 1, entry = { type = "agent_message", content = { text("# Hi\n\n") } } }
    ),
  })
  -- Paragraph breaks streamed in pieces still separate the paragraphs.
  for _, c in ipairs({ "One.", "\n", "\n", "Two.\r\n", "\r\n\n" }) do
    events.dispatch({ session(chat, { change = "text_appended", index = 1, content = text(c) }) })
  end
  events.dispatch({
    session(chat, {
      change = "plan_replaced",
      entries = { { content = "Read", priority = "high", status = "pending" } },
    }),
    session(chat, { change = "entry_added", index = 2, entry = { type = "thought", content = { text("hmm\n\n") } } }),
    session(chat, {
      change = "entry_added",
      index = 3,
      entry = { type = "tool_call", id = "t1", title = "Read a", kind = "read", status = "pending" },
    }),
    session(
      chat,
      { change = "entry_added", index = 4, entry = { type = "agent_message", content = { text("end\n\n\n") } } }
    ),
  })
  T.eq({
    "## You",
    "go",
    "",
    "## demo",
    "# Hi",
    "",
    "One.",
    "",
    "Two.",
    "",
    "Plan (0/1 done)",
    "  [ ] Read (high)",
    "",
    "▸ Thinking",
    "hmm",
    "",
    "○ read · Read a",
    "",
    "end",
  }, T.lines(chat.bufnr), "the transcript")
end)

T.test("autoscroll follows the tail unless the user moved up", function()
  local chat = T.fake_chat()
  local win = vim.fn.win_findbuf(chat.bufnr)[1]
  events.dispatch({
    session(chat, { change = "entry_added", index = 0, entry = { type = "agent_message", content = { text("a") } } }),
  })
  for i = 1, 50 do
    events.dispatch({ session(chat, { change = "text_appended", index = 0, content = text("\nline " .. i) }) })
  end
  local count = vim.api.nvim_buf_line_count(chat.bufnr)
  T.eq(count, vim.api.nvim_win_get_cursor(win)[1], "cursor follows the tail")
  vim.api.nvim_win_set_cursor(win, { 2, 0 })
  events.dispatch({ session(chat, { change = "text_appended", index = 0, content = text("\nnew") }) })
  T.eq(2, vim.api.nvim_win_get_cursor(win)[1], "scrolled-up cursor stays")
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(chat.bufnr), 0 })
  events.dispatch({ session(chat, { change = "text_appended", index = 0, content = text("\nnewer") }) })
  T.eq(vim.api.nvim_buf_line_count(chat.bufnr), vim.api.nvim_win_get_cursor(win)[1], "following again")
end)

T.test("a permission prompt shows keys with kinds; a digit answers it", function()
  local chat = T.fake_chat()
  local seen
  vim.api.nvim_create_autocmd("User", {
    pattern = "AcpPermissionRequest",
    once = true,
    callback = function(a)
      seen = a.data
    end,
  })
  events.dispatch({
    session(chat, {
      change = "entry_added",
      index = 0,
      entry = { type = "tool_call", id = "x1", title = "Run rm", kind = "execute", status = "pending" },
    }),
    {
      type = "permission_request",
      chat_id = chat.chat_id,
      request_id = 7,
      tool_call = { tool_call_id = "x1", title = "Run rm", kind = "execute", status = "pending" },
      options = {
        { option_id = "ok", name = "Allow", kind = "allow_once" },
        { option_id = "liar", name = "Reject", kind = "allow_always" },
        { option_id = "no", name = "Reject", kind = "reject_once" },
      },
    },
  })
  local buf = chat.bufnr
  T.truthy(T.find_line(buf, "Permission needed"), "prompt title")
  T.truthy(T.find_line(buf, "2  Reject  [allow_always]"), "a lying name shows its kind")
  T.eq(1, T.count_lines(buf, "· Run rm"), "prompt is inside the tool call block")
  T.eq(7, seen and seen.request_id, "AcpPermissionRequest fired")
  T.eq(chat.chat_id, seen.chat_id, "autocmd data has the chat id")
  local function digit_mapped(b)
    for _, m in ipairs(vim.api.nvim_buf_get_keymap(b, "n")) do
      if m.lhs == "3" then
        return true
      end
    end
    return false
  end
  T.truthy(digit_mapped(buf), "digits answer in the transcript")
  T.truthy(digit_mapped(chat.prompt_buf), "and in the prompt, where the user often is")
  -- Pressed in the prompt window (normal mode).
  chat:show()
  local win = vim.fn.win_findbuf(chat.prompt_buf)[1]
  vim.api.nvim_set_current_win(win)
  vim.cmd("stopinsert")
  for i = #sent, 1, -1 do
    sent[i] = nil
  end
  vim.api.nvim_feedkeys("3", "x", false)
  T.eq({ "acp.permission_respond", { request_id = 7, option_id = "no" } }, sent[1], "option 3 sent")
  T.eq(nil, T.find_line(buf, "Permission needed"), "prompt removed")
  T.truthy(T.find_line(buf, "answered: Reject [reject_once]"), "answer noted")
  T.eq(false, chat.digit_keys, "digit keys unmapped when nothing is pending")
  T.eq(false, digit_mapped(chat.prompt_buf), "counts work again in the prompt")
end)

T.test("permission_cancelled removes the prompt; a request before its tool call gets a block", function()
  local chat = T.fake_chat()
  events.dispatch({
    {
      type = "permission_request",
      chat_id = chat.chat_id,
      request_id = 9,
      tool_call = { tool_call_id = "early", title = "Write file", kind = "edit", raw_input = { path = "/x" } },
      options = { { option_id = "a", name = "Allow", kind = "allow_once" } },
    },
  })
  local buf = chat.bufnr
  T.truthy(T.find_line(buf, "edit · Write file"), "block made from the request")
  T.truthy(T.find_line(buf, 'input: {"path":"/x"}'), "raw input shown when there is no diff")
  events.dispatch({
    session(chat, {
      change = "entry_added",
      index = 0,
      entry = { type = "tool_call", id = "early", title = "Write file", kind = "edit", status = "pending" },
    }),
  })
  T.eq(1, T.count_lines(buf, "edit · Write file"), "the tool call reuses the block")
  T.truthy(T.find_line(buf, "Permission needed"), "prompt kept")
  events.dispatch({ { type = "permission_cancelled", chat_id = chat.chat_id, request_id = 9 } })
  T.eq(nil, T.find_line(buf, "Permission needed"), "prompt removed")
  T.truthy(T.find_line(buf, "permission request cancelled"), "cancel noted")
end)

T.test("auto_allow answers matching tool kinds at once", function()
  local chat = T.fake_chat({ setup = { permission = { auto_allow = { "read" } } } })
  for i = #sent, 1, -1 do
    sent[i] = nil
  end
  events.dispatch({
    {
      type = "permission_request",
      chat_id = chat.chat_id,
      request_id = 11,
      tool_call = { tool_call_id = "r", title = "Read", kind = "read" },
      options = {
        { option_id = "always", name = "Always", kind = "allow_always" },
        { option_id = "once", name = "Once", kind = "allow_once" },
      },
    },
  })
  T.eq({ "acp.permission_respond", { request_id = 11, option_id = "once" } }, sent[#sent], "allow_once chosen")
  T.truthy(T.find_line(chat.bufnr, "auto-allowed by config: Once [allow_once]"), "noted")
  require("acp").setup({})
end)

T.test("winbar shows mode, model and usage; turn end and errors are in the transcript", function()
  local chat = T.fake_chat({
    modes = {
      current_mode_id = "ask",
      available_modes = { { id = "ask", name = "Ask" }, { id = "code", name = "Code" } },
    },
    config_options = {
      {
        id = "model",
        name = "Model",
        category = "model",
        type = "select",
        current_value = "m1",
        options = { { value = "m1", name = "Fast 1" } },
      },
    },
  })
  local ended
  vim.api.nvim_create_autocmd("User", {
    pattern = "AcpTurnEnd",
    once = true,
    callback = function(a)
      ended = a.data
    end,
  })
  events.dispatch({
    session(chat, { change = "mode_changed", current_mode_id = "code" }),
    session(chat, { change = "info_changed", title = "Fix the bug" }),
    session(
      chat,
      { change = "usage_changed", usage = { used = 12345, size = 200000, cost = { amount = 0.5, currency = "USD" } } }
    ),
    { type = "turn_ended", chat_id = chat.chat_id, stop_reason = "max_tokens" },
    { type = "agent_exited", chat_id = chat.chat_id, status = "exit code 3", stderr_tail = "boom\npanic here" },
  })
  local win = vim.fn.win_findbuf(chat.bufnr)[1]
  local bar = vim.wo[win].winbar
  T.contains(bar, "mode: Code", "winbar mode")
  T.contains(bar, "Fix the bug", "winbar title")
  T.contains(bar, "model: Fast 1", "winbar model")
  T.contains(bar, "ctx 12.3k/200.0k (6%%)", "winbar usage")
  T.contains(bar, "$0.50", "winbar cost")
  T.eq({ session_id = chat.session_id, chat_id = chat.chat_id, stop_reason = "max_tokens" }, ended, "AcpTurnEnd data")
  local all = T.text(chat.bufnr)
  T.contains(all, "— max tokens —", "stop reason")
  T.contains(all, "exited (exit code 3)", "exit")
  T.contains(all, "  │ panic here", "stderr tail")
  T.eq(false, chat:send({ text("x") }), "a dead chat refuses prompts")
end)

T.test("modes set from a session response and a cleared title update the winbar", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, { change = "info_changed", title = "Old title" }),
    session(chat, {
      change = "modes_changed",
      current_mode_id = "plan",
      available_modes = { { id = "plan", name = "Planning" } },
    }),
  })
  local win = vim.fn.win_findbuf(chat.bufnr)[1]
  T.contains(vim.wo[win].winbar, "mode: Planning", "mode name")
  T.contains(vim.wo[win].winbar, "Old title", "title")
  events.dispatch({ session(chat, { change = "info_changed" }) })
  T.not_contains(vim.wo[win].winbar, "Old title", "title cleared")
end)

T.test("prompts are queued until the session starts and while a turn runs", function()
  require("acp").setup({})
  local chat = require("acp").open({ agent = "demo", cwd = T.root })
  for i = #sent, 1, -1 do
    sent[i] = nil
  end
  vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { "first", "question" })
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(chat.prompt_buf)[1])
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  T.eq({ "" }, T.lines(chat.prompt_buf), "input cleared")
  T.eq(0, #sent, "nothing sent before the session started")
  require("acp").prompt("second")
  events.dispatch({
    { type = "session_started", chat_id = chat.chat_id, session_id = "S", agent_name = "demo", capabilities = {} },
  })
  T.eq("S", chat.session_id, "handle gets the session id")
  T.eq(1, #sent, "one prompt in flight")
  T.eq({ "acp.prompt", { chat_id = chat.chat_id, blocks = { text("first\nquestion") } } }, sent[1], "first prompt")
  events.dispatch({ { type = "turn_ended", chat_id = chat.chat_id, stop_reason = "end_turn" } })
  T.eq(
    { "acp.prompt", { chat_id = chat.chat_id, blocks = { text("second") } } },
    sent[2],
    "queued prompt sent after the turn"
  )
end)

T.test("shell calls show their command; a replayed terminal is not waiting; unknown updates are the agent's", function()
  local chat = T.fake_chat()
  local function tool(index, entry)
    return session(chat, { change = "entry_added", index = index, entry = entry })
  end
  events.dispatch({
    session(chat, {
      change = "entry_added",
      index = 0,
      entry = { type = "user_message", content = { text("run it") } },
    }),
    session(chat, { change = "unknown", kind = "future_update", raw = { x = 1 } }),
    tool(1, {
      type = "tool_call",
      id = "sh",
      title = "Run tests",
      kind = "execute",
      status = "pending",
      raw_input = { command = "make test" },
    }),
    tool(2, {
      type = "tool_call",
      id = "old",
      title = "ls",
      kind = "execute",
      status = "completed",
      raw_input = { command = { "ls", "-la" } },
      content = { { type = "terminal", terminal_id = "term-9" } },
    }),
  })
  local buf = chat.bufnr
  local lines = T.lines(buf)
  T.truthy(T.find_line(buf, "  $ make test"), "the command, not input: {...}")
  T.eq(nil, T.find_line(buf, "input: "), "no raw JSON")
  T.truthy(T.find_line(buf, "  $ ls -la (output not kept)"), "a replayed terminal is not waiting for output")
  local unknown = T.find_line(buf, "Unknown update")
  local agent_header = T.find_line(buf, "## demo")
  T.truthy(
    agent_header and agent_header < unknown,
    "the unknown update is under the agent's header: " .. table.concat(lines, "\n")
  )
end)

T.test("the mode, model and option menus mark the current value and show names, not ids", function()
  local chat = T.fake_chat({
    modes = {
      current_mode_id = "code",
      available_modes = { { id = "ask", name = "Ask" }, { id = "code", name = "Code" } },
    },
    config_options = {
      {
        id = "model",
        name = "Model",
        category = "model",
        type = "select",
        current_value = "m-small",
        options = { { value = "m-small", name = "Small" }, { value = "m-large", name = "Large" } },
      },
      { id = "fast", name = "Fast mode", type = "boolean", current_value = false },
    },
  })
  local menus = {}
  local orig = vim.ui.select
  vim.ui.select = function(items, opts)
    local lines = {}
    for _, it in ipairs(items) do
      lines[#lines + 1] = opts.format_item(it)
    end
    menus[#menus + 1] = lines
  end
  local ok, err = pcall(function()
    vim.cmd("Acp mode")
    vim.cmd("Acp model")
    vim.cmd("Acp option")
  end)
  vim.ui.select = orig
  assert(ok, err)
  _ = chat
  T.eq({ "Ask", "Code (current)" }, menus[1], "modes")
  T.eq({ "Small (current)", "Large" }, menus[2], "models")
  T.eq({ "Model: Small", "Fast mode: off" }, menus[3], "options by value name")
end)

T.test("the diff tab is named after the file", function()
  require("acp.chat.view.tool_call").open_diff({ path = vim.fn.getcwd() .. "/lua/x.lua", old = "a\n", new = "b\n" })
  local name = vim.fn.bufname(vim.api.nvim_get_current_buf())
  T.truthy(name:find("^lua/x%.lua %(after%) %[acp diff %d+%]$"), "the file's name: " .. name)
  T.truthy(
    vim.fn.pathshorten(name):find("^l/x%.lua %(after%)"),
    "readable in the tab line: " .. vim.fn.pathshorten(name)
  )
  vim.cmd("tabclose")
end)

T.test("terminal output is shown live inside its tool call", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, {
      change = "entry_added",
      index = 0,
      entry = {
        type = "tool_call",
        id = "t",
        title = "ls",
        kind = "execute",
        status = "in_progress",
        content = { { type = "terminal", terminal_id = "term-1" } },
      },
    }),
    { type = "terminal", chat_id = chat.chat_id, terminal_id = "term-1", kind = "output", data = "a\nb" },
  })
  events.dispatch({
    { type = "terminal", chat_id = chat.chat_id, terminal_id = "term-1", kind = "output", data = "c\n" },
    {
      type = "terminal",
      chat_id = chat.chat_id,
      terminal_id = "term-1",
      kind = "exited",
      exit_status = { exit_code = 0 },
    },
  })
  local buf = chat.bufnr
  T.truthy(T.find_line(buf, "$ terminal term-1 (exited 0)"), "status (no command known: the terminal's id)")
  local l = T.find_line(buf, "│ a")
  local lines = T.lines(buf)
  T.eq({ "  │ a", "  │ bc" }, { lines[l], lines[l + 1] }, "output in order")
end)

T.test("AcpSessionUpdate fires with the change", function()
  local chat = T.fake_chat()
  local got = {}
  vim.api.nvim_create_autocmd("User", {
    pattern = "AcpSessionUpdate",
    callback = function(a)
      got[#got + 1] = a.data
    end,
  })
  local change = { change = "entry_added", index = 0, entry = { type = "agent_message", content = { text("x") } } }
  events.dispatch({ session(chat, change) })
  T.eq({ { chat_id = chat.chat_id, session_id = chat.session_id, change = change } }, got, "autocmd data")
  vim.api.nvim_clear_autocmds({ event = "User", pattern = "AcpSessionUpdate" })
end)

T.test("chunks of a batch land per message without mixing chats; listeners see every chunk", function()
  local a = T.fake_chat()
  local b = T.fake_chat()
  events.dispatch({
    session(a, { change = "entry_added", index = 0, entry = { type = "agent_message", content = { text("A:") } } }),
    session(b, { change = "entry_added", index = 0, entry = { type = "agent_message", content = { text("B:") } } }),
  })
  local function batch(n)
    return {
      session(a, { change = "text_appended", index = 0, content = text("a" .. n) }),
      session(a, { change = "text_appended", index = 0, content = text("b" .. n) }),
      session(b, { change = "text_appended", index = 0, content = text("x" .. n) }),
      session(
        a,
        { change = "text_appended", index = 0, content = { type = "image", mime_type = "image/png", data = "" } }
      ),
      session(a, { change = "text_appended", index = 0, content = text("c" .. n) }),
    }
  end
  events.dispatch(batch(1))
  local seen = 0
  vim.api.nvim_create_autocmd("User", {
    pattern = "AcpSessionUpdate",
    callback = function()
      seen = seen + 1
    end,
  })
  events.dispatch(batch(2))
  vim.api.nvim_clear_autocmds({ event = "User", pattern = "AcpSessionUpdate" })
  local la = T.lines(a.bufnr)
  local lb = T.lines(b.bufnr)
  T.eq("A:a1b1[image image/png]c1a2b2[image image/png]c2", la[#la], "chat A in order")
  T.eq("B:x1x2", lb[#lb], "chat B")
  T.eq(5, seen, "one autocmd per chunk")
end)

T.test("a bad event does not stop the rest of the batch", function()
  local chat = T.fake_chat()
  local notified = {}
  local orig = vim.notify
  vim.notify = function(m)
    notified[#notified + 1] = m
  end
  events.dispatch({
    session(chat, { change = "text_appended", index = 99, content = text("nowhere") }),
    {
      type = "session",
      chat_id = chat.chat_id,
      change = { change = "entry_added", entry = { type = "agent_message" } },
    },
    session(
      chat,
      { change = "entry_added", index = 1, entry = { type = "agent_message", content = { text("fine") } } }
    ),
    { type = "no_such_event", chat_id = chat.chat_id },
    { type = "session", chat_id = "no-such-chat", change = {} },
  })
  vim.notify = orig
  T.truthy(T.find_line(chat.bufnr, "fine"), "later event rendered")
  T.eq(1, #notified, "the failing event was reported once")
end)

T.test("the prompt completes the agent's slash commands", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, {
      change = "commands_changed",
      available_commands = {
        { name = "plan", description = "Make a plan" },
        { name = "test", description = "Run tests" },
      },
    }),
  })
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(chat.prompt_buf)[1])
  vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { "/pl" })
  vim.api.nvim_win_set_cursor(0, { 1, 3 })
  local omni = require("acp.chat.prompt").omnifunc
  T.eq(0, omni(1, ""), "completion starts at the slash, at the start of the prompt")
  T.eq(
    { { word = "/plan", menu = "Make a plan", info = "Make a plan", kind = "command", icase = 1 } },
    omni(0, "/pl"),
    "matching command"
  )
end)

T.test(":Acp mode and :Acp model ask the backend", function()
  local chat = T.fake_chat({
    modes = {
      current_mode_id = "ask",
      available_modes = { { id = "ask", name = "Ask" }, { id = "code", name = "Code" } },
    },
    config_options = {
      {
        id = "model",
        name = "Model",
        category = "model",
        type = "select",
        current_value = "m1",
        options = { { value = "m1", name = "One" }, { value = "m2", name = "Two" } },
      },
    },
  })
  local commands = require("acp.commands")
  T.eq({ "ask", "code" }, commands.complete("", "Acp mode "), "mode completion")
  T.eq({ "m2" }, commands.complete("m2", "Acp model m2"), "model completion")
  for i = #sent, 1, -1 do
    sent[i] = nil
  end
  vim.cmd("Acp mode code")
  vim.cmd("Acp model m2")
  T.eq({ "acp.set_mode", { chat_id = chat.chat_id, mode_id = "code" } }, sent[1], "set_mode request")
  T.eq(
    { "acp.set_config_option", { chat_id = chat.chat_id, config_id = "model", value = "m2" } },
    sent[2],
    "model request"
  )
end)

T.test("every layout shows transcript and prompt, and q hides them", function()
  for _, position in ipairs({ "right", "left", "float", "tab" }) do
    local chat = T.fake_chat({ setup = { layout = { position = position, width = 0.5, input_height = 4 } } })
    T.eq(true, chat:is_visible(), position .. ": visible")
    local pwin = vim.fn.win_findbuf(chat.prompt_buf)[1]
    T.eq(pwin, vim.api.nvim_get_current_win(), position .. ": cursor in the prompt")
    T.eq(4, vim.api.nvim_win_get_height(pwin), position .. ": input height")
    local twin = vim.fn.win_findbuf(chat.bufnr)[1]
    T.eq(true, vim.wo[twin].linebreak, position .. ": transcript window set up")
    vim.api.nvim_feedkeys("q", "x", false)
    T.eq(false, chat:is_visible(), position .. ": hidden")
    T.eq(0, #vim.fn.win_findbuf(chat.prompt_buf), position .. ": prompt hidden")
    vim.cmd("Acp")
    T.eq(true, chat:is_visible(), position .. ": :Acp shows it again")
    chat:close()
    T.eq(false, vim.api.nvim_buf_is_valid(chat.bufnr), position .. ": close wipes the buffers")
  end
  require("acp").setup({})
end)

T.test("<CR> on a location opens the file at that line in a normal window", function()
  local dir = T.tmpdir()
  local path = dir .. "/target.txt"
  T.write_file(path, "1\n2\n3\n4\n5\n")
  local chat = T.fake_chat()
  events.dispatch({
    session(chat, {
      change = "entry_added",
      index = 0,
      entry = {
        type = "tool_call",
        id = "l",
        title = "Look",
        kind = "read",
        status = "completed",
        locations = { { path = path, line = 4 } },
      },
    }),
  })
  local l = T.truthy(T.find_line(chat.bufnr, "→ " .. path .. ":4"), "location line")
  local twin = vim.fn.win_findbuf(chat.bufnr)[1]
  vim.api.nvim_set_current_win(twin)
  vim.api.nvim_win_set_cursor(twin, { l, 0 })
  vim.api.nvim_feedkeys(vim.keycode("<CR>"), "x", false)
  T.eq(path, vim.api.nvim_buf_get_name(0), "file opened")
  T.eq(4, vim.api.nvim_win_get_cursor(0)[1], "at the line")
  T.truthy(vim.api.nvim_get_current_win() ~= twin, "not in the transcript window")
  T.eq(true, chat:is_visible(), "the chat stays open")
end)

T.test("highlight groups are linked by default and come back after :colorscheme", function()
  require("acp.highlights").setup()
  T.eq("Comment", vim.api.nvim_get_hl(0, { name = "AcpThought" }).link, "linked")
  vim.cmd("highlight clear")
  vim.cmd("colorscheme default")
  T.eq("DiagnosticOk", vim.api.nvim_get_hl(0, { name = "AcpToolDone" }).link, "re-applied")
  vim.api.nvim_set_hl(0, "AcpToolDone", { fg = "#00ff00" })
  require("acp.highlights").apply()
  T.eq(nil, vim.api.nvim_get_hl(0, { name = "AcpToolDone" }).link, "a user's definition wins")
end)

T.test(":Acp agents list lists agents and whether they are on PATH", function()
  require("acp").setup({ agents = { mine = { cmd = { "sh", "-c", "true" } } } })
  local out = vim.fn.execute("Acp agents list")
  T.truthy(out:find("\n%* mine +sh %-c true  %(found%)"), "default marked, found:\n" .. out)
  T.contains(out, "codex-acp  (not found on PATH)", "missing preset")
  require("acp").setup({})
end)

--- Extmarks of the transcript's markdown namespaces on a row, as
--- { conceal = {..}, hl = {..} } (conceal chars, highlight groups).
local function md_marks(buf, row)
  local out = { conceal = {}, hl = {}, virt = {} }
  for _, name in ipairs({ "acp.view.md." .. buf, "acp.view.code." .. buf }) do
    local ns = vim.api.nvim_create_namespace(name)
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, { row, -1 }, { details = true })) do
      local d = m[4]
      if d.conceal then
        out.conceal[#out.conceal + 1] = { col = m[3], char = d.conceal }
      end
      if d.hl_group then
        out.hl[#out.hl + 1] = d.hl_group
      end
      if d.line_hl_group then
        out.hl[#out.hl + 1] = "line:" .. d.line_hl_group
      end
      if d.virt_text then
        out.virt[#out.virt + 1] = d.virt_text[1][1]
      end
    end
  end
  return out
end

T.test("markdown is drawn with extmarks as it streams: markers concealed, code highlighted, tables aligned", function()
  local chat = T.fake_chat()
  local buf = chat.bufnr
  T.wait(function()
    return vim.bo[buf].filetype ~= ""
  end, "the transcript's filetype, set once the window is drawn")
  T.eq("acpchat", vim.bo[buf].filetype, "no markdown filetype (its regex syntax re-runs on every redraw)")
  T.eq("", vim.bo[buf].syntax, "no regex syntax on the transcript")
  events.dispatch({
    session(
      chat,
      { change = "entry_added", index = 0, entry = { type = "agent_message", content = { text("# Ti") } } }
    ),
  })
  -- Split mid-marker, mid-line and mid-fence: each batch draws what arrived.
  local rest = "tle\nSome **bold**, *it*, `code` and [a link](http://x).\n\n```lua\nlocal x = 1\n```\n\n"
    .. "| a | bb |\n|---|---|\n| long cell | c |\n\nafter\n"
  for i = 1, #rest, 7 do
    events.dispatch({ session(chat, { change = "text_appended", index = 0, content = text(rest:sub(i, i + 6)) }) })
  end
  local lines = T.lines(buf)
  local row = function(needle)
    return T.find_line(buf, needle) - 1
  end
  T.eq("# Title", lines[row("# Title") + 1], "text unchanged")
  local h = md_marks(buf, row("# Title"))
  T.eq({ col = 0, char = "" }, h.conceal[1], "heading marker concealed")
  T.truthy(vim.tbl_contains(h.hl, "AcpMdH1"), "heading highlighted")
  local p = md_marks(buf, row("Some **bold**"))
  T.truthy(vim.tbl_contains(p.hl, "AcpMdBold"), "bold")
  T.truthy(vim.tbl_contains(p.hl, "AcpMdItalic"), "italic")
  T.truthy(vim.tbl_contains(p.hl, "AcpMdCodeSpan"), "inline code")
  T.truthy(vim.tbl_contains(p.hl, "AcpMdLink"), "link text")
  -- ** ** * * ` ` [ ](url): 8 concealed runs.
  T.eq(8, #p.conceal, "every marker concealed: " .. vim.inspect(p.conceal))
  local fence = md_marks(buf, row("```lua"))
  T.truthy(vim.tbl_contains(fence.hl, "line:AcpMdCode"), "fence line on the code background")
  T.eq(0, fence.conceal[1].col, "fence backticks concealed")
  local code = md_marks(buf, row("local x = 1"))
  T.truthy(vim.tbl_contains(code.hl, "line:AcpMdCode"), "code background")
  T.truthy(vim.tbl_contains(code.hl, "@keyword.lua"), "lua highlighted by its parser: " .. vim.inspect(code.hl))
  local head = md_marks(buf, row("| a | bb |"))
  T.eq("│", head.conceal[1].char, "pipes drawn as box lines")
  T.truthy(vim.tbl_contains(head.hl, "AcpMdTableHead"), "header row bold")
  T.truthy(
    vim.tbl_contains(head.virt, string.rep(" ", 8)),
    "header cell padded to the widest cell: " .. vim.inspect(head.virt)
  )
  local delim = md_marks(buf, row("|---|---|"))
  T.eq("├", delim.conceal[1].char, "delimiter row drawn as a rule")
  T.eq({}, md_marks(buf, row("after")).hl, "plain text stays plain")
  local win = vim.fn.bufwinid(buf)
  T.eq(2, vim.wo[win].conceallevel, "markers concealed in the transcript window")
end)

T.test("each batch draws only the rows it added (the cost of an append does not grow with the transcript)", function()
  local chat = T.fake_chat()
  events.dispatch({
    session(
      chat,
      { change = "entry_added", index = 0, entry = { type = "agent_message", content = { text("start\n") } } }
    ),
  })
  local view = chat.transcript.view
  local block = chat.transcript.entries[0]
  local markdown = require("acp.chat.view.markdown")
  local render = markdown.render
  local drawn = {}
  markdown.render = function(ctx, st, start, last)
    drawn[#drawn + 1] = last - (start + st.next) + 1
    return render(ctx, st, start, last)
  end
  local ok, err = pcall(function()
    for _ = 1, 50 do
      events.dispatch({
        session(chat, { change = "text_appended", index = 0, content = text(string.rep("some **text**\n", 100)) }),
      })
    end
  end)
  markdown.render = render
  assert(ok, err)
  T.eq(50, #drawn, "one pass per batch")
  for i, n in ipairs(drawn) do
    T.eq(101, n, "pass " .. i .. " drew the 100 new rows and the last one again")
  end
  T.eq(5000, block.md.next, "every row but the last is final")
  T.truthy(view, "view")
end)

T.test("every golden fixture passes the decode point", function()
  local by_name, names = fixtures()
  T.truthy(#names >= 30, "fixtures loaded")
  for _, name in ipairs(names) do
    local ev, err = protocol.decode(by_name[name])
    T.truthy(ev, name .. ": " .. tostring(err))
    T.truthy(protocol.REQUIRED[ev.type], name .. ": a type the plugin knows")
  end
end)

T.test("the golden fixtures render as the user sees them", function()
  local by_name = fixtures()
  local chat = T.fake_chat()
  local buf = chat.bufnr
  local notified = {}
  local orig_notify = vim.notify
  vim.notify = function(m)
    notified[#notified + 1] = m
  end
  local review = require("acp.edits.review")
  local orig_confirm = review.confirm_delete
  local asked_delete
  review.confirm_delete = function(path)
    asked_delete = path
    return false
  end
  local function ev(name)
    local e = vim.deepcopy(by_name[name])
    if e.chat_id then
      e.chat_id = chat.chat_id
    end
    return e
  end
  local function dispatch(...)
    local batch = {}
    for _, name in ipairs({ ... }) do
      batch[#batch + 1] = ev(name)
    end
    events.dispatch(batch)
  end

  dispatch("session_started")
  T.eq("sess-1", chat.session_id, "session id")
  T.eq("ask", chat.modes.current_mode_id, "modes")
  T.eq(true, chat.capabilities.load_session, "capabilities")
  T.eq("/state/transcripts/demo/sess-1.jsonl", chat.transcript_path, "transcript path")
  local winbar = vim.wo[vim.fn.win_findbuf(buf)[1]].winbar
  T.contains(winbar, "mode: Ask", "winbar mode")
  T.contains(winbar, "model: Fast model", "winbar model")

  dispatch("user_message_added", "thought_added", "thought_appended", "agent_message_added", "text_appended")
  dispatch("image_appended", "tool_call_added")
  T.truthy(T.find_line(buf, "Fix main"), "user message")
  T.truthy(T.find_line(buf, "Reading the code first"), "thought with its appended text")
  T.truthy(T.find_line(buf, "Here is the fix.[image image/png]"), "agent message, text and image appended")
  T.truthy(T.find_line(buf, "○ edit · Edit main.rs"), "pending tool call")
  T.truthy(T.find_line(buf, "± /work/src/main.rs +3 -1"), "its diff")
  T.truthy(T.find_line(buf, "→ /work/src/main.rs:1"), "its location")

  dispatch("permission_request")
  T.truthy(require("acp.chat.view.permission").pending[7], "the request waits for an answer")
  T.truthy(T.find_line(buf, "Always allow"), "the options are shown")
  dispatch("permission_cancelled")
  T.eq(nil, require("acp.chat.view.permission").pending[7], "withdrawn")
  dispatch("permission_auto")
  T.truthy(T.find_line(buf, "allowed by memory: you answered “always allow” to this before"), "auto answer noted")

  dispatch("terminal_started", "terminal_output", "terminal_exited", "terminal_released", "tool_call_changed")
  T.eq("compiling\n", chat.terminals["term-1"].output, "terminal output kept")
  T.truthy(T.find_line(buf, "$ cargo build --release (exited 0)"), "the terminal shows its command")
  T.eq(0, chat.terminals["term-1"].exit_status.exit_code, "exit status")
  T.truthy(chat.terminals["term-1"].released, "released")
  T.truthy(T.find_line(buf, "✓ edit · Edit main.rs"), "tool call completed in place")
  T.eq(nil, T.find_line(buf, "○ edit"), "the pending header is gone")
  T.truthy(T.find_line(buf, "compiling"), "terminal output inside the tool call")

  dispatch("plan_replaced", "unknown_added")
  T.truthy(T.find_line(buf, "Plan (1/2 done)"), "plan")
  T.truthy(T.find_line(buf, "[~] Run the tests (medium)"), "plan entry")
  T.truthy(T.find_line(buf, "▸ Unknown update: future_update"), "unknown entry")
  T.truthy(T.find_line(buf, '"someField": 1'), "its raw JSON as the agent sent it")

  dispatch("mode_changed")
  T.eq("code", chat.modes.current_mode_id, "mode changed")
  dispatch("modes_changed", "config_options_changed", "commands_changed", "usage_changed", "info_changed")
  T.eq(2, #chat.modes.available_modes, "modes replaced")
  T.eq("deep", chat.config_options[1].current_value, "config options replaced")
  T.eq("review", chat.commands[1].name, "commands")
  T.eq("what to focus on", chat.commands[1].input.hint, "command input hint")
  T.eq(12000, chat.usage.used, "usage")
  T.eq("Fix main", chat.title, "title")
  winbar = vim.wo[vim.fn.win_findbuf(buf)[1]].winbar
  T.contains(winbar, "mode: Code", "winbar mode after the change")
  T.contains(winbar, "model: Deep model", "winbar model after the change")
  T.contains(winbar, "ctx 12.0k/200.0k (6%%)", "winbar usage")
  T.contains(winbar, "$0.25", "winbar cost")

  dispatch("file_edited", "review_changed", "review_delete_pending")
  T.truthy(T.find_line(buf, "/work/src/main.rs: written on disk and merged into your unsaved buffer"), "kept_unsaved")
  T.eq(1, review.files["/work/src/main.rs"].chats[chat.chat_id].hunks, "review summary")
  T.wait(function()
    return asked_delete ~= nil
  end, "the delete question")
  T.eq("/work/src/new.rs", asked_delete, "asked about the created file")

  chat.status = "busy"
  dispatch("turn_ended")
  T.eq("ready", chat.status, "turn over")
  T.truthy(T.find_line(buf, "— end turn —"), "turn end note")
  dispatch("prompt_failed")
  T.truthy(T.find_line(buf, "overloaded"), "prompt failure")
  dispatch("warning", "sessions_listed", "logged_out")
  T.truthy(T.find_line(buf, "— logged out of demo —"), "logged out")
  dispatch("agent_exited")
  T.eq("dead", chat.status, "agent exited")
  T.truthy(T.find_line(buf, "exit code 3"), "exit status shown")
  T.truthy(T.find_line(buf, "panic: out of tokens"), "stderr tail shown")
  dispatch("open_failed")
  T.eq("failed", chat.status, "open failed")
  T.truthy(T.find_line(buf, "no such directory"), "open failure shown")
  dispatch("auth_required")
  T.eq("login", chat.auth_methods[1].id, "auth methods kept")
  T.truthy(T.find_line(buf, "- Log in: Opens a browser"), "auth methods listed")

  vim.notify = orig_notify
  review.confirm_delete = orig_confirm
  local joined = table.concat(notified, "\n")
  T.contains(joined, "a line that is not JSON-RPC", "the warning was shown")
  T.not_contains(joined, "could not be shown", "no event failed")
end)

T.test("a transcript written before the snake_case protocol (version 1) replays", function()
  local dir = T.tmpdir()
  local path = dir .. "/old.jsonl"
  local records = {
    { type = "transcript", version = 1, agent_name = "demo", session_id = "old-1", cwd = dir, opening = "new" },
    {
      type = "session_started",
      session_id = "old-1",
      agent_name = "demo",
      capabilities = { load_session = true },
      modes = { current_mode_id = "ask", available_modes = { { id = "ask", name = "Ask" } } },
    },
    {
      type = "session",
      change = {
        change = "entry_added",
        index = 0,
        entry = {
          type = "tool_call",
          id = "t1",
          title = "Edit",
          kind = "edit",
          status = "pending",
          content = {},
          locations = {},
        },
      },
    },
    {
      type = "session",
      change = {
        change = "tool_call_changed",
        index = 0,
        tool_call = {
          id = "t1",
          title = "Edit",
          kind = "edit",
          status = "completed",
          content = { { type = "diff", path = "/p/a.txt", old_text = "a\n", new_text = "b\nc\n" } },
          locations = {},
          rawInput = { filePath = "/p/a.txt" },
        },
      },
    },
    { type = "turn_ended", stop_reason = "end_turn" },
  }
  local lines = {}
  for _, r in ipairs(records) do
    lines[#lines + 1] = vim.json.encode(r)
  end
  vim.fn.writefile(lines, path)
  local chat = assert(require("acp.chat.readonly").open(path))
  T.eq("ask", chat.modes.current_mode_id, "modes renamed")
  T.eq(true, chat.capabilities.load_session, "capabilities renamed")
  T.truthy(T.find_line(chat.bufnr, "✓ edit · Edit"), "the tool call's new state")
  T.truthy(T.find_line(chat.bufnr, "± /p/a.txt +2 -1"), "its diff, from oldText/newText")
end)

T.run()
