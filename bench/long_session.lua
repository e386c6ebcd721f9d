-- The stored session bench/tui_long.lua loads: one session of a given
-- number of turns in the fake agent's session store, each like a real turn
-- (a prompt, ~30 lines of markdown with a code block and a table, a plan, a
-- read with its output and an edit with a diff), and the chat's own
-- transcript of it, as acp.nvim writes one for a session that ran in it.
--
--   local long_session = dofile(vim.fn.getcwd() .. "/bench/long_session.lua")
--   local s = long_session.write(turns) -- s.dir, s.store, s.scenario
--   local err, bytes = long_session.write_transcript(s.dir)
local M = {}

local function text(t)
  return { type = "text", text = t }
end

local function answer(i)
  local l = {
    ("## Step %d: the parser"):format(i),
    "",
    ("The parser reads tokens from the **lexer** and builds the tree for turn %d."):format(i),
    "It keeps a stack of open nodes; each `close` token pops one and attaches it.",
    "",
    "- the lexer yields `Token` values",
    "- the parser never backtracks",
    "- errors carry the byte offset",
    "",
    "```rust",
    "fn parse(tokens: &[Token]) -> Result<Node, Error> {",
    "    let mut stack = vec![Node::root()];",
    "    for t in tokens {",
    "        match t.kind {",
    "            Kind::Open => stack.push(Node::new(t)),",
    "            Kind::Close => attach(&mut stack)?,",
    "            _ => stack.last_mut().unwrap().push(t),",
    "        }",
    "    }",
    "    finish(stack)",
    "}",
    "```",
    "",
    "| case | before | after |",
    "|---|---|---|",
    "| empty input | panic | `Ok(root)` |",
    "| unclosed node | hang | `Err(Unclosed)` |",
    "",
    "Next I will run the tests and fix what fails.",
    ("End of answer %d."):format(i),
  }
  return table.concat(l, "\n") .. "\n"
end

--- Writes the session store and the fake agent's scenario into a new
--- directory (its `src/` the files the turns read and edit).
---@param turns integer
---@return {dir: string, store: string, scenario: string}
function M.write(turns)
  local dir = vim.fn.resolve(vim.fn.tempname())
  vim.fn.mkdir(dir .. "/src", "p")

  local history = {}
  for i = 1, turns do
    history[#history + 1] =
      { sessionUpdate = "user_message_chunk", content = text(("Turn %d: explain the parser and fix it"):format(i)) }
    history[#history + 1] = { sessionUpdate = "agent_message_chunk", content = text(answer(i)) }
    history[#history + 1] = {
      sessionUpdate = "plan",
      entries = {
        { content = "Read the parser", priority = "high", status = "completed" },
        { content = "Fix the unclosed node", priority = "high", status = "completed" },
        { content = "Run the tests", priority = "medium", status = "pending" },
      },
    }
    history[#history + 1] = {
      sessionUpdate = "tool_call",
      toolCallId = "r" .. i,
      title = "Read src/parser.rs",
      kind = "read",
      status = "completed",
      locations = { { path = dir .. "/src/parser.rs" } },
      content = { { type = "content", content = text("fn parse() {}\nfn finish() {}\n") } },
    }
    history[#history + 1] = {
      sessionUpdate = "tool_call",
      toolCallId = "e" .. i,
      title = "Edit src/parser.rs",
      kind = "edit",
      status = "completed",
      content = {
        {
          type = "diff",
          path = dir .. "/src/parser.rs",
          oldText = "fn parse() {}\nfn finish() {}\n",
          newText = ("fn parse() { /* %d */ }\nfn finish() {}\n"):format(i),
        },
      },
    }
  end
  local store = dir .. "/store.json"
  local scenario = dir .. "/scenario.json"
  do
    local f = assert(io.open(store, "w"))
    f:write(vim.json.encode({ { sessionId = "long", cwd = dir, title = "a long session", history = history } }))
    f:close()
    f = assert(io.open(scenario, "w"))
    f:write(
      vim.json.encode({ sessionStore = store, replayUserMessages = true, turns = { { steps = { text("ok") } } } })
    )
    f:close()
  end
  return { dir = dir, store = store, scenario = scenario }
end

--- The chat's own transcript of the session, as the backend writes one for
--- a session that ran in acp.nvim: the session's events as a chat gets them
--- (taken from a load of it by another agent name, closed once the replay
--- is whole), a turn end after each turn, under the state directory.
---@param dir string the session's directory (M.write)
---@return string? err, integer? bytes the transcript's size
function M.write_transcript(dir)
  local events = require("acp.events")
  local dispatch = events.dispatch
  local captured, chat_id = {}, nil
  events.dispatch = function(evs)
    for _, ev in ipairs(evs or {}) do
      if ev.type == "session" and ev.chat_id == chat_id then
        local r = vim.deepcopy(ev)
        r.chat_id = nil
        captured[#captured + 1] = r
      end
    end
    return dispatch(evs)
  end
  local c = require("acp").open({ agent = "long_capture", cwd = dir, load_session_id = "long", show = false })
  chat_id = c and c.chat_id
  local ok = c and vim.wait(60000, function()
    return c.session_id ~= nil
  end, 5)
  events.dispatch = dispatch
  if c then
    c:close()
  end
  if not ok then
    return "the capture load did not finish"
  end
  local lines = {
    vim.json.encode({
      type = "transcript",
      version = require("acp.rpc.protocol").TRANSCRIPT_VERSION,
      agent_name = "long",
      session_id = "long",
      cwd = dir,
      opening = "new",
      opened_at = os.time(),
    }),
    vim.json.encode({ type = "session_started", session_id = "long" }),
  }
  local turn_end = vim.json.encode({ type = "turn_ended", stop_reason = "end_turn" })
  for i, r in ipairs(captured) do
    local e = r.change and r.change.change == "entry_added" and r.change.entry
    if i > 1 and type(e) == "table" and e.type == "user_message" then
      lines[#lines + 1] = turn_end
    end
    lines[#lines + 1] = vim.json.encode(r)
  end
  lines[#lines + 1] = turn_end
  local path = require("acp.agents.history").path_for("long", "long")
  vim.fn.mkdir(vim.fn.fnamemodify(path, ":h"), "p")
  vim.fn.writefile(lines, path)
  return nil, vim.fn.getfsize(path)
end

return M
