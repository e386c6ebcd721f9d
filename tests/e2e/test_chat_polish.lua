-- The polish of issue 29 (the chat as users live it, round three), with
-- hand-made events and no backend: headings, the window bar at 80 columns,
-- names in :Acp chats, notes of remembered answers, :Acp mode with an
-- unknown mode, read-only transcripts, :Acp agents list.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local sent = T.fake_backend()
local NOTES = {}
vim.notify = function(m)
  NOTES[#NOTES + 1] = m
end

T.test("headings H1, H2, H3 look apart from each other and from the message headers", function()
  vim.cmd.colorscheme("habamax")
  require("acp.highlights").setup()
  local function hl(name)
    return vim.api.nvim_get_hl(0, { name = name, link = false })
  end
  local h1, h2, h3, you = hl("AcpMdH1"), hl("AcpMdH2"), hl("AcpMdH3"), hl("AcpUserHeader")
  T.truthy(not vim.deep_equal(h1, h2), "H1 and H2 differ: " .. vim.inspect({ h1, h2 }))
  T.truthy(not vim.deep_equal(h2, h3), "H2 and H3 differ: " .. vim.inspect({ h2, h3 }))
  for _, h in ipairs({ h1, h2, h3 }) do
    T.truthy(not vim.deep_equal(h, you), "a heading is no message header: " .. vim.inspect({ h, you }))
  end
  -- And again after the colorscheme changes (which clears every group).
  vim.cmd.colorscheme("default")
  T.truthy(not vim.deep_equal(hl("AcpMdH1"), hl("AcpMdH2")), "apart under the default colorscheme")
end)

T.test("at 80 columns the window bar keeps the mode and following, shortened, and numbers the chats", function()
  local chat = T.fake_chat({
    modes = { current_mode_id = "code", available_modes = { { id = "code", name = "Code" } } },
    config_options = {
      {
        id = "model",
        name = "Model",
        category = "model",
        type = "select",
        current_value = "s",
        options = { { value = "s", name = "Fake Swift" } },
      },
    },
  })
  T.fake_chat()
  chat.following = true
  local winbar = require("acp.chat.view.winbar")
  local wide = winbar.text(chat, 200)
  T.contains(wide, "mode: Code", "the whole mode when there is room")
  T.contains(wide, "following", "following when there is room")
  -- The chat column at 80 columns: 0.4 of them.
  local narrow = winbar.text(chat, 32)
  T.contains(narrow, "Code", "the mode, short: " .. narrow)
  T.contains(narrow, "↓", "following, short: " .. narrow)
  T.contains(narrow, "#" .. chat.n, "the chat's number: " .. narrow)
  T.contains(narrow, "demo", "the agent: " .. narrow)
  -- A long title is cut before the mode goes (it took the whole bar).
  chat.title = "Tour of the fake agent"
  local titled = winbar.text(chat, 32)
  T.contains(titled, "Code", "the mode stays: " .. titled)
  T.contains(titled, "Tour of", "the title's start: " .. titled)
  T.contains(titled, "…", "cut: " .. titled)
end)

T.test(":Acp chats names a chat by its first prompt, or the title :Acp sessions lists", function()
  local chat = T.fake_chat()
  chat.session_id = "0d9f1e2a-5b6c-4d7e-8f90-123456789abc"
  T.not_contains(chat:describe(), "(new session)", "")
  assert(chat:send({ { type = "text", text = "  \nFix the flaky parser test in src/parse.rs\nand more" } }))
  T.contains(chat:describe(), "Fix the flaky parser test in src/parse.rs", "named by its first prompt")
  T.not_contains(chat:describe(), chat.session_id, "not by its id")
  -- What `:Acp sessions` makes of the agent's list.
  require("acp.agents.sessions").items({
    agent_name = "demo",
    capabilities = { load_session = true },
    sessions = { { session_id = chat.session_id, title = "Parser test fix" } },
  }, {})
  T.contains(chat:describe(), "Parser test fix", "the listed title")
end)

T.test("a remembered always-answer is noted as such, not as the option sent", function()
  local permission = require("acp.chat.view.permission")
  local note = permission.auto_note({ option_id = "o1", name = "Allow once", kind = "allow_once" }, { kind = "edit" })
  T.not_contains(note, "Allow once", "not the option sent to the agent")
  T.contains(note, "always allow", "the user's own answer")
  local rejected = permission.auto_note({ option_id = "o2", name = "Reject", kind = "reject_once" }, { kind = "edit" })
  T.contains(rejected, "rejected", "rejected")
  require("acp.config").options.permission.auto_allow = { "read" }
  local auto = permission.auto_note({ option_id = "o1", name = "Allow once", kind = "allow_once" }, { kind = "read" })
  T.contains(auto, "auto_allow", "the config's rule")
  require("acp.config").options.permission.auto_allow = {}
end)

T.test(":Acp mode with an unknown mode lists the modes and asks nothing", function()
  local chat = T.fake_chat({
    modes = {
      current_mode_id = "ask",
      available_modes = { { id = "ask", name = "Ask" }, { id = "code", name = "Code" } },
    },
  })
  chat:show()
  for i = #sent, 1, -1 do
    sent[i] = nil
  end
  local n = #NOTES
  vim.cmd("Acp mode nosuch")
  T.eq({}, sent, "nothing sent to the agent")
  T.contains(NOTES[n + 1] or "", "ask (Ask), code (Code)", "the modes named")
  vim.cmd("Acp mode Code")
  T.eq({ "acp.set_mode", { chat_id = chat.chat_id, mode_id = "code" } }, sent[1], "a mode by its name")
  vim.cmd("stopinsert")
end)

T.test("a read-only transcript opens with the cursor in the transcript, not typing in its prompt", function()
  local path = T.tmpdir() .. "/t.jsonl"
  vim.fn.writefile({
    vim.json.encode({ type = "transcript", version = 1, agent_name = "demo", session_id = "s-ro", cwd = T.root }),
    vim.json.encode({ type = "session_started", session_id = "s-ro", capabilities = {} }),
  }, path)
  local chat = assert(require("acp.chat.readonly").open(path))
  T.eq(chat.bufnr, vim.api.nvim_get_current_buf(), "in the transcript")
  vim.wait(50)
  T.eq("n", vim.api.nvim_get_mode().mode, "Normal mode")
end)

T.test(":Acp agents list lines up the commands whatever the names' length", function()
  local config = require("acp.config")
  require("acp").setup({
    agents = {
      a = { cmd = { "true" } },
      ["a-very-long-agent-name"] = { cmd = { "true" } },
    },
  })
  local lines = require("acp.commands").agent_lines()
  local cols = {}
  for _, l in ipairs(lines) do
    local name = l:match("^. (%S+)")
    if name == "a" or name == "a-very-long-agent-name" then
      cols[#cols + 1] = l:find("true", 1, true)
    end
  end
  T.eq(2, #cols, "both listed: " .. table.concat(lines, "\n"))
  T.eq(cols[1], cols[2], "the command column lines up:\n" .. table.concat(lines, "\n"))
  config.setup({})
end)

--- Send an agent message of `text` to a chat (hand-made events).
local function agent_says(chat, text)
  require("acp.events").dispatch({
    {
      type = "session",
      chat_id = chat.chat_id,
      change = {
        change = "entry_added",
        index = 0,
        entry = { type = "agent_message", content = { { type = "text", text = text } } },
      },
    },
  })
end

T.test("a right-aligned table column is padded on the left, a centred one on both sides", function()
  local chat = T.fake_chat()
  agent_says(chat, "| name | n | mid |\n|:---|---:|:---:|\n| alpha | 1 | x |\n| b | 12345 | wide |\n\nafter\n")
  local buf = chat.bufnr
  local row = T.find_line(buf, "| alpha | 1 | x |") - 1
  local line = vim.api.nvim_buf_get_lines(buf, row, row + 1, false)[1]
  local ns = vim.api.nvim_create_namespace("acp.view.code." .. buf)
  local pads = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, { row, -1 }, { details = true })) do
    if m[4].virt_text then
      pads[#pads + 1] = { col = m[3], width = #m[4].virt_text[1][1] }
    end
  end
  table.sort(pads, function(a, b)
    return a.col < b.col
  end)
  local p2 = line:find("| 1 |", 1, true) -- the pipe opening the `n` cell
  local p3 = line:find("| x |", 1, true) -- the pipe opening the `mid` cell
  T.eq({
    { col = p2, width = 4 }, -- before ` 1 `: right-aligned under `12345`
    { col = p3, width = 1 }, -- centred: 1 left of ` x `
    { col = #line - 1, width = 2 }, -- and 2 right of it
  }, pads, "the pads of " .. line)
end)

T.test("the URLs of links on the cursor line are shown at its end", function()
  local chat = T.fake_chat()
  agent_says(chat, "See [the docs](https://example.com/docs) and [code](https://example.com/src).\n\nplain line\n")
  local buf = chat.bufnr
  local win = vim.fn.win_findbuf(buf)[1]
  vim.api.nvim_set_current_win(win)
  local l = T.find_line(buf, "See [the docs]")
  vim.api.nvim_win_set_cursor(win, { l, 0 })
  vim.api.nvim_exec_autocmds("CursorMoved", { buffer = buf })
  local ns = vim.api.nvim_create_namespace("acp.markdown.links")
  local marks = vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, { details = true })
  T.eq(1, #marks, "one hint")
  T.eq(l - 1, marks[1][2], "on the cursor line")
  T.eq("  → https://example.com/docs  https://example.com/src", marks[1][4].virt_text[1][1], "both URLs")
  vim.api.nvim_win_set_cursor(win, { T.find_line(buf, "plain line"), 0 })
  vim.api.nvim_exec_autocmds("CursorMoved", { buffer = buf })
  T.eq({}, vim.api.nvim_buf_get_extmarks(buf, ns, 0, -1, {}), "gone from other lines")
end)

T.test("a tool result with a code fence is drawn as markdown: fences hidden, code on its background", function()
  local chat = T.fake_chat()
  local function tool(status, text)
    local state = {
      id = "md1",
      title = "Read main.lua",
      kind = "read",
      status = status,
      content = text and { { type = "content", content = { type = "text", text = text } } } or nil,
    }
    local change = status == "pending"
        and { change = "entry_added", index = 0, entry = vim.tbl_extend("force", state, { type = "tool_call" }) }
      or { change = "tool_call_changed", index = 0, tool_call = state }
    return { type = "session", chat_id = chat.chat_id, change = change }
  end
  require("acp.events").dispatch({ tool("pending") })
  require("acp.events").dispatch({ tool("completed", "Here it is:\n```lua\nlocal answer = 42\n```\n") })
  local buf = chat.bufnr
  local fence = T.truthy(T.find_line(buf, "  ```lua"), "the fence line:\n" .. T.text(buf)) - 1
  local code = fence + 1
  local ns = vim.api.nvim_create_namespace("acp.view.md." .. buf)
  local function marks(row)
    local out = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, { row, -1 }, { details = true })) do
      out[#out + 1] = m[4].conceal and ("conceal@" .. m[3]) or m[4].line_hl_group or m[4].hl_group
    end
    return out
  end
  T.truthy(vim.tbl_contains(marks(fence), "conceal@2"), "the fence's backticks hidden: " .. vim.inspect(marks(fence)))
  T.truthy(vim.tbl_contains(marks(code), "AcpMdCode"), "the code on its background: " .. vim.inspect(marks(code)))
  -- Redrawn whole on the next change, without marks left over.
  require("acp.events").dispatch({ tool("completed", "plain now\n") })
  T.eq(nil, T.find_line(buf, "```"), "the old content gone")
  local head = T.find_line(buf, "Read main.lua") - 1
  local left = vim.api.nvim_buf_get_extmarks(buf, ns, { head, 0 }, -1, { details = true })
  T.eq({}, left, "no markdown marks left over in the tool call")
end)

T.test("a thought says Thinking while it streams, Thought once the agent moved on", function()
  local chat = T.fake_chat()
  local function add(index, entry)
    require("acp.events").dispatch({
      { type = "session", chat_id = chat.chat_id, change = { change = "entry_added", index = index, entry = entry } },
    })
  end
  add(0, { type = "thought", content = { { type = "text", text = "pondering" } } })
  local buf = chat.bufnr
  local row = T.find_line(buf, "▸ Thinking") - 1
  local ns = vim.api.nvim_create_namespace("acp.transcript.thought")
  local function shown()
    local m = vim.api.nvim_buf_get_extmarks(buf, ns, { row, 0 }, { row, -1 }, { details = true })[1]
    return m and m[4].virt_text[1][1] or T.lines(buf)[row + 1]
  end
  T.eq("▸ Thinking", shown(), "while it streams")
  add(1, { type = "agent_message", content = { { type = "text", text = "answer" } } })
  T.eq("▸ Thought ", shown(), "once over")
end)

T.test("yc yanks the code block under the cursor, gC opens it in a split with its filetype", function()
  local chat = T.fake_chat()
  agent_says(chat, "Try this:\n\n```lua\nlocal x = 1\nreturn x\n```\n\nDone.\n")
  local buf = chat.bufnr
  local win = vim.fn.win_findbuf(buf)[1]
  vim.api.nvim_set_current_win(win)
  vim.fn.setreg('"', "before")
  vim.api.nvim_win_set_cursor(win, { T.find_line(buf, "return x"), 0 })
  vim.api.nvim_feedkeys("yc", "x", false)
  T.eq("local x = 1\nreturn x\n", vim.fn.getreg('"'), "the code, no fences")
  T.eq("V", vim.fn.getregtype('"'), "linewise")
  -- On the fence line too, into a named register.
  vim.api.nvim_win_set_cursor(win, { T.find_line(buf, "```lua"), 0 })
  vim.api.nvim_feedkeys('"ayc', "x", false)
  T.eq("local x = 1\nreturn x\n", vim.fn.getreg("a"), "register a")
  local n = #NOTES
  vim.api.nvim_win_set_cursor(win, { T.find_line(buf, "Done."), 0 })
  vim.api.nvim_feedkeys("yc", "x", false)
  T.contains(NOTES[n + 1] or "", "no code block under the cursor", "outside a block")
  vim.api.nvim_win_set_cursor(win, { T.find_line(buf, "local x = 1"), 0 })
  vim.api.nvim_feedkeys("gC", "x", false)
  local code = vim.api.nvim_get_current_buf()
  T.truthy(code ~= buf, "a new window")
  T.eq({ "local x = 1", "return x" }, vim.api.nvim_buf_get_lines(code, 0, -1, false), "the code")
  T.eq("lua", vim.bo[code].filetype, "its filetype")
  T.eq(
    nil,
    require("acp.chat").of_buf(vim.api.nvim_win_get_buf(vim.fn.win_getid(vim.fn.winnr("j")))) and "chat" or nil,
    "not in the chat's column"
  )
  vim.cmd("close")
end)

T.test("on a prompt sent before, yc yanks it and cc puts it in the prompt input to send again", function()
  local chat = T.fake_chat()
  require("acp.events").dispatch({
    {
      type = "session",
      chat_id = chat.chat_id,
      change = {
        change = "entry_added",
        index = 0,
        entry = { type = "user_message", content = { { type = "text", text = "fix @a.lua\nplease" } } },
      },
    },
  })
  agent_says(chat, "done")
  local buf = chat.bufnr
  local win = vim.fn.win_findbuf(buf)[1]
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { T.find_line(buf, "please"), 0 })
  vim.api.nvim_feedkeys("yc", "x", false)
  T.eq("fix @a.lua\nplease\n", vim.fn.getreg('"'), "the prompt yanked")
  vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { "half written" })
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { T.find_line(buf, "fix @a.lua"), 0 })
  vim.api.nvim_feedkeys("cc", "x", false)
  T.eq({ "fix @a.lua", "please" }, vim.api.nvim_buf_get_lines(chat.prompt_buf, 0, -1, false), "in the prompt input")
  T.eq(chat.prompt_buf, vim.api.nvim_get_current_buf(), "the cursor in the prompt")
  local history = require("acp.chat.prompt").history
  T.eq("half written", history[#history], "the draft kept in the history")
  vim.cmd("stopinsert")
  -- Not on a prompt: said so, nothing changed.
  vim.api.nvim_set_current_win(win)
  vim.api.nvim_win_set_cursor(win, { T.find_line(buf, "done"), 0 })
  local n = #NOTES
  vim.api.nvim_feedkeys("cc", "x", false)
  T.contains(NOTES[n + 1] or "", "no prompt of yours under the cursor", "told")
  T.eq({ "fix @a.lua", "please" }, vim.api.nvim_buf_get_lines(chat.prompt_buf, 0, -1, false), "unchanged")
end)

T.test("a code block in a tool result is yanked without the result's indent", function()
  local chat = T.fake_chat()
  require("acp.events").dispatch({
    {
      type = "session",
      chat_id = chat.chat_id,
      change = {
        change = "entry_added",
        index = 0,
        entry = {
          type = "tool_call",
          id = "y1",
          title = "Read a.py",
          kind = "read",
          status = "completed",
          content = { { type = "content", content = { type = "text", text = "```py\ndef f():\n    return 1\n```" } } },
        },
      },
    },
  })
  local cb = require("acp.chat.view.code_block").at(chat.transcript.view, T.find_line(chat.bufnr, "def f():") - 1)
  T.eq({ "def f():", "    return 1" }, cb and cb.lines, "the code as written")
  T.eq("python", require("acp.chat.view.code_block").filetype("py"), "py is python")
end)

T.run()
