---@mod acp.chat.subagent Subagent sessions in the parent's chat.
---
--- An agent that delegates work announces each child session with
--- `subagent_update`; the child's own updates reach the parent's chat as
--- `child` changes (see doc/protocol.md). Each child gets one block in the
--- parent's transcript, placed when it is announced (right after the tool
--- call that started it, which agents send first): its title, state and
--- description, then everything it streams (text, thoughts, tool calls,
--- messages), indented under a bar. The block is replaced in place as the
--- child works, never merged into the parent's answer, and folded once the
--- child is idle. `<C-c>` (keymaps.cancel) or `:Acp cancel` with the cursor
--- on the block cancels only that child, when the agent allows it.

local util = require("acp.util")
local tool_call = require("acp.chat.view.tool_call")

local M = {}

---@class acp.Subagent
---@field session_id string
---@field title? string
---@field description? string
---@field state? {state: string, stop_reason?: string}
---@field can_cancel? boolean
---@field cwd? string
---@field tool_call_id? string

---@class acp.SubagentItem
---@field kind "user"|"agent"|"thought"|"tool"|"message"|"unknown"
---@field text? string
---@field tool? table the tool call state

---@class acp.SubagentView
---@field info acp.Subagent
---@field block? acp.Block
---@field items acp.SubagentItem[] oldest first
---@field by_index table<integer, acp.SubagentItem> child entry index -> item
---@field folded boolean the block was folded when the child went idle

local STATE = {
  running = { "◐", "running", "AcpToolRunning" },
  idle = { "✓", "idle", "AcpToolDone" },
  requires_action = { "!", "needs you", "WarningMsg" },
  unknown = { "?", "state unknown", "AcpNote" },
}

local BAR = "  │ "

--- A string an agent sent, on one line.
---@param s any
---@return string
local function one_line(s)
  return (tostring(s or ""):gsub("[\r\n]+", " "))
end

--- The display name of a child.
---@param info acp.Subagent
---@return string
function M.name(info)
  if type(info.title) == "string" and info.title ~= "" then
    return one_line(info.title)
  end
  return "subagent " .. one_line(info.session_id)
end

--- The state of a child in words, with its icon and highlight.
---@param info acp.Subagent
---@return string icon, string words, string hl
local function state_of(info)
  local st = type(info.state) == "table" and info.state or nil
  if not st then
    return "·", "started", "AcpNote"
  end
  local s = STATE[st.state] or { "?", tostring(st.state), "AcpNote" }
  local words = s[2]
  if st.state == "idle" and st.stop_reason and st.stop_reason ~= "end_turn" then
    words = words .. " (" .. tostring(st.stop_reason):gsub("_", " ") .. ")"
  end
  return s[1], words, s[3]
end

--- Lines, highlights and line actions of a child's block.
---@param view acp.SubagentView
---@param ctx acp.ToolCallContext
---@return string[] lines, acp.Highlight[] hls, table<integer, table> actions
function M.render(view, ctx)
  local info = view.info
  local lines, hls, actions = {}, {}, {}
  local function add(line, hl)
    lines[#lines + 1] = line
    if hl then
      hls[#hls + 1] = { #lines - 1, 0, -1, hl }
    end
    return #lines - 1
  end
  local icon, words, hl = state_of(info)
  local header = ("▸ %s Subagent · %s — %s"):format(icon, M.name(info), words)
  add(header, "AcpSubagentHeader")
  hls[#hls + 1] = { 0, #"▸ ", #"▸ " + #icon, hl }
  actions[0] = { type = "subagent", session_id = info.session_id }
  if type(info.description) == "string" and info.description ~= "" then
    for _, l in ipairs(util.split_lines(info.description)) do
      add("  " .. l, "AcpNote")
    end
  end
  for _, item in ipairs(view.items) do
    -- A tool item always carries its tool call (see M.apply_child).
    if item.kind == "tool" and item.tool then
      local tl, thl, tact = tool_call.render(item.tool, ctx)
      local base = #lines
      for i, l in ipairs(tl) do
        lines[#lines + 1] = BAR .. l
        if tact[i - 1] then
          actions[base + i - 1] = tact[i - 1]
        end
      end
      for _, h in ipairs(thl) do
        local e = h[3] == -1 and -1 or h[3] + #BAR
        hls[#hls + 1] = { base + h[1], h[2] + #BAR, e, h[4] }
      end
    else
      local text = item.text or ""
      local parts = util.split_lines(text)
      while #parts > 1 and parts[#parts] == "" do
        parts[#parts] = nil
      end
      local prefix, line_hl = "", nil
      if item.kind == "thought" then
        prefix, line_hl = "(thinking) ", "AcpThought"
      elseif item.kind == "user" then
        prefix, line_hl = "⇢ ", "AcpUserHeader"
      elseif item.kind == "message" then
        prefix, line_hl = "✉ ", "AcpNote"
      elseif item.kind == "unknown" then
        line_hl = "AcpUnknown"
      end
      for i, p in ipairs(parts) do
        add(BAR .. (i == 1 and prefix or "") .. p, line_hl)
      end
    end
  end
  return lines, hls, actions
end

local content_text = tool_call.contents_text

local ENTRY_KIND = { user_message = "user", agent_message = "agent", thought = "thought" }

--- Apply one of the child's own changes to its view; true when it changed.
---@param view acp.SubagentView
---@param change table
---@return boolean
function M.apply_child(view, change)
  local c = change.change
  if c == "entry_added" then
    local entry = change.entry or {}
    local kind = ENTRY_KIND[entry.type]
    local item
    if kind then
      item = { kind = kind, text = content_text(entry.content) }
    elseif entry.type == "tool_call" then
      item = { kind = "tool", tool = entry.tool_call or entry }
    else
      item = { kind = "unknown", text = "[" .. tostring(entry.kind or entry.type) .. " update]" }
    end
    view.items[#view.items + 1] = item
    view.by_index[change.index] = item
    return true
  elseif c == "text_appended" then
    local item = view.by_index[change.index]
    if item and item.text then
      item.text = item.text .. tool_call.content_text(change.content or {})
      return true
    end
  elseif c == "tool_call_changed" then
    local item = view.by_index[change.index]
    if item and item.kind == "tool" then
      item.tool = change.tool_call or item.tool
    else
      item = { kind = "tool", tool = change.tool_call or {} }
      view.items[#view.items + 1] = item
      view.by_index[change.index] = item
    end
    return true
  elseif c == "session_message_changed" then
    local item = view.by_index[change.index]
    local text = content_text((change.message or {}).content)
    if item then
      item.text = text
    else
      item = { kind = "message", text = text }
      view.items[#view.items + 1] = item
      view.by_index[change.index] = item
    end
    return true
  elseif c == "notice" then
    view.items[#view.items + 1] = { kind = "unknown", text = one_line(change.title) }
    return true
  end
  -- Modes, commands, usage, plans of a child: not shown in the parent.
  return false
end

--- True once the child has no foreground work.
---@param info acp.Subagent
---@return boolean
function M.is_idle(info)
  return type(info.state) == "table" and info.state.state == "idle"
end

--- Fold a block in every window showing it (the fold starts closed).
---@param v acp.View
---@param block acp.Block
function M.fold(v, block)
  if v.foldable[block.id] then
    return
  end
  v.foldable[block.id] = true
  local sr, er = v:range(block)
  if er > sr then
    for _, win in ipairs(vim.fn.win_findbuf(v.buf)) do
      v:_fold(win, sr, er)
    end
  end
end

--- The subagent block at the cursor of the chat's transcript window, if the
--- current window shows it.
---@param chat acp.Chat
---@return acp.SubagentView?
function M.at_cursor(chat)
  local t = chat.transcript
  if not t or not t.subagents or vim.api.nvim_get_current_buf() ~= t.view.buf then
    return nil
  end
  local block = t.view:block_at(vim.api.nvim_win_get_cursor(0)[1] - 1)
  if block and block.kind == "subagent" then
    return t.subagents[block.data.session_id]
  end
end

--- Cancel the child under the cursor (`<C-c>`, `:Acp cancel` on its block);
--- false when the cursor is on no subagent block.
---@param chat acp.Chat
---@return boolean handled
function M.cancel_at_cursor(chat)
  local view = M.at_cursor(chat)
  if not view then
    return false
  end
  local name = M.name(view.info)
  if not view.info.can_cancel then
    util.notify(
      ("the agent does not allow cancelling %s on its own; press the cancel key outside its block to cancel the whole turn"):format(
        name
      ),
      vim.log.levels.WARN
    )
  elseif M.is_idle(view.info) then
    util.notify(("%s is idle: nothing to cancel"):format(name))
  elseif
    require("acp.rpc.backend").notify("acp.cancel", { chat_id = chat.chat_id, session_id = view.info.session_id })
  then
    util.notify(("cancelling %s"):format(name))
  end
  return true
end

return M
