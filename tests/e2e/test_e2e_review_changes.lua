-- End to end: one place to review a turn (`:Acp changes`, issue 29): every
-- file the agent changed with its hunks inline, decided from that buffer.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
vim.o.columns = 160

local NINE = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n"
-- Lines 2, 5 and 8 changed: three hunks.
local THREE = "l1\nL2 agent\nl3\nl4\nL5 agent\nl6\nl7\nL8 agent\nl9\n"
local B = "l1\nl2\nL3 b\nl4\nl5\nl6\nl7\nl8\nl9\n"

local function write(path, content)
  return { type = "writeDisk", path = path, content = content }
end

T.setup_fake({
  changes = {
    turns = {
      {
        match = "edit ab",
        steps = { write("a.txt", THREE), write("b.txt", B), { type = "text", text = "edited a and b" } },
      },
      {
        match = "edit c",
        steps = { write("c.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nL9 c\n"), { type = "text", text = "edited c" } },
      },
      {
        match = "edit a more",
        steps = {
          write("a.txt", "L1 more\nL2 agent\nl3\nl4\nL5 agent\nl6\nl7\nL8 agent\nl9\n"),
          { type = "text", text = "more" },
        },
      },
      {
        -- What the agent controls, hostile: a file name with a newline, an
        -- escape sequence in a line, a created file of 1,000 lines.
        match = "edit hostile",
        steps = {
          write("odd\nname.txt", "one\n"),
          write("big.txt", "\27[2Jcleared?\n" .. string.rep("line\n", 999)),
          { type = "text", text = "hostile" },
        },
      },
      { steps = { { type = "text", text = "echo: {{prompt}}" } } },
    },
  },
}, T.tmpdir())
T.require_binaries()

local changes = require("acp.edits.review.changes")
local ns = require("acp.edits.review").ns
local NOTES = {}
local orig_notify = vim.notify
vim.notify = function(m, ...)
  NOTES[#NOTES + 1] = m
  return orig_notify(m, ...)
end

--- A fresh directory with the files the scenario edits, and a chat in it.
local function setup()
  local dir = T.tmpdir()
  for _, name in ipairs({ "a.txt", "b.txt", "c.txt" }) do
    T.write_file(dir .. "/" .. name, NINE)
  end
  local chat = T.open_chat("changes", dir)
  return chat, dir
end

--- A turn, and the wait for its edits to be under review (the backend sees
--- the agent's disk writes a moment after they happen, maybe after the
--- turn ended).
local function turn(chat, text, files)
  T.eq("end_turn", T.turn(chat, text), text)
  T.wait(function()
    local n = 0
    -- The reviews as their `review_changed` carried them (the plugin asks
    -- the backend none).
    for path, entry in pairs(require("acp.edits.review").files) do
      local rv = entry.latest and entry.latest[chat.chat_id]
      if type(rv) == "table" and #(rv.hunks or {}) > 0 and vim.tbl_contains(files, vim.fs.basename(path)) then
        -- Its review_changed handled: its hunks have their turn.
        local known = true
        for _, h in ipairs(rv.hunks) do
          known = known and changes.hunk_turn(chat.chat_id, h) ~= nil
        end
        n = n + (known and 1 or 0)
      end
    end
    return n == #files
  end, "the edits of " .. text .. " are under review")
end

local function view_buf()
  local buf = vim.fn.bufnr(changes.NAME)
  assert(buf > 0, "the view exists")
  return buf
end

--- The view's text.
local function view()
  return T.text(view_buf())
end

--- Put the cursor on the first row of the view holding `needle`.
local function cursor_to(needle, after)
  local buf = view_buf()
  local win = assert(vim.fn.win_findbuf(buf)[1], "the view is shown")
  vim.api.nvim_set_current_win(win)
  local from = after and T.find_line(buf, after) or 0
  for i, l in ipairs(T.lines(buf)) do
    if i > from and l:find(needle, 1, true) then
      vim.api.nvim_win_set_cursor(0, { i, 0 })
      return i
    end
  end
  error(("%q not in the view:\n%s"):format(needle, view()))
end

--- 0-based rows of the view with a line highlight.
local function rows_with(group)
  local rows = {}
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(view_buf(), ns, 0, -1, { details = true })) do
    if m[4].line_hl_group == group then
      rows[#rows + 1] = m[2]
    end
  end
  table.sort(rows)
  return rows
end

local function wait_view(needle, why)
  T.wait(function()
    return view():find(needle, 1, true) ~= nil
  end, (why or needle) .. "; view:\n" .. (vim.fn.bufnr(changes.NAME) > 0 and view() or ""))
end

local function wait_file(path, text)
  T.wait(function()
    return T.read_file(path) == text
  end, path .. " is " .. vim.inspect(text) .. "; it is " .. vim.inspect(T.read_file(path)))
end

T.test("nothing under review: the view says so", function()
  setup()
  vim.cmd("Acp changes")
  T.contains(view(), "Nothing of this turn under review", "empty state")
  vim.cmd("Acp changes all")
  T.contains(view(), "No agent edits under review", "empty state of all")
  T.contains(T.lines(view_buf())[1], "0 files", "the counts")
end)

T.test("the turn's files with their hunks inline, highlighted", function()
  local chat = setup()
  turn(chat, "edit ab", { "a.txt", "b.txt" })
  vim.cmd("Acp changes")
  local lines = T.lines(view_buf())
  T.contains(lines[1], "Turn 1", "the scope: " .. lines[1])
  T.contains(lines[1], "2 files, 4 hunks, +4 -4", "the counts: " .. lines[1])
  T.contains(lines[2], "a/r hunk", "the keys")
  local text = view()
  T.contains(text, "a.txt  modified · 3 hunks, +3 -3", "a's header")
  T.contains(text, "b.txt  modified · 1 hunk, +1 -1", "b's header")
  T.contains(text, "@@ -2,1 +2,1 @@\n-l2\n+L2 agent", "a hunk inline")
  T.contains(text, "@@ -3,1 +3,1 @@\n-l3\n+L3 b", "b's hunk")
  T.eq(4, #rows_with("AcpReviewAdd"), "added lines highlighted")
  T.eq(4, #rows_with("AcpReviewDelete"), "removed lines highlighted")
  T.eq(5, vim.api.nvim_win_get_cursor(0)[1], "the cursor on the first hunk")
end)

T.test("a view opened before the turn's reviews arrive puts the cursor on the first hunk once they do", function()
  local chat = setup()
  vim.cmd("Acp changes all")
  T.contains(view(), "No agent edits under review", "empty at first")
  local win = assert(vim.fn.win_findbuf(view_buf())[1], "the view is shown")
  T.eq(1, vim.api.nvim_win_get_cursor(win)[1], "nothing to stand on yet")
  turn(chat, "edit ab", { "a.txt", "b.txt" })
  wait_view("b.txt  modified", "the reviews arrived")
  T.eq(5, vim.api.nvim_win_get_cursor(win)[1], "the cursor on the first hunk")
end)

T.test("accept and reject a hunk from the view; the files tell", function()
  local chat, dir = setup()
  turn(chat, "edit ab", { "a.txt", "b.txt" })
  vim.cmd("Acp changes")
  cursor_to("+L5 agent")
  vim.cmd("normal r")
  wait_file(dir .. "/a.txt", "l1\nL2 agent\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n")
  wait_view("a.txt  modified · 2 hunks", "the rejected hunk left the view")
  T.not_contains(view(), "L5 agent", "its lines are gone")
  cursor_to("+L2 agent")
  vim.cmd("normal a")
  wait_view("a.txt  modified · 1 hunk,", "the accepted hunk left the view")
  T.eq("l1\nL2 agent\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n", T.read_file(dir .. "/a.txt"), "accepted: the text stays")
  -- :Acp reject works in the view too.
  cursor_to("+L8 agent")
  vim.cmd("Acp reject")
  wait_file(dir .. "/a.txt", "l1\nL2 agent\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n")
  T.wait(function()
    return not view():find("a.txt", 1, true)
  end, "a.txt left the view:\n" .. view())
  T.contains(view(), "b.txt", "b stays")
end)

T.test("accept and reject a file, then everything shown", function()
  local chat, dir = setup()
  turn(chat, "edit ab", { "a.txt", "b.txt" })
  vim.cmd("Acp changes")
  cursor_to("b.txt")
  vim.cmd("normal R")
  wait_file(dir .. "/b.txt", NINE)
  T.wait(function()
    return not view():find("b.txt", 1, true)
  end, "b.txt left the view:\n" .. view())
  -- On a file's header, `a` decides the file.
  cursor_to("a.txt")
  vim.cmd("Acp accept file")
  wait_view("Nothing of this turn", "all decided")
  T.eq(THREE, T.read_file(dir .. "/a.txt"), "a accepted")
  -- The same text again: nothing new under review for a; b changed again.
  turn(chat, "edit ab", { "b.txt" })
  turn(chat, "edit c", { "b.txt", "c.txt" })
  vim.cmd("Acp changes 2")
  wait_view("c.txt", "turns 2 on")
  T.contains(view(), "b.txt", "b of turn 2")
  vim.cmd("normal gR")
  wait_file(dir .. "/c.txt", NINE)
  wait_file(dir .. "/b.txt", NINE)
  wait_view("Nothing of these turns", "all rejected")
end)

T.test("the last turn by default, a chosen turn on, or all under review", function()
  local chat = setup()
  turn(chat, "edit ab", { "a.txt", "b.txt" })
  turn(chat, "edit c", { "c.txt" })
  vim.cmd("Acp changes")
  local text = view()
  T.contains(text, "c.txt", "turn 2's file")
  T.not_contains(text, "a.txt", "not turn 1's")
  vim.cmd("Acp changes 1")
  text = view()
  T.contains(T.lines(view_buf())[1], "Turns 1-2", "the scope")
  T.contains(text, "a.txt", "turn 1's")
  T.contains(text, "c.txt", "and turn 2's")
  vim.cmd("Acp changes all")
  T.contains(view(), "All under review", "all")
  T.contains(view(), "b.txt", "b")
  local n = #NOTES
  pcall(vim.cmd, "Acp changes 7")
  T.contains(NOTES[n + 1] or "", "turns 1 to 2", "a turn that does not exist")
end)

T.test("<CR> opens the real buffer at the hunk", function()
  local chat, dir = setup()
  turn(chat, "edit ab", { "a.txt", "b.txt" })
  vim.cmd("Acp changes")
  local view_win = vim.api.nvim_get_current_win()
  cursor_to("+L8 agent")
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "x", false)
  T.eq(dir .. "/a.txt", vim.api.nvim_buf_get_name(0), "the file")
  T.eq(8, vim.api.nvim_win_get_cursor(0)[1], "at the hunk's line")
  T.truthy(vim.api.nvim_win_is_valid(view_win), "the view's window stays")
end)

T.test("the view follows decisions taken elsewhere and new agent edits", function()
  local chat, dir = setup()
  turn(chat, "edit ab", { "a.txt", "b.txt" })
  vim.cmd("Acp changes 1")
  local buf = view_buf()
  local b_row = T.find_line(buf, "b.txt")
  -- The real buffer of a.txt, its second hunk accepted there.
  vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/a.txt"))
  T.wait(function()
    return #T.review_rows(vim.api.nvim_get_current_buf(), "AcpReviewAdd") == 3
  end, "a's review drawn")
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd("Acp accept")
  wait_view("a.txt  modified · 2 hunks", "the view followed the accept")
  T.not_contains(view(), "L5 agent", "the accepted hunk is gone from the view")
  T.eq(b_row - 3, T.find_line(buf, "b.txt"), "b's section moved up by the hunk's rows")
  -- A new agent edit of a (turn 2) shows without reopening the view.
  T.eq("end_turn", T.turn(chat, "edit a more"), "turn 2")
  wait_view("+L1 more", "the new hunk")
  -- Lines 1 and 2 are one hunk now.
  T.contains(view(), "a.txt  modified · 2 hunks, +3 -3", "a's counts")
  T.contains(T.lines(buf)[1], "3 hunks", "the title's counts")
end)

T.test("a conflict block shows as such and is resolved in the real buffer", function()
  local chat, dir = setup()
  -- Unsaved typing on the line the agent changes: a conflict block.
  vim.cmd("edit " .. vim.fn.fnameescape(dir .. "/a.txt"))
  local abuf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(abuf, 4, 5, false, { "L5 mine" })
  turn(chat, "edit ab", { "a.txt", "b.txt" })
  T.wait(function()
    return T.find_line(abuf, "<<<<<<< buffer") ~= nil
  end, "the merge wrote a conflict block:\n" .. T.text(abuf))
  vim.cmd("Acp changes")
  wait_view("conflict at line", "the conflict is shown")
  T.contains(view(), " L5 mine", "the user's side")
  -- a's hunks wait for the conflict: only b's count.
  T.contains(T.lines(view_buf())[1], "2 files, 1 hunk, +1 -1", "the title's counts")
  T.truthy(#rows_with("AcpReviewConflictOurs") > 0, "highlighted as a conflict")
  cursor_to("conflict at line")
  local n = #NOTES
  vim.cmd("normal a")
  T.contains(NOTES[n + 1] or "", "resolve them in the buffer", "not decided from the view")
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("<CR>", true, false, true), "x", false)
  T.eq(abuf, vim.api.nvim_get_current_buf(), "in the real buffer")
  T.eq("<<<<<<< buffer", vim.api.nvim_get_current_line(), "at the conflict")
  vim.cmd("Acp accept")
  T.wait(function()
    return not view():find("conflict at line", 1, true)
  end, "the view followed the resolution:\n" .. view())
end)

T.test("hostile names and lines are shown safely, a huge hunk is cut", function()
  local chat = setup()
  turn(chat, "edit hostile", { "big.txt" })
  vim.cmd("Acp changes")
  wait_view("odd⏎name.txt  created", "the newline shown, not obeyed")
  local text = view()
  T.contains(text, "+␛[2Jcleared?", "the escape shown as a symbol")
  T.contains(text, "… 800 more lines (<CR> opens the file)", "cut after 200 lines")
  T.truthy(#T.lines(view_buf()) < 230, "the view stays small: " .. #T.lines(view_buf()))
  T.contains(text, "big.txt  created · 1 hunk, +1000 -0", "the counts are whole")
end)

T.test("after :Acp restart the view shows no review that ended; q leaves the last window", function()
  local chat = setup()
  turn(chat, "edit ab", { "a.txt", "b.txt" })
  vim.cmd("Acp changes")
  wait_view("b.txt", "listed")
  vim.cmd("Acp restart")
  T.wait(function()
    return chat.status == "ready"
  end, "restarted")
  -- Away and back: drawn anew.
  vim.cmd("enew")
  vim.cmd("buffer " .. view_buf())
  T.contains(view(), "Nothing of this turn under review", "the review ended with the backend")
  vim.cmd("only")
  vim.cmd("normal q")
  T.truthy(vim.api.nvim_get_current_buf() ~= view_buf(), "q showed another buffer in the last window")
end)

T.run()
