-- An ordinary user config for the terminal tests: syntax and filetype
-- plugins on, a colorscheme, acp.nvim from this checkout with the debug
-- backend and fake agents named by the test (ACP_TUI_AGENTS: a JSON object
-- name -> scenario path; ACP_TUI_DEFAULT: the default agent).
local root = assert(vim.env.ACP_TEST_ROOT, "ACP_TEST_ROOT")
vim.opt.runtimepath:prepend(root)
vim.cmd("syntax on")
vim.cmd("filetype plugin indent on")
vim.cmd.colorscheme("habamax")
vim.opt.termguicolors = true
vim.opt.number = true
vim.opt.swapfile = false
vim.opt.shortmess:append("I")

local agents = {}
local spec = vim.env.ACP_TUI_AGENTS
if spec and spec ~= "" then
  for name, path in pairs(vim.json.decode(spec)) do
    agents[name] = { cmd = { root .. "/target/debug/acp-fake-agent", "--scenario", path } }
  end
end
agents.demo = { cmd = { root .. "/target/debug/acp-fake-agent" } }
require("acp").setup({
  backend = { cmd = { root .. "/target/debug/acp-nvim" } },
  agents = agents,
  default_agent = vim.env.ACP_TUI_DEFAULT or "demo",
  log_level = "debug",
})
