---@mod acp.winbar The transcript window bar: agent, session title, mode,
--- model, context usage and cost, state.

local api = vim.api

local M = {}

local function human(n)
  n = tonumber(n) or 0
  if n >= 1e6 then
    return ("%.1fM"):format(n / 1e6)
  elseif n >= 1e3 then
    return ("%.1fk"):format(n / 1e3)
  end
  return tostring(math.floor(n))
end

--- The name of the current mode, if the agent has modes.
---@param chat acp.Chat
---@return string?
function M.mode_name(chat)
  local modes = chat.modes
  if not modes then
    return nil
  end
  local id = modes.current_mode_id
  for _, m in ipairs(modes.available_modes or {}) do
    if m.id == id then
      return m.name or id
    end
  end
  return id
end

--- The config option with category "model", if any.
---@param chat acp.Chat
---@return table?
function M.model_option(chat)
  for _, opt in ipairs(chat.config_options or {}) do
    if opt.category == "model" then
      return opt
    end
  end
end

--- The display name of the current model, if any.
---@param chat acp.Chat
---@return string?
function M.model_name(chat)
  local opt = M.model_option(chat)
  if not opt then
    return nil
  end
  local value = opt.current_value
  local function search(options)
    for _, o in ipairs(options or {}) do
      if o.value == value then
        return o.name or value
      end
      local nested = o.options
      if nested then
        local found = search(nested)
        if found then
          return found
        end
      end
    end
  end
  return search(opt.options) or (value ~= nil and tostring(value) or nil)
end

--- The winbar of a chat's transcript windows.
---@param chat acp.Chat
---@param chat acp.Chat
---@return string
function M.text(chat)
  local function esc(s)
    return (tostring(s):gsub("%%", "%%%%"))
  end
  local parts = { esc(chat.agent.name) }
  local status_text = ({
    opening = "starting…",
    busy = "working…",
    cancelling = "cancelling…",
    failed = "failed",
    dead = "stopped",
    readonly = "read-only",
  })[chat.status]
  if chat.title then
    parts[#parts + 1] = esc(chat.title)
  end
  local mode = M.mode_name(chat)
  if mode then
    parts[#parts + 1] = "mode: " .. esc(mode)
  end
  local model = M.model_name(chat)
  if model then
    parts[#parts + 1] = "model: " .. esc(model)
  end
  if chat.usage then
    local used = chat.usage.used
    local total = chat.usage.size
    if used and total then
      local pct = (tonumber(total) or 0) > 0 and math.floor(100 * used / total) or 0
      parts[#parts + 1] = ("ctx %s/%s (%d%%%%)"):format(human(used), human(total), pct)
    end
    local cost = chat.usage.cost
    if type(cost) == "table" then
      local amount = cost.amount
      local currency = cost.currency or ""
      if amount then
        parts[#parts + 1] = esc(currency == "USD" and ("$%.2f"):format(amount) or ("%.2f %s"):format(amount, currency))
      end
    elseif type(cost) == "number" then
      parts[#parts + 1] = esc(("$%.2f"):format(cost))
    end
  end
  if #chat.queue > 0 then
    parts[#parts + 1] = ("queued: %d"):format(#chat.queue)
  end
  local text = "%#AcpWinbar# " .. table.concat(parts, " │ ")
  if status_text then
    text = text .. " %#AcpWinbarBusy#" .. status_text
  end
  return text .. "%*"
end

--- Refresh the winbar of every window showing the transcript.
---@param chat acp.Chat
function M.update(chat)
  if not api.nvim_buf_is_valid(chat.bufnr) then
    return
  end
  local text = M.text(chat)
  for _, win in ipairs(chat:transcript_wins()) do
    vim.wo[win][0].winbar = text
  end
end

return M
