---@mod acp.chat.turns The chat's turns: the prompt submitted, sent or
--- queued behind a running turn, cancelled; modes and config options set;
--- the end of a turn.

local api = vim.api
local util = require("acp.util")

---@class (partial) acp.Chat
local Chat = {}

---@return boolean the prompt input holds no text
function Chat:prompt_is_empty()
  if not api.nvim_buf_is_valid(self.prompt_buf) then
    return true
  end
  local lines = api.nvim_buf_get_lines(self.prompt_buf, 0, -1, false)
  return vim.trim(table.concat(lines, "")) == ""
end

-- Prompts ------------------------------------------------------------------

--- Send the text of the prompt buffer and clear it.
function Chat:submit()
  local lines = api.nvim_buf_get_lines(self.prompt_buf, 0, -1, false)
  local text = vim.trim(table.concat(lines, "\n"))
  if text == "" then
    return
  end
  local context = require("acp.chat.context")
  -- Mentions become content blocks when the prompt is sent: by then the
  -- agent's capabilities are known and buffers are read as they are.
  local blocks = context.has_mentions(text) and context.deferred(self, text) or { { type = "text", text = text } }
  if self:send(blocks, text) then
    require("acp.chat.prompt").remember(text)
    self.history_pos, self.history_draft = nil, nil
    api.nvim_buf_set_lines(self.prompt_buf, 0, -1, false, {})
    if vim.fn.pumvisible() == 1 and api.nvim_get_mode().mode:sub(1, 1) == "i" then
      -- Sent with <C-s> while the menu of a `/command` was open: the menu
      -- and its info window stayed over the emptied prompt. No matches
      -- close it; <C-e> would close it too but put the typed text back.
      vim.fn.complete(1, {})
    end
  end
end

--- Send a prompt (ACP content blocks). While the session is opening or a turn
--- runs, the prompt is queued and sent when the chat is ready. `blocks` may
--- be a function returning the blocks, called when the prompt is sent.
---@param blocks table[]|fun(): table[]
---@param text? string the text the user typed (default: the text blocks)
---@return boolean ok, string? err
function Chat:send(blocks, text)
  if self.status == "readonly" then
    local err =
      "this chat is a read-only transcript; start a new one with :Acp new, or pick a session with :Acp sessions"
    util.notify(err, vim.log.levels.ERROR)
    return false, err
  end
  if self.status == "dead" or self.status == "failed" or self.status == "closed" then
    -- The way out the transcript names (it named other commands).
    local err = self.status == "closed" and "this chat is closed; start a new one with :Acp new"
      or ("this chat's agent %s; %s, or start a new chat with :Acp new"):format(
        self.status == "dead" and "stopped" or "did not start",
        self:way_out()
      )
    util.notify(err, vim.log.levels.ERROR)
    return false, err
  end
  if text == nil and type(blocks) == "table" then
    local parts = {}
    for _, b in ipairs(blocks) do
      if b.type == "text" and type(b.text) == "string" then
        parts[#parts + 1] = b.text
      end
    end
    text = table.concat(parts, "\n")
  end
  if not self.first_prompt and type(text) == "string" then
    -- A name for pickers until the agent gives a title (Claude gives none
    -- in the session, only in its session list: `:Acp chats` showed ids).
    local line = vim.trim((text:match("[^\n]*%S[^\n]*") or ""))
    if line ~= "" then
      self.first_prompt = vim.fn.strcharlen(line) > 60 and (vim.fn.strcharpart(line, 0, 59) .. "…") or line
    end
  end
  self.queue[#self.queue + 1] = { blocks = blocks, text = text }
  -- The user sent something: show it, wherever the transcript was scrolled.
  self.transcript.view:follow_all()
  self:_flush()
  self:update_winbar()
  return true
end

function Chat:_flush()
  if self.status ~= "ready" or #self.queue == 0 then
    return
  end
  local entry = table.remove(self.queue, 1)
  local blocks = entry.blocks
  if type(blocks) == "function" then
    blocks = blocks()
  end
  if self.rewind_context then
    -- The first prompt after a rewind that could not fork: the agent gets
    -- the conversation before the rewound turn (acp.rewind).
    local meta = { [require("acp.chat.context").REWIND_META] = true }
    blocks = vim.list_extend({ { type = "text", text = self.rewind_context, _meta = meta } }, blocks)
    self.rewind_context = nil
  end
  self.status = "busy"
  -- Before the agent can change anything: the "before" of edits that come
  -- without a diff (acp.edits.fs.prompt_buffers).
  local unsaved = require("acp.edits.fs").prompt_buffers(self.cwd)
  local args = { chat_id = self.chat_id, blocks = blocks, buffers = #unsaved > 0 and unsaved or nil }
  if not require("acp.rpc.backend").notify("acp.prompt", args) then
    -- No backend (it just died): keep the prompt for after :Acp restart.
    table.insert(self.queue, 1, { blocks = blocks, text = entry.text })
    self.status = "ready"
  end
end

--- Ask the agent to switch mode; the change arrives as an event.
---@param mode_id string
---@return boolean
function Chat:set_mode(mode_id)
  if not self.session_id then
    util.notify("the session has not started yet", vim.log.levels.WARN)
    return false
  end
  local res, err = require("acp.rpc.backend").request("acp.set_mode", { chat_id = self.chat_id, mode_id = mode_id })
  if res == nil then
    util.notify("could not switch mode: " .. tostring(err), vim.log.levels.ERROR)
    return false
  end
  return true
end

--- Set a session config option (e.g. the model); the new option list arrives
--- as an event.
---@param config_id string
---@param value any
---@return boolean
function Chat:set_config_option(config_id, value)
  if not self.session_id then
    util.notify("the session has not started yet", vim.log.levels.WARN)
    return false
  end
  local res, err = require("acp.rpc.backend").request(
    "acp.set_config_option",
    { chat_id = self.chat_id, config_id = config_id, value = value }
  )
  if res == nil then
    util.notify("could not set " .. tostring(config_id) .. ": " .. tostring(err), vim.log.levels.ERROR)
    return false
  end
  return true
end

--- Put the text of queued prompts back into the prompt input (before what
--- is there), so nothing the user wrote is lost; empties the queue.
---@return integer n how many prompts were put back
function Chat:_unqueue()
  local texts = {}
  for _, entry in ipairs(self.queue) do
    if entry.text and entry.text ~= "" then
      texts[#texts + 1] = entry.text
    end
  end
  local n = #self.queue
  self.queue = {}
  if #texts > 0 and api.nvim_buf_is_valid(self.prompt_buf) then
    local lines = {}
    for _, t in ipairs(texts) do
      vim.list_extend(lines, vim.split(t, "\n", { plain = true }))
    end
    if not self:prompt_is_empty() then
      vim.list_extend(lines, api.nvim_buf_get_lines(self.prompt_buf, 0, -1, false))
    end
    api.nvim_buf_set_lines(self.prompt_buf, 0, -1, false, lines)
  end
  return n
end

--- Cancel the running turn. Queued prompts go back into the prompt input,
--- to edit or send again. The turn shows as cancelling until the agent ends
--- it; cancelling again stops waiting for an agent that does not (the
--- backend withdraws the prompt and ends the turn as cancelled).
function Chat:cancel()
  -- On a subagent's block, only that child (when the agent allows it).
  if require("acp.chat.subagent").cancel_at_cursor(self) then
    return
  end
  local dropped = self:_unqueue()
  if dropped > 0 then
    util.notify(
      ("%d queued prompt%s put back in the prompt input"):format(dropped, dropped == 1 and " was" or "s were")
    )
  end
  if self.status == "busy" then
    if require("acp.rpc.backend").notify("acp.cancel", { chat_id = self.chat_id }) then
      self.status = "cancelling"
    end
  elseif self.status == "cancelling" then
    if require("acp.rpc.backend").notify("acp.cancel", { chat_id = self.chat_id }) then
      util.notify(("stopped waiting for %s to end the cancelled turn"):format(self.agent.name))
    end
  elseif dropped == 0 then
    util.notify("nothing to cancel: the agent is not working")
  end
  self:update_winbar()
end

---@param ev acp.ev.TurnEnded
function Chat:on_turn_ended(ev)
  local reason = ev.stop_reason or "end_turn"
  if self.status == "busy" or self.status == "cancelling" then
    self.status = "ready"
  end
  self.transcript:turn_ended(reason)
  if #self.queue == 0 then
    self:attention(
      "turn_end",
      ("turn ended (%s)"):format((reason:gsub("_", " "))),
      reason == "end_turn" and vim.log.levels.INFO or vim.log.levels.WARN
    )
  end
  self:_flush()
  self:update_winbar()
end

---@param ev acp.ev.PromptFailed
function Chat:on_prompt_failed(ev)
  if self.status == "busy" or self.status == "cancelling" then
    self.status = "ready"
  end
  self.transcript:error(ev.message or "the prompt failed")
  self:_flush()
  self:update_winbar()
end

return Chat
