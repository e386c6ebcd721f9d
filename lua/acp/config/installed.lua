---@mod acp.config.installed The agents installed from the ACP registry, as the
--- configuration starts them: each one's `<dir>/<id>/installed.json`
--- (written by the backend), read where the `registry` option says agents
--- are installed. Reads files only: acp.agents.registry installs.

local M = {}

--- The registry's published index (its README).
M.DEFAULT_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"

--- Registry ids a preset resolves to when one of them is installed, best first.
---@type table<string, string[]>
M.preset_ids = {
  claude = { "claude-acp", "claude-code-acp" },
  codex = { "codex-acp" },
  gemini = { "gemini" },
  goose = { "goose" },
  opencode = { "opencode" },
}

---@class acp.InstalledAgent
---@field id string
---@field name string
---@field version string
---@field kind "binary"|"npx"|"uvx"
---@field cmd string[]
---@field env table<string,string>

--- Where registry agents are installed (absolute, `~` expanded).
---@return string
---@param registry_opts? table the `registry` option
function M.dir(registry_opts)
  local opts = registry_opts or {}
  local dir = vim.fn.fnamemodify(opts.dir or (vim.fn.stdpath("data") .. "/acp/agents"), ":p")
  return (dir:gsub("/$", ""))
end

--- The installed agent `id`, from its `installed.json`.
---@param id string
---@param registry_opts? table the `registry` option
---@return acp.InstalledAgent?
function M.get(id, registry_opts)
  if type(id) ~= "string" or not id:match("^[a-z0-9][a-z0-9._-]*$") then
    return nil
  end
  local path = M.dir(registry_opts) .. "/" .. id .. "/installed.json"
  local text = require("acp.util").read_file(path)
  if not text then
    return nil
  end
  local ok, decoded = pcall(vim.json.decode, text)
  if not ok or type(decoded) ~= "table" or type(decoded.cmd) ~= "table" or not decoded.cmd[1] then
    return nil
  end
  if type(decoded.env) ~= "table" then
    decoded.env = {}
  end
  return decoded
end

--- Every installed agent, sorted by id.
---@param registry_opts? table the `registry` option
---@return acp.InstalledAgent[]
function M.all(registry_opts)
  local out = {}
  local dir = M.dir(registry_opts)
  if vim.fn.isdirectory(dir) ~= 1 then
    return out
  end
  for _, name in ipairs(vim.fn.readdir(dir)) do
    local a = M.get(name, registry_opts)
    if a then
      out[#out + 1] = a
    end
  end
  table.sort(out, function(a, b)
    return a.id < b.id
  end)
  return out
end

--- The installed agent an agent name starts: the registry agent of that
--- id, else (for a preset) the first installed registry id of the preset.
---@param name string
---@param registry_opts? table the `registry` option
---@return acp.InstalledAgent?
function M.resolve(name, registry_opts)
  local direct = M.get(name, registry_opts)
  if direct then
    return direct
  end
  for _, id in ipairs(M.preset_ids[name] or {}) do
    local a = M.get(id, registry_opts)
    if a then
      return a
    end
  end
end

return M
