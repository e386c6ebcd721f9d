---@mod acp.chat.view.permission Pending permission requests: inline prompt lines, keys,
--- vim.ui.select, answers.
---
--- The backend asks with a `permission_request` event and waits for
--- `acp.permission_respond`. Every request is answered exactly once: by a key,
--- by `:Acp permission`, by the auto-allow policy, or with nil (dismissed,
--- which the backend turns into "cancelled"). A `permission_cancelled` event
--- (the turn was cancelled) removes the prompt without an answer.

local sanitize = require("acp.sanitize")
local util = require("acp.util")

local M = {}

---@class acp.PermissionRequest
---@field request_id integer
---@field chat_id string
---@field tool_call table
---@field options acp.PermissionOption[]

---@type table<integer, acp.PermissionRequest>
M.pending = {}

local KIND_HL = {
  allow_once = "AcpPermissionAllow",
  allow_always = "AcpPermissionAllow",
  reject_once = "AcpPermissionReject",
  reject_always = "AcpPermissionReject",
}

--- Option id of an option.
---@param opt table
---@return string?
function M.option_id(opt)
  return opt.option_id
end

--- Tool call id of a request's tool call.
---@param req acp.PermissionRequest
---@return string?
function M.tool_call_id(req)
  local tc = req.tool_call or {}
  return tc.tool_call_id or tc.id
end

--- Pending requests of a chat, oldest first.
---@param chat_id string
---@return acp.PermissionRequest[]
function M.for_chat(chat_id)
  return util.requests_of(M.pending, chat_id)
end

--- Lines (indented for a tool call block) asking for an answer.
---@param req acp.PermissionRequest
---@return string[] lines, acp.Highlight[] hls
function M.render(req)
  local n = math.min(#req.options, 9)
  local title = ("  ? Permission needed: press 1-%d (here, or in the empty prompt), or p to pick"):format(n)
  local lines = { title }
  local hls = { { 0, 2, -1, "AcpPermissionTitle" } }
  for i, opt in ipairs(req.options) do
    local key = i <= 9 and tostring(i) or " "
    local kind = sanitize.line(opt.kind or "?", 40)
    local name = sanitize.line(opt.name or M.option_id(opt) or "?", 200)
    local prefix = "    " .. key .. "  "
    local line = prefix .. name .. "  [" .. kind .. "]"
    local row = #lines
    hls[#hls + 1] = { row, 4, 5, "AcpPermissionKey" }
    hls[#hls + 1] = { row, #prefix + #name + 2, -1, KIND_HL[kind] or "AcpPermissionUnknown" }
    lines[#lines + 1] = line
  end
  return lines, hls
end

--- Describe an option for a one-line note: `Allow once [allow_once]`.
---@param opt table?
---@return string
function M.describe(opt)
  if not opt then
    return "dismissed"
  end
  return ("%s [%s]"):format(sanitize.line(opt.name or "?", 200), sanitize.line(opt.kind or "?", 40))
end

--- The note for a request the backend answered by itself (a remembered
--- "always" answer or an auto-allow rule): says whether it was allowed or
--- rejected, and why. Not the option it answered the agent with: after an
--- "Always allow" that is "Allow once" ("allowed by memory: Allow once"
--- read as if the user's answer had been forgotten).
---@param opt acp.PermissionOption? the option chosen
---@param tool_call? table the request's tool call
---@return string
function M.auto_note(opt, tool_call)
  local kind = opt and tostring(opt.kind or "") or ""
  if not opt then
    return "dismissed without asking"
  end
  local tool_kind = (tool_call or {}).kind
  local auto = require("acp.config").options.permission.auto_allow or {}
  if not kind:find("^reject") and tool_kind and vim.tbl_contains(auto, tool_kind) then
    return ("allowed by permission.auto_allow (%s tools)"):format(tool_kind)
  end
  local verb = kind:find("^reject") and "rejected" or "allowed"
  return ("%s by memory: you answered “always %s” to this before"):format(
    verb,
    verb == "rejected" and "reject" or "allow"
  )
end

local function chat_of(req)
  return require("acp.chat.index").get(req.chat_id)
end

--- The option the auto-allow policy picks for a request, if any: the tool
--- kind is in `permission.auto_allow` and the agent offers an allow option
--- (allow_once preferred: auto-allow must not widen into "always").
---@param req acp.PermissionRequest
---@return acp.PermissionOption?
function M.auto_option(req)
  local kind = req.tool_call.kind
  if not kind then
    return nil
  end
  local cfg = require("acp.config").options.permission
  if not vim.tbl_contains(cfg.auto_allow or {}, kind) then
    return nil
  end
  local always
  for _, opt in ipairs(req.options) do
    if opt.kind == "allow_once" then
      return opt
    elseif opt.kind == "allow_always" then
      always = always or opt
    end
  end
  return always
end

--- Register a request from a `permission_request` event. Answers it at once
--- when the auto-allow policy applies. Returns the request and whether it is
--- still waiting for the user.
---@param chat_id string
---@param ev acp.ev.PermissionRequest
---@return acp.PermissionRequest req, boolean waiting
function M.add(chat_id, ev)
  ---@type acp.PermissionRequest
  local req = {
    request_id = ev.request_id,
    chat_id = chat_id,
    tool_call = ev.tool_call or {},
    options = ev.options or {},
  }
  M.pending[req.request_id] = req
  local auto = M.auto_option(req)
  if auto then
    M.respond(req.request_id, M.option_id(auto), "auto-allowed by config: ")
    return req, false
  end
  return req, true
end

--- Answer a pending request. `option_id` nil = dismissed (the backend answers
--- the agent "cancelled"). Returns false when the request is not pending.
---@param request_id integer
---@param option_id? string
---@param note_prefix? string
---@return boolean
function M.respond(request_id, option_id, note_prefix)
  local req = M.pending[request_id]
  if not req then
    return false
  end
  local chosen
  if option_id ~= nil then
    for _, opt in ipairs(req.options) do
      if M.option_id(opt) == option_id then
        chosen = opt
      end
    end
    if not chosen then
      util.notify(("permission request %d has no option %q"):format(request_id, option_id), vim.log.levels.ERROR)
      return false
    end
  end
  M.pending[request_id] = nil
  require("acp.rpc.backend").notify("acp.permission_respond", { request_id = request_id, option_id = option_id })
  local chat = chat_of(req)
  if chat then
    chat:permission_settled(req, (note_prefix or "answered: ") .. M.describe(chosen))
  end
  return true
end

--- The backend withdrew a request (the turn was cancelled).
---@param request_id integer
function M.cancelled(request_id)
  local req = M.pending[request_id]
  if not req then
    return
  end
  M.pending[request_id] = nil
  local chat = chat_of(req)
  if chat then
    chat:permission_settled(req, "permission request cancelled")
  end
end

--- Forget every request of a chat (its agent or the backend died: nobody
--- waits for an answer any more).
---@param chat_id string
function M.drop_chat(chat_id)
  for id, req in pairs(M.pending) do
    if req.chat_id == chat_id then
      M.pending[id] = nil
    end
  end
end

--- Ask with vim.ui.select for one pending request (the oldest of the chat
--- when `req` is nil). Dismissing the menu leaves the request pending.
---@param chat_id string
---@param req? acp.PermissionRequest
function M.select(chat_id, req)
  req = req or M.for_chat(chat_id)[1]
  if not req then
    util.notify("no permission request is waiting in this chat")
    return
  end
  local title = sanitize.line(req.tool_call.title or "tool call", 200)
  vim.ui.select(req.options, {
    prompt = "acp.nvim: allow " .. title .. "?",
    format_item = function(opt)
      return M.describe(opt)
    end,
    kind = "acp.permission",
  }, function(choice)
    if choice then
      M.respond(req.request_id, M.option_id(choice))
    end
  end)
end

--- Answer with the n-th option (1-based), for the digit keys.
---@param req acp.PermissionRequest
---@param n integer
---@return boolean
function M.respond_nth(req, n)
  local opt = req.options[n]
  if not opt then
    return false
  end
  return M.respond(req.request_id, M.option_id(opt))
end

return M
