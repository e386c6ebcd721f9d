-- End to end: ACP v2 beside v1. The same scripted turn through a v2 agent
-- (`protocol_version = 2`), a v1 agent and a v1-only agent offered 2 renders
-- the same chat: Lua does not know which version it talks.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local config = require("acp.config")

local dir = T.tmpdir()

local function scenario(v2)
  return {
    v2 = v2,
    turns = {
      {
        steps = {
          { type = "text", text = "Reading it now." },
          { type = "toolCallUpdate", toolCallId = "t1", title = "Read notes", kind = "read", status = "in_progress" },
          {
            type = "toolCallUpdate",
            toolCallId = "t1",
            status = "completed",
            content = { { type = "content", content = { type = "text", text = "notes body" } } },
          },
          { type = "requestPermission", toolCall = { toolCallId = "e1", title = "Edit notes", kind = "edit" } },
          -- A command and an edit on disk: on v2 as `terminal_update`s and a
          -- `git_patch` diff, on v1 as `_meta` output and old/new text (ids of
          -- their own per turn, as agents give them).
          {
            type = "agentTerminal",
            toolCallId = "run-{{turn}}",
            command = "make check",
            output = { "checking\n", "2 passed ✓\n" },
            exitCode = 0,
          },
          { type = "writeDisk", path = "notes.txt", content = "one\nTWO\nthree\n", toolCallId = "w1-{{turn}}" },
          { type = "text", text = "All done." },
        },
        usage = { totalTokens = 1234, inputTokens = 1000, outputTokens = 234 },
      },
    },
  }
end

T.require_binaries()

local function setup()
  local agents = {}
  for name, spec in pairs({
    on_v2 = { scenario(true), 2 },
    on_v1 = { scenario(true), nil },
    v1_only = { scenario(false), 2 },
  }) do
    agents[name] = {
      cmd = { T.fake_agent(), "--scenario", T.scenario(dir, spec[1]) },
      protocol_version = spec[2],
    }
  end
  assert(require("acp").setup({
    backend = { cmd = { T.backend_bin() } },
    agents = agents,
    permission = { auto_allow = { "edit" } },
    log_level = os.getenv("ACP_TEST_LOG_LEVEL") or "debug",
  }))
end

--- The transcript below the chat's header line, the agent's name blanked.
local function body(chat, name)
  local lines = T.lines(chat.bufnr)
  return (table.concat(vim.list_slice(lines, 2), "\n"):gsub("## " .. name .. "\n", "## agent\n"))
end

T.test("protocol_version is validated: 1 or 2", function()
  T.contains(
    config.validate({ agents = { mine = { cmd = { "x" }, protocol_version = 3 } } }),
    "`agents.mine.protocol_version` must be 1 or 2",
    "3 refused"
  )
  T.contains(
    config.validate({ agents = { mine = { cmd = { "x" }, protocol_version = "2" } } }),
    "`agents.mine.protocol_version` must be 1 or 2",
    "a string refused"
  )
  T.eq(nil, config.validate({ agents = { mine = { cmd = { "x" }, protocol_version = 2 } } }), "2 accepted")
end)

T.test("a full v2 turn renders as the same turn on v1", function()
  setup()
  local bodies = {}
  for _, name in ipairs({ "on_v2", "on_v1", "v1_only" }) do
    -- Each agent edits the same file from the same text.
    vim.fn.writefile({ "one", "two", "three" }, dir .. "/notes.txt")
    local chat = T.open_chat(name, dir)
    T.eq("end_turn", T.turn(chat, "read the notes"), name .. " stop reason")
    T.eq("end_turn", T.turn(chat, "and again"), name .. " second turn")
    local text = body(chat, name)
    T.eq(1, T.count_lines(chat.bufnr, "read the notes"), name .. ": the prompt shown once")
    T.contains(text, "Reading it now.", name .. " text")
    T.contains(text, "✓ read · Read notes", name .. " tool call completed in place")
    T.contains(text, "notes body", name .. " tool content")
    T.contains(text, "All done.", name .. " text after the permission")
    T.contains(text, "$ make check (exited 0)", name .. " the command and how it ended")
    T.contains(text, "│ 2 passed ✓", name .. " the command's output")
    T.contains(text, "± notes.txt +1 -1", name .. " the edit as a diff that opens")
    T.contains(text, "— end turn —", name .. " stop reason shown")
    bodies[name] = text
  end
  T.eq(bodies.on_v1, bodies.on_v2, "v2 renders as v1")
  T.eq(bodies.on_v1, bodies.v1_only, "a v1-only agent offered 2 renders as v1")
end)

T.run()
