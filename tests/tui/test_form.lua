-- An agent's question in a real terminal at 80x24 with an ordinary config:
-- the floating form (acp.chat.view.form) shows every field at once, and typing fills
-- it: a value that does not fit shows its problem on screen and is not sent,
-- the fixed answer reaches the agent.
local H = dofile(vim.fn.getcwd() .. "/tests/tui/helpers.lua")

-- JSON text: the form's fields in this order (a Lua table has none).
local ASK = [[{"turns":[{"match":"card","steps":[{"type":"elicit",
  "message":"How should the card look?",
  "requestedSchema":{"type":"object","properties":{
    "greeting":{"type":"string","title":"Greeting","default":"Hello","maxLength":12},
    "email":{"type":"string","title":"Email","format":"email","description":"Where the card goes"},
    "copies":{"type":"integer","title":"Copies","minimum":1,"maximum":5},
    "language":{"type":"string","title":"Language",
      "oneOf":[{"const":"en","title":"English"},{"const":"fr","title":"French"}]},
    "shout":{"type":"boolean","title":"Shout it","default":false}},
    "required":["greeting","email","language"]},
  "report":false,
  "onAccept":[{"type":"text","text":
    "Card: {{elicitation.greeting}} to {{elicitation.email}} x{{elicitation.copies}} in {{elicitation.language}}, shout {{elicitation.shout}}."}],
  "onDecline":[{"type":"text","text":"No card then."}]}]}]}]]
assert(vim.json.decode(ASK))

H.test("at 80x24 the form shows every field and is filled by typing", function()
  local t = H.nvim({ agents = { ask = ASK }, default = "ask", width = 80, height = 24 })
  local ok, err = pcall(function()
    t:type(":Acp")
    t:keys("Enter")
    t:wait_for("-- INSERT --", "typing in the prompt")
    t:type("a card please")
    t:keys("C-s")
    t:wait_for("? The agent asks:", "the question in the chat")
    t:keys("Escape")
    t:type(":Acp elicitation")
    t:keys("Enter")
    -- Every field, its type, default, required mark and choices, and the
    -- keys, on one 80x24 screen.
    local screen = t:wait_for("[ Submit ]", "the form")
    for _, want in ipairs({
      "The agent asks",
      "How should the card look?",
      "Greeting *",
      "text, up to 12 chars",
      "[Hello",
      "Email *",
      "Where the card goes",
      "Copies",
      "whole number, 1 to 5",
      "Language *",
      "( ) English",
      "( ) French",
      "Shout it",
      "(•) no",
      "[ Decline ]",
      "C-s submit",
    }) do
      H.contains(screen, want, "on screen")
    end
    -- The cursor is in Greeting: replace it; <Tab> goes on typing in Email.
    t:keys("c")
    t:wait_for("-- INSERT --", "editing Greeting")
    t:type("Bonjour")
    t:keys("Tab")
    t:type("not-an-email")
    t:keys("Tab")
    t:type("9")
    t:keys("Enter")
    -- Both problems, each once its key was handled: the email's shows on
    -- <Tab>, the bound under Copies after <Enter> (asserted on the first
    -- screen with the email's, it failed once in CI: <Enter> not yet handled).
    t:wait_for(function(s)
      return s:find("must be an email address", 1, true) ~= nil and s:find("✗ must be at most 5", 1, true) ~= nil
    end, "the email problem under its field and the bound under Copies")
    t:keys("C-s")
    screen = t:wait_for("not sent: fix the fields marked", "submit refused")
    H.not_contains(screen, "Card:", "nothing reached the agent")
    -- Fix the email (the cursor went to the first problem), the copies, pick
    -- French, shout yes.
    t:keys("c")
    t:type("ada@example.com")
    t:keys("Tab", "C-u")
    t:type("2")
    t:keys("Enter")
    t:wait_for(function(s)
      return not s:find("must be", 1, true) and s:find("[2 ", 1, true) ~= nil
    end, "the email and copies fixed")
    H.contains(t:screen(), "✗ is required", "Language still wants a choice")
    t:keys("Tab", "j", "Space", "Tab", "k", "Space")
    t:wait_for("(•) French", "French picked")
    t:wait_for("(•) yes", "shout picked")
    t:keys("C-s")
    screen = t:wait_for("shout true.", "the agent's answer")
    local said = t:lua([[
      local chat = require("acp.chat").current()
      return table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n")
    ]])
    H.contains(said, "Card: Bonjour to ada@example.com x2 in fr, shout true.", "the typed answer reached the agent")
    H.not_contains(screen, "[ Submit ]", "the form closed")
  end)
  if not ok then
    pcall(function()
      io.write(t:screen() .. "\n")
    end)
  end
  t:kill()
  assert(ok, err)
end)
