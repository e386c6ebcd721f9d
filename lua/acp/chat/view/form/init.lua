---@mod acp.chat.view.form One floating form for an agent's question (an elicitation
--- in form mode): every field visible with its type, default, required
--- marker, choices and description; each field checked as it is edited, the
--- problems drawn under the field; keyboard only, sized for 80x24.
---
--- Keys in the form (Normal mode):
---   <Tab> / <S-Tab>   next / previous field (then the buttons)
---   <CR>              edit a text or number field; pick the choice under the
---                     cursor; press the button under the cursor
---   <Space>           pick / toggle the choice under the cursor
---   i, c              edit the field (c starts from an empty text)
---   x, <BS>           clear the field (no value)
---   <C-s>             submit;  D decline;  X cancel
---   q, <Esc>          close the form; the question stays (`a` reopens it,
---                     with what was typed)
--- While editing a field (a one-line window over its value): <CR> keeps the
--- text, <Tab>/<S-Tab> keep it and move on, <C-s> keeps it and submits,
--- <Esc> in Normal mode keeps it too, <C-c> drops the edit.
---
--- The form checks what the backend checks (acp-client's
--- `FormSchema::validate`), so an answer that cannot fit is never sent; an
--- answer the backend refuses anyway shows its sentence at the bottom.

local fields = require("acp.chat.view.form.fields")
local rows = require("acp.chat.view.form.layout")
local clean, choices_of, value_text, parse = fields.clean, fields.choices_of, fields.value_text, fields.parse
local fit, picked, layout = rows.fit, rows.picked, rows.layout

local M = {}

--- The problem of a value of field `f`, or nil (acp.chat.view.form.fields).
M.check = fields.check

---@class acp.FormOwner what a form answers through
---@field respond fun(request_id: integer, answer: table): boolean, string?
---@field refresh fun(request_id: integer) redraw the question's lines in the chat

--- The form is the elicitation's view and does not require it: the
--- elicitation hands itself over when it opens a form.
---@type acp.FormOwner
local owner

---@class acp.FormRow
---@field field? integer index into the form's fields
---@field choice? integer index of the choice on this row
---@field value? boolean the row holding a text field's value
---@field buttons? boolean the row of the buttons

---@class acp.FormState
---@field e acp.Elicitation
---@field fields acp.ElicitationField[]
---@field values table<string, any> the value of each field (nil: none)
---@field texts table<string, string> text typed that is no value of its field's type
---@field errors table<string, string> the problem of each field, drawn under it
---@field notice? string why the last submit did not go through
---@field buf? integer
---@field win? integer
---@field input_win? integer the window editing one field
---@field return_win? integer where the cursor was before the form opened
---@field rows table<integer, acp.FormRow> buffer row (0-based) -> what it shows
---@field stops integer[] rows <Tab> goes to, in order
---@field width integer text width of the window
---@field buttons {name: string, from: integer, to: integer}[] byte columns of each button

--- Forms by elicitation request id: kept while their question waits, so a
--- closed form reopens with what was typed.
---@type table<integer, acp.FormState>
M.forms = {}

local ns = vim.api.nvim_create_namespace("acp.form")

local group = vim.api.nvim_create_augroup("acp.form", { clear = true })

local HELP = " Tab next · Enter edit/pick · C-s submit · D decline · X cancel · q close "

---@param st acp.FormState
---@return integer? win the form's window while it is open
local function shown(st)
  if st.win ~= nil and vim.api.nvim_win_is_valid(st.win) then
    return st.win
  end
end

--- Window size and place for `n` lines, centred in the editor.
---@param n integer
---@return table config, integer width
local function placement(n)
  local cols, rows = vim.o.columns, vim.o.lines - vim.o.cmdheight - 1
  local width = math.max(math.min(76, cols - 4), 20)
  local height = math.max(math.min(n, rows - 4), 3)
  return {
    relative = "editor",
    width = width,
    height = height,
    row = math.max(math.floor((rows - height - 2) / 2), 0),
    col = math.max(math.floor((cols - width - 2) / 2), 0),
  },
    width
end

--- Draw the form again (a few dozen lines: drawn whole), keeping the
--- cursor on the same field.
---@param st acp.FormState
---@param cursor? integer row to put the cursor on
local function draw(st, cursor)
  if not (st.buf and vim.api.nvim_buf_is_valid(st.buf)) then
    return
  end
  local lines, hls = layout(st)
  if #lines > placement(#lines).height then
    -- At 80x24 a form of five fields fits without the blank lines.
    lines, hls = layout(st, true)
  end
  local bo = vim.bo[st.buf]
  bo.modifiable = true
  vim.api.nvim_buf_set_lines(st.buf, 0, -1, false, lines)
  bo.modifiable = false
  vim.api.nvim_buf_clear_namespace(st.buf, ns, 0, -1)
  for _, h in ipairs(hls) do
    local line = lines[h[1] + 1]
    vim.api.nvim_buf_set_extmark(st.buf, ns, h[1], h[2], {
      end_col = h[3] == -1 and #line or math.min(h[3], #line),
      hl_group = h[4],
    })
  end
  local win = shown(st)
  if win then
    local cfg = placement(#lines)
    -- The border's footer is always on screen, the bottom of a long form
    -- may not be (80x24): why a submit did not go through is said there,
    -- in full at the bottom of the form.
    cfg.footer = st.notice and { { fit(" ✗ " .. clean(st.notice) .. " ", st.width), "AcpError" } }
      or fit(HELP, st.width)
    cfg.footer_pos = "center"
    vim.api.nvim_win_set_config(win, cfg)
    if cursor then
      vim.api.nvim_win_set_cursor(win, { math.min(cursor + 1, #lines), 0 })
    end
  end
end

--- The field and row under the cursor.
---@param st acp.FormState
---@return acp.FormRow row, integer lnum 0-based
local function here(st)
  local win = shown(st)
  if not win then
    return {}, 0
  end
  local lnum = vim.api.nvim_win_get_cursor(win)[1] - 1
  return st.rows[lnum] or {}, lnum
end

--- The row of a field the cursor goes back to after a redraw.
---@param st acp.FormState
---@param i integer field index
---@param choice? integer
---@return integer?
local function row_of(st, i, choice)
  for r = 0, #vim.tbl_keys(st.rows) do
    local row = st.rows[r]
    if row and row.field == i and ((choice and row.choice == choice) or (not choice and (row.value or row.choice))) then
      return r
    end
  end
  for r = 0, #vim.tbl_keys(st.rows) do
    if st.rows[r] and st.rows[r].field == i then
      return r
    end
  end
end

--- Set a field's value and check it.
---@param st acp.FormState
---@param f acp.ElicitationField
---@param v any
---@param text? string
local function set(st, f, v, text)
  st.values[f.name] = v
  st.texts[f.name] = text
  st.errors[f.name] = fields.check(f, v, text)
  st.notice = nil
  -- The inline prompt in the chat and the vim.ui fallback start from these.
  st.e.values = vim.deepcopy(st.values)
end

---@type fun(st: acp.FormState, dir: integer, edit_text?: boolean)
local stop_move

--- Close the one-line editor, keeping its text in the field unless `drop`.
---@param st acp.FormState
---@param drop? boolean
---@param keep_insert? boolean stay in Insert mode (<Tab> to the next field)
local function end_edit(st, drop, keep_insert)
  local win = st.input_win
  if not (win and vim.api.nvim_win_is_valid(win)) then
    st.input_win = nil
    return
  end
  st.input_win = nil
  local buf = vim.api.nvim_win_get_buf(win)
  -- Read before the window closes: its buffer is wiped with it.
  local i = vim.b[buf].acp_form_field
  local f = st.fields[i]
  local text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), " ")
  if not keep_insert then
    vim.cmd.stopinsert()
  end
  pcall(vim.api.nvim_win_close, win, true)
  if not drop and f then
    set(st, f, parse(f, text))
  end
  local form_win = shown(st)
  if form_win then
    vim.api.nvim_set_current_win(form_win)
    draw(st, f and row_of(st, i) or nil)
  end
end

--- Edit a text or number field in a one-line window over its value.
---@param st acp.FormState
---@param i integer field index
---@param empty? boolean start from no text
local function edit(st, i, empty)
  local f = st.fields[i]
  local r = row_of(st, i)
  local form_win = shown(st)
  if not (r and form_win) then
    return
  end
  vim.api.nvim_win_set_cursor(form_win, { r + 1, 0 })
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  vim.b[buf].acp_form_field = i
  local text = empty and "" or (st.texts[f.name] or value_text(st.values[f.name]))
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, { text })
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "win",
    win = form_win,
    bufpos = { r, 3 },
    row = 0,
    col = 0,
    width = math.max(st.width - 4, 1),
    height = 1,
    style = "minimal",
    zindex = 60,
  })
  vim.wo[win].winhighlight = "Normal:AcpFormInput"
  st.input_win = win
  local function map(modes, lhs, fn)
    vim.keymap.set(modes, lhs, fn, { buffer = buf, nowait = true, silent = true })
  end
  map({ "i", "n" }, "<CR>", function()
    end_edit(st)
  end)
  -- <Tab> from one text field into the next goes on typing there (Insert
  -- mode is kept: a :stopinsert then :startinsert in one mapping stops).
  local function move_on(dir)
    end_edit(st, false, true)
    stop_move(st, dir, true)
    if not st.input_win then
      vim.cmd.stopinsert()
    end
  end
  map({ "i", "n" }, "<Tab>", function()
    move_on(1)
  end)
  map({ "i", "n" }, "<S-Tab>", function()
    move_on(-1)
  end)
  map({ "i", "n" }, "<C-s>", function()
    end_edit(st)
    M.submit(st.e.request_id)
  end)
  map({ "i", "n" }, "<C-c>", function()
    end_edit(st, true)
  end)
  -- <Esc> twice (Insert, then Normal mode) is a habit, not a wish to lose
  -- the text: it keeps it; only <C-c> drops an edit.
  map("n", "<Esc>", function()
    end_edit(st)
  end)
  -- Leaving the editor any other way (a mouse click, <C-w>) keeps the text:
  -- what was typed is never lost.
  vim.api.nvim_create_autocmd("WinLeave", {
    buffer = buf,
    once = true,
    callback = function()
      if st.input_win == win then
        vim.schedule(function()
          end_edit(st)
        end)
      end
    end,
  })
  if vim.api.nvim_get_mode().mode:sub(1, 1) == "i" then
    vim.api.nvim_win_set_cursor(win, { 1, #text })
  else
    vim.cmd("startinsert!")
  end
end

--- Move the cursor to the next (dir 1) or previous (-1) stop; `edit_text`:
--- start editing when the stop is a text field (<Tab> from an editor).
---@param st acp.FormState
---@param dir integer
---@param edit_text? boolean
stop_move = function(st, dir, edit_text)
  local win = shown(st)
  if not win then
    return
  end
  local cur = vim.api.nvim_win_get_cursor(win)[1] - 1
  -- From a field's own stop (one of its choices), the next field's: a
  -- field with several choices is one stop.
  local at = st.rows[cur] or {}
  local cur_field = (at.value or at.choice) and at.field or nil
  local target
  if dir > 0 then
    for _, s in ipairs(st.stops) do
      if s > cur and (not cur_field or (st.rows[s] or {}).field ~= cur_field) then
        target = s
        break
      end
    end
    target = target or st.stops[1]
  else
    for k = #st.stops, 1, -1 do
      local s = st.stops[k]
      if s < cur and (not cur_field or (st.rows[s] or {}).field ~= cur_field) then
        target = s
        break
      end
    end
    target = target or st.stops[#st.stops]
  end
  if not target then
    return
  end
  vim.api.nvim_win_set_cursor(win, { target + 1, 0 })
  local row = st.rows[target] or {}
  -- A value row always names its field.
  if edit_text and row.value and row.field then
    edit(st, row.field)
  end
end

--- Pick (enum, boolean) or toggle (multi-select) a choice.
---@param st acp.FormState
---@param i integer
---@param ci integer
local function pick(st, i, ci)
  local f = st.fields[i]
  local c = (choices_of(f) or {})[ci]
  if not c then
    return
  end
  if f.type == "multi_select" then
    local list = {}
    local on = picked(st, f, c.value)
    for _, x in ipairs(choices_of(f) or {}) do
      if (x.value == c.value and not on) or (x.value ~= c.value and picked(st, f, x.value)) then
        list[#list + 1] = x.value
      end
    end
    set(st, f, list)
  else
    set(st, f, c.value)
  end
  draw(st, row_of(st, i, ci))
end

--- Clear the field under the cursor.
---@param st acp.FormState
local function clear(st)
  local row = here(st)
  local i = row.field
  local f = i and st.fields[i]
  if i and f and f.type ~= "unknown" then
    set(st, f, nil)
    draw(st, row_of(st, i, row.choice))
  end
end

--- <CR>: edit, pick, or press what is under the cursor.
---@param st acp.FormState
---@param empty? boolean
local function activate(st, empty)
  local row = here(st)
  if row.buttons then
    -- here() finds no row unless the form is shown.
    local col = vim.api.nvim_win_get_cursor(shown(st) --[[@as integer]])[2]
    local name = "submit"
    for _, b in ipairs(st.buttons) do
      if col >= b.from and col < b.to then
        name = b.name
      end
    end
    if name == "submit" then
      M.submit(st.e.request_id)
    else
      -- Not submit: one of the two other buttons layout draws.
      M.answer(st.e.request_id, name --[[@as "decline"|"cancel"]])
    end
    return
  end
  local i = row.field
  local f = i and st.fields[i]
  if not (i and f) then
    return
  end
  if row.choice then
    pick(st, i, row.choice)
  elseif choices_of(f) then
    local r = row_of(st, i, 1)
    local win = shown(st)
    if r and win then
      vim.api.nvim_win_set_cursor(win, { r + 1, 0 })
    end
  elseif f.type ~= "unknown" then
    edit(st, i, empty)
  end
end

--- The answer of the form: every field with a value.
---@param st acp.FormState
---@return table
local function content(st)
  local out = {}
  for _, f in ipairs(st.fields) do
    local v = st.values[f.name]
    if v ~= nil and not (f.type == "multi_select" and #v == 0 and not f.required) then
      out[f.name] = v
    end
  end
  return out
end

--- Check every field and send the answer; a field that does not fit keeps
--- the form open with its problem drawn under it.
---@param request_id integer
---@return boolean sent
function M.submit(request_id)
  local st = M.forms[request_id]
  if not st then
    return false
  end
  if st.input_win then
    end_edit(st)
  end
  local first
  for i, f in ipairs(st.fields) do
    st.errors[f.name] = fields.check(f, st.values[f.name], st.texts[f.name])
    if st.errors[f.name] and not first then
      first = i
    end
  end
  if first then
    st.notice = "not sent: fix the fields marked ✗ (or decline)"
    draw(st, row_of(st, first))
    return false
  end
  local ok, err = owner.respond(request_id, { action = "accept", content = content(st) })
  if not ok and M.forms[request_id] then
    -- The backend names each problem as "`label` why": draw each under its
    -- field, the whole sentence at the bottom.
    for i, f in ipairs(st.fields) do
      local why = (err or ""):match("`" .. vim.pesc(f.label) .. "` ([^;]+)")
      if why then
        st.errors[f.name] = why
        first = first or i
      end
    end
    st.notice = err or "the answer was not sent"
    draw(st, first and row_of(st, first) or nil)
    return false
  end
  return ok
end

--- Decline or cancel the question.
---@param request_id integer
---@param action "decline"|"cancel"
function M.answer(request_id, action)
  local st = M.forms[request_id]
  if st and st.input_win then
    end_edit(st, true)
  end
  local ok, err = owner.respond(request_id, { action = action })
  if not ok and st then
    st.notice = err
    draw(st)
  end
end

--- Close a form's window; the question (and what was typed) stays.
---@param request_id integer
function M.hide(request_id)
  local st = M.forms[request_id]
  if not st then
    return
  end
  if st.input_win then
    end_edit(st, true)
  end
  local win, ret = st.win, st.return_win
  st.win = nil
  -- The chat's prompt shows the values typed so far.
  owner.refresh(request_id)
  if win and vim.api.nvim_win_is_valid(win) then
    pcall(vim.api.nvim_win_close, win, true)
  end
  if ret and vim.api.nvim_win_is_valid(ret) then
    pcall(vim.api.nvim_set_current_win, ret)
  end
end

--- The question was answered or withdrawn: its form goes.
---@param request_id integer
function M.closed(request_id)
  if M.forms[request_id] then
    M.hide(request_id)
    M.forms[request_id] = nil
  end
end

---@param st acp.FormState
local function map_keys(st)
  local id = st.e.request_id
  local function map(lhs, fn, desc)
    vim.keymap.set("n", lhs, fn, { buffer = st.buf, nowait = true, silent = true, desc = "acp.nvim form: " .. desc })
  end
  map("<Tab>", function()
    stop_move(st, 1)
  end, "next field")
  map("<S-Tab>", function()
    stop_move(st, -1)
  end, "previous field")
  map("<CR>", function()
    activate(st)
  end, "edit, pick or press")
  map("<Space>", function()
    activate(st)
  end, "pick or toggle")
  map("i", function()
    activate(st)
  end, "edit the field")
  map("c", function()
    activate(st, true)
  end, "edit the field from empty")
  map("x", function()
    clear(st)
  end, "clear the field")
  map("<BS>", function()
    clear(st)
  end, "clear the field")
  map("<C-s>", function()
    M.submit(id)
  end, "submit")
  map("D", function()
    M.answer(id, "decline")
  end, "decline")
  map("X", function()
    M.answer(id, "cancel")
  end, "cancel")
  map("q", function()
    M.hide(id)
  end, "close (the question stays)")
  map("<Esc>", function()
    M.hide(id)
  end, "close (the question stays)")
end

--- Open (or focus) the form of a pending form elicitation.
---@param e acp.Elicitation
---@param by acp.FormOwner the elicitation, answered through
function M.open(e, by)
  owner = by
  local st = M.forms[e.request_id]
  local win = st and shown(st)
  if win then
    vim.api.nvim_set_current_win(win)
    return
  end
  for id, other in pairs(M.forms) do
    if id ~= e.request_id and shown(other) then
      M.hide(id)
    end
  end
  if not st then
    ---@type acp.FormState
    local fresh = {
      e = e,
      fields = e.fields or {},
      values = {},
      texts = {},
      errors = {},
      rows = {},
      stops = {},
      buttons = {},
      width = 0,
    }
    st = fresh
    for _, f in ipairs(fresh.fields) do
      -- What was typed before (a refused answer, the vim.ui prompts), else
      -- the agent's default, checked like a typed value.
      local v = e.values[f.name]
      if v == nil then
        v = f.default
      end
      if v ~= nil and f.type ~= "unknown" then
        fresh.values[f.name] = v
        fresh.errors[f.name] = fields.check(f, v)
      end
    end
    M.forms[e.request_id] = st
  end
  st.return_win = vim.api.nvim_get_current_win()
  st.buf = vim.api.nvim_create_buf(false, true)
  vim.bo[st.buf].bufhidden = "wipe"
  vim.bo[st.buf].filetype = "acp-form"
  -- Named for the status line (a scratch buffer says "[Scratch]").
  pcall(vim.api.nvim_buf_set_name, st.buf, ("acp://question/%d"):format(e.request_id))
  local cfg, width = placement(10)
  st.width = width
  cfg.border = "rounded"
  cfg.title = " The agent asks "
  cfg.title_pos = "center"
  cfg.footer = fit(HELP, width)
  cfg.footer_pos = "center"
  cfg.style = "minimal"
  cfg.zindex = 50
  st.win = vim.api.nvim_open_win(st.buf, true, cfg)
  vim.wo[st.win].cursorline = true
  vim.wo[st.win].wrap = false
  vim.wo[st.win].winhighlight = "NormalFloat:Normal,FloatBorder:AcpFormBorder"
  map_keys(st)
  draw(st)
  stop_move(st, 1)
  local buf = st.buf
  vim.api.nvim_create_autocmd("BufWipeout", {
    group = group,
    buffer = buf,
    callback = function()
      if st.buf == buf then
        st.buf, st.win = nil, nil
      end
    end,
  })
end

-- The terminal was resized: forms are centred and sized again.
vim.api.nvim_create_autocmd("VimResized", {
  group = group,
  callback = function()
    for _, st in pairs(M.forms) do
      if shown(st) then
        local _, width = placement(1)
        st.width = width
        draw(st)
      end
    end
  end,
})

return M
