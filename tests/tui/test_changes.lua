-- One place to review a turn (`:Acp changes`, issue 29) in a real terminal
-- at 80x24 with the ordinary config: the view's title, keys, file headers
-- and diff lines fit the screen, and a decision there redraws it.
local H = dofile(vim.fn.getcwd() .. "/tests/tui/helpers.lua")

-- Written a line per list item: no final "\n".
local NINE = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9"
local EDIT = {
  turns = {
    {
      match = "edit",
      steps = {
        { type = "writeDisk", path = "a.txt", content = "l1\nL2 agent\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n" },
        { type = "writeDisk", path = "b.txt", content = "l1\nl2\nl3\nL4 agent\nl5\nl6\nl7\nl8\nl9\n" },
        { type = "text", text = "edited a and b" },
      },
    },
  },
}

H.test("at 80x24 the changes view draws a turn's files and follows a decision", function()
  local t = H.nvim({
    agents = { edit = EDIT },
    default = "edit",
    width = 80,
    height = 24,
    files = { ["a.txt"] = NINE, ["b.txt"] = NINE },
  })
  local ok, err = pcall(function()
    t:type(":Acp")
    t:keys("Enter")
    t:wait_for("-- INSERT --", "typing in the prompt")
    t:type("edit please")
    t:keys("C-s")
    t:wait_for("edited a and b", "the turn")
    t:keys("Escape")
    t:type(":Acp changes")
    t:keys("Enter")
    local screen = t:wait_for("b.txt  modified", "the view")
    for _, want in ipairs({
      "Turn 1 · 2 files, 3 hunks, +3 -3",
      -- Beside the chat the view has 47 columns: the short keys line.
      "a/r hunk A/R file gA/gR all <CR> open q",
      "a.txt  modified · 2 hunks, +2 -2",
      "@@ -2,1 +2,1 @@",
      "-l2",
      "+L2 agent",
      "+L8 agent",
      "+L4 agent",
    }) do
      H.contains(screen, want, "on screen")
    end
    -- The cursor is on the first hunk: accept it; the view redraws.
    t:type("a")
    screen = t:wait_for("a.txt  modified · 1 hunk,", "a's header after the accept")
    H.not_contains(screen, "+L2 agent", "the accepted hunk left the view")
    H.contains(screen, "2 files, 2 hunks, +2 -2", "the title's counts")
  end)
  if not ok then
    pcall(function()
      io.write(t:screen() .. "\n")
    end)
  end
  t:kill()
  assert(ok, err)
end)
