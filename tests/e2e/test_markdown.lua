-- acp.chat.view.markdown on its own: what a pass cut short by its deadline
-- (acp.chat.backlog draws a loaded session's markdown in what is left of a
-- slice; issue 30) leaves for the next pass. No backend needed.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local api = vim.api
local markdown = require("acp.chat.view.markdown")

--- A long code block (past the parser's segment of 200 rows), a table cut
--- by nothing, inline markup, a list and a rule: every kind of state a
--- pass carries to the next one.
local function sample()
  local lines = { "# Title", "", "Some **bold**, *it*, `code` and [a link](http://x).", "", "```lua" }
  for i = 1, 230 do
    lines[#lines + 1] = ("local x%d = %d -- a comment"):format(i, i)
  end
  vim.list_extend(lines, { "```", "", "| a | bb |", "|---|---|", "| long cell | c |", "| d | e |", "" })
  vim.list_extend(lines, { "- one", "- **two**", "", "---", "", "> quoted `x`", "after" })
  return lines
end

--- Every mark of both markdown namespaces of `buf`, as text.
---@param ctx acp.MdCtx
---@return string[]
local function marks(ctx)
  local out = {}
  for _, ns in ipairs({ ctx.ns, ctx.code_ns }) do
    for _, m in ipairs(api.nvim_buf_get_extmarks(ctx.buf, ns, 0, -1, { details = true })) do
      local d = m[4]
      out[#out + 1] = vim.inspect({
        ns == ctx.ns and "md" or "code",
        m[2],
        m[3],
        d.end_row,
        d.end_col,
        d.hl_group,
        d.conceal,
        d.virt_text,
        d.virt_text_pos,
        d.hl_eol,
      }, { newline = "" })
    end
  end
  table.sort(out)
  return out
end

---@param name string
---@return acp.MdCtx
local function buffer(name)
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_lines(buf, 0, -1, false, sample())
  return {
    buf = buf,
    ns = api.nvim_create_namespace("test.md." .. name),
    code_ns = api.nvim_create_namespace("test.code." .. name),
  }
end

T.test("markdown drawn a row at a time past its deadline ends as drawn in one pass", function()
  local whole = buffer("whole")
  local last = api.nvim_buf_line_count(whole.buf) - 1
  T.eq(true, markdown.render(whole, markdown.new_state(), 0, last), "one pass without a deadline draws it all")
  local expected = marks(whole)
  T.truthy(#expected > 100, "the sample is drawn: " .. #expected .. " marks")

  local cut = buffer("cut")
  local st = markdown.new_state()
  local passes = 0
  repeat
    passes = passes + 1
    -- A deadline already past: each pass draws one row and stops.
    local done = markdown.render(cut, st, 0, last, 0)
  until done or passes > last + 10
  T.eq(last + 1, passes, "one row a pass, and done on the last")
  T.eq(expected, marks(cut), "the same concealed markers, highlights, code and aligned table")

  -- A deadline far off is no deadline.
  local far = buffer("far")
  T.eq(true, markdown.render(far, markdown.new_state(), 0, last, vim.uv.hrtime() + 60e9), "done in one pass")
  T.eq(expected, marks(far), "drawn as without one")
end)

T.run()
