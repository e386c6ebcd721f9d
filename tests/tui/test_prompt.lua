-- The prompt as a user types it: completion after `/` and `@`.
local H = dofile(vim.fn.getcwd() .. "/tests/tui/helpers.lua")

--- The text of the chat's prompt buffer in the Neovim under test.
local function prompt_text(t)
  return t:lua([[
    local chat = require("acp.chat").current()
    return table.concat(vim.api.nvim_buf_get_lines(chat.prompt_buf, 0, -1, false), "\n")
  ]])
end

--- Opens the demo chat, waits until it is ready with the cursor in its
--- prompt in Insert mode, then runs `setup(t)` and `body(t)`.
---@param setup? fun(t: table)
---@param body fun(t: table)
local function in_demo_chat(setup, body)
  local t = H.nvim()
  local ok, err = pcall(function()
    t:type(":Acp")
    t:keys("Enter")
    t:wait_for("Ask demo", "the prompt hint")
    t:wait_for("mode: Code", "the session to start")
    -- The chat opens in Insert mode in the prompt: letters are text.
    t:wait_for("-- INSERT --", "Insert mode in the prompt")
    -- Once the chat exists (right after `:Acp` it may not yet), before
    -- anything is typed.
    if setup then
      setup(t)
    end
    body(t)
  end)
  t:kill()
  assert(ok, err)
end

--- The completion test, with 'completeopt' as the user's global value
--- (Neovim 0.10, where it cannot be set per buffer) when `global` is set.
local function completion_test(global)
  local setup = global
      and function(t)
        t:lua([[
          local prompt = require("acp.chat.prompt")
          prompt.completeopt_local = false
          local chat = require("acp.chat").current()
          vim.bo[chat.prompt_buf].completeopt = ""
          vim.go.completeopt = "menu,popup"
        ]])
      end
    or nil
  in_demo_chat(setup, function(t)
    t:type("/")
    t:wait_for("Explain a piece of code", "the command menu")
    t:type("explain")
    t:wait_for(function()
      return prompt_text(t) == "/explain"
    end, "the prompt to read /explain")
    t:keys("Escape")
    t:wait_for(function(s)
      return not s:find("Explain a piece of code", 1, true)
    end, "the menu to close")
    t:keys("o")
    t:type("@READ")
    t:wait_for(function()
      return prompt_text(t) == "/explain\n@READ"
    end, "the prompt to read @READ")
    t:keys("Escape")
    H.eq("/explain\n@READ", prompt_text(t), "the prompt")
  end)
end

H.test("typing / and @ completes without inserting the first entry", function()
  completion_test(false)
end)

H.test("the same where 'completeopt' is global (Neovim 0.10)", function()
  completion_test(true)
end)

H.test("a / typed while the agent starts opens the command menu once the commands arrive", function()
  local t = H.nvim()
  local ok, err = pcall(function()
    t:type(":Acp")
    t:keys("Enter")
    -- The prompt takes keys at once (acp.chat.layout.frame), before the session
    -- and the agent's commands (which the backend may send in a batch of
    -- their own, after `session_started`).
    t:wait_for("-- INSERT --", "Insert mode in the prompt")
    t:type("/")
    t:wait_for("Explain a piece of code", "the command menu")
    H.eq("/", prompt_text(t), "nothing inserted from the menu")
  end)
  t:kill()
  assert(ok, err)
end)

H.test("sending with the completion menu open closes the menu", function()
  in_demo_chat(nil, function(t)
    t:type("/explai")
    t:wait_for("Explain a piece of code", "the command menu")
    t:keys("C-s")
    t:wait_for(function()
      return prompt_text(t) == ""
    end, "the prompt to be sent")
    -- The menu of the command just sent stood over the emptied prompt.
    t:wait_for(function(s)
      return not s:find("Explain a piece of code", 1, true)
    end, "the menu to close")
  end)
end)

local UX = {
  turns = {
    { match = "slow", steps = { { type = "text", text = "working hard" }, { type = "waitForCancel" } } },
    { steps = { { type = "text", text = "echo: {{prompt}}" } } },
  },
}

--- Neovim with the `ux` agent as default and a chat open, in its prompt.
local function chat(files)
  local t = H.nvim({ agents = { ux = UX }, default = "ux", files = files, args = files and { "hello.lua" } or nil })
  t:type(":Acp")
  t:keys("Enter")
  t:wait_for("Ask ux", "the prompt hint")
  t:wait_for(function()
    return t:lua([[return require("acp.chat").current().status]]) == "ready"
  end, "the session to start")
  return t
end

H.test("<C-c> in Insert mode cancels the turn and puts queued prompts back", function()
  local t = chat()
  local ok, err = pcall(function()
    t:type("slow please")
    t:keys("C-s")
    t:wait_for("working hard", "the slow answer")
    t:type("the next question")
    t:keys("C-s")
    t:wait_for("queued: 1", "the queued prompt in the winbar")
    t:keys("C-c")
    local screen = t:wait_for("— cancelled —", "the turn cancelled")
    H.contains(screen, "-- INSERT --", "still typing in the prompt")
    H.eq("the next question", prompt_text(t), "the queued prompt is back in the prompt")
  end)
  t:kill()
  assert(ok, err)
end)

H.test(":'<,'>Acp add then typing in the prompt keeps the mention and sends it", function()
  local t = chat({ ["hello.lua"] = 'print("hello")\nprint("world")\nreturn 1' })
  local ok, err = pcall(function()
    t:keys("Escape")
    -- Back to the file (the window left of the chat), select two lines.
    t:keys("C-w", "t")
    t:keys("g", "g", "V", "j")
    t:type(":Acp add")
    t:keys("Enter")
    t:wait_for("@hello.lua#L1-2", "the mention in the prompt")
    -- The prompt is the bottom-right window.
    t:keys("C-w", "b")
    t:keys("i")
    t:type("XYZ explain")
    t:keys("C-s")
    local screen = t:wait_for("echo: ", "the answer")
    H.eq("@hello.lua#L1-2\nXYZ explain", t:lua([[
      local chat = require("acp.chat").current()
      return table.concat(chat.transcript.view:lines(chat.transcript.entries[0]), "\n")
    ]]):match("^(.-)\n↳") or "", "the user message: the text as typed")
    H.contains(screen, "↳ embedded hello.lua#L1-2", "the context was sent")
  end)
  t:kill()
  assert(ok, err)
end)

H.test("<Up> and <Down> on the prompt's edge lines recall earlier prompts, then the draft", function()
  local t = chat()
  local ok, err = pcall(function()
    for _, p in ipairs({ "first question", "second question" }) do
      t:type(p)
      t:keys("C-s")
      t:wait_for("echo: " .. p, "the answer to " .. p)
    end
    t:type("a draft")
    t:keys("Up")
    t:wait_for(function()
      return prompt_text(t) == "second question"
    end, "the last prompt")
    t:keys("Up")
    t:wait_for(function()
      return prompt_text(t) == "first question"
    end, "the one before")
    t:keys("Down", "Down")
    t:wait_for(function()
      return prompt_text(t) == "a draft"
    end, "the draft back")
    t:type("!")
    t:wait_for(function()
      return prompt_text(t) == "a draft!"
    end, "typing goes on at the end, in Insert mode")
  end)
  t:kill()
  assert(ok, err)
end)
