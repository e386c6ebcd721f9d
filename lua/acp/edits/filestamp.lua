---@mod acp.edits.filestamp Neovim's record of when it last read a file, kept
--- quiet for agent changes a buffer already holds.
---
--- Neovim remembers a file's modification time when it reads or writes a
--- buffer, and `:write` asks "The file has been changed since reading it!!!"
--- when the disk's time differs. After the agent's on-disk change was merged
--- into a modified buffer, or applied to an unmodified one (acp.edits.review,
--- acp.edits.fs), that question is noise: the buffer already holds the change. Lua cannot update Neovim's record, so
--- right before such a write (BufWritePre runs before Neovim's check) the
--- file's time is set back to the one Neovim recorded, and only when the disk
--- still holds exactly the agent text that was merged: a change by anyone
--- else still gets Neovim's question. The write replaces the file at once, so
--- nothing else sees the old time.
---
--- It keeps no copy of the backend's file state (issue 24): `stamps` is
--- Neovim's own record of the file's time, which Lua cannot read from
--- Neovim, and `merged` is the `content` of the last instruction the buffer
--- took (acp.edits.fs.apply), dropped at the buffer's next read or write. Asking
--- the backend for the disk text instead would be a blocking request in
--- every `:write` of a file the agent touched.

local api = vim.api
local uv = vim.uv or vim.loop

local M = {}

---@class acp.FileStamp
---@field sec integer
---@field nsec integer

--- Modification time Neovim recorded for each buffer (its last read/write).
---@type table<integer, acp.FileStamp>
local stamps = {}

--- The disk text merged into each buffer since its last read/write.
---@type table<integer, string>
local merged = {}

local group = api.nvim_create_augroup("acp.filestamp", { clear = true })

---@param path string
---@return acp.FileStamp?
local function stat(path)
  local st = uv.fs_stat(path)
  return st and { sec = st.mtime.sec, nsec = st.mtime.nsec } or nil
end

---@type (fun(path: string, stamp: acp.FileStamp): boolean)?
local set_exact
do
  -- Linux Neovim compares nanoseconds; libuv's fs_utime takes a double, which
  -- cannot hold today's times to the nanosecond, so use utimensat(2).
  local ok, ffi = pcall(require, "ffi")
  if ok and jit and jit.os == "Linux" then
    pcall(
      ffi.cdef,
      [[
      struct acp_timespec { long tv_sec; long tv_nsec; };
      int utimensat(int dirfd, const char *pathname, const struct acp_timespec times[2], int flags);
    ]]
    )
    set_exact = function(path, stamp)
      local times = ffi.new("struct acp_timespec[2]")
      for i = 0, 1 do
        times[i].tv_sec = stamp.sec
        times[i].tv_nsec = stamp.nsec
      end
      local AT_FDCWD = -100
      return ffi.C.utimensat(AT_FDCWD, path, times, 0) == 0
    end
  end
end

---@param path string
---@param stamp acp.FileStamp
---@return boolean
local function set_time(path, stamp)
  if set_exact then
    return set_exact(path, stamp)
  end
  -- Elsewhere Neovim compares whole seconds, which a double holds.
  local t = stamp.sec + stamp.nsec / 1e9
  return uv.fs_utime(path, t, t) == true
end

--- Record the file's current time as Neovim's (after a read or write).
---@param buf integer
function M.remember(buf)
  local name = api.nvim_buf_get_name(buf)
  stamps[buf] = name ~= "" and stat(name) or nil
  merged[buf] = nil
end

--- The agent's text `disk` (on disk now, or written by the backend right
--- after this call) was merged into the buffer `buf` (or applied to it).
---@param buf integer
---@param disk string
function M.merged(buf, disk)
  merged[buf] = disk
end

--- Whether the buffer holds the agent text now on disk (merged into it, or
--- applied to it): Neovim's "file changed" question about it is noise.
---@param buf integer
---@return boolean
function M.holds_disk(buf)
  local text = merged[buf]
  return text ~= nil and require("acp.util").read_file(api.nvim_buf_get_name(buf)) == text
end

--- BufWritePre: quiet Neovim's question when the only change on disk is the
--- agent text merged into the buffer.
---@param buf integer
---@param target? string the file being written (`:w other` writes elsewhere)
---@return boolean restored whether the time was set back
function M.before_write(buf, target)
  local text, stamp = merged[buf], stamps[buf]
  if text == nil or stamp == nil then
    return false
  end
  local path = api.nvim_buf_get_name(buf)
  if target and target ~= "" and vim.fn.fnamemodify(target, ":p") ~= path then
    return false
  end
  local now = stat(path)
  if not now or (now.sec == stamp.sec and now.nsec == stamp.nsec) then
    return false
  end
  if not M.holds_disk(buf) then
    -- Someone else changed the file too: let Neovim ask.
    return false
  end
  return set_time(path, stamp)
end

function M.setup()
  api.nvim_clear_autocmds({ group = group })
  api.nvim_create_autocmd({ "BufReadPost", "BufWritePost", "FileChangedShellPost" }, {
    group = group,
    callback = function(ev)
      M.remember(ev.buf)
    end,
  })
  api.nvim_create_autocmd("BufWritePre", {
    group = group,
    callback = function(ev)
      M.before_write(ev.buf, ev.file)
    end,
  })
  api.nvim_create_autocmd({ "BufWipeout", "BufDelete" }, {
    group = group,
    callback = function(ev)
      stamps[ev.buf], merged[ev.buf] = nil, nil
    end,
  })
  -- Buffers read before the plugin loaded.
  for _, buf in ipairs(api.nvim_list_bufs()) do
    if api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" and stamps[buf] == nil then
      M.remember(buf)
    end
  end
end

return M
