-- `:Acp` loads only what the first screen needs (issue #30: the command's
-- time was mostly module loading): its windows are drawn before the chat's
-- modules load. Run in a fresh Neovim, as a user's first
-- `:Acp` is: the modules loaded when the command returns.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

--- The acp modules loaded in a fresh Neovim once `:Acp` returned.
---@return table<string, boolean>
local function loaded_by_acp()
  local out = dir .. "/loaded.json"
  local script = dir .. "/probe.lua"
  T.write_file(
    script,
    ([[
vim.opt.rtp:prepend(%q)
dofile(%q)
local wins = #vim.api.nvim_list_wins()
vim.cmd("Acp")
local names = {}
for name in pairs(package.loaded) do
  if name:match("^acp") then
    names[#names + 1] = name
  end
end
local after = { wins = #vim.api.nvim_list_wins() - wins, winbars = {} }
for _, w in ipairs(vim.api.nvim_list_wins()) do
  after.winbars[#after.winbars + 1] = vim.wo[w].winbar
end
local prompt_buf = vim.api.nvim_get_current_buf()
vim.wait(5000, function()
  return package.loaded["acp.chat"] and require("acp.chat").current() ~= nil
end, 5)
local chat = require("acp.chat").current()
after.chat = chat ~= nil and chat.prompt_buf == prompt_buf
names = { names = names, after = after }
vim.fn.writefile({ vim.json.encode(names) }, %q)
vim.cmd("qall!")
]]):format(T.root, T.root .. "/plugin/acp.lua", out)
  )
  local res = vim
    .system({ vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", script }, {
      text = true,
      cwd = dir,
    })
    :wait(60000)
  T.eq(0, res.code, "the probe ran: " .. tostring(res.stderr))
  local got = vim.json.decode(T.read_file(out))
  local set = {}
  for _, name in ipairs(got.names) do
    set[name] = true
  end
  return set, got.after
end

T.test(
  ":Acp draws the chat's windows at once and loads the chat after the redraw; no module of tool calls, plans, the review or the backend",
  function()
    local loaded, after = loaded_by_acp()
    T.eq(2, after.wins, "the transcript and prompt windows are there when the command returns")
    T.contains(table.concat(after.winbars, "|"), "starting…", "saying the agent is starting")
    for _, name in ipairs({ "acp.chat", "acp.transcript", "acp.view", "acp.markdown", "acp.highlights", "acp.review" }) do
      T.truthy(not loaded[name], name .. " loads after the first redraw")
    end
    T.truthy(after.chat, "then the chat takes the windows' buffers")
    for _, name in ipairs({
      "acp.tool_call",
      "acp.plan",
      "acp.subagent",
      "acp.context",
      "acp.review.render",
      "acp.review.actions",
      "acp.backlog",
      "acp.backend",
      "acp.build",
    }) do
      T.truthy(not loaded[name], name .. " waits for its first use")
    end
  end
)

T.run()
