-- End to end: permission diffs previewed before the user allows them, and
-- files the agent creates: reviewed as created, rejected (deleted, with
-- the directories made for them), denied.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local R = assert(loadfile(vim.fn.getcwd() .. "/tests/e2e/review_helpers.lua"))(T)

local dir = R.dir
local NINE = R.NINE
local review = R.review
local rows_with = R.rows_with
local virt_text = R.virt_text
local open_file = R.open_file
local answer = R.answer
local qf_entry = R.qf_entry

T.test("previewing a permission's diff changes nothing until allowed", function()
  local buf, path = open_file("preview.txt", NINE)
  local chat = T.open_chat("review", dir)
  assert(chat:send({ { type = "text", text = "preview" } }))
  T.wait_text(chat, "preview the change in its buffer")
  T.cursor_on(chat, "Edit preview.txt")
  chat:open_review(vim.api.nvim_win_get_cursor(0)[1] - 1)
  T.eq(buf, vim.api.nvim_get_current_buf(), "the real buffer is shown")
  T.eq({ 2 }, rows_with(buf, "AcpReviewPreviewDelete"), "the line to be replaced is marked")
  T.eq({ "L3 proposed", "extra" }, virt_text(buf), "the new lines are virtual")
  T.eq(false, vim.bo[buf].modified, "buffer not modified")
  T.eq(NINE, T.read_file(path), "disk unchanged")
  T.eq(vim.split(NINE, "\n", { trimempty = true }), T.lines(buf), "buffer text unchanged")
  -- Allow: the edit happens, the preview gives way to the review.
  local req = require("acp.chat.view.permission").for_chat(chat.chat_id)[1]
  require("acp.chat.view.permission").respond_nth(req, 1)
  T.wait(function()
    return T.read_file(path):find("L3 proposed", 1, true) ~= nil
  end, "edit applied after allowing")
  T.wait(function()
    return vim.deep_equal(rows_with(buf, "AcpReviewAdd"), { 2, 3 })
  end, "review drawn after the edit")
  T.eq({}, rows_with(buf, "AcpReviewPreviewDelete"), "preview gone")
end)

T.test("previewing a new file, then allowing it: reviewed as created, and rejecting it deletes the file", function()
  local path = dir .. "/fresh.txt"
  local chat = T.open_chat("review", dir)
  assert(chat:send({ { type = "text", text = "preview new file" } }))
  T.wait_text(chat, "preview the change in its buffer")
  T.cursor_on(chat, "Write fresh.txt")
  chat:open_review(vim.api.nvim_win_get_cursor(0)[1] - 1)
  T.eq(path, vim.api.nvim_buf_get_name(0), "the preview shows the file's buffer")
  T.eq(0, vim.fn.filereadable(path), "nothing written by the preview")
  answer(chat, "allow_once")
  T.wait_text(chat, "wrote fresh.txt")
  T.eq("a\nb\nc\n", T.read_file(path), "the agent's file")
  T.wait(function()
    local e = review.files[path]
    return e and e.chats[chat.chat_id] and e.chats[chat.chat_id].status == "created"
  end, "reviewed as created: " .. vim.inspect(review.files[path]))
  vim.cmd("Acp review")
  T.contains(qf_entry(path) or "", "created, 1 hunk, +3 -0", "listed as created")
  local orig = require("acp.edits.review.actions").confirm_delete
  require("acp.edits.review.actions").confirm_delete = function()
    return true
  end
  require("acp.chat.view.tool_call").jump({ path = path })
  vim.cmd("Acp reject file")
  T.wait(function()
    return vim.fn.filereadable(path) == 0
  end, "file deleted, not emptied: " .. vim.inspect(vim.fn.filereadable(path) == 1 and T.read_file(path)))
  require("acp.edits.review.actions").confirm_delete = orig
end)

T.test("previewing a new file that is then denied leaves no buffer and no file", function()
  local path = dir .. "/never.txt"
  local chat = T.open_chat("review", dir)
  assert(chat:send({ { type = "text", text = "deny new file" } }))
  T.wait_text(chat, "preview the change in its buffer")
  T.cursor_on(chat, "Write never.txt")
  chat:open_review(vim.api.nvim_win_get_cursor(0)[1] - 1)
  T.eq(path, vim.api.nvim_buf_get_name(0), "the preview shows the file's buffer")
  local win = vim.api.nvim_get_current_win()
  answer(chat, "reject_once")
  T.wait_text(chat, "did not write never.txt")
  T.wait(function()
    return vim.fn.bufexists(path) == 0
  end, "the preview's buffer is gone")
  T.truthy(vim.api.nvim_win_is_valid(win), "its window stays")
  T.eq(0, vim.fn.filereadable(path), "no file")
end)

T.test(
  "rejecting created files on screen keeps the window, removes the directories made for them, refreshes :Acp review",
  function()
    local chat = T.open_chat("review", dir)
    T.eq("end_turn", T.turn(chat, "create nested"), "stop reason")
    local tool, fsfile = dir .. "/made/by/tool.txt", dir .. "/fsmade/deep/fs.txt"
    T.wait(function()
      return review.files[tool] and review.files[tool].chat_id and review.files[fsfile] and review.files[fsfile].chat_id
    end, "both created files under review")
    vim.cmd("Acp review")
    T.truthy(qf_entry(tool) and qf_entry(fsfile), "both listed")
    local orig = require("acp.edits.review.actions").confirm_delete
    require("acp.edits.review.actions").confirm_delete = function()
      return true
    end
    for _, path in ipairs({ tool, fsfile }) do
      require("acp.chat.view.tool_call").jump({ path = path })
      local win, wins = vim.api.nvim_get_current_win(), #vim.api.nvim_tabpage_list_wins(0)
      vim.cmd("Acp reject file")
      T.wait(function()
        return vim.fn.filereadable(path) == 0 and vim.api.nvim_buf_get_name(vim.api.nvim_win_get_buf(win)) ~= path
      end, path .. " deleted and no longer shown")
      T.truthy(vim.api.nvim_win_is_valid(win), "the window that showed it stays")
      T.eq(wins, #vim.api.nvim_tabpage_list_wins(0), "no window closed")
      T.wait(function()
        return qf_entry(path) == nil
      end, "the quickfix list no longer lists " .. path)
    end
    require("acp.edits.review.actions").confirm_delete = orig
    T.wait(function()
      return vim.fn.isdirectory(dir .. "/made") == 0
    end, "the directories made by the agent's tool are gone")
    T.wait(function()
      return vim.fn.isdirectory(dir .. "/fsmade") == 0
    end, "the directories made for fs/write_text_file are gone")
    T.eq(1, vim.fn.isdirectory(dir), "the workspace stays")
  end
)

T.test("rejecting a created file asks before deleting it", function()
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, "create file"), "stop reason")
  local path = dir .. "/created.txt"
  T.wait(function()
    return review.files[path] ~= nil and review.files[path].chat_id ~= nil
  end, "created file under review")
  local asked
  local orig = require("acp.edits.review.actions").confirm_delete
  require("acp.edits.review.actions").confirm_delete = function(p)
    asked = p
    return true
  end
  vim.cmd("edit " .. path)
  vim.cmd("Acp reject file")
  T.wait(function()
    return vim.fn.filereadable(path) == 0
  end, "file deleted after confirmation")
  require("acp.edits.review.actions").confirm_delete = orig
  T.eq(path, asked, "the user was asked")
end)

T.run()
