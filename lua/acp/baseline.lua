---@mod acp.baseline The open files a chat's prompt goes out with: the
--- "before" of agent edits that come without a diff. The backend holds the
--- texts (`acp_client::buffer_sync`); this module only collects them and
--- reports saves.
---
--- An agent that writes a file right after announcing the tool call (or
--- that announces it afterwards, or never sends a diff) leaves the backend
--- nothing to compare with: by the time it reads the file, the new text is
--- there. The buffer still had the old text when the prompt was sent, but
--- not necessarily later: Neovim reloads an unmodified buffer whose file
--- changed (`autoread`, on `:checktime`, focus, or the cursor-hold hooks
--- many configs add) and fires no event while the old text is still there
--- (`FileChangedShell` is skipped for autoread reloads, and `BufReadPre`
--- sees an emptied buffer). So the copy is taken before the prompt goes
--- out, when no edit of that turn can have happened yet; nothing can race
--- it. The backend uses a file's copy when a tool call first names the
--- file, and only believes it when the file changed on disk during the
--- turn.
---
--- For a buffer with unsaved edits the copy is its file's text, read from
--- disk at the same moment.
---
--- Bounded: only buffers of files inside the chat's directory,
--- each up to `MAX_FILE_BYTES`, all together up to `MAX_TOTAL_BYTES`, and
--- only unmodified buffers whose text round-trips to the file byte for byte
--- (unix line ends, UTF-8, no BOM). One set per chat, replaced by its next prompt. A
--- file the user saves during the turn loses its copy (every save is
--- reported, `acp.file_saved`): the difference is then the user's, not the
--- agent's.

local api = vim.api
local util = require("acp.util")
local fs = require("acp.fs")

local M = {}

--- Largest buffer copied.
M.MAX_FILE_BYTES = 1024 * 1024
--- Most bytes copied for one prompt.
M.MAX_TOTAL_BYTES = 16 * 1024 * 1024

local normalize = util.normalize_path

--- True when the buffer's text, as `acp.fs` joins it, is what its file holds.
---@param buf integer
---@return boolean
local function round_trips(buf)
  local bo = vim.bo[buf]
  return bo.fileformat == "unix" and not bo.bomb and (bo.fileencoding == "" or bo.fileencoding == "utf-8")
end

local autocmds = false

local function setup_autocmds()
  if autocmds then
    return
  end
  autocmds = true
  api.nvim_create_autocmd("BufWritePost", {
    group = api.nvim_create_augroup("acp_baseline", { clear = true }),
    callback = function(a)
      local backend = require("acp.backend")
      if vim.bo[a.buf].buftype == "" and a.match ~= "" and backend.running() then
        backend.notify("acp.file_saved", { path = normalize(a.match) })
      end
    end,
  })
end

---@class acp.PromptBuffer a buffer of the chat's directory as a prompt goes out
---@field path string
---@field text string the buffer's text
---@field tick integer its tick (acp.fs.tick)
---@field disk? string its file's text, when the buffer has unsaved edits

--- Copy the open files under `cwd` (see above), for the prompt the
--- chat is about to send. Returns them for the prompt itself: the backend
--- then knows their text before the agent edits them (merging its first
--- edit of one with unsaved edits in one instruction), and the text a
--- write of an agent that reads nothing first is merged against.
---@param cwd string
---@return acp.PromptBuffer[]
function M.snapshot(cwd)
  setup_autocmds()
  local root = normalize(cwd)
  if root:sub(-1) ~= "/" then
    root = root .. "/"
  end
  local total = 0
  local unsaved, unsaved_total = {}, 0
  for _, buf in ipairs(api.nvim_list_bufs()) do
    local modified = vim.bo[buf].modified
    if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" and (modified or round_trips(buf)) then
      local name = api.nvim_buf_get_name(buf)
      if name ~= "" then
        local path = normalize(name)
        local stat = util.uv.fs_stat(path)
        local size = modified and (stat and stat.size or 0)
          or api.nvim_buf_get_offset(buf, api.nvim_buf_line_count(buf))
        if
          vim.startswith(path, root)
          and size <= M.MAX_FILE_BYTES
          and total + size <= M.MAX_TOTAL_BYTES
          and stat ~= nil
        then
          -- A buffer with unsaved edits is not the file: its file's text,
          -- read now, is. The backend would read it too, but only when the
          -- agent names the file, and an agent that rewrites it in place
          -- (truncate, then write) can be caught in between: an empty
          -- "before" made every line look like the agent's.
          local text = modified and fs.read_disk(path) or fs.buffer_text(buf)
          if text then
            total = total + #text
          end
          local bytes = modified and api.nvim_buf_get_offset(buf, api.nvim_buf_line_count(buf)) or 0
          if text and bytes <= M.MAX_FILE_BYTES and unsaved_total + bytes <= M.MAX_TOTAL_BYTES then
            -- The backend's merge base of a write by an agent that reads
            -- nothing first: the file's text now (for a buffer with unsaved
            -- edits, its disk text goes too).
            unsaved[#unsaved + 1] = {
              path = path,
              text = modified and fs.buffer_text(buf) or text,
              tick = fs.tick(buf),
              disk = modified and text or nil,
            }
            unsaved_total = unsaved_total + bytes
          end
        end
      end
    end
  end
  return unsaved
end

return M
