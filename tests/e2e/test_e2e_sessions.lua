-- End to end: sessions (list, load, resume, close), the client's own
-- transcripts, agent death and restart, modes and options, login, MCP.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
-- Wide enough for the whole winbar (it drops parts to fit narrow windows).
vim.o.columns = 300

local dir = T.tmpdir()
local empty = vim.empty_dict()

local modes = {
  currentModeId = "ask",
  availableModes = { { id = "ask", name = "Ask" }, { id = "code", name = "Code" } },
}
local config_options = {
  {
    id = "model",
    name = "Model",
    category = "model",
    type = "select",
    currentValue = "small",
    options = { { value = "small", name = "Small" }, { value = "large", name = "Large" } },
  },
  { id = "fast", name = "Fast mode", type = "boolean", currentValue = false },
}

-- Everything a turn can show, so the replay has to render all of it.
local rich_turn = {
  steps = {
    { type = "thought", text = "Let me think about {{prompt}}.", chunkSize = 4 },
    { type = "text", text = "First paragraph about {{prompt}}.\n\nSecond paragraph.\n", chunkSize = 5 },
    {
      type = "plan",
      entries = {
        { content = "Read", priority = "high", status = "completed" },
        { content = "Write", priority = "medium", status = "in_progress" },
      },
    },
    { type = "toolCall", toolCallId = "t-{{prompt}}", title = "Read notes", kind = "read", status = "pending" },
    {
      type = "toolCallUpdate",
      toolCallId = "t-{{prompt}}",
      status = "completed",
      content = { { type = "content", content = { type = "text", text = "notes read" } } },
    },
    { type = "text", text = "Done with {{prompt}}.", chunkSize = 3 },
  },
}

local scenarios = {
  rich = {
    sessionStore = dir .. "/rich-store.json",
    replayUserMessages = true,
    modes = modes,
    configOptions = config_options,
    turns = { rich_turn },
  },
  resumer = {
    sessionStore = dir .. "/resumer-store.json",
    initialize = {
      agentCapabilities = {
        loadSession = false,
        sessionCapabilities = { list = empty, resume = empty, close = empty },
      },
    },
    turns = { { steps = { { type = "text", text = "said {{prompt}}" } } } },
  },
  forgetful = {
    initialize = { agentCapabilities = { loadSession = false } },
    turns = { { steps = { { type = "text", text = "noted {{prompt}}", chunkSize = 2 } } } },
  },
  crashy = {
    sessionStore = dir .. "/crashy-store.json",
    turns = {
      {
        match = "crash",
        steps = {
          { type = "text", text = "dying" },
          { type = "crash", stderr = "fatal: crashed on purpose", code = 3 },
        },
      },
      { steps = { { type = "text", text = "alive: {{prompt}}" } } },
    },
  },
  echo = { turns = { { steps = { { type = "text", text = "echo: {{prompt}}", chunkSize = 2 } } } } },
  login = {
    authRequired = true,
    authFile = dir .. "/login-auth",
    initialize = {
      agentCapabilities = { auth = { logout = empty } },
      authMethods = { { id = "fake-login", name = "Fake login", description = "Accepts anyone" } },
    },
  },
  termlogin = {
    authRequired = true,
    authFile = dir .. "/term-auth",
    initialize = {
      authMethods = {
        {
          id = "term",
          name = "Terminal login",
          type = "terminal",
          args = { "--login" },
          env = { ACP_FAKE_LOGIN_USER = "ada" },
        },
      },
    },
  },
  mcp = { turns = { { steps = { { type = "text", text = "mcp: {{mcpServers}}" } } } } },
}

local agents = {}
for name, sc in pairs(scenarios) do
  agents[name] = { cmd = { T.fake_agent(), "--scenario", T.scenario(dir, sc) } }
end
-- An older agent's terminal login (claude-code-acp before ACP had terminal
-- methods): an agent method marked `_meta["terminal-auth"]` with its own
-- program. Here that program is the fake agent's login command.
local legacy_path = dir .. "/legacy-login.json"
T.write_file(
  legacy_path,
  vim.json.encode({
    authRequired = true,
    authFile = dir .. "/legacy-auth",
    initialize = {
      authMethods = {
        {
          id = "legacy",
          name = "Legacy login",
          _meta = {
            ["terminal-auth"] = {
              -- A program other than the agent's: a shell running its login.
              command = "/bin/sh",
              args = { "-c", ("exec %q --scenario %q --login"):format(T.fake_agent(), legacy_path) },
              env = { ACP_FAKE_LOGIN_USER = "grace" },
              label = "fake /login",
            },
          },
        },
      },
    },
  })
)
agents.legacylogin = { cmd = { T.fake_agent(), "--scenario", legacy_path } }
agents.mcp.mcp_servers = {
  { name = "files", command = "/bin/true", env = { FOO = "1" } },
  { type = "http", name = "web", url = "https://mcp.example/" },
}
assert(require("acp").setup({ backend = { cmd = { T.backend_bin() } }, agents = agents, log_level = "debug" }))

T.require_binaries()

--- Make the next vim.ui.select calls choose the first item each `pred`
--- accepts (one pred per call); returns a table that gets the items, lines
--- and prompt of the first menu.
local function choose(...)
  local orig = vim.ui.select
  local preds = { ... }
  local seen = { items = nil }
  vim.ui.select = function(items, opts, on_choice)
    local pred = table.remove(preds, 1)
    if #preds == 0 then
      vim.ui.select = orig
    end
    if seen.items then
      pred = pred or function()
        return false
      end
      for _, it in ipairs(items) do
        if pred(it) then
          on_choice(it)
          return
        end
      end
      return on_choice(nil)
    end
    seen.items, seen.prompt = items, opts.prompt
    seen.lines = {}
    for _, it in ipairs(items) do
      seen.lines[#seen.lines + 1] = opts.format_item and opts.format_item(it) or tostring(it)
    end
    for _, it in ipairs(items) do
      if pred(it) then
        on_choice(it)
        return
      end
    end
    on_choice(nil)
  end
  return seen
end

--- The chat (other than `except`) whose session id is `id`, once ready.
local function wait_chat(id, except)
  local found
  T.wait(function()
    for _, c in ipairs(require("acp.chat").list) do
      -- Ready comes once the last turn is drawn; the older turns fill in
      -- above after it (acp.chat.backlog).
      local replay = require("acp.chat.replay")
      if
        c ~= except
        and c.session_id == id
        and c.status == "ready"
        and not replay.pending(c.chat_id)
        and not replay.filling(c.chat_id)
      then
        found = c
        return true
      end
    end
  end, "a chat with session " .. id)
  return found
end

--- Transcript lines without the stop-reason notes: turn ends are not part
--- of an agent's history, so a replay cannot show them.
local function without_turn_ends(lines)
  local out = {}
  for _, l in ipairs(lines) do
    if l:match("^— end turn —$") then
      if out[#out] == "" then
        out[#out] = nil
      end
    else
      out[#out + 1] = l
    end
  end
  return out
end

local function winbar(chat)
  local win = assert(vim.fn.win_findbuf(chat.bufnr)[1], "transcript window")
  return vim.wo[win].winbar
end

T.test("list + load replays the session exactly as it rendered live, with its mode and model", function()
  local live = T.open_chat("rich", dir)
  T.eq("end_turn", T.turn(live, "alpha"), "first turn")
  T.eq("end_turn", T.turn(live, "beta"), "second turn")
  -- A prompt with an @mention: sent as an embedded resource, shown live as
  -- one line; the replay (one user_message_chunk per block) must match.
  T.write_file(dir .. "/mention.txt", "the mentioned file's body\n")
  vim.api.nvim_buf_set_lines(live.prompt_buf, 0, -1, false, { "gamma, see @mention.txt" })
  local turns = #(T.turns[live.chat_id] or {})
  live:submit()
  T.wait(function()
    return #(T.turns[live.chat_id] or {}) > turns
  end, "the mention turn ended")
  vim.cmd("Acp mode code")
  vim.cmd("Acp model large")
  T.wait(function()
    return winbar(live):find("mode: Code", 1, true) and winbar(live):find("model: Large", 1, true)
  end, "winbar shows the new mode and model")
  local live_lines = T.lines(live.bufnr)
  for _, part in ipairs({
    "## You",
    "▸ Thinking",
    "Read notes",
    "notes read",
    "Plan",
    "Second paragraph.",
    "Done with beta.",
    "↳ embedded mention.txt",
  }) do
    T.contains(table.concat(live_lines, "\n"), part, "the live chat shows everything")
  end
  T.not_contains(table.concat(live_lines, "\n"), "the mentioned file's body", "a mention is one line, not the file")
  local id = live.session_id
  live:close()

  local picked = choose(function(item)
    return item.session_id == id
  end)
  vim.cmd("Acp sessions rich --all")
  local loaded = wait_chat(id, live)
  T.eq("load", picked.items[1].action, "offered for load")
  T.contains(picked.lines[1], "alpha", "the title is the first prompt")
  T.eq(without_turn_ends(live_lines), T.lines(loaded.bufnr), "replay renders as live")
  T.eq("code", loaded.modes.current_mode_id, "mode restored")
  T.contains(winbar(loaded), "mode: Code", "winbar mode after load")
  T.contains(winbar(loaded), "model: Large", "winbar model after load")
  T.eq("end_turn", T.turn(loaded, "delta"), "the loaded session goes on")
  T.wait_text(loaded, "Done with delta.")
end)

T.test(":Acp sessions --delete deletes a picked session after confirmation", function()
  local chat = T.open_chat("crashy", dir)
  T.eq("end_turn", T.turn(chat, "remember me"), "a turn")
  local id = chat.session_id
  chat:close()
  local function delete(answer)
    local result = {}
    choose(function(item)
      return item.session_id == id
    end, function(choice)
      return choice == answer
    end)
    require("acp.agents.sessions").pick_delete({
      agent = "crashy",
      all = true,
      cwd = dir,
      on_done = function(deleted)
        result.done, result.deleted = true, deleted
      end,
    })
    T.wait(function()
      return result.done
    end, "delete flow ended")
    return result.deleted
  end
  T.eq(nil, delete("Keep"), "kept when not confirmed")
  T.eq(id, delete("Delete"), "deleted after confirmation")
  local listed
  require("acp.agents.sessions").list("crashy", { cwd = dir, all = true }, function(ev)
    listed = ev
  end)
  T.wait(function()
    return listed
  end, "listed again")
  for _, s in ipairs(listed.sessions or {}) do
    T.truthy(s.session_id ~= id, "the deleted session is gone")
  end
end)

T.test("a session the agent can resume but not load is resumed", function()
  local first = T.open_chat("resumer", dir)
  T.eq("end_turn", T.turn(first, "one"), "turn")
  local id = first.session_id
  first:close()
  local picked = choose(function(item)
    return item.session_id == id
  end)
  vim.cmd("Acp sessions resumer --all")
  local resumed = wait_chat(id, first)
  T.eq("resume", picked.items[1].action, "offered for resume")
  T.eq("end_turn", T.turn(resumed, "two"), "resumed session answers")
  local text = T.text(resumed.bufnr)
  T.contains(text, "said two", "answer")
  T.not_contains(text, "said one", "no replay on resume")
end)

T.test("a transcript is reopened read-only after a backend restart", function()
  local live = T.open_chat("forgetful", dir)
  T.eq("end_turn", T.turn(live, "remember me"), "turn")
  local id, lines = live.session_id, T.lines(live.bufnr)
  local path = live.transcript_path
  T.truthy(
    path and path:find(vim.fn.stdpath("state"), 1, true) == 1,
    "transcript under stdpath('state'): " .. tostring(path)
  )
  live:close()
  require("acp.rpc.backend").stop()

  local warned = {}
  local orig = vim.notify
  vim.notify = function(m, level)
    warned[#warned + 1] = m
    if level ~= vim.log.levels.WARN then
      orig(m, level)
    end
  end
  local picked = choose(function(item)
    return item.session_id == id
  end)
  vim.cmd("Acp sessions forgetful --all")
  T.wait(function()
    return picked.items ~= nil
  end, "the picker")
  vim.notify = orig
  T.contains(table.concat(warned, "\n"), "cannot list its sessions", "the agent's limit is said")
  T.eq("readonly", picked.items[1].action, "offered read-only")
  T.contains(picked.lines[1], "read-only", "the picker says so")
  local ro = require("acp.chat").current()
  T.eq(id, ro.session_id, "the transcript's session")
  T.eq("readonly", ro.status, "read-only")
  T.eq(lines, T.lines(ro.bufnr), "rendered as it was")
  T.contains(winbar(ro), "read-only", "winbar")
  T.eq(false, vim.bo[ro.prompt_buf].modifiable, "prompt disabled")
  vim.notify = function() end
  local ok = ro:send({ { type = "text", text = "x" } })
  vim.notify = orig
  T.eq(false, ok, "no prompts")
end)

T.test("two chats with the same agent run at once and close separately", function()
  local a = T.open_chat("echo", dir)
  local b = T.open_chat("echo", dir)
  assert(a:send({ { type = "text", text = "to a" } }))
  assert(b:send({ { type = "text", text = "to b" } }))
  T.wait(function()
    return T.turns[a.chat_id] and T.turns[b.chat_id]
  end, "both turns ended")
  T.contains(T.text(a.bufnr), "echo: to a", "a's answer")
  T.contains(T.text(b.bufnr), "echo: to b", "b's answer")
  T.not_contains(T.text(a.bufnr), "to b", "nothing of b in a")
  T.not_contains(T.text(b.bufnr), "to a", "nothing of a in b")
  a:close()
  T.eq("end_turn", T.turn(b, "still there"), "b survives a's close")
end)

T.test("an agent death offers a restart that resumes the same session", function()
  local chat = T.open_chat("crashy", dir)
  T.eq("end_turn", T.turn(chat, "hello"), "turn")
  local id = chat.session_id
  assert(chat:send({ { type = "text", text = "crash now" } }))
  T.wait(function()
    return chat.status == "dead"
  end, "chat marked dead")
  local text = T.text(chat.bufnr)
  T.contains(text, "fatal: crashed on purpose", "stderr tail")
  T.contains(text, "Press R to restart", "the restart is offered")
  T.cursor_on(chat, "alive: hello")
  vim.api.nvim_feedkeys("R", "x", false)
  T.wait(function()
    return chat.status == "ready"
  end, "ready again; transcript:\n" .. T.text(chat.bufnr))
  T.eq(id, chat.session_id, "the same session")
  T.contains(T.text(chat.bufnr), "session resumed", "note")
  T.eq("end_turn", T.turn(chat, "again"), "works again")
  T.wait_text(chat, "alive: again")
end)

T.test(":Acp option sets select and boolean options", function()
  local chat = T.open_chat("rich", dir)
  local function current(id)
    for _, o in ipairs(chat.config_options or {}) do
      if o.id == id then
        return o.current_value
      end
    end
  end
  -- The first menu picks the option, the second its value.
  choose(function(o)
    return o.id == "fast"
  end, function(v)
    return v.value == true
  end)
  vim.cmd("Acp option")
  T.wait(function()
    return current("fast") == true
  end, "fast mode on")
  vim.cmd("Acp option model large")
  T.wait(function()
    return current("model") == "large"
  end, "model set")
  T.contains(winbar(chat), "model: Large", "winbar")
end)

T.test("auth_required offers the methods; an agent method logs in and the chat continues; logout", function()
  local picked = choose(function(m)
    return m.id == "fake-login"
  end)
  local chat = assert(require("acp").open({ agent = "login", cwd = dir }))
  T.wait(function()
    return chat.status == "ready"
  end, "session after login; transcript:\n" .. T.text(chat.bufnr))
  T.contains(picked.prompt, "log in to login", "the picker names the agent")
  T.contains(T.text(chat.bufnr), "logging in with Fake login", "note")
  T.eq("end_turn", T.turn(chat, "hi"), "works")
  vim.cmd("Acp logout")
  T.wait_text(chat, "logged out of login")
end)

T.test("a terminal auth method runs the agent's login command, then reconnects", function()
  choose(function(m)
    return m.id == "term"
  end)
  local chat = assert(require("acp").open({ agent = "termlogin", cwd = dir }))
  T.wait(function()
    return chat.status == "ready"
  end, "session after the terminal login; transcript:\n" .. T.text(chat.bufnr))
  T.eq("ada", T.read_file(dir .. "/term-auth"), "the method's env reached the login command")
  T.contains(T.text(chat.bufnr), "logged in; reconnecting", "note")
end)

T.test("an older agent's _meta terminal-auth method runs its own program in a terminal", function()
  local picked = choose(function(m)
    return m.id == "legacy"
  end)
  local chat = assert(require("acp").open({ agent = "legacylogin", cwd = dir }))
  T.wait(function()
    return chat.status == "ready"
  end, "session after the legacy terminal login; transcript:\n" .. T.text(chat.bufnr))
  T.contains(table.concat(picked.lines, "\n"), "Legacy login (in a terminal)", "offered as a terminal login")
  T.eq("grace", T.read_file(dir .. "/legacy-auth"), "its program ran with its env")
end)

T.test("per-agent MCP servers reach the agent; http ones only when advertised", function()
  local warned = {}
  local orig = vim.notify
  vim.notify = function(m, level)
    warned[#warned + 1] = m
    if level ~= vim.log.levels.WARN then
      orig(m, level)
    end
  end
  local chat = T.open_chat("mcp", dir)
  T.eq("end_turn", T.turn(chat, "servers?"), "turn")
  vim.notify = orig
  local text = T.text(chat.bufnr)
  T.contains(text, '"name":"files"', "stdio server")
  T.contains(text, '{"name":"FOO","value":"1"}', "env map sent as ACP's list")
  T.not_contains(text, "mcp.example", "http server dropped")
  T.contains(table.concat(warned, "\n"), "`web` (http)", "the drop is explained")
end)

T.test("mcp_servers and transcripts are validated; transcripts = false writes none", function()
  local config = require("acp.config")
  for _, case in ipairs({
    { { mcp_servers = { { command = "/bin/x" } } }, "`mcp_servers[1]` needs a `name`" },
    { { mcp_servers = { { name = "w", type = "http" } } }, "needs a `url`" },
    { { mcp_servers = { { name = "w", type = "ws", url = "x" } } }, "`mcp_servers[1].type`" },
    { { agents = { x = { cmd = { "x" }, mcp_servers = { { name = "s" } } } } }, "agents.x.mcp_servers[1]" },
    { { transcripts = "yes" }, "`transcripts` must be true or false" },
  }) do
    local err = config.validate(case[1])
    T.truthy(err and err:find(case[2], 1, true), ("%s: got %s"):format(case[2], tostring(err)))
  end
  local opts = vim.deepcopy(config.options)
  opts.transcripts = false
  assert(require("acp").setup(opts))
  local chat = T.open_chat("echo", dir)
  T.eq(nil, chat.transcript_path, "no transcript")
  opts.transcripts = true
  assert(require("acp").setup(opts))
end)

T.run()
