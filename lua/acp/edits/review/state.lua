---@mod acp.edits.review.state The review's state, shared by its parts: what
--- is under review per file, the items drawn per buffer, the agent edits
--- waiting for open conflicts, the previews shown, and the namespaces. A
--- leaf: every part of the review builds on it and it needs none of them
--- (its only dependency is acp.util).

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
---@field reported_tick? integer the buffer's tick (acp.edits.buffer.tick) whose text the backend's review has (we reported it, or its review's text is the buffer's): typing is reported when the tick moved
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
--- merged (see acp.edits.review.actions' merge_pending).
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

--- Whether the save of a (normalized) path running now is ours (M.own_write).
---@param path string
---@return boolean
function M.is_own_write(path)
  return own_writes[path] == true
end

--- The review entry of a buffer's file, if it is under review.
---@param buf integer
---@return acp.ReviewEntry?
function M.entry_of_buf(buf)
  local name = api.nvim_buf_get_name(buf)
  if name == "" then
    return nil
  end
  return M.files[normalize(name)]
end

--- The backend's instruction for the agent's disk edit of `path` names the
--- chat whose agent made it (acp.edits.fs.apply): the buffer's saves are reported
--- to that chat from now on, also before the edit's `review_changed`
--- arrives (the instruction can come first; a save in between, unreported,
--- would be taken for part of the agent's edit).
---@param path string
---@param chat_id string
function M.disk_edit_by(path, chat_id)
  local key = normalize(path)
  local entry = M.files[key] or { path = key, chats = {} }
  M.files[key] = entry
  entry.reviewed_by = entry.reviewed_by or {}
  entry.reviewed_by[chat_id] = true
end

--- Forget everything (the backend that kept the reviews stopped): the
--- drawing is cleared from every loaded buffer. Returns how many files were
--- under review.
---@return integer
function M.clear()
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
  return n
end

return M
