---@meta
-- Types for the part of libuv's Lua binding (luv, `vim.uv`) the plugin uses.
-- Neovim's runtime declares `vim.uv` as class `uv` but ships no definition of
-- it (editors take one from elsewhere), so emmylua_check would see every
-- `vim.uv.*` as an undefined field. Only the checker reads this file
-- (.emmyrc.lua lists types/ as a library); nothing requires it.

---@class uv.fs_stat.time
---@field sec integer
---@field nsec integer

---@class uv.fs_stat.result
---@field type string "file", "directory", "link", ...
---@field size integer
---@field mode integer
---@field mtime uv.fs_stat.time
---@field atime uv.fs_stat.time
---@field ctime uv.fs_stat.time

---@class uv.os_uname.info
---@field sysname string
---@field release string
---@field version string
---@field machine string

---@class uv.uv_timer_t
local timer = {}

---@param timeout integer milliseconds before the first call
---@param repeat_ integer milliseconds between calls, 0 for once
---@param callback fun()
---@return 0|nil ok
---@return string? err
function timer:start(timeout, repeat_, callback) end

---@return 0|nil ok
---@return string? err
function timer:stop() end

---@param callback? fun()
function timer:close(callback) end

---@return boolean
function timer:is_closing() end

---@class uv
local uv = {}

---@param path string
---@return uv.fs_stat.result? stat
---@return string? err
function uv.fs_stat(path) end

---@param path string
---@return uv.fs_stat.result? stat
---@return string? err
function uv.fs_lstat(path) end

---@param path string
---@return string? path
---@return string? err
function uv.fs_realpath(path) end

---@param path string
---@param atime number seconds
---@param mtime number seconds
---@return boolean? ok
---@return string? err
function uv.fs_utime(path, atime, mtime) end

---@return integer nanoseconds on a monotonic clock
function uv.hrtime() end

---@return uv.uv_timer_t? timer
---@return string? err
function uv.new_timer() end

---@return uv.os_uname.info
function uv.os_uname() end
