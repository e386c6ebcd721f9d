-- End to end: real backend + fake agent. An agent's question (a form
-- elicitation) opens one floating form (acp.chat.view.form): every field shown with its
-- type, default, required marker, choices and description; a value that does
-- not fit shows its problem under the field and keeps the answer from being
-- sent; typed keys fill it; D declines, X cancels, q closes it and `a` brings
-- it back as it was; `elicitation.ui = "vim.ui"` keeps the prompts.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

-- JSON text: a Lua table would lose the agent's field order. The form's
-- description carries a newline, the label of `tags` an escape sequence and
-- a tab, a choice a carriage return (the transcript's inline prompt is not
-- this test's: its text gets the shared sanitizer).
local FORM = [[{"type":"object","title":"Deploy settings","description":"Where\nand how",
 "properties":{
  "name":{"type":"string","title":"Name","minLength":2,"maxLength":10,"default":"Ada","description":"Who deploys"},
  "email":{"type":"string","title":"Email","format":"email"},
  "replicas":{"type":"integer","title":"Replicas","minimum":1,"maximum":3},
  "ratio":{"type":"number","title":"Ratio"},
  "target":{"type":"string","title":"Target","oneOf":[{"const":"prod","title":"Production"},{"const":"dev","title":"Development"}],"default":"dev"},
  "notify":{"type":"boolean","title":"Notify","default":true},
  "tags":{"type":"array","title":"Tags\tline two\u001b[2J","items":{"type":"string","anyOf":[{"const":"a","title":"Alpha"},{"const":"b","title":"Be\rta"}]}},
  "blob":{"type":"object","title":"Blob"}},
 "required":["name","email","replicas","target"]}]]

local scenario = dir .. "/form.json"
T.write_file(
  scenario,
  [[{"turns":[{"match":"form","steps":[{"type":"elicit","message":"Deploy where?","requestedSchema":]]
    .. FORM
    .. [[}]}]}]]
)
T.setup_fake({ form = scenario }, dir)
T.require_binaries()

local F = require("acp.chat.view.form")

--- Type keys as a user would (mappings apply).
local function keys(k)
  vim.api.nvim_feedkeys(vim.keycode(k), "xt", false)
end

--- Ask the question in a new chat and open its form with `a`.
local function open_form()
  local chat = T.open_chat("form", dir)
  assert(chat:send({ { type = "text", text = "form please" } }))
  T.wait_text(chat, "? The agent asks: Deploy")
  T.cursor_on(chat, "? The agent asks")
  keys("a")
  local e = require("acp.chat.view.elicitation").for_chat(chat.chat_id)[1]
  local st = assert(F.forms[e.request_id], "a form for the question")
  T.eq(st.win, vim.api.nvim_get_current_win(), "the form has the cursor")
  return chat, st, e, st.win
end

local function form_text(st)
  return table.concat(vim.api.nvim_buf_get_lines(st.buf, 0, -1, false), "\n")
end

--- The form's lines from the one holding `needle` on, `n` of them.
local function rows_from(st, needle, n)
  local lines = vim.api.nvim_buf_get_lines(st.buf, 0, -1, false)
  for i, l in ipairs(lines) do
    if l:find(needle, 1, true) then
      return table.concat(vim.list_slice(lines, i, i + n - 1), "\n")
    end
  end
  error(needle .. " not in the form:\n" .. table.concat(lines, "\n"))
end

T.test("every field is shown with its type, default, required mark, choices and description", function()
  local _, st = open_form()
  local text = form_text(st)
  for _, want in ipairs({
    "Deploy where?",
    "Deploy settings",
    "Where⏎and how",
    "Name *",
    "text, 2-10 chars",
    "[Ada ",
    "Who deploys",
    "Email *",
    "email",
    "Replicas *",
    "whole number, 1 to 3",
    "Ratio",
    "number",
    "Target *",
    "pick one",
    "( ) Production",
    "(•) Development",
    "Notify",
    "yes or no",
    "(•) yes",
    "( ) no",
    "Tags line two␛[2J",
    "[ ] Alpha",
    "[ ] Be␍ta",
    "Blob",
    "(type `object`: cannot be filled here)",
    "[ Submit ]   [ Decline ]   [ Cancel ]",
  }) do
    T.contains(text, want, "shown in the form")
  end
  T.eq(nil, text:find("[\27\r\t]"), "no control characters drawn")
  local lines = vim.api.nvim_buf_get_lines(st.buf, 0, -1, false)
  for _, l in ipairs(lines) do
    T.truthy(vim.fn.strdisplaywidth(l) <= st.width, "a line fits the form: " .. l)
  end
  T.truthy(st.width <= 76, "fits 80 columns")
  local cfg = vim.api.nvim_win_get_config(st.win)
  T.eq("editor", cfg.relative, "a float")
  T.eq(nil, text:find("✗", 1, true), "no problem shown before any edit (defaults fit)")
  keys("X")
end)

T.test(
  "a value that does not fit shows its problem under the field and blocks the answer; a good one is sent typed",
  function()
    local chat, st, e, win = open_form()
    -- The cursor starts on the first field (Name): replace it by one letter.
    keys("cZ<CR>")
    T.contains(rows_from(st, "Name *", 4), "✗ must be at least 2 characters long", "the problem under the field")
    -- Email: <Tab> from the editor moves on and edits the next field.
    keys("<Tab>inot-an-email<Tab>7<Tab>x<CR>")
    T.contains(rows_from(st, "Email *", 3), "✗ must be an email address such as name@example.com", "email")
    T.contains(rows_from(st, "Replicas *", 3), "✗ must be at most 3", "maximum")
    T.contains(rows_from(st, "Ratio", 3), "✗ `x` is not a number", "a number")
    keys("<C-s>")
    T.contains(form_text(st), "not sent: fix the fields marked ✗", "why nothing was sent")
    T.eq(true, require("acp.chat.view.elicitation").pending[e.request_id] ~= nil, "still waiting")
    T.eq(nil, T.find_line(chat.bufnr, "elicitation: accept"), "nothing sent to the agent")
    T.eq(st.win, vim.api.nvim_get_current_win(), "the form stays")

    -- Fix them: the cursor went to the first field with a problem.
    keys("cGrace<CR><Tab>cgrace@example.com<Tab><C-u>2<Tab><C-u>1.5<CR>")
    T.eq(nil, form_text(st):find("✗", 1, true), "no problem left:\n" .. form_text(st))
    -- Target: the cursor on its picked choice; k goes to Production.
    keys("<Tab>k<Space>")
    T.contains(form_text(st), "(•) Production", "picked")
    -- Notify: no; Tags: both, then Alpha off again.
    keys("<Tab>j<CR><Tab><Space>j<Space>k<Space>")
    T.contains(form_text(st), "[ ] Alpha", "toggled off")
    T.contains(form_text(st), "[x] Be␍ta", "toggled on")
    keys("<C-s>")
    T.wait_text(
      chat,
      [[elicitation: accept {"name":"Grace","email":"grace@example.com","replicas":2,"ratio":1.5,"target":"prod","notify":false,"tags":["b"]}]]
    )
    T.eq(nil, F.forms[e.request_id], "the form is gone")
    T.eq(false, vim.api.nvim_win_is_valid(win), "its window closed")
    T.truthy(T.find_line(chat.bufnr, "answered: Name = Grace"), "the answer noted in the chat")
  end
)

T.test("D in the form declines, X cancels", function()
  local chat, st, _, win = open_form()
  keys("D")
  T.wait_text(chat, "elicitation: decline")
  T.eq(false, vim.api.nvim_win_is_valid(win), "closed after decline")
  assert(chat:send({ { type = "text", text = "form again" } }))
  T.wait_text(chat, "? The agent asks: Deploy")
  T.cursor_on(chat, "? The agent asks")
  keys("a")
  local e = require("acp.chat.view.elicitation").for_chat(chat.chat_id)[1]
  st = F.forms[e.request_id]
  keys("<Tab><Tab><Tab><Tab><Tab><Tab><Tab>")
  T.contains(vim.api.nvim_get_current_line(), "[ Submit ]", "Tab reaches the buttons")
  -- The Cancel button by its place on the line.
  vim.api.nvim_win_set_cursor(st.win, { vim.api.nvim_win_get_cursor(st.win)[1], 30 })
  keys("<CR>")
  T.wait_text(chat, "elicitation: cancel")
  T.eq(nil, F.forms[e.request_id], "no form left")
end)

T.test("q closes the form, the question stays; a reopens it with what was typed", function()
  local chat, _, e, win = open_form()
  keys("<Tab>iada@example.com<CR>q")
  T.eq(false, vim.api.nvim_win_is_valid(win), "closed")
  T.truthy(require("acp.chat.view.elicitation").pending[e.request_id], "still waiting")
  T.contains(T.text(chat.bufnr), "Email* (email) = ada@example.com", "the chat's prompt shows the value typed")
  T.cursor_on(chat, "? The agent asks")
  keys("a")
  T.contains(form_text(F.forms[e.request_id]), "[ada@example.com", "kept")
  keys("X")
  T.wait_text(chat, "elicitation: cancel")
end)

T.test("a question withdrawn with the turn closes its form", function()
  local chat, _, _, win = open_form()
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(chat.bufnr)[1])
  vim.cmd("Acp cancel")
  T.wait(function()
    return not vim.api.nvim_win_is_valid(win)
  end, "the form to close")
  T.wait_text(chat, "✗ question withdrawn")
end)

T.test("the form's checks agree with the backend's, value by value", function()
  -- A form whose `guard` is never given: the backend names every problem of
  -- an answer and never takes it, so each value is judged on its own.
  local checks = dir .. "/checks.json"
  T.write_file(
    checks,
    [[{"turns":[{"steps":[{"type":"elicit","message":"Checks","requestedSchema":{"type":"object","properties":{
    "email":{"type":"string","format":"email"},"when":{"type":"string","format":"date"},
    "at":{"type":"string","format":"date-time"},"site":{"type":"string","format":"uri"},
    "s":{"type":"string","minLength":2,"maxLength":4},"n":{"type":"integer","minimum":1,"maximum":5},
    "r":{"type":"number","minimum":0.5},"guard":{"type":"boolean"}},"required":["guard"]}}]}]}]]
  )
  T.setup_fake({ form = scenario, checks = checks }, dir)
  local chat = T.open_chat("checks", dir)
  assert(chat:send({ { type = "text", text = "check" } }))
  T.wait_text(chat, "? The agent asks: Checks")
  local e = require("acp.chat.view.elicitation").for_chat(chat.chat_id)[1]
  local by_name = {}
  for _, f in ipairs(e.fields) do
    by_name[f.name] = f
  end
  local cases = {
    email = { "a@b.c", "a@b", "@b.c", "a b@c.d", "a@.c", "a@c.", "x@y@z.com", "a\194\160b@c.d", "a@b\226\128\131c.d" },
    when = { "2024-02-29", "2023-02-29", "2026-13-01", "2026-1-01", "2026-04-31", "2026-04-30", "0000-01-01" },
    at = {
      "2026-07-28T14:30:00Z",
      "2026-07-28T14:30:00.5+02:00",
      "2026-07-28 14:30",
      "2026-07-28T24:00:00Z",
      "2026-07-28t14:30:60z",
      "2026-07-28T14:30:00",
      "2026-07-28T14:30:00.+02:00",
      "2026-07-28T14:30:00-2:00",
    },
    site = { "https://x", "no scheme", "mailto:a@b", "1http://x", "x:", "a b:c", "a+b.c-d:x", "ht\226\128\168tp:x" },
    s = { "é", "ab", "abcd", "abcde", "日本語", "e\204\129e" },
    n = { 0, 1, 5, 6, 2.5, -1 },
    r = { 0.4, 0.5, 10 },
  }
  for name, values in pairs(cases) do
    local f = by_name[name]
    for _, v in ipairs(values) do
      local ok, err = require("acp").elicitation_respond(e.request_id, { action = "accept", content = { [name] = v } })
      T.eq(false, ok, "never taken (guard)")
      local backend_ok = not err:find("`" .. f.label .. "`", 1, true)
      local form_ok = F.check(f, v) == nil
      T.eq(backend_ok, form_ok, ("%s = %s: backend says %s"):format(name, vim.inspect(v), err))
    end
  end
  require("acp").elicitation_respond(e.request_id, { action = "cancel" })
end)

T.test('elicitation.ui = "vim.ui" asks field by field instead', function()
  local cfg = require("acp.config").options
  cfg.elicitation = { ui = "vim.ui" }
  local asked = 0
  local orig = vim.ui.input
  vim.ui.input = function(_, done)
    asked = asked + 1
    done(nil)
  end
  local ok, err = pcall(function()
    local chat = T.open_chat("form", dir)
    assert(chat:send({ { type = "text", text = "form please" } }))
    T.wait_text(chat, "? The agent asks: Deploy")
    T.cursor_on(chat, "? The agent asks")
    keys("a")
    T.eq(1, asked, "vim.ui.input asked for the first field")
    T.eq(nil, next(F.forms), "no form")
  end)
  vim.ui.input = orig
  cfg.elicitation = { ui = "form" }
  assert(ok, err)
end)

T.test("elicitation.ui takes form or vim.ui only", function()
  T.eq(nil, require("acp.config").validate({ elicitation = { ui = "vim.ui" } }), "valid")
  T.contains(
    require("acp.config").validate({ elicitation = { ui = "popup" } }) or "",
    '`elicitation.ui` must be "form" or "vim.ui"',
    "refused with the fix"
  )
end)

T.run()
