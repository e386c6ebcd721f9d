-- Rendering the transcript from the backend's golden fixtures
-- (tests/fixtures/events.json, written by crates/acp-nvim/tests/fixtures.rs)
-- and from small events in the same snake_case shapes (no backend): fast and
-- deterministic. Chunks, tool calls, plans, thoughts and their folds,
-- markdown, batches, replay. What the user acts on in the chat (permission
-- prompts, keys on blocks, winbar, menus, commands, layouts):
-- test_render_chat.lua.
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

local session, text = T.session_event, T.text_block

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
  local orig_confirm = require("acp.edits.review.actions").confirm_delete
  local asked_delete
  require("acp.edits.review.actions").confirm_delete = function(path)
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
  require("acp.edits.review.actions").confirm_delete = orig_confirm
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
