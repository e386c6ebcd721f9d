---@mod acp.chat.blocks A buffer made of blocks, each tracked by one range extmark.
---
--- A block is a run of whole lines. Its extmark starts at column 0 of its
--- first line with right_gravity=false and ends at the end of its last line
--- with end_right_gravity=true, so text inserted at the block's end (streamed
--- chunks) grows the block and a replacement of exactly the block's range
--- keeps the mark around the new text. Blocks are separated by one blank line
--- that belongs to no block, so growing or replacing one block never moves
--- the mark of a neighbour the wrong way (a block whose text already ends
--- with a blank line gets no extra one). New blocks are only ever added at
--- the end of the buffer (with nvim_buf_set_lines(-1, -1), which does not
--- move the previous block's end), except while older history is drawn above
--- what is shown (`front_open`: a session's turns loaded newest first).
---
--- Edits are batched: the first edit of a batch records which windows follow
--- the tail (cursor on the last line) and makes the buffer modifiable;
--- `finish()` makes it read-only again and moves following cursors to the new
--- last line.
---
--- Foldable blocks are manual folds, created in every window showing the
--- buffer when the block is added and re-created once per batch that
--- appended to it. Not 'foldexpr': Neovim skips every fold update of
--- expression folds while the user is in Insert mode (typing the next prompt
--- while the agent streams), so a thought streamed then stayed unfolded until
--- `zx`; and evaluating 'foldexpr' for every streamed chunk was the most
--- expensive part of rendering.

local api = vim.api
local markdown = require("acp.chat.view.markdown")
local front = require("acp.chat.view.front")

---@class acp.Highlight
---@field [1] integer row offset inside the block
---@field [2] integer start column (bytes)
---@field [3] integer end column (bytes), -1 = end of line
---@field [4] string highlight group

---@class acp.Block
---@field id integer extmark id of the block's range
---@field kind string what the block shows (message, thought, tool_call, plan, note, ...)
---@field hl_ids integer[] extmarks of the block's highlights
---@field actions table<integer, table> row offset -> action for keys on that line
---@field hl_group? string highlight of the whole range
---@field data table owner data
---@field md? acp.MdState markdown drawn on the block (acp.chat.view.markdown)
---@field md_rows? boolean rows of the block drawn as markdown once (`View:markdown_rows`)
---@field staged? acp.StagedBlock while its rows are not in the buffer (acp.chat.view.front)

---@class acp.View
---@field buf integer
---@field ns integer
---@field blocks table<integer, acp.Block> by extmark id
---@field foldable table<integer, boolean> extmark ids of blocks that fold
---@field empty boolean no block yet (the buffer holds one empty line)
---@field grown table<integer, boolean> foldable blocks appended to in this batch
---@field batching boolean
---@field follow table<integer, boolean> windows following the tail in this batch
---@field md acp.MdCtx where markdown is drawn (its own namespaces)
---@field md_dirty table<integer, boolean> markdown blocks edited in this batch
---@field md_unseen table<integer, boolean> markdown blocks drawn above whose markdown waits until a window shows them (`draw_unseen`)
---@field follow_next? boolean the next batch moves every window to the tail
---@field front? integer extmark on the blank line new blocks go before while older history is drawn above (`front_open`)
---@field fronting? boolean `add` puts blocks at `front`, not at the end
---@field staged? acp.StagedRun[] runs drawn above, top first, not in the buffer yet (acp.chat.view.front)
---@field folds_waiting? table<integer, boolean> foldable blocks drawn above whose folds are made later (`make_waiting_folds`)
local View = {}
View.__index = View

---@type table<integer, acp.View> by buffer
local by_buf = {}

--- Create the view of a (new, empty) buffer.
---@param buf integer
---@return acp.View
function View.new(buf)
  local self = setmetatable({
    buf = buf,
    ns = api.nvim_create_namespace("acp.view." .. buf),
    blocks = {},
    foldable = {},
    grown = {},
    empty = true,
    batching = false,
    follow = {},
    md = {
      buf = buf,
      ns = api.nvim_create_namespace("acp.view.md." .. buf),
      code_ns = api.nvim_create_namespace("acp.view.code." .. buf),
    },
    md_dirty = {},
    md_unseen = {},
  }, View)
  by_buf[buf] = self
  require("acp.chat.view.markdown").link_hints(buf)
  api.nvim_create_autocmd("BufWipeout", {
    buffer = buf,
    once = true,
    callback = function()
      by_buf[buf] = nil
    end,
  })
  return self
end

--- The view of a buffer, if any.
---@param buf integer
---@return acp.View?
function View.of(buf)
  return by_buf[buf]
end

---@return boolean
function View:valid()
  return api.nvim_buf_is_valid(self.buf)
end

--- Start a batch (idempotent within one batch).
function View:begin()
  if self.batching then
    return
  end
  self.batching = true
  self.follow = {}
  local count = api.nvim_buf_line_count(self.buf)
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    if self.follow_next or api.nvim_win_get_cursor(win)[1] >= count then
      self.follow[win] = true
    end
  end
  self.follow_next = nil
  vim.bo[self.buf].modifiable = true
end

--- Every window showing the buffer follows the tail from now on (the user
--- sent a prompt: show it, even when the cursor was up in the transcript).
function View:follow_all()
  self.follow_next = true
end

--- End a batch: read-only again, following windows scrolled to the tail.
function View:finish()
  if not self.batching then
    return
  end
  self.batching = false
  if not self:valid() then
    return
  end
  self:front_flush()
  vim.bo[self.buf].modifiable = false
  vim.bo[self.buf].modified = false
  self:draw_markdown()
  for id in pairs(self.grown) do
    local block = self.blocks[id]
    if block then
      for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
        self:_refold(win, block)
      end
    end
  end
  self.grown = {}
  local count = api.nvim_buf_line_count(self.buf)
  for win in pairs(self.follow) do
    if api.nvim_win_is_valid(win) and api.nvim_win_get_buf(win) == self.buf then
      api.nvim_win_set_cursor(win, { count, 0 })
    end
  end
  self.follow = {}
end

--- Markdown over the rows added since it was last drawn: once per batch
--- (`finish`).
function View:draw_markdown()
  for id in pairs(self.md_dirty) do
    local block = self.blocks[id]
    if block and block.md then
      local sr, er = self:range(block)
      markdown.render(self.md, block.md, sr, er)
    end
    self.md_dirty[id] = nil
  end
end

--- The markdown of blocks drawn above (`md_unseen`) over rows `first` to
--- `last`, or all of it. A window about to show them calls this (the
--- decoration provider below), as treesitter highlights what is seen: the
--- markdown of a 2,000-turn history (140,000 marks, 1.2 s) was most of its
--- fill in bench/tui_long.lua, for turns nobody scrolled to.
---@param first? integer
---@param last? integer
function View:draw_unseen(first, last)
  local ids = {}
  if first then
    local marks = api.nvim_buf_get_extmarks(self.buf, self.ns, { first, 0 }, { last, -1 }, { overlap = true })
    for _, m in ipairs(marks) do
      if self.md_unseen[m[1]] then
        ids[#ids + 1] = m[1]
      end
    end
  else
    ids = vim.tbl_keys(self.md_unseen)
  end
  for _, id in ipairs(ids) do
    self.md_unseen[id] = nil
    local block = self.blocks[id]
    if block and block.md then
      local sr, er = self:range(block)
      markdown.render(self.md, block.md, sr, er)
    end
  end
end

api.nvim_set_decoration_provider(api.nvim_create_namespace("acp.view.unseen"), {
  on_win = function(_, win, buf, top, bot)
    local view = by_buf[buf]
    -- Never while blocks are staged: drawing would flush them, a change of
    -- the buffer inside a redraw.
    if view and next(view.md_unseen) and not view.staged then
      -- A screen above and below too: a scroll by a page finds it drawn.
      local h = api.nvim_win_get_height(win)
      local ok, err = pcall(view.draw_unseen, view, math.max(0, top - h), bot + h)
      if not ok then
        view.md_unseen = {}
        vim.schedule(function()
          require("acp.util").notify(
            "older turns stay plain text, their markdown could not be drawn (report it with this message): "
              .. tostring(err),
            vim.log.levels.ERROR
          )
        end)
      end
    end
    return false
  end,
})

--- Run `fn` inside a batch (for edits outside an event dispatch).
---@param fn fun()
function View:batch(fn)
  local outer = self.batching
  self:begin()
  local ok, err = pcall(fn)
  if not outer then
    self:finish()
  end
  if not ok then
    error(err, 0)
  end
end

---@param block acp.Block
---@return integer start_row, integer end_row, integer end_col
function View:range(block)
  if self.staged then
    self:front_flush()
  end
  local m = api.nvim_buf_get_extmark_by_id(self.buf, self.ns, block.id, { details = true })
  local d = m[3] or {}
  return m[1], d.end_row or m[1], d.end_col or 0
end

---@param block acp.Block
---@param start integer
---@param lines string[]
function View:_set_mark(block, start, lines)
  local last = start + #lines - 1
  api.nvim_buf_set_extmark(self.buf, self.ns, start, 0, {
    id = block.id,
    end_row = last,
    end_col = #lines[#lines],
    right_gravity = false,
    end_right_gravity = true,
    hl_group = block.hl_group,
    priority = 50,
  })
end

---@param block acp.Block
---@param start integer
---@param lines string[]
---@param hls? acp.Highlight[]
function View:_set_hls(block, start, lines, hls)
  for _, id in ipairs(block.hl_ids) do
    api.nvim_buf_del_extmark(self.buf, self.ns, id)
  end
  block.hl_ids = {}
  for _, h in ipairs(hls or {}) do
    local row = h[1]
    local line = lines[row + 1]
    if line then
      local ec = h[3] < 0 and #line or math.min(h[3], #line)
      local sc = math.min(h[2], ec)
      if ec > sc then
        block.hl_ids[#block.hl_ids + 1] = api.nvim_buf_set_extmark(self.buf, self.ns, start + row, sc, {
          end_row = start + row,
          end_col = ec,
          hl_group = h[4],
          priority = 110,
        })
      end
    end
  end
end

---@class acp.BlockOpts
---@field hl_group? string highlight over the whole block (also over text appended later)
---@field sep? boolean false: no blank line before the block (after a header)
---@field foldable? boolean the block is a closed fold by default
---@field markdown? boolean draw the block's text as markdown (acp.chat.view.markdown)
---@field actions? table<integer, table>
---@field data? table

--- The last guard before the buffer: a line item holding a newline (agent
--- text a caller did not pass through acp.sanitize) would make
--- nvim_buf_set_lines fail and the block never appear (issue 25: a
--- permission prompt stayed pending, unseen). Such items are shown with
--- their newlines visible instead.
---@param lines string[]
---@return string[]
local function whole_lines(lines)
  for i, l in ipairs(lines) do
    if l:find("\n", 1, true) then
      local copy = vim.list_slice(lines)
      for j = i, #copy do
        if copy[j]:find("\n", 1, true) then
          copy[j] = require("acp.sanitize").line(copy[j])
        end
      end
      return copy
    end
  end
  return lines
end

--- Add a block at the end of the buffer.
---@param kind string
---@param lines string[] at least one line
---@param hls? acp.Highlight[]
---@param opts? acp.BlockOpts
---@return acp.Block
function View:add(kind, lines, hls, opts)
  opts = opts or {}
  if #lines == 0 then
    lines = { "" }
  end
  lines = whole_lines(lines)
  self:begin()
  local staging = self.fronting and (self.front ~= nil or self.staged ~= nil)
  if self.staged and not staging then
    self:front_flush()
  end
  local start
  local sep = opts.sep ~= false and not self.empty
  if sep and not staging then
    -- Text that ends with blank lines (markdown paragraphs) already
    -- separates: no second blank line.
    local count = api.nvim_buf_line_count(self.buf)
    sep = api.nvim_buf_get_lines(self.buf, count - 1, count, false)[1] ~= ""
  end
  if staging then
    -- At the front's blank line (or the top) for now, empty: `front_flush`
    -- places it.
    start = self.front and api.nvim_buf_get_extmark_by_id(self.buf, self.ns, self.front, {})[1] or 0
  elseif self.empty then
    start = 0
    api.nvim_buf_set_lines(self.buf, 0, -1, false, lines)
    self.empty = false
  else
    start = api.nvim_buf_line_count(self.buf) + (sep and 1 or 0)
    local new = sep and { "" } or {}
    vim.list_extend(new, lines)
    api.nvim_buf_set_lines(self.buf, -1, -1, false, new)
  end
  ---@type acp.Block
  local block = {
    id = 0,
    kind = kind,
    hl_ids = {},
    actions = opts.actions or {},
    hl_group = opts.hl_group,
    data = opts.data or {},
  }
  block.id = api.nvim_buf_set_extmark(self.buf, self.ns, start, 0, {
    end_row = staging and start or start + #lines - 1,
    end_col = staging and 0 or #lines[#lines],
    right_gravity = false,
    end_right_gravity = true,
    hl_group = opts.hl_group,
    priority = 50,
  })
  self.blocks[block.id] = block
  if opts.markdown then
    block.md = markdown.new_state()
    if staging then
      self.md_unseen[block.id] = true
    else
      self.md_dirty[block.id] = true
    end
  end
  if opts.foldable then
    self.foldable[block.id] = true
    if staging then
      -- Every line inserted above a fold moves it: with the fold of every
      -- thought already drawn below, an insert cost half as much again.
      self.folds_waiting = self.folds_waiting or {}
      self.folds_waiting[block.id] = true
    else
      for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
        self:_fold(win, start, start + #lines - 1)
      end
    end
  end
  if staging then
    front.stage(self, block, lines, hls, opts.sep ~= false)
  else
    self:_set_hls(block, start, lines, hls)
  end
  return block
end

-- Drawing above what is shown: acp.chat.view.front.
View.front_open, View.front_flush, View.front_close = front.open, front.flush, front.close

--- Every block goes: the buffer holds one empty line again, with no marks
--- or folds.
function View:clear()
  if not self:valid() then
    return
  end
  self:begin()
  api.nvim_buf_clear_namespace(self.buf, -1, 0, -1)
  api.nvim_buf_set_lines(self.buf, 0, -1, false, {})
  for _, win in ipairs(vim.fn.win_findbuf(self.buf)) do
    api.nvim_win_call(win, function()
      vim.cmd("silent! normal! zE")
    end)
  end
  self.blocks, self.foldable, self.grown, self.md_dirty, self.md_unseen = {}, {}, {}, {}, {}
  self.folds_waiting, self.front, self.fronting, self.staged = nil, nil, nil, nil
  self.empty = true
end

--- Draw rows of a block as markdown now, once (a tool call's text content:
--- the block is drawn whole on every change, nothing streams into it).
---@param block acp.Block
---@param ranges? integer[][] {first, last} row offsets in the block
function View:markdown_rows(block, ranges)
  if not ranges or #ranges == 0 then
    return
  end
  if block.staged then
    -- Drawn once the block's rows are in the buffer (`front_flush`).
    block.staged.md_rows = ranges
    return
  end
  local sr = self:range(block)
  for _, r in ipairs(ranges) do
    -- Every row final: a fresh state past the end, then the last row.
    local st = markdown.new_state()
    markdown.render(self.md, st, sr + r[1], sr + r[2])
  end
  block.md_rows = true
end

--- Replace the lines of a block in place (other blocks do not move except by
--- the change in line count).
---@param block acp.Block
---@param lines string[]
---@param hls? acp.Highlight[]
---@param actions? table<integer, table>
function View:replace(block, lines, hls, actions)
  if #lines == 0 then
    lines = { "" }
  end
  lines = whole_lines(lines)
  self:begin()
  local sr, er, ec = self:range(block)
  if block.md then
    markdown.clear(self.md, sr, er)
    block.md = markdown.new_state()
    self.md_dirty[block.id] = true
  elseif block.md_rows then
    markdown.clear(self.md, sr, er)
    block.md_rows = nil
  end
  api.nvim_buf_set_text(self.buf, sr, 0, er, ec, lines)
  self:_set_mark(block, sr, lines)
  self:_set_hls(block, sr, lines, hls)
  block.actions = actions or {}
  if self.foldable[block.id] and not (self.folds_waiting and self.folds_waiting[block.id]) then
    self.grown[block.id] = true
  end
end

--- Append text at the end of a block (streaming). Newlines in `text` start
--- new lines of the same block.
---@param block acp.Block
---@param text string
function View:append(block, text)
  if text == "" then
    return
  end
  self:begin()
  local _, er, ec = self:range(block)
  local parts = require("acp.util").split_lines(text)
  api.nvim_buf_set_text(self.buf, er, ec, er, ec, parts)
  if block.md then
    self.md_dirty[block.id] = true
  end
  if self.foldable[block.id] and not (self.folds_waiting and self.folds_waiting[block.id]) then
    -- `finish()` re-creates the fold once for the whole batch (see _refold).
    self.grown[block.id] = true
  end
end

--- The block containing a (0-based) row, and the row offset inside it.
---@param row integer
---@return acp.Block? block, integer? offset
function View:block_at(row)
  if self.staged then
    self:front_flush()
  end
  local marks = api.nvim_buf_get_extmarks(self.buf, self.ns, { row, 0 }, { row, -1 }, { overlap = true })
  for _, m in ipairs(marks) do
    local block = self.blocks[m[1]]
    if block then
      return block, row - m[2]
    end
  end
end

--- Lines of a block.
---@param block acp.Block
---@return string[]
function View:lines(block)
  local sr, er = self:range(block)
  return api.nvim_buf_get_lines(self.buf, sr, er + 1, false)
end

--- Create a closed manual fold over rows `first`..`last` (0-based) in a
--- window. A window whose 'foldmethod' the user changed gets none (`:fold`
--- only works with manual and marker folds).
---@param win integer
---@param first integer
---@param last integer
function View:_fold(win, first, last)
  if vim.wo[win].foldmethod ~= "manual" then
    return
  end
  api.nvim_win_call(win, function()
    vim.cmd(("%d,%dfold"):format(first + 1, last + 1))
  end)
end

--- Re-create the fold of a block that text was appended to, keeping it open
--- when the user opened it. Needed after every append, not only new lines:
--- Neovim moves the end of a manual fold up when the fold's last line is
--- rewritten (as `nvim_buf_set_text` does), and never extends it over lines
--- added below.
---@param win integer
---@param block acp.Block
function View:_refold(win, block)
  if vim.wo[win].foldmethod ~= "manual" then
    return
  end
  local sr, er = self:range(block)
  local l = sr + 1
  api.nvim_win_call(win, function()
    local open = vim.fn.foldclosed(l) == -1
    if vim.fn.foldlevel(l) > 0 then
      -- `zd` deletes the closed fold under the cursor, else the innermost
      -- one: close ours first when open, so a fold the user made around the
      -- block survives.
      local saved = vim.fn.winsaveview()
      if open then
        vim.cmd(l .. "foldclose")
      end
      vim.cmd(l .. "normal! zd")
      vim.fn.winrestview(saved)
    end
    vim.cmd(("%d,%dfold"):format(l, er + 1))
    if open then
      vim.cmd(l .. "foldopen")
    end
  end)
end

--- Make the folds of blocks drawn above (`folds_waiting`), closed, in
--- every window, at most `max` of them; true while some still wait.
---@param max integer
---@return boolean
function View:make_waiting_folds(max)
  local waiting = self.folds_waiting
  if not waiting or not self:valid() then
    self.folds_waiting = nil
    return false
  end
  local wins = vim.fn.win_findbuf(self.buf)
  local n = 0
  for id in pairs(waiting) do
    if n >= max then
      return true
    end
    waiting[id] = nil
    n = n + 1
    local block = self.blocks[id]
    if block then
      local sr, er = self:range(block)
      for _, win in ipairs(wins) do
        self:_fold(win, sr, er)
      end
    end
  end
  self.folds_waiting = nil
  return false
end

--- Re-create the folds of every foldable block in a window, closed: folds a
--- window kept while the buffer was hidden did not follow its changes.
---@param win integer
function View:fold_all(win)
  api.nvim_win_call(win, function()
    vim.cmd("normal! zE")
  end)
  for id in pairs(self.foldable) do
    local block = self.blocks[id]
    if block and not (self.folds_waiting and self.folds_waiting[id]) then
      local sr, er = self:range(block)
      self:_fold(win, sr, er)
    end
  end
end

--- Set window options every transcript window needs (folds, wrapping).
---@param win integer
function View.setup_window(win)
  local wo = vim.wo[win][0]
  wo.foldmethod = "manual"
  wo.foldtext = ""
  -- A thought whose first line is still streaming is a one-line fold; with
  -- the default 1 it would not count as closed, and `_refold` would take it
  -- for one the user opened.
  wo.foldminlines = 0
  wo.foldlevel = 0
  wo.foldenable = true
  wo.wrap = true
  wo.linebreak = true
  -- Wrapped tool output and plan entries keep their indent.
  wo.breakindent = true
  wo.breakindentopt = "list:-1"
  wo.number = false
  wo.relativenumber = false
  wo.signcolumn = "no"
  wo.spell = false
  wo.list = false
  -- Markdown markers are concealed (acp.chat.view.markdown), also on the cursor line:
  -- the tail follows the cursor while streaming.
  wo.conceallevel = 2
  wo.concealcursor = "nc"
  local view = by_buf[api.nvim_win_get_buf(win)]
  if view then
    view:fold_all(win)
  end
end

return View
