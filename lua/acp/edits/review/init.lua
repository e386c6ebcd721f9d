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
--- The module is split by what each part owns, each part requiring only
--- the ones below it:
---   state    the shared state (files under review, items drawn, agent
---            edits waiting for conflicts, previews, namespaces): a leaf
---   render   drawing, conflict markers                     (state)
---   sync     review and buffers kept in sync, events       (render)
---   actions  jump, accept, reject, quickfix, delete         (sync)
---   keys     the keys of reviewed buffers, typing reports   (actions)
---   preview  permission previews                            (actions)
--- `sync` calls the two above it back (the keys to set after a drawing,
--- the quickfix list to refresh) through hooks this file sets when it loads
--- the parts. This file is the public face: `require("acp.edits.review")`
--- is the whole API; the parts load at the first use of one of their
--- functions, not with it: `:Acp` loads this file (its autocommands) and
--- spent most of its time loading modules (issue #30).

local api = vim.api
local util = require("acp.util")
local state = require("acp.edits.review.state")

local M = {}

local normalize = state.normalize

-- The state, shared with the parts (the same tables: a part's change shows here).
M.ns = state.ns
M.resolved_ns = state.resolved_ns
M.CONFLICT_START = state.CONFLICT_START
M.CONFLICT_MID = state.CONFLICT_MID
M.CONFLICT_END = state.CONFLICT_END
M.files = state.files
M.items = state.items
M.pending = state.pending
M.previews = state.previews
M.normalize = state.normalize
M.own_write = state.own_write
M.disk_edit_by = state.disk_edit_by

--- The backend stopped (`:Acp restart`, a crash): the review it kept went
--- with it, and nothing would answer the keys of what is drawn. Clear the
--- drawing and say so once (unless `quiet`: the caller says it); the edits
--- stay in the buffers. Returns how many files were under review.
---@param quiet? boolean
---@return integer
function M.backend_stopped(quiet)
  local n = state.clear()
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

-- The parts -------------------------------------------------------------------

local wired = false

--- The parts that keep buffers in sync, with sync's hooks set: it sets the
--- keys of a buffer after drawing it, and the `:Acp review` list follows
--- each review_changed.
local function wire()
  if wired then
    return
  end
  wired = true
  local sync = require("acp.edits.review.sync")
  local actions = require("acp.edits.review.actions")
  local keys = require("acp.edits.review.keys")
  sync.set_hooks({
    keys = keys.set,
    list_changed = function()
      actions.quickfix(true)
    end,
  })
end

local function render()
  return require("acp.edits.review.render")
end

local function sync()
  wire()
  return require("acp.edits.review.sync")
end

local function actions()
  wire()
  return require("acp.edits.review.actions")
end

local function preview()
  wire()
  return require("acp.edits.review.preview")
end

-- Drawing and conflict markers (acp.edits.review.render).

--- What `fs/read_text_file` answers for a buffer with open conflicts: each
--- conflict block replaced by its agent side (acp.edits.review.render).
---@param lines string[]
---@param path? string
---@return string[]
function M.agent_view(lines, path)
  return render().agent_view(lines, path)
end

--- Whether a line of the buffer starts a conflict block.
---@param buf integer
---@return boolean
function M.has_marker(buf)
  return render().has_marker(buf)
end

--- Whether the buffer holds conflict blocks of an earlier merge.
---@param buf integer
---@return boolean
function M.has_conflicts(buf)
  return render().has_conflicts(buf)
end

-- Review and buffers kept in sync (acp.edits.review.sync).

--- `review_changed` from the backend.
---@param chat_id string
---@param ev acp.ev.ReviewChanged
function M.on_changed(chat_id, ev)
  return sync().on_changed(chat_id, ev)
end

--- Forget every review of a chat (closed, or its agent died).
---@param chat_id string
function M.drop_chat(chat_id)
  return sync().drop_chat(chat_id)
end

--- Draw the shown chat's review of a path.
---@param path string
function M.refresh(path)
  return sync().refresh(path)
end

--- Redraw a buffer from the last review received.
---@param buf integer
function M.redraw(buf)
  return sync().redraw(buf)
end

--- Tell the backend what the user made of a reviewed buffer.
---@param buf integer
---@param accept_lines? integer[] {start, end}: then accept those lines (a resolution)
---@param disk? "saved"|"read" the buffer's text is the file's on disk (saved, or just read)
function M.send_user_edit(buf, accept_lines, disk)
  return sync().send_user_edit(buf, accept_lines, disk)
end

--- Refresh the review of a path once, soon.
---@param path string
function M.schedule_refresh(path)
  return sync().schedule_refresh(path)
end

-- What the user does with a review (acp.edits.review.actions).

--- Accept or reject agent changes.
---@param action "accept"|"reject"
---@param opts acp.DecideOpts
function M.decide(action, opts)
  return actions().decide(action, opts)
end

--- Move the cursor to the next (dir 1) or previous (-1) hunk or conflict.
---@param dir integer
function M.jump(dir)
  return actions().jump(dir)
end

--- The `:Acp review` quickfix list of agent edits.
---@param refresh? boolean
function M.quickfix(refresh)
  return actions().quickfix(refresh)
end

--- Open a file at its review.
---@param path string
function M.open(path)
  return actions().open(path)
end

--- `review_delete_pending`: the user rejected the creation of a file.
---@param chat_id string
---@param ev acp.ev.ReviewDeletePending
function M.on_delete_pending(chat_id, ev)
  return actions().on_delete_pending(chat_id, ev)
end

--- Wipe a buffer without closing the windows that show it.
---@param buf integer
function M.drop_buffer(buf)
  return actions().drop_buffer(buf)
end

--- `acp.edits.fs.apply` answered `waiting` to the agent's disk edit of `path`.
---@param path string
function M.disk_waiting(path)
  return actions().disk_waiting(path)
end

--- The rows the user resolved conflicts to while an agent edit waited.
---@param buf integer
---@return integer[][]
function M.resolved_rows(buf)
  return actions().resolved_rows(buf)
end

--- `acp.edits.fs.apply` applied the agent's disk edit of `path` to `buf`.
---@param buf integer
---@param path string
---@param before? string[] the buffer's rows before a merge
---@param ranges? integer[][] M.resolved_rows before the merge
function M.disk_applied(buf, path, before, ranges)
  return actions().disk_applied(buf, path, before, ranges)
end

-- Permission previews (acp.edits.review.preview).

--- The first `diff` content of a tool call.
---@param tc table
---@return table?
function M.diff_of(tc)
  return preview().diff_of(tc)
end

--- Show a permission request's edit in the real buffer.
---@param req acp.PermissionRequest
function M.preview(req)
  return preview().preview(req)
end

--- The permission request was answered: its preview goes.
---@param request_id integer
function M.end_preview(request_id)
  return preview().end_preview(request_id)
end

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
      if state.is_own_write(path) or not M.files[path] then
        return
      end
      if M.pending[path] then
        -- The user saved over the agent's waiting text (Neovim asked):
        -- the file is theirs now, nothing waits.
        M.pending[path] = nil
        api.nvim_buf_clear_namespace(a.buf, M.resolved_ns, 0, -1)
      end
      M.send_user_edit(a.buf, nil, "saved")
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
        M.send_user_edit(a.buf, nil, "read")
        M.schedule_refresh(path)
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
        M.schedule_refresh(path)
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
      if wired then
        require("acp.edits.review.keys").forget(a.buf)
      end
    end,
  })
end

return M
