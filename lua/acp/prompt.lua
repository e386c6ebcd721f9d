---@mod acp.prompt The prompt input buffer: the hint shown while it is empty
--- and completion of the agent's slash commands.

local api = vim.api
local util = require("acp.util")
local config = require("acp.config")

local M = {}

local hint_ns = api.nvim_create_namespace("acp.prompt_hint")

--- A hint in the empty prompt: how to send.
---@param chat acp.Chat
function M.hint(chat)
  local buf = chat.prompt_buf
  local function update()
    if not api.nvim_buf_is_valid(buf) then
      return true
    end
    api.nvim_buf_clear_namespace(buf, hint_ns, 0, -1)
    local lines = api.nvim_buf_get_lines(buf, 0, 2, false)
    if #lines == 1 and lines[1] == "" then
      local k = config.options.keymaps
      local keys = {}
      if k.submit then
        keys[#keys + 1] = k.submit
      end
      if k.submit_insert then
        keys[#keys + 1] = k.submit_insert .. " (insert)"
      end
      api.nvim_buf_set_extmark(buf, hint_ns, 0, 0, {
        virt_text = { { ("Ask %s… %s to send"):format(chat.agent.name, table.concat(keys, " or ")), "AcpNote" } },
        virt_text_pos = "overlay",
      })
    end
  end
  api.nvim_create_autocmd({ "TextChanged", "TextChangedI", "BufEnter" }, { buffer = buf, callback = update })
  update()
end

--- 'omnifunc' of the prompt: completes the agent's slash commands.
---@param findstart integer
---@param base string
---@return integer|table
function M.omnifunc(findstart, base)
  local line = api.nvim_get_current_line()
  local col = api.nvim_win_get_cursor(0)[2]
  if findstart == 1 then
    local before = line:sub(1, col)
    local start = before:find("/[%w_%-]*$")
    return start and (start - 1) or -3
  end
  local chat = require("acp.chat").of_buf(api.nvim_get_current_buf())
  local items = {}
  for _, c in ipairs(chat and chat.commands or {}) do
    local name = "/" .. tostring(util.field(c, "name") or "")
    if vim.startswith(name, base) then
      items[#items + 1] = { word = name, menu = util.field(c, "description") or "", icase = 1 }
    end
  end
  return items
end

--- Set up a chat's prompt buffer (hint, completion).
---@param chat acp.Chat
function M.attach(chat)
  M.hint(chat)
  vim.bo[chat.prompt_buf].omnifunc = "v:lua.require'acp.prompt'.omnifunc"
end

return M
