-- The scenarios every published agent of tests/agents/agents.json plays, in
-- a real headless Neovim with the plugin loaded, through the real backend,
-- against the agent's own published code with its model API answered by
-- tests/agents/model_mock.py. Each tests/agents/test_<agent>.lua is
-- `dofile(...scenarios.lua)("<agent>")`; tests/agents/run.sh installs the
-- agents and runs them (`make agents`).
--
-- What is asserted is what a user relies on: the answers in the chat, the
-- text of the buffer they are editing, what is on disk, the review. The
-- agent's traffic (tests/agents/wire_tap.py), the model requests (the mock's
-- log) and the backend's log are kept under .cache/agents/logs/<agent>/ for
-- the report run.sh prints (tests/agents/report.py).
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

-- A real agent starts node and the Claude CLI: seconds, not milliseconds.
local START_MS = 90000
local TURN_MS = 90000

local rows_with = T.review_rows

--- Read a JSON-lines file (nothing when it does not exist yet).
local function jsonl(path)
  local out = {}
  if vim.fn.filereadable(path) == 0 then
    return out
  end
  for line in io.lines(path) do
    local ok, v = pcall(vim.json.decode, line)
    if ok then
      out[#out + 1] = v
    end
  end
  return out
end

return function(agent_name)
  local root = T.root
  local agents = vim.json.decode(T.read_file(root .. "/tests/agents/agents.json"))
  local spec = assert(agents[agent_name], "no agent " .. agent_name .. " in tests/agents/agents.json")
  local prefix = root .. "/.cache/agents/" .. agent_name
  local bin = prefix .. "/node_modules/.bin/" .. spec.bin
  local logs = root .. "/.cache/agents/logs/" .. agent_name
  vim.fn.delete(logs, "rf")
  vim.fn.mkdir(logs, "p")

  if vim.fn.executable(bin) == 0 then
    T.test(agent_name .. " is installed", function()
      error(("%s is not installed at %s: run tests/agents/run.sh (make agents)"):format(spec.package, bin))
    end)
    return T.run()
  end

  local dir = T.tmpdir()
  local home = T.tmpdir()
  local mock_log = logs .. "/model-requests.jsonl"
  local wire_log = logs .. "/wire.jsonl"

  -- The model's side of every scenario. A turn is picked by its `match`
  -- in the prompt, so each scenario's prompts carry their own key.
  local script = {
    turns = {
      { match = "scenario-a one", responses = { { text = "First answer: the sky is blue." } } },
      { match = "scenario-a two", responses = { { text = "Second answer: the grass is green." } } },
      {
        match = "scenario-b",
        responses = {
          { tool_use = { { name = "Read", input = { file_path = "{{DIR}}/hello.txt" } } } },
          {
            tool_use = {
              {
                name = "Edit",
                input = { file_path = "{{DIR}}/hello.txt", old_string = "hello world", new_string = "hello ACP" },
              },
            },
          },
          { text = "Changed world to ACP in hello.txt." },
        },
      },
      {
        match = "scenario-c",
        responses = {
          { tool_use = { { name = "Read", input = { file_path = "{{DIR}}/deny.txt" } } } },
          {
            tool_use = {
              {
                name = "Edit",
                input = { file_path = "{{DIR}}/deny.txt", old_string = "keep me", new_string = "agent was here" },
              },
            },
          },
          { text = "Understood, I left deny.txt alone." },
        },
      },
      {
        -- A plan approved in plan mode: claude-agent-acp 0.101.0 sends it
        -- as a Markdown `plan_update` to clients that advertise
        -- `clientCapabilities.plan` (its TodoWrite list is still the legacy
        -- `plan`).
        match = "scenario-e",
        responses = {
          {
            tool_use = {
              { name = "ExitPlanMode", input = { plan = "# Fix plan\n\n1. Read the code\n2. Write the fix" } },
            },
          },
          { text = "Planned the work." },
        },
      },
      {
        -- A command the agent runs itself (codex-acp reports its output
        -- only in `_meta`). `exec_command` is Codex's shell tool.
        match = "scenario-d",
        responses = {
          {
            tool_use = { { name = "exec_command", input = { cmd = "echo ran-by-agent && ls", workdir = "{{DIR}}" } } },
          },
          { text = "Listed the files." },
        },
      },
      {
        -- The editor's MCP server (issue 26): Claude Code defers MCP tools,
        -- so the model first selects them with its ToolSearch.
        match = "scenario-g",
        responses = {
          {
            tool_use = {
              { name = "ToolSearch", input = { query = "select:mcp__editor__read_file,mcp__editor__edit_file" } },
            },
          },
          { tool_use = { { name = "mcp__editor__read_file", input = { path = "{{DIR}}/editor.txt" } } } },
          {
            tool_use = {
              {
                name = "mcp__editor__edit_file",
                input = { path = "{{DIR}}/editor.txt", old_string = "hello world", new_string = "hello editor" },
              },
            },
          },
          { text = "Edited through the editor." },
        },
      },
      -- Scenario f (rewind): after the rewind the prompt also carries the
      -- earlier conversation, whose keys would match turns below: "four"
      -- comes first.
      { match = "scenario-f four", responses = { { text = "Fourth turn, after the rewind." } } },
      {
        match = "scenario-f one",
        responses = {
          { tool_use = { { name = "Write", input = { file_path = "{{DIR}}/f-one.txt", content = "one\n" } } } },
          { text = "Wrote f-one.txt." },
        },
      },
      {
        match = "scenario-f two",
        responses = {
          { tool_use = { { name = "Read", input = { file_path = "{{DIR}}/f-edit.txt" } } } },
          {
            tool_use = {
              {
                name = "Edit",
                input = { file_path = "{{DIR}}/f-edit.txt", old_string = "line two", new_string = "LINE TWO" },
              },
            },
          },
          { text = "Edited f-edit.txt." },
        },
      },
      {
        match = "scenario-f three",
        responses = {
          { tool_use = { { name = "Write", input = { file_path = "{{DIR}}/f-three.txt", content = "three\n" } } } },
          { text = "Wrote f-three.txt." },
        },
      },
    },
    side_text = "Mock session",
  }
  local script_path = dir .. "/model-script.json"
  T.write_file(script_path, vim.json.encode(script))

  local port_file = dir .. "/mock.port"
  local mock = vim.system({
    "python3",
    root .. "/tests/agents/model_mock.py",
    "--script",
    script_path,
    "--port-file",
    port_file,
    "--log",
    mock_log,
    "--var",
    "DIR=" .. dir,
    -- T.run() ends with os.exit(), which runs no autocommand: the mock
    -- stops when this Neovim's end closes its stdin.
    "--exit-with-stdin",
  }, { text = true, stdin = true })
  local ok_port = vim.wait(10000, function()
    return vim.fn.filereadable(port_file) == 1
  end, 20)
  if not ok_port then
    mock:kill(15)
    T.test("the mock model API starts", function()
      error("tests/agents/model_mock.py did not listen within 10 s: " .. vim.inspect(mock:wait(1000)))
    end)
    return T.run()
  end
  local port = vim.trim(T.read_file(port_file))

  -- Nothing of the machine's agent set-up leaks in: a HOME of the test's
  -- own (run.sh also clears ANTHROPIC_*, CLAUDE_*, OPENAI_* and CODEX_*).
  local env = { HOME = home }
  if spec.model_api == "anthropic" then
    env.CLAUDE_CONFIG_DIR = home .. "/.claude"
    env.ANTHROPIC_BASE_URL = "http://127.0.0.1:" .. port
    env.ANTHROPIC_API_KEY = "dummy"
    env.DISABLE_TELEMETRY = "1"
    env.DISABLE_AUTOUPDATER = "1"
    env.DISABLE_ERROR_REPORTING = "1"
    env.CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1"
    if (vim.uv or vim.loop).getuid() == 0 then
      -- CI containers run as root; the Claude CLI refuses to start as root
      -- (the adapters always allow it to skip permissions) unless told it
      -- is in a sandbox. Permissions are still asked.
      env.IS_SANDBOX = "1"
    end
  elseif spec.model_api == "openai-responses" then
    -- Codex takes a custom model provider from its config; one with no
    -- auth settings needs no login. A model it knows, or it warns in the
    -- chat that it has no metadata for it.
    env.CODEX_HOME = home .. "/.codex"
    -- codex-acp 2.x: the approval and sandbox preset is a session mode
    -- (read-only, workspace-write, agent, agent-full-access), the first one
    -- taken from INITIAL_AGENT_MODE; its default, "agent", has a model
    -- review the approvals.
    if spec.initial_mode then
      env.INITIAL_AGENT_MODE = spec.initial_mode
    end
    vim.fn.mkdir(env.CODEX_HOME, "p")
    T.write_file(
      env.CODEX_HOME .. "/config.toml",
      table.concat({
        ("model = %q"):format(spec.model or "gpt-5.3-codex"),
        'model_provider = "mock"',
        "[model_providers.mock]",
        'name = "mock"',
        ('base_url = "http://127.0.0.1:%s/v1"'):format(port),
        'wire_api = "responses"',
        "",
      }, "\n")
    )
  else
    error("tests/agents/agents.json: unknown model_api " .. tostring(spec.model_api) .. " for " .. agent_name)
  end

  local cmd = { "python3", root .. "/tests/agents/wire_tap.py", wire_log, "--", bin }
  if os.getenv("ACP_AGENTS_TAP") == "0" then
    cmd = { bin }
  end
  -- The client system prompt (ACP of November 2026): sent to agents that
  -- advertise it, checked in scenario a.
  local SYSTEM_PROMPT = "acp.nvim test instructions: SP-MARKER-27."
  assert(require("acp").setup({
    backend = { cmd = { T.backend_bin() } },
    agents = { [agent_name] = { cmd = cmd, env = env, protocol_version = spec.protocol_version } },
    system_prompt = SYSTEM_PROMPT,
    log_level = "debug",
  }))

  --- Keep the backend's log and the scenario's chat transcripts as they
  --- are now (the next scenario closes the chats).
  local function keep_logs(letter)
    local src = require("acp.rpc.backend").log_file()
    if vim.fn.filereadable(src) == 1 then
      T.write_file(logs .. "/acp.log", T.read_file(src))
    end
    for _, c in ipairs(require("acp.chat").list) do
      if vim.api.nvim_buf_is_valid(c.bufnr) then
        T.write_file(("%s/transcript-%s-chat%s.txt"):format(logs, letter, c.chat_id), T.text(c.bufnr) .. "\n")
      end
    end
  end

  --- A scenario: a test of its own whose logs are kept whatever happens.
  --- Only the scenarios the agent's entry lists (`scenarios`) are played.
  local function scenario(name, fn)
    if not vim.tbl_contains(spec.scenarios or {}, name:sub(1, 1)) then
      return
    end
    T.test(agent_name .. ": " .. name, function()
      local ok, err = pcall(fn)
      keep_logs(name:sub(1, 1))
      if not ok then
        error(err, 0)
      end
    end)
  end

  local function open_chat()
    local chat = assert(require("acp").open({ agent = agent_name, cwd = dir }))
    T.wait(function()
      return chat.session_id ~= nil
    end, "the session started; transcript:\n" .. T.text(chat.bufnr), START_MS)
    -- A user who wants to be asked before edits picks the asking mode; the
    -- agents' defaults differ (claude-agent-acp starts in "auto", where
    -- Claude decides alone).
    local want = spec.ask_mode
    local function current()
      return (chat.modes or {}).current_mode_id
    end
    if want and current() ~= want then
      assert(chat:set_mode(want), "switching to mode " .. want)
      T.wait(function()
        return current() == want
      end, ("the mode switched to %s: %s"):format(want, vim.inspect(chat.modes)), 15000)
    end
    return chat
  end

  --- Send `text`, answer each permission request with `answer(req)` (an
  --- option kind), and wait for the turn's end; returns its stop reason and
  --- the requests answered.
  local function turn(chat, text, answer)
    local permission = require("acp.chat.view.permission")
    local before = #(T.turns[chat.chat_id] or {})
    local asked = {}
    assert(chat:send({ { type = "text", text = text } }), "prompt refused")
    T.wait(function()
      local req = permission.for_chat(chat.chat_id)[1]
      if req then
        local kind = answer(req)
        asked[#asked + 1] = { tool_call = req.tool_call, kind = kind }
        local index
        for i, o in ipairs(req.options) do
          if o.kind == kind then
            index = index or i
          end
        end
        assert(index, ("no %s option in %s"):format(kind, vim.inspect(req.options)))
        permission.respond_nth(req, index)
      end
      return #(T.turns[chat.chat_id] or {}) > before
    end, "the end of the turn; transcript:\n" .. T.text(chat.bufnr), TURN_MS)
    return T.turns[chat.chat_id][before + 1], asked
  end

  --- The model requests the mock answered for a scenario's turns.
  local function model_requests(key)
    local out = {}
    for _, e in ipairs(jsonl(mock_log)) do
      if e.kind == "messages" and vim.json.encode(e.body.messages or {}):find(key, 1, true) then
        out[#out + 1] = e
      end
    end
    return out
  end

  --- Text of the tool results (by tool use id) the agent sent the model in
  --- the Anthropic requests whose messages mention `key` (codex-acp plays
  --- no scenario that needs them).
  local function tool_results(key)
    local results = {}
    for _, e in ipairs(model_requests(key)) do
      for _, m in ipairs(e.body.messages or {}) do
        if m.role == "user" and type(m.content) == "table" then
          for _, b in ipairs(m.content) do
            if b.type == "tool_result" then
              local text = b.content
              if type(text) == "table" then
                local parts = {}
                for _, c in ipairs(text) do
                  parts[#parts + 1] = c.text or ""
                end
                text = table.concat(parts, "\n")
              end
              results[b.tool_use_id] = tostring(text)
            end
          end
        end
      end
    end
    return results
  end

  scenario("a. two turns of plain chat: both answers, in order, each in its own turn", function()
    local chat = open_chat()
    T.eq(
      "end_turn",
      turn(chat, "scenario-a one: what colour is the sky?", function()
        error("no permission expected")
      end),
      "first stop reason"
    )
    T.eq(
      "end_turn",
      turn(chat, "scenario-a two: and the grass?", function()
        error("no permission expected")
      end),
      "second stop reason"
    )
    local buf = chat.bufnr
    local p1 = T.truthy(T.find_line(buf, "scenario-a one"), "first prompt shown:\n" .. T.text(buf))
    local a1 = T.truthy(T.find_line(buf, "First answer: the sky is blue."), "first answer whole:\n" .. T.text(buf))
    local p2 = T.truthy(T.find_line(buf, "scenario-a two"), "second prompt shown:\n" .. T.text(buf))
    local a2 = T.truthy(T.find_line(buf, "Second answer: the grass is green."), "second answer whole:\n" .. T.text(buf))
    T.truthy(
      p1 < a1 and a1 < p2 and p2 < a2,
      ("order prompt 1 (%d) < answer 1 (%d) < prompt 2 (%d) < answer 2 (%d):\n%s"):format(p1, a1, p2, a2, T.text(buf))
    )
    T.eq(1, T.count_lines(buf, "First answer"), "the first answer once")
    T.eq(1, T.count_lines(buf, "Second answer"), "the second answer once")
    -- An echoed prompt is not shown twice.
    T.eq(1, T.count_lines(buf, "scenario-a one"), "the first prompt once:\n" .. T.text(buf))
    -- The system prompt: sent exactly when the agent advertises it
    -- (from the wire tap: the schema build of the backend does not pass the
    -- capability on to Lua), and then part of what the model got.
    if os.getenv("ACP_AGENTS_TAP") ~= "0" then
      local advertised, sent
      for _, e in ipairs(jsonl(wire_log)) do
        local m = e.msg or {}
        local caps = type(m.result) == "table" and m.result.agentCapabilities
        if e.dir == "from_agent" and type(caps) == "table" then
          local sc = caps.sessionCapabilities
          advertised = type(sc) == "table" and type(sc.systemPrompt) == "table"
        end
        -- An agent answering ACP v2 advertises it in `capabilities.session`.
        local caps2 = type(m.result) == "table" and m.result.protocolVersion == 2 and m.result.capabilities
        if e.dir == "from_agent" and type(caps2) == "table" then
          local sc = caps2.session
          advertised = type(sc) == "table" and type(sc.systemPrompt) == "table"
        end
        if e.dir == "to_agent" and m.method == "session/new" then
          sent = type(m.params) == "table" and m.params.systemPrompt or false
        end
      end
      if advertised then
        T.truthy(sent, "systemPrompt sent on session/new")
        T.eq("append", sent.mode, "systemPrompt mode")
        local seen = false
        for _, e in ipairs(jsonl(mock_log)) do
          if vim.json.encode(e.body or {}):find("SP-MARKER-27", 1, true) then
            seen = true
          end
        end
        T.truthy(seen, "the model request carries the system prompt (mock log " .. mock_log .. ")")
      else
        T.eq(false, sent, "no systemPrompt to an agent that does not advertise it")
      end
    end
  end)

  scenario(
    "g. the editor's MCP server (issue 26): mcp__editor__read_file reads the unsaved line, edit_file merges into the buffer",
    function()
      local path = dir .. "/editor.txt"
      T.write_file(path, "hello world\n")
      vim.cmd("edit " .. vim.fn.fnameescape(path))
      local buf = vim.api.nvim_get_current_buf()
      vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "unsaved editor line" })
      local chat = open_chat()
      local stop = turn(chat, "scenario-g: change world to editor in editor.txt", function()
        return "allow_once"
      end)
      T.eq("end_turn", stop, "stop reason")
      T.wait_text(chat, "Edited through the editor.")
      -- Turn 6 of the model script; its response 1 is the read.
      local results = tool_results("scenario-g")
      local read = T.truthy(results["toolu_mock_6_1_0"], "the editor read reached the model: " .. vim.inspect(results))
      T.contains(read, "unsaved editor line", "the agent read the buffer through the editor's server")
      local edited =
        T.truthy(results["toolu_mock_6_2_0"], "the edit's result reached the model: " .. vim.inspect(results))
      T.not_contains(edited, "rror", "the edit was applied")
      T.wait(function()
        return vim.deep_equal({ "hello editor", "unsaved editor line" }, T.lines(buf))
      end, "the edit merged into the buffer, the unsaved line kept: " .. vim.inspect(T.lines(buf)), 15000)
      T.eq(true, vim.bo[buf].modified, "the user's line is still unsaved")
    end
  )

  scenario("b. read-modify-write of a file with an unsaved line (issue 14): merged, reviewed, no conflict", function()
    local path = dir .. "/hello.txt"
    T.write_file(path, "hello world\n")
    vim.cmd("edit " .. vim.fn.fnameescape(path))
    local buf = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "unsaved line" })
    T.eq(true, vim.bo[buf].modified, "the user's line is unsaved")
    local chat = open_chat()
    local stop, asked = turn(chat, "scenario-b: change world to ACP in hello.txt", function(req)
      -- Allow what the agent asks (the edit; a read if it asks for one).
      return "allow_once"
    end)
    T.eq("end_turn", stop, "stop reason")
    T.truthy(#asked >= 1, "the agent asked before editing")
    T.wait_text(chat, "Changed world to ACP")

    -- What the agent's Read returned to the model: the tool result of the
    -- first tool use of the turn.
    local results = tool_results("scenario-b")
    local read = T.truthy(results["toolu_mock_2_0_0"], "the Read's result reached the model: " .. vim.inspect(results))
    if spec.reads == "client" then
      T.contains(read, "unsaved line", "the agent read the buffer (fs/read_text_file), unsaved line included")
    else
      -- This agent reads the disk itself: it cannot see unsaved text.
      T.contains(read, "hello world", "the agent read the file")
      T.not_contains(read, "unsaved line", "an agent that reads the disk does not see the unsaved line")
    end

    -- Everything the user relies on is checked and every miss reported
    -- together: a published agent's run is the report.
    local misses = {}
    local function check(ok, what)
      if not ok then
        misses[#misses + 1] = what
      end
    end
    local original = { "hello world", "unsaved line" }
    T.wait(function()
      return not vim.deep_equal(T.lines(buf), original)
    end, "the agent's edit reached the buffer: " .. vim.inspect(T.lines(buf)), 15000)
    local lines = T.lines(buf)
    check(
      vim.deep_equal({ "hello ACP", "unsaved line" }, lines),
      "the buffer reads `hello ACP`, `unsaved line`: " .. vim.inspect(lines)
    )
    local markers = vim.tbl_filter(function(l)
      return l:match("^<<<<<<<") or l:match("^=======") or l:match("^>>>>>>>")
    end, lines)
    check(#markers == 0, "no conflict markers in the buffer: " .. vim.inspect(markers))
    check(vim.bo[buf].modified, "the buffer is still modified (the user's line unsaved)")
    local disk = spec.reads == "client" and "hello ACP\nunsaved line\n" or "hello ACP\n"
    local on_disk = T.read_file(path)
    check(on_disk == disk, ("the disk holds what the agent wrote, %q: %q"):format(disk, on_disk))
    local win = vim.fn.win_findbuf(buf)[1] or vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
    vim.api.nvim_set_current_win(win)
    local drawn = vim.wait(5000, function()
      return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 0 })
    end, 10)
    check(
      drawn,
      "the agent's line is drawn as a review hunk (row 0): rows " .. vim.inspect(rows_with(buf, "AcpReviewAdd"))
    )
    local entry = require("acp.edits.review").files[path]
    local summary = entry and entry.chats[chat.chat_id]
    check(summary and summary.hunks == 1, "one hunk under review: " .. vim.inspect(entry and entry.chats))
    if #misses > 0 then
      error(("%d of 6 checks failed:\n  - %s"):format(#misses, table.concat(misses, "\n  - ")), 0)
    end
  end)

  scenario("c. a denied permission: nothing written, the tool call shown rejected", function()
    local path = dir .. "/deny.txt"
    T.write_file(path, "keep me\n")
    vim.cmd("edit " .. vim.fn.fnameescape(path))
    local buf = vim.api.nvim_get_current_buf()
    local chat = open_chat()
    local stop, asked = turn(chat, "scenario-c: rewrite deny.txt", function(req)
      local tc = req.tool_call or {}
      -- Reject the edit; let a read through if the agent asks for one.
      return tc.kind == "read" and "allow_once" or "reject_once"
    end)
    T.truthy(stop == "end_turn" or stop == "cancelled", "the turn ended: " .. tostring(stop))
    local rejected = vim.tbl_filter(function(a)
      return a.kind == "reject_once"
    end, asked)
    T.eq(1, #rejected, "one request rejected: " .. vim.inspect(asked))
    T.eq("keep me\n", T.read_file(path), "nothing written to disk")
    T.eq({ "keep me" }, T.lines(buf), "the buffer is unchanged")
    T.eq(false, vim.bo[buf].modified, "the buffer is not modified")
    local text = T.text(chat.bufnr)
    T.truthy(
      T.find_line(chat.bufnr, "answered: Reject") or text:find("reject_once", 1, true),
      "the answer is noted:\n" .. text
    )
    local title = (rejected[1].tool_call or {}).title or "deny.txt"
    T.wait(function()
      for _, l in ipairs(T.lines(chat.bufnr)) do
        if l:find("✗", 1, true) and l:find(title, 1, true) then
          return true
        end
      end
    end, ("the tool call %q shown failed (✗):\n%s"):format(title, T.text(chat.bufnr)), 15000)
    T.eq(
      nil,
      require("acp.edits.review").files[path] and require("acp.edits.review").files[path].chats[chat.chat_id],
      "nothing to review"
    )
  end)

  scenario("e. the agent's plan arrives as plan_update (the client opts in) and shows in place", function()
    local chat = open_chat()
    assert(chat:set_mode("plan"), "switching to plan mode")
    T.wait(function()
      return (chat.modes or {}).current_mode_id == "plan"
    end, "plan mode", 15000)
    T.eq(
      "end_turn",
      turn(chat, "scenario-e: plan the fix", function(req)
        -- Approve the plan (the first allowing option).
        for _, o in ipairs(req.options) do
          if o.kind:find("^allow") then
            return o.kind
          end
        end
        return "allow_once"
      end),
      "stop reason"
    )
    T.wait_text(chat, "Planned the work.")
    local kinds = {}
    for _, e in ipairs(jsonl(wire_log)) do
      local u = e.dir == "from_agent"
        and type(e.msg) == "table"
        and type(e.msg.params) == "table"
        and e.msg.params.update
      if type(u) == "table" and (u.sessionUpdate == "plan" or u.sessionUpdate == "plan_update") then
        kinds[u.sessionUpdate] = (kinds[u.sessionUpdate] or 0) + 1
      end
    end
    T.truthy(kinds.plan_update, "plan_update sent: " .. vim.inspect(kinds))
    local text = T.text(chat.bufnr)
    T.truthy(text:find("Plan document", 1, true), "the plan document in the chat:\n" .. text)
    T.truthy(text:find("Write the fix", 1, true), "the plan in the chat:\n" .. text)
  end)

  scenario("d. a command the agent runs itself: its output shown in its tool call", function()
    T.write_file(dir .. "/listed-file.txt", "x\n")
    local chat = open_chat()
    local stop = turn(chat, "scenario-d: list the files here", function()
      return "allow_once"
    end)
    T.eq("end_turn", stop, "stop reason")
    T.wait_text(chat, "Listed the files.")
    local text = T.text(chat.bufnr)
    T.truthy(text:find("│ ran-by-agent", 1, true), "the command's output in the chat:\n" .. text)
    T.truthy(text:find("│ listed-file.txt", 1, true), "the listing in the chat:\n" .. text)
    T.truthy(not text:find("output not kept", 1, true), "no lost output:\n" .. text)
    T.truthy(not text:find("(running)", 1, true), "the finished command is not shown running:\n" .. text)
  end)

  scenario(
    "f. rewind to before turn 2: the turn-1 state plus the user's unsaved line, then a prompt goes on",
    function()
      local edit_path = dir .. "/f-edit.txt"
      T.write_file(edit_path, "line one\nline two\n")
      vim.cmd("edit " .. vim.fn.fnameescape(edit_path))
      local buf = vim.api.nvim_get_current_buf()
      local chat = open_chat()
      local allow = function()
        return "allow_once"
      end
      T.eq("end_turn", turn(chat, "scenario-f one: write f-one.txt", allow), "turn 1")
      T.eq("end_turn", turn(chat, "scenario-f two: edit f-edit.txt", allow), "turn 2")
      T.eq("end_turn", turn(chat, "scenario-f three: write f-three.txt", allow), "turn 3")
      T.wait(function()
        return T.lines(buf)[2] == "LINE TWO"
      end, "turn 2's edit reached the buffer: " .. vim.inspect(T.lines(buf)), 15000)
      T.eq("three\n", T.read_file(dir .. "/f-three.txt"), "turn 3 wrote its file")
      vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "user line" })
      local done
      local au = vim.api.nvim_create_autocmd("User", {
        pattern = "AcpRewound",
        callback = function(a)
          done = a.data
        end,
      })
      T.truthy(require("acp").rewind({ turn = 2 }), "rewind started")
      T.wait(function()
        return done ~= nil
      end, "the rewind's outcome", 30000)
      vim.api.nvim_del_autocmd(au)
      T.eq(true, done.ok, "rewound: " .. tostring(done.reason))
      -- claude-agent-acp 0.101.0 advertises session/fork but announces no
      -- session cursors: no fork before turn 2, the chat says why.
      T.eq(false, done.forked, "no fork without a session cursor")
      T.contains(tostring(done.fork_note), "fork only the whole session", "why no fork")
      T.wait_text(chat, "no fork: the agent can fork only the whole session")
      T.eq({ "user line", "line one", "line two" }, T.lines(buf), "turn-1 state plus the user's line")
      T.eq("one\n", T.read_file(dir .. "/f-one.txt"), "turn 1's file stays")
      T.eq(nil, (vim.uv or vim.loop).fs_stat(dir .. "/f-three.txt"), "turn 3's file is gone")
      T.wait(function()
        return chat.session_id ~= nil and chat.status == "ready"
      end, "the chat's new session opened", START_MS)
      T.eq("end_turn", turn(chat, "scenario-f four: go on", allow), "a prompt after the rewind")
      T.wait_text(chat, "Fourth turn, after the rewind.")
      local sent = model_requests("scenario-f four")
      T.truthy(
        #sent > 0 and vim.json.encode(sent[1].body.messages):find("scenario-f one", 1, true),
        "the earlier conversation reached the model"
      )
    end
  )

  T.run()
end
