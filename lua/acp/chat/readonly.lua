---@mod acp.chat.readonly A transcript reopened read-only: a chat rendered from
--- the client's own transcript file (acp.agents.history reads it) with the
--- same code as a live one, with no session and the prompt disabled.

local api = vim.api
local history = require("acp.agents.history")

local M = {}

--- Render the lines of a transcript file into a chat: as many as fit in
--- one slice now, the rest queued (acp.chat.replay); each line is decoded when
--- its turn comes, so a long file costs no up-front pass. A line that is not
--- a JSON object is skipped. `done` runs once all are drawn.
---@param chat acp.Chat
---@param lines string[]
---@param done fun()
local function replay(chat, lines, done)
  local slices = require("acp.chat.replay")
  ---@type acp.TranscriptPlayer
  local player = { chat = chat, headers = 0, version = require("acp.rpc.protocol").TRANSCRIPT_VERSION }
  local i = 1
  local function step()
    local r = history.decode(lines[i])
    if r then
      history.play(player, r)
    end
    i = i + 1
    return i <= #lines
  end
  local t0 = slices.start()
  chat.transcript.view:batch(function()
    while i <= #lines and not slices.over(t0) do
      step()
    end
  end)
  if i <= #lines then
    -- One queued job that plays a line per call, not one job per line.
    slices.push(chat.chat_id, step)
  end
  slices.when_done(chat.chat_id, done)
end

--- Reopen a transcript read-only: a chat rendered with the same code as a
--- live one, with no session and the prompt disabled. A long transcript is
--- still being drawn when this returns (acp.chat.replay: `pending(chat_id)`).
---@param path string
---@param opts? {show?: boolean}
---@return acp.Chat? chat, string? err
function M.open(path, opts)
  local ok, lines = pcall(vim.fn.readfile, path)
  if not ok then
    return nil, ("cannot read the transcript %s: %s"):format(path, tostring(lines))
  end
  ---@cast lines string[] readfile returned: the file's lines
  local header
  for _, line in ipairs(lines) do
    header = history.decode(line)
    if header then
      break
    end
  end
  if not header or header.type ~= "transcript" then
    return nil, ("%s is not an acp.nvim transcript"):format(path)
  end
  local config = require("acp.config")
  local name = tostring(header.agent_name or "agent")
  local agent = config.agent(name)
    or { name = name, cmd = {}, env = {}, mcp_servers = {}, quirks = {}, editor_tools = false }
  local cwd = type(header.cwd) == "string" and header.cwd or vim.fn.getcwd()
  local chat = require("acp.chat").create(agent, cwd)
  chat.readonly = true
  chat.status = "readonly"
  chat.session_id = header.session_id
  chat.transcript_path = path
  -- The prompt takes no input: say so instead of the "Ask…" hint (whose
  -- autocmds would put it back).
  local pb = chat.prompt_buf
  vim.bo[pb].modifiable = false
  api.nvim_clear_autocmds({ buffer = pb })
  api.nvim_create_autocmd({ "BufEnter", "WinEnter" }, {
    buffer = pb,
    callback = function()
      require("acp.chat.index").last_id = chat.chat_id
    end,
  })
  local hint_ns = api.nvim_create_namespace("acp.prompt_hint")
  api.nvim_buf_clear_namespace(pb, hint_ns, 0, -1)
  api.nvim_buf_set_extmark(pb, hint_ns, 0, 0, {
    virt_text = { { "read-only transcript: :Acp sessions to continue the session", "AcpNote" } },
    virt_text_pos = "overlay",
  })
  -- A long transcript is drawn in slices after this returns; the chat is
  -- shown at once and fills in.
  replay(chat, lines, function()
    chat:update_winbar()
  end)
  if not opts or opts.show ~= false then
    chat:show()
  end
  chat:update_winbar()
  return chat
end

return M
