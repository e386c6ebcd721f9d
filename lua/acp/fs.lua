---@mod acp.fs Buffer-aware file access for the backend (fs/read_text_file and
--- fs/write_text_file of the agent go through here when a buffer has the file).
---
--- The backend calls these with nvim_exec_lua and awaits the result; both are
--- quick and never wait for anything.

local api = vim.api
local util = require("acp.util")

local M = {}

local merge_later

local function normalize(path)
  local full = vim.fn.fnamemodify(path, ":p")
  local real = util.uv.fs_realpath(full)
  return real or full
end

--- The loaded normal-file buffer of a path, if any.
---@param path string absolute path
---@return integer? buf
function M.find_buffer(path)
  if type(path) ~= "string" or path == "" then
    return nil
  end
  local want = normalize(path)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      local name = api.nvim_buf_get_name(buf)
      if name ~= "" and (name == path or normalize(name) == want) then
        return buf
      end
    end
  end
end

--- Text of a buffer's lines as a file would hold them: every line ends with
--- "\n", except the buffer's last line when it has 'noeol'.
---@param buf integer
---@param first integer 0-based row of lines[1]
---@param lines string[]
---@param count? integer lines in the text read (default: the buffer's)
---@return string
local function join(buf, first, lines, count)
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

---@class acp.FsReadArgs
---@field path string
---@field line? integer 1-based first line
---@field limit? integer number of lines
---@field as_shown? boolean the buffer's rows as they are (a mention of a selection), conflict blocks included

--- Read from a loaded buffer. nil when no loaded buffer has the path (the
--- backend then reads the disk). Only the requested lines are fetched.
---@param args acp.FsReadArgs
---@return string?
function M.read(args)
  local buf = M.find_buffer(args.path)
  if not buf then
    return nil
  end
  local line = math.max(1, tonumber(args.line) or 1)
  local limit = tonumber(args.limit)
  local first = line - 1
  local last = limit and (first + limit) or -1
  if limit == 0 then
    return ""
  end
  if not args.as_shown and require("acp.review").has_marker(buf) then
    -- Open conflicts are read as the agent's side (acp.review.agent_view):
    -- the whole text, then the range.
    local lines = require("acp.review").agent_view(api.nvim_buf_get_lines(buf, 0, -1, false), args.path)
    local n = #lines
    lines = vim.list_slice(lines, first + 1, last == -1 and n or math.min(last, n))
    return join(buf, first, lines, n)
  end
  local lines = api.nvim_buf_get_lines(buf, first, last, false)
  return join(buf, first, lines)
end

--- Apply the hunks turning `old` lines into `new` lines, bottom-up, as one
--- undo step of its own (not joined to what the user typed before). Lines
--- outside the hunks are not touched, so the cursor, marks and folds there
--- survive.
---@param buf integer
---@param old string[]
---@param new string[]
local function apply_minimal(buf, old, new)
  local old_text = table.concat(old, "\n") .. "\n"
  local new_text = table.concat(new, "\n") .. "\n"
  local hunks = util.diff_indices(old_text, new_text)
  if #hunks == 0 then
    return
  end
  api.nvim_buf_call(buf, function()
    -- Close the undo block of the user's last change, so `u` undoes only
    -- this edit (:help undo-break).
    vim.go.undolevels = vim.go.undolevels
  end)
  local first = true
  for i = #hunks, 1, -1 do
    local sa, ca, sb, cb = unpack(hunks[i])
    local replacement = {}
    for j = sb, sb + cb - 1 do
      replacement[#replacement + 1] = new[j]
    end
    if not first then
      -- Join with the previous hunk so one `u` undoes the whole write.
      api.nvim_buf_call(buf, function()
        pcall(vim.cmd, "undojoin")
      end)
    end
    first = false
    if ca == 0 then
      -- Pure insertion after line `sa`.
      api.nvim_buf_set_lines(buf, sa, sa, false, replacement)
    else
      api.nvim_buf_set_lines(buf, sa - 1, sa - 1 + ca, false, replacement)
    end
  end
  -- Close this undo block too: a change made next (by a script, an
  -- autocmd) must not join it, or `u` takes both back.
  api.nvim_buf_call(buf, function()
    vim.go.undolevels = vim.go.undolevels
  end)
end

--- The whole text of a buffer, as a file would hold it.
---@param buf integer
---@return string
function M.buffer_text(buf)
  return join(buf, 0, api.nvim_buf_get_lines(buf, 0, -1, false))
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

--- Read a file's text; nil when it does not exist or cannot be read.
---@param path string
---@return string?
function M.read_disk(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

--- Make a buffer hold `content` with minimal line edits (one undo step;
--- cursor, marks and folds outside the edits survive), including whether
--- its last line ends with a newline. Does not save.
---@param buf integer
---@param content string
function M.apply_text(buf, content)
  local old = api.nvim_buf_get_lines(buf, 0, -1, false)
  local ends_with_nl = content:sub(-1) == "\n"
  local new = vim.split(content, "\n", { plain = true })
  if ends_with_nl then
    new[#new] = nil
  end
  if #new == 0 then
    new = { "" }
  end
  local was_modifiable = vim.bo[buf].modifiable
  vim.bo[buf].modifiable = true
  apply_minimal(buf, old, new)
  -- Make a later save end exactly like `content`.
  if vim.bo[buf].eol ~= ends_with_nl then
    vim.bo[buf].eol = ends_with_nl
  end
  if not ends_with_nl then
    vim.bo[buf].fixeol = false
  end
  vim.bo[buf].modifiable = was_modifiable
end

--- Merge `theirs` (the agent's text) into a buffer with unsaved edits:
--- base is the text the agent changed from. The result is applied as one
--- undo step and the buffer stays modified. Conflicts are written between
--- `<<<<<<< buffer` / `=======` / `>>>>>>> agent` lines, so no line of the
--- user is lost; they show as conflict hunks (acp.review).
---@param buf integer
---@param base string
---@param theirs string
---@return integer conflicts
function M.merge_into(buf, base, theirs)
  local ours = M.buffer_text(buf)
  local text, conflicts = M.merge_text(base, ours, theirs)
  if text ~= ours then
    M.apply_text(buf, text)
  end
  return conflicts
end

--- The three-way merge of `ours` and `theirs` (both changed from `base`),
--- as the backend makes it (`acp.merge`), without applying it.
---@param base string
---@param ours string
---@param theirs string
---@return string text, integer conflicts
function M.merge_text(base, ours, theirs)
  local res, err = require("acp.backend").request("acp.merge", { base = base, ours = ours, theirs = theirs })
  if type(res) ~= "table" or type(res.text) ~= "string" then
    error(("acp.nvim: could not merge the agent's edit into your unsaved buffer: %s"):format(tostring(err)), 0)
  end
  return res.text, tonumber(res.conflicts) or 0
end

--- Merge into a modified buffer right after this call returns. The merge
--- asks the backend (`acp.merge`), and this module runs inside the
--- backend's own request (`nvim_exec_lua`): a request from there, while Lua
--- waits for another answer of the backend (a review refresh, a
--- completion), would get its answers out of the order Neovim requires,
--- and Neovim closes the channel. Scheduled callbacks run from the main
--- loop, never nested in a request, and before any event this write causes.
---@param buf integer
---@param base string
---@param theirs string
merge_later = function(buf, base, theirs)
  vim.schedule(function()
    if not api.nvim_buf_is_valid(buf) then
      return
    end
    local ok, err = pcall(M.merge_into, buf, base, theirs)
    if not ok then
      util.notify(tostring(err), vim.log.levels.ERROR)
    end
  end)
end

--- Paths whose last agent write found open conflicts in the buffer (its
--- `file_edited` note says so), path -> true.
---@type table<string, true>
M.near_conflicts = {}

---@class acp.FsWriteArgs
---@field path string
---@field content string
---@field restore? boolean a review reject restores text (not the agent's write)
---@field base? string the base of merging into a modified buffer: with restore, the text review knew the file had; else the text the agent last saw of the file (what fs/read_text_file answered, what a mention embedded, what it wrote); absent: the disk

---@class acp.FsWriteResult
---@field handled boolean the buffer was updated (and saved, unless it had unsaved edits): the backend does not write the disk
---@field old_content? string the buffer's text before the write (nil: the file is new)
---@field kept_unsaved? boolean the buffer had unsaved changes: the agent's text is merged into it (right after this call), the backend writes the disk

--- Write through a loaded buffer.
--- - No buffer: handled=false (the backend writes the disk).
--- - Unmodified buffer: minimal edits, saved; handled=true.
--- - Modified buffer, agent write: the agent's text is merged into the
---   buffer (base: what the agent last saw, else the disk), the buffer stays
---   modified; handled=false, kept_unsaved=true (the backend writes the
---   agent's text to disk, so the agent's view stays true).
--- - Modified buffer, review restore: merged into the buffer against the
---   text review knew; the disk is left alone (handled=true).
---@param args acp.FsWriteArgs
---@return acp.FsWriteResult
function M.write(args)
  local buf = M.find_buffer(args.path)
  if not buf then
    return { handled = false }
  end
  local content = args.content or ""
  if vim.bo[buf].modified then
    local review = require("acp.review")
    if args.restore then
      local base = args.base or M.buffer_text(buf)
      merge_later(buf, base, content)
      return { handled = true, old_content = base }
    end
    if review.has_conflicts(buf) then
      -- The disk gets the agent's text; the review's sync that follows
      -- merges it unless that would open conflicts next to the open ones
      -- (it then waits for them: acp.review's pending).
      M.near_conflicts[review.normalize(args.path)] = true
      return { handled = false, kept_unsaved = true }
    end
    -- The agent changed what it last saw: the buffer it read (claude-code-acp
    -- reads unsaved buffers and writes them back with its change), else the
    -- disk. Against the disk, the user's own lines read as a conflict.
    local base = args.base or M.read_disk(args.path) or ""
    -- Synced now: the review's refresh that follows this write must not
    -- merge the same change a second time.
    review.set_synced(args.path, content)
    if M.buffer_text(buf) == base then
      -- The buffer is what the agent changed (it read it and nobody typed
      -- since): the merge is the agent's text, applied now as one undo
      -- step; no merge to ask the backend for.
      M.apply_text(buf, content)
    else
      merge_later(buf, base, content)
    end
    -- The backend writes `content` to disk next; the next :write of the
    -- buffer must not ask whether to overwrite it (acp.filestamp).
    require("acp.filestamp").merged(buf, content)
    return { handled = false, kept_unsaved = true }
  end
  local old_content = (not M.is_unborn(buf)) and M.buffer_text(buf) or nil
  M.apply_text(buf, content)
  local ok, err = pcall(require("acp.review").own_write, args.path, function()
    api.nvim_buf_call(buf, function()
      vim.cmd("silent keepalt write!")
    end)
  end)
  if not ok then
    error(("acp.nvim: could not save %s after applying the agent's edit: %s"):format(args.path, err), 0)
  end
  require("acp.review").set_synced(args.path, content)
  return { handled = true, old_content = old_content }
end

return M
