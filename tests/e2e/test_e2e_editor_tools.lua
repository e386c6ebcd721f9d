-- End to end: an agent that acts on disk reaches the user's buffers through
-- the editor's MCP server (issue 26), over the stdio bridge (the backend as
-- `acp-nvim --mcp-bridge`) and over HTTP.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

-- One prompt, the steps come with it.
local steps = { turns = { { startsWith = "steps:", steps = { { type = "promptSteps" } } } } }
T.setup_fake({
  stdio = steps,
  http = vim.tbl_extend("force", {
    initialize = { agentCapabilities = { mcpCapabilities = { http = true } } },
  }, steps),
  off = steps,
}, dir)
-- As `agents.off.editor_tools = false` in setup().
require("acp.config").options.agents.off.editor_tools = false

T.require_binaries()

local function agent_turn(chat, s)
  return T.turn(chat, "steps: " .. vim.json.encode(s))
end

--- Opens `name` in a buffer with an unsaved line the disk does not have.
local function dirty_buffer(name)
  local path = dir .. "/" .. name
  T.write_file(path, "fn main() {\n    old();\n}\n")
  vim.cmd("edit " .. path)
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "    // unsaved by the user" })
  return path, buf
end

for _, agent in ipairs({ "stdio", "http" }) do
  T.test(agent .. ": the agent reads the unsaved line and its edit merges into the buffer", function()
    local path, buf = dirty_buffer(agent .. ".rs")
    local chat = T.open_chat(agent, dir)
    T.eq(
      "end_turn",
      agent_turn(chat, {
        { type = "mcpCall", tool = "read_file", arguments = { path = path }, saveAs = "read" },
        { type = "text", text = "READ<{{read}}>" },
        {
          type = "mcpCall",
          tool = "edit_file",
          arguments = { path = agent .. ".rs", old_string = "old();", new_string = "new();" },
          saveAs = "edit",
        },
        { type = "text", text = "EDIT<{{edit}}>" },
      }),
      "stop reason"
    )
    local text = T.text(chat.bufnr)
    T.not_contains(text, "EXPECTATION FAILED", "the calls reached the server")
    T.contains(text, "// unsaved by the user", "the agent read the buffer, not the disk")
    T.not_contains(text, "EDIT<error", "the edit was applied")
    T.eq(
      { "fn main() {", "    // unsaved by the user", "    new();", "}" },
      T.lines(buf),
      "merged, the unsaved line kept"
    )
  end)
end

T.test("http: diagnostics, open buffers and a path outside the workspace", function()
  local path, buf = dirty_buffer("diag.rs")
  local ns = vim.api.nvim_create_namespace("acp-test-diag")
  vim.diagnostic.set(ns, buf, {
    {
      lnum = 2,
      col = 4,
      message = "cannot find function `old`",
      severity = vim.diagnostic.severity.ERROR,
      source = "rustc",
    },
  })
  vim.fn.setpos("'<", { buf, 1, 1, 0 })
  vim.fn.setpos("'>", { buf, 2, 3, 0 })
  local chat = T.open_chat("http", dir)
  T.eq(
    "end_turn",
    agent_turn(chat, {
      { type = "mcpCall", tool = "diagnostics", arguments = { path = path }, saveAs = "d" },
      { type = "text", text = "DIAG<{{d}}>\n" },
      { type = "mcpCall", tool = "open_buffers", saveAs = "b" },
      { type = "text", text = "BUFS<{{b}}>\n" },
      { type = "mcpCall", tool = "read_file", arguments = { path = "/etc/passwd" }, saveAs = "x" },
      { type = "text", text = "OUT<{{x}}>" },
    }),
    "stop reason"
  )
  local text = T.text(chat.bufnr)
  T.contains(text, "cannot find function `old`", "diagnostic message")
  T.contains(text, '"severity":"error"', "severity")
  T.contains(text, '"line":3', "1-based line")
  T.contains(text, '"modified":true', "modified flag")
  T.contains(text, '"selection":{', "last visual selection")
  T.contains(text, "OUT<error:", "outside path refused")
  T.contains(text, "outside the workspace", "named why")
end)

T.test("editor_tools = false offers no server", function()
  local chat = T.open_chat("off", dir)
  T.eq(
    "end_turn",
    agent_turn(chat, {
      { type = "text", text = "SERVERS<{{mcpServers}}>" },
    }),
    "stop reason"
  )
  T.contains(T.text(chat.bufnr), "SERVERS<[]>", "no editor server")
end)

T.run()
