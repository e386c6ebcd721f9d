-- End to end: how often the backend and Lua cross for one agent edit of a
-- buffer with unsaved lines (issue 24, "Lua only draws and reports"). A
-- crossing is one call from one side to the other: the backend's
-- `nvim_exec_lua` of `acp.edits.fs.apply` / `acp.edits.fs.read_for_agent` / an event
-- batch (a request and its answer: one crossing), or Lua's `rpcrequest` /
-- `rpcnotify` to the backend. Only the crossings about the edited file are
-- counted: the instructions and reads of its path, the event batches
-- carrying an event of its path, and Lua's calls naming it or deciding a
-- review. The counts are a behaviour bound, not a timing: every crossing
-- is a round of Neovim's event loop the user's typing waits behind.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
T.require_binaries()

local dir = T.tmpdir()
local NINE = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\n"

T.setup_fake({
  crossings = {
    turns = {
      {
        -- claude-agent-acp and Codex edit files with their own tools: the
        -- backend sees the disk change and syncs the buffer.
        match = "disk edit",
        steps = {
          { type = "writeDisk", path = "disk.txt", content = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n" },
          { type = "text", text = "edited disk.txt" },
        },
      },
      {
        match = "write edit",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/write.txt", content = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nL8 agent\nl9\n" },
            expect = { ok = true },
          },
          { type = "text", text = "wrote write.txt" },
        },
      },
    },
  },
}, dir)

--- Methods of Lua's calls that belong to the review and buffer sync even
--- when they name no path (a decision of a whole chat).
local REVIEW_METHODS = {
  ["acp.review_accept"] = true,
  ["acp.review_reject"] = true,
}

--- Whether an event batch carries an event about `path`.
---@param events table[]
---@param path string
local function about(events, path)
  for _, ev in ipairs(type(events) == "table" and events or {}) do
    if type(ev) == "table" and ev.path == path then
      return true
    end
  end
  return false
end

--- Runs `fn`, waits until nothing about `path` crossed for `quiet_ms`, and
--- returns the crossings about it, in order, as "<direction> <name>".
---@param path string
---@param fn fun()
---@return string[]
local function crossings(path, fn)
  local backend, fs, events = require("acp.rpc.backend"), require("acp.edits.fs"), require("acp.events")
  local orig = {
    request = backend.request,
    notify = backend.notify,
    apply = fs.apply,
    read = fs.read_for_agent,
    dispatch = events.dispatch,
  }
  local seen = {}
  local last = vim.uv.now()
  local function add(what)
    seen[#seen + 1] = what
    last = vim.uv.now()
  end
  local function lua_call(kind, method, params)
    if (type(params) == "table" and params.path == path) or REVIEW_METHODS[method] then
      add("lua->backend " .. kind .. " " .. method)
    end
  end
  backend.request = function(method, params)
    lua_call("request", method, params)
    return orig.request(method, params)
  end
  backend.notify = function(method, params)
    lua_call("notify", method, params)
    return orig.notify(method, params)
  end
  fs.apply = function(args)
    local reply = orig.apply(args)
    if args.path == path then
      add(("backend->lua acp.fs.apply %s %s"):format(args.disk and "disk" or "write", tostring(reply.status)))
    end
    return reply
  end
  fs.read_for_agent = function(args)
    if args.path == path then
      add("backend->lua acp.fs.read_for_agent")
    end
    return orig.read(args)
  end
  events.dispatch = function(batch)
    if about(batch, path) then
      local types = {}
      for _, ev in ipairs(batch) do
        if ev.path == path then
          types[#types + 1] = ev.type
        end
      end
      add("backend->lua events " .. table.concat(types, ","))
    end
    return orig.dispatch(batch)
  end
  local ok, err = pcall(function()
    fn()
    -- Quiet for longer than the typing debounce: a report it would send
    -- is counted.
    local quiet = require("acp.edits.review.state").USER_EDIT_DEBOUNCE_MS + 500
    vim.wait(10000, function()
      return vim.uv.now() - last > quiet
    end, 20)
  end)
  backend.request, backend.notify = orig.request, orig.notify
  fs.apply, fs.read_for_agent, events.dispatch = orig.apply, orig.read, orig.dispatch
  assert(ok, err)
  return seen
end

--- Open `name` with NINE plus an unsaved first line, open a chat.
local function unsaved(name)
  local path = vim.uv.fs_realpath(dir) .. "/" .. name
  T.write_file(path, NINE)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  local buf = vim.api.nvim_get_current_buf()
  vim.api.nvim_buf_set_lines(buf, 0, 1, false, { "L1 mine" })
  return buf, path, T.open_chat("crossings", dir)
end

--- Wait until the agent's line 8 is merged under the user's line 1 and
--- drawn as the one hunk.
local function merged_and_drawn(buf)
  T.wait(function()
    return T.lines(buf)[1] == "L1 mine"
      and T.lines(buf)[8] == "L8 agent"
      and vim.deep_equal(T.review_rows(buf, "AcpReviewAdd"), { 7 })
  end, "the agent's line merged and drawn as its hunk")
end

T.test("an agent's disk edit into a buffer with an unsaved line crosses at most three times", function()
  local buf, path, chat = unsaved("disk.txt")
  local seen = crossings(path, function()
    T.eq("end_turn", T.turn(chat, "disk edit"), "stop reason")
    merged_and_drawn(buf)
  end)
  io.stdout:write(("  disk edit crossings (%d): %s\n"):format(#seen, table.concat(seen, "; ")))
  T.truthy(#seen <= 3, ("at most 3 crossings, got %d: %s"):format(#seen, vim.inspect(seen)))
  T.eq(true, vim.bo[buf].modified, "the user's line stays unsaved")
  merged_and_drawn(buf)
end)

T.test("an agent's fs/write_text_file into a buffer with an unsaved line crosses at most twice", function()
  local buf, path, chat = unsaved("write.txt")
  local seen = crossings(path, function()
    T.eq("end_turn", T.turn(chat, "write edit"), "stop reason")
    merged_and_drawn(buf)
  end)
  io.stdout:write(("  write crossings (%d): %s\n"):format(#seen, table.concat(seen, "; ")))
  T.truthy(#seen <= 2, ("at most 2 crossings, got %d: %s"):format(#seen, vim.inspect(seen)))
  T.eq(true, vim.bo[buf].modified, "the user's line stays unsaved")
  merged_and_drawn(buf)
end)

T.test("a review_changed older than the review kept is dropped (a cache by revision)", function()
  local review = require("acp.edits.review")
  local path = vim.uv.fs_realpath(dir) .. "/cache.txt"
  local function ev(revision, line)
    local hunk = { id = revision, old_start = 0, old_lines = {}, new_start = 0, new_lines = { line } }
    return {
      path = path,
      revision = revision,
      summary = { path = path, status = "modified", hunks = 1, added = 1, removed = 0, first_line = 0 },
      review = { path = path, status = "modified", current = line .. "\n", hunks = { hunk } },
    }
  end
  review.on_changed("cache-chat", ev(20, "newer"))
  review.on_changed("cache-chat", ev(10, "older, late"))
  T.eq("newer\n", review.files[path].latest["cache-chat"].current, "the newer review is kept")
  review.on_changed("cache-chat", ev(30, "newest"))
  T.eq("newest\n", review.files[path].latest["cache-chat"].current, "a newer one replaces it")
  review.drop_chat("cache-chat")
  review.on_changed("cache-chat", ev(5, "a chat that came back"))
  T.eq("a chat that came back\n", review.files[path].latest["cache-chat"].current, "a dropped chat starts over")
  review.drop_chat("cache-chat")
  review.files[path] = nil
end)

T.run()
