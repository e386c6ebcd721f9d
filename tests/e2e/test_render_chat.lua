-- The chat's controls rendered from small events in the backend's
-- snake_case shapes (no backend): permission prompts and their keys, keys on
-- transcript blocks (locations, diffs), the winbar, queued prompts, menus,
-- completion, commands, layouts, highlights. The transcript itself:
-- test_render.lua.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local events = require("acp.events")

local sent = T.fake_backend()
-- Wide enough for the whole winbar (it drops parts to fit narrow windows).
vim.o.columns = 300

local session, text = T.session_event, T.text_block

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

T.run()
