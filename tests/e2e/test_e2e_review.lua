-- End to end: agent edits reviewed hunk by hunk in the real buffers.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

local NINE = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n"
-- Lines 2, 5 and 8 changed: three hunks.
local THREE = "l1\nL2 agent\nl3\nl4\nL5 agent\nl6\nl7\nL8 agent\nl9\n"

-- A saved conflict block between the first agent's line and the second's.
local RANGEBLOCK = "b1\n<<<<<<< buffer\nA1 first\n=======\nB1 second\n>>>>>>> agent\n"

local function edit(match, file, content, extra)
  local step = { type = "writeDisk", path = file, content = content }
  for k, v in pairs(extra or {}) do
    step[k] = v
  end
  return { match = match, steps = { step, { type = "text", text = "edited " .. file } } }
end

T.setup_fake({
  review = {
    turns = {
      edit("edit three", "three.txt", THREE),
      edit("edit reject", "reject.txt", THREE),
      edit("edit unsaved", "unsaved.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n"),
      edit("edit undo reload", "undoreload.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n"),
      edit("edit undo redo", "undoredo.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n"),
      edit("edit conflict", "conflict.txt", "l1\nl2\nl3\nl4\nL5 agent\nl6\nl7\nl8\nl9\n"),
      edit("edit theirs", "theirs.txt", "l1\nl2\nl3\nl4\nL5 agent\nl6\nl7\nl8\nl9\n"),
      edit("edit lagging", "lagging.txt", "l1\nl2\nl3\nl4\nL5 agent\nl6\nl7\nL8 agent\nl9\n"),
      {
        match = "read twochats",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/twochats.txt" },
            expect = { result = { content = NINE } },
          },
        },
      },
      {
        match = "write twochats first",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/twochats.txt", content = "L0 first\n" .. NINE },
            expect = { ok = true },
          },
        },
      },
      {
        -- Writes back its read from before the first agent's write.
        match = "write twochats second",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/twochats.txt", content = "l1\nl2\nl3\nl4\nl5\nL5b second\nl6\nl7\nl8\nl9\n" },
            expect = { ok = true },
          },
        },
      },
      -- Data-safety seed 117216006, case 131: two agents write one spot of
      -- rangeblock.txt (a conflict block), then the first adds a line right
      -- after the block the user saved.
      {
        match = "read rangeblock",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/rangeblock.txt" },
            expect = { result = { content = "b1\n" } },
          },
        },
      },
      {
        match = "write rangeblock first",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/rangeblock.txt", content = "b1\nA1 first\n" },
            expect = { ok = true },
          },
        },
      },
      {
        match = "write rangeblock second",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/rangeblock.txt", content = "b1\nB1 second\n" },
            expect = { ok = true },
          },
        },
      },
      {
        match = "write rangeblock after",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/rangeblock.txt" },
            expect = { result = { content = RANGEBLOCK } },
          },
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/rangeblock.txt", content = RANGEBLOCK .. "A6 after\n" },
            expect = { ok = true },
          },
        },
      },
      -- Data-safety seed 230495178, case 7: the second agent read
      -- undoboth.txt between the first agent's two writes, and writes back
      -- its read without the first agent's line and with its own on top.
      {
        match = "read undoboth",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/undoboth.txt" },
            expect = { result = { content = "b1\nA3 first\nb2\n" } },
          },
        },
      },
      {
        match = "write undoboth a3",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/undoboth.txt", content = "b1\nA3 first\nb2\n" },
            expect = { ok = true },
          },
        },
      },
      {
        match = "write undoboth a4",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/undoboth.txt", content = "A4 first\nb1\nA3 first\nb2\n" },
            expect = { ok = true },
          },
        },
      },
      {
        match = "write undoboth second",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/undoboth.txt", content = "B1 second\nb1\nb2\n" },
            expect = { ok = true },
          },
        },
      },
      -- The two chats of shownchat.txt, as those of twochats.txt.
      {
        match = "read shownchat",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/shownchat.txt" },
            expect = { result = { content = NINE } },
          },
        },
      },
      {
        match = "write shownchat first",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/shownchat.txt", content = "L0 first\n" .. NINE },
            expect = { ok = true },
          },
        },
      },
      {
        match = "write shownchat second",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/shownchat.txt", content = "l1\nl2\nl3\nl4\nl5\nL5b second\nl6\nl7\nl8\nl9\n" },
            expect = { ok = true },
          },
        },
      },
      -- Data-safety seed 134340754, case 314: as undoboth.txt, into a
      -- buffer without unsaved edits (the merge is saved).
      {
        match = "read rejectall",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/rejectall.txt" },
            expect = { result = { content = "b1\nb2\nA1 first\n" } },
          },
        },
      },
      {
        match = "write rejectall a1",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/rejectall.txt", content = "b1\nb2\nA1 first\n" },
            expect = { ok = true },
          },
        },
      },
      {
        match = "write rejectall a4",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/rejectall.txt", content = "b1\nb2\nA1 first\nA4 first\n" },
            expect = { ok = true },
          },
        },
      },
      {
        match = "write rejectall second",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/rejectall.txt", content = "b1\nB1 second\nb2\n" },
            expect = { ok = true },
          },
        },
      },
      edit("edit keep mine", "keepmine.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n"),
      edit("edit reload disk", "reloaddisk.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n"),
      edit("edit save disk", "savedisk.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n"),
      {
        match = "edit save fs",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/savefs.txt", content = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n" },
            expect = { ok = true },
          },
          { type = "text", text = "edited savefs.txt" },
        },
      },
      {
        -- Announced first (the client snapshots the file), written later
        -- with no diff at all: only the disk tells.
        match = "edit nodiff",
        steps = {
          {
            type = "toolCall",
            toolCallId = "nd-1",
            title = "Edit nodiff.txt",
            kind = "edit",
            status = "in_progress",
            locations = { { path = "{{cwd}}/nodiff.txt" } },
          },
          { type = "sleep", ms = 300 },
          {
            type = "writeDisk",
            path = "nodiff.txt",
            content = "l1\nl2\nL3 unseen\nl4\nl5\nl6\nl7\nl8\nl9\n",
            diff = false,
            toolCallId = "nd-1",
          },
        },
      },
      -- Written right after the tool call is announced, with no diff: the
      -- client cannot read the file before the agent writes it, so only the
      -- buffer's copy from when the prompt was sent shows the "before".
      edit(
        "edit instant",
        "instant.txt",
        "l1\nl2\nL3 instant\nl4\nl5\nl6\nl7\nl8\nl9\n",
        { diff = false, toolCallId = "in-1" }
      ),
      -- Rewritten in place the slow way (truncated, announced, written 50 ms
      -- later): the client's own read of the file sees it empty.
      edit(
        "edit torn",
        "torn.txt",
        "l1\nl2\nL3 torn\nl4\nl5\nl6\nl7\nl8\nl9\n",
        { diff = false, toolCallId = "torn-1", tornMs = 50 }
      ),
      edit("edit pending one", "pending.txt", "l1\nl2\nl3\nl4\nL5 agent\nl6\nl7\nl8\nl9\n"),
      {
        -- A read-modify-write while the conflict of the first edit is open:
        -- it reads its own side there, and the user's other unsaved line.
        match = "edit pending two",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/pending.txt" },
            expect = { result = { content = "l1\nL2 mine\nl3\nl4\nL5 agent\nl6\nl7\nl8\nl9\n" } },
          },
          {
            type = "call",
            method = "fs/write_text_file",
            params = {
              path = "{{cwd}}/pending.txt",
              content = "l1\nL2 agent\nl3\nl4\nL5 agent\nl6\nl7\nL8 agent\nl9\n",
            },
            expect = { ok = true },
          },
        },
      },
      {
        -- What claude-code-acp 0.16.2 does: read the unsaved buffer, write
        -- it back with a change next to the user's line.
        match = "edit read back",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/readback.txt" },
            expect = { result = { content = "hello world\nunsaved line\n" } },
          },
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/readback.txt", content = "hello ACP\nunsaved line\n" },
            expect = { ok = true },
          },
          { type = "text", text = "edited readback.txt" },
        },
      },
      {
        -- Saw the file only as the prompt embedded it (a mention).
        match = "edit mentioned",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/mentioned.txt", content = "hello ACP\nunsaved line\n" },
            expect = { ok = true },
          },
          { type = "text", text = "edited mentioned.txt" },
        },
      },
      edit("edit next to typing", "nexttyping.txt", "l1\nl2\nl3\nl4\nL5 agent\nl6\nl7\nl8\nl9\n"),
      edit("edit range", "range.txt", THREE),
      edit("edit typed", "typed.txt", THREE),
      edit("edit two files", "qf1.txt", THREE),
      edit("edit qf2", "qf2.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nL9 agent\n"),
      edit("edit open", "open.txt", THREE, { toolCallId = "open-1", title = "Edit open.txt" }),
      edit("create file", "created.txt", "brand new\n"),
      {
        -- A file the agent wants to create (claude-code-acp's Write: no
        -- oldText), written through the client once allowed.
        match = "preview new file",
        steps = {
          {
            type = "requestPermission",
            toolCall = {
              toolCallId = "pn-1",
              title = "Write fresh.txt",
              kind = "edit",
              status = "pending",
              content = { { type = "diff", path = "{{cwd}}/fresh.txt", newText = "a\nb\nc\n" } },
            },
            onAllow = {
              {
                type = "call",
                method = "fs/write_text_file",
                params = { path = "{{cwd}}/fresh.txt", content = "a\nb\nc\n" },
                expect = { ok = true },
              },
              { type = "text", text = "wrote fresh.txt" },
            },
            onReject = { { type = "text", text = "did not write fresh.txt" } },
          },
        },
      },
      {
        match = "deny new file",
        steps = {
          {
            type = "requestPermission",
            toolCall = {
              toolCallId = "pd-1",
              title = "Write never.txt",
              kind = "edit",
              status = "pending",
              content = { { type = "diff", path = "{{cwd}}/never.txt", newText = "x\n" } },
            },
            onAllow = { { type = "text", text = "wrote never.txt" } },
            onReject = { { type = "text", text = "did not write never.txt" } },
          },
        },
      },
      {
        -- New files in new directories: one by the agent's own tool, one
        -- through fs/write_text_file.
        match = "create nested",
        steps = {
          { type = "writeDisk", path = "made/by/tool.txt", content = "tool\n" },
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/fsmade/deep/fs.txt", content = "fs\n" },
            expect = { ok = true },
          },
          { type = "text", text = "created nested files" },
        },
      },
      {
        match = "preview",
        steps = {
          {
            type = "requestPermission",
            toolCall = {
              toolCallId = "prev-1",
              title = "Edit preview.txt",
              kind = "edit",
              status = "pending",
              content = {
                { type = "diff", path = "{{cwd}}/preview.txt", oldText = "l3\n", newText = "L3 proposed\nextra\n" },
              },
            },
            onAllow = {
              {
                type = "writeDisk",
                path = "preview.txt",
                content = "l1\nl2\nL3 proposed\nextra\nl4\nl5\nl6\nl7\nl8\nl9\n",
                toolCallId = "prev-1",
              },
            },
          },
        },
      },
    },
  },
}, dir)

T.require_binaries()

local review = require("acp.edits.review")
local NOTES = {}
local orig_notify = vim.notify
vim.notify = function(m, ...)
  NOTES[#NOTES + 1] = m
  return orig_notify(m, ...)
end

--- Extmarks of the review namespace in a buffer, with details.
local function marks(buf)
  return vim.api.nvim_buf_get_extmarks(buf, review.ns, 0, -1, { details = true })
end

--- 0-based rows highlighted with `group` (line_hl_group).
local rows_with = T.review_rows

--- Text of every virtual line drawn in a buffer.
local function virt_text(buf)
  local out = {}
  for _, m in ipairs(marks(buf)) do
    for _, vl in ipairs(m[4].virt_lines or {}) do
      local parts = {}
      for _, chunk in ipairs(vl) do
        parts[#parts + 1] = chunk[1]
      end
      out[#out + 1] = vim.trim(table.concat(parts))
    end
  end
  table.sort(out)
  return out
end

--- Make the window showing `buf` current (the chat takes the focus when it
--- opens).
local function focus(buf)
  local win = assert(vim.fn.win_findbuf(buf)[1], "a window shows the buffer")
  vim.api.nvim_set_current_win(win)
end

local function open_file(name, text)
  local path = dir .. "/" .. name
  T.write_file(path, text)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  return vim.api.nvim_get_current_buf(), path
end

--- Open `name` with NINE, run the turn, wait until the buffer shows `hunks`
--- added-line highlights.
local function edited(name, prompt, hunks)
  local buf, path = open_file(name, NINE)
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, prompt), "stop reason")
  T.wait(function()
    return #rows_with(buf, "AcpReviewAdd") == hunks
  end, ("%d hunks drawn in %s"):format(hunks, name))
  focus(buf)
  return buf, path, chat
end

--- A buffer's text as its file would hold it.
local function fs_text(buf)
  return require("acp.edits.fs").buffer_text(buf)
end

--- Counts the backend's instructions (acp.edits.fs.apply) and Lua's requests to
--- the backend (but opening a chat) while `fn` runs.
local function counted(fn)
  local backend, fs = require("acp.rpc.backend"), require("acp.edits.fs")
  local orig_request, orig_apply = backend.request, fs.apply
  local n = { applies = {}, asked = {} }
  backend.request = function(method, ...)
    if method ~= "acp.open" then
      n.asked[#n.asked + 1] = method
    end
    return orig_request(method, ...)
  end
  fs.apply = function(args)
    local reply = orig_apply(args)
    n.applies[#n.applies + 1] = (args.disk and "disk " or "write ") .. tostring(reply.status)
    return reply
  end
  local ok, a, b, c = pcall(fn)
  backend.request, fs.apply = orig_request, orig_apply
  assert(ok, a)
  return n, a, b, c
end

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
    local r = require("acp.rpc.backend").request("acp.review_file", { chat_id = chat.chat_id, path = path })
    T.eq(2, #(type(r) == "table" and r.hunks or {}), "the backend reviews the conflict and the hunk")
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
    local r = require("acp.rpc.backend").request("acp.review_file", { chat_id = chat.chat_id, path = path })
    return #(type(r) == "table" and r.hunks or {}) == 0
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
    local r = require("acp.rpc.backend").request("acp.review_file", { chat_id = chat.chat_id, path = path })
    return type(r) == "table" and r.hunks or {}
  end
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
    local r = require("acp.rpc.backend").request("acp.review_file", { chat_id = first.chat_id, path = path })
    return #(type(r) == "table" and r.hunks or {}) == 0
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
    local r = require("acp.rpc.backend").request("acp.review_file", { chat_id = chat.chat_id, path = path })
    local out = {}
    for _, h in ipairs(type(r) == "table" and r.hunks or {}) do
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
  local r = require("acp.rpc.backend").request("acp.review_file", { chat_id = first.chat_id, path = path })
  T.eq(1, #(type(r) == "table" and r.hunks or {}), "the first chat reviews its line")
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
  local r = require("acp.rpc.backend").request("acp.review_file", { chat_id = first.chat_id, path = path })
  T.eq(merged, type(r) == "table" and r.current or nil, "the first chat's review has the file's text")
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

--- The option of a pending permission request of `chat` with `kind`.
local function answer(chat, kind)
  local permission = require("acp.chat.view.permission")
  local req = permission.for_chat(chat.chat_id)[1]
  for i, o in ipairs(req.options) do
    if o.kind == kind then
      return permission.respond_nth(req, i)
    end
  end
  error("no " .. kind .. " option")
end

--- The summary text of `path` in the quickfix list, nil when not listed.
local function qf_entry(path)
  for _, it in ipairs(vim.fn.getqflist()) do
    if vim.api.nvim_buf_get_name(it.bufnr) == path then
      return it.text
    end
  end
end

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
  local orig = review.confirm_delete
  review.confirm_delete = function()
    return true
  end
  require("acp.chat.view.tool_call").jump({ path = path })
  vim.cmd("Acp reject file")
  T.wait(function()
    return vim.fn.filereadable(path) == 0
  end, "file deleted, not emptied: " .. vim.inspect(vim.fn.filereadable(path) == 1 and T.read_file(path)))
  review.confirm_delete = orig
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
    local orig = review.confirm_delete
    review.confirm_delete = function()
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
    review.confirm_delete = orig
    T.wait(function()
      return vim.fn.isdirectory(dir .. "/made") == 0
    end, "the directories made by the agent's tool are gone")
    T.wait(function()
      return vim.fn.isdirectory(dir .. "/fsmade") == 0
    end, "the directories made for fs/write_text_file are gone")
    T.eq(1, vim.fn.isdirectory(dir), "the workspace stays")
  end
)

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

T.test("rejecting a created file asks before deleting it", function()
  local chat = T.open_chat("review", dir)
  T.eq("end_turn", T.turn(chat, "create file"), "stop reason")
  local path = dir .. "/created.txt"
  T.wait(function()
    return review.files[path] ~= nil and review.files[path].chat_id ~= nil
  end, "created file under review")
  local asked
  local orig = review.confirm_delete
  review.confirm_delete = function(p)
    asked = p
    return true
  end
  vim.cmd("edit " .. path)
  vim.cmd("Acp reject file")
  T.wait(function()
    return vim.fn.filereadable(path) == 0
  end, "file deleted after confirmation")
  review.confirm_delete = orig
  T.eq(path, asked, "the user was asked")
end)

T.run()
