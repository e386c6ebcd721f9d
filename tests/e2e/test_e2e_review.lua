-- End to end: agent edits reviewed hunk by hunk in the real buffers: the
-- hunks drawn, rejects and accepts, agent edits merged into unsaved edits,
-- undo and redo, conflicts, edits the watcher catches, the review list.
-- Several chats on one file: test_e2e_review_chats.lua; permission
-- previews and created files: test_e2e_review_created.lua.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local R = assert(loadfile(vim.fn.getcwd() .. "/tests/e2e/review_helpers.lua"))(T)

local dir = R.dir
local NINE = R.NINE
local THREE = R.THREE
local review = R.review
local NOTES = R.NOTES
local marks = R.marks
local rows_with = R.rows_with
local virt_text = R.virt_text
local focus = R.focus
local open_file = R.open_file
local edited = R.edited
local counted = R.counted

T.test("a disk edit reported by a tool call diff reloads the unmodified buffer and shows its hunks", function()
  local n, buf = counted(function()
    return edited("three.txt", "edit three", 3)
  end)
  -- The backend owns the sync: one instruction, one reply; drawing the
  -- review_changed event asks nothing.
  T.eq({ "disk reloaded" }, n.applies, "one instruction for the disk edit")
  T.eq({}, n.asked, "no acp.merge, no acp.review_file")
  T.eq(vim.split(THREE, "\n", { trimempty = true }), T.lines(buf), "buffer reloaded")
  T.eq(false, vim.bo[buf].modified, "not modified")
  T.eq({ 1, 4, 7 }, rows_with(buf, "AcpReviewAdd"), "added lines highlighted")
  T.eq({ "l2", "l5", "l8" }, virt_text(buf), "removed lines as virtual lines")
  local signs = 0
  for _, m in ipairs(marks(buf)) do
    if m[4].sign_text then
      signs = signs + 1
    end
  end
  T.eq(3, signs, "one sign per changed line")
  -- ]h / [h move between hunks.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  review.jump(1)
  T.eq(2, vim.api.nvim_win_get_cursor(0)[1], "next hunk")
  review.jump(1)
  T.eq(5, vim.api.nvim_win_get_cursor(0)[1], "next hunk again")
  review.jump(-1)
  T.eq(2, vim.api.nvim_win_get_cursor(0)[1], "previous hunk")
end)

T.test("rejecting one hunk of three restores exactly that hunk on disk and in the buffer", function()
  local buf, path = edited("reject.txt", "edit reject", 3)
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd("Acp reject")
  local want = "l1\nL2 agent\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n"
  T.wait(function()
    return T.read_file(path) == want
  end, "hunk 2 restored on disk")
  T.eq(vim.split(want, "\n", { trimempty = true }), T.lines(buf), "and in the buffer")
  T.eq(false, vim.bo[buf].modified, "buffer saved with the disk")
  T.wait(function()
    return #rows_with(buf, "AcpReviewAdd") == 2
  end, "two hunks left")
  T.eq({ 1, 7 }, rows_with(buf, "AcpReviewAdd"), "the other hunks stay")
end)

T.test("an agent edit to a buffer with unsaved edits keeps both; one undo step undoes only the agent's", function()
  local buf, path = open_file("unsaved.txt", NINE)
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "L1 mine" })
  local chat = T.open_chat("review", dir)
  local n = counted(function()
    T.eq("end_turn", T.turn(chat, "edit unsaved"), "stop reason")
    T.wait(function()
      return T.lines(buf)[8] == "L8 agent"
    end, "agent edit merged")
  end)
  -- The prompt carried the unsaved buffer's text and tick, so the backend's
  -- one instruction holds the merge (without it: stale, then merged).
  T.eq({ "disk merged" }, n.applies, "one instruction for the disk edit")
  T.eq({}, n.asked, "no acp.merge asked by Lua")
  T.eq("L1 mine", T.lines(buf)[1], "the user's edit stays")
  T.eq(true, vim.bo[buf].modified, "still modified")
  T.eq("l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n", T.read_file(path), "disk has the agent's text only")
  focus(buf)
  T.wait(function()
    return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 7 })
  end, "only the agent's line is shown as its hunk")
  vim.cmd("silent undo")
  T.eq("L1 mine", T.lines(buf)[1], "undo keeps the user's edit")
  T.eq("l8", T.lines(buf)[8], "undo removed the agent's edit")
end)

T.test("an agent that read the unsaved buffer and writes it back with a change merges with no conflict", function()
  local buf, path = open_file("readback.txt", "hello world\n")
  vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "unsaved line" })
  local chat = T.open_chat("review", dir)
  focus(buf)
  -- What Lua asks of the backend for this write: the backend merges it
  -- and sends one instruction (acp.edits.fs.apply); the review_changed event
  -- carries the hunks, so drawing them asks nothing.
  local n, stop = counted(function()
    local stop = T.turn(chat, "edit read back")
    T.wait(function()
      return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 0 })
    end, "the agent's line is drawn as its hunk")
    return stop
  end)
  T.eq("end_turn", stop, "stop reason (the agent read the buffer)")
  T.eq({ "write merged" }, n.applies, "one instruction for the write")
  T.eq({}, n.asked, "no acp.merge, no acp.review_file: nothing asked of the backend")
  T.eq({ "hello ACP", "unsaved line" }, T.lines(buf), "no conflict block: the base is what the agent read")
  T.eq(true, vim.bo[buf].modified, "still modified")
  T.eq("hello ACP\nunsaved line\n", T.read_file(path), "disk has the agent's text")
end)

T.test("an agent that saw the unsaved buffer in a mention writes it back with no conflict", function()
  local buf, path = open_file("mentioned.txt", "hello world\n")
  vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "unsaved line" })
  local chat = T.open_chat("review", dir)
  T.eq(
    "end_turn",
    T.turn_blocks(chat, {
      { type = "text", text = "edit mentioned" },
      { type = "resource", resource = { uri = vim.uri_from_fname(path), text = "hello world\nunsaved line\n" } },
    }),
    "stop reason"
  )
  T.wait(function()
    return T.lines(buf)[1] == "hello ACP"
  end, "agent edit merged: " .. vim.inspect(T.lines(buf)))
  T.eq({ "hello ACP", "unsaved line" }, T.lines(buf), "no conflict block: the base is what the mention embedded")
end)

T.test("undo then redo of an agent merge keeps its review", function()
  local buf, path = open_file("undoredo.txt", NINE)
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "L1 mine" })
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, "edit undo redo"), "stop reason")
  focus(buf)
  T.wait(function()
    return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 7 })
  end, "the agent's line merged and drawn")
  local function changed()
    vim.api.nvim_exec_autocmds("TextChanged", { buffer = buf, modeline = false })
  end
  vim.cmd("silent undo")
  changed()
  T.eq("l8", T.lines(buf)[8], "undo removed the agent's line")
  T.wait(function()
    local e = review.files[path]
    return e and next(e.chats) == nil and #rows_with(buf, "AcpReviewAdd") == 0
  end, "nothing to review after the undo")
  vim.cmd("silent redo")
  changed()
  T.eq("L8 agent", T.lines(buf)[8], "redo brought it back")
  T.eq("L1 mine", T.lines(buf)[1], "the user's line stays")
  T.wait(function()
    return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 7 })
  end, "the agent's line is highlighted again")
  vim.cmd("Acp review")
  local listed = false
  for _, it in ipairs(vim.fn.getqflist()) do
    listed = listed or vim.api.nvim_buf_get_name(it.bufnr) == path
  end
  T.truthy(listed, ":Acp review lists it again")
  focus(buf)
  vim.api.nvim_win_set_cursor(0, { 8, 0 })
  vim.cmd("Acp reject")
  T.wait(function()
    return T.lines(buf)[8] == "l8"
  end, "and its hunk can be rejected")
  T.eq("L1 mine", T.lines(buf)[1], "the user's line kept")
end)

T.test("undo of an agent's reload of an unmodified buffer stays undone, and redo brings its review back", function()
  local buf, path = edited("undoreload.txt", "edit undo reload", 1)
  local function changed()
    vim.api.nvim_exec_autocmds("TextChanged", { buffer = buf, modeline = false })
  end
  vim.cmd("silent undo")
  changed()
  T.eq("l8", T.lines(buf)[8], "undo took the agent's line back")
  T.wait(function()
    local e = review.files[path]
    return e and next(e.chats) == nil and #rows_with(buf, "AcpReviewAdd") == 0
  end, "nothing to review after the undo")
  T.eq(
    vim.split(NINE, "\n", { trimempty = true }),
    T.lines(buf),
    "the review did not reload the agent's text over the undo"
  )
  T.eq(true, vim.bo[buf].modified, "the buffer differs from its file")
  vim.cmd("silent redo")
  changed()
  T.eq("L8 agent", T.lines(buf)[8], "redo brought it back")
  T.wait(function()
    return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 7 })
  end, "its hunk is drawn again")
  T.eq("l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n", T.read_file(path), "the disk kept the agent's text")
end)

T.test(
  ":write after an agent change updated an unmodified buffer saves without asking, and the update saved nothing",
  function()
    local path = dir .. "/reloaddisk.txt"
    T.write_file(path, NINE)
    local old = os.time() - 60
    assert(vim.uv.fs_utime(path, old, old))
    vim.cmd("edit " .. vim.fn.fnameescape(path))
    local buf = vim.api.nvim_get_current_buf()
    -- No write command may run: saving the text read could clobber a later
    -- agent write.
    local writes = {}
    local orig_cmd = vim.cmd
    vim.cmd = function(c, ...)
      if type(c) == "string" and c:match("write") then
        writes[#writes + 1] = c
      end
      return orig_cmd(c, ...)
    end
    local chat = T.open_chat("review", dir)
    local ok, err = pcall(function()
      T.eq("end_turn", T.turn(chat, "edit reload disk"), "stop reason")
      T.wait(function()
        return T.lines(buf)[8] == "L8 agent"
      end, "buffer updated")
    end)
    vim.cmd = orig_cmd
    assert(ok, err)
    T.eq(false, vim.bo[buf].modified, "unmodified")
    T.eq({}, writes, "the update saved nothing")
    -- Neovim notices the new file time (as on entering the window); the
    -- review answers its FileChangedShell, the buffer already has the text.
    vim.cmd("checktime " .. buf)
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "L1 mine" })
    vim.api.nvim_buf_call(buf, function()
      vim.cmd("silent write")
    end)
    T.eq(false, vim.bo[buf].modified, "saved")
    T.eq("L1 mine\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n", T.read_file(path), "both edits on disk")
  end
)

T.test(":write after an agent change was merged into unsaved edits saves without asking", function()
  -- Neovim asks "The file has been changed since reading it" when the disk
  -- moved on since its last read; here the buffer already holds that change.
  for _, case in ipairs({ { "savedisk.txt", "edit save disk" }, { "savefs.txt", "edit save fs" } }) do
    -- An old file: the agent's write surely gets another modification time.
    local path = dir .. "/" .. case[1]
    T.write_file(path, NINE)
    local old = os.time() - 60
    assert(vim.uv.fs_utime(path, old, old))
    vim.cmd("edit " .. vim.fn.fnameescape(path))
    local buf = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "L1 mine" })
    local chat = T.open_chat("review", dir)
    T.eq("end_turn", T.turn(chat, case[2]), "stop reason")
    T.wait(function()
      return T.lines(buf)[8] == "L8 agent"
    end, case[1] .. ": agent edit merged")
    T.eq("l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n", T.read_file(path), case[1] .. ": disk has the agent's text")
    vim.cmd("checktime " .. buf)
    vim.api.nvim_buf_call(buf, function()
      vim.cmd("silent write")
    end)
    T.eq(false, vim.bo[buf].modified, case[1] .. ": saved")
    T.eq("L1 mine\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n", T.read_file(path), case[1] .. ": both edits on disk")
  end
end)

T.test("an overlapping edit becomes a conflict hunk and no user line is lost", function()
  local buf = open_file("conflict.txt", NINE)
  vim.api.nvim_buf_set_lines(buf, 4, 5, false, { "L5 mine" })
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, "edit conflict"), "stop reason")
  T.wait(function()
    return T.find_line(buf, "<<<<<<< buffer") ~= nil
  end, "conflict markers")
  local lines = T.lines(buf)
  T.truthy(vim.tbl_contains(lines, "L5 mine"), "the user's line is kept")
  T.truthy(vim.tbl_contains(lines, "L5 agent"), "the agent's line is there")
  T.eq(true, vim.bo[buf].modified, "still modified")
  T.wait(function()
    return #rows_with(buf, "AcpReviewConflictOurs") == 1 and #rows_with(buf, "AcpReviewConflictTheirs") == 1
  end, "conflict drawn")
  focus(buf)
  -- Reject = keep the user's side.
  vim.api.nvim_win_set_cursor(0, { T.find_line(buf, "L5 mine"), 0 })
  vim.cmd("Acp reject")
  T.eq(vim.split("l1\nl2\nl3\nl4\nL5 mine\nl6\nl7\nl8\nl9", "\n"), T.lines(buf), "the user's side stays, markers gone")
  T.wait(function()
    return #marks(buf) == 0
  end, "nothing left to review; notes: " .. vim.inspect(NOTES))
end)

T.test("accepting a conflict keeps the agent's side as one undo step", function()
  local buf = open_file("theirs.txt", NINE)
  vim.api.nvim_buf_set_lines(buf, 4, 5, false, { "L5 mine" })
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, "edit theirs"), "stop reason")
  T.wait(function()
    return #rows_with(buf, "AcpReviewConflictTheirs") == 1
  end, "conflict drawn")
  focus(buf)
  vim.api.nvim_win_set_cursor(0, { T.find_line(buf, "<<<<<<< buffer"), 0 })
  vim.cmd("Acp accept")
  T.eq(vim.split("l1\nl2\nl3\nl4\nL5 agent\nl6\nl7\nl8\nl9", "\n"), T.lines(buf), "the agent's side")
  T.wait(function()
    return #marks(buf) == 0
  end, "nothing left to review; notes: " .. vim.inspect(NOTES))
  vim.cmd("silent undo")
  T.truthy(T.find_line(buf, "<<<<<<< buffer"), "undo brings the conflict back")
end)

T.test("an edit that would conflict while conflicts are open waits for them, then is reviewed on its own", function()
  local buf, path = open_file("pending.txt", NINE)
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "L2 mine" })
  vim.api.nvim_buf_set_lines(buf, 4, 5, false, { "L5 mine" })
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, "edit pending one"), "stop reason")
  T.wait(function()
    return #rows_with(buf, "AcpReviewConflictTheirs") == 1
  end, "conflict drawn")
  local with_conflict = T.lines(buf)
  -- The agent reads its own side of the unsaved conflict (the turn fails
  -- if the read differs), then changes the user's other line: merging that
  -- now would open a conflict next to the open one, so it waits.
  T.eq("end_turn", T.turn(chat, "edit pending two"), "the agent read its side, not our markers")
  T.wait(function()
    return review.pending[review.normalize(path)] ~= nil
  end, "the newer edit waits; notes: " .. vim.inspect(NOTES))
  T.eq(with_conflict, T.lines(buf), "the buffer is left as it was")
  T.eq({}, rows_with(buf, "AcpReviewAdd"), "no hunk of the newer text is drawn on the older one")
  focus(buf)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  vim.cmd("Acp reject")
  T.truthy(
    NOTES[#NOTES]:find("accept or reject the conflicts first", 1, true),
    "told what to do: " .. tostring(NOTES[#NOTES])
  )
  -- Rejecting the open conflict keeps the user's line and merges the newer
  -- edit: its line 8 cleanly, its line 2 as a new conflict.
  vim.api.nvim_win_set_cursor(0, { T.find_line(buf, "L5 mine"), 0 })
  vim.cmd("Acp reject")
  -- The backend sends the newer edit once it has the report without
  -- conflict blocks (one instruction, acp.edits.fs.apply); the command returns
  -- once it is merged.
  T.eq({
    "l1",
    "<<<<<<< buffer",
    "L2 mine",
    "=======",
    "L2 agent",
    ">>>>>>> agent",
    "l3",
    "l4",
    "L5 mine",
    "l6",
    "l7",
    "L8 agent",
    "l9",
  }, T.lines(buf), "the user's side, then the newer edit merged")
  T.eq(nil, review.pending[review.normalize(path)], "nothing waits")
  vim.api.nvim_win_set_cursor(0, { T.find_line(buf, "L2 mine"), 0 })
  vim.cmd("Acp reject")
  T.wait(function()
    return vim.deep_equal({ 7 }, rows_with(buf, "AcpReviewAdd"))
  end, "only the newer edit's line 8 is under review (the lines the user kept are theirs)")
  vim.cmd("Acp reject file")
  T.wait(function()
    return T.lines(buf)[8] == "l8"
  end, "the newer edit undone; notes: " .. vim.inspect(NOTES))
  T.eq(vim.split("l1\nL2 mine\nl3\nl4\nL5 mine\nl6\nl7\nl8\nl9", "\n"), T.lines(buf), "the user's lines stay")
  -- Saved conflict blocks are the file's text: the agent reads them as is.
  local blocks = { "<<<<<<< buffer", "mine", "=======", "agent", ">>>>>>> agent" }
  T.eq({ "agent" }, review.agent_view(blocks), "unsaved blocks read as the agent's side")
  T.write_file(path, table.concat(blocks, "\n") .. "\n")
  T.eq(blocks, review.agent_view(blocks, path), "saved blocks read as they are")
end)

T.test("rejecting a hunk of a buffer with unsaved edits keeps them and leaves the disk alone", function()
  local buf, path = open_file("keepmine.txt", NINE)
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "L1 mine" })
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, "edit keep mine"), "stop reason")
  T.wait(function()
    return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 7 })
  end, "the agent's hunk drawn")
  focus(buf)
  vim.api.nvim_win_set_cursor(0, { 8, 0 })
  vim.cmd("Acp reject")
  T.wait(function()
    return T.lines(buf)[8] == "l8"
  end, "the agent's line is undone in the buffer")
  T.eq("L1 mine", T.lines(buf)[1], "the user's unsaved edit stays")
  T.eq(true, vim.bo[buf].modified, "still unsaved")
  T.eq("l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n", T.read_file(path), "the disk is left to the user's next save")
  T.wait(function()
    return #marks(buf) == 0
  end, "nothing left to review; notes: " .. vim.inspect(NOTES))
end)

T.test("an edit with no diff content is still caught by the watcher", function()
  local buf = edited("nodiff.txt", "edit nodiff", 1)
  T.eq("L3 unseen", T.lines(buf)[3], "buffer reloaded")
  T.eq({ 2 }, rows_with(buf, "AcpReviewAdd"), "hunk drawn")
  T.eq({ "l3" }, virt_text(buf), "removed line shown")
end)

T.test("an edit with no diff written right after its tool call is announced still shows its hunk", function()
  local buf = edited("instant.txt", "edit instant", 1)
  T.eq("L3 instant", T.lines(buf)[3], "buffer reloaded")
  T.eq({ 2 }, rows_with(buf, "AcpReviewAdd"), "hunk drawn")
  T.eq({ "l3" }, virt_text(buf), "removed line shown")
end)

T.test("a file with unsaved edits rewritten in place, read half written, shows only the agent's line", function()
  local buf, path = open_file("torn.txt", NINE)
  vim.api.nvim_buf_set_lines(buf, 8, 9, false, { "L9 mine" })
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, "edit torn"), "stop reason")
  T.wait(function()
    return T.lines(buf)[3] == "L3 torn"
  end, "the agent's line merged; notes: " .. vim.inspect(NOTES))
  T.wait(function()
    return #rows_with(buf, "AcpReviewAdd") > 0
  end, "the hunk drawn")
  -- The "before" is the file as it was when the prompt was sent (read then:
  -- the buffer held the user's text), not the empty file the client saw.
  T.eq({ 2 }, rows_with(buf, "AcpReviewAdd"), "only the agent's line is the agent's")
  focus(buf)
  vim.cmd("Acp reject file")
  T.wait(function()
    return T.lines(buf)[3] == "l3"
  end, "the agent's line undone")
  T.eq(vim.split(NINE:gsub("l9\n$", "L9 mine\n"), "\n", { trimempty = true }), T.lines(buf), "every other line kept")
  T.eq(true, vim.bo[buf].modified, "still unsaved")
  T.eq("l1\nl2\nL3 torn\nl4\nl5\nl6\nl7\nl8\nl9\n", T.read_file(path), "the disk is left to the user's next save")
end)

T.test(
  "the buffers a prompt goes out with: the file's text of modified buffers, none of outside and CRLF; saves reported",
  function()
    local _, inside = open_file("copy-in.txt", NINE)
    local in_buf = vim.api.nvim_get_current_buf()
    local mod_buf, modified = open_file("copy-mod.txt", NINE)
    vim.api.nvim_buf_set_lines(mod_buf, 0, 1, false, { "typed" })
    local _, crlf = open_file("copy-crlf.txt", "a\r\nb\r\n")
    local elsewhere = T.tmpdir() .. "/outside.txt"
    T.write_file(elsewhere, NINE)
    vim.cmd("edit " .. vim.fn.fnameescape(elsewhere))
    local function real(path)
      return vim.uv.fs_realpath(path) or path
    end
    local sent = {}
    for _, b in ipairs(require("acp.edits.fs").prompt_buffers(dir)) do
      sent[b.path] = b
    end
    local function get(path)
      local b = sent[real(path)]
      return b and (b.disk or b.text)
    end
    T.eq(NINE, get(inside), "an unmodified buffer inside the chat's directory")
    T.eq(NINE, get(modified), "a modified buffer holds the user's text: the copy is its file's")
    T.eq(true, sent[real(modified)].text:find("^typed\n") ~= nil, "with the buffer's text")
    T.eq(nil, get(crlf), "a CRLF buffer's lines are not the file's bytes")
    T.eq(nil, get(elsewhere), "outside the chat's directory")
    -- A save is reported: the backend drops the file's texts at the prompts
    -- (later differences are the user's).
    local backend = require("acp.rpc.backend")
    local notify, running = backend.notify, backend.running
    local calls = {}
    backend.running = function()
      return true
    end
    backend.notify = function(method, params)
      calls[#calls + 1] = { method, params }
      return true
    end
    local ok, err = pcall(vim.api.nvim_buf_call, in_buf, function()
      vim.cmd("silent write")
    end)
    backend.notify, backend.running = notify, running
    assert(ok, err)
    T.eq({ { "acp.file_saved", { path = real(inside) } } }, calls, "the save is reported")
  end
)

T.test("an agent's write to one file reloads no other buffer", function()
  local chat = T.open_chat("review", dir)
  local other_buf, other = open_file("other.txt", NINE)
  local _, target = open_file("target.txt", NINE)
  -- Another program changes other.txt; Neovim has not looked yet.
  T.write_file(other, "changed elsewhere\n")
  -- A bare :checktime run from an event is postponed by Neovim until it
  -- waits for keys (never, in this test), then checks EVERY buffer: spy on
  -- the commands run instead of waiting for the reload.
  local ran = {}
  local orig_cmd = vim.cmd
  vim.cmd = function(c, ...)
    ran[#ran + 1] = type(c) == "string" and c or vim.inspect(c)
    return orig_cmd(c, ...)
  end
  local ok, err = pcall(require("acp.events").dispatch, {
    { type = "file_edited", chat_id = chat.chat_id, path = target, buffer_updated = false },
  })
  vim.cmd = orig_cmd
  assert(ok, err)
  for _, c in ipairs(ran) do
    T.truthy(not c:match("checktime%s*$"), "no check of every buffer: " .. c)
  end
  T.eq(
    vim.split(NINE, "\n", { trimempty = true }),
    T.lines(other_buf),
    "the other buffer is left to Neovim's own checks"
  )
end)

T.test("lines the user saves in a reviewed buffer are not the agent's and survive a reject", function()
  local buf, path = edited("typed.txt", "edit typed", 3)
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "typed by me" })
  vim.cmd("silent write")
  T.wait(function()
    local r = review.files[path] and review.files[path].review
    return r and r.baseline and r.baseline:find("typed by me", 1, true)
  end, "the saved line is in the review's baseline: it is the user's")
  T.wait(function()
    return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 2, 5, 8 })
  end, "hunks moved down by the user's line, which is not highlighted")
  vim.api.nvim_win_set_cursor(0, { 3, 0 })
  vim.cmd("Acp reject")
  T.wait(
    function()
      return T.read_file(path) == "typed by me\nl1\nl2\nl3\nl4\nL5 agent\nl6\nl7\nL8 agent\nl9\n"
    end,
    "the first hunk rejected, the user's line kept: "
      .. vim.inspect(T.read_file(path))
      .. vim.inspect(NOTES)
      .. vim.inspect(T.lines(buf))
  )
end)

T.test("a line typed (unsaved) next to an agent hunk survives rejecting the hunk", function()
  local buf, path = edited("nexttyping.txt", "edit next to typing", 1)
  -- Typed right below the agent's line; TextChanged reports it after the
  -- debounce (acp.user_edit), as typing does.
  vim.api.nvim_buf_set_lines(buf, 5, 5, false, { "typed next to it" })
  vim.api.nvim_exec_autocmds("TextChanged", { buffer = buf, modeline = false })
  T.wait(function()
    local r = review.files[path] and review.files[path].review
    return r and r.current and r.current:find("typed next to it", 1, true) ~= nil
  end, "the review knows the typed line")
  T.eq({ 4 }, rows_with(buf, "AcpReviewAdd"), "the typed line is not shown as the agent's")
  vim.api.nvim_win_set_cursor(0, { 5, 0 })
  vim.cmd("Acp reject")
  T.wait(function()
    return T.lines(buf)[5] == "l5"
  end, "the agent's line is undone; notes: " .. vim.inspect(NOTES))
  T.eq(vim.split("l1\nl2\nl3\nl4\nl5\ntyped next to it\nl6\nl7\nl8\nl9", "\n"), T.lines(buf), "the typed line stays")
  T.eq(true, vim.bo[buf].modified, "still unsaved")
  T.wait(function()
    return #marks(buf) == 0
  end, "nothing left to review")
end)

T.test(":[range]Acp accept accepts the hunks in the range only", function()
  local buf = edited("range.txt", "edit range", 3)
  vim.cmd("1,5Acp accept")
  T.wait(function()
    return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 7 })
  end, "hunks 1 and 2 accepted")
  T.eq({ "l8" }, virt_text(buf), "the last hunk still shows its removed line")
  vim.api.nvim_win_set_cursor(0, { 8, 0 })
  local msgs, orig = {}, vim.notify
  vim.notify = function(m)
    msgs[#msgs + 1] = m
  end
  vim.cmd("Acp accept")
  local ok, err = pcall(T.wait, function()
    return #marks(buf) == 0 and #msgs > 0
  end, "all accepted, and said so")
  vim.notify = orig
  assert(ok, err)
  T.contains(msgs[#msgs], "range.txt: no agent changes left to review", "the last accept says the review is done")
  T.eq(vim.split(THREE, "\n", { trimempty = true }), T.lines(buf), "accepting changes no text")
end)

T.test(":Acp review lists every changed file with its hunk count", function()
  T.write_file(dir .. "/qf1.txt", NINE)
  T.write_file(dir .. "/qf2.txt", NINE)
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, "edit two files"), "stop reason")
  T.eq("end_turn", T.turn(chat, "edit qf2"), "stop reason")
  local items
  T.wait(function()
    vim.cmd("Acp review")
    items = vim.fn.getqflist()
    return #items == 2
  end, "two files in the quickfix list")
  local texts = {}
  for _, it in ipairs(items) do
    texts[#texts + 1] =
      { vim.fn.fnamemodify(vim.api.nvim_buf_get_name(it.bufnr), ":t"), it.lnum, it.text:match("^[^,]+, %d+ hunks?") }
  end
  T.eq({ { "qf1.txt", 2, "modified, 3 hunks" }, { "qf2.txt", 9, "modified, 1 hunk" } }, texts, "entries")
end)

T.test("open diff on a tool call block opens the file with its inline diff", function()
  T.write_file(dir .. "/open.txt", NINE)
  local chat = T.open_chat("review", dir)
  chat:show()
  T.eq("end_turn", T.turn(chat, "edit open"), "stop reason")
  T.wait(function()
    return review.files[dir .. "/open.txt"] ~= nil and review.files[dir .. "/open.txt"].chat_id ~= nil
  end, "review of open.txt known")
  T.cursor_on(chat, "Edit open.txt")
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("gd", true, false, true), "x", false)
  local buf = vim.api.nvim_get_current_buf()
  T.eq(dir .. "/open.txt", vim.api.nvim_buf_get_name(buf), "the file is open")
  T.eq(2, vim.api.nvim_win_get_cursor(0)[1], "at its first hunk")
  T.eq({ 1, 4, 7 }, rows_with(buf, "AcpReviewAdd"), "with its inline diff")
end)

T.run()
