-- The ordinary config of the TUI benchmark (bench/tui.lua): what a user's
-- init.lua has, and nothing the plugin needs.
vim.cmd("syntax on")
vim.cmd("filetype plugin indent on")
vim.o.termguicolors = true
vim.cmd.colorscheme("habamax")
vim.o.number = true
vim.o.laststatus = 2
vim.o.swapfile = false
-- Treesitter highlighting wherever a parser exists (Neovim 0.11 bundles
-- markdown, lua, vim, vimdoc, query, c), as most configs turn it on.
vim.api.nvim_create_autocmd("FileType", {
  callback = function(args)
    pcall(vim.treesitter.start, args.buf)
  end,
})
vim.opt.rtp:prepend(vim.fn.getcwd())
