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

local project = root .. "/.cache/demo-project"
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
  backend = { cmd = { root .. "/target/release/acp-nvim" } },
  log_level = "info",
})

vim.api.nvim_create_autocmd("VimEnter", {
  once = true,
  -- The files opened here get their BufReadPost (filetype, and acp.filestamp
  -- remembering when Neovim read them: without it the first :write after the
  -- tour's edit asked "changed since reading it").
  nested = true,
  callback = function()
    vim.cmd.edit(project .. "/README.md")
    vim.cmd.split(project .. "/hello.lua")
    require("acp").open({ agent = "demo", cwd = project })
    vim.notify(
      "acp.nvim demo: type a prompt and press <CR> (normal mode) or <C-s> (insert mode). "
        .. "The agent's edits are reviewed in the real buffers: :Acp review lists them. :help acp",
      vim.log.levels.INFO
    )
  end,
})
