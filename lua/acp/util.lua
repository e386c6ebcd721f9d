---@mod acp.util Small helpers shared by the acp.nvim modules.

local M = {}

--- libuv handle: `vim.uv` on Neovim >= 0.10, `vim.loop` before.
M.uv = vim.uv or vim.loop

--- A file's one name in the plugin: absolute, symlinks resolved (as the
--- backend's workspace check gives it), else absolute. Buffers, reviews,
--- the sync's instructions and the prompt's buffers are matched by it.
---@param path string
---@return string
function M.normalize_path(path)
  local full = vim.fn.fnamemodify(path, ":p")
  return M.uv.fs_realpath(full) or full
end

--- Root directory of the plugin (the directory holding `lua/` and `target/`).
---@return string
function M.plugin_root()
  -- This function's own frame: getinfo(1) always has it.
  local src = assert(debug.getinfo(1, "S")).source
  if src:sub(1, 1) == "@" then
    src = src:sub(2)
  end
  -- src = <root>/lua/acp/util.lua
  return vim.fn.fnamemodify(src, ":p:h:h:h")
end

--- Notify with the plugin prefix.
---@param msg string
---@param level? integer vim.log.levels.*
function M.notify(msg, level)
  vim.notify("acp.nvim: " .. msg, level or vim.log.levels.INFO)
end

--- Split text into lines for buffer APIs (drops carriage returns of CRLF text).
---@param text string
---@return string[]
function M.split_lines(text)
  if text:find("\r", 1, true) then
    text = text:gsub("\r\n", "\n"):gsub("\r", "\n")
  end
  return vim.split(text, "\n", { plain = true })
end

--- Line diff in the "indices" form, via `vim.text.diff` (0.11) or `vim.diff` (0.10).
---@param a string
---@param b string
---@return integer[][] hunks {start_a, count_a, start_b, count_b}
function M.diff_indices(a, b)
  local diff = (vim.text and vim.text.diff) or vim.diff
  return diff(a, b, { result_type = "indices" }) --[[@as integer[][] ]]
end

--- Count added and removed lines between two texts.
---@param old string?
---@param new string
---@return integer added, integer removed
function M.diff_stat(old, new)
  if old == nil or old == "" then
    local n = select(2, new:gsub("\n", ""))
    if new ~= "" and new:sub(-1) ~= "\n" then
      n = n + 1
    end
    return n, 0
  end
  local function norm(s)
    if s ~= "" and s:sub(-1) ~= "\n" then
      return s .. "\n"
    end
    return s
  end
  local added, removed = 0, 0
  for _, h in ipairs(M.diff_indices(norm(old), norm(new))) do
    removed = removed + h[2]
    added = added + h[4]
  end
  return added, removed
end

local function json_scalar(v)
  if v == vim.NIL or v == nil then
    return "null"
  end
  return vim.json.encode(v)
end

--- Pretty-print a Lua value decoded from JSON/msgpack as indented JSON lines
--- (keys sorted, so the output is stable).
---@param v any
---@param indent? string
---@return string[]
function M.json_lines(v, indent)
  indent = indent or ""
  local out = {}
  local function walk(x, pad, prefix, suffix)
    if type(x) == "table" and x ~= vim.NIL then
      local is_list
      if vim.islist then
        is_list = vim.islist(x)
      else
        is_list = vim.tbl_islist(x)
      end
      if next(x) == nil then
        out[#out + 1] = pad .. prefix .. (is_list and "[]" or "{}") .. suffix
        return
      end
      if is_list then
        out[#out + 1] = pad .. prefix .. "["
        for i, item in ipairs(x) do
          walk(item, pad .. "  ", "", i < #x and "," or "")
        end
        out[#out + 1] = pad .. "]" .. suffix
      else
        local keys = vim.tbl_keys(x)
        table.sort(keys, function(a, b)
          return tostring(a) < tostring(b)
        end)
        out[#out + 1] = pad .. prefix .. "{"
        for i, k in ipairs(keys) do
          walk(x[k], pad .. "  ", vim.json.encode(tostring(k)) .. ": ", i < #keys and "," or "")
        end
        out[#out + 1] = pad .. "}" .. suffix
      end
    else
      out[#out + 1] = pad .. prefix .. json_scalar(x) .. suffix
    end
  end
  walk(v, indent, "", "")
  return out
end

--- One-line JSON, cut to `max` characters.
---@param v any
---@param max? integer
---@return string
function M.json_oneline(v, max)
  local ok, s = pcall(vim.json.encode, v)
  if not ok then
    s = vim.inspect(v, { newline = " ", indent = "" })
  end
  max = max or 200
  if #s > max then
    s = s:sub(1, max) .. "…"
  end
  return s
end

--- The requests of `pending` (request id -> request with `request_id` and
--- `chat_id`) that belong to `chat_id`, oldest (lowest id) first.
---@generic T
---@param pending table<integer, T>
---@param chat_id? string
---@return T[]
function M.requests_of(pending, chat_id)
  local list = {}
  for _, req in pairs(pending) do
    if req.chat_id == chat_id then
      list[#list + 1] = req
    end
  end
  table.sort(list, function(a, b)
    return a.request_id < b.request_id
  end)
  return list
end

--- Read a file's text; nil when it does not exist or cannot be read.
---@param path string
---@return string?
function M.read_file(path)
  local f = io.open(path, "rb")
  if not f then
    return nil
  end
  local text = f:read("*a")
  f:close()
  return text
end

--- A path as the chat shows it: relative to `cwd` when inside it.
---@param path string absolute
---@param cwd string?
---@return string
function M.display_path(path, cwd)
  if not cwd or cwd == "" then
    return path
  end
  local root = vim.fs.normalize(cwd)
  path = vim.fs.normalize(path)
  if vim.startswith(path, root .. "/") then
    return path:sub(#root + 2)
  end
  return path
end

--- The loaded normal-file buffer of a path, if any.
---@param path string absolute path
---@return integer? buf
function M.find_buffer(path)
  if type(path) ~= "string" or path == "" then
    return nil
  end
  local want = M.normalize_path(path)
  for _, buf in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(buf) and vim.bo[buf].buftype == "" then
      local name = vim.api.nvim_buf_get_name(buf)
      if name ~= "" and (name == path or M.normalize_path(name) == want) then
        return buf
      end
    end
  end
end

return M
