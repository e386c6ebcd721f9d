-- Blocks drawn above what is shown (acp.chat.backlog: a loaded session's
-- history, newest turn first; issue 30): a slice of them goes into the buffer
-- in one change (View:front_flush), and their markdown waits until a window
-- shows it (View:draw_unseen). No backend needed.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local api = vim.api
local View = require("acp.chat.blocks")

--- A message with every kind of markdown state: a heading, inline markup,
--- a table and a code block.
---@param i integer
---@return string[]
local function message(i)
  return {
    ("## Part %d"):format(i),
    "",
    "Some **bold**, *it* and `code`.",
    "",
    "| a | bb |",
    "|---|---|",
    "| long cell | c |",
    "",
    "```lua",
    ("local x = %d"):format(i),
    "```",
  }
end

--- Every mark of both markdown namespaces, as text, over rows `first` to
--- `last` (all: nil).
---@param view acp.View
---@param first? integer
---@param last? integer
---@return string[]
local function marks(view, first, last)
  local out = {}
  for _, ns in ipairs({ view.md.ns, view.md.code_ns }) do
    local from, to = first and { first, 0 } or 0, last and { last, -1 } or -1
    for _, m in ipairs(api.nvim_buf_get_extmarks(view.buf, ns, from, to, { details = true })) do
      local d = m[4]
      out[#out + 1] = vim.inspect(
        { m[2], m[3], d.end_row, d.end_col, d.hl_group, d.conceal, d.virt_text, d.line_hl_group },
        { newline = "" }
      )
    end
  end
  table.sort(out)
  return out
end

---@return acp.View
local function shown()
  local buf = api.nvim_create_buf(false, true)
  local view = View.new(buf)
  api.nvim_win_set_buf(0, buf)
  View.setup_window(0)
  return view
end

local N = 40

--- Counts the changes of `buf` from now on (nvim_buf_attach's on_lines).
---@param buf integer
---@return fun(): integer
local function counted(buf)
  local n = 0
  api.nvim_buf_attach(buf, false, {
    on_lines = function()
      n = n + 1
    end,
  })
  return function()
    return n
  end
end

T.test("markdown drawn above waits until a window shows it, then is what drawing in order makes", function()
  local ref = shown()
  ref:batch(function()
    for i = 1, N do
      ref:add("message", message(i), nil, { markdown = true })
    end
  end)
  local want_lines, want = T.lines(ref.buf), marks(ref)
  T.truthy(#want > 20 * N, ("drawn in order: %d marks"):format(#want))

  -- Newest first: the last message, then the older ones above it in one run.
  local view = shown()
  view:batch(function()
    view:add("message", message(N), nil, { markdown = true })
  end)
  view:batch(function()
    view:front_open()
    view.fronting = true
    for i = 1, N - 1 do
      view:add("message", message(i), nil, { markdown = true })
    end
    view:front_flush()
    view.fronting = nil
    view:front_close()
  end)
  T.eq(want_lines, T.lines(view.buf), "the same lines")
  local count = api.nvim_buf_line_count(view.buf)
  vim.cmd("normal! G")
  vim.cmd("redraw")
  T.eq({}, marks(view, 0, 11), "the first message, three screens above the window: no markdown yet")
  T.truthy(#marks(view, count - 12, count - 1) > 0, "the last one's is drawn")
  T.truthy(#marks(view, count - 24, count - 13) > 0, "so is the one above it, in view")

  vim.cmd("normal! gg")
  vim.cmd("redraw")
  T.eq(marks(ref, 0, 11), marks(view, 0, 11), "scrolled to the top: the first message drawn, as in order")
  T.eq({}, marks(view, 200, 211), "a message in the middle, out of sight: still waiting")

  view:draw_unseen()
  T.eq(want, marks(view), "all of it drawn: the same concealed markers, highlights, code and tables")
  T.eq({}, view.md_unseen, "nothing left waiting")
end)

T.test("a slice of blocks drawn above is one change of the buffer, with every block's range", function()
  local view = shown()
  view:batch(function()
    view:add("message", { "the newest" }, nil, { markdown = true })
  end)
  local changes = counted(view.buf)
  local blocks = {}
  view:batch(function()
    view:front_open()
    view.fronting = true
    for i = 1, 30 do
      blocks[i] = view:add("message", message(i), { { 0, 0, 2, "Title" } }, { markdown = true })
    end
    view:front_flush()
    view.fronting = nil
    view:front_close()
  end)
  T.eq(1, changes(), "30 blocks and the blank line below them: one change")
  for i, block in ipairs(blocks) do
    T.eq(message(i), view:lines(block), ("block %d holds its lines"):format(i))
    local sr = view:range(block)
    local hl = api.nvim_buf_get_extmark_by_id(view.buf, view.ns, block.hl_ids[1], { details = true })
    T.eq({ sr, 0, "Title" }, { hl[1], hl[2], hl[3].hl_group }, ("block %d's highlight on its first row"):format(i))
  end
  T.eq({ "```", "", "the newest" }, api.nvim_buf_get_lines(view.buf, -4, -1, false), "a blank line, then the newest")
end)

--- A run of one turn: a header, then a message that ends with a blank line
--- in even turns (markdown paragraphs do), which then separates by itself.
---@param view acp.View
---@param i integer
local function turn(view, i)
  view:add("header", { "## You" }, nil, { markdown = true })
  local lines = { ("Turn %d"):format(i), "" }
  if i % 2 == 1 then
    lines[#lines] = "the end"
  end
  view:add("message", lines, nil, { markdown = true, sep = false })
end

--- Turns `from` down to `to`, each a run drawn above the ones before it.
---@param view acp.View
---@param from integer
---@param to integer
local function above(view, from, to)
  for i = from, to, -1 do
    view:front_open()
    view.fronting = true
    turn(view, i)
    view.fronting = nil
    view:front_close()
  end
end

T.test("runs drawn above in one slice are one change and the lines of drawing them in order", function()
  local ref = shown()
  ref:batch(function()
    for i = 1, 9 do
      turn(ref, i)
    end
  end)
  local view = shown()
  view:batch(function()
    turn(view, 9)
  end)
  local changes = counted(view.buf)
  view:batch(function()
    above(view, 8, 4)
  end)
  T.eq(1, changes(), "five runs above: one change")
  -- A run cut by a slice's end: the rest goes at the front's mark.
  view:batch(function()
    view:front_open()
    view.fronting = true
    view:add("header", { "## You" }, nil, { markdown = true })
    view.fronting = nil
  end)
  view:batch(function()
    view.fronting = true
    view:add("message", { "Turn 3", "the end" }, nil, { markdown = true, sep = false })
    view.fronting = nil
    view:front_close()
    above(view, 2, 1)
  end)
  T.eq(T.lines(ref.buf), T.lines(view.buf), "the same lines as in order")
  local ranges = function(v)
    local out = {}
    for _, m in ipairs(api.nvim_buf_get_extmarks(v.buf, v.ns, 0, -1, { details = true })) do
      if v.blocks[m[1]] then
        out[#out + 1] = { v.blocks[m[1]].kind, m[2], m[4].end_row, m[4].end_col }
      end
    end
    return out
  end
  T.eq(ranges(ref), ranges(view), "every block where drawing in order puts it")
end)

T.run()
