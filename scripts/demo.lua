-- `make demo`: a clean Neovim with acp.nvim loaded from this checkout, chatting with
-- the bundled demo agent in a scratch project (so the demo's edits land there, not in
-- your checkout). The agent edits hello.lua there on disk, to show edit review. Run through `make demo`, which builds the release binaries first.
local root = vim.fn.fnamemodify(debug.getinfo(1, "S").source:sub(2), ":p:h:h")
vim.opt.runtimepath:prepend(root)
vim.opt.termguicolors = true
vim.opt.number = true
vim.opt.laststatus = 3
-- A scratch session: no swap files, so an earlier demo that was killed never
-- stops this one with an "ATTENTION" prompt.
vim.opt.swapfile = false

-- `:help acp` (the welcome message points there): a clean Neovim has no
-- tags for this checkout's doc/ (lazy.nvim and packadd generate them), so
-- generate them here (doc/tags is ignored by git).
pcall(vim.cmd.helptags, vim.fn.fnameescape(root .. "/doc"))
-- The build the demo runs: release (`make demo`); the terminal tests run the
-- debug build they just built.
local profile = vim.env.ACP_DEMO_PROFILE or "release"

local project = vim.env.ACP_DEMO_PROJECT or (root .. "/.cache/demo-project")
vim.fn.mkdir(project, "p")
if vim.fn.filereadable(project .. "/README.md") == 0 then
  vim.fn.writefile({
    "# Demo project",
    "",
    "A scratch project for the acp.nvim demo. The demo agent reads this file,",
    "asks before it writes `acp-demo.txt` next to it, and lists this directory.",
  }, project .. "/README.md")
end
-- The demo agent edits this file on disk itself (as Claude does), so the tour
-- shows the change reviewed in the real buffer. Reset each time: the tour
-- edits the original text.
vim.fn.writefile({
  "local function greet(name)",
  '  return "Hello, " .. name',
  "end",
  "",
  'print(greet("world"))',
}, project .. "/hello.lua")
vim.cmd.cd(project)

require("acp").setup({
  default_agent = "demo",
  agents = { demo = { cmd = { root .. "/target/" .. profile .. "/acp-fake-agent" } } },
  backend = { cmd = { root .. "/target/" .. profile .. "/acp-nvim" } },
  log_level = "info",
})

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  -- The files opened here get their BufReadPost (filetype, and acp.edits.filestamp
  -- remembering when Neovim read them: without it the first :write after the
  -- tour's edit asked "changed since reading it").
  nested = true,
  callback = function()
    vim.cmd.edit(project .. "/README.md")
    vim.cmd.split(project .. "/hello.lua")
    local chat = require("acp").open({ agent = "demo", cwd = project })
    -- In the transcript: a message in the command line was hidden at once
    -- by "-- INSERT --" (and one wider than the screen stopped the demo at
    -- a hit-Enter prompt).
    if chat then
      chat.transcript.view:batch(function()
        chat.transcript:note("Welcome to the acp.nvim demo: type a prompt and send it with <C-s>. Help: :help acp")
      end)
    end
  end,
})
