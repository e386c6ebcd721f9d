---@mod acp.chat.view.winbar The transcript window bar: agent, session title, mode,
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

--- The parts of the winbar, each with how soon it is shortened (to `short`)
--- then goes when the window is too narrow (higher goes first; the agent's
--- name, the title, the queue, the chat number and the state never go).
---@param chat acp.Chat
---@return {text: string, short?: string, drop?: integer, title?: boolean}[] parts, string? status
local function parts_of(chat)
  local parts = { { text = chat.agent.name } }
  local status_text = ({
    opening = "starting…",
    busy = "working…",
    cancelling = "cancelling…",
    failed = "failed",
    dead = "stopped",
    readonly = "read-only",
  })[chat.status]
  if chat.title then
    parts[#parts + 1] = { text = require("acp.sanitize").line(chat.title, 200), title = true }
  end
  local mode = M.mode_name(chat)
  if mode then
    parts[#parts + 1] = { text = "mode: " .. mode, short = mode, drop = 2 }
  end
  local model = M.model_name(chat)
  if model then
    parts[#parts + 1] = { text = "model: " .. model, short = model, drop = 4 }
  end
  if chat.usage then
    local used = chat.usage.used
    local total = chat.usage.size
    if used and total then
      local pct = (tonumber(total) or 0) > 0 and math.floor(100 * used / total) or 0
      parts[#parts + 1] = { text = ("ctx %s/%s (%d%%)"):format(human(used), human(total), pct), drop = 5 }
    end
    local cost = chat.usage.cost
    local cost_text
    if type(cost) == "table" then
      local amount = cost.amount
      local currency = cost.currency or ""
      if amount then
        cost_text = currency == "USD" and ("$%.2f"):format(amount) or ("%.2f %s"):format(amount, currency)
      end
    elseif type(cost) == "number" then
      cost_text = ("$%.2f"):format(cost)
    end
    if cost_text then
      parts[#parts + 1] = { text = cost_text, drop = 6 }
    end
  end
  if #chat.queue > 0 then
    parts[#parts + 1] = { text = ("queued: %d"):format(#chat.queue) }
  end
  if chat.following then
    parts[#parts + 1] = { text = "following", short = "↓", drop = 3 }
  end
  if #require("acp.chat.index").list > 1 then
    -- Which chat this is, as `:Acp chats` numbers them.
    parts[#parts + 1] = { text = "#" .. chat.n }
  end
  return parts, status_text
end

local SEP = " │ "

--- Columns a session title keeps before the mode or `following` go.
M.TITLE_MIN = 12

--- The winbar of a chat's transcript windows, fitted to `width` columns:
--- the least useful parts go first (cost, context, mode, model), then the
--- title is shortened. Neovim itself would cut from the left, losing the
--- agent's name and the title first.
---@param chat acp.Chat
---@param width? integer columns (default: unlimited)
---@return string
function M.text(chat, width)
  local parts, status_text = parts_of(chat)
  local fn = vim.fn
  local function total()
    local w = 1 + (status_text and (1 + fn.strdisplaywidth(status_text)) or 0)
    for i, p in ipairs(parts) do
      w = w + fn.strdisplaywidth(p.text) + (i > 1 and fn.strdisplaywidth(SEP) or 0)
    end
    return w
  end
  -- Unlimited: no window is that wide (an integer, unlike math.huge).
  local cols = width or 1000000000
  -- Parts go in short forms (`Code` for `mode: Code`) before any is
  -- dropped: at 80 columns the chat column lost `mode:` and `following`
  -- while the short forms fit.
  local order = {}
  for _, p in ipairs(parts) do
    if p.drop then
      order[#order + 1] = p
    end
  end
  table.sort(order, function(a, b)
    return a.drop > b.drop
  end)
  -- Least useful first: a part with a short form is shortened, one
  -- without goes; then the shortened ones go in the same order.
  local function drop(p)
    for i, q in ipairs(parts) do
      if q == p then
        table.remove(parts, i)
        return
      end
    end
  end
  for _, p in ipairs(order) do
    if total() <= cols then
      break
    end
    if p.short then
      p.text = p.short
    else
      drop(p)
    end
  end
  -- The title is cut to fit, first down to TITLE_MIN columns (before the
  -- mode and `following` go: a long title took the whole bar at 80
  -- columns), then as far as needed once nothing else can go.
  local function cut_title(min)
    local over = total() - cols
    if over <= 0 then
      return
    end
    for _, p in ipairs(parts) do
      local w = fn.strdisplaywidth(p.text)
      if p.title and w > min then
        local keep = math.max(min - 1, w - over - 1)
        p.text = fn.strcharpart(p.text, 0, keep) .. "…"
      end
    end
  end
  for _, p in ipairs(order) do
    if total() <= cols then
      break
    end
    if p.drop <= 3 then
      cut_title(M.TITLE_MIN)
      if total() <= cols then
        break
      end
    end
    drop(p)
  end
  cut_title(2)
  local texts = {}
  for _, p in ipairs(parts) do
    texts[#texts + 1] = (p.text:gsub("%%", "%%%%"))
  end
  local text = "%#AcpWinbar# " .. table.concat(texts, SEP)
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
  for _, win in ipairs(chat:transcript_wins()) do
    vim.wo[win][0].winbar = M.text(chat, api.nvim_win_get_width(win))
  end
end

-- A resized window gets a winbar fitted to its new width.
api.nvim_create_autocmd({ "WinResized", "VimResized" }, {
  group = api.nvim_create_augroup("acp.winbar", { clear = true }),
  callback = function()
    for _, chat in ipairs(require("acp.chat.index").list) do
      M.update(chat)
    end
  end,
})

return M
