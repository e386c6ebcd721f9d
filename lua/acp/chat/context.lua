---@mod acp.chat.context Context for prompts: `@` mentions of files, ranges, the
--- last visual selection and images, turned into ACP content blocks when a
--- prompt is sent.
---
--- A mention is plain text in the prompt (`@src/main.rs`, `@src/main.rs#L10-20`,
--- `@"dir with spaces/a.txt"`, `@selection`), so it can be typed, completed,
--- seen and deleted like any text. `:Acp add` and `:Acp paste-image` insert one.
--- When the prompt is sent each mention of an existing file becomes a block,
--- after the text block:
--- - agent advertises `promptCapabilities.embeddedContext`: an embedded
---   `resource` with the CURRENT text (an open buffer's unsaved lines);
--- - otherwise a `resource_link` (uri, name);
--- - images (png, jpeg, gif, webp) become `image` blocks only when the agent
---   advertises `promptCapabilities.image`; else they are dropped and the
---   chat says why.
--- Ranges travel in the uri as `file:///abs/path#L10-20`.

local api = vim.api
local util = require("acp.util")
local config = require("acp.config")

local M = {}

--- The `_meta` key marking the text block that carries the conversation
--- before a rewind: the transcript shows one line for it, `cc` leaves it out.
M.REWIND_META = "acp.nvim/rewind_context"

--- Whether a content block is the context a rewind added.
---@param b table
---@return boolean
function M.is_rewind_context(b)
  return type(b._meta) == "table" and b._meta[M.REWIND_META] == true
end

---@class acp.Mention
---@field raw string the mention as typed, `@` included
---@field path? string as typed (absent for @selection)
---@field selection? boolean `@selection`
---@field l1? integer first line (1-based)
---@field l2? integer last line

---@class acp.ContextItem
---@field path string absolute path
---@field l1? integer
---@field l2? integer
---@field label string how the chat names it

--- Image types by extension.
M.IMAGE_TYPES = { png = "image/png", jpg = "image/jpeg", jpeg = "image/jpeg", gif = "image/gif", webp = "image/webp" }

-- Last visual selection: the buffer it was made in (its '< and '> marks
-- hold the lines).
local last_selection_buf = nil
local tracking = false

--- True for buffers that hold a file the user edits (not chat buffers).
---@param buf integer
---@return boolean
local function is_file_buffer(buf)
  if not api.nvim_buf_is_valid(buf) or vim.bo[buf].buftype ~= "" then
    return false
  end
  -- Without the chat module loaded there is no chat buffer (the plugin
  -- file's selection tracking must not load every module).
  local chat = package.loaded["acp.chat.index"]
  return api.nvim_buf_get_name(buf) ~= "" and (not chat or chat.of_buf(buf) == nil)
end

--- A visual selection was made in `buf` (the `ModeChanged` autocommand of
--- plugin/acp.lua, set before any chat exists: a selection made before the
--- first chat was not offered after `@`).
---@param buf integer
function M.selection_made(buf)
  if is_file_buffer(buf) then
    last_selection_buf = buf
  end
end

--- Remember the buffer of every visual selection (for `@selection`); the
--- plugin file does it from the start, this covers a setup without it.
function M.track_selection()
  if tracking or vim.g.acp_tracks_selection then
    return
  end
  tracking = true
  api.nvim_create_autocmd("ModeChanged", {
    group = api.nvim_create_augroup("acp_context_selection", { clear = true }),
    pattern = { "[vV\x16]*:*" },
    callback = function()
      M.selection_made(api.nvim_get_current_buf())
    end,
  })
end

--- The last visual selection in a file buffer: buffer and whole lines.
---@return {buf: integer, l1: integer, l2: integer}?
function M.selection()
  local buf = last_selection_buf
  if not buf or not api.nvim_buf_is_valid(buf) then
    return nil
  end
  local s = api.nvim_buf_get_mark(buf, "<")
  local e = api.nvim_buf_get_mark(buf, ">")
  if s[1] == 0 or e[1] == 0 then
    return nil
  end
  local l1, l2 = math.min(s[1], e[1]), math.max(s[1], e[1])
  local n = api.nvim_buf_line_count(buf)
  return { buf = buf, l1 = math.min(l1, n), l2 = math.min(l2, n) }
end

--- A path as the prompt shows it: relative to `cwd` when inside it.
M.display_path = util.display_path

--- The mention text for a file (and lines).
---@param path string absolute
---@param cwd string
---@param l1? integer
---@param l2? integer
---@return string
function M.mention(path, cwd, l1, l2)
  local shown = M.display_path(path, cwd)
  if shown:find('[%s"]') then
    shown = '"' .. shown .. '"'
  end
  local range = ""
  if l1 then
    range = (l2 and l2 ~= l1) and ("#L%d-%d"):format(l1, l2) or ("#L%d"):format(l1)
  end
  if shown:sub(1, 1) == '"' then
    return "@" .. shown:sub(1, -2) .. range .. '"'
  end
  return "@" .. shown .. range
end

--- A line number a pattern matched as `%d+` (digits only: an integer).
---@param d string? a `%d+` capture of a pattern that matched (so set)
---@return integer
local function line_no(d)
  return tonumber(d) --[[@as integer]]
end

--- Split `path#L10-20` into the path and its lines.
---@param s string
---@return string path, integer? l1, integer? l2
local function split_range(s)
  local path, a, b = s:match("^(.-)#L(%d+)%-L?(%d+)$")
  if path then
    return path, line_no(a), line_no(b)
  end
  path, a = s:match("^(.-)#L(%d+)$")
  if path then
    return path, line_no(a), line_no(a)
  end
  return s
end

--- The mentions in a prompt's text, in order, without duplicates. A mention
--- starts a word (so `me@example.com` is none).
---@param text string
---@return acp.Mention[]
function M.parse(text)
  local out, seen = {}, {}
  local function add(m)
    local key = m.raw
    if not seen[key] then
      seen[key] = true
      out[#out + 1] = m
    end
  end
  local i = 1
  while true do
    local s = text:find("@", i, true)
    if not s then
      break
    end
    local prev = s > 1 and text:sub(s - 1, s - 1) or ""
    if prev == "" or prev:match("[%s%(%[{,;]") then
      local quoted = text:match('^@"([^"\n]+)"', s)
      if quoted then
        local path, l1, l2 = split_range(quoted)
        add({ raw = '@"' .. quoted .. '"', path = path, l1 = l1, l2 = l2 })
        i = s + #quoted + 3
      else
        local word = text:match("^@([^%s]+)", s) or ""
        -- Punctuation that ends a sentence is not part of the path.
        word = word:gsub("[%.,;:!%?%)%]}'\"]+$", "")
        if word == "selection" then
          add({ raw = "@selection", selection = true })
        elseif word ~= "" then
          local path, l1, l2 = split_range(word)
          add({ raw = "@" .. word, path = path, l1 = l1, l2 = l2 })
        end
        i = s + 1 + #word
      end
    else
      i = s + 1
    end
  end
  return out
end

--- True when the text holds at least one mention.
---@param text string
---@return boolean
function M.has_mentions(text)
  return #M.parse(text) > 0
end

---@param path string
---@return string?
local function image_type(path)
  local ext = (path:match("%.([%w]+)$") or ""):lower()
  return M.IMAGE_TYPES[ext]
end

--- The file a mention names: absolute path, or nil when it names nothing
--- (no such file and no buffer: `@someone` is just text).
---@param m acp.Mention
---@param cwd string
---@return acp.ContextItem? item, string? problem
local function item_of(m, cwd)
  if m.selection then
    local sel = M.selection()
    if not sel then
      return nil, "@selection: no visual selection yet; select lines in a file first"
    end
    local path = api.nvim_buf_get_name(sel.buf)
    return { path = path, l1 = sel.l1, l2 = sel.l2, label = M.mention(path, cwd, sel.l1, sel.l2) }
  end
  -- normalize expands `~` and `$VARS`; never vim.fn.expand, which would
  -- read `%` and `#` as buffer names.
  -- Every mention but @selection has a path.
  local path = vim.fs.normalize(m.path --[[@as string]])
  if path:sub(1, 1) ~= "/" then
    path = cwd .. "/" .. path
  end
  path = vim.fs.normalize(path)
  local known = require("acp.edits.fs").find_buffer(path) or util.uv.fs_stat(path)
  if not known then
    -- `@file#L1-2XYZ` (text typed onto a mention): the file exists, the
    -- range does not parse. Say so rather than send the prompt without it.
    local base, frag = path:match("^(.-)(#.*)$")
    if base and base ~= "" and (require("acp.edits.fs").find_buffer(base) or util.uv.fs_stat(base)) then
      return nil, ("%s: not sent, %q is not a line range (write #L10 or #L10-20, then a space)"):format(m.raw, frag)
    end
    return nil
  end
  return { path = path, l1 = m.l1, l2 = m.l2, label = m.raw }
end

---@param path string
---@return string? text, string? problem
local function read_disk(path, max)
  local st = util.uv.fs_stat(path)
  if not st or st.type ~= "file" then
    return nil, "not a regular file"
  end
  if st.size > max then
    return nil, ("larger than context.max_embed_bytes (%d bytes)"):format(max)
  end
  local f = io.open(path, "rb")
  if not f then
    return nil, "not readable"
  end
  local data = f:read("*a")
  f:close()
  if data:find("\0", 1, true) then
    return nil, "binary"
  end
  return data
end

--- Text of an item: the buffer's current lines when it is loaded (unsaved
--- edits included), else the disk.
---@param item acp.ContextItem
---@return string? text, string? problem
local function item_text(item)
  local max = config.options.context.max_embed_bytes
  local fs = require("acp.edits.fs")
  local limit = item.l1 and item.l2 and (item.l2 - item.l1 + 1) or nil
  local text = fs.read({ path = item.path, line = item.l1, limit = limit, as_shown = true })
  if text then
    if #text > max then
      return nil, ("larger than context.max_embed_bytes (%d bytes)"):format(max)
    end
    return text
  end
  local data, problem = read_disk(item.path, max)
  if not data or not item.l1 then
    return data, problem
  end
  local lines = vim.split(data, "\n", { plain = true })
  return table.concat(vim.list_slice(lines, item.l1, item.l2), "\n") .. "\n"
end

---@param item acp.ContextItem
---@return string
local function uri_of(item)
  local uri = vim.uri_from_fname(item.path)
  if item.l1 then
    uri = uri .. ((item.l2 and item.l2 ~= item.l1) and ("#L%d-%d"):format(item.l1, item.l2) or ("#L%d"):format(item.l1))
  end
  return uri
end

---@param item acp.ContextItem
---@return table
local function link(item)
  return { type = "resource_link", uri = uri_of(item), name = vim.fs.basename(item.path) }
end

--- The content blocks of a prompt: its text, then one block per mention.
--- `notes` says what was dropped or downgraded, and why.
---@param chat acp.Chat
---@param text string
---@return table[] blocks, string[] notes
function M.blocks(chat, text)
  local caps = (chat.capabilities or {}).prompt_capabilities or {}
  local embed = caps.embedded_context == true
  local images = caps.image == true
  local agent = chat.agent and chat.agent.name or "the agent"
  local blocks = { { type = "text", text = text } }
  local notes = {}
  for _, m in ipairs(M.parse(text)) do
    local item, problem = item_of(m, chat.cwd)
    if problem then
      notes[#notes + 1] = problem
    elseif item then
      local st = util.uv.fs_stat(item.path)
      local mime = image_type(item.path)
      if st and st.type == "directory" then
        blocks[#blocks + 1] = link(item)
      elseif mime then
        if not images then
          notes[#notes + 1] = ("%s: not sent, %s does not accept images (no promptCapabilities.image)"):format(
            item.label,
            agent
          )
        else
          local f = st and io.open(item.path, "rb")
          local data = f and f:read("*a")
          if f then
            f:close()
          end
          local max = config.options.context.max_image_bytes
          if not data then
            notes[#notes + 1] = item.label .. ": not sent, the image could not be read"
          elseif #data > max then
            notes[#notes + 1] = ("%s: not sent, larger than context.max_image_bytes (%d bytes)"):format(item.label, max)
          else
            blocks[#blocks + 1] =
              { type = "image", mime_type = mime, data = vim.base64.encode(data), uri = vim.uri_from_fname(item.path) }
          end
        end
      elseif embed then
        local body, why = item_text(item)
        if body then
          blocks[#blocks + 1] = { type = "resource", resource = { uri = uri_of(item), text = body } }
        else
          notes[#notes + 1] = ("%s: sent as a link, not its text (%s)"):format(item.label, why or "unreadable")
          blocks[#blocks + 1] = link(item)
        end
      else
        blocks[#blocks + 1] = link(item)
      end
    end
  end
  return blocks, notes
end

--- How a user message shows its blocks in the transcript: the text as
--- typed, then one short line per context block (never a file's content).
---@param blocks table[]?
---@param cwd string
---@return string
function M.user_text(blocks, cwd)
  local text, extra = {}, {}
  for _, b in ipairs(blocks or {}) do
    local t = b.type
    if t == "text" and M.is_rewind_context(b) then
      extra[#extra + 1] = "↳ the conversation before the rewind (context for the agent)"
    elseif t == "text" then
      text[#text + 1] = b.text or ""
    else
      local uri = b.uri or (b.resource or {}).uri
      local shown = uri or b.mime_type or ""
      if type(uri) == "string" and vim.startswith(uri, "file://") then
        -- The pattern matches any string.
        local path, frag = uri:match("^([^#]*)(#?.*)$") --[[@as string, string]]
        shown = M.display_path(vim.uri_to_fname(path), cwd) .. frag
      end
      local what = ({ resource = "embedded", resource_link = "link", image = "image" })[t] or tostring(t)
      extra[#extra + 1] = ("↳ %s %s"):format(what, shown)
    end
  end
  local out = table.concat(text, "")
  if #extra > 0 then
    out = out .. (out ~= "" and "\n" or "") .. table.concat(extra, "\n")
  end
  return out
end

--- A queue entry for Chat:send that builds the blocks when the prompt is
--- actually sent: the agent's capabilities are known by then, and buffers
--- are read as they are at that moment.
---@param chat acp.Chat
---@param text string
---@return fun(): table[]
function M.deferred(chat, text)
  return function()
    local blocks, notes = M.blocks(chat, text)
    if #notes > 0 then
      local lines = {}
      for _, n in ipairs(notes) do
        lines[#lines + 1] = "! " .. n
      end
      chat.transcript.view:batch(function()
        chat.transcript:note(lines, "AcpError")
      end)
      util.notify(table.concat(notes, "\n"), vim.log.levels.WARN)
    end
    return blocks
  end
end

--- Append a mention to a chat's prompt buffer (its own line, so it can be
--- deleted as one).
---@param chat acp.Chat
---@param mention string
function M.insert(chat, mention)
  local buf = chat.prompt_buf
  local lines = api.nvim_buf_get_lines(buf, 0, -1, false)
  if #lines == 1 and lines[1] == "" then
    api.nvim_buf_set_lines(buf, 0, -1, false, { mention, "" })
  elseif lines[#lines] == "" then
    api.nvim_buf_set_lines(buf, #lines - 1, #lines, false, { mention, "" })
  else
    api.nvim_buf_set_lines(buf, #lines, #lines, false, { mention, "" })
  end
  -- The next thing typed goes on the fresh line under the mention, never
  -- onto it (`@hello.lua#L1-2XYZ` lost the context).
  local last = api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.fn.win_findbuf(buf)) do
    api.nvim_win_set_cursor(win, { last, 0 })
  end
end

--- `:[range]Acp add`: add lines of the current buffer (all of it without a
--- range) to the current chat's next prompt, as a mention.
---@param opts {range: integer, line1: integer, line2: integer}
---@return boolean ok, string? err
function M.add(opts)
  local buf = api.nvim_get_current_buf()
  local function fail(msg)
    util.notify(msg, vim.log.levels.WARN)
    return false, msg
  end
  if require("acp.chat.index").of_buf(buf) then
    return fail("run :Acp add in the buffer you want to add, not in a chat")
  end
  local path = api.nvim_buf_get_name(buf)
  if path == "" or vim.bo[buf].buftype ~= "" then
    return fail("this buffer has no file name; save it (:w name) before adding it as context")
  end
  local chat = require("acp.chat.index").current()
  if not chat then
    return fail("no chat yet; open one with :Acp")
  end
  local l1, l2
  if opts and opts.range and opts.range > 0 then
    l1, l2 = math.min(opts.line1, opts.line2), math.max(opts.line1, opts.line2)
  end
  local mention = M.mention(path, chat.cwd, l1, l2)
  M.insert(chat, mention)
  util.notify(("added %s to the prompt of chat %d"):format(mention, chat.n))
  return true
end

--- Commands that print the clipboard's PNG image, in order of preference.
---@return string[]? cmd, string? err
function M.clipboard_image_cmd()
  local function has(p)
    return vim.fn.executable(p) == 1
  end
  if vim.env.WAYLAND_DISPLAY and has("wl-paste") then
    return { "wl-paste", "--no-newline", "--type", "image/png" }
  end
  if vim.env.DISPLAY and has("xclip") then
    return { "xclip", "-selection", "clipboard", "-target", "image/png", "-out" }
  end
  if has("pngpaste") then
    return { "pngpaste", "-" }
  end
  return nil,
    "no clipboard image tool found: install wl-clipboard (Wayland), xclip (X11) or pngpaste (macOS), or mention an image file with @path/to/image.png"
end

--- `:Acp paste-image`: save the clipboard's image and mention it in the
--- current chat's prompt.
---@return boolean ok, string? err
function M.paste_image()
  local function fail(msg)
    util.notify(msg, vim.log.levels.WARN)
    return false, msg
  end
  local chat = require("acp.chat.index").current()
  if not chat then
    return fail("no chat yet; open one with :Acp")
  end
  local caps = (chat.capabilities or {}).prompt_capabilities or {}
  if chat.capabilities and caps.image ~= true then
    return fail(("%s does not accept images (no promptCapabilities.image); nothing pasted"):format(chat.agent.name))
  end
  local cmd, err = M.clipboard_image_cmd()
  if not cmd then
    return fail(err)
  end
  local ok, res = pcall(function()
    return vim.system(cmd, { text = false }):wait(5000)
  end)
  if not ok or res.code ~= 0 or not res.stdout or res.stdout == "" then
    local why = ok
        and (res.stderr and res.stderr ~= "" and vim.trim(res.stderr) or ("exit code " .. tostring(res.code)))
      or tostring(res)
    return fail(("the clipboard holds no PNG image (%s: %s)"):format(cmd[1], why))
  end
  local dir = vim.fn.stdpath("cache") .. "/acp/images"
  vim.fn.mkdir(dir, "p")
  local path = ("%s/paste-%s.png"):format(dir, os.date("%Y%m%d-%H%M%S") .. "-" .. tostring(util.uv.hrtime() % 1000000))
  local f = io.open(path, "wb")
  if not f then
    return fail("could not write " .. path)
  end
  f:write(res.stdout)
  f:close()
  local mention = M.mention(path, chat.cwd)
  M.insert(chat, mention)
  util.notify(("pasted the clipboard image as %s"):format(mention))
  return true
end

return M
