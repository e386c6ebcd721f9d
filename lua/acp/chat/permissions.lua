---@mod acp.chat.permissions The chat's side of permission requests: which
--- pending request the keys answer, the digit keys while one waits, a
--- request settled or closed (its lines are drawn by acp.chat.view.permission).

local api = vim.api
local util = require("acp.util")
local permission = require("acp.chat.view.permission")

---@class (partial) acp.Chat
local Chat = {}

--- The permission request the keys answer: the one under the cursor when the
--- cursor is in the transcript, else the oldest pending one.
---@return acp.PermissionRequest?
function Chat:target_permission()
  if api.nvim_get_current_buf() == self.bufnr then
    local req = self.transcript:permission_at(api.nvim_win_get_cursor(0)[1] - 1)
    if req and permission.pending[req.request_id] then
      return req
    end
  end
  return permission.for_chat(self.chat_id)[1]
end

--- Answer a permission request with vim.ui.select.
function Chat:pick_permission()
  local req = self:target_permission()
  if req then
    permission.select(self.chat_id, req)
  else
    util.notify("no permission request is waiting in this chat")
  end
end

--- Map 1..9 in the transcript while a permission request is pending (and
--- only then, so counts work the rest of the time).
function Chat:update_permission_keys()
  local pending = #permission.for_chat(self.chat_id) > 0
  if pending == self.digit_keys or not api.nvim_buf_is_valid(self.bufnr) then
    return
  end
  self.digit_keys = pending
  -- The prompt too (normal mode): the user is often there when the agent
  -- asks, and the transcript says "press 1-4". Counts come back when no
  -- permission is pending.
  ---@type integer[]
  local bufs = { self.bufnr }
  if self.prompt_buf and api.nvim_buf_is_valid(self.prompt_buf) then
    bufs[2] = self.prompt_buf
  end
  for _, buf in ipairs(bufs) do
    for i = 1, 9 do
      local lhs = tostring(i)
      if pending then
        vim.keymap.set("n", lhs, function()
          local req = self:target_permission()
          if req then
            permission.respond_nth(req, i)
          end
        end, {
          buffer = buf,
          nowait = true,
          silent = true,
          desc = "acp.nvim: answer the permission request with option " .. i,
        })
      else
        pcall(vim.keymap.del, "n", lhs, { buffer = buf })
      end
    end
  end
  -- After <C-s> the user is still in Insert mode in the prompt when the
  -- agent asks: digits typed into an empty prompt answer (the prompt says
  -- so); once the user writes the next prompt, digits are text again.
  if self.prompt_buf and api.nvim_buf_is_valid(self.prompt_buf) then
    for i = 1, 9 do
      local lhs = tostring(i)
      if pending then
        vim.keymap.set("i", lhs, function()
          if not self:prompt_is_empty() then
            return lhs
          end
          local req = self:target_permission()
          if req then
            -- Not while the mapping runs: answering redraws the transcript.
            vim.schedule(function()
              permission.respond_nth(req, i)
            end)
            return ""
          end
          return lhs
        end, {
          buffer = self.prompt_buf,
          expr = true,
          nowait = true,
          desc = "acp.nvim: answer the permission request with option " .. i .. " (empty prompt)",
        })
      else
        pcall(vim.keymap.del, "i", lhs, { buffer = self.prompt_buf })
      end
    end
  end
end

---@param ev acp.ev.PermissionRequest
---@return acp.PermissionRequest req, boolean waiting
function Chat:on_permission_request(ev)
  local req, waiting = permission.add(self.chat_id, ev)
  if waiting then
    self.transcript:permission_shown(req)
    self:update_permission_keys()
    self:attention(
      "permission",
      ("asks permission: %s (:Acp permission to answer)"):format(
        require("acp.sanitize").line(req.tool_call.title or "a tool call", 200)
      ),
      vim.log.levels.WARN
    )
  end
  return req, waiting
end

--- A request was answered or withdrawn: replace its prompt by a note.
---@param req acp.PermissionRequest
---@param note string
function Chat:permission_settled(req, note)
  require("acp.edits.review").end_preview(req.request_id)
  self.transcript.view:batch(function()
    self.transcript:permission_settled(req, note)
  end)
  self:update_permission_keys()
end

---@param ev acp.ev.PermissionAuto
function Chat:on_permission_auto(ev)
  local req = {
    request_id = -1,
    chat_id = self.chat_id,
    tool_call = ev.tool_call or {},
    options = {},
  }
  self.transcript:permission_settled(req, permission.auto_note(ev.option, ev.tool_call))
end

--- Close the prompts of every pending permission request of the chat: no
--- one waits for their answer any more (whichever of `agent_exited` and
--- `permission_cancelled` comes first, the prompt does not stay open).
---@param why string
function Chat:_close_permissions(why)
  for _, req in ipairs(permission.for_chat(self.chat_id)) do
    self:permission_settled(req, "permission request closed: " .. why)
  end
  permission.drop_chat(self.chat_id)
  require("acp.chat.view.elicitation").close_chat(self.chat_id, why)
end

return Chat
