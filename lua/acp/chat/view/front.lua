---@mod acp.chat.view.front Blocks drawn above everything shown: the older
--- turns of a loaded session (acp.chat.backlog), newest run first. `open`
--- starts a run, `View:add` stages its blocks while `fronting` is set,
--- `close` ends the run, and `flush` writes every run staged since the last
--- flush in one change (the end of a slice: `View:finish`). These are
--- methods of acp.View (acp.chat.blocks sets them).
---
--- Each change of a buffer shown in a window costs 90-200 us in a real
--- terminal whatever its size (Neovim lays the window's lines out again:
--- 'wrap', 'linebreak', 'breakindent', concealed markers and treesitter's
--- conceal_line callback make it dear), against 6 us hidden and 4 us for an
--- extmark: a change per block made 14,000 of them for a 2,000-turn history
--- (1.3-1.8 s of its 4.4 s fill in bench/tui_long.lua), a change per run
--- 2,000 more (0.2-0.4 s).
---
--- The lines are the ones drawing each run above the others would make: a
--- run goes in at the top, so its first block has no blank line before it;
--- a blank line (the front's) separates it from what was shown below unless
--- its last line is blank already; inside a run, `add`'s separator rule.

local api = vim.api

local M = {}

--- A block drawn above while `fronting`, kept in Lua until `flush` writes
--- it.
---@class acp.StagedBlock
---@field block acp.Block
---@field lines string[]
---@field hls? acp.Highlight[]
---@field sep boolean `add`'s separator rule applies (opts.sep ~= false)
---@field md_rows? integer[][] `markdown_rows` asked for before the flush

--- The blocks of one run, in order.
---@class acp.StagedRun
---@field blocks acp.StagedBlock[]
---@field open boolean not closed yet: the front's blank line stays below it

--- Stage a block `View:add` made while `fronting` (its mark is a
--- placeholder until `flush`).
---@param self acp.View
---@param block acp.Block
---@param lines string[]
---@param hls? acp.Highlight[]
---@param sep boolean
function M.stage(self, block, lines, hls, sep)
  local runs = self.staged
  if not runs then
    -- Continuing a run past a slice's flush, at the front's mark.
    runs = { { blocks = {}, open = true } }
    self.staged = runs
  end
  local entry = { block = block, lines = lines, hls = hls, sep = sep }
  local blocks = runs[1].blocks
  blocks[#blocks + 1] = entry
  block.staged = entry
end

--- The lines of the staged runs, and each block's start row (from `g`).
---@param runs acp.StagedRun[]
---@param g integer the row they go in at
---@param above? string the line above that row (nil: none)
---@param continued boolean one run, continued at the front's mark: its blank line is in the buffer
---@return string[] lines, integer[] starts, integer? front the front's row
local function layout(runs, g, above, continued)
  local all, starts, front = {}, {}, nil
  for i, run in ipairs(runs) do
    if i > 1 then
      above = nil
    end
    for _, e in ipairs(run.blocks) do
      if e.sep and above ~= nil and above ~= "" then
        all[#all + 1] = ""
      end
      starts[#starts + 1] = g + #all
      vim.list_extend(all, e.lines)
      above = e.lines[#e.lines]
    end
    if continued then
      break
    elseif run.open then
      front = g + #all
      all[#all + 1] = ""
    elseif above ~= nil and above ~= "" then
      all[#all + 1] = ""
    end
  end
  return all, starts, front
end

--- Write the staged runs in one change, with their marks, highlights and
--- markdown rows: at the front's mark for a run continued past a flush, else
--- at the top. Every other method of the view calls this first, so nothing
--- reads a staged block's rows before they are in the buffer. No block mark
--- sits at the insertion point: the block above ends on an earlier row, the
--- one below starts on this one (moved back below, see there).
---@param self acp.View
function M.flush(self)
  local runs = self.staged
  if not runs then
    return
  end
  self.staged = nil
  if not self:valid() then
    return
  end
  local mark = self.front
  if not mark and runs[1].open and #runs[1].blocks == 0 then
    -- A run opened with nothing drawn yet: it stays above, staged.
    self.staged = { table.remove(runs, 1) }
  end
  local g = mark and api.nvim_buf_get_extmark_by_id(self.buf, self.ns, mark, {})[1] or 0
  local above = g > 0 and api.nvim_buf_get_lines(self.buf, g - 1, g, false)[1] or nil
  local all, starts, front = layout(runs, g, above, mark ~= nil)
  if #all == 0 then
    return
  end
  -- A block that started at row 0 kept its start there (left gravity): it
  -- would take in everything inserted before it. Read before the change.
  local at_top = mark and {} or api.nvim_buf_get_extmarks(self.buf, self.ns, { 0, 0 }, { 0, 0 }, { details = true })
  api.nvim_buf_set_lines(self.buf, g, g, false, all)
  for _, m in ipairs(at_top) do
    local block = self.blocks[m[1]]
    local d = m[4] or {}
    if block and not block.staged and d.end_row then
      api.nvim_buf_set_extmark(self.buf, self.ns, #all, 0, {
        id = block.id,
        end_row = d.end_row + #all,
        end_col = d.end_col,
        right_gravity = false,
        end_right_gravity = true,
        hl_group = block.hl_group,
        priority = 50,
      })
    end
  end
  if front then
    -- A mark, not a row: text streamed into the blocks above moves it.
    self.front = api.nvim_buf_set_extmark(self.buf, self.ns, front, 0, { right_gravity = true })
  end
  local i = 0
  for _, run in ipairs(runs) do
    for _, e in ipairs(run.blocks) do
      i = i + 1
      e.block.staged = nil
      self:_set_mark(e.block, starts[i], e.lines)
      self:_set_hls(e.block, starts[i], e.lines, e.hls)
      if e.md_rows then
        self:markdown_rows(e.block, e.md_rows)
      end
    end
  end
end

--- Start drawing a run above everything shown (a run of older turns): `add`
--- stages its blocks while `fronting` is set, above the runs staged before
--- it. Windows keep showing the same lines: Neovim moves their topline and
--- cursor down by the rows inserted above them.
---@param self acp.View
function M.open(self)
  if self.front or self.empty or (self.staged and self.staged[1].open) then
    return
  end
  self:begin()
  self.staged = self.staged or {}
  table.insert(self.staged, 1, { blocks = {}, open = true })
end

--- The run drawn above is whole: its blank line goes unless it separates
--- the run's last block from the first one below (`add`'s rule: a blank
--- line between blocks unless the text above already ends with one).
---@param self acp.View
function M.close(self)
  self.fronting = nil
  local runs = self.staged
  if runs and not self.front then
    -- Still staged: `flush` lays out the blank line.
    runs[1].open = false
    return
  end
  M.flush(self)
  local id = self.front
  if not id then
    return
  end
  self.front = nil
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
