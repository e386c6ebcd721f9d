---@mod acp.edits.review.changes.turns The turn each hunk of a chat first
--- appeared in, which the backend does not track: recorded from every
--- `review_changed` (with a few bytes of the hunk's lines, so an id a
--- restarted backend hands out again is not taken for the old hunk).

local M = {}

--- chat id -> hunk key -> the chat's turn when the hunk was first seen.
---@type table<string, table<string, integer>>
local seen = {}

---@param h acp.ReviewHunk
---@return string
local function hunk_key(h)
  local old, new = h.old_lines or {}, h.new_lines or {}
  -- A few bytes of its lines tell it from an old hunk of the same id; all
  -- of them would keep a copy of every line ever reviewed.
  local function bit(l)
    return type(l) == "string" and l:sub(1, 64) or ""
  end
  return table.concat({ tostring(h.id), #old, #new, bit(old[1]), bit(new[1]), bit(new[#new]) }, "\0")
end

--- The number of the chat's turn now (its transcript counts the prompts).
---@param chat_id string
---@return integer
local function turn_of(chat_id)
  local chat = require("acp.chat.index").get(chat_id)
  return chat and chat.transcript and chat.transcript.turn or 0
end

--- Remember the turn of hunks not seen before.
---@param chat_id string
---@param hunks acp.ReviewHunk[]
local function record(chat_id, hunks)
  local map = seen[chat_id] or {}
  seen[chat_id] = map
  local turn
  for _, h in ipairs(hunks) do
    local key = hunk_key(h)
    if not map[key] then
      turn = turn or turn_of(chat_id)
      map[key] = turn
    end
  end
end

--- The turn a hunk of a chat was first seen in (nil: not seen yet).
---@param chat_id string
---@param h acp.ReviewHunk
---@return integer?
function M.hunk_turn(chat_id, h)
  return (seen[chat_id] or {})[hunk_key(h)]
end

--- Whether a hunk of a chat is in the scope.
---@param scope acp.ChangesScope
---@param chat_id string
---@param h acp.ReviewHunk
---@return boolean
local function in_scope(scope, chat_id, h)
  if scope.kind == "all" then
    return true
  end
  if chat_id ~= scope.chat_id then
    return false
  end
  local map = seen[chat_id] or {}
  local key = hunk_key(h)
  if not map[key] then
    -- Not seen in an event (asked before one came): it is new now.
    map[key] = turn_of(chat_id)
    seen[chat_id] = map
  end
  return map[key] >= (scope.turn or 0)
end

M.hunk_key = hunk_key
M.turn_of = turn_of
M.record = record
M.in_scope = in_scope

return M
