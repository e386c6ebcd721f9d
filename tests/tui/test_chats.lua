-- Several chats: a new chat takes the windows of the one shown (no narrow
-- columns), `:Acp chats` brings any back, `--split` puts one beside.
local H = dofile(vim.fn.getcwd() .. "/tests/tui/helpers.lua")

local ECHO = { turns = { { steps = { { type = "text", text = "echo: {{prompt}}" } } } } }

local function ready(t, n)
  t:wait_for(function()
    return t:lua("local c = require('acp.chat').list[...] return c and c.status", n) == "ready"
  end, "chat " .. n .. " ready")
end

local function windows(t)
  return t:lua("return #vim.api.nvim_tabpage_list_wins(0)")
end

H.test("a new chat replaces the one shown; :Acp chats switches; --split adds a column", function()
  local t = H.nvim({ agents = { ux = ECHO }, default = "ux" })
  local ok, err = pcall(function()
    t:type(":Acp")
    t:keys("Enter")
    ready(t, 1)
    t:type("first chat here")
    t:keys("C-s")
    t:wait_for("echo: first chat here", "chat 1 answers")
    H.eq(3, windows(t), "the editor window, the transcript, the prompt")
    t:keys("Escape")
    t:type(":Acp new")
    t:keys("Enter")
    ready(t, 2)
    local screen = t:wait_for(function(s)
      return not s:find("echo: first chat here", 1, true)
    end, "chat 2 in chat 1's windows")
    H.eq(1, H.count(screen, "Ask ux"), "one prompt on screen")
    H.eq(3, windows(t), "no new column")
    t:wait_for("-- INSERT --", "typing in chat 2's prompt")
    t:keys("Escape")
    t:type(":Acp chats")
    t:keys("Enter")
    t:wait_for("acp.nvim: chats", "the chat picker")
    t:keys("1", "Enter")
    t:wait_for("echo: first chat here", "chat 1 back")
    H.eq(3, windows(t), "still no new column")
    t:keys("Escape")
    t:type(":Acp new --split")
    t:keys("Enter")
    ready(t, 3)
    screen = t:wait_for(function(s)
      return H.count(s, "Ask ux") == 2 and s:find("echo: first chat here", 1, true) ~= nil
    end, "chat 3 beside chat 1")
    H.eq(5, windows(t), "a second chat column")
  end)
  t:kill()
  assert(ok, err)
end)
