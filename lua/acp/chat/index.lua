---@mod acp.chat.index The chats, found by id, by buffer or by session, and
--- the one commands use when the cursor is in no chat. A leaf: the views and
--- the review find a chat here without requiring acp.chat (which creates
--- chats and requires them).

local api = vim.api

local M = {}

---@type table<string, acp.Chat>
M.chats = {}
---@type acp.Chat[] oldest first
M.list = {}
---@type string? the chat used by commands when the cursor is in no chat
M.last_id = nil

--- The chat with this id.
---@param chat_id string
---@return acp.Chat?
function M.get(chat_id)
  return M.chats[chat_id]
end

--- The chat of a buffer (transcript or prompt).
---@param buf integer
---@return acp.Chat?
function M.of_buf(buf)
  for _, chat in ipairs(M.list) do
    if chat.bufnr == buf or chat.prompt_buf == buf then
      return chat
    end
  end
end

--- The live chat (not a read-only transcript) on a session of an agent.
---@param agent_name string
---@param session_id string
---@return acp.Chat?
function M.of_session(agent_name, session_id)
  for _, chat in ipairs(M.list) do
    if chat.session_id == session_id and chat.agent.name == agent_name and not chat.readonly then
      return chat
    end
  end
end

--- The current chat: the one of the current buffer, else the last used one.
---@return acp.Chat?
function M.current()
  local chat = M.of_buf(api.nvim_get_current_buf())
  if chat then
    return chat
  end
  if M.last_id and M.chats[M.last_id] then
    return M.chats[M.last_id]
  end
end

return M
