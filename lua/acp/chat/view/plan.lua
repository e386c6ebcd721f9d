---@mod acp.chat.view.plan Rendering of the agent's plan as a checklist.

local M = {}

-- acp.PlanEntry is annotated in acp.rpc.protocol.

local STATUS = {
  pending = { "[ ]", "AcpPlanPending" },
  in_progress = { "[~]", "AcpPlanInProgress" },
  completed = { "[x]", "AcpPlanCompleted" },
}

local PRIORITY = {
  high = "AcpPlanPriorityHigh",
  medium = "AcpPlanPriorityMedium",
  low = "AcpPlanPriorityLow",
}

--- Lines and highlights of a plan.
---@param entries acp.PlanEntry[]
---@return string[] lines, acp.Highlight[] hls
function M.render(entries)
  local done = 0
  for _, e in ipairs(entries) do
    if e.status == "completed" then
      done = done + 1
    end
  end
  local lines = { ("Plan (%d/%d done)"):format(done, #entries) }
  local hls = { { 0, 0, -1, "AcpPlanHeader" } }
  for _, e in ipairs(entries) do
    local status = tostring(e.status or "pending")
    local s = STATUS[status] or { "[?]", "AcpPlanPending" }
    local box = s[1]
    local text = tostring(e.content or ""):gsub("\n", " ")
    local prio = tostring(e.priority or "")
    local line = "  " .. box .. " " .. text
    local row = #lines
    hls[#hls + 1] = { row, 2, 2 + #box, s[2] }
    if status == "completed" then
      hls[#hls + 1] = { row, 3 + #box, -1, "AcpPlanCompleted" }
    end
    if prio ~= "" then
      local label = " (" .. prio .. ")"
      hls[#hls + 1] = { row, #line, #line + #label, PRIORITY[prio] or "AcpPlanPriorityLow" }
      line = line .. label
    end
    if not STATUS[status] then
      line = line .. " [" .. status .. "]"
    end
    lines[#lines + 1] = line
  end
  if #entries == 0 then
    lines[#lines + 1] = "  (empty)"
  end
  return lines, hls
end

---@class acp.PlanDocument
---@field plan_id string
---@field format "items"|"markdown"
---@field entries? acp.PlanEntry[] items
---@field content? string markdown: the whole plan
---@field path? string markdown: the absolute path of the plan's file

--- The first Markdown heading of a document, as a title.
---@param content string
---@return string?
local function heading(content)
  for line in (content .. "\n"):gmatch("([^\n]*)\n") do
    local h = line:match("^#+%s+(.-)%s*#*%s*$")
    if h and h ~= "" then
      return h
    end
  end
end

--- Lines, highlights and line actions of one plan of `plan_update`: a
--- checklist as `render` draws it, or the Markdown document under a header
--- line (drawn with the chat's markdown renderer: the block is a markdown
--- block). With a `path`, the header opens the plan's file (keymaps.jump).
---@param plan acp.PlanDocument
---@return string[] lines, acp.Highlight[] hls, table<integer, table> actions
function M.render_document(plan)
  if plan.format ~= "markdown" then
    local lines, hls = M.render(plan.entries or {})
    return lines, hls, {}
  end
  local content = type(plan.content) == "string" and plan.content or ""
  -- The document's own heading follows (drawn as markdown): not repeated.
  local header = "Plan document"
  local actions = {}
  if type(plan.path) == "string" and plan.path ~= "" then
    header = header .. "  (" .. vim.fn.fnamemodify(plan.path, ":~:.") .. ")"
    actions[0] = { type = "location", path = plan.path }
  end
  local lines = { header }
  local body = vim.split(content, "\n", { plain = true })
  while #body > 0 and body[#body] == "" do
    body[#body] = nil
  end
  vim.list_extend(lines, body)
  return lines, { { 0, 0, -1, "AcpPlanHeader" } }, actions
end

--- The one line left of a removed plan (`plan_removed`).
---@param plan acp.PlanDocument?
---@return string[] lines, acp.Highlight[] hls
function M.render_removed(plan)
  local title = "Plan"
  if plan and plan.format == "markdown" and type(plan.content) == "string" then
    title = "Plan · " .. (heading(plan.content) or "document")
  end
  return { title .. " (removed)" }, { { 0, 0, -1, "AcpPlanRemoved" } }
end

return M
