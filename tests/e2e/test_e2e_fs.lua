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
  -- One prompt, one agent edit: the steps come with the prompt.
  steps = { turns = { { startsWith = "steps:", steps = { { type = "promptSteps" } } } } },
}, dir)

T.require_binaries()

--- Runs `steps` as one turn of `chat`.
local function agent_turn(chat, steps)
  return T.turn(chat, "steps: " .. vim.json.encode(steps))
end

--- What the plugin tells the user while `fn` runs.
local function told(fn)
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m, ...)
    msgs[#msgs + 1] = tostring(m)
    return orig(m, ...)
  end
  local ok, err = pcall(fn)
  vim.notify = orig
  if not ok then
    error(err, 0)
  end
  return table.concat(msgs, "\n")
end

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
  T.eq(
    { "<<<<<<< buffer", "my unsaved work", "=======", "from agent", ">>>>>>> agent" },
    T.lines(buf),
    "both sides kept"
  )
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

T.test("a line the user saved after the agent read the buffer survives its write back", function()
  -- The agent reads the buffer, the user types a line and saves it with
  -- :w, the agent writes back what it read plus its own line. The save is
  -- the user's text: merged against what the agent read, the user's line
  -- stays (merged, or in a conflict block), never silently dropped.
  local path = dir .. "/saved.txt"
  T.write_file(path, "one\ntwo\nthree\n")
  vim.cmd("edit " .. path)
  local buf = vim.api.nvim_get_current_buf()
  local chat = T.open_chat("steps", dir)
  T.eq(
    "end_turn",
    agent_turn(chat, {
      {
        type = "call",
        method = "fs/read_text_file",
        params = { path = path },
        expect = { result = { content = "one\ntwo\nthree\n" } },
      },
    }),
    "read"
  )
  vim.api.nvim_buf_set_lines(buf, 0, 0, false, { "mine" })
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("silent write")
  end)
  T.eq("mine\none\ntwo\nthree\n", T.read_file(path), "saved")
  T.eq(
    "end_turn",
    agent_turn(chat, {
      {
        type = "call",
        method = "fs/write_text_file",
        params = { path = path, content = "one\ntwo\nthree\nagent\n" },
        expect = { ok = true },
      },
    }),
    "write back"
  )
  T.not_contains(T.text(chat.bufnr), "EXPECTATION FAILED", "the write succeeded")
  T.eq({ "mine", "one", "two", "three", "agent" }, T.lines(buf), "both lines in the buffer")
  T.eq("mine\none\ntwo\nthree\nagent\n", T.read_file(path), "and on disk")
  T.eq(false, vim.bo[buf].modified, "a clean merge is saved")

  -- Where both changed the same lines: a conflict the user resolves.
  T.eq(
    "end_turn",
    agent_turn(chat, {
      {
        type = "call",
        method = "fs/read_text_file",
        params = { path = path },
        expect = { result = { content = "mine\none\ntwo\nthree\nagent\n" } },
      },
    }),
    "read again"
  )
  vim.api.nvim_buf_set_lines(buf, 2, 3, false, { "TWO by me" })
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("silent write")
  end)
  local notes = told(function()
    T.eq(
      "end_turn",
      agent_turn(chat, {
        {
          type = "call",
          method = "fs/write_text_file",
          params = { path = path, content = "mine\none\nTWO by agent\nthree\nagent\n" },
          expect = { ok = true },
        },
      }),
      "write over the saved line"
    )
  end)
  local lines = T.lines(buf)
  T.truthy(vim.tbl_contains(lines, "TWO by me"), "the user's saved line is kept: " .. vim.inspect(lines))
  T.truthy(vim.tbl_contains(lines, "TWO by agent"), "next to the agent's: " .. vim.inspect(lines))
  T.truthy(vim.tbl_contains(lines, "<<<<<<< buffer"), "as a conflict: " .. vim.inspect(lines))
  T.contains(notes, "conflict", "the user is told")
  vim.cmd("bwipeout! " .. buf)
end)

T.test("a blind whole-file write keeps the lines the user typed and saved during the turn", function()
  -- The agent never read the file this turn: its write is merged against
  -- the text the file had when the prompt was sent.
  local path = dir .. "/blind.txt"
  T.write_file(path, "one\ntwo\n")
  vim.cmd("edit " .. path)
  local buf = vim.api.nvim_get_current_buf()
  local chat = T.open_chat("steps", dir)
  local permission = require("acp.chat.view.permission")
  local turns = #(T.turns[chat.chat_id] or {})
  local steps = {
    {
      type = "requestPermission",
      toolCall = { toolCallId = "blind-1", title = "Write " .. path, kind = "edit", status = "pending" },
      onAllow = {
        {
          type = "call",
          method = "fs/write_text_file",
          params = { path = path, content = "one\ntwo\nagent\n" },
          expect = { ok = true },
        },
      },
    },
  }
  assert(chat:send({ { type = "text", text = "steps: " .. vim.json.encode(steps) } }), "prompt refused")
  T.wait(function()
    return permission.for_chat(chat.chat_id)[1] ~= nil
  end, "the permission request", 10000)
  -- During the turn the user types a line and saves.
  vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "mine" })
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("silent write")
  end)
  local req = permission.for_chat(chat.chat_id)[1]
  for i, o in ipairs(req.options) do
    if o.kind == "allow_once" then
      permission.respond_nth(req, i)
    end
  end
  T.wait(function()
    return #(T.turns[chat.chat_id] or {}) > turns
  end, "the turn's end", 30000)
  T.not_contains(T.text(chat.bufnr), "EXPECTATION FAILED", "the write succeeded")
  T.eq({ "one", "mine", "two", "agent" }, T.lines(buf), "the user's saved line and the agent's")
  T.eq("one\nmine\ntwo\nagent\n", T.read_file(path), "on disk too")
  vim.cmd("bwipeout! " .. buf)
end)

T.test("an agent write keeps 'readonly' and 'nomodifiable' and tells the user", function()
  local chat = T.open_chat("steps", dir)
  for _, opt in ipairs({ "readonly", "nomodifiable" }) do
    local path = dir .. "/" .. opt .. ".txt"
    T.write_file(path, "one\n")
    vim.cmd("edit " .. path)
    local buf = vim.api.nvim_get_current_buf()
    vim.cmd("setlocal " .. opt)
    local notes = told(function()
      T.eq(
        "end_turn",
        agent_turn(chat, {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = path, content = "agent\n" },
            expect = { error = true },
          },
        }),
        "write"
      )
    end)
    T.not_contains(T.text(chat.bufnr), "EXPECTATION FAILED", "the agent is answered with an error")
    T.eq({ "one" }, T.lines(buf), opt .. ": the buffer is left alone")
    T.eq("one\n", T.read_file(path), opt .. ": so is the file")
    T.eq(opt == "readonly", vim.bo[buf].readonly, opt .. ": 'readonly' as the user set it")
    T.eq(opt ~= "nomodifiable", vim.bo[buf].modifiable, opt .. ": 'modifiable' as the user set it")
    T.contains(notes, opt, "the user is told, naming the option")
    vim.cmd("bwipeout! " .. buf)
  end
end)

T.test(
  "a reject after a write back from a read before the file's first mention keeps the user's unsaved line",
  function()
    -- The agent reads the unsaved buffer, then names the file in a tool call
    -- (the client snapshots the disk, which lacks the user's line), then
    -- writes what it read plus a line. The write's base is the lines its two
    -- views share; the user's line the agent wrote back is still the user's,
    -- so rejecting the agent's file leaves it.
    local path = dir .. "/mention.txt"
    T.write_file(path, "one\ntwo\n")
    vim.cmd("edit " .. path)
    local buf = vim.api.nvim_get_current_buf()
    vim.api.nvim_buf_set_lines(buf, 1, 1, false, { "mine" })
    local chat = T.open_chat("steps", dir)
    T.eq(
      "end_turn",
      agent_turn(chat, {
        {
          type = "call",
          method = "fs/read_text_file",
          params = { path = path },
          expect = { result = { content = "one\nmine\ntwo\n" } },
        },
        {
          type = "toolCall",
          toolCallId = "m-1",
          title = "Edit mention.txt",
          kind = "edit",
          status = "in_progress",
          locations = { { path = path } },
        },
        { type = "sleep", ms = 300 },
        {
          type = "call",
          method = "fs/write_text_file",
          params = { path = path, content = "one\nmine\ntwo\nagent\n" },
          expect = { ok = true },
        },
      }),
      "read, mention, write"
    )
    T.not_contains(T.text(chat.bufnr), "EXPECTATION FAILED", "the steps ran")
    T.eq({ "one", "mine", "two", "agent" }, T.lines(buf), "merged into the buffer")
    local review = require("acp.edits.review")
    T.wait(function()
      return #(review.items[buf] or {}) > 0
    end, "the agent's hunk drawn")
    require("acp.rpc.backend").notify("acp.review_reject", { chat_id = chat.chat_id, path = path })
    vim.wait(5000, function()
      return not vim.tbl_contains(T.lines(buf), "agent")
    end, 10)
    T.eq({ "one", "mine", "two" }, T.lines(buf), "the agent's line gone, the user's kept")
    vim.cmd("bwipeout! " .. buf)
  end
)

T.test("an agent write into a buffer saved with its conflict block waits instead of nesting it", function()
  -- The user saves a buffer that holds a conflict block (it is no longer
  -- 'modified'), and the agent writes the same lines again: merged, the
  -- new block would sit inside the open one (data-safety seed 1020918746,
  -- case 812, then left marker lines on disk after a reject). It waits for
  -- the open block like a write into a modified buffer.
  local path = dir .. "/savedblock.txt"
  T.write_file(path, "one\ntwo\nthree\n")
  vim.cmd("edit " .. path)
  local buf = vim.api.nvim_get_current_buf()
  local chat = T.open_chat("steps", dir)
  local function read(content)
    return {
      type = "call",
      method = "fs/read_text_file",
      params = { path = path },
      expect = { result = { content = content } },
    }
  end
  local function write(content)
    return {
      type = "call",
      method = "fs/write_text_file",
      params = { path = path, content = content },
      expect = { ok = true },
    }
  end
  T.eq("end_turn", agent_turn(chat, { read("one\ntwo\nthree\n") }), "read")
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "mine" })
  T.eq("end_turn", agent_turn(chat, { write("one\nagent\nthree\n") }), "write over the user's line")
  local block = { "one", "<<<<<<< buffer", "mine", "=======", "agent", ">>>>>>> agent", "three" }
  T.eq(block, T.lines(buf), "a conflict block")
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("silent write")
  end)
  T.eq(false, vim.bo[buf].modified, "saved with the block")
  -- A line before its own, where the user's side of the block starts: the
  -- merge conflicts with the block.
  T.eq("end_turn", agent_turn(chat, { write("one\nagent first\nagent\nthree\n") }), "write next to the block")
  T.not_contains(T.text(chat.bufnr), "EXPECTATION FAILED", "the writes succeeded")
  T.eq(block, T.lines(buf), "the block is left as it was, not nested")
  T.eq(true, vim.bo[buf].modified, "the buffer is no longer the disk's text")
  T.eq("one\nagent first\nagent\nthree\n", T.read_file(path), "the agent's text is on disk")
  local review = require("acp.edits.review")
  T.wait(function()
    return review.pending[review.normalize(path)] ~= nil
  end, "the agent's newer edit waits")
  -- Keeping the user's side merges the waiting edit against what the agent
  -- wrote: its new line goes in next to the user's.
  vim.api.nvim_set_current_win((assert(vim.fn.win_findbuf(buf)[1], "a window shows the buffer")))
  vim.api.nvim_win_set_cursor(0, { T.find_line(buf, "mine"), 0 })
  vim.cmd("Acp reject")
  T.eq({ "one", "agent first", "mine", "three" }, T.lines(buf), "the newer edit merged, the user's line kept")
  vim.cmd("bwipeout! " .. buf)
end)

T.run()
