---@mod acp.chat.view.tool_call Rendering of one tool call block, and the actions on its
--- lines (open a diff, jump to a location).

local sanitize = require("acp.sanitize")
local util = require("acp.util")
local open = require("acp.chat.view.open")

local M = {}

--- Status -> icon and highlight.
M.STATUS = {
  pending = { "○", "AcpToolPending" },
  in_progress = { "◐", "AcpToolRunning" },
  completed = { "✓", "AcpToolDone" },
  failed = { "✗", "AcpToolFailed" },
  cancelled = { "⊘", "AcpToolCancelled" },
}

--- Most lines of text content shown in a tool call before eliding.
M.MAX_TEXT_LINES = 12
--- Most lines of terminal output shown (the newest ones).
M.MAX_TERMINAL_LINES = 15

---@class acp.TerminalState
---@field output string
---@field command? string the command line, from the terminal's `started` event
---@field exit_status? table {exit_code?, signal?}
---@field released boolean
---@field truncated boolean
---@field agent_run? boolean run by the agent itself, reported in `_meta`

---@class acp.ToolCallContext
---@field permission? acp.PermissionRequest pending request for this tool call
---@field notes? string[] one-line notes (answers, auto-allow)
---@field terminals table<string, acp.TerminalState>
---@field cwd? string the chat's workspace: paths under it are shown relative
---@field subagents? table<string, acp.SubagentView> the chat's child sessions, to name the ones a call links to
---@field subagent_name? fun(info: acp.Subagent): string a child's name (acp.chat.subagent's, which requires this module)

--- Id of a tool call state.
---@param tc table
---@return string?
function M.id(tc)
  return tc.tool_call_id or tc.id
end

local function content_summary(block)
  local t = block.type
  if t == "text" then
    return block.text or ""
  elseif t == "image" then
    return ("[image %s]"):format(block.mime_type or "")
  elseif t == "audio" then
    return ("[audio %s]"):format(block.mime_type or "")
  elseif t == "resource_link" then
    return ("[%s](%s)"):format(block.name or "link", block.uri or "")
  elseif t == "resource" then
    local r = block.resource or {}
    local text = r.text
    if text then
      return text
    end
    return ("[resource %s]"):format(r.uri or "")
  end
  return ("[%s content] %s"):format(t or "unknown", util.json_oneline(block, 120))
end

--- Text of a content block as shown in messages (non-text blocks summarized).
---@param block table
---@return string
function M.content_text(block)
  return content_summary(block)
end

--- Text of a list of content blocks (non-text blocks summarized), as the
--- transcript and a subagent's block draw a message.
---@param content table[]?
---@return string
function M.contents_text(content)
  local parts = {}
  for _, c in ipairs(content or {}) do
    parts[#parts + 1] = content_summary(c)
  end
  return table.concat(parts, "")
end

--- Final tool call statuses: no more output will come.
local FINAL = { completed = true, failed = true, cancelled = true }

local function terminal_status(term, status)
  if not term then
    -- A loaded session replays the tool call, not its terminal.
    return FINAL[status] and "output not kept" or "waiting for output"
  end
  local es = term.exit_status
  if es then
    local code = es.exit_code
    local sig = es.signal
    if sig and FINAL[sig] then
      return sig
    end
    if sig then
      return "killed by " .. tostring(sig)
    end
    return "exited " .. tostring(code or "?")
  end
  if term.released then
    return "released"
  end
  return "running"
end

--- The terminal an agent ran itself for a tool call (reported in `_meta`),
--- in the shape of a client terminal's state; nil when it reported none.
---@param tc table
---@param id string the terminal id of the tool call's content
---@return acp.TerminalState?
function M.agent_terminal(tc, id)
  local at = tc.agent_terminal
  if type(at) ~= "table" or at.terminal_id ~= id then
    return nil
  end
  local exit = type(at.exit) == "table" and at.exit or nil
  if not exit and FINAL[tc.status] then
    -- No `terminal_exit` (codex-acp's reads): the exit code of rawOutput,
    -- else the call's own end.
    local code = type(tc.raw_output) == "table" and tonumber(tc.raw_output.exit_code) or nil
    exit = { exit_code = code, signal = code == nil and tc.status or nil }
  end
  return {
    agent_run = true,
    -- A v2 agent's `terminal_update` names the command.
    command = type(at.command) == "string" and sanitize.line(at.command:gsub("\n", " "), 2000) or nil,
    output = type(at.output) == "string" and at.output or "",
    truncated = at.truncated == true,
    exit_status = exit and { exit_code = exit.exit_code, signal = exit.signal } or nil,
    released = false,
  }
end

--- The shell command of a tool call, from its raw input (`command` as a
--- string, as Claude sends it, or an argv list, as Codex does).
---@param tc table
---@return string?
function M.command(tc)
  local input = tc.raw_input
  if type(input) ~= "table" then
    return nil
  end
  local cmd = input.command or input.cmd
  if type(cmd) == "string" and cmd ~= "" then
    return sanitize.line(cmd:gsub("\n", " "), 2000)
  end
  if type(cmd) == "table" and #cmd > 0 then
    local words = {}
    for _, w in ipairs(cmd) do
      words[#words + 1] = tostring(w)
    end
    return sanitize.line(table.concat(words, " "), 2000)
  end
end

--- Lines, highlights and line actions of a tool call block.
---@param tc acp.ToolCall|acp.ToolCallFields the tool call state
---@param ctx acp.ToolCallContext
---@return string[] lines, acp.Highlight[] hls, table<integer, table> actions, integer[][] md row ranges {first, last} of text content, to draw as markdown
function M.render(tc, ctx)
  local lines, hls, actions = {}, {}, {}
  local function add(line, hl, hl_from)
    lines[#lines + 1] = line
    if hl then
      hls[#hls + 1] = { #lines - 1, hl_from or 0, -1, hl }
    end
    return #lines - 1
  end

  local status = tc.status or "pending"
  local s = M.STATUS[status] or { "?", "AcpToolPending" }
  local function shown(path)
    return util.display_path(path, ctx.cwd)
  end
  local command = M.command(tc)
  local kind = sanitize.line(tc.kind or "other", 40)
  local title = sanitize.line(tc.title or M.id(tc) or "Tool call", 400)
  local header = ("%s %s · %s"):format(s[1], kind, title)
  if not M.STATUS[status] then
    header = header .. " [" .. sanitize.line(status, 40) .. "]"
  end
  add(header)
  hls[#hls + 1] = { 0, 0, #s[1], s[2] }
  hls[#hls + 1] = { 0, #s[1] + 1, #s[1] + 1 + #kind, "AcpToolKind" }

  local function add_terminal(id, term)
    local shown_command = command or (term and term.command)
    if shown_command then
      add(("  $ %s (%s)"):format(shown_command, terminal_status(term, status)), "AcpToolKind")
    elseif term and term.agent_run then
      -- codex-acp sends no command line for the ones it titles itself.
      add(("  output (%s)"):format(terminal_status(term, status)), "AcpToolKind")
    else
      add(("  $ terminal %s (%s)"):format(id, terminal_status(term, status)), "AcpToolKind")
    end
    if term and term.output ~= "" then
      local out = util.split_lines(term.output)
      if out[#out] == "" then
        out[#out] = nil
      end
      local first = math.max(1, #out - M.MAX_TERMINAL_LINES + 1)
      if first > 1 or term.truncated then
        add("  │ …", "AcpToolOutput")
      end
      for i = first, #out do
        add("  │ " .. out[i], "AcpToolOutput")
      end
    end
  end

  ---@type string? the agent-run terminal a content item showed
  local shown_terminal
  local content = tc.content or {}
  -- Rows of text content, drawn as markdown by the transcript: tool results
  -- come with code fences (Claude's), which showed as literal ```.
  local md = {}
  for _, item in ipairs(content) do
    local t = item.type
    if t == "content" then
      local text = content_summary(item.content or {})
      local parts = util.split_lines(text)
      if parts[#parts] == "" then
        parts[#parts] = nil
      end
      local first, last
      for i, p in ipairs(parts) do
        if i > M.MAX_TEXT_LINES then
          add(("  … %d more lines"):format(#parts - M.MAX_TEXT_LINES), "AcpNote")
          break
        end
        -- No AcpToolContent (Normal) over it: it would cover the code's
        -- colours.
        last = add("  " .. p)
        first = first or last
      end
      if first then
        md[#md + 1] = { first, last }
      end
    elseif t == "diff" then
      local path = item.path or "?"
      local label_path = sanitize.line(shown(path), 400)
      local old = item.old_text
      local new = item.new_text or ""
      local added, removed = util.diff_stat(old, new)
      local label = ("  ± %s +%d -%d"):format(label_path, added, removed)
      local row = add(label .. (old == nil and " (new file)" or ""))
      hls[#hls + 1] = { row, 4, 4 + #label_path, "AcpDiffPath" }
      local plus = ("+%d"):format(added)
      hls[#hls + 1] = { row, 5 + #label_path, 5 + #label_path + #plus, "AcpDiffAdd" }
      hls[#hls + 1] = { row, 6 + #label_path + #plus, #label, "AcpDiffDelete" }
      actions[row] = { type = "diff", path = path, old = old or "", new = new }
    elseif t == "terminal" then
      local id = item.terminal_id or "?"
      local term = ctx.terminals[id] ---@type acp.TerminalState?
      if not term then
        -- A terminal the agent runs itself (codex-acp 2.6.0): its output
        -- came in the tool call's `_meta`, kept by the backend.
        term = M.agent_terminal(tc, id)
        shown_terminal = term and id or shown_terminal
      end
      add_terminal(id, term)
    elseif t == "session" then
      -- A link to the subagent this call started (its block is in the chat).
      local sub = ctx.subagents and ctx.subagents[item.session_id]
      local name = sub and ctx.subagent_name and ctx.subagent_name(sub.info)
        or ("subagent " .. tostring(item.session_id or "?"):gsub("[\r\n]", " "))
      add("  ⧉ " .. (sub and ("subagent " .. name) or name), "AcpToolKind")
    else
      add("  [" .. tostring(t) .. " content] " .. util.json_oneline(item, 160), "AcpUnknown")
    end
  end

  -- codex-acp 2.6.0 reports a command it classifies as a read or a search
  -- (`ls`, `rg`) with no terminal content at all, its output only in the
  -- final update's `_meta.terminal_output_delta`: shown all the same.
  local at = tc.agent_terminal
  if type(at) == "table" and type(at.terminal_id) == "string" and shown_terminal ~= at.terminal_id then
    add_terminal(at.terminal_id, M.agent_terminal(tc, at.terminal_id))
  end

  for _, loc in ipairs(tc.locations or {}) do
    local path = loc.path or "?"
    local line = M.location_line(loc.line)
    local text = sanitize.line(line and ("%s:%d"):format(shown(path), line) or shown(path), 400)
    local row = add("  → " .. text)
    hls[#hls + 1] = { row, #"  → ", -1, "AcpLocation" }
    actions[row] = { type = "location", path = path, line = line }
  end

  local raw_input = tc.raw_input
  if #content == 0 and command then
    -- A shell call says what it runs, not `input: {"command": ...}`.
    add("  $ " .. command, "AcpToolKind")
  elseif #content == 0 and raw_input ~= nil and (ctx.permission or kind == "edit" or kind == "execute") then
    -- Some agents ask for edit permissions without any diff content: the raw
    -- input is then the only thing that says what will happen.
    add("  input: " .. util.json_oneline(raw_input, 300), "AcpToolOutput")
  end

  if ctx.permission then
    local plines, phls = require("acp.chat.view.permission").render(ctx.permission)
    local base = #lines
    vim.list_extend(lines, plines)
    for _, h in ipairs(phls) do
      hls[#hls + 1] = { base + h[1], h[2], h[3], h[4] }
    end
    local preview_key = require("acp.config").options.keymaps.open_review
    if preview_key and require("acp.edits.review").diff_of(tc) then
      plines[#plines + 1] = ("    %s  preview the change in its buffer (nothing is applied)"):format(preview_key)
      lines[#lines + 1] = plines[#plines]
      hls[#hls + 1] = { #lines - 1, 4, 4 + #preview_key, "AcpPermissionKey" }
    end
    for i = 0, #plines - 1 do
      actions[base + i] = { type = "permission", request_id = ctx.permission.request_id }
    end
  end
  for _, note in ipairs(ctx.notes or {}) do
    add("  · " .. note, "AcpPermissionAnswer")
  end
  return lines, hls, actions, md
end

-- Opening what a line points at (a diff, a location) is acp.chat.view.open's,
-- which the review uses too; reached from here as before.
M.open_diff = open.open_diff
M.location_line = open.location_line
M.location = open.location
M.show = open.show
M.jump = open.jump

return M
