---@mod acp.edits.review.preview The preview of a permission request's edit in
--- the real buffer: virtual text only, gone when the request is answered.

local api = vim.api
local util = require("acp.util")
local buffer = require("acp.edits.buffer")
local state = require("acp.edits.review.state")
local sync = require("acp.edits.review.sync")
local actions = require("acp.edits.review.actions")
local render = require("acp.edits.review.render")

local P = {}

local set_mark, virt = render.set_mark, render.virt

--- The first `diff` content of a tool call.
---@param tc table
---@return table?
function P.diff_of(tc)
  for _, item in ipairs(tc.content or {}) do
    if item.type == "diff" then
      return item
    end
  end
end

--- Show what a permission request's edit would do, in the file's real
--- buffer, as virtual text only: lines it would remove are highlighted,
--- lines it would add are virtual lines. Nothing is applied; the preview
--- goes away when the request is answered.
---@param req acp.PermissionRequest
function P.preview(req)
  local d = P.diff_of(req.tool_call or {})
  if not d then
    util.notify("this permission request carries no diff to preview", vim.log.levels.WARN)
    return
  end
  local path = d.path
  local old = d.old_text
  local new = d.new_text or ""
  local existed = util.find_buffer(path) ~= nil
  require("acp.chat.view.open").jump({ path = path })
  local buf = api.nvim_get_current_buf()
  local unborn = buffer.is_unborn(buf)
  local text = unborn and "" or buffer.buffer_text(buf)
  local proposed
  if old == nil or old == "" then
    proposed = new
  else
    local s, e = text:find(old, 1, true)
    if not s or not e then
      util.notify("the proposed edit does not match the buffer; showing it side by side", vim.log.levels.WARN)
      require("acp.chat.view.open").open_diff({ path = path, old = old, new = new })
      return
    end
    proposed = text:sub(1, s - 1) .. new .. text:sub(e + 1)
  end
  local function norm(s)
    return (s ~= "" and s:sub(-1) ~= "\n") and (s .. "\n") or s
  end
  local new_lines = util.split_lines(norm(proposed))
  new_lines[#new_lines] = nil
  api.nvim_buf_clear_namespace(buf, state.ns, 0, -1)
  -- A buffer opened only to preview a file that does not exist yet goes
  -- away with the preview (end_preview): a preview leaves no trace.
  state.previews[buf] = { request_id = req.request_id, path = path, opened = unborn and not existed }
  local count = api.nvim_buf_line_count(buf)
  local width = math.max(vim.o.columns - 10, 20)
  local first_row, above = nil, 0
  for _, h in ipairs(util.diff_indices(norm(text), norm(proposed))) do
    local sa, ca, sb, cb = h[1], h[2], h[3], h[4]
    local start = ca == 0 and sa or (sa - 1)
    for r = start, start + ca - 1 do
      set_mark(
        buf,
        r,
        0,
        { line_hl_group = "AcpReviewPreviewDelete", sign_text = "-", sign_hl_group = "AcpReviewSignDelete" }
      )
    end
    local added = vim.list_slice(new_lines, sb, sb + cb - 1)
    if #added > 0 then
      -- After the removed lines (or the line the insertion follows).
      local anchor = start + ca - 1
      if anchor < 0 then
        set_mark(buf, 0, 0, {
          virt_lines = virt(added, "AcpReviewPreviewAdd", width),
          virt_lines_above = true,
          sign_text = "+",
          sign_hl_group = "AcpReviewSignAdd",
        })
        above = #added
      else
        set_mark(buf, math.min(anchor, count - 1), 0, { virt_lines = virt(added, "AcpReviewPreviewAdd", width) })
      end
    end
    first_row = first_row or math.min(start, count - 1)
  end
  if first_row then
    pcall(api.nvim_win_set_cursor, 0, { first_row + 1, 0 })
  end
  if above > 0 then
    -- Lines above line 1 stay hidden until scrolled up (a new file looked
    -- empty): show them as the window's top filler.
    vim.fn.winrestview({ topline = 1, topfill = above })
  end
  -- Short: at 80 columns a longer line stopped at a hit-Enter prompt.
  util.notify("preview only, nothing applied: answer in the chat")
end

--- The permission request was answered or withdrawn: drop its preview.
---@param request_id integer
function P.end_preview(request_id)
  for buf, p in pairs(state.previews) do
    if p.request_id == request_id then
      state.previews[buf] = nil
      if api.nvim_buf_is_valid(buf) then
        api.nvim_buf_clear_namespace(buf, state.ns, 0, -1)
        if p.opened and buffer.is_unborn(buf) then
          actions.drop_buffer(buf)
        else
          sync.redraw(buf)
        end
      end
    end
  end
end

return P
