-- End to end: rewind (issue #28). Three turns write through fs/*, create
-- and edit on disk; the user adds an unsaved line; a rewind to before turn
-- 2 gives exactly the turn-1 state plus the user's line, and the chat goes
-- on in a new session that gets the conversation before turn 2.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

local function disk(path, content)
  return { type = "writeDisk", path = path, content = content }
end

local function rewind_turns()
  return {
    -- First: later prompts carry the earlier conversation, whose prompts
    -- would match the turns below.
    { match = "ZZAFTER", steps = { { type = "text", text = "I got: {{prompt}}" } } },
    {
      match = "ZZONE",
      steps = {
        {
          type = "call",
          method = "fs/write_text_file",
          params = { path = "{{cwd}}/a.txt", content = "one\nTWO\nthree\n" },
          expect = { ok = true },
        },
        { type = "text", text = "wrote a" },
      },
    },
    {
      match = "ZZTWO",
      steps = { disk("new.txt", "hello\n"), disk("b.txt", "b1\nB2\nb3\n"), { type = "text", text = "made new" } },
    },
    {
      match = "ZZTHREE",
      steps = { disk("a.txt", "one\nTWO\nthree\nfour\n"), disk("c.txt", "c\n"), { type = "text", text = "more" } },
    },
    {
      match = "ZZCONFLICT",
      steps = { disk("k.txt", "k1\nK2 agent\nk3\n"), { type = "text", text = "edited k" } },
    },
    { match = "ZZSAVED1", steps = { disk("s.txt", "s1\nS2\ns3\n"), { type = "text", text = "edited s" } } },
    { match = "ZZSAVED2", steps = { disk("s.txt", "s1\nS2\ns3\nS4\n"), { type = "text", text = "more s" } } },
  }
end

T.setup_fake({
  rewind = { turns = rewind_turns() },
  -- The same agent offering session/fork at a cursor before each prompt.
  forking = { fork = true, turns = rewind_turns() },
  persist = {
    sessionStore = dir .. "/persist-store.json",
    -- A load replays the prompts too, as real agents do.
    replayUserMessages = true,
    -- The test loads a session right after closing its chat: the load
    -- starts before the close is answered (it once lost the replay).
    closeAnswerDelayMs = 25,
    turns = {
      { match = "crash", steps = { { type = "crash", stderr = "fatal: crashed on purpose", code = 3 } } },
      {
        match = "ZZLATE",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/p.txt", content = "late\n" },
            expect = { ok = true },
          },
        },
      },
      {
        match = "ZZSAVE",
        steps = {
          {
            type = "call",
            method = "fs/write_text_file",
            params = { path = "{{cwd}}/p.txt", content = "agent\n" },
            expect = { ok = true },
          },
        },
      },
    },
  },
}, dir)

---@param name string
---@param text string
---@return integer buf, string path
local function open_file(name, text)
  local path = dir .. "/" .. name
  -- A buffer of it from an earlier test (maybe with unsaved lines) goes.
  if vim.fn.bufnr(path) > 0 then
    vim.cmd("silent! bwipeout! " .. vim.fn.bufnr(path))
  end
  T.write_file(path, text)
  vim.cmd("edit " .. vim.fn.fnameescape(path))
  return vim.api.nvim_get_current_buf(), path
end

local function exists(path)
  return vim.uv.fs_stat(path) ~= nil
end

--- Waits for the chat's next `User AcpRewound`.
local rewound = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "AcpRewound",
  callback = function(a)
    rewound[#rewound + 1] = a.data
  end,
})
local function wait_rewound(n)
  T.wait(function()
    return #rewound >= n
  end, "AcpRewound")
  return rewound[n]
end

T.test("rewind to before turn 2 gives exactly the turn-1 state plus the user's unsaved line", function()
  local a_buf, a = open_file("a.txt", "one\ntwo\nthree\n")
  T.write_file(dir .. "/b.txt", "b1\nb2\nb3\n")
  local chat = T.open_chat("rewind", dir)
  T.eq("end_turn", T.turn(chat, "ZZONE write a"), "turn 1")
  T.eq("end_turn", T.turn(chat, "ZZTWO create new"), "turn 2")
  T.eq("end_turn", T.turn(chat, "ZZTHREE edit a on disk"), "turn 3")
  T.wait(function()
    return T.lines(a_buf)[4] == "four"
  end, "turn 3's disk edit reached the buffer")
  T.truthy(exists(dir .. "/new.txt") and exists(dir .. "/c.txt"), "turns 2 and 3 created files")
  vim.api.nvim_buf_set_lines(a_buf, 0, 0, false, { "mine" })

  -- Validation happens before anything changes.
  local ok, why = require("acp").rewind({ turn = 9 })
  T.eq(false, ok, "no turn 9")
  T.contains(why, "there is no turn 9: this chat has 3", "the reason")

  -- The preview shows and changes nothing.
  local function prompt_height()
    local win = vim.fn.win_findbuf(chat.prompt_buf)[1]
    return win and vim.api.nvim_win_get_height(win)
  end
  local height = prompt_height()
  T.truthy(height, "the chat is on screen")
  T.truthy(require("acp").rewind({ turn = 2, preview = true }), "preview started")
  T.wait(function()
    return vim.bo.filetype == "diff" and vim.api.nvim_buf_get_name(0):find("rewind%-preview") ~= nil
  end, "preview buffer")
  local preview = T.text(0)
  T.contains(preview, "Rewind to before turn 2: 4 file(s) change", "preview header")
  T.contains(preview, "-four", "a.txt loses turn 3's line")
  T.contains(preview, "new.txt\t(before turn 2, removed)", "new.txt goes")
  T.truthy(exists(dir .. "/new.txt"), "the preview removed nothing")
  vim.cmd("normal q")
  -- Closing the full-width preview gave its rows to the prompt window (21
  -- rows instead of 5, seen in tmux after `R`).
  T.eq(height, prompt_height(), "the prompt keeps its height after the preview")

  vim.cmd("Acp rewind 2")
  local ev = wait_rewound(1)
  T.eq(true, ev.ok, "rewound: " .. tostring(ev.reason))
  T.eq({ "mine", "one", "TWO", "three" }, T.lines(a_buf), "turn-1 state plus the user's line")
  T.eq(true, vim.bo[a_buf].modified, "the user's line stays unsaved")
  T.eq("b1\nb2\nb3\n", T.read_file(dir .. "/b.txt"), "b.txt as before turn 2")
  T.eq(false, exists(dir .. "/new.txt"), "new.txt removed")
  T.eq(false, exists(dir .. "/c.txt"), "c.txt removed")
  -- One undo step brings turn 3's state back in the buffer.
  vim.api.nvim_buf_call(a_buf, function()
    vim.cmd("silent undo")
  end)
  T.eq({ "mine", "one", "TWO", "three", "four" }, T.lines(a_buf), "one undo step per buffer")
  vim.api.nvim_buf_call(a_buf, function()
    vim.cmd("silent redo")
  end)

  T.wait_text(chat, "rewound to before turn 2")
  -- Turns 2 and 3 stay visible above the rule, marked rewound.
  local marked = {}
  local ns = vim.api.nvim_create_namespace("acp.rewind")
  for _, m in ipairs(vim.api.nvim_buf_get_extmarks(chat.bufnr, ns, 0, -1, { details = true })) do
    marked[#marked + 1] = m[4].virt_text[1][1]
  end
  T.eq({ "⟲ turn 2, rewound", "⟲ turn 3, rewound" }, marked, "rewound prompts marked")
  T.contains(T.text(chat.bufnr), "ZZTHREE edit a on disk", "turn 3 still shown")
  T.wait(function()
    return chat.session_id ~= nil and chat.status == "ready"
  end, "the new session opened")
  -- The next prompt is turn 2 of the new session, with the conversation
  -- before turn 2 as context.
  T.eq("end_turn", T.turn(chat, "ZZAFTER go on"), "a prompt after the rewind")
  T.wait_text(chat, "I got: This conversation continues an earlier one")
  local text = T.text(chat.bufnr)
  T.contains(text, "ZZONE write a", "turn 1 is in the context")
  local _, shown = text:gsub("This conversation continues", "")
  T.eq(1, shown, "the context is shown once, in the agent's echo, not as the user's text")
  T.contains(text, "↳ the conversation before the rewind", "the prompt names its context")
  T.contains(text, "no fork: the agent does not offer session/fork", "the chat says why no fork")
  T.eq(2, chat.transcript.prompt_turn, "the new prompt is turn 2")
  -- The checkpoints went with the chat: turn 1 can still be rewound.
  T.truthy(require("acp").rewind({ turn = 1, preview = true }), "preview of turn 1")
  T.wait(function()
    return vim.api.nvim_buf_get_name(0):find("rewind%-preview") ~= nil
  end, "preview of turn 1")
  T.contains(T.text(0), "+two", "a.txt would get turn 1's before back")
  vim.cmd("normal q")
end)

T.test("an agent that forks at a session cursor: the chat goes on in its fork before turn 2", function()
  local a_buf = open_file("a.txt", "one\ntwo\nthree\n")
  T.write_file(dir .. "/b.txt", "b1\nb2\nb3\n")
  local chat = T.open_chat("forking", dir)
  T.eq("end_turn", T.turn(chat, "ZZONE write a"), "turn 1")
  T.eq("end_turn", T.turn(chat, "ZZTWO create new"), "turn 2")
  T.eq("end_turn", T.turn(chat, "ZZTHREE edit a on disk"), "turn 3")
  T.wait(function()
    return T.lines(a_buf)[4] == "four"
  end, "turn 3's disk edit reached the buffer")
  vim.api.nvim_buf_set_lines(a_buf, 0, 0, false, { "mine" })
  local old = chat.session_id
  local n = #rewound
  vim.cmd("Acp rewind 2")
  local ev = wait_rewound(n + 1)
  T.eq(true, ev.ok, "rewound: " .. tostring(ev.reason))
  T.eq(true, ev.forked, "forked; note: " .. tostring(ev.fork_note))
  T.eq({ "mine", "one", "TWO", "three" }, T.lines(a_buf), "turn-1 state plus the user's line")
  T.eq("b1\nb2\nb3\n", T.read_file(dir .. "/b.txt"), "b.txt as before turn 2")
  T.eq(false, exists(dir .. "/new.txt"), "new.txt removed")
  T.eq(false, exists(dir .. "/c.txt"), "c.txt removed")
  T.wait(function()
    return chat.session_id ~= nil and chat.session_id ~= old and chat.status == "ready"
  end, "the chat moved to the fork")
  T.wait_text(chat, "a session the agent forked before turn 2")
  T.eq("end_turn", T.turn(chat, "ZZAFTER go on"), "a prompt in the fork")
  T.wait_text(chat, "I got: ZZAFTER go on")
  T.not_contains(T.text(chat.bufnr), "This conversation continues", "a fork needs no context")
  T.eq(2, chat.transcript.prompt_turn, "the new prompt is turn 2")
  -- The fork holds the checkpoints: turn 1 can still be rewound.
  T.truthy(require("acp").rewind({ turn = 1, preview = true }), "preview of turn 1")
  T.wait(function()
    return vim.api.nvim_buf_get_name(0):find("rewind%-preview") ~= nil
  end, "preview of turn 1")
  T.contains(T.text(0), "+two", "a.txt would get turn 1's before back")
  vim.cmd("normal q")
end)

T.test("a user's edit of a rewound line is a conflict, both sides kept", function()
  local k_buf = open_file("k.txt", "k1\nk2\nk3\n")
  local chat = T.open_chat("rewind", dir)
  T.eq("end_turn", T.turn(chat, "ZZCONFLICT"), "turn 1")
  T.wait(function()
    return T.lines(k_buf)[2] == "K2 agent"
  end, "the agent's edit in the buffer")
  vim.api.nvim_buf_set_lines(k_buf, 1, 2, false, { "K2 agent and mine" })
  local n = #rewound
  T.truthy(require("acp").rewind({ turn = 1 }), "rewind started")
  local ev = wait_rewound(n + 1)
  T.eq(true, ev.ok, "rewound: " .. tostring(ev.reason))
  local text = T.text(k_buf)
  T.contains(text, "<<<<<<<", "a conflict block")
  T.contains(text, "K2 agent and mine", "the user's side kept")
  T.contains(text, "k2", "the rewound side shown")
end)

T.test("cR on a sent prompt rewinds to before its turn and puts the prompt in the input", function()
  local a_buf = open_file("a.txt", "one\ntwo\nthree\n")
  local chat = T.open_chat("rewind", dir)
  T.eq("end_turn", T.turn(chat, "ZZONE write a"), "turn 1")
  T.wait(function()
    return T.lines(a_buf)[2] == "TWO"
  end, "turn 1's write in the buffer")
  local n = #rewound
  T.cursor_on(chat, "ZZONE write a")
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes("cR", true, false, true), "x", false)
  local ev = wait_rewound(n + 1)
  T.eq(true, ev.ok, "rewound: " .. tostring(ev.reason))
  T.eq(1, ev.turn, "to before the prompt's turn")
  T.eq({ "one", "two", "three" }, T.lines(a_buf), "turn 1's write undone")
  T.eq({ "ZZONE write a" }, T.lines(chat.prompt_buf), "the prompt is in the input to edit")
end)

T.test(":Acp rewind without a turn offers the turns, newest first, then rewinds", function()
  local chat = T.open_chat("rewind", dir)
  T.write_file(dir .. "/b.txt", "b1\nb2\nb3\n")
  T.eq("end_turn", T.turn(chat, "ZZTWO create new"), "turn 1")
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(chat.bufnr)[1])
  T.eq({ "1", "--preview" }, require("acp.commands").complete("", "Acp rewind "), ":Acp rewind <Tab>")
  local seen, orig = {}, vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    seen[#seen + 1] = vim.tbl_map(opts.format_item or tostring, items)
    on_choice(items[1])
  end
  local n = #rewound
  local ok, err = pcall(function()
    vim.cmd("Acp rewind")
    wait_rewound(n + 1)
  end)
  vim.ui.select = orig
  assert(ok, err)
  T.truthy(
    seen[1][1]:match("^1%. ZZTWO create new — 2 files — %d%d:%d%d$"),
    "picker line: " .. tostring(seen[1][1])
  )
  T.eq({ "rewind", "preview first" }, seen[2], "then rewind or preview")
  T.eq(false, exists(dir .. "/new.txt"), "rewound")
end)

T.test("the checkpoints are saved with the transcript: a restarted session can still rewind", function()
  T.write_file(dir .. "/p.txt", "mine\n")
  local chat = T.open_chat("persist", dir)
  T.eq("end_turn", T.turn(chat, "ZZSAVE write p"), "turn 1")
  T.eq("agent\n", T.read_file(dir .. "/p.txt"), "written")
  assert(chat:send({ { type = "text", text = "crash now" } }))
  T.wait(function()
    return chat.status == "dead"
  end, "chat marked dead")
  T.truthy(chat:restart(), "restarted")
  T.wait(function()
    return chat.status == "ready"
  end, "ready again; transcript:\n" .. T.text(chat.bufnr))
  local n = #rewound
  T.truthy(require("acp").rewind({ turn = 1 }), "rewind started")
  local ev = wait_rewound(n + 1)
  T.eq(true, ev.ok, "rewound: " .. tostring(ev.reason))
  T.eq("mine\n", T.read_file(dir .. "/p.txt"), "the new process rewound turn 1's write")
end)

T.test("a line the user saved after the agent's last change stays through a rewind", function()
  local s_buf, s = open_file("s.txt", "s1\ns2\ns3\n")
  local chat = T.open_chat("rewind", dir)
  T.eq("end_turn", T.turn(chat, "ZZSAVED1"), "turn 1")
  T.eq("end_turn", T.turn(chat, "ZZSAVED2"), "turn 2")
  T.wait(function()
    return T.lines(s_buf)[4] == "S4"
  end, "turn 2's disk edit reached the buffer")
  -- The user adds a line of their own and saves it.
  vim.api.nvim_buf_set_lines(s_buf, 0, 0, false, { "saved by me" })
  vim.api.nvim_buf_call(s_buf, function()
    vim.cmd("silent write")
  end)
  local n = #rewound
  T.truthy(require("acp").rewind({ turn = 2 }), "rewind started")
  local ev = wait_rewound(n + 1)
  T.eq(true, ev.ok, "rewound: " .. tostring(ev.reason))
  T.eq({ "saved by me", "s1", "S2", "s3" }, T.lines(s_buf), "turn 2 undone, the saved line kept")
  T.wait(function()
    return T.read_file(s) == "saved by me\ns1\nS2\ns3\n"
  end, "the disk too: " .. tostring(T.read_file(s)))
end)

T.test("a loaded session numbers its turns as the chat shows them, checkpoints saved or not", function()
  T.write_file(dir .. "/p.txt", "mine\n")
  local first = T.open_chat("persist", dir)
  T.eq("end_turn", T.turn(first, "hello there"), "turn 1")
  T.eq("end_turn", T.turn(first, "ZZSAVE write p"), "turn 2")
  local id = first.session_id
  local saved = first.transcript_path and first.transcript_path:gsub("%.jsonl$", ".checkpoints.json")
  first:close()
  -- A session whose checkpoints were not saved (another client's, or an
  -- older plugin's): the backend counted from 1, the chat from the replay.
  T.truthy(saved and vim.uv.fs_stat(saved), "the checkpoints were saved: " .. tostring(saved))
  os.remove(saved)
  local loaded = assert(require("acp").open({ agent = "persist", cwd = dir, load_session_id = id }))
  T.wait(function()
    return loaded.status == "ready"
  end, "the session loaded; transcript:\n" .. T.text(loaded.bufnr))
  T.eq(2, loaded.transcript.prompt_turn, "the replayed prompts are turns 1 and 2")
  T.eq("end_turn", T.turn(loaded, "ZZLATE write p"), "turn 3")
  T.eq(3, loaded.transcript.prompt_turn, "the new prompt is turn 3")
  T.eq("late\n", T.read_file(dir .. "/p.txt"), "written")
  local ok, why = require("acp").rewind({ turn = 3 })
  T.truthy(ok, "rewind to turn 3 started: " .. tostring(why))
  local ev = wait_rewound(#rewound + 1)
  T.eq(true, ev.ok, "rewound: " .. tostring(ev.reason))
  T.eq("agent\n", T.read_file(dir .. "/p.txt"), "turn 3's write undone")
end)

T.run()
