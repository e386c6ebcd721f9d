-- The prompt as a user types it: completion after `/` and `@`.
local H = dofile(vim.fn.getcwd() .. "/tests/tui/helpers.lua")

--- The text of the chat's prompt buffer in the Neovim under test.
local function prompt_text(t)
  return t:lua([[
    local chat = require("acp.chat").current()
    return table.concat(vim.api.nvim_buf_get_lines(chat.prompt_buf, 0, -1, false), "\n")
  ]])
end

H.test("typing / and @ completes without inserting the first entry", function()
  local t = H.nvim()
  local ok, err = pcall(function()
    t:type(":Acp")
    t:keys("Enter")
    t:wait_for("Ask demo", "the prompt hint")
    t:wait_for("mode: Code", "the session to start")
    -- The chat opens in Insert mode in the prompt: letters are text.
    t:wait_for("-- INSERT --", "Insert mode in the prompt")
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
  t:kill()
  assert(ok, err)
end)
