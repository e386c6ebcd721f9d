-- End to end: the review when events and commands cross and when several
-- chats edit one file; each case is a seed of the data safety property
-- (test_e2e_datasafety.lua) that once broke it, replayed by hand.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local R = assert(loadfile(vim.fn.getcwd() .. "/tests/e2e/review_helpers.lua"))(T)

local dir = R.dir
local NINE = R.NINE
local review = R.review
local latest = R.latest
local NOTES = R.NOTES
local rows_with = R.rows_with
local focus = R.focus
local open_file = R.open_file
local edited = R.edited
local fs_text = R.fs_text
local counted = R.counted

-- Data-safety seed 537081754, case 9: the agent's disk edit opened a
-- conflict and a hunk; its `review_changed` was still on its way when the
-- user ran `:Acp accept file` (the previous review of the file had said
-- "nothing left"), so the command resolved the conflict and told no chat:
-- the hunk stayed under review.
T.test(":Acp accept file decides an agent edit whose review_changed has not arrived yet", function()
  local buf, path = open_file("lagging.txt", NINE)
  vim.api.nvim_buf_set_lines(buf, 4, 5, false, { "L5 mine" })
  local chat = T.open_chat("review", dir)
  -- The backend's events for this file are held back until after the
  -- command, as a busy editor's event loop would.
  local held, orig = {}, review.on_changed
  review.on_changed = function(chat_id, ev)
    if ev.path and ev.path:find("lagging.txt", 1, true) then
      held[#held + 1] = { chat_id, ev }
      return
    end
    return orig(chat_id, ev)
  end
  local ok, err = pcall(function()
    T.eq("end_turn", T.turn(chat, "edit lagging"), "stop reason")
    T.wait(function()
      return T.find_line(buf, "<<<<<<< buffer") ~= nil and #(review.items[buf] or {}) > 0
    end, "the conflict is in the buffer")
    -- The held events say what the backend reviews now.
    T.wait(function()
      local r = held[#held] and held[#held][2].review
      return #(type(r) == "table" and r.hunks or {}) == 2
    end, "the backend reviews the conflict and the hunk")
    focus(buf)
    vim.cmd("Acp accept file")
  end)
  review.on_changed = orig
  for _, h in ipairs(held) do
    orig(h[1], h[2])
  end
  assert(ok, err)
  T.eq(vim.split("l1\nl2\nl3\nl4\nL5 agent\nl6\nl7\nL8 agent\nl9", "\n"), T.lines(buf), "the agent's side")
  T.wait(function()
    local r = latest(chat.chat_id, path)
    return #(r and r.hunks or {}) == 0
  end, "nothing left under review")
end)

-- Data-safety seed 141793484, case 63: two chats' reviews of one file. The
-- second agent's write was merged around the first agent's line, so the
-- second chat's review holds that line in its baseline; its reject, taken
-- whole by the unmodified buffer, brought back the line the first chat's
-- reject had just removed.
T.test("rejecting a file two chats edited removes both agents' lines; one chat's reject keeps the other's", function()
  local buf, path = open_file("twochats.txt", NINE)
  local first = T.open_chat("review", dir)
  local second = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(second, "read twochats"), "the second agent reads")
  T.eq("end_turn", T.turn(first, "write twochats first"), "the first agent writes")
  T.eq("end_turn", T.turn(second, "write twochats second"), "the second agent writes back its read")
  local both = "L0 first\nl1\nl2\nl3\nl4\nl5\nL5b second\nl6\nl7\nl8\nl9\n"
  T.wait(function()
    return T.read_file(path) == both and not vim.bo[buf].modified
  end, "both agents' lines saved")
  focus(buf)
  -- The first chat's hunk alone: the second agent's line stays.
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  T.wait(function()
    return #(review.items[buf] or {}) > 0
  end, "hunks drawn")
  local function hunks(chat)
    local r = latest(chat.chat_id, path)
    return r and r.hunks or {}
  end
  T.wait(function()
    return #hunks(first) == 1 and #hunks(second) == 1
  end, "both chats' reviews arrived")
  T.eq(1, #hunks(first), "the first chat reviews its line")
  T.eq(1, #hunks(second), "the second chat reviews its line")
  require("acp.rpc.backend").notify("acp.review_reject", { chat_id = first.chat_id, path = path })
  local without_first = "l1\nl2\nl3\nl4\nl5\nL5b second\nl6\nl7\nl8\nl9\n"
  vim.wait(5000, function()
    return T.read_file(path) == without_first
  end, 10)
  T.eq(without_first, T.read_file(path), "the first agent's line rejected, the second's kept")
  T.eq(vim.split(without_first, "\n", { trimempty = true }), T.lines(buf), "the buffer too")
  -- Then the file, in both chats: back to the text before either agent.
  vim.cmd("Acp reject file")
  vim.wait(5000, function()
    return T.read_file(path) == NINE and #hunks(second) == 0
  end, 10)
  T.eq(NINE, T.read_file(path), "both agents' lines rejected")
  T.eq(0, #hunks(second), "nothing left under review")
  T.eq(vim.split(NINE, "\n", { trimempty = true }), T.lines(buf), "the buffer too")
end)

-- Data-safety seed 117216006, case 131: a range over a saved conflict block
-- and the agent hunk right after it. Resolving the block joined that hunk
-- to the kept agent line above (its id changed), and the reject named the
-- old id: "hunk 3 ... no longer exists", the agent's line stayed.
T.test(":[range]Acp reject over a conflict block and the hunk after it decides both", function()
  local buf, path = open_file("rangeblock.txt", "b1\n")
  local first = T.open_chat("review", dir)
  local second = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(second, "read rangeblock"), "the second agent reads")
  T.eq("end_turn", T.turn(first, "write rangeblock first"), "the first agent writes")
  T.eq("end_turn", T.turn(second, "write rangeblock second"), "the second agent writes back its read")
  T.wait(function()
    return T.find_line(buf, ">>>>>>> agent") ~= nil
  end, "the two agents' lines in a conflict block")
  focus(buf)
  vim.cmd("silent write")
  T.eq("end_turn", T.turn(first, "write rangeblock after"), "the first agent adds a line after the saved block")
  T.wait(function()
    return T.find_line(buf, "A6 after") ~= nil and #rows_with(buf, "AcpReviewAdd") > 0
  end, "its line drawn")
  focus(buf)
  local row = T.find_line(buf, ">>>>>>> agent")
  vim.cmd(("%d,%dAcp reject"):format(row, row + 1))
  vim.wait(5000, function()
    return vim.deep_equal({ "b1", "A1 first" }, T.lines(buf))
  end, 10)
  T.eq({ "b1", "A1 first" }, T.lines(buf), "the block's buffer side stays, the agent's line after it goes")
  T.wait(function()
    local r = latest(first.chat_id, path)
    return #(r and r.hunks or {}) == 0
  end, "nothing left under review in the first chat; notes: " .. vim.inspect(NOTES))
end)

-- Data-safety seed 230495178, case 7: the second agent's write, merged
-- into the buffer with a conflict, removed the first agent's line; the
-- first chat's review was not told (the review shown, the second chat's,
-- had the buffer's text, so the buffer counted as reported) and kept that
-- line as a hunk, until an undo and redo reported the buffer.
T.test("another chat's merge into a buffer reaches the first chat's review, and undo then redo keeps it", function()
  local buf, path = open_file("undoboth.txt", "b1\nb2\n")
  local first = T.open_chat("review", dir)
  local second = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(first, "write undoboth a3"), "the first agent writes")
  T.eq("end_turn", T.turn(second, "read undoboth"), "the second agent reads")
  T.eq("end_turn", T.turn(first, "write undoboth a4"), "the first agent writes again")
  T.eq("end_turn", T.turn(second, "write undoboth second"), "the second agent writes back its read")
  local merged = { "<<<<<<< buffer", "A4 first", "=======", "B1 second", ">>>>>>> agent", "b1", "b2" }
  T.wait(function()
    return vim.deep_equal(merged, T.lines(buf))
  end, "the merge: a conflict on top, the first agent's line 2 removed by the second")
  local function added(chat)
    local r = latest(chat.chat_id, path)
    local out = {}
    for _, h in ipairs(r and r.hunks or {}) do
      vim.list_extend(out, h.new_lines or {})
    end
    return out
  end
  vim.wait(5000, function()
    return vim.deep_equal({ "A4 first" }, added(first))
  end, 10)
  T.eq({ "A4 first" }, added(first), "the first chat reviews the line the buffer has, not the removed one")
  focus(buf)
  vim.cmd("silent undo")
  vim.api.nvim_exec_autocmds("TextChanged", { buffer = buf, modeline = false })
  vim.cmd("silent redo")
  vim.api.nvim_exec_autocmds("TextChanged", { buffer = buf, modeline = false })
  T.eq(merged, T.lines(buf), "redo brings the merge back")
  vim.wait(1000, function()
    return false
  end, 50)
  T.eq({ "A4 first" }, added(first), "the same review after undo and redo")
end)

-- Data-safety seed 588734806, case 110: the buffer showed the second
-- chat's review when the first chat's `review_changed` arrived; until the
-- refresh that follows, the hunks drawn were still the second chat's, and
-- `:Acp reject` sent their ids to the first chat ("hunk ... no longer
-- exists", or another line of the first chat's when the ids matched).
T.test(":Acp reject acts on the chat whose review is drawn, also when another chat's event just arrived", function()
  local buf, path = open_file("shownchat.txt", NINE)
  local first = T.open_chat("review", dir)
  local second = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(second, "read shownchat"), "the second agent reads")
  T.eq("end_turn", T.turn(first, "write shownchat first"), "the first agent writes")
  T.eq("end_turn", T.turn(second, "write shownchat second"), "the second agent writes back its read")
  local both = "L0 first\nl1\nl2\nl3\nl4\nl5\nL5b second\nl6\nl7\nl8\nl9\n"
  T.wait(function()
    return T.read_file(path) == both and not vim.bo[buf].modified
  end, "both agents' lines saved")
  local row = T.find_line(buf, "L5b second")
  T.wait(function()
    local entry = review.files[path]
    return entry and entry.chat_id == second.chat_id and vim.tbl_contains(rows_with(buf, "AcpReviewAdd"), row - 1)
  end, "the second chat's review drawn")
  -- The first chat's event arrives; its refresh has not run yet.
  local r
  T.wait(function()
    r = latest(first.chat_id, path)
    return r ~= nil and #r.hunks == 1
  end, "the first chat reviews its line")
  review.on_changed(first.chat_id, { path = path, summary = { hunks = 1 }, review = r })
  focus(buf)
  vim.api.nvim_win_set_cursor(0, { row, 0 })
  vim.cmd("Acp reject")
  local without_second = "L0 first\n" .. NINE
  vim.wait(5000, function()
    return T.read_file(path) == without_second
  end, 10)
  T.eq(
    without_second,
    T.read_file(path),
    "the second agent's line rejected, the first's kept; notes: " .. vim.inspect(NOTES)
  )
  T.eq(vim.split(without_second, "\n", { trimempty = true }), T.lines(buf), "the buffer too")
end)

-- Data-safety seed 62102677, case 657: `:1,2Acp reject` over the second
-- chat's line and the conflict block below it, the second chat's review
-- drawn. The resolution's events made the first chat's review the newest,
-- so the one drawn, and the range decided that chat's hunks at those rows:
-- the second agent's line stayed.
T.test(":[range]Acp reject decides for the chat drawn when the resolution's events favour another", function()
  local buf, path = open_file("flip.txt", "b1\nb2\n")
  local first = T.open_chat("review", dir)
  local second = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(second, "write flip second"), "the second agent writes its line on top")
  T.eq("end_turn", T.turn(first, "read flip first"), "the first agent reads")
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "b1 mine" })
  T.eq("end_turn", T.turn(first, "write flip first"), "the first agent writes over the user's line")
  T.wait(function()
    return T.find_line(buf, "<<<<<<< buffer") == 2 and T.find_line(buf, "A end") ~= nil
  end, "a conflict block under the second agent's line, the first agent's last line merged")
  local function hunks(chat)
    local r = latest(chat.chat_id, path)
    return r and r.hunks or {}
  end
  T.wait(function()
    return #hunks(second) == 1 and #hunks(first) > 0
  end, "both chats review the file")
  -- The second chat's review drawn, as the user looks at it.
  review.on_changed(second.chat_id, { path = path, summary = { hunks = 1 }, review = latest(second.chat_id, path) })
  T.wait(function()
    return review.files[path].review_chat == second.chat_id and vim.tbl_contains(rows_with(buf, "AcpReviewAdd"), 0)
  end, "the second chat's line drawn")
  -- The first chat's event is the last to arrive once the block is resolved.
  local sync = require("acp.edits.review.sync")
  local settle = sync.settle
  sync.settle = function(b)
    local ok = settle(b)
    local r = latest(first.chat_id, path)
    review.on_changed(first.chat_id, { path = path, summary = { hunks = #(r and r.hunks or {}) }, review = r })
    return ok
  end
  focus(buf)
  local ok, err = pcall(vim.cmd, "1,2Acp reject")
  sync.settle = settle
  assert(ok, err)
  vim.wait(5000, function()
    return #hunks(second) == 0
  end, 10)
  T.eq({}, hunks(second), "the second agent's line rejected; notes: " .. vim.inspect(NOTES))
  T.eq({ "b1 mine", "b2", "A end" }, T.lines(buf), "the user's side kept, the first agent's last line too")
end)

-- Data-safety seed 134340754, case 314: the second agent's write back,
-- merged and saved, removed the first agent's line; only the second chat's
-- review learned the new text. `:Acp reject all` merged the first chat's
-- restore against its stale text (a conflict), and the second chat's
-- restore into that conflict nested the blocks.
T.test("another chat's saved write reaches the first chat's review; :Acp reject all opens no conflict", function()
  local buf, path = open_file("rejectall.txt", "b1\nb2\n")
  local first = T.open_chat("review", dir)
  local second = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(first, "write rejectall a1"), "the first agent writes")
  T.eq("end_turn", T.turn(second, "read rejectall"), "the second agent reads")
  T.eq("end_turn", T.turn(first, "write rejectall a4"), "the first agent writes again")
  T.eq("end_turn", T.turn(second, "write rejectall second"), "the second agent writes back its read")
  local merged = "b1\nB1 second\nb2\nA4 first\n"
  T.wait(function()
    return T.read_file(path) == merged and not vim.bo[buf].modified
  end, "the merge saved: the second agent removed the first agent's line 3")
  T.wait(function()
    local r = latest(first.chat_id, path)
    return r ~= nil and r.current == merged
  end, "the first chat's review has the file's text")
  focus(buf)
  vim.cmd("Acp reject all")
  vim.wait(5000, function()
    local lines = T.lines(buf)
    return T.read_file(path) == fs_text(buf)
      and not vim.tbl_contains(lines, "A4 first")
      and not vim.tbl_contains(lines, "B1 second")
  end, 10)
  T.eq(
    nil,
    T.find_line(buf, "<<<<<<< buffer"),
    "no conflict block: " .. vim.inspect(T.lines(buf)) .. vim.inspect(NOTES)
  )
  T.eq(nil, T.find_line(buf, "A4 first"), "the first agent's line rejected")
  T.eq(
    nil,
    T.find_line(buf, "B1 second"),
    "the second agent's line rejected: " .. vim.inspect(T.lines(buf)) .. vim.inspect(NOTES)
  )
end)

T.run()
