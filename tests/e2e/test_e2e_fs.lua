-- End to end: the agent's fs calls go through open buffers.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

T.setup_fake({
  fs = {
    turns = {
      {
        match = "read",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/read.txt", line = 2, limit = 2 },
            expect = { result = { content = "TWO unsaved\nthree\n" } },
          },
          { type = "text", text = "read ok" },
        },
      },
      {
        match = "write clean",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/clean.txt", content = "a\nB\nc\n" },
            expect = { ok = true },
          },
          { type = "text", text = "write ok" },
        },
      },
      {
        match = "write dirty",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/dirty.txt", content = "from agent\n" },
            expect = { ok = true },
          },
          { type = "text", text = "write ok" },
        },
      },
      {
        match = "read wiped",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/wiped.txt" },
            expect = { result = { content = "one\ntwo\nold unsaved\n" } },
          },
          { type = "text", text = "read ok" },
        },
      },
      {
        match = "write wiped",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/wiped.txt", content = "one\ntwo\nold unsaved\nagent line\n" },
            expect = { ok = true },
          },
          { type = "text", text = "write ok" },
        },
      },
    },
  },
}, dir)

T.require_binaries()

T.test("fs read returns the unsaved buffer text with exact line/limit", function()
  T.write_file(dir .. "/read.txt", "one\ntwo\nthree\nfour\n")
  vim.cmd("edit " .. dir .. "/read.txt")
  vim.api.nvim_buf_set_lines(0, 1, 2, false, { "TWO unsaved" })
  local chat = T.open_chat("fs", dir)
  T.eq("end_turn", T.turn(chat, "read it"), "stop reason")
  T.not_contains(T.text(chat.bufnr), "EXPECTATION FAILED", "agent saw the buffer")
  T.contains(T.text(chat.bufnr), "read ok", "turn went on")
end)

T.test("fs write to an unmodified open buffer updates and saves it", function()
  local path = dir .. "/clean.txt"
  T.write_file(path, "a\nb\nc\n")
  vim.cmd("edit " .. path)
  local buf = vim.api.nvim_get_current_buf()
  local chat = T.open_chat("fs", dir)
  T.eq("end_turn", T.turn(chat, "write clean"), "stop reason")
  T.not_contains(T.text(chat.bufnr), "EXPECTATION FAILED", "write succeeded")
  T.eq({ "a", "B", "c" }, T.lines(buf), "buffer updated")
  T.eq(false, vim.bo[buf].modified, "buffer saved")
  T.eq("a\nB\nc\n", T.read_file(path), "disk == content")
end)

T.test("fs write to a modified buffer merges, loses nothing and tells the user", function()
  local path = dir .. "/dirty.txt"
  T.write_file(path, "disk\n")
  vim.cmd("edit " .. path)
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "my unsaved work" })
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m, ...)
    msgs[#msgs + 1] = m
    return orig(m, ...)
  end
  local chat = T.open_chat("fs", dir)
  T.eq("end_turn", T.turn(chat, "write dirty"), "stop reason")
  T.wait(function()
    return T.find_line(chat.bufnr, "merged into your unsaved buffer") ~= nil
  end, "merged note")
  vim.notify = orig
  -- Both sides changed the only line: a conflict keeps both.
  T.eq({ "<<<<<<< buffer", "my unsaved work", "=======", "from agent", ">>>>>>> agent" }, T.lines(buf), "both sides kept")
  T.eq(true, vim.bo[buf].modified, "still modified")
  T.eq("from agent\n", T.read_file(path), "the agent's content is on disk")
  local told = false
  for _, m in ipairs(msgs) do
    if m:find("unsaved changes", 1, true) then
      told = true
    end
  end
  T.truthy(told, "the user was told")
end)

T.test("a buffer wiped and opened again is not taken for the one the agent read", function()
  -- The backend keeps the text of the buffer the agent read, at its tick.
  -- A new buffer of the file starts its changedtick over; when it reaches
  -- the old count, a merge made on the old text must not be applied to it.
  local path = dir .. "/wiped.txt"
  T.write_file(path, "one\ntwo\n")
  vim.cmd("edit " .. path)
  local old = vim.api.nvim_get_current_buf()
  for i = 1, 30 do
    vim.api.nvim_buf_set_lines(old, 2, -1, false, { "scratch " .. i })
  end
  vim.api.nvim_buf_set_lines(old, 2, -1, false, { "old unsaved" })
  local old_tick = vim.api.nvim_buf_get_changedtick(old)
  local chat = T.open_chat("fs", dir)
  T.eq("end_turn", T.turn(chat, "read wiped"), "stop reason")
  T.not_contains(T.text(chat.bufnr), "EXPECTATION FAILED", "the agent read the unsaved buffer")
  vim.cmd("bwipeout! " .. old)
  vim.cmd("edit " .. path)
  local buf = vim.api.nvim_get_current_buf()
  while vim.api.nvim_buf_get_changedtick(buf) < old_tick - 1 do
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "one" })
  end
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "new unsaved" })
  T.eq(old_tick, vim.api.nvim_buf_get_changedtick(buf), "the new buffer at the old buffer's changedtick")
  T.eq("end_turn", T.turn(chat, "write wiped"), "stop reason")
  T.not_contains(T.text(chat.bufnr), "EXPECTATION FAILED", "write succeeded")
  local lines = T.lines(buf)
  T.truthy(vim.tbl_contains(lines, "new unsaved"), "the user's line in the new buffer survives: " .. vim.inspect(lines))
  T.truthy(vim.tbl_contains(lines, "agent line"), "the agent's line is merged in: " .. vim.inspect(lines))
  T.eq(true, vim.bo[buf].modified, "still unsaved")
end)

T.run()
