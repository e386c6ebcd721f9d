-- `:Acp` loads only what the first screen needs (issue #30: the command's
-- time is mostly module loading). Run in a fresh Neovim, as a user's first
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
vim.cmd("Acp")
local names = {}
for name in pairs(package.loaded) do
  if name:match("^acp") then
    names[#names + 1] = name
  end
end
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
  local set = {}
  for _, name in ipairs(vim.json.decode(T.read_file(out))) do
    set[name] = true
  end
  return set
end

T.test(":Acp loads no module of tool calls, plans, subagents, mentions, the review or the backend", function()
  local loaded = loaded_by_acp()
  T.truthy(loaded["acp.chat"] and loaded["acp.transcript"], "the chat's own modules are loaded")
  for _, name in ipairs({
    "acp.tool_call",
    "acp.plan",
    "acp.subagent",
    "acp.context",
    "acp.review.render",
    "acp.review.actions",
    "acp.backlog",
    -- Started after the window is drawn; finding the demo agent needs
    -- neither (acp.binary).
    "acp.backend",
    "acp.build",
  }) do
    T.truthy(not loaded[name], name .. " waits for its first use")
  end
end)

T.run()
