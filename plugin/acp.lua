-- acp.nvim: the :Acp command; everything else loads on first use.
if vim.g.loaded_acp then
  return
end
vim.g.loaded_acp = true

if vim.fn.has("nvim-0.10") ~= 1 then
  vim.notify("acp.nvim needs Neovim >= 0.10", vim.log.levels.ERROR)
  return
end

require("acp.commands").setup()
