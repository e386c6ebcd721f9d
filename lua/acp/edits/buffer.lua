---@mod acp.edits.buffer A buffer's text and version as the backend knows a
--- file's: the text a file would hold (eol included) and the tick that names
--- one version of it. A leaf: acp.edits.fs (the backend's reads and
--- instructions) and the review (acp.edits.review, which fs reports to)
--- both build on it, so neither needs the other for these.

local api = vim.api
local util = require("acp.util")

local M = {}

--- A buffer's version as the backend knows it (the `tick` of reports,
--- reads and instructions): `b:changedtick` tagged with the buffer number.
--- A buffer wiped and opened again is a new buffer whose changedtick starts
--- over; with the tick alone, its text at some tick could be taken for the
--- old buffer's text at the same tick and a merge made on that applied over
--- the user's edits. (Neovim never reuses a buffer number in a session, so
--- the versions of a file only grow.)
---@param buf integer
---@return integer
function M.tick(buf)
  return buf * 4294967296 + api.nvim_buf_get_changedtick(buf)
end

--- Text of a buffer's lines as a file would hold them: every line ends with
--- "\n", except the buffer's last line when it has 'noeol'.
---@param buf integer
---@param first integer 0-based row of lines[1]
---@param lines string[]
---@param count? integer lines in the text read (default: the buffer's)
---@return string
function M.join(buf, first, lines, count)
  if #lines == 0 then
    return ""
  end
  local text = table.concat(lines, "\n")
  local is_last = first + #lines >= (count or api.nvim_buf_line_count(buf))
  if is_last and not vim.bo[buf].eol then
    return text
  end
  return text .. "\n"
end

--- The whole text of a buffer, as a file would hold it.
---@param buf integer
---@return string
function M.buffer_text(buf)
  return M.join(buf, 0, api.nvim_buf_get_lines(buf, 0, -1, false))
end

--- Whether a buffer stands for a file that does not exist yet and holds
--- nothing: `:edit new.txt`, or the permission preview of a file the agent
--- wants to create. Its one empty line is no text of the file ("\n" as the
--- "before" made a created file look modified, and rejecting it left a
--- 1-byte file).
---@param buf integer
---@return boolean
function M.is_unborn(buf)
  if vim.bo[buf].modified or api.nvim_buf_line_count(buf) ~= 1 or api.nvim_buf_get_lines(buf, 0, 1, false)[1] ~= "" then
    return false
  end
  return util.uv.fs_stat(api.nvim_buf_get_name(buf)) == nil
end

return M
