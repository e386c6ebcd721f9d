---@mod acp.edits.editor_tools What the editor's MCP server asks of Neovim.
---
--- The backend serves the `editor` MCP server (see :help acp-editor-tools);
--- its file tools go through the same buffer reads and writes as `fs/*`.
--- Its `diagnostics` and `open_buffers` tools are answered here.

local M = {}

---@type table<vim.diagnostic.Severity, string>
local severity_names = { "error", "warning", "info", "hint" }

---@param buf integer
---@return string? path absolute, symlinks resolved (as the backend's workspace check gives them)
local function file_of(buf)
  if not vim.api.nvim_buf_is_loaded(buf) or vim.bo[buf].buftype ~= "" then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(buf)
  if name == "" then
    return nil
  end
  return require("acp.util").normalize_path(name)
end

---@return {buf: integer, path: string}[]
local function file_buffers()
  local out = {}
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    local path = file_of(buf)
    if path then
      out[#out + 1] = { buf = buf, path = path }
    end
  end
  return out
end

---@class acp.EditorDiagnostic
---@field path string
---@field severity "error"|"warning"|"info"|"hint"
---@field range {start: {line: integer, character: integer}, ["end"]: {line: integer, character: integer}} 1-based lines, 0-based byte columns
---@field message string
---@field source? string
---@field code? string|integer

--- `vim.diagnostic` entries of one file, or of every open file.
---@param path? string absolute
---@return acp.EditorDiagnostic[]
function M.diagnostics(path)
  local out = {}
  for _, b in ipairs(file_buffers()) do
    if path == nil or b.path == path then
      for _, d in ipairs(vim.diagnostic.get(b.buf)) do
        out[#out + 1] = {
          path = b.path,
          severity = severity_names[d.severity] or "hint",
          range = {
            start = { line = d.lnum + 1, character = d.col },
            ["end"] = { line = (d.end_lnum or d.lnum) + 1, character = d.end_col or d.col },
          },
          message = d.message,
          source = d.source,
          code = d.code,
        }
      end
    end
  end
  return out
end

---@class acp.EditorBuffer
---@field path string
---@field modified boolean unsaved changes
---@field current boolean the buffer of the current window
---@field cursor? {line: integer, column: integer} of the last window showing it (1-based line, 0-based byte column)
---@field selection? {start: {line: integer, column: integer}, ["end"]: {line: integer, column: integer}} the last visual selection

--- The open files with their modified flag, cursor and last visual selection.
---@return acp.EditorBuffer[]
function M.open_buffers()
  local current = vim.api.nvim_get_current_buf()
  local out = {}
  for _, b in ipairs(file_buffers()) do
    local entry = {
      path = b.path,
      modified = vim.bo[b.buf].modified,
      current = b.buf == current,
    }
    local win = vim.fn.bufwinid(b.buf)
    if win ~= -1 then
      local pos = vim.api.nvim_win_get_cursor(win)
      entry.cursor = { line = pos[1], column = pos[2] }
    end
    local from = vim.api.nvim_buf_get_mark(b.buf, "<")
    local to = vim.api.nvim_buf_get_mark(b.buf, ">")
    if from[1] > 0 and to[1] > 0 then
      entry.selection = {
        start = { line = from[1], column = from[2] },
        ["end"] = { line = to[1], column = math.min(to[2], 2 ^ 31 - 1) },
      }
    end
    out[#out + 1] = entry
  end
  return out
end

--- The backend's call: `{what = "diagnostics"|"open_buffers", path?}`.
---@param args {what: string, path?: string}
---@return table
function M.state(args)
  if args.what == "diagnostics" then
    return M.diagnostics(args.path)
  elseif args.what == "open_buffers" then
    return M.open_buffers()
  end
  error("unknown editor state `" .. tostring(args.what) .. "`")
end

return M
