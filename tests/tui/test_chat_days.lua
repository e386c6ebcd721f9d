-- The chat as users live it, round three (issue 29): what only shows on
-- screen. Completion that takes nothing unless picked, the layout after a
-- terminal resize, the preview of a new file, `:q` in a second chat.
local H = dofile(vim.fn.getcwd() .. "/tests/tui/helpers.lua")

local UX = {
  turns = {
    {
      match = "propose a file",
      steps = {
        {
          type = "requestPermission",
          toolCall = {
            toolCallId = "pf-1",
            title = "Write born.txt",
            kind = "edit",
            status = "pending",
            content = { { type = "diff", path = "{{cwd}}/born.txt", newText = "first proposed\nsecond proposed\n" } },
          },
          onAllow = { { type = "text", text = "allowed" } },
          onReject = { { type = "text", text = "rejected" } },
        },
      },
    },
    { steps = { { type = "text", text = "echo: {{prompt}}" } } },
  },
}

--- The text of the current chat's prompt.
local function prompt_text(t)
  return t:lua([[
    local chat = require("acp.chat").current()
    return table.concat(vim.api.nvim_buf_get_lines(chat.prompt_buf, 0, -1, false), "\n")
  ]])
end

--- Neovim in tmux with a ready `ux` chat (or the demo), in its prompt.
local function with_chat(opts, body)
  opts = opts or {}
  local t =
    H.nvim({ agents = { ux = UX }, default = opts.demo and "demo" or "ux", width = opts.width, height = opts.height })
  local ok, err = pcall(function()
    t:type(":Acp")
    t:keys("Enter")
    t:wait_for(function()
      local c = t:lua([[local c = require("acp.chat").current() return c and c.status]])
      return c == "ready"
    end, "the chat to be ready")
    t:wait_for("-- INSERT --", "typing in the prompt")
    body(t)
  end)
  t:kill()
  assert(ok, err)
end

H.test(
  "<CR> with the menu open inserts a line break, never an entry not picked; / mid-sentence opens nothing",
  function()
    with_chat({ demo = true }, function(t)
      t:wait_for("mode: Code", "the demo's commands to arrive")
      t:type("/")
      t:wait_for("Explain a piece of code", "the command menu")
      t:keys("Enter")
      -- Neovim closes a menu with nothing selected on <CR> (or breaks the
      -- line): either way no command the user did not pick.
      t:wait_for(function(s)
        return not s:find("Explain a piece of code", 1, true)
      end, "the menu to close")
      local text = prompt_text(t)
      H.truthy(text == "/" or text == "/\n", "nothing inserted: " .. vim.inspect(text))
      t:keys("C-u", "BSpace", "C-u")
      t:wait_for(function()
        return prompt_text(t) == ""
      end, "the prompt emptied")
      t:type("files under /")
      local screen = t:settle(2000, 400)
      H.not_contains(screen, "Explain a piece of code", "no command menu in a sentence")
      t:keys("Enter")
      t:wait_for(function()
        return prompt_text(t) == "files under /\n"
      end, "the text as typed")
    end)
  end
)

H.test("the chat column follows the terminal's size", function()
  with_chat({ width = 200, height = 50 }, function(t)
    local function width()
      return t:lua([[
        local chat = require("acp.chat").current()
        return vim.api.nvim_win_get_width(vim.fn.win_findbuf(chat.bufnr)[1])
      ]])
    end
    H.eq(80, width(), "0.4 of 200 columns")
    t:_tmux({ "resize-window", "-t", t.name, "-x", "80", "-y", "24" })
    t:wait_for(function()
      return t:lua("return vim.o.columns") == 80
    end, "Neovim at 80 columns")
    t:wait_for(function()
      return width() == 32
    end, "0.4 of 80 columns, not " .. width())
    t:_tmux({ "resize-window", "-t", t.name, "-x", "200", "-y", "50" })
    t:wait_for(function()
      return t:lua("return vim.o.columns") == 200
    end, "Neovim at 200 columns")
    t:wait_for(function()
      return width() == 80
    end, "0.4 of 200 columns again, not " .. width())
  end)
end)

H.test("gd on a proposed new file shows its lines on screen", function()
  with_chat(nil, function(t)
    t:type("propose a file")
    t:keys("C-s")
    t:wait_for("preview the change in its buffer", "the permission request")
    t:keys("Escape")
    t:lua([[
      local chat = require("acp.chat").current()
      local win = vim.fn.win_findbuf(chat.bufnr)[1]
      vim.api.nvim_set_current_win(win)
      for i, l in ipairs(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)) do
        if l:find("Write born.txt", 1, true) then
          vim.api.nvim_win_set_cursor(win, { i, 0 })
          break
        end
      end
    ]])
    t:keys("g", "d")
    local screen = t:wait_for("second proposed", "the proposed lines on screen")
    H.contains(screen, "first proposed", "both lines")
  end)
end)

H.test(":q in a second chat's transcript closes its prompt; :Acp chats brings it back alone", function()
  with_chat(nil, function(t)
    t:keys("Escape")
    t:type(":Acp new --split")
    t:keys("Enter")
    t:wait_for(function()
      return t:lua("local c = require('acp.chat').list[2] return c and c.status") == "ready"
    end, "chat 2 ready")
    t:keys("Escape")
    -- Into chat 2's transcript, and :q there.
    t:lua([[
      local chat = require("acp.chat").list[2]
      vim.api.nvim_set_current_win(vim.fn.win_findbuf(chat.bufnr)[1])
    ]])
    t:type(":q")
    t:keys("Enter")
    t:wait_for(function()
      return #t:lua("return vim.fn.win_findbuf(require('acp.chat').list[2].prompt_buf)") == 0
    end, "chat 2's prompt closed with its transcript")
    H.eq(3, t:lua("return #vim.api.nvim_tabpage_list_wins(0)"), "the editor window and chat 1")
    t:type(":Acp chats")
    t:keys("Enter")
    t:wait_for("acp.nvim: chats", "the chat picker")
    t:keys("2", "Enter")
    t:wait_for(function()
      return #t:lua("return vim.fn.win_findbuf(require('acp.chat').list[2].bufnr)") == 1
    end, "chat 2 shown")
    local screen = t:settle(2000)
    H.eq(3, t:lua("return #vim.api.nvim_tabpage_list_wins(0)"), "chat 2 in the chat windows, no extra window")
    H.eq(1, H.count(screen, "Ask ux"), "one prompt on screen:\n" .. screen)
  end)
end)

H.test("offline, :Acp agents lists the bundled agents at once with a one-line notice, twice", function()
  local home = H.tmpdir()
  -- A port nothing listens on: the fetch fails at once.
  local init = home .. "/init.lua"
  vim.fn.writefile({
    ("dofile(%q)"):format(H.root .. "/tests/tui/init.lua"),
    'require("acp.config").options.registry = { url = "http://127.0.0.1:9/registry.json" }',
  }, init)
  local t = H.nvim({ width = 80, height = 24, init = init })
  local ok, err = pcall(function()
    for round = 1, 2 do
      t:type(":Acp agents")
      t:keys("Enter")
      local screen = t:wait_for("ACP registry agents", "the picker, round " .. round)
      H.not_contains(screen, "Press ENTER", "no hit-Enter prompt before the list")
      t:keys("Escape")
      t:wait_for(function(s)
        return not s:find("ACP registry agents", 1, true)
      end, "the picker closed")
      local messages = t:lua([[return vim.api.nvim_exec2("messages", { output = true }).output]])
      local last = vim.split(messages, "\n", { trimempty = true })
      H.contains(last[#last] or "", "bundled list shown", "which list, round " .. round)
      H.truthy(vim.fn.strdisplaywidth(last[#last]) <= 68, "one line at 80 columns: " .. last[#last])
    end
    -- The backend's log has the reason, and one fetch: the second listing
    -- used the remembered failure.
    local log = table.concat(vim.fn.readfile(t:lua("return require('acp.rpc.backend').log_file()")), "\n")
    H.eq(1, H.count(log, "agent registry not fetched"), "one fetch:\n" .. log)
    H.contains(log, "registry unreachable", "the remembered failure")
  end)
  t:kill()
  vim.fn.delete(home, "rf")
  assert(ok, err)
end)
