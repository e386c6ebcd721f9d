---@mod acp.edits.review Review of agent edits in the real buffers: inline diff
--- (added lines highlighted, removed lines as virtual lines, signs), keys and
--- commands to accept or reject hunks, buffers kept in sync with what the
--- agent wrote on disk, and the preview of a proposed edit before approving.
---
--- The backend tracks the edits (per chat) and reports `review_changed`
--- with the file's hunks; this module draws them in ONE namespace. The
--- backend also keeps each file's sync state and sends one instruction per
--- agent edit, applied by `acp.edits.fs.apply`: for an `fs/write_text_file`, and
--- for the agent's edits on disk (its own tools):
--- - an unmodified buffer whose file the agent changed is reloaded with
---   minimal edits (no "file changed" prompt; cursor and folds survive);
--- - a buffer with unsaved edits gets the agent's change merged in (base:
---   the text the buffer was last in sync with) as one undo step; it stays
---   modified. Conflicts are written between
---   `<<<<<<< buffer` / `=======` / `>>>>>>> agent` lines and shown as
---   conflict hunks: accept keeps the agent's side, reject keeps yours;
--- - what the user types in a reviewed buffer is reported (`acp.user_edit`),
---   so it is never shown as the agent's nor undone by a reject.
---
--- The module is split by what each part owns: `render` (drawing, conflict
--- markers), `keys` (keys and typing reports), `sync` (review and buffers
--- kept in sync, events), `actions` (jump, accept, reject, quickfix, delete)
--- and `preview` (permission previews); this file holds the shared state
--- and the setup. `require("acp.edits.review")` is the whole API.

local api = vim.api
local util = require("acp.util")

local M = {}

--- The one namespace of the inline diff (and of the permission preview).
M.ns = api.nvim_create_namespace("acp_review")

--- Debounce of user edits sent to the backend while typing.
M.USER_EDIT_DEBOUNCE_MS = 300

--- The marker lines of a conflict block written by a merge.
M.CONFLICT_START = "<<<<<<< buffer"
M.CONFLICT_MID = "======="
M.CONFLICT_END = ">>>>>>> agent"

-- acp.ReviewHunk (a hunk of acp.ReviewFile) is annotated in acp.rpc.protocol.

---@class acp.ReviewItem one thing the keys act on, in buffer rows (0-based)
---@field kind "hunk"|"conflict"
---@field first integer first row
---@field last integer last row (== first for a pure deletion)
---@field hunk? acp.ReviewHunk
---@field ours? string[] conflict: the buffer's side
---@field theirs? string[] conflict: the agent's side
---@field mark? integer extmark following the item's rows

---@class acp.ReviewEntry
---@field path string
---@field chats table<string, table> chat id -> summary ({status, hunks, added, removed, first_line})
---@field chat_id? string the chat whose review is shown
---@field review? table that chat's review as last drawn: the `review` of its last `review_changed`
---@field review_chat? string the chat whose review `review` is: the hunks drawn are its (`chat_id` can move on to another chat's newer event before the next refresh draws it)
---@field reported_tick? integer the buffer's tick (acp.edits.fs.tick) whose text the backend's review has (we reported it, or its review's text is the buffer's): typing is reported when the tick moved
---@field reviewed_by? table<string, true> chats that had edits of the file under review: told of the user's edits also once nothing is left to review, so an undo then redo brings the review back
---@field latest? table<string, table|false> chat id -> the review its newest `review_changed` carried (false: nothing left to review): a cache of the backend's, by revision
---@field revision? table<string, integer> chat id -> the revision of that `review_changed` (an older one coming late is dropped)

---@type table<string, acp.ReviewEntry>
M.files = {}
---@type table<integer, acp.ReviewItem[]> buffer -> items drawn
M.items = {}
--- Files whose buffer still holds conflict blocks when the agent changed the
--- file again: that change waits on disk until the conflicts are resolved
--- (merging it now would nest conflict blocks), path -> true. Set when
--- `acp.edits.fs.apply` answers `waiting` to a disk instruction (an agent write
--- answered `waiting` comes back as one); the backend keeps the text and sends
--- it again once a report has no conflict blocks.
---@type table<string, true>
M.pending = {}
--- Rows the user resolved a conflict to while the agent's newer change
--- waited (`M.pending`): range extmarks in this namespace, so typing and the
--- other resolutions move them. Their lines are accepted once that change is
--- merged (see merge_pending).
M.resolved_ns = api.nvim_create_namespace("acp_review_resolved")
---@type table<string, boolean> paths whose BufWritePost is ours (acp.edits.fs.apply)
local own_writes = {}
---@type table<integer, {request_id: integer, path: string, opened?: boolean}> buffer -> preview shown (opened: its buffer was made for the preview, of a file that does not exist yet)
M.previews = {}

local normalize = util.normalize_path
M.normalize = normalize

--- Run `fn` (which saves the buffer of `path`) without reporting the save
--- as the user's edit.
---@param path string
---@param fn fun()
function M.own_write(path, fn)
  local key = normalize(path)
  own_writes[key] = true
  local ok, err = pcall(fn)
  own_writes[key] = nil
  if not ok then
    error(err, 0)
  end
end

--- The backend stopped (`:Acp restart`, a crash): the review it kept went
--- with it, and nothing would answer the keys of what is drawn. Clear the
--- drawing and say so once (unless `quiet`: the caller says it); the edits
--- stay in the buffers. Returns how many files were under review.
---@param quiet? boolean
---@return integer
function M.backend_stopped(quiet)
  local n = vim.tbl_count(M.files)
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) then
      api.nvim_buf_clear_namespace(buf, M.ns, 0, -1)
      api.nvim_buf_clear_namespace(buf, M.resolved_ns, 0, -1)
    end
  end
  for _, t in ipairs({ M.files, M.items, M.pending, M.previews }) do
    for k in pairs(t) do
      t[k] = nil
    end
  end
  if n > 0 and not quiet then
    util.notify(M.ended_message(n), vim.log.levels.WARN)
  end
  return n
end

require("acp.rpc.hooks").on("stopped", "acp.edits.review", M.backend_stopped)

---@param n integer files whose review ended
---@return string
function M.ended_message(n)
  -- Short: one line at 80 columns (68 with showcmd), no hit-Enter prompt.
  return ("review of %d file%s ended with the backend (edits kept)"):format(n, n == 1 and "" or "s")
end

-- The parts extend M: it must be findable while they load. They load at
-- the first use of anything they define, not with M: `:Acp` loads M (its
-- autocommands) and spent most of its time loading modules (issue #30).
package.loaded["acp.edits.review"] = M
local PARTS = {
  "acp.edits.review.render",
  "acp.edits.review.keys",
  "acp.edits.review.sync",
  "acp.edits.review.actions",
  "acp.edits.review.preview",
}
setmetatable(M, {
  __index = function(t, key)
    setmetatable(t, nil)
    for _, part in ipairs(PARTS) do
      require(part)
    end
    return rawget(t, key)
  end,
})

-- Setup ----------------------------------------------------------------------

--- Global autocmds: saves of reviewed files, buffers loaded later, and no
--- "file changed" prompt for files the review keeps in sync.
function M.setup()
  require("acp.edits.filestamp").setup()
  local group = api.nvim_create_augroup("acp_review", { clear = true })
  api.nvim_create_autocmd("BufWritePost", {
    group = group,
    callback = function(a)
      if vim.bo[a.buf].buftype ~= "" or a.match == "" then
        return
      end
      local path = normalize(a.match)
      -- Any file's save: its text at the prompt (acp.edits.fs.prompt_buffers) is
      -- no "before" of an agent edit any more (a difference may be the
      -- user's), in every agent's sync.
      local backend = require("acp.rpc.backend")
      if backend.running() then
        backend.notify("acp.file_saved", { path = path })
      end
      if own_writes[path] or not M.files[path] then
        return
      end
      if M.pending[path] then
        -- The user saved over the agent's waiting text (Neovim asked):
        -- the file is theirs now, nothing waits.
        M.pending[path] = nil
        api.nvim_buf_clear_namespace(a.buf, M.resolved_ns, 0, -1)
      end
      require("acp.edits.review.sync").send_user_edit(a.buf, nil, "saved")
    end,
  })
  api.nvim_create_autocmd("BufReadPost", {
    group = group,
    callback = function(a)
      local path = normalize(a.match)
      if M.files[path] then
        -- The buffer was read anew (its tick moved on, or it is a new
        -- buffer: acp.edits.fs.tick). The backend learns the text the buffer is
        -- in sync with now (not an edit; the report sets reported_tick);
        -- nothing of the agent's waits for this buffer any more.
        M.pending[path] = nil
        api.nvim_buf_clear_namespace(a.buf, M.resolved_ns, 0, -1)
        require("acp.edits.review.sync").send_user_edit(a.buf, nil, "read")
        require("acp.edits.review.sync").schedule_refresh(path)
      end
    end,
  })
  api.nvim_create_autocmd("FileChangedShell", {
    group = group,
    callback = function(a)
      local path = normalize(a.match)
      if (M.files[path] and next(M.files[path].chats) ~= nil) or require("acp.edits.filestamp").holds_disk(a.buf) then
        -- The backend syncs this buffer with the agent's edits (reload or
        -- merge: acp.edits.fs.apply), also before the edit's review_changed
        -- arrives: the buffer holds the disk's text already.
        vim.v.fcs_choice = ""
        require("acp.edits.review.sync").schedule_refresh(path)
      else
        vim.v.fcs_choice = "ask"
      end
    end,
  })
  api.nvim_create_autocmd("BufWipeout", {
    group = group,
    callback = function(a)
      M.items[a.buf] = nil
      M.previews[a.buf] = nil
      require("acp.edits.review.keys").forget(a.buf)
    end,
  })
end

return M
