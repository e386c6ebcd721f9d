---@mod acp.highlights Highlight groups, linked with `default = true` so
--- colorschemes and users can override them; re-applied on ColorScheme.

local M = {}

--- Group name -> group it links to.
---@type table<string,string>
M.links = {
  AcpUserHeader = "Title",
  AcpAgentHeader = "Title",
  AcpThought = "Comment",
  AcpThoughtHeader = "Comment",
  AcpToolPending = "DiagnosticHint",
  AcpToolRunning = "DiagnosticWarn",
  AcpToolDone = "DiagnosticOk",
  AcpToolFailed = "DiagnosticError",
  AcpToolCancelled = "Comment",
  AcpToolKind = "Type",
  AcpToolTitle = "Bold",
  AcpToolContent = "Normal",
  AcpToolOutput = "Comment",
  AcpLocation = "Directory",
  AcpDiffAdd = "DiffAdd",
  AcpDiffDelete = "DiffDelete",
  AcpDiffPath = "Directory",
  AcpPlanHeader = "Title",
  AcpPlanRemoved = "Comment",
  AcpSubagentHeader = "Title",
  AcpPlanPending = "Comment",
  AcpPlanInProgress = "DiagnosticWarn",
  AcpPlanCompleted = "DiagnosticOk",
  AcpPlanPriorityHigh = "DiagnosticError",
  AcpPlanPriorityMedium = "DiagnosticWarn",
  AcpPlanPriorityLow = "Comment",
  AcpPermissionTitle = "WarningMsg",
  AcpPermissionKey = "Special",
  AcpPermissionAllow = "DiagnosticOk",
  AcpPermissionReject = "DiagnosticError",
  AcpPermissionUnknown = "DiagnosticWarn",
  AcpPermissionAnswer = "Comment",
  AcpNote = "Comment",
  AcpError = "ErrorMsg",
  AcpStderr = "Comment",
  AcpUnknown = "Comment",
  AcpWinbar = "WinBar",
  AcpWinbarBusy = "DiagnosticWarn",
  AcpReviewAdd = "DiffAdd",
  AcpReviewDelete = "DiffDelete",
  AcpReviewSignAdd = "Added",
  AcpReviewSignChange = "Changed",
  AcpReviewSignDelete = "Removed",
  AcpReviewSignConflict = "DiagnosticWarn",
  AcpReviewConflictMarker = "DiffText",
  AcpReviewConflictOurs = "DiffChange",
  AcpReviewConflictTheirs = "DiffAdd",
  AcpReviewPreviewAdd = "DiffAdd",
  AcpReviewPreviewDelete = "DiffDelete",
  -- Markdown of the transcript (acp.markdown): the treesitter markup groups,
  -- so colorschemes style the chat as they style markdown files.
  AcpMdH1 = "@markup.heading.1",
  AcpMdH2 = "@markup.heading.2",
  AcpMdH3 = "@markup.heading.3",
  AcpMdH4 = "@markup.heading.4",
  AcpMdH5 = "@markup.heading.5",
  AcpMdH6 = "@markup.heading.6",
  AcpMdBold = "@markup.strong",
  AcpMdItalic = "@markup.italic",
  AcpMdBoldItalic = "@markup.strong",
  AcpMdStrike = "@markup.strikethrough",
  AcpMdCodeSpan = "@markup.raw",
  AcpMdCode = "ColorColumn",
  AcpMdCodeInfo = "@label",
  AcpMdLink = "@markup.link.label",
  AcpMdTableBorder = "@punctuation.special",
  AcpMdTableHead = "@markup.heading",
  AcpMdRule = "@punctuation.special",
  AcpMdQuote = "@markup.quote",
  AcpMdQuoteMarker = "@punctuation.special",
  AcpMdBullet = "@markup.list",
}

--- Define every group (links with default = true).
function M.apply()
  for group, link in pairs(M.links) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
  end
end

local did_setup = false

--- Apply now and on every ColorScheme (which clears highlight groups).
function M.setup()
  M.apply()
  if did_setup then
    return
  end
  did_setup = true
  vim.api.nvim_create_autocmd("ColorScheme", {
    group = vim.api.nvim_create_augroup("acp_highlights", { clear = true }),
    callback = M.apply,
  })
end

return M
