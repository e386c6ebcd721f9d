---@mod acp.chat.view.form.layout The lines of a form: every field with its
--- type, default, required marker, choices, description and problem, then
--- the buttons; which row shows what, and where <Tab> stops.

local fields = require("acp.chat.view.form.fields")
local clean, hint, choices_of, value_text = fields.clean, fields.hint, fields.choices_of, fields.value_text

local M = {}

--- Cut `s` to `width` display columns (with "…" when cut).
---@param s string
---@param width integer
---@return string
local function fit(s, width)
  if vim.fn.strdisplaywidth(s) <= width then
    return s
  end
  local out = vim.fn.strcharpart(s, 0, math.max(width - 1, 0))
  while vim.fn.strdisplaywidth(out) > width - 1 and #out > 0 do
    out = vim.fn.strcharpart(out, 0, vim.fn.strchars(out) - 1)
  end
  return out .. "…"
end

--- Words of `s` in lines of at most `width` columns, each prefixed by
--- `indent` (a word longer than a line is cut).
---@param s string
---@param width integer
---@param indent string
---@return string[]
local function wrap(s, width, indent)
  local lines, cur = {}, ""
  local room = math.max(width - #indent, 10)
  for word in clean(s):gmatch("%S+") do
    word = fit(word, room)
    if cur == "" then
      cur = word
    elseif vim.fn.strdisplaywidth(cur) + 1 + vim.fn.strdisplaywidth(word) <= room then
      cur = cur .. " " .. word
    else
      lines[#lines + 1] = indent .. cur
      cur = word
    end
  end
  if cur ~= "" then
    lines[#lines + 1] = indent .. cur
  end
  return lines
end

---@param st acp.FormState
---@param f acp.ElicitationField
---@param v any
---@return boolean
local function picked(st, f, v)
  local cur = st.values[f.name]
  if f.type == "multi_select" then
    return type(cur) == "table" and vim.tbl_contains(cur, v)
  end
  return cur == v
end

--- The form's lines, highlights and rows.
---@param st acp.FormState
---@param compact? boolean no blank line between fields (a small terminal)
---@return string[] lines, {[1]: integer, [2]: integer, [3]: integer, [4]: string}[] hls
local function layout(st, compact)
  local e, W = st.e, st.width
  local lines, hls = {}, {}
  st.rows, st.stops, st.buttons = {}, {}, {}
  local function add(line, hl, row)
    lines[#lines + 1] = line
    if hl then
      hls[#hls + 1] = { #lines - 1, 0, -1, hl }
    end
    st.rows[#lines - 1] = row or {}
    return #lines - 1
  end
  for _, l in ipairs(wrap(e.message ~= "" and e.message or "(no message)", W, "")) do
    add(l, "AcpPermissionTitle")
  end
  if e.tool_title or e.tool_call_id then
    add(fit("for tool call: " .. clean(e.tool_title or e.tool_call_id), W), "AcpNote")
  end
  local schema = type(e.requested_schema) == "table" and e.requested_schema or {}
  if type(schema.title) == "string" and schema.title ~= "" then
    add(fit(clean(schema.title), W), "Bold")
  end
  if type(schema.description) == "string" and schema.description ~= "" then
    for _, l in ipairs(wrap(schema.description, W, "")) do
      add(l, "AcpNote")
    end
  end
  for i, f in ipairs(st.fields) do
    if not compact or i == 1 then
      add("")
    end
    local label = clean(f.label) .. (f.required and " *" or "")
    local right = hint(f)
    local room = W - vim.fn.strdisplaywidth(right) - 2
    label = fit(label, math.max(room, 8))
    local pad = math.max(W - vim.fn.strdisplaywidth(label) - vim.fn.strdisplaywidth(right), 2)
    local row = add(label .. (" "):rep(pad) .. right, nil, { field = i })
    hls[#hls + 1] = { row, 0, #label, "AcpFormLabel" }
    hls[#hls + 1] = { row, #label + pad, -1, "AcpNote" }
    local choices = choices_of(f)
    if choices then
      local multi = f.type == "multi_select"
      local first
      for ci, c in ipairs(choices) do
        local on = picked(st, f, c.value)
        local mark = multi and (on and "[x] " or "[ ] ") or (on and "(•) " or "( ) ")
        local r = add(fit("  " .. mark .. clean(c.title), W), nil, { field = i, choice = ci })
        hls[#hls + 1] = { r, 2, 2 + #mark, on and "AcpFormPicked" or "AcpNote" }
        if on and not first then
          first = r
        end
      end
      if #choices == 0 then
        add("  (the agent offered no choices)", "AcpNote", { field = i })
      else
        st.stops[#st.stops + 1] = first or (row + 1)
      end
    elseif f.type == "unknown" then
      add(fit(("  (type `%s`: cannot be filled here)"):format(clean(f.wire_type)), W), "AcpNote", { field = i })
    else
      local text = st.texts[f.name] or value_text(st.values[f.name])
      local inner = W - 4
      local shown = fit(text, inner)
      local r = add(
        "  [" .. shown .. (" "):rep(math.max(inner - vim.fn.strdisplaywidth(shown), 0)) .. "]",
        nil,
        { field = i, value = true }
      )
      hls[#hls + 1] = { r, 3, 3 + #shown + math.max(inner - vim.fn.strdisplaywidth(shown), 0), "AcpFormInput" }
      st.stops[#st.stops + 1] = r
    end
    if f.description and f.description ~= "" then
      for _, l in ipairs(wrap(f.description, W, "  ")) do
        add(l, "AcpNote", { field = i })
      end
    end
    if st.errors[f.name] then
      for _, l in ipairs(wrap("✗ " .. st.errors[f.name], W, "  ")) do
        add(l, "AcpError", { field = i })
      end
    end
  end
  add("")
  if st.notice then
    for _, l in ipairs(wrap("✗ " .. st.notice, W, "")) do
      add(l, "AcpError")
    end
  end
  local line, col = "", 0
  for bi, b in ipairs({ { "submit", "[ Submit ]" }, { "decline", "[ Decline ]" }, { "cancel", "[ Cancel ]" } }) do
    local sep = bi == 1 and "" or "   "
    line = line .. sep .. b[2]
    col = col + #sep
    st.buttons[#st.buttons + 1] = { name = b[1], from = col, to = col + #b[2] }
    col = col + #b[2]
  end
  local r = add(line, "AcpPermissionKey", { buttons = true })
  st.stops[#st.stops + 1] = r
  return lines, hls
end

M.fit = fit
M.wrap = wrap
M.picked = picked
M.layout = layout

return M
