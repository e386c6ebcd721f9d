---@mod acp.rpc.binary Where the plugin's own binaries are (the backend and the
--- demo agent): a module of its own so that finding the demo agent, on the
--- path of `:Acp`, loads neither the backend nor `:Acp build` (issue #30).

local util = require("acp.util")

local M = {}

--- Where `:Acp build` installs the binaries.
---@param root? string plugin directory
---@return string
function M.bin_dir(root)
  return (root or util.plugin_root()) .. "/bin"
end

--- The file `:Acp build` writes next to the binaries it installed.
M.MARKER = "install.json"

--- What `:Acp build` installed in `dir`, or nil.
---@param dir string
---@return table? marker {source, version, target, url, sha256}
function M.read_marker(dir)
  local text = util.read_file(dir .. "/" .. M.MARKER)
  if not text then
    return nil
  end
  local ok, marker = pcall(vim.json.decode, text)
  if ok and type(marker) == "table" then
    return marker
  end
  return nil
end

---@class acp.BackendSource
---@field kind "configured"|"downloaded"|"built"
---@field detail string where it is from, for messages and :checkhealth

--- The plugin's own backend or demo agent: of `<root>/bin/<name>` (installed
--- by :Acp build), `<root>/target/release/<name>` and
--- `<root>/target/debug/<name>` (cargo builds), the newest file. Newest, not a
--- fixed order: whichever the user made last (:Acp build after a pull, or a
--- cargo build after editing the Rust) is the one they expect to run.
---@param name string "acp-nvim" or "acp-fake-agent"
---@param root? string plugin directory
---@return string? path, acp.BackendSource? source
function M.plugin_binary(name, root)
  root = root or util.plugin_root()
  local uv = vim.uv or vim.loop
  local best, best_mtime, best_kind, best_dir ---@type string?, number, "downloaded"|"built", string
  ---@type {[1]: string, [2]: "downloaded"|"built"}[]
  local candidates = {
    { M.bin_dir(root), "downloaded" },
    { root .. "/target/release", "built" },
    { root .. "/target/debug", "built" },
  }
  for _, c in ipairs(candidates) do
    local path = c[1] .. "/" .. name
    local st = uv.fs_stat(path)
    if st and vim.fn.executable(path) == 1 then
      local mtime = st.mtime.sec + st.mtime.nsec / 1e9
      if not best or mtime > best_mtime then
        best, best_mtime, best_kind, best_dir = path, mtime, c[2], c[1]
      end
    end
  end
  if not best then
    return nil
  end
  local detail
  if best_kind == "downloaded" then
    local marker = M.read_marker(best_dir) or {}
    detail = ("downloaded by :Acp build (%s %s from %s)"):format(
      tostring(marker.version or "unknown version"),
      tostring(marker.target or "?"),
      tostring(marker.url or "an unknown URL")
    )
  else
    detail = "built with cargo into " .. best_dir
  end
  return best, { kind = best_kind, detail = detail }
end

return M
