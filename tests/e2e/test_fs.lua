-- Buffer-aware fs (lua/acp/edits/fs.lua), called directly as the backend would.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local fs = require("acp.edits.fs")

local dir = T.tmpdir()

local function open(path)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  return vim.api.nvim_get_current_buf()
end

T.test("read returns nil when no buffer has the file", function()
  local path = dir .. "/absent.txt"
  T.write_file(path, "disk\n")
  T.eq(nil, fs.read({ path = path }), "backend reads the disk")
end)

T.test("read returns unsaved buffer text with exact line/limit", function()
  local path = dir .. "/read.txt"
  T.write_file(path, "one\ntwo\nthree\n")
  local buf = open(path)
  vim.api.nvim_buf_set_lines(buf, 1, 2, false, { "TWO (unsaved)" })
  T.eq("one\nTWO (unsaved)\nthree\n", fs.read({ path = path }), "whole buffer")
  T.eq("TWO (unsaved)\n", fs.read({ path = path, line = 2, limit = 1 }), "line 2, limit 1")
  T.eq("TWO (unsaved)\nthree\n", fs.read({ path = path, line = 2 }), "from line 2")
  T.eq("one\nTWO (unsaved)\n", fs.read({ path = path, limit = 2 }), "limit only")
  T.eq("", fs.read({ path = path, line = 9, limit = 2 }), "past the end")
  T.eq("", fs.read({ path = path, line = 1, limit = 0 }), "limit 0")
  T.eq("one\nTWO (unsaved)\nthree\n", fs.read({ path = path, line = vim.NIL, limit = vim.NIL }), "nil values")
end)

T.test("read keeps a missing final newline ('noeol')", function()
  local path = dir .. "/noeol.txt"
  T.write_file(path, "a\nb")
  open(path)
  T.eq("a\nb", fs.read({ path = path }), "no newline at the end")
  T.eq("a\n", fs.read({ path = path, line = 1, limit = 1 }), "inner lines keep theirs")
  T.eq("b", fs.read({ path = path, line = 2 }), "last line without")
end)

T.test("read finds the buffer through a symlinked path", function()
  local path = dir .. "/real.txt"
  T.write_file(path, "real\n")
  vim.uv.fs_symlink(path, dir .. "/link.txt")
  local buf = open(path)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "edited" })
  T.eq("edited\n", fs.read({ path = dir .. "/link.txt" }), "same file")
end)

T.test("write to an unmodified buffer edits minimally, one undo step, and saves", function()
  local path = dir .. "/write.txt"
  local old = {}
  for i = 1, 30 do
    old[#old + 1] = "line " .. i
  end
  T.write_file(path, table.concat(old, "\n") .. "\n")
  local buf = open(path)
  vim.api.nvim_win_set_cursor(0, { 25, 3 })
  vim.api.nvim_buf_set_mark(buf, "a", 20, 1, {})
  local ns = vim.api.nvim_create_namespace("acp-test")
  local mark = vim.api.nvim_buf_set_extmark(buf, ns, 27, 0, {})
  local new = vim.deepcopy(old)
  new[2] = "changed 2"
  table.insert(new, 10, "inserted")
  table.remove(new, 15) -- "line 14"
  local content = table.concat(new, "\n") .. "\n"
  -- Without a merge at its tick (the backend did not know the buffer: the
  -- user may have saved lines the agent never saw): stale, nothing applied.
  local res = fs.apply({ path = path, revision = 1, content = content })
  T.eq({ status = "stale", revision = 1, text = table.concat(old, "\n") .. "\n", tick = fs.tick(buf) }, res, "stale")
  T.eq(old, T.lines(buf), "nothing applied while stale")
  res = fs.apply({ path = path, revision = 1, content = content, merged = content, tick = fs.tick(buf) })
  T.eq("saved", res.status, "saved")
  T.eq(1, res.revision, "names the instruction")
  T.eq(table.concat(old, "\n") .. "\n", res.old_content, "old content")
  T.eq(fs.tick(buf), res.tick, "the tick after")
  T.eq(content, T.read_file(path), "disk == content")
  T.eq(false, vim.bo[buf].modified, "saved")
  T.eq(new, T.lines(buf), "buffer == content")
  T.eq({ 25, 3 }, vim.api.nvim_win_get_cursor(0), "cursor outside the hunks stays")
  T.eq({ 20, 1 }, vim.api.nvim_buf_get_mark(buf, "a"), "mark stays")
  T.eq({ 27, 0 }, vim.api.nvim_buf_get_extmark_by_id(buf, ns, mark, {}), "extmark stays")
  vim.cmd("silent undo")
  T.eq(old, T.lines(buf), "one undo restores everything")
  vim.cmd("silent redo")
  T.eq(new, T.lines(buf), "redo")
end)

T.test("write keeps the content's missing final newline", function()
  local path = dir .. "/write-noeol.txt"
  T.write_file(path, "x\n")
  local buf = open(path)
  local res = fs.apply({ path = path, revision = 1, content = "x\ny", merged = "x\ny", tick = fs.tick(buf) })
  T.eq("saved", res.status, "saved")
  T.eq("x\ny", T.read_file(path), "no newline added on save")
end)

T.test(
  "write to a modified buffer applies the backend's merge at its tick, one undo step, disk left to the backend",
  function()
    local path = dir .. "/modified.txt"
    T.write_file(path, "one\ntwo\nthree\n")
    local buf = open(path)
    vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "ONE (mine)" })
    local backend = require("acp.rpc.backend")
    local orig_request, orig_notify = backend.request, backend.notify
    local asked = {}
    backend.request = function(method)
      asked[#asked + 1] = method
    end
    backend.notify = backend.request
    local content = "one\ntwo\nTHREE (agent)\n"
    local tick = fs.tick(buf)
    local res
    -- The stubs go back whatever happens: the rest of the file needs the backend.
    local ok, err = pcall(function()
      -- Without the merge (the backend did not know the buffer): stale, with
      -- the buffer's text, so the backend merges and sends again.
      res = fs.apply({ path = path, revision = 1, content = content })
      T.eq({ status = "stale", revision = 1, text = "ONE (mine)\ntwo\nthree\n", tick = tick }, res, "stale")
      -- A merge made for an older tick: stale too (the user typed since).
      res = fs.apply({ path = path, revision = 2, content = content, merged = "x\n", tick = tick - 1 })
      T.eq("stale", res.status, "an older tick")
      T.eq({ "ONE (mine)", "two", "three" }, T.lines(buf), "nothing applied while stale")
      res = fs.apply({
        path = path,
        revision = 3,
        content = content,
        merged = "ONE (mine)\ntwo\nTHREE (agent)\n",
        tick = tick,
      })
    end)
    backend.request, backend.notify = orig_request, orig_notify
    if not ok then
      error(err, 0)
    end
    T.eq({}, asked, "nothing asked of the backend from inside its call")
    T.eq("merged", res.status, "merged")
    T.eq(fs.tick(buf), res.tick, "the tick after")
    T.eq({ "ONE (mine)", "two", "THREE (agent)" }, T.lines(buf), "both edits")
    T.eq(true, vim.bo[buf].modified, "still modified")
    T.eq("one\ntwo\nthree\n", T.read_file(path), "disk untouched by the plugin (the backend writes it)")
    vim.api.nvim_buf_call(buf, function()
      vim.cmd("silent undo")
    end)
    T.eq({ "ONE (mine)", "two", "three" }, T.lines(buf), "one undo step undoes only the agent's edit")
  end
)

T.test("an agent read reports the buffer's whole text and tick", function()
  local path = dir .. "/agent-read.txt"
  T.write_file(path, "a\n")
  local buf = open(path)
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { "a", "b (unsaved)", "c" })
  local tick = fs.tick(buf)
  T.eq({ text = "a\nb (unsaved)\nc\n", tick = tick }, fs.read_for_agent({ path = path }), "whole")
  T.eq(
    { text = "b (unsaved)\n", whole = "a\nb (unsaved)\nc\n", tick = tick },
    fs.read_for_agent({ path = path, line = 2, limit = 1 }),
    "a range carries the whole text"
  )
  T.eq(
    { text = "c\n", tick = tick, unchanged = true },
    fs.read_for_agent({ path = path, line = 3, limit = 1, known = tick }),
    "a buffer still at the tick the backend holds sends the range only"
  )
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "A" })
  T.eq(
    { text = "c\n", whole = "A\nb (unsaved)\nc\n", tick = fs.tick(buf) },
    fs.read_for_agent({ path = path, line = 3, limit = 1, known = tick }),
    "after an edit the whole text again"
  )
  T.eq(nil, fs.read_for_agent({ path = dir .. "/nobuf.txt" }), "no buffer")
end)

T.test("an agent's disk edit reloads an unmodified buffer without saving it, one undo step", function()
  local path = dir .. "/disk-reload.txt"
  T.write_file(path, "one\ntwo\n")
  local buf = open(path)
  -- The agent wrote the file itself; the backend sends its text.
  T.write_file(path, "one\nTWO\n")
  local old = vim.uv.fs_stat(path).mtime
  local reply = fs.apply({ path = path, revision = 1, content = "one\nTWO\n", disk = true, chat_id = "c1" })
  T.eq("reloaded", reply.status, "reloaded")
  T.eq(fs.tick(buf), reply.tick, "with the buffer's tick")
  T.eq({ "one", "TWO" }, T.lines(buf), "the agent's text")
  T.eq(false, vim.bo[buf].modified, "unmodified")
  local now = vim.uv.fs_stat(path).mtime
  T.eq({ old.sec, old.nsec }, { now.sec, now.nsec }, "not saved: the file was not written again")
  T.truthy(
    require("acp.edits.review").files[require("acp.edits.review").normalize(path)].reviewed_by.c1,
    "its saves go to the agent's chat"
  )
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("silent undo")
  end)
  T.eq({ "one", "two" }, T.lines(buf), "one undo step")
end)

T.test("an agent's disk edit merges into a modified buffer at its tick, or answers stale or waiting", function()
  local path = dir .. "/disk-merge.txt"
  T.write_file(path, "a\nb\nc\n")
  local buf = open(path)
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "A (mine)" })
  local tick = fs.tick(buf)
  local stale = fs.apply({ path = path, revision = 1, content = "a\nb\nC\n", disk = true })
  T.eq({ status = "stale", revision = 1, text = "A (mine)\nb\nc\n", tick = tick }, stale, "no merge offered: stale")
  local merged = fs.apply({
    path = path,
    revision = 2,
    content = "a\nb\nC\n",
    disk = true,
    merged = "A (mine)\nb\nC\n",
    tick = tick,
  })
  T.eq("merged", merged.status, "merged")
  T.eq({ "A (mine)", "b", "C" }, T.lines(buf), "both")
  T.eq(true, vim.bo[buf].modified, "still modified")
  -- Open conflict blocks, and a merge that would open more: it waits.
  vim.api.nvim_buf_set_lines(
    buf,
    1,
    2,
    false,
    { "<<<<<<< buffer", "B (mine)", "=======", "B (agent)", ">>>>>>> agent" }
  )
  local before = T.lines(buf)
  tick = fs.tick(buf)
  local waiting = fs.apply({
    path = path,
    revision = 3,
    content = "x\n",
    disk = true,
    merged = "<<<<<<< buffer\nnested\n=======\nx\n>>>>>>> agent\n",
    tick = tick,
    conflicts = 1,
  })
  T.eq("waiting", waiting.status, "waiting")
  T.eq(before, T.lines(buf), "left alone")
  T.truthy(
    require("acp.edits.review").pending[require("acp.edits.review").normalize(path)],
    "the plugin knows it waits"
  )
end)

T.test("an agent read after undo and redo of a merge with a conflict gets the agent's side", function()
  local path = dir .. "/undo-conflict.txt"
  T.write_file(path, "mine\nz\n")
  local buf = open(path)
  local review = require("acp.edits.review")
  T.eq(false, review.has_marker(buf), "no conflict yet")
  vim.api.nvim_buf_call(buf, function()
    vim.go.undolevels = vim.go.undolevels
  end)
  fs.apply_text(buf, "<<<<<<< buffer\nmine\n=======\nagent\n>>>>>>> agent\nz\n")
  T.eq("agent\nz\n", fs.read({ path = path }), "the agent's side")
  vim.api.nvim_buf_call(buf, function()
    vim.cmd("silent undo")
    vim.cmd("silent redo")
  end)
  T.eq("<<<<<<< buffer", T.lines(buf)[1], "the conflict is back")
  -- Undo and redo put extmarks back after the change: the marker line's
  -- mark was lost, and the agent read the marker lines.
  T.eq("agent\nz\n", fs.read({ path = path }), "still the agent's side after undo and redo")
end)

T.test("write without a buffer is left to the backend", function()
  T.eq(
    { status = "no_buffer", revision = 4 },
    fs.apply({ path = dir .. "/nobuf.txt", revision = 4, content = "x" }),
    "not handled"
  )
  T.eq(0, vim.fn.filereadable(dir .. "/nobuf.txt"), "nothing written by the plugin")
end)

T.run()
