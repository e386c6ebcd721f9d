---@mod acp.chat.tail The end of a stored session, drawn at once from the
--- client's own transcript while the agent replays the session.
---
--- A `session/load` replay is whole only when the agent answers the load:
--- 0.7-1.6 s for 2,000 turns, never with an agent that replays and does not
--- answer. Nothing of it can be drawn before, since any update may still
--- follow. The backend writes every session a chat saw to a transcript
--- (acp.agents.history); when one exists for the session being loaded, its last
--- turns are drawn from it as the chat opens, before the backend has even
--- started. The agent's replay is still held (acp.chat.backlog) and, once whole,
--- reconciled with what was drawn (`M.reconcile`): when its last turns say
--- what the drawn turns said (the same messages, thoughts and tool calls, in
--- the same order) they are dropped and only the older turns are drawn,
--- above; otherwise (the session went on in another client, the transcript
--- lost its last writes, the agent replays differently) what was drawn goes
--- and the replay is drawn in its place. Nothing is shown twice, and nothing
--- the agent replays is dropped unless the same is on screen.

local history = require("acp.agents.history")

local M = {}

--- Turns drawn from the transcript (the last ones).
M.TURNS = 3
--- Most records drawn: a turn of more (a long stream stored unmerged) is
--- left to the replay, so the open never waits for it.
M.MAX_RECORDS = 2000
--- Bytes read first from the end of the file, then twice as many, up to
--- `MAX_BYTES`: a long transcript is never read whole.
M.FIRST_BYTES = 64 * 1024
M.MAX_BYTES = 8 * 1024 * 1024
--- Tests set false to draw every turn at once (the reference the sliced
--- drawing must match line for line).
M.SLICED = true

---@class acp.TailDrawn
---@field turns integer user messages drawn
---@field signature string[] what each drawn turn said (`signature`)

---@type table<string, acp.TailDrawn> by chat id, until reconciled
local drawn = {}

--- True when a transcript record starts a turn (a user message).
---@param r table
---@return boolean
local function starts_turn(r)
  local c = r.type == "session" and type(r.change) == "table" and r.change
  return c and c.change == "entry_added" and type(c.entry) == "table" and c.entry.type == "user_message" or false
end

--- The text of an entry's or a chunk's content blocks.
---@param content any
---@return string
local function text_of(content)
  if type(content) ~= "table" then
    return ""
  end
  if type(content.text) == "string" then
    return content.text
  end
  local parts = {}
  for _, c in ipairs(content) do
    if type(c) == "table" and type(c.text) == "string" then
      parts[#parts + 1] = c.text
    end
  end
  return table.concat(parts)
end

--- What each turn of a list of session changes says: per turn (from a
--- user message on), its messages and thoughts with their whole text and
--- its tool calls by id, in order. Chunking does not count (a live stream
--- and a replay cut text differently); formatting does. Changes before the
--- first user message are their own turn.
---@param changes acp.SessionChange[]
---@return string[]
function M.signature(changes)
  local turns = {}
  ---@type table<integer, {kind: string, parts: string[]}>
  local by_index = {}
  local current
  ---@return table
  local function open()
    current = {}
    turns[#turns + 1] = current
    return current
  end
  for _, c in ipairs(changes) do
    local kind = c.change
    -- Read as a table: acp.Entry does not declare the nested `tool_call`.
    local entry = (kind == "entry_added" and type(c.entry) == "table" and c.entry or nil) --[[@as table?]]
    if entry and entry.type == "user_message" then
      open()
    end
    current = current or open()
    if entry then
      local t = entry.type
      if t == "user_message" or t == "agent_message" or t == "thought" then
        local item = { kind = t, parts = { text_of(entry.content) } }
        if type(c.index) == "number" then
          by_index[c.index] = item
        end
        current[#current + 1] = item
      elseif t == "tool_call" then
        local state = type(entry.tool_call) == "table" and entry.tool_call or entry
        current[#current + 1] = { kind = "tool", parts = { tostring(state.id or state.tool_call_id or "") } }
      end
    elseif kind == "text_appended" then
      local item = by_index[c.index]
      if item then
        item.parts[#item.parts + 1] = text_of(c.content)
      end
    end
  end
  local out = {}
  for i, turn in ipairs(turns) do
    local items = {}
    for j, item in ipairs(turn) do
      items[j] = item.kind .. "\0" .. table.concat(item.parts)
    end
    out[i] = table.concat(items, "\1")
  end
  return out
end

--- The version of the records after the file's first header (every header
--- has the session's agent and id: nil when the file is not this session's).
---@param f file the transcript, read from its start
---@param agent_name string
---@param session_id string
---@return any? version
local function first_header(f, agent_name, session_id)
  local line = f:read("*l")
  local header = line and history.decode(line)
  if
    not header
    or header.type ~= "transcript"
    or header.session_id ~= session_id
    or tostring(header.agent_name) ~= agent_name
  then
    return nil
  end
  return header.version or 1
end

--- The records of the last `M.TURNS` turns of a transcript file, oldest
--- first (the headers of openings between them included), and their
--- format version; nil when there is none to draw, or when any of them may
--- be of an older format.
---@param path string
---@param agent_name string
---@param session_id string
---@return table[]? records, any version
function M.read(path, agent_name, session_id)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local first_version = first_header(f, agent_name, session_id)
  if not first_version then
    f:close()
    return nil
  end
  local current = require("acp.rpc.protocol").TRANSCRIPT_VERSION
  local size = f:seek("end", 0)
  if not size then
    f:close()
    return nil
  end
  local want = math.min(size, M.FIRST_BYTES) --[[@as integer]]
  -- Newest first while read; `governed`: the oldest record read is under
  -- a header read (whose version is then known).
  local records, turns, governed, old
  while true do
    f:seek("set", size - want)
    local data = f:read(want) or ""
    local lines = vim.split(data, "\n", { plain = true })
    if want < size then
      -- The first line is cut.
      table.remove(lines, 1)
    end
    records, turns, governed, old = {}, 0, false, false
    for i = #lines, 1, -1 do
      local r = lines[i] ~= "" and history.decode(lines[i])
      if r then
        records[#records + 1] = r
        if r.type == "transcript" then
          governed = true
          if tonumber(r.version) ~= current then
            old = true
            break
          end
        else
          governed = false
          if starts_turn(r) then
            turns = turns + 1
            if turns == M.TURNS then
              break
            end
          end
          if #records > M.MAX_RECORDS then
            break
          end
        end
      end
    end
    if turns == M.TURNS or old or #records > M.MAX_RECORDS or want >= size or want >= M.MAX_BYTES then
      break
    end
    want = math.min(size, want * 2) --[[@as integer]]
  end
  f:close()
  -- Versions only grow: a file that starts with the current one has no
  -- other.
  if old or #records > M.MAX_RECORDS or not (governed or tonumber(first_version) == current) then
    return nil
  end
  -- From the oldest turn start read: records before it end a turn whose
  -- start was not read.
  local first
  for i = #records, 1, -1 do
    if starts_turn(records[i]) then
      first = i
      break
    end
  end
  if not first then
    return nil
  end
  local out = {}
  for i = first, 1, -1 do
    out[#out + 1] = records[i]
  end
  return out, current
end

--- The transcript records of the drawn turns as the changes the tail draws
--- (the conversation only: what the agent's replay of them draws), cut into
--- turns as acp.chat.backlog cuts a replay into runs: a turn starts at a user
--- message that follows the agent's output (the header logic then sees the
--- agent as the last side). Oldest first; nil when a header (another
--- opening) lies inside a turn, where the turns cannot be drawn apart.
--- `users[k]`: user messages before turn k; `forgets[k]`: turn k comes
--- after a header (its entries are numbered afresh).
---@param records table[]
---@param version any
---@return acp.SessionChange[][]? turns, integer[] users, table<integer, boolean> forgets
local function turns_of(records, version)
  local protocol = require("acp.rpc.protocol")
  local turns, users, forgets = {}, {}, {}
  local header, agent, count = false, false, 0
  for _, record in ipairs(records) do
    if record.type == "transcript" then
      version = record.version
      header = true
    end
    local r = protocol.decode_record(record, version)
    local change = r.type == "session" and type(r.change) == "table" and r.change or nil
    if change and protocol.is_conversation(change) then
      local entry = change.change == "entry_added" and type(change.entry) == "table" and change.entry or {}
      if entry.type == "user_message" and (#turns == 0 or agent) then
        turns[#turns + 1] = {}
        users[#turns] = count
        forgets[#turns] = header
        header, agent = false, false
      elseif header or #turns == 0 then
        return nil, users, forgets
      end
      if entry.type == "user_message" then
        count = count + 1
      elseif entry.type == "agent_message" or entry.type == "thought" then
        agent = true
      end
      local turn = turns[#turns]
      turn[#turn + 1] = change
    end
  end
  return turns, users, forgets
end

---@type table<string, acp.BacklogJob[]> older turns still being drawn, by chat id
local jobs = {}
---@type table<string, table> the drawing of a chat's tail under way (its token), by chat id
local drawing = {}

--- Put the prompts an older turn drew (appended last) before the newer
--- ones and number them all again, as drawing in order would have.
---@param t acp.Transcript
---@param before integer prompts before the turn was drawn
local function prompts_in_order(t, before)
  local prompts = t.session_prompts or {}
  if #prompts <= before then
    return
  end
  local moved = {}
  for i = before + 1, #prompts do
    moved[#moved + 1] = prompts[i]
    prompts[i] = nil
  end
  for i = #moved, 1, -1 do
    table.insert(prompts, 1, moved[i])
  end
  local base = t.turn_base or 0
  for i, block in ipairs(prompts) do
    block.data.prompt_turn = base + i
  end
  t.prompt_turn = base + #prompts
end

--- Take back the turn numbers of the prompts drawn since there were
--- `before` (a resumed session's: the backend numbers its next prompt after
--- them, so they are not the chat's to rewind to by number).
---@param t acp.Transcript
---@param before integer
---@param prompt_turn? integer the chat's count before they were drawn
local function unnumber(t, before, prompt_turn)
  local prompts = t.session_prompts or {}
  for i = #prompts, before + 1, -1 do
    prompts[i].data.prompt_turn = nil
    prompts[i] = nil
  end
  t.prompt_turn = prompt_turn
end

--- A slice of an older turn of the tail, drawn above (acp.chat.replay's
--- `push_behind` protocol).
---@param job acp.BacklogJob
---@return boolean
local function draw_older(job)
  local t = job.chat.transcript
  local before, prompt_turn = t.session_prompts and #t.session_prompts or 0, t.prompt_turn
  local more = require("acp.chat.backlog").draw_older(job)
  if job.cancelled then
    return false
  elseif job.unnumbered then
    unnumber(t, before, prompt_turn)
  else
    prompts_in_order(t, before)
  end
  return more
end

--- Stop drawing a chat's older turns (what was drawn went).
---@param chat_id string
local function cancel(chat_id)
  for _, job in ipairs(jobs[chat_id] or {}) do
    job.cancelled = true
  end
  jobs[chat_id] = nil
  drawing[chat_id] = nil
end

--- Draw the end of the session a chat is loading from the chat's own
--- transcript of it, when there is one and the chat shows nothing yet.
--- Nothing is drawn in the call: the last turn is queued at the tail
--- (acp.chat.replay: slices of a few milliseconds right after the call, ahead of
--- every later event of the chat), the turns before it above it (behind
--- everything else), newest first, so opening never holds the editor for a
--- turn's drawing (three turns in one call were 29-38 ms on a loaded
--- machine, issue #30), and windows keep showing the same lines while they
--- fill in. `opts.resume`: a
--- `session/resume`, which replays nothing: what is drawn stays, nothing is
--- reconciled, and its prompts are not numbered (the backend's numbering
--- starts after them). Returns whether something was drawn.
---@param chat acp.Chat
---@param session_id string
---@param opts? {resume?: boolean}
---@return boolean
function M.draw(chat, session_id, opts)
  local resume = opts and opts.resume
  local t = chat.transcript
  if not t.view.empty or not require("acp.config").options.transcripts then
    return false
  end
  local name = chat.agent.name
  local ok, records, version = pcall(M.read, history.path_for(name, session_id), name, session_id)
  if not ok or not records then
    return false
  end
  local changes = {}
  for _, r in ipairs(records) do
    if r.type == "session" and type(r.change) == "table" then
      changes[#changes + 1] = r.change
    end
  end
  local turns, users, forgets = turns_of(records, version)
  local before, prompt_turn = t.session_prompts and #t.session_prompts or 0, t.prompt_turn
  if not M.SLICED then
    -- Everything now (the reference the slices must match).
    local following = chat.following
    chat.following = nil
    local dok, err = pcall(t.view.batch, t.view, function()
      ---@type acp.TranscriptPlayer
      local player = { chat = chat, headers = 1, version = version, tail = true }
      for _, r in ipairs(records) do
        history.play(player, r)
      end
    end)
    chat.following = following
    if not dok then
      require("acp.util").notify("the end of the session could not be shown: " .. tostring(err), vim.log.levels.WARN)
      M.forget(chat)
      return false
    end
    if resume then
      unnumber(t, before, prompt_turn)
    end
  else
    local replay = require("acp.chat.replay")
    local token = {}
    drawing[chat.chat_id] = token
    --- Queued at the tail, in order (acp.chat.replay: a slice at a time, ahead
    --- of everything the chat gets next).
    local function at_tail(fn, a)
      replay.push(chat.chat_id, function()
        if drawing[chat.chat_id] ~= token then
          return
        end
        -- Old tool calls must not move the user's file view
        -- (Chat:on_tool_state).
        local following = chat.following
        chat.following = nil
        local dok, err = pcall(fn, a)
        chat.following = following
        if not dok then
          error(err, 0)
        end
      end)
    end
    if not turns or #turns < 2 then
      ---@type acp.TranscriptPlayer
      local player = { chat = chat, headers = 1, version = version, tail = true }
      for _, r in ipairs(records) do
        at_tail(function(record)
          history.play(player, record)
        end, r)
      end
    else
      -- The state drawing the turns before it in order would have left.
      t.turn = users[#turns]
      t.side = not forgets[#turns] and "agent" or nil
      for _, change in ipairs(turns[#turns]) do
        at_tail(function(c)
          t:apply(c)
        end, change)
      end
      local list = {}
      jobs[chat.chat_id] = list
      for k = #turns - 1, 1, -1 do
        ---@type acp.BacklogJob
        local job = {
          chat = chat,
          run = { changes = turns[k] },
          next = 1,
          state = {
            entries = {},
            tools = {},
            turn = users[k],
            side = k > 1 and not forgets[k] and "agent" or nil,
            after_header = false,
          },
          unnumbered = resume,
        }
        list[#list + 1] = job
        replay.push_behind(chat.chat_id, draw_older, job)
      end
      replay.push_behind(chat.chat_id, function()
        if jobs[chat.chat_id] == list then
          jobs[chat.chat_id] = nil
        end
        return require("acp.chat.backlog").make_folds(chat)
      end)
    end
    if resume then
      at_tail(function()
        unnumber(t, before, prompt_turn)
      end)
    end
  end
  if resume then
    -- Nothing to reconcile with; the backend numbers the session's next
    -- prompt after these (`session_started`), which are not counted again.
    return true
  end
  local signature = M.signature(changes)
  drawn[chat.chat_id] = { turns = #signature, signature = signature }
  return true
end

--- True while a chat shows the end of its session drawn from its
--- transcript, not yet reconciled with the agent's replay.
---@param chat_id string
---@return boolean
function M.shown(chat_id)
  return drawn[chat_id] ~= nil
end

--- What was drawn goes: the chat shows nothing again.
---@param chat acp.Chat
function M.forget(chat)
  drawn[chat.chat_id] = nil
  cancel(chat.chat_id)
  chat.terminals = {}
  chat.transcript:reset()
end

--- Reconcile what was drawn with the agent's whole replay, cut into runs
--- (acp.chat.backlog). Returns the number of runs still to draw: all of them
--- when what was drawn went (it differed), those before the drawn turns
--- when the replay's last runs say what was drawn (they are not drawn
--- again), all of them too when nothing was drawn.
---@param chat acp.Chat
---@param runs acp.BacklogRun[]
---@param users integer user messages in the replay
---@return integer
function M.reconcile(chat, runs, users)
  local d = drawn[chat.chat_id]
  drawn[chat.chat_id] = nil
  if not d then
    return #runs
  end
  if #runs == 0 then
    -- The agent replayed nothing (an agent that does not): what the
    -- transcript said stays, nothing could match it.
    return 0
  end
  local at = users - d.turns
  for i = #runs, 1, -1 do
    local run = runs[i]
    if run.turn < at then
      break
    end
    local first = run.changes[1]
    if
      run.turn == at
      and first
      and first.change == "entry_added"
      and type(first.entry) == "table"
      and first.entry.type == "user_message"
    then
      local changes = {}
      for j = i, #runs do
        vim.list_extend(changes, runs[j].changes)
      end
      if vim.deep_equal(M.signature(changes), d.signature) then
        chat.transcript.turn = users
        return i - 1
      end
      break
    end
  end
  M.forget(chat)
  return #runs
end

--- Drop what is known of a chat (it is gone).
---@param chat_id string
function M.drop(chat_id)
  drawn[chat_id] = nil
  cancel(chat_id)
end

require("acp.chat.backlog").tail = M

return M
