-- `make demo` as a user lives it: two turns of the demo agent (which sends
-- the same kinds of tool calls each turn), permission keys pressed right
-- after sending, `:help acp`.
local H = dofile(vim.fn.getcwd() .. "/tests/tui/helpers.lua")

--- Neovim running scripts/demo.lua (debug build) in a scratch project.
local function demo(opts)
  opts = opts or {}
  local project = H.tmpdir()
  return H.nvim({
    args = { "--clean" },
    init = H.root .. "/scripts/demo.lua",
    width = opts.width,
    height = opts.height,
    env = { ACP_DEMO_PROFILE = "debug", ACP_DEMO_PROJECT = project },
  })
end

--- The transcript of the current chat (in the Neovim under test).
local function transcript(t)
  return t:lua([[
    local chat = require("acp.chat").list[1]
    return table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n")
  ]])
end

--- Send a prompt from Insert mode, answer the permission with `1` right
--- away (still in the prompt, still in Insert mode), wait for the turn end.
local function turn(t, text, ends)
  t:type(text)
  t:keys("C-s")
  local screen = t:wait_for("Permission needed", "the permission prompt, on screen")
  H.contains(screen, "-- INSERT --", "still in Insert mode in the prompt")
  if screen:find("The demo agent reads this", 1, true) then
    -- At 180 columns the README's first line wraps: the rest keeps its indent.
    assert(
      screen:find("│  file,", 1, true) or screen:find("┤  file,", 1, true),
      "wrapped tool output keeps its indent:\n" .. screen
    )
  end
  t:keys("1")
  return t:wait_for(function(s)
    return H.count(s, "— end turn —") >= ends and s:find("That was the tour", 1, true) ~= nil
  end, "the end of turn " .. ends .. " at the bottom of the chat", 30000)
end

H.test("the demo runs two turns, each drawn in its own place", function()
  local t = demo()
  local ok, err = pcall(function()
    t:wait_for("mode: Code", "the demo session to start")
    local screen = t:screen()
    H.not_contains(screen, "Press ENTER", "no hit-Enter prompt at start")
    -- Not in the command line, where "-- INSERT --" hid it at once.
    H.contains(screen, "Welcome to the acp.nvim demo", "the welcome line, in the transcript")
    H.contains(screen, "-- INSERT --", "typing in the prompt")
    local one = turn(t, "hello", 1)
    H.contains(one, "answered: Allow", "the digit answered the permission")
    H.eq(
      "",
      t:lua([[return table.concat(vim.api.nvim_buf_get_lines(require("acp.chat").list[1].prompt_buf, 0, -1, false))]]),
      "the digit did not go into the prompt"
    )
    local two = turn(t, "hello again", 1)
    H.contains(two, "answered: Allow", "turn 2's permission, answered in turn 2")
    local text = transcript(t)
    H.eq(2, H.count(text, "— end turn —"), "two turns ended")
    H.eq(2, H.count(text, "✓ edit · Create acp-demo.txt"), "both turns' edits completed, each in its block")
    H.eq(2, H.count(text, "Plan (4/4 done)"), "each turn shows its plan")
    H.eq(0, H.count(text, "✗ edit · Create"), "turn 1's edit did not turn into a failure")
    -- The second turn's blocks are below its prompt.
    local you2 = assert(text:find("hello again", 1, true))
    local edits = {}
    for pos in text:gmatch("()✓ edit · Create acp%-demo%.txt") do
      edits[#edits + 1] = pos
    end
    assert(edits[1] < you2 and edits[2] > you2, "one edit block per turn, in its turn")
  end)
  t:kill()
  assert(ok, err)
end)

H.test(":help acp works in the demo, which starts without a hit-Enter prompt at 120 columns", function()
  local t = demo({ width = 120, height = 40 })
  local ok, err = pcall(function()
    t:wait_for("mode: Code", "the demo session to start")
    H.not_contains(t:screen(), "Press ENTER", "no hit-Enter prompt at start")
    t:keys("Escape")
    t:type(":help acp")
    t:keys("Enter")
    local screen = t:wait_for("acp.txt", "the help file")
    H.not_contains(screen, "E149", "help tags exist")
  end)
  t:kill()
  assert(ok, err)
end)
