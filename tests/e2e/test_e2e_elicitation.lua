-- End to end: real backend + fake agent. The agent asks questions
-- (elicitation): answered through the documented API (AcpElicitationRequest
-- + require("acp").elicitation_respond) and through the inline prompt's keys
-- with vim.ui.input / vim.ui.select (`elicitation.ui = "vim.ui"`); URLs opened with vim.ui.open; cancelled
-- with the turn; asked during a login, before any session exists.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

local FORM = {
  type = "object",
  properties = {
    target = {
      type = "string",
      title = "Target",
      oneOf = { { const = "prod", title = "Production" }, { const = "dev", title = "Development" } },
    },
    replicas = { type = "integer", minimum = 1, maximum = 3, description = "How many copies" },
    note = { type = "string", maxLength = 20 },
    notify = { type = "boolean", default = true },
    tags = { type = "array", items = { type = "string", enum = { "a", "b", "c" } } },
  },
  required = { "target", "replicas" },
}

-- vim.json.encode sorts nothing but Lua tables have no order: write the
-- scenario's form as JSON text so the fields keep the order above.
local FORM_JSON = [[{"type":"object","properties":{
  "target":{"type":"string","title":"Target","oneOf":[{"const":"prod","title":"Production"},{"const":"dev","title":"Development"}]},
  "replicas":{"type":"integer","minimum":1,"maximum":3,"description":"How many copies"},
  "note":{"type":"string","maxLength":20},
  "notify":{"type":"boolean","default":true},
  "tags":{"type":"array","items":{"type":"string","enum":["a","b","c"]}}},
  "required":["target","replicas"]}]]
assert(vim.json.decode(FORM_JSON).properties.target.title == FORM.properties.target.title)

local function scenario_file(name, text)
  local path = dir .. "/" .. name .. ".json"
  T.write_file(path, text)
  return path
end

local turns = scenario_file("ask", [[{"turns":[
  {"match":"form","steps":[
    {"type":"toolCall","toolCallId":"d1","title":"Deploy the app","kind":"execute","status":"pending"},
    {"type":"elicit","message":"Where to deploy?","toolCallId":"d1","requestedSchema":]] .. FORM_JSON .. [[}]},
  {"match":"url","steps":[
    {"type":"elicit","mode":"url","message":"Authorize the deploy","url":"https://example.com/authorize",
     "elicitationId":"auth-1","completeAfterMs":20}]},
  {"match":"wait","steps":[
    {"type":"elicit","message":"Name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}},
    {"type":"waitForCancel"}]}
]}]])

local login = scenario_file(
  "login",
  [[{"authRequired":true,
  "initialize":{"authMethods":[{"id":"fake-login","name":"Fake login"}]},
  "authElicitation":{"mode":"form","message":"Pick an account",
    "requestedSchema":{"type":"object","properties":{"account":{"type":"string","format":"email"}},"required":["account"]}}}]]
)

T.setup_fake({ ask = turns, login = login }, dir)
T.require_binaries()

--- Every AcpElicitationRequest, in order.
local asked = {}
vim.api.nvim_create_autocmd("User", {
  pattern = "AcpElicitationRequest",
  callback = function(a)
    asked[#asked + 1] = a.data
  end,
})

local function wait_asked(n)
  T.wait(function()
    return #asked >= n
  end, "elicitation " .. n)
  return asked[n]
end

--- Replace vim.ui.select / vim.ui.input with scripted answers, in order:
--- each entry is a function(items_or_opts) returning the choice / text.
local function script_ui(answers)
  local orig_select, orig_input = vim.ui.select, vim.ui.input
  local function next_answer()
    local a = table.remove(answers, 1)
    if #answers == 0 then
      vim.ui.select, vim.ui.input = orig_select, orig_input
    end
    return a
  end
  vim.ui.select = function(items, opts, on_choice)
    local a = next_answer()
    for _, it in ipairs(items) do
      if a(it, opts) then
        return on_choice(it)
      end
    end
    on_choice(nil)
  end
  vim.ui.input = function(opts, on_confirm)
    on_confirm(next_answer()(opts))
  end
end

T.test("the documented API: autocmd data, a refused answer, then an accepted one", function()
  local chat = T.open_chat("ask", dir)
  local n = #asked
  assert(chat:send({ { type = "text", text = "form please" } }))
  local data = wait_asked(n + 1)
  T.eq("form", data.mode, "mode")
  T.eq("Where to deploy?", data.message, "message")
  T.eq(chat.session_id, data.session_id, "session id")
  T.eq("d1", data.tool_call_id, "tool call")
  T.eq("integer", data.requested_schema.properties.replicas.type, "the JSON Schema as sent")
  local names = vim.tbl_map(function(f)
    return f.name
  end, data.fields)
  T.eq({ "target", "replicas", "note", "notify", "tags" }, names, "fields in the agent's order")
  T.wait_text(chat, "? The agent asks: Where to deploy?")
  T.contains(T.text(chat.bufnr), "for tool call: Deploy the app", "tool call shown")
  T.contains(T.text(chat.bufnr), "Target* (one of: Production, Development)", "field with its choices")
  T.contains(T.text(chat.bufnr), "How many copies", "description shown")
  T.contains(T.text(chat.bufnr), "notify (boolean) = yes", "default shown")

  local ok, err = require("acp").elicitation_respond(data.request_id, {
    action = "accept",
    content = { target = "staging", replicas = 9 },
  })
  T.eq(false, ok, "refused")
  T.contains(err, "`Target` must be one of `prod`, `dev`", "enum problem named")
  T.contains(err, "`replicas` must be at most 3", "bound problem named")
  T.wait_text(chat, "✗ the answer does not fit the form")
  T.eq(1, #require("acp.chat.view.elicitation").for_chat(chat.chat_id), "still open")

  ok, err = require("acp").elicitation_respond(data.request_id, {
    action = "accept",
    content = { target = "prod", replicas = 2, tags = { "a", "c" } },
  })
  T.eq(true, ok, err)
  T.wait_text(chat, [[elicitation: accept {"target":"prod","replicas":2,"tags":["a","c"]}]])
  T.contains(
    T.text(chat.bufnr),
    "✓ The agent asked: Where to deploy?\n  answered: Target = Production, replicas = 2, tags = a, c",
    "note"
  )
  T.eq(nil, T.find_line(chat.bufnr, "? The agent asks"), "prompt gone")
end)

T.test("the inline prompt: `a` fills the form with vim.ui (elicitation.ui), `D` declines", function()
  -- The floating form is tests/e2e/test_e2e_form.lua's.
  require("acp.config").options.elicitation = { ui = "vim.ui" }
  local chat = T.open_chat("ask", dir)
  assert(chat:send({ { type = "text", text = "form please" } }))
  T.wait_text(chat, "? The agent asks: Where to deploy?")
  script_ui({
    function(item)
      return item.value == "dev"
    end, -- target (select)
    function(opts)
      T.contains(opts.prompt, "replicas* (integer, 1..3)", "input prompt")
      return "3"
    end, -- replicas (input)
    function()
      return ""
    end, -- note: left empty
    function(item)
      return item.title == "no"
    end, -- notify (yes/no)
    function(item)
      return item.value == "b"
    end, -- tags: toggle b
    function(item)
      return item.done
    end, -- tags: done
  })
  T.cursor_on(chat, "? The agent asks")
  vim.api.nvim_feedkeys("a", "x", false)
  T.wait_text(chat, [[elicitation: accept {"target":"dev","replicas":3,"notify":false,"tags":["b"]}]])
  T.wait(function()
    return (T.turns[chat.chat_id] or {})[1] ~= nil
  end, "turn end")

  assert(chat:send({ { type = "text", text = "form again" } }))
  T.wait_text(chat, "? The agent asks: Where to deploy?")
  T.cursor_on(chat, "? The agent asks")
  vim.api.nvim_feedkeys("D", "x", false)
  T.wait_text(chat, "elicitation: decline")
  T.truthy(T.find_line(chat.bufnr, "✗ declined: Where to deploy?"), "declined note")
  require("acp.config").options.elicitation = { ui = "form" }
end)

T.test("a URL opens with vim.ui.open and the chat waits for the agent to finish", function()
  local chat = T.open_chat("ask", dir)
  local opened
  local orig = vim.ui.open
  vim.ui.open = function(url)
    opened = url
    return { wait = function() end }, nil
  end
  assert(chat:send({ { type = "text", text = "url please" } }))
  local data = wait_asked(#asked + 1)
  T.eq("url", data.mode, "mode")
  T.eq("https://example.com/authorize", data.url, "url in the autocmd")
  T.eq("auth-1", data.elicitation_id, "elicitation id in the autocmd")
  T.wait_text(chat, "https://example.com/authorize")
  T.cursor_on(chat, "https://example.com/authorize")
  vim.api.nvim_feedkeys("a", "x", false)
  vim.ui.open = orig
  T.eq("https://example.com/authorize", opened, "opened")
  T.wait_text(chat, "✓ done: https://example.com/authorize")
  T.contains(T.text(chat.bufnr), "elicitation: accept", "the agent got the accept")
end)

T.test("cancelling the turn withdraws its open question; a hidden chat notifies", function()
  local chat = T.open_chat("ask", dir)
  chat:hide()
  local notes = {}
  local orig = vim.notify
  vim.notify = function(m, ...)
    notes[#notes + 1] = m
    return orig(m, ...)
  end
  assert(chat:send({ { type = "text", text = "wait please" } }))
  T.wait_text(chat, "? The agent asks: Name?")
  vim.notify = orig
  T.contains(table.concat(notes, "\n"), "is waiting for your answer: Name? (:Acp elicitation to answer)", "notified")
  chat:show()
  vim.api.nvim_set_current_buf(chat.bufnr)
  vim.cmd("Acp cancel")
  T.wait(function()
    return (T.turns[chat.chat_id] or {})[1] ~= nil
  end, "turn end")
  T.wait_text(chat, "✗ question withdrawn: Name?")
  T.eq(0, #require("acp.chat.view.elicitation").for_chat(chat.chat_id), "nothing pending")
end)

T.test("a question asked during the login shows in the opening chat and decides it", function()
  local orig = vim.ui.select
  vim.ui.select = function(items, _, on_choice)
    vim.ui.select = orig
    for _, it in ipairs(items) do
      if (it.id or (it.method and it.method.id)) == "fake-login" then
        return on_choice(it)
      end
    end
    on_choice(items[1])
  end
  local n = #asked
  local chat = assert(require("acp").open({ agent = "login", cwd = dir }))
  local data = wait_asked(n + 1)
  T.eq(nil, data.session_id, "no session yet")
  T.eq(chat.chat_id, data.chat_id, "shown in the chat that is logging in")
  T.wait_text(chat, "? The agent asks: Pick an account")
  local ok, err =
    require("acp").elicitation_respond(data.request_id, { action = "accept", content = { account = "nope" } })
  T.eq(false, ok, "refused")
  T.contains(err, "`account` must be an email address", "format checked")
  T.eq(
    true,
    require("acp").elicitation_respond(data.request_id, {
      action = "accept",
      content = { account = "ada@example.com" },
    })
  )
  T.wait(function()
    return chat.status == "ready"
  end, "session after the login; transcript:\n" .. T.text(chat.bufnr))
end)

T.run()
