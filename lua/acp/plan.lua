---@mod acp.plan Rendering of the agent's plan as a checklist.

local M = {}

---@class acp.PlanEntry
---@field content string
---@field priority string high|medium|low (unknown values kept)
---@field status string pending|in_progress|completed (unknown values kept)

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

return M
