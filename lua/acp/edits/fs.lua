---@mod acp.edits.fs Buffer-aware file access for the backend (fs/read_text_file and
--- fs/write_text_file of the agent go through here when a buffer has the file).
---
--- The backend calls these with nvim_exec_lua and awaits the result; both are
--- quick and never wait for anything. The backend owns each file's state
--- (acp_client::buffer_sync): what the agent saw, the buffer's text as last
--- reported with its tick (`b:changedtick` and buffer number), the disk text the buffer is in sync
--- with, the merge of an agent's write or of its edit on disk; this module
--- reports the buffer and applies the backend's instructions.

local api = vim.api
local util = require("acp.util")
local buffer = require("acp.edits.buffer")

local M = {}

local normalize = util.normalize_path

--- The loaded normal-file buffer of a path, if any.
M.find_buffer = util.find_buffer

--- A buffer's version as the backend knows it (acp.edits.buffer.tick).
M.tick = buffer.tick
--- The whole text of a buffer, as a file would hold it.
M.buffer_text = buffer.buffer_text
--- Whether a buffer stands for a file that does not exist yet and holds
--- nothing (acp.edits.buffer.is_unborn).
M.is_unborn = buffer.is_unborn
local join = buffer.join

--- An integer field of a backend instruction, nil when it is no number: the
--- backend sends integers; tonumber keeps a malformed one from erroring.
---@param v any
---@return integer?
local function int(v)
  return tonumber(v) --[[@as integer?]]
end

---@class acp.FsReadArgs
---@field path string
---@field line? integer 1-based first line
---@field limit? integer number of lines
---@field as_shown? boolean the buffer's rows as they are (a mention of a selection), conflict blocks included
---@field known? integer the tick (M.tick) of the buffer text the backend holds (see read_for_agent)

--- The requested lines of a buffer, fetched alone (O(limit)).
---@param buf integer
---@param args acp.FsReadArgs
---@return string
local function read_rows(buf, args)
  local first = math.max(1, int(args.line) or 1) - 1
  local limit = int(args.limit)
  if limit == 0 then
    return ""
  end
  return join(buf, first, api.nvim_buf_get_lines(buf, first, limit and (first + limit) or -1, false))
end

--- The requested range of a buffer's whole `lines` (its rows, or the
--- agent's view of them), as text.
---@param buf integer
---@param lines string[]
---@param args acp.FsReadArgs
---@return string
local function range_of(buf, lines, args)
  local first = math.max(1, int(args.line) or 1) - 1
  local limit = int(args.limit)
  if limit == 0 then
    return ""
  end
  local n = #lines
  local last = limit and math.min(first + limit, n) or n
  return join(buf, first, vim.list_slice(lines, first + 1, last), n)
end

--- Read from a loaded buffer (a mention's text: context.lua). nil when no
--- loaded buffer has the path. Only the requested lines are fetched, unless
--- open conflicts are read as the agent's side (acp.edits.review.agent_view: the
--- whole text, then the range).
---@param args acp.FsReadArgs
---@return string?
function M.read(args)
  local buf = M.find_buffer(args.path)
  if not buf then
    return nil
  end
  local review = require("acp.edits.review")
  if not args.as_shown and review.has_marker(buf) then
    return range_of(buf, review.agent_view(api.nvim_buf_get_lines(buf, 0, -1, false), args.path), args)
  end
  return read_rows(buf, args)
end

---@class acp.FsReadReply
---@field text string what the agent gets (the range it asked for)
---@field whole? string the whole text as the agent reads it, when `text` is a range
---@field buffer? string the buffer's rows as they are, when they differ from what the agent reads (open conflicts)
---@field tick integer the buffer's tick (M.tick)
---@field unchanged? boolean the buffer is still at `known`: no `whole` or `buffer`

--- An agent's read (`fs/read_text_file`): what it gets, with the buffer's
--- text and tick (M.tick) for the backend (the base of merging its next write
--- into this buffer). nil when no loaded buffer has the path. The buffer is
--- read once.
---@param args acp.FsReadArgs
---@return acp.FsReadReply?
function M.read_for_agent(args)
  local buf = M.find_buffer(args.path)
  if not buf then
    return nil
  end
  local review = require("acp.edits.review")
  local marker = review.has_marker(buf)
  local tick = M.tick(buf)
  if args.known == tick and not marker then
    -- The backend holds the buffer's text of this tick (from a read, a
    -- report or an instruction's answer), which is what the agent reads
    -- here: an agent paging through a big buffer costs its pages, not the
    -- buffer each time. (With open conflicts the agent's view also depends
    -- on the disk, which has no tick: sent whole.)
    return { text = read_rows(buf, args), tick = tick, unchanged = true }
  end
  local ranged = (int(args.line) or 1) > 1 or int(args.limit) ~= nil
  local rows = api.nvim_buf_get_lines(buf, 0, -1, false)
  -- Only open conflicts make the rows differ from what the agent reads.
  local view = marker and review.agent_view(rows, args.path) or rows
  local whole = join(buf, 0, view, #view)
  local buffer = view ~= rows and join(buf, 0, rows) or whole
  return {
    text = ranged and range_of(buf, view, args) or whole,
    whole = ranged and whole or nil,
    buffer = buffer ~= whole and buffer or nil,
    tick = tick,
  }
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
    local h = hunks[i]
    local sa, ca, sb, cb = h[1], h[2], h[3], h[4]
    local replacement = {}
    for j = sb, sb + cb - 1 do
      replacement[#replacement + 1] = new[j]
    end
    if not first then
      -- Join with the previous hunk so one `u` undoes the whole write.
      api.nvim_buf_call(buf, function()
        pcall(api.nvim_exec2, "undojoin", {})
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

--- Read a file's text; nil when it does not exist or cannot be read.
M.read_disk = util.read_file

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

---@class acp.FsApplyArgs one instruction of the backend for a write
---@field path string
---@field revision integer the file's instruction count, echoed in the reply
---@field content string the text an unmodified buffer takes (then saved, unless `disk`)
---@field merged? string the text a modified buffer takes, only at tick `tick` (M.tick); for an agent's write or a restore an unmodified buffer takes it too (saved unless it has conflicts)
---@field tick? integer the tick (M.tick) `merged` was made against
---@field conflicts? integer conflict blocks in `merged`
---@field restore? boolean a review reject restores text: the disk is left alone, and a buffer with open conflicts takes it too
---@field disk? boolean the agent changed the file on disk itself: `content` is on disk already
---@field chat_id? string disk: the chat whose agent made the edit

---@class acp.FsApplyReply
---@field status "no_buffer"|"saved"|"reloaded"|"merged"|"waiting"|"stale"|"locked"
---@field revision integer
---@field tick? integer the buffer's tick (M.tick) now
---@field old_content? string saved: the buffer's text before (nil: a new file)
---@field text? string stale: the buffer's text now

--- The notice of a merge that kept both sides of conflicting lines.
---@param path string
---@param conflicts integer
local function notify_conflicts(path, conflicts)
  util.notify(
    ("the agent changed %s where your unsaved edits are: %d conflict(s) kept both sides in the buffer; accept (agent's side) or reject (yours) them"):format(
      vim.fn.fnamemodify(path, ":~:."),
      conflicts
    ),
    vim.log.levels.WARN
  )
end

--- The `stale` answer of an instruction for a modified buffer: no merge
--- came, or the buffer changed since the one the merge was made against
--- (the user typed since the backend's last report); nil when `merged`
--- applies.
---@param buf integer
---@param args acp.FsApplyArgs
---@return acp.FsApplyReply?
local function stale_reply(buf, args)
  local tick = M.tick(buf)
  if type(args.merged) ~= "string" or args.tick ~= tick then
    return { status = "stale", revision = args.revision, text = M.buffer_text(buf), tick = tick }
  end
end

--- Take the backend's merge into a modified buffer, as one undo step, left
--- unsaved. Unless it is a restore (the disk is left alone), the disk holds
--- the agent's `content` (a disk edit), or the backend writes it next: the
--- next :write of the buffer must not ask whether to overwrite it
--- (acp.edits.filestamp), and the user hears of the conflicts it kept.
---@param buf integer
---@param args acp.FsApplyArgs
local function take_merge(buf, args)
  -- Called past stale_reply, which turns away an instruction without a
  -- string `merged`.
  M.apply_text(buf, args.merged --[[@as string]])
  if args.restore then
    return
  end
  require("acp.edits.filestamp").merged(buf, args.content or "")
  local conflicts = int(args.conflicts) or 0
  if conflicts > 0 then
    notify_conflicts(args.path, conflicts)
  end
end

--- Apply an instruction for the agent's edit on disk (`args.disk`): the
--- text is on disk already, so nothing is saved.
--- - unmodified buffer: `content` with minimal edits, marked unmodified:
---   `reloaded`;
--- - modified buffer not at `tick` (or no merge offered): `stale`;
--- - modified buffer whose merge would open conflicts next to the open
---   ones (nesting them): left alone, `waiting`; the backend sends it again
---   after the report that has no conflict blocks left;
--- - else `merged` applied as one undo step, left unsaved: `merged`.
---@param buf integer
---@param args acp.FsApplyArgs
---@return acp.FsApplyReply
local function apply_disk(buf, args)
  local rev, path, content = args.revision, args.path, args.content or ""
  local review = require("acp.edits.review")
  if type(args.chat_id) == "string" then
    review.disk_edit_by(path, args.chat_id)
  end
  if not vim.bo[buf].modified then
    M.apply_text(buf, content)
    vim.bo[buf].modified = false
    -- Neovim remembers when it last read or wrote the file and would ask
    -- "changed since reading it" at the next :write; acp.edits.filestamp quiets
    -- that while the disk holds this text. Saving the identical text instead
    -- would race the agent: one that rewrites the file in place (truncate,
    -- then write) can be read half way, and saving that clobbered its
    -- finished write (found by the data-safety property test).
    require("acp.edits.filestamp").merged(buf, content)
    review.disk_applied(buf, path)
    return { status = "reloaded", revision = rev, tick = M.tick(buf) }
  end
  local stale = stale_reply(buf, args)
  if stale then
    return stale
  end
  local tick = M.tick(buf)
  local conflicts = int(args.conflicts) or 0
  if conflicts > 0 and review.has_conflicts(buf) then
    -- New conflict blocks next to (or inside) the open ones would nest
    -- them: the agent's text waits on disk, and resolving the open
    -- conflicts merges it.
    review.disk_waiting(path)
    return { status = "waiting", revision = rev, tick = tick }
  end
  local resolved = review.resolved_rows(buf)
  -- The rows before the merge matter only where the user resolved
  -- conflicts meanwhile (disk_applied: which of them survive).
  local before = #resolved > 0 and api.nvim_buf_get_lines(buf, 0, -1, false) or {}
  take_merge(buf, args)
  review.disk_applied(buf, path, before, resolved)
  return { status = "merged", revision = rev, tick = M.tick(buf) }
end

--- Apply one instruction of the backend, in one go and without asking it
--- anything back (this runs inside the backend's request):
--- - no loaded buffer: `no_buffer` (the backend writes the disk);
--- - the agent's edit on disk (`disk`): see apply_disk;
--- - a buffer with 'readonly' or 'nomodifiable' (not a restore): left
---   alone, the user told: `locked` (the agent's write is refused, the disk
---   left alone);
--- - unmodified buffer, an agent's write: `merged` at its tick (the user
---   may have saved lines the agent never saw), with minimal edits, saved:
---   `saved`; a merge with conflict blocks is left unsaved: `merged`; no
---   merge, or not at its tick: `stale` (the backend merges again);
--- - unmodified buffer, a restore: `content`, saved: `saved`;
--- - a buffer with open conflict blocks, modified or saved with them (an
---   agent write): left alone and marked modified, `waiting` (the backend
---   then sends it as a disk edit, merged unless that conflicts with the
---   open ones);
--- - modified buffer still at `tick`: `merged` applied as one undo step,
---   left unsaved: `merged` (the backend writes the agent's text to disk);
--- - else (the user typed since the backend's last report): `stale` with
---   the buffer's text and tick; the backend merges again and resends.
---@param args acp.FsApplyArgs
---@return acp.FsApplyReply
function M.apply(args)
  local rev = args.revision
  local buf = M.find_buffer(args.path)
  if not buf then
    return { status = "no_buffer", revision = rev }
  end
  if args.disk then
    return apply_disk(buf, args)
  end
  local review = require("acp.edits.review")
  if not args.restore and (vim.bo[buf].readonly or not vim.bo[buf].modifiable) then
    -- The user made the buffer read-only: it is theirs to open up.
    local opt = vim.bo[buf].readonly and "readonly" or "nomodifiable"
    util.notify(
      ("the agent's write of %s was refused: its buffer is '%s'; :setlocal %s lets the agent write it"):format(
        vim.fn.fnamemodify(args.path, ":~:."),
        opt,
        opt == "readonly" and "noreadonly" or "modifiable"
      ),
      vim.log.levels.WARN
    )
    return { status = "locked", revision = rev }
  end
  if not args.restore and review.has_conflicts(buf) then
    -- New conflict blocks next to the open ones would nest them: the
    -- disk gets the agent's text, and the backend sends it again as a
    -- disk edit, merged unless that conflicts with the open ones (it then
    -- waits for them: acp.edits.review's pending). A buffer the user saved
    -- with its blocks in it is no longer 'modified' (data-safety seed
    -- 1020918746, case 812, nested a second agent's blocks into it): it is
    -- marked so, as its text is no longer the disk's, or Neovim's autoread
    -- would reload the agent's text over it.
    vim.bo[buf].modified = true
    return { status = "waiting", revision = rev, tick = M.tick(buf) }
  end
  if vim.bo[buf].modified then
    local stale = stale_reply(buf, args)
    if stale then
      return stale
    end
    take_merge(buf, args)
    return { status = "merged", revision = rev, tick = M.tick(buf) }
  end
  -- The agent's change merged into the buffer's text (the user may have
  -- saved lines it never saw since it read the file, or typed them during
  -- a turn in which it read nothing), or a reject's restore merged into it
  -- (another chat's agent may have written lines this chat's review never
  -- saw: data-safety seed 141793484, case 63): applied only at the tick it
  -- was made for; else the backend merges again from the text answered.
  local stale = stale_reply(buf, args)
  if stale then
    return stale
  end
  -- stale_reply turned away an instruction without a string `merged`.
  local text = args.merged --[[@as string]]
  local conflicts = int(args.conflicts) or 0
  if conflicts > 0 then
    -- Both changed the same lines: the conflict blocks are the user's to
    -- resolve, left unsaved (the backend writes the agent's text to disk).
    take_merge(buf, args)
    return { status = "merged", revision = rev, tick = M.tick(buf) }
  end
  local old_content = (not M.is_unborn(buf)) and M.buffer_text(buf) or nil
  M.apply_text(buf, text)
  local ok, err = pcall(review.own_write, args.path, function()
    api.nvim_buf_call(buf, function()
      vim.cmd("silent keepalt write!")
    end)
  end)
  if not ok then
    error(("acp.nvim: could not save %s after applying the agent's edit: %s"):format(args.path, err), 0)
  end
  return { status = "saved", revision = rev, old_content = old_content, tick = M.tick(buf) }
end

-- The buffers a prompt goes out with ------------------------------------------
--
-- The "before" of agent edits that come without a diff. The backend holds
-- the texts (`acp_client::buffer_sync`); this only collects them (saves are
-- reported by acp.edits.review's BufWritePost, `acp.file_saved`).
--
-- An agent that writes a file right after announcing the tool call (or
-- that announces it afterwards, or never sends a diff) leaves the backend
-- nothing to compare with: by the time it reads the file, the new text is
-- there. The buffer still had the old text when the prompt was sent, but
-- not necessarily later: Neovim reloads an unmodified buffer whose file
-- changed (`autoread`, on `:checktime`, focus, or the cursor-hold hooks
-- many configs add) and fires no event while the old text is still there
-- (`FileChangedShell` is skipped for autoread reloads, and `BufReadPre`
-- sees an emptied buffer). So the text is taken before the prompt goes
-- out, when no edit of that turn can have happened yet; nothing can race
-- it. The backend uses a file's text when a tool call first names the
-- file, and only believes it when the file changed on disk during the
-- turn. For a buffer with unsaved edits it is its file's text, read from
-- disk at the same moment.
--
-- Bounded: only buffers of files inside the chat's directory, each up to
-- `MAX_FILE_BYTES`, all together up to `MAX_TOTAL_BYTES`, and only
-- unmodified buffers whose text round-trips to the file byte for byte
-- (unix line ends, UTF-8, no BOM). A file the user saves during the turn
-- loses its text at the prompt (every save is reported): the difference
-- is then the user's, not the agent's.

--- Largest buffer a prompt goes out with.
M.MAX_FILE_BYTES = 1024 * 1024
--- Most bytes copied for one prompt.
M.MAX_TOTAL_BYTES = 16 * 1024 * 1024

local normalize = util.normalize_path

--- True when the buffer's text, as `acp.edits.fs` joins it, is what its file holds.
---@param buf integer
---@return boolean
local function round_trips(buf)
  local bo = vim.bo[buf]
  return bo.fileformat == "unix" and not bo.bomb and (bo.fileencoding == "" or bo.fileencoding == "utf-8")
end

---@class acp.PromptBuffer a buffer of the chat's directory as a prompt goes out
---@field path string
---@field text string the buffer's text
---@field tick integer its tick (acp.edits.fs.tick)
---@field disk? string its file's text, when the buffer has unsaved edits

--- Copy the open files under `cwd` (see above), for the prompt the
--- chat is about to send. Returns them for the prompt itself: the backend
--- then knows their text before the agent edits them (merging its first
--- edit of one with unsaved edits in one instruction), and the text a
--- write of an agent that reads nothing first is merged against.
---@param cwd string
---@return acp.PromptBuffer[]
function M.prompt_buffers(cwd)
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
          local text = modified and M.read_disk(path) or M.buffer_text(buf)
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
              text = modified and M.buffer_text(buf) or text,
              tick = M.tick(buf),
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
