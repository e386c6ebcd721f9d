---@mod acp.agents.history The client's own transcripts: JSONL files the backend
--- writes for every session (see doc/protocol.md, "Transcripts"), listed by
--- `:Acp sessions` and reopened read-only with the chat's own renderer
--- (acp.chat.readonly; `play` draws one record).
---
--- A file is `<dir>/<agent>/<session id>.jsonl`. Its lines are the events
--- the chat got (without `chat_id`); each opening of the session starts with
--- a header `{type = "transcript", agent_name, session_id, cwd, opening,
--- opened_at}`.

local M = {}

--- Lines read from the start of a file to find its title.
M.TITLE_SCAN_LINES = 200

--- Where transcripts are written.
---@return string
function M.dir()
  return vim.fn.stdpath("state") .. "/acp/transcripts"
end

--- A name as the backend puts it in a path (`transcript::path_for`): kept
--- to `[A-Za-z0-9._-]`, one `_` per other character (not per byte: the
--- backend counts UTF-8 characters), never empty or hidden.
---@param s string
---@return string
local function safe_name(s)
  s = s:gsub("[%z\1-\127\192-\255][\128-\191]*", function(c)
    return c:match("^[A-Za-z0-9._-]$") and c or "_"
  end)
  if s == "" or s:sub(1, 1) == "." then
    s = "_" .. s
  end
  return s
end

--- The file the backend writes a session's transcript to.
---@param agent_name string
---@param session_id string
---@return string
function M.path_for(agent_name, session_id)
  return ("%s/%s/%s.jsonl"):format(M.dir(), safe_name(agent_name), safe_name(session_id))
end

---@class acp.TranscriptInfo
---@field path string
---@field agent_name string
---@field session_id string
---@field cwd? string
---@field title? string the session title, else the first line of the first prompt
---@field updated_at string ISO 8601 UTC time of the last write

--- A line of a transcript file as a record (nil: not a JSON object).
---@param line string
---@return table?
function M.decode(line)
  local ok, v = pcall(vim.json.decode, line, { luanil = { object = true, array = true } })
  if ok and type(v) == "table" then
    return v
  end
end

--- The text of a list of content blocks.
---@param content any
---@return string
local function text_of(content)
  local parts = {}
  for _, c in ipairs(type(content) == "table" and content or {}) do
    if type(c) == "table" and type(c.text) == "string" then
      parts[#parts + 1] = c.text
    end
  end
  return table.concat(parts)
end

--- What a transcript file is about, from its first lines; nil when it is
--- not a transcript.
---@param path string
---@return acp.TranscriptInfo?
function M.info(path)
  local ok, lines = pcall(vim.fn.readfile, path, "", M.TITLE_SCAN_LINES)
  if not ok or #lines == 0 then
    return nil
  end
  local header = M.decode(lines[1])
  if not header or header.type ~= "transcript" or type(header.session_id) ~= "string" then
    return nil
  end
  local title, prompt
  for i = 2, #lines do
    local r = M.decode(lines[i])
    local change = r and r.type == "session" and r.change
    if type(change) == "table" then
      if change.change == "info_changed" and type(change.title) == "string" then
        title = change.title
      elseif not prompt and change.change == "entry_added" and type(change.entry) == "table" then
        if change.entry.type == "user_message" then
          prompt = vim.split(text_of(change.entry.content), "\n", { plain = true })[1]
        end
      end
    end
  end
  local stat = vim.uv.fs_stat(path)
  return {
    path = path,
    agent_name = tostring(header.agent_name or "?"),
    session_id = header.session_id,
    cwd = type(header.cwd) == "string" and header.cwd or nil,
    title = title or prompt,
    updated_at = os.date("!%Y-%m-%dT%H:%M:%SZ", stat and stat.mtime.sec or 0) --[[@as string]],
  }
end

--- Every transcript of an agent (all agents without a name), optionally
--- only those of one directory.
---@param agent_name? string
---@param cwd? string
---@return acp.TranscriptInfo[]
function M.list(agent_name, cwd)
  local out = {}
  for _, path in ipairs(vim.fn.glob(M.dir() .. "/*/*.jsonl", false, true)) do
    local info = M.info(path)
    if info and (not agent_name or info.agent_name == agent_name) and (not cwd or info.cwd == cwd) then
      out[#out + 1] = info
    end
  end
  return out
end

--- A transcript's records rendered into a chat, one record at a time (in
--- slices, see acp.chat.replay): the state a record depends on (the format
--- version of its opening, the openings seen) travels with the player.
---@class acp.TranscriptPlayer
---@field chat acp.Chat
---@field headers integer openings seen
---@field version any format version of the current opening
---@field tail? boolean the end of a session drawn while the agent replays it (acp.chat.tail): only the conversation

--- Render one record of a transcript into the player's chat.
---@param player acp.TranscriptPlayer
---@param record table
function M.play(player, record)
  local chat = player.chat
  local protocol = require("acp.rpc.protocol")
  if record.type == "transcript" then
    player.version = record.version
  end
  local r = protocol.decode_record(record, player.version)
  local t = r.type
  if player.tail then
    -- Drawn as the agent's replay of the same turns draws them (which it
    -- then stands for, acp.chat.tail): the conversation only, without what only
    -- the live chat showed (turn ends, usage, permission notes, errors).
    -- Read only for a session record: the change as the backend sent it.
    local change = (t == "session" and r.change or {}) --[[@as acp.SessionChange]]
    if t == "transcript" then
      -- Another opening: its entries may be numbered from 0 again.
      chat.transcript:forget_entries()
    elseif t == "session" and protocol.is_conversation(change) then
      chat:on_session_change(change)
    end
    return
  end
  if t == "transcript" then
    player.headers = player.headers + 1
    if player.headers > 1 then
      chat.transcript:note(
        ("— session %s again (%s) —"):format(
          r.opening == "load" and "loaded" or r.opening == "resume" and "resumed" or "opened",
          r.opened_at and os.date("%Y-%m-%d %H:%M", r.opened_at) or "?"
        )
      )
      chat.transcript:forget_entries()
    end
  elseif t == "session_started" then
    chat.modes = r.modes
    chat.config_options = r.config_options
    chat.capabilities = r.capabilities
  elseif t == "session" then
    chat:on_session_change(r.change or {})
  elseif t == "turn_ended" then
    local reason = r.stop_reason or "end_turn"
    chat.transcript:turn_ended(reason)
  elseif t == "prompt_failed" then
    chat.transcript:error(r.message or "the prompt failed")
  elseif t == "permission_auto" then
    chat:on_permission_auto(r --[[@as acp.ev.PermissionAuto]]) -- a record is the event it recorded
  elseif t == "terminal" then
    chat:on_terminal(r --[[@as acp.ev.Terminal]])
  elseif t == "agent_exited" then
    chat.transcript:error(
      ("The agent %s exited (%s)."):format(chat.agent.name, tostring(r.status or "?")),
      r.stderr_tail
    )
  end
end

return M
