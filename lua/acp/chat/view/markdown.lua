---@mod acp.chat.view.markdown Markdown drawn with extmarks, incrementally, on the
--- transcript's message blocks (no regex 'syntax', no whole-buffer parser).
---
--- Each message block carries a renderer state (`acp.MdState`): the rows of
--- the block that are final (every line but the last, which may still be
--- streaming) are drawn once and never looked at again; the last line is
--- drawn again on the next pass. A pass runs once per batch of edits
--- (`acp.chat.blocks` calls `render` from `finish()`), so its cost is the lines that
--- arrived in the batch, whatever the length of the transcript.
---
--- What is drawn, as a modern markdown renderer does ('conceallevel' 2):
---   headings       `#` markers concealed, text in AcpMdH1..AcpMdH6
---   emphasis       `*`/`_`/`~~` delimiters concealed, text bold/italic/struck
---   inline code    backticks concealed, text in AcpMdCodeSpan
---   links          `[text](url)` shows `text` in AcpMdLink; the URLs of
---                  the cursor line are shown at its end
---   fenced code    fences concealed (the language shown), every line on
---                  AcpMdCode, highlighted by the language's treesitter
---                  parser when one is installed; the open block is parsed
---                  again per batch from its last segment of at most
---                  `SEGMENT` lines, so a long block costs no more per batch
---   tables         pipes drawn as box lines, the delimiter row as a rule,
---                  the header row bold, cells padded to the column width
---                  (on the side the delimiter row's colons ask for)
---                  while the table has at most `ALIGN_MAX` rows
---   quotes, lists, rules   `>` as a bar, bullets as `•`, `---` as a line
---
--- Lines longer than `INLINE_MAX` bytes get no inline markup (an agent
--- streaming one huge line would otherwise pay for it on every batch).

local api = vim.api

local M = {}

--- Lines of an open code block parsed together; a longer block is parsed in
--- segments of this many lines (highlights may be off across a boundary).
local SEGMENT = 200
--- Tables with more rows are not aligned while streaming.
local ALIGN_MAX = 200
--- Longer lines get no inline markup.
local INLINE_MAX = 4000

local PRIORITY = 100

---@class acp.MdFence
---@field char string "`" or "~"
---@field len integer length of the opening run
---@field lang? string treesitter language, nil when no parser
---@field seg integer block row offset of the current segment's first code line

---@class acp.MdTable
---@field first integer block row offset of the first row
---@field header? integer row offset of the header row (the one before the delimiter row)

---@class acp.MdState
---@field next integer block row offset of the first row not final
---@field fence? acp.MdFence
---@field table? acp.MdTable

---@return acp.MdState
function M.new_state()
  return { next = 0 }
end

---@type table<string, string|false>
local lang_cache = {}

--- The treesitter language of a fence's info string, when its parser and
--- highlights query are installed.
---@param info string
---@return string?
local function fence_lang(info)
  if info == "" then
    return nil
  end
  local cached = lang_cache[info]
  if cached ~= nil then
    return cached or nil
  end
  local lang = vim.treesitter.language.get_lang(info) or info
  local ok = pcall(vim.treesitter.language.add, lang)
  local query = ok and select(2, pcall(vim.treesitter.query.get, lang, "highlights")) or nil
  lang_cache[info] = (ok and query) and lang or false
  return lang_cache[info] or nil
end

---@class acp.MdCtx
---@field buf integer
---@field ns integer
---@field code_ns integer

local function mark(ctx, row, col, opts)
  opts.priority = opts.priority or PRIORITY
  pcall(api.nvim_buf_set_extmark, ctx.buf, ctx.ns, row, col, opts)
end

local function hl(ctx, row, sc, ec, group)
  if ec > sc then
    mark(ctx, row, sc, { end_col = ec, hl_group = group })
  end
end

local function conceal(ctx, row, sc, ec, char)
  if ec > sc then
    mark(ctx, row, sc, { end_col = ec, conceal = char or "" })
  end
end

local EMPHASIS = { [1] = "AcpMdItalic", [2] = "AcpMdBold", [3] = "AcpMdBoldItalic" }

local function is_space(c)
  return c == "" or c:match("%s") ~= nil
end

local function is_word(c)
  return c ~= "" and c:match("[%w]") ~= nil
end

--- Inline markup of `line` between byte columns `s` and `e` (1-based,
--- inclusive). Returns the number of bytes concealed (for table widths).
---@param ctx acp.MdCtx
---@param row integer
---@param line string
---@param s integer
---@param e integer
---@param depth integer
---@return integer concealed
local function inline(ctx, row, line, s, e, depth)
  local hidden = 0
  local i = s
  while i <= e do
    local at = line:find("[`*_~%[\\]", i)
    if not at or at > e then
      break
    end
    i = at
    local c = line:sub(i, i)
    if c == "\\" then
      if line:sub(i + 1, i + 1):match("%p") then
        conceal(ctx, row, i - 1, i)
        hidden = hidden + 1
        i = i + 2
      else
        i = i + 1
      end
    elseif c == "`" then
      local run = line:match("^`+", i)
      local k = #run
      local j = i + k
      local close
      while true do
        local a, b = line:find("`+", j)
        if not a or not b or b > e then
          break
        end
        if b - a + 1 == k then
          close = a
          break
        end
        j = b + 1
      end
      if close then
        conceal(ctx, row, i - 1, i - 1 + k)
        conceal(ctx, row, close - 1, close - 1 + k)
        hl(ctx, row, i - 1 + k, close - 1, "AcpMdCodeSpan")
        hidden = hidden + 2 * k
        i = close + k
      else
        i = j
      end
    elseif c == "[" then
      local text_end = line:find("]", i + 1, true)
      local url_end = text_end and line:sub(text_end + 1, text_end + 1) == "(" and line:find(")", text_end + 2, true)
      if text_end and url_end and url_end <= e then
        conceal(ctx, row, i - 1, i)
        conceal(ctx, row, text_end - 1, url_end)
        hl(ctx, row, i, text_end - 1, "AcpMdLink")
        hidden = hidden + 1 + (url_end - text_end + 1)
        if depth < 3 then
          hidden = hidden + inline(ctx, row, line, i + 1, text_end - 1, depth + 1)
        end
        i = url_end + 1
      else
        i = i + 1
      end
    else
      -- Emphasis: a run of `*`, `_` (not inside a word) or `~~`.
      -- `c` is the character at `i`: the run holds at least it.
      local run = line:match("^" .. vim.pesc(c) .. "+", i) --[[@as string]]
      local k = #run
      local prev = i > 1 and line:sub(i - 1, i - 1) or ""
      local after = line:sub(i + k, i + k)
      local ok_open = not is_space(after) and (c ~= "_" or not is_word(prev))
      if c == "~" and k ~= 2 then
        ok_open = false
      end
      if k > 3 then
        ok_open = false
      end
      local close
      if ok_open then
        local j = i + k
        while true do
          local a = line:find(run, j, true)
          if not a or a + k - 1 > e then
            break
          end
          local before = line:sub(a - 1, a - 1)
          local next_c = line:sub(a + k, a + k)
          if a > i + k and not is_space(before) and next_c ~= c and (c ~= "_" or not is_word(next_c)) then
            close = a
            break
          end
          j = a + 1
        end
      end
      if close then
        conceal(ctx, row, i - 1, i - 1 + k)
        conceal(ctx, row, close - 1, close - 1 + k)
        hl(ctx, row, i - 1 + k, close - 1, c == "~" and "AcpMdStrike" or EMPHASIS[k])
        hidden = hidden + 2 * k
        if depth < 3 then
          hidden = hidden + inline(ctx, row, line, i + k, close - 1, depth + 1)
        end
        i = close + k
      else
        i = i + k
      end
    end
  end
  return hidden
end

--- Whether a line may hold inline markup. Plain searches: a pattern with a
--- character class costs ~1.5 µs on a 100-byte line without any (LuaJIT
--- does not compile patterns), which was most of a streamed line's cost.
---@param line string
---@return boolean
local function has_inline(line)
  return line:find("`", 1, true) ~= nil
    or line:find("*", 1, true) ~= nil
    or line:find("_", 1, true) ~= nil
    or line:find("~", 1, true) ~= nil
    or line:find("[", 1, true) ~= nil
    or line:find("\\", 1, true) ~= nil
end

--- Inline markup of a whole line (nothing on very long lines).
local function inline_line(ctx, row, line, s)
  if #line > INLINE_MAX or not has_inline(line) then
    return 0
  end
  return inline(ctx, row, line, s or 1, #line, 0)
end

--- Whether a line is a table row (starts with `|` after indentation).
local function is_table_row(line)
  return line:match("^%s*|") ~= nil
end

--- Whether a line is a table's delimiter row (`|---|:---:|`).
local function is_delimiter_row(line)
  return line:match("^%s*|[%s:|%-]*$") ~= nil and line:find("-", 1, true) ~= nil
end

--- Byte columns (1-based) of the unescaped pipes of a table row, outside
--- code spans.
---@param line string
---@return integer[]
local function pipes(line)
  local out = {}
  local i, in_code = 1, false
  while i <= #line do
    local c = line:sub(i, i)
    if c == "\\" then
      i = i + 1
    elseif c == "`" then
      in_code = not in_code
    elseif c == "|" and not in_code then
      out[#out + 1] = i
    end
    i = i + 1
  end
  return out
end

--- Draw one table row.
---@return integer[] pipes, integer[] widths displayed width of each cell
local function table_row(ctx, row, line, delimiter, header)
  local ps = pipes(line)
  local widths = {}
  for n, p in ipairs(ps) do
    local char = "│"
    if delimiter then
      char = n == 1 and "├" or (n == #ps and "┤" or "┼")
    end
    mark(ctx, row, p - 1, { end_col = p, conceal = char, hl_group = "AcpMdTableBorder" })
    local nxt = ps[n + 1]
    if nxt then
      if delimiter then
        for col = p + 1, nxt - 1 do
          mark(ctx, row, col - 1, { end_col = col, conceal = "─", hl_group = "AcpMdTableBorder" })
        end
        widths[n] = nxt - p - 1
      else
        local hidden = 0
        if #line <= INLINE_MAX then
          hidden = inline(ctx, row, line, p + 1, nxt - 1, 0)
        end
        if header then
          hl(ctx, row, p, nxt - 1, "AcpMdTableHead")
        end
        widths[n] = vim.fn.strdisplaywidth(line:sub(p + 1, nxt - 1)) - hidden
      end
    end
  end
  return ps, widths
end

--- Pad the cells of a table so its columns line up (inline virtual text
--- before each cell's closing pipe; the delimiter row gets rule characters).
---@param ctx acp.MdCtx
---@param start integer buffer row of the block
---@param t acp.MdTable
---@param last integer block row offset of the table's last row
---@param lines string[] the table's lines (offset t.first .. last)
local function align(ctx, start, t, last, lines)
  ---@type {off: integer, ps: integer[], cells: integer[], delimiter: boolean}[]
  local rows = {}
  ---@type integer[]
  local width = {}
  for off = t.first, last do
    local line = lines[off - t.first + 1]
    local ps = pipes(line)
    local delimiter = is_delimiter_row(line)
    local cells = {}
    for n = 1, #ps - 1 do
      local cell = line:sub(ps[n] + 1, ps[n + 1] - 1)
      local w ---@type integer
      if delimiter then
        -- Every character of the rule is shown (as `─`).
        w = #cell
      else
        -- Concealed inline delimiters do not count.
        local shown = cell:gsub("`", ""):gsub("%*%*", ""):gsub("__", ""):gsub("~~", "")
        w = vim.fn.strdisplaywidth(shown)
      end
      cells[n] = w
      width[n] = math.max(width[n] or 0, w)
    end
    rows[#rows + 1] = { off = off, ps = ps, cells = cells, delimiter = delimiter }
  end
  -- Each column's alignment, from the delimiter row (`---:` right, `:---:`
  -- centre): right-aligned columns (numbers) were padded on the right.
  local aligns = {}
  for _, r in ipairs(rows) do
    if r.delimiter then
      local line = lines[r.off - t.first + 1]
      for n = 1, #r.ps - 1 do
        local cell = vim.trim(line:sub(r.ps[n] + 1, r.ps[n + 1] - 1))
        local left, right = cell:sub(1, 1) == ":", cell:sub(-1) == ":"
        aligns[n] = (left and right) and "center" or (right and "right" or "left")
      end
      break
    end
  end
  api.nvim_buf_clear_namespace(ctx.buf, ctx.code_ns, start + t.first, start + last + 1)
  local function pad_at(r, col, n)
    pcall(api.nvim_buf_set_extmark, ctx.buf, ctx.code_ns, start + r.off, col, {
      virt_text = { { string.rep(r.delimiter and "─" or " ", n), "AcpMdTableBorder" } },
      virt_text_pos = "inline",
      priority = PRIORITY,
    })
  end
  for _, r in ipairs(rows) do
    for n, w in ipairs(r.cells) do
      local pad = (width[n] or w) - w
      if pad > 0 then
        local how = r.delimiter and "left" or aligns[n] or "left"
        -- Before the cell (after its opening pipe) and/or before its
        -- closing pipe.
        local before = 0
        if how == "right" then
          before = pad
        elseif how == "center" then
          before = math.floor(pad / 2)
        end
        if before > 0 then
          pad_at(r, r.ps[n], before)
        end
        if pad - before > 0 then
          pad_at(r, r.ps[n + 1] - 1, pad - before)
        end
      end
    end
  end
end

local link_ns = api.nvim_create_namespace("acp.markdown.links")

--- Show where the links of the cursor line lead, at the end of that line:
--- the URLs are concealed with the markup (also on the cursor line, so
--- that the streaming tail stays put), and so were nowhere to be seen.
---@param buf integer a transcript buffer
function M.link_hints(buf)
  api.nvim_create_autocmd({ "CursorMoved", "BufLeave" }, {
    buffer = buf,
    callback = function(a)
      if not api.nvim_buf_is_valid(buf) then
        return true
      end
      api.nvim_buf_clear_namespace(buf, link_ns, 0, -1)
      if a.event == "BufLeave" or api.nvim_get_current_buf() ~= buf then
        return
      end
      local row = api.nvim_win_get_cursor(0)[1] - 1
      local line = api.nvim_buf_get_lines(buf, row, row + 1, false)[1] or ""
      if #line > INLINE_MAX or not line:find("](", 1, true) then
        return
      end
      local urls = {}
      for url in line:gmatch("%b[]%(([^%s%)]+)%)") do
        urls[#urls + 1] = url
      end
      if #urls > 0 then
        api.nvim_buf_set_extmark(buf, link_ns, row, 0, {
          virt_text = { { "  → " .. table.concat(urls, "  "), "AcpNote" } },
          virt_text_pos = "eol",
        })
      end
    end,
  })
end

--- Treesitter highlights of code lines `first`..`last` (buffer rows).
---@param ctx acp.MdCtx
---@param lang string
---@param first integer
---@param last integer
local function highlight_code(ctx, lang, first, last)
  if last < first then
    return
  end
  local lines = api.nvim_buf_get_lines(ctx.buf, first, last + 1, false)
  local ok, parser = pcall(vim.treesitter.get_string_parser, table.concat(lines, "\n"), lang)
  if not ok or not parser then
    return
  end
  local query = vim.treesitter.query.get(lang, "highlights")
  if not query then
    return
  end
  local trees = parser:parse()
  api.nvim_buf_clear_namespace(ctx.buf, ctx.code_ns, first, last + 1)
  for _, tree in ipairs(trees or {}) do
    for id, node in query:iter_captures(tree:root(), table.concat(lines, "\n"), 0, #lines) do
      local name = query.captures[id]
      if name ~= "spell" and name ~= "nospell" and not name:match("^_") then
        local sr, sc, er, ec = node:range()
        pcall(api.nvim_buf_set_extmark, ctx.buf, ctx.code_ns, first + sr, sc, {
          end_row = first + er,
          end_col = ec,
          hl_group = "@" .. name .. "." .. lang,
          priority = PRIORITY + 1,
        })
      end
    end
  end
end

--- Draw one line outside code blocks; updates `st` (fence/table openings).
---@param ctx acp.MdCtx
---@param st acp.MdState
---@param row integer buffer row
---@param off integer row offset in the block
---@param line string
---@param prev_line? string the line before (for table headers)
local function text_line(ctx, st, row, off, line, prev_line)
  -- Most lines are prose starting with a letter: no block markup can start
  -- there, only inline markup (one search) -- the cost of a streamed line.
  local first = line:byte(1)
  if first and ((first >= 97 and first <= 122) or (first >= 65 and first <= 90)) then
    st.table = nil
    inline_line(ctx, row, line, 1)
    return
  end
  local indent, run, info = line:match("^(%s*)(```+)%s*([^`]*)$")
  if not run then
    indent, run, info = line:match("^(%s*)(~~~+)%s*(.*)$")
  end
  if run and #indent < 4 then
    info = vim.trim(info or ""):match("^[^%s{]*") or ""
    st.fence = { char = run:sub(1, 1), len = #run, lang = fence_lang(info), seg = off + 1 }
    mark(ctx, row, 0, { line_hl_group = "AcpMdCode" })
    conceal(ctx, row, #indent, #indent + #run)
    hl(ctx, row, #indent + #run, #line, "AcpMdCodeInfo")
    return
  end
  if is_table_row(line) then
    local delimiter = is_delimiter_row(line)
    if not st.table then
      st.table = { first = off }
    end
    if delimiter and prev_line and off - 1 >= st.table.first and st.table.header == nil then
      st.table.header = off - 1
      -- The header row was drawn as a plain row: draw it again, bold.
      api.nvim_buf_clear_namespace(ctx.buf, ctx.ns, row - 1, row)
      table_row(ctx, row - 1, prev_line, false, true)
    end
    table_row(ctx, row, line, delimiter, false)
    return
  end
  st.table = nil
  local hashes, rest = line:match("^(#+)%s+()")
  if hashes and rest and #hashes <= 6 then
    conceal(ctx, row, 0, rest - 1)
    hl(ctx, row, rest - 1, #line, "AcpMdH" .. #hashes)
    inline_line(ctx, row, line, rest)
    return
  end
  -- A thematic break: three or more of the same `-`, `*` or `_`, spaces allowed.
  local rule_char = line:match("^%s*([-*_])")
  if rule_char and not line:find("[^%s" .. rule_char .. "]") and select(2, line:gsub(vim.pesc(rule_char), "")) >= 3 then
    mark(ctx, row, 0, {
      virt_text = { { string.rep("─", 60), "AcpMdRule" } },
      virt_text_pos = "overlay",
    })
    return
  end
  -- A quote's `>` as a bar, a bullet as `•`: the marker at byte `m`.
  local m, char, marker_hl = line:match("^%s*()>"), "▎", "AcpMdQuoteMarker"
  local rest_hl = "AcpMdQuote" ---@type string?
  if not m then
    m, char, marker_hl, rest_hl = line:match("^%s*()[-*+]%s"), "•", "AcpMdBullet", nil
  end
  if m then
    conceal(ctx, row, m - 1, m, char)
    hl(ctx, row, m - 1, m, marker_hl)
    if rest_hl then
      hl(ctx, row, m, #line, rest_hl)
    end
    inline_line(ctx, row, line, m + 1)
    return
  end
  local n = line:match("^%s*%d+[.)]()%s")
  if n then
    hl(ctx, row, 0, n - 1, "AcpMdBullet")
  end
  inline_line(ctx, row, line, 1)
end

--- Draw one line inside a code block; a closing fence ends the block.
---@return boolean closed
local function code_line(ctx, st, row, line)
  local f = st.fence
  local indent, run = line:match("^(%s*)(" .. vim.pesc(f.char) .. "+)%s*$")
  mark(ctx, row, 0, { line_hl_group = "AcpMdCode" })
  if run and #run >= f.len and #indent < 4 then
    conceal(ctx, row, #indent, #indent + #run)
    return true
  end
  return false
end

--- Draw the rows of a block that are new since the last pass (and the last
--- row again). `start` is the block's first buffer row, `last` its last.
---@param ctx acp.MdCtx
---@param st acp.MdState
---@param start integer
---@param last integer
function M.render(ctx, st, start, last)
  local from = start + st.next
  if from > last then
    return
  end
  api.nvim_buf_clear_namespace(ctx.buf, ctx.ns, from, last + 1)
  -- The row before (for a table header) is read along.
  local first_read = math.max(start, from - 1)
  local lines = api.nvim_buf_get_lines(ctx.buf, first_read, last + 1, false)
  local base = first_read
  -- The last row may still grow: it is drawn from a copy of the state and
  -- drawn again next pass.
  local committed = vim.deepcopy(st)
  for row = from, last do
    local is_last = row == last
    local s = is_last and vim.deepcopy(committed) or committed
    local line = lines[row - base + 1]
    local off = row - start
    if s.fence then
      local f = s.fence
      if code_line(ctx, s, row, line) then
        if f.lang then
          highlight_code(ctx, f.lang, start + f.seg, row - 1)
        end
        s.fence = nil
      elseif not is_last and f.lang and off - f.seg + 1 >= SEGMENT then
        highlight_code(ctx, f.lang, start + f.seg, row)
        f.seg = off + 1
      end
    else
      local had = s.table
      text_line(ctx, s, row, off, line, row > start and lines[row - base] or nil)
      if had and not s.table then
        -- The table ended on the row before: align it once, in full.
        align(ctx, start, had, off - 1, api.nvim_buf_get_lines(ctx.buf, start + had.first, row, false))
      end
    end
    if not is_last then
      committed.next = off + 1
    else
      -- Code of the open block up to the last final row.
      local f = committed.fence
      if f and f.lang then
        highlight_code(ctx, f.lang, start + f.seg, row - 1)
      end
      local t = s.table
      if t and last - start - t.first + 1 <= ALIGN_MAX then
        align(ctx, start, t, last - start, api.nvim_buf_get_lines(ctx.buf, start + t.first, last + 1, false))
      end
    end
  end
  st.next = committed.next
  st.fence = committed.fence
  st.table = committed.table
end

--- Forget everything drawn on rows `first`..`last` (a block replaced).
---@param ctx acp.MdCtx
---@param first integer
---@param last integer
function M.clear(ctx, first, last)
  api.nvim_buf_clear_namespace(ctx.buf, ctx.ns, first, last + 1)
  api.nvim_buf_clear_namespace(ctx.buf, ctx.code_ns, first, last + 1)
end

return M
