-- Rewind: take the workspace and the conversation back to before a turn
-- (`:Acp rewind`, `require("acp").rewind`). The backend owns the
-- checkpoints and restores the files through the buffer sync (unsaved
-- lines kept by merging, conflicts shown); this module asks for it, shows
-- the picker and the preview, marks the rewound turns and continues the
-- chat in a new session that gets the conversation before the turn.

local api = vim.api
local util = require("acp.util")

local M = {}

local ns = api.nvim_create_namespace("acp.rewind")

---@class acp.RewindTurn
---@field turn integer
---@field label string the prompt's first line
---@field started integer seconds since the epoch
---@field files string[] files the agent touched in the turn

---@class acp.RewindOpts
---@field turn? integer rewind to before this turn (a picker without it)
---@field preview? boolean only show what would change
---@field edit? string put this text in the prompt input once rewound

--- Why the chat cannot rewind now, or nil.
---@param chat acp.Chat
---@return string?
local function cannot(chat)
  if chat.readonly then
    return "this chat is a read-only transcript; rewind works in a live chat (:Acp sessions opens the session itself)"
  end
  if not chat.session_id or chat.status == "opening" then
    return "the chat's session is not open; wait for it to start, or :Acp restart"
  end
  if chat.status == "dead" or chat.status == "failed" or chat.status == "closed" then
    return ("the chat's agent is %s; :Acp restart it first"):format(chat.status == "closed" and "closed" or "stopped")
  end
  return nil
end

--- Ask the backend for a rewind, a preview, or (no turn) the turns for
--- the picker. The outcome arrives as an event and fires `User AcpRewound`.
---@param chat acp.Chat
---@param opts? acp.RewindOpts
---@return boolean ok, string? reason
function M.rewind(chat, opts)
  opts = opts or {}
  local why = cannot(chat)
  if why then
    return false, why
  end
  local turn = opts.turn
  if turn ~= nil then
    if type(turn) ~= "number" or turn < 1 or turn % 1 ~= 0 then
      return false, "the turn must be a whole number from 1; :Acp rewind lists them"
    end
    local sent = chat.transcript.prompt_turn or 0
    if turn > sent then
      return false,
        sent == 0 and "this chat has no turns to rewind yet"
          or ("there is no turn %d: this chat has %d; :Acp rewind lists them"):format(turn, sent)
    end
  end
  chat.rewind_pending = { turn = turn, preview = opts.preview, edit = opts.edit }
  local args = { chat_id = chat.chat_id, turn = turn, preview = opts.preview or nil }
  if not require("acp.rpc.backend").notify("acp.rewind", args) then
    chat.rewind_pending = nil
    return false, "the backend is not running; :Acp restart starts it again"
  end
  return true
end

--- One picker line: `3. fix the parser — 2 files — 14:05`.
---@param t acp.RewindTurn
---@return string
function M.format_turn(t)
  local files = #(t.files or {})
  return ("%d. %s — %s — %s"):format(
    t.turn,
    t.label ~= "" and t.label or "(no text)",
    files == 1 and "1 file" or (files .. " files"),
    os.date("%H:%M", t.started)
  )
end

---@class acp.ev.RewindTurns: acp.Event
---@field turns acp.RewindTurn[]

---@param chat acp.Chat
---@param ev acp.ev.RewindTurns
function M.on_turns(chat, ev)
  chat.rewind_pending = nil
  local turns = ev.turns or {}
  if #turns == 0 then
    util.notify("this chat has no turns to rewind yet")
    return
  end
  local items = {}
  for i = #turns, 1, -1 do
    items[#items + 1] = turns[i]
  end
  vim.ui.select(items, {
    prompt = "Rewind to before turn",
    format_item = M.format_turn,
  }, function(choice)
    if not choice then
      return
    end
    vim.ui.select({ "rewind", "preview first" }, {
      prompt = ("Turn %d and later are undone (files and conversation)"):format(choice.turn),
    }, function(action)
      local ok, why
      if action == "rewind" then
        ok, why = M.rewind(chat, { turn = choice.turn })
      elseif action == "preview first" then
        ok, why = M.rewind(chat, { turn = choice.turn, preview = true })
      else
        return
      end
      if not ok then
        util.notify("cannot rewind: " .. tostring(why), vim.log.levels.WARN)
      end
    end)
  end)
end

---@class acp.ev.RewindPreview: acp.Event
---@field turn integer
---@field files {path: string, now?: string, ["then"]?: string}[]
---@field reason? string

--- The preview: every file's change as a unified diff, in a scratch buffer
--- (`R` rewinds, `q` closes).
---@param chat acp.Chat
---@param ev acp.ev.RewindPreview
function M.on_preview(chat, ev)
  chat.rewind_pending = nil
  if ev.reason then
    util.notify("cannot rewind to before turn " .. ev.turn .. ": " .. ev.reason, vim.log.levels.WARN)
    return
  end
  local lines = {
    ("# Rewind to before turn %d: %d file(s) change. R rewinds, q closes."):format(ev.turn, #ev.files),
  }
  for _, f in ipairs(ev.files) do
    local now, after = f.now or "", f["then"] or ""
    local rel = vim.fn.fnamemodify(f.path, ":~:.")
    lines[#lines + 1] = ""
    lines[#lines + 1] = ("--- %s\t(now%s)"):format(rel, f.now == nil and ", missing" or "")
    lines[#lines + 1] = ("+++ %s\t(before turn %d%s)"):format(rel, ev.turn, f["then"] == nil and ", removed" or "")
    local diff = vim.diff(now, after, { ctxlen = 3 }) --[[@as string]]
    for _, l in ipairs(vim.split(diff, "\n", { plain = true, trimempty = true })) do
      lines[#lines + 1] = l
    end
  end
  local buf = api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].filetype = "diff"
  pcall(api.nvim_buf_set_name, buf, ("acp://rewind-preview/%s/%d"):format(chat.chat_id, ev.turn))
  vim.cmd("botright split")
  api.nvim_win_set_buf(0, buf)
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, desc = desc })
  end
  local function close()
    api.nvim_buf_delete(buf, { force = true })
    require("acp.chat.layout").relayout()
  end
  map("q", close, "close the rewind preview")
  map("R", function()
    close()
    local ok, why = M.rewind(chat, { turn = ev.turn })
    if not ok then
      util.notify("cannot rewind: " .. tostring(why), vim.log.levels.WARN)
    end
  end, "rewind to before this turn")
end

--- Marks the prompts of turns `turn` and later as rewound (they stay
--- visible, above the rule).
---@param chat acp.Chat
---@param turn integer
local function mark_rewound(chat, turn)
  local view = chat.transcript.view
  for _, block in ipairs(chat.transcript.prompt_blocks or {}) do
    local data = block.data
    if data.prompt_turn and data.prompt_turn >= turn and not data.rewound then
      data.rewound = true
      local start = view:range(block)
      if start then
        pcall(api.nvim_buf_set_extmark, view.buf, ns, start, 0, {
          virt_text = { { ("⟲ turn %d, rewound"):format(data.prompt_turn), "AcpNote" } },
          virt_text_pos = "eol",
        })
      end
    end
  end
end

--- Buffers of files the rewind removed: wiped when unchanged; one with
--- unsaved lines stays (the user's text is never dropped).
---@param paths string[]
---@return string[] kept the paths whose buffer has unsaved lines
local function drop_buffers(paths)
  local kept = {}
  for _, path in ipairs(paths) do
    local buf = vim.fn.bufnr(path)
    if buf > 0 and api.nvim_buf_is_loaded(buf) then
      if vim.bo[buf].modified then
        kept[#kept + 1] = path
      else
        pcall(api.nvim_buf_delete, buf, { force = true })
      end
    end
  end
  return kept
end

---@class acp.ev.Rewound: acp.Event
---@field turn integer
---@field ok boolean
---@field reason? string
---@field restored string[]
---@field removed string[]
---@field failed string[]
---@field context? string
---@field checkpoints? string
---@field forked? boolean
---@field fork_note? string

---@param chat acp.Chat
---@param ev acp.ev.Rewound
function M.on_rewound(chat, ev)
  local pending = chat.rewind_pending or {}
  chat.rewind_pending = nil
  local data = {
    chat_id = chat.chat_id,
    turn = ev.turn,
    ok = ev.ok,
    reason = ev.reason,
    forked = ev.forked == true,
    fork_note = ev.fork_note,
  }
  if not ev.ok then
    chat.transcript.view:batch(function()
      local lines = { ("✗ rewind to before turn %d failed: %s"):format(ev.turn, ev.reason or "no reason given") }
      for _, f in ipairs(ev.failed or {}) do
        lines[#lines + 1] = "  " .. f
      end
      chat.transcript:note(lines, "AcpError")
    end)
    util.notify("rewind failed: " .. tostring(ev.reason), vim.log.levels.ERROR)
    api.nvim_exec_autocmds("User", { pattern = "AcpRewound", data = data })
    return
  end
  local kept = drop_buffers(ev.removed or {})
  local restored, removed = #(ev.restored or {}), #(ev.removed or {})
  chat.transcript.view:batch(function()
    mark_rewound(chat, ev.turn)
    local rule = ("──── rewound to before turn %d: the turns above from %d on are no longer in the conversation ────"):format(
      ev.turn,
      ev.turn
    )
    local lines = { rule, ("files: %d restored, %d removed"):format(restored, removed) }
    for _, path in ipairs(kept) do
      lines[#lines + 1] = ("  %s was removed from disk; its buffer keeps your unsaved lines"):format(
        vim.fn.fnamemodify(path, ":~:.")
      )
    end
    if ev.forked then
      lines[#lines + 1] = ("the conversation goes on in a session the agent forked before turn %d: it remembers the turns before"):format(
        ev.turn
      )
    else
      if ev.fork_note then
        lines[#lines + 1] = "no fork: " .. ev.fork_note
      end
      lines[#lines + 1] = ev.context
          and "the conversation goes on in a new session: the agent gets the conversation before this turn with your next prompt"
        or "the conversation goes on in a new session, from its start"
    end
    lines[#lines + 1] = "the earlier turns' edits left review with the old session (:Acp rewind still undoes them)"
    chat.transcript:note(lines)
    chat.transcript:forget_entries()
  end)
  chat.transcript.prompt_turn = ev.turn - 1
  -- The old session's review goes with it: drawn but dead otherwise.
  require("acp.edits.review").drop_chat(chat.chat_id)
  if ev.forked then
    -- The backend moved the chat to the fork; its `session_started`
    -- follows and numbers the turns from here.
    chat.transcript:session_opening()
  else
    chat.rewind_context = ev.context
    -- Not from inside the event's dispatch (see acp.events.dispatch).
    vim.schedule(function()
      if chat.status ~= "closed" then
        chat:start({ checkpoints = ev.checkpoints })
      end
    end)
  end
  if pending.edit then
    api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, vim.split(pending.edit, "\n", { plain = true }))
    chat:focus_prompt()
  end
  api.nvim_exec_autocmds("User", { pattern = "AcpRewound", data = data })
end

--- The transcript key: rewind to before the prompt under the cursor and
--- put its text in the prompt input, to edit and send again from there.
---@param chat acp.Chat
---@param row integer 0-based transcript row
---@return boolean ok, string? reason
function M.edit_from(chat, row)
  local block = chat.transcript.view:block_at(row)
  local data = block and block.data
  local text = require("acp.chat.prompt").message_text(chat, row)
  if not text or not data or not data.prompt_turn then
    return false, "no prompt of yours under the cursor"
  end
  if data.rewound then
    return false, "this turn was rewound already; cc puts its text in the prompt"
  end
  return M.rewind(chat, { turn = data.prompt_turn, edit = text })
end

return M
