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

-- `@selection` offers the last visual selection in a file, also one made
-- before the first chat (the modules load at the first selection only).
vim.g.acp_tracks_selection = true
vim.api.nvim_create_autocmd("ModeChanged", {
  group = vim.api.nvim_create_augroup("acp_context_selection", { clear = true }),
  pattern = { "[vV\x16]*:*" },
  callback = function()
    local buf = vim.api.nvim_get_current_buf()
    if vim.bo[buf].buftype == "" then
      require("acp.chat.context").selection_made(buf)
    end
  end,
})
