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
  -- The view of a turn's changes (acp.edits.review.changes).
  AcpChangesTitle = "Title",
  AcpChangesHelp = "Comment",
  AcpChangesFile = "Directory",
  AcpChangesCount = "Comment",
  AcpChangesHunk = "Special",
  -- The form of an agent's question (acp.chat.view.form).
  AcpFormLabel = "Title",
  AcpFormInput = "Pmenu",
  AcpFormPicked = "DiagnosticOk",
  AcpFormBorder = "FloatBorder",
  -- Markdown of the transcript (acp.chat.view.markdown): the treesitter markup groups,
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

--- The colours a group resolves to (links followed).
---@param name string
---@return table
local function resolved(name)
  local ok, hl = pcall(vim.api.nvim_get_hl, 0, { name = name, link = false })
  return ok and hl or {}
end

--- The first three heading levels, drawn apart from each other and from the
--- message headers (Title): with most colorschemes (habamax, the default)
--- every `@markup.heading.N` is Title, so H1, H2, H3 and "You" looked alike.
--- A colorscheme that styles the levels apart keeps its colours.
local function headings()
  local title = resolved("Title")
  local levels = {}
  for i = 1, 3 do
    levels[i] = resolved("@markup.heading." .. i)
  end
  local apart = not vim.deep_equal(levels[1], levels[2])
    and not vim.deep_equal(levels[2], levels[3])
    and not vim.deep_equal(levels[1], title)
  if apart then
    return
  end
  local function fg(name)
    return resolved(name).fg or title.fg
  end
  ---@type table<string, vim.api.keyset.highlight>
  local own = {
    AcpMdH1 = { fg = title.fg, bold = true, underline = true },
    AcpMdH2 = { fg = fg("Function"), bold = true },
    AcpMdH3 = { fg = fg("Type"), bold = true, italic = true },
  }
  for group, attrs in pairs(own) do
    attrs.default = true
    vim.api.nvim_set_hl(0, group, attrs)
  end
end

--- Define every group (links with default = true).
function M.apply()
  headings()
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
