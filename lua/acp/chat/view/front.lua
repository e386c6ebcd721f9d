---@mod acp.chat.view.front Blocks drawn above everything shown: the older
--- turns of a loaded session (acp.chat.backlog), newest run first. `open`
--- starts a run, `View:add` stages its blocks while `fronting` is set,
--- `flush` writes a slice of them in one change, `close` ends the run. These
--- are methods of acp.View (acp.chat.blocks sets them).

local api = vim.api

local M = {}

--- A block drawn above while `fronting`, kept in Lua until `front_flush`
--- writes the whole slice's blocks at once.
---@class acp.StagedBlock
---@field block acp.Block
---@field lines string[]
---@field hls? acp.Highlight[]
---@field sep boolean `add`'s separator rule applies (opts.sep ~= false)
---@field md_rows? integer[][] `markdown_rows` asked for before the flush

--- Place the front's mark on its blank line at `row`, just inserted above
--- everything that was shown.
---@param self acp.View
---@param row integer
local function place_mark(self, row)
  -- A block that started at row 0 kept its start there (left gravity): it
  -- would have taken in everything inserted before it.
  for _, m in ipairs(api.nvim_buf_get_extmarks(self.buf, self.ns, { 0, 0 }, { 0, 0 }, { details = true })) do
    local block = self.blocks[m[1]]
    local d = m[4] or {}
    if block and not block.staged and d.end_row then
      api.nvim_buf_set_extmark(self.buf, self.ns, row + 1, 0, {
        id = block.id,
        end_row = d.end_row,
        end_col = d.end_col,
        right_gravity = false,
        end_right_gravity = true,
        hl_group = block.hl_group,
        priority = 50,
      })
    end
  end
  -- A mark, not a row: text streamed into the blocks above moves the line.
  self.front = api.nvim_buf_set_extmark(self.buf, self.ns, row, 0, { right_gravity = true })
end

--- Write the blocks `add` took while `fronting` before the front's blank
--- line, in one change, with their marks, highlights and markdown rows.
--- Each change of a buffer shown in a window costs 90-200 us in a real
--- terminal whatever its size (Neovim places the window's lines again:
--- 'wrap', 'linebreak', 'breakindent' and concealed markers make it dear),
--- against 4 us for an extmark; one change per block made 14,000 of them for
--- a 2,000-turn history (1.3-1.8 s of its 4.4 s fill in bench/tui_long.lua).
--- Every other method of the view calls this first, so nothing reads a
--- staged block's rows before they are in the buffer.
---
--- No block mark sits at the insertion point, the start of the blank line:
--- the block above ends on an earlier row, the one below starts on a later
--- one, and both keep their ranges. The separator rule is `add`'s, against
--- the line above each block.
---@param self acp.View
function M.flush(self)
  local staged = self.staged
  if not staged then
    return
  end
  self.staged = nil
  local top = self.front_at_top
  self.front_at_top = nil
  local front = self.front
  if not self:valid() or not (front or top) then
    return
  end
  local g = front and not top and api.nvim_buf_get_extmark_by_id(self.buf, self.ns, front, {})[1] or 0
  local above = g > 0 and api.nvim_buf_get_lines(self.buf, g - 1, g, false)[1] or nil
  local all, starts = {}, {}
  for i, e in ipairs(staged) do
    if e.sep and above ~= nil and above ~= "" then
      all[#all + 1] = ""
    end
    starts[i] = g + #all
    vim.list_extend(all, e.lines)
    above = e.lines[#e.lines]
  end
  if top then
    -- The front's blank line, below the blocks (`front_open`).
    all[#all + 1] = ""
  end
  -- Before the blank line: its mark moves down with the text (right gravity).
  api.nvim_buf_set_lines(self.buf, g, g, false, all)
  if top then
    place_mark(self, #all - 1)
  end
  for i, e in ipairs(staged) do
    e.block.staged = nil
    self:_set_mark(e.block, starts[i], e.lines)
    self:_set_hls(e.block, starts[i], e.lines, e.hls)
    if e.md_rows then
      self:markdown_rows(e.block, e.md_rows)
    end
  end
end

--- Start drawing blocks above everything shown (a run of older turns):
--- a blank line goes at the top and `add` inserts before it while
--- `fronting` is set. Windows keep showing the same lines: Neovim moves
--- their topline and cursor down by the rows inserted above them.
---@param self acp.View
function M.open(self)
  if self.front or self.front_at_top or self.empty then
    return
  end
  self:begin()
  -- The blank line goes in with the first blocks (`front_flush`): one
  -- change of the buffer per slice, not two.
  self.front_at_top = true
end

--- The run drawn above is whole: its blank line goes unless it separates
--- the run's last block from the first one below (`add`'s rule: a blank
--- line between blocks unless the text above already ends with one).
---@param self acp.View
function M.close(self)
  M.flush(self)
  self.front_at_top = nil
  local id = self.front
  if not id then
    self.fronting = nil
    return
  end
  self.front = nil
  self.fronting = nil
  if not self:valid() then
    return
  end
  local g = api.nvim_buf_get_extmark_by_id(self.buf, self.ns, id, {})[1]
  api.nvim_buf_del_extmark(self.buf, self.ns, id)
  self:begin()
  if g == 0 or api.nvim_buf_get_lines(self.buf, g - 1, g, false)[1] == "" then
    api.nvim_buf_set_lines(self.buf, g, g + 1, false, {})
  end
end

return M
