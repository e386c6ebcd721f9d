-- Shared by the review tests (test_e2e_review*.lua): the fake agent's
-- script of agent edits (every file's turns: each test file opens the
-- files of its own tests) and the helpers that look at the review drawn
-- in a buffer.
--
--   local R = assert(loadfile(vim.fn.getcwd() .. "/tests/e2e/review_helpers.lua"))(T)
local T = ...

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
      -- Data-safety seed 62102677, case 657: the second agent's line on top
      -- of flip.txt, then the first agent's write from its read, against
      -- the user's unsaved line 2 (a conflict block), and a line at the end.
      {
        match = "write flip second",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/flip.txt", content = "S second\nb1\nb2\n" },
            expect = { ok = true },
          },
        },
      },
      {
        match = "read flip first",
        steps = {
          {
            type = "call",
            method = "fs/read_text_file",
            params = { path = "{{cwd}}/flip.txt" },
            expect = { result = { content = "S second\nb1\nb2\n" } },
          },
        },
      },
      {
        match = "write flip first",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/flip.txt", content = "S second\nA first\nb2\nA end\n" },
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

--- The plugin asks the backend no review: tests read its cache.
local latest = T.review_latest

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

return {
  dir = dir,
  NINE = NINE,
  THREE = THREE,
  RANGEBLOCK = RANGEBLOCK,
  review = review,
  latest = latest,
  NOTES = NOTES,
  marks = marks,
  rows_with = rows_with,
  virt_text = virt_text,
  focus = focus,
  open_file = open_file,
  edited = edited,
  fs_text = fs_text,
  counted = counted,
  answer = answer,
  qf_entry = qf_entry,
}
