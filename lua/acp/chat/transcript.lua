---@mod acp.chat.transcript Rendering of a session's entries into the transcript
--- buffer, incrementally: each `SessionChange` touches only its own block.
---
--- Layout (markdown):
---   ## You                 header block before each user message
---   <prompt text>
---   ## <agent>             header block before the first agent output of a turn
---   <streamed text>        message block, grows at its end
---   ▸ Thinking             thought block: dimmed, folded ("▸ Thought" drawn
---                          over it once the agent moved on)
---   ✓ edit · Edit foo.rs   tool call block, replaced in place
---   Plan (1/3 done)        the plan block, one per turn, replaced in place
---   — end turn —           note blocks (stop reasons, errors)

local util = require("acp.util")
local View = require("acp.chat.blocks")

--- A module loaded at its first use, not with the transcript: `:Acp` opens
--- a chat with no tool call, plan or subagent to draw (issue #30, the
--- command's time is mostly module loading).
---@param name string
---@return table
local function lazy(name)
  return setmetatable({}, {
    __index = function(proxy, key)
      local mod = require(name)
      setmetatable(proxy, { __index = mod })
      return mod[key]
    end,
  })
end
local tool_call = lazy("acp.chat.view.tool_call")
local plan = lazy("acp.chat.view.plan")
local subagent = lazy("acp.chat.subagent")

---@class acp.Transcript
---@field chat acp.Chat
---@field view acp.View
---@field entries table<integer, acp.Block> entry index (from the backend) -> block
---@field tools table<string, acp.Block> tool call id -> block
---@field plan_block? acp.Block the plan of the current turn
---@field thinking? acp.Block the thought being streamed (its header says "Thinking" until it is over)
---@field turn integer number of user messages so far (blocks record theirs)
---@field compactions? table<string, acp.Block> compaction id -> block
---@field plans? table<string, {block: acp.Block, plan: acp.PlanDocument}> plan_update plans by id
---@field subagents? table<string, acp.SubagentView> child session id -> its view
---@field side? "user"|"agent" who wrote the last entry (for headers)
---@field after_header boolean the last block is a header
local Transcript = {}
Transcript.__index = Transcript

---@param chat acp.Chat
---@param buf integer
---@return acp.Transcript
function Transcript.new(chat, buf)
  return setmetatable({
    chat = chat,
    view = View.new(buf),
    entries = {},
    tools = {},
    plan_block = nil,
    side = nil,
    turn = 0,
  }, Transcript)
end

---@param content any
---@return string
local function content_text(content)
  return tool_call.contents_text(content)
end

--- Split text into what to show now and its trailing line breaks, which are
--- held back until more text follows: a message ending in "\n\n" (markdown
--- paragraphs, as agents end most messages) would otherwise leave blank
--- lines that add to the one blank line between blocks.
---@param text string
---@return string shown, string held
local function hold_trailing_breaks(text)
  local i = #text
  while i > 0 do
    local b = text:byte(i)
    if b ~= 10 and b ~= 13 then
      break
    end
    i = i - 1
  end
  return text:sub(1, i), text:sub(i + 1)
end

--- The header of a thought while it streams, and once the agent moved on
--- (an opened thought read "Thinking" long after the agent had stopped).
local THINKING, THOUGHT = "▸ Thinking", "▸ Thought "
local thought_ns = vim.api.nvim_create_namespace("acp.transcript.thought")

--- The thought being streamed is over (another entry came, or the turn
--- ended): its header says so, drawn over "Thinking" (not an edit of the
--- line: an edit of a fold's first line moved the end of the fold).
function Transcript:_end_thinking()
  local block = self.thinking
  self.thinking = nil
  if not block or not self.view.blocks[block.id] then
    return
  end
  local sr = self.view:range(block)
  local line = vim.api.nvim_buf_get_lines(self.view.buf, sr, sr + 1, false)[1]
  if line == THINKING then
    vim.api.nvim_buf_set_extmark(self.view.buf, thought_ns, sr, 0, {
      virt_text = { { THOUGHT, "AcpThoughtHeader" } },
      virt_text_pos = "overlay",
      priority = 120,
    })
  end
end

--- Add a block of streamed text (message or thought) after `prefix` lines.
---@param kind string
---@param prefix string[]
---@param text string
---@param opts? acp.BlockOpts
---@return acp.Block
function Transcript:_text_block(kind, prefix, text, opts)
  local shown, held = hold_trailing_breaks(text)
  local lines = vim.list_extend(vim.list_slice(prefix), util.split_lines(shown))
  local block = self:_add(kind, lines, nil, opts)
  block.data.held = held
  return block
end

--- Append streamed text to a message or thought block.
---@param block acp.Block
---@param text string
function Transcript:_append_text(block, text)
  local shown, held = hold_trailing_breaks((block.data.held or "") .. text)
  block.data.held = held
  self.view:append(block, shown)
end

--- Text of a user message: its text blocks, then one short line per
--- context block (mentioned files are not dumped in full).
---@param content table[]
---@return string
function Transcript:_user_text(content)
  return require("acp.chat.context").user_text(content, self.chat.cwd)
end

--- A chunk of a user message arrived (a `session/load` replay sends a
--- prompt as one chunk per content block): the message is drawn again from
--- all its blocks, through the same function as a live prompt, so a replay
--- renders exactly as the live session did.
---@param block acp.Block
---@param content table
function Transcript:_append_user(block, content)
  table.insert(block.data.user_content, content)
  local shown, held = hold_trailing_breaks(self:_user_text(block.data.user_content))
  block.data.held = held
  self.view:replace(block, util.split_lines(shown))
end

--- A message or thought replaced whole (a v2 agent's upsert by message id):
--- its block is drawn again from the new content, through the same
--- functions as a streamed one.
---@param block acp.Block
---@param content table[]
function Transcript:_replace_message(block, content)
  if block.data.user_content then
    block.data.user_content = vim.deepcopy(content)
    local shown, held = hold_trailing_breaks(self:_user_text(block.data.user_content))
    block.data.held = held
    self.view:replace(block, util.split_lines(shown))
    return
  end
  local shown, held = hold_trailing_breaks(content_text(content))
  block.data.held = held
  local lines = util.split_lines(shown)
  if block.kind == "thought" then
    -- Its title line (thinking, or how long it thought) stays.
    local sr = self.view:range(block)
    table.insert(lines, 1, vim.api.nvim_buf_get_lines(self.view.buf, sr, sr + 1, false)[1] or THINKING)
  end
  self.view:replace(block, lines)
end

---@param side "user"|"agent"
function Transcript:_header(side)
  if self.side == side then
    return
  end
  self.side = side
  local text = side == "user" and "## You" or ("## " .. (self.chat.agent and self.chat.agent.name or "Agent"))
  -- Drawn as markdown too: the `##` is concealed like the headings of messages.
  self.view:add(
    "header",
    { text },
    { { 0, 0, -1, side == "user" and "AcpUserHeader" or "AcpAgentHeader" } },
    { markdown = true }
  )
  self.after_header = true
end

--- Add a block; the first block after a header has no blank line before it.
---@param kind string
---@param lines string[]
---@param hls? acp.Highlight[]
---@param opts? acp.BlockOpts
---@return acp.Block
function Transcript:_add(kind, lines, hls, opts)
  opts = opts or {}
  if self.after_header then
    opts.sep = false
    self.after_header = false
  end
  return self.view:add(kind, lines, hls, opts)
end

--- Add a note block (stop reasons, errors, lifecycle messages).
---@param lines string[]|string
---@param hl? string
---@return acp.Block
function Transcript:note(lines, hl)
  if type(lines) == "string" then
    lines = util.split_lines(lines)
  end
  local hls = {}
  for i = 0, #lines - 1 do
    hls[#hls + 1] = { i, 0, -1, hl or "AcpNote" }
  end
  return self:_add("note", lines, hls)
end

--- The note that ends a turn: its stop reason in words (`— end turn —`).
--- Not the raw `end_turn`: markdown syntax draws a `_` inside a word as an
--- error, and the note's highlight cannot clear that red background.
---@param reason string
function Transcript:turn_ended(reason)
  self:_end_thinking()
  self:note(("— %s —"):format((reason:gsub("_", " "))), reason == "end_turn" and "AcpNote" or "AcpError")
end

--- Show an error, with the agent's stderr tail when there is one.
---@param message string
---@param stderr_tail? string
function Transcript:error(message, stderr_tail)
  local lines = util.split_lines("✗ " .. message)
  local hls = {}
  for i = 0, #lines - 1 do
    hls[#hls + 1] = { i, 0, -1, "AcpError" }
  end
  if stderr_tail and stderr_tail ~= "" then
    lines[#lines + 1] = "  agent stderr (last lines):"
    hls[#hls + 1] = { #lines - 1, 0, -1, "AcpNote" }
    local tail = util.split_lines(stderr_tail)
    if tail[#tail] == "" then
      tail[#tail] = nil
    end
    for _, l in ipairs(tail) do
      lines[#lines + 1] = "  │ " .. l
      hls[#hls + 1] = { #lines - 1, 0, -1, "AcpStderr" }
    end
  end
  self:_add("error", lines, hls)
end

--- A child session's name, for the link of the tool call that started it
--- (acp.chat.subagent loads when a call links to one).
---@param info acp.Subagent
---@return string
local function subagent_name(info)
  return subagent.name(info)
end

---@param block acp.Block
function Transcript:_render_tool(block)
  local d = block.data
  local lines, hls, actions, md = tool_call.render(d.state, {
    permission = d.permission,
    notes = d.notes,
    terminals = self.chat.terminals,
    cwd = self.chat.cwd,
    subagents = self.subagents,
    subagent_name = subagent_name,
  })
  self.view:replace(block, lines, hls, actions)
  self.view:markdown_rows(block, md)
end

--- The block of a tool call, created at the end of the transcript when the
--- call is not known yet (agents may ask permission before sending it).
---@param state table
---@param fresh? boolean a new block even when the id has one
---@return acp.Block
function Transcript:_tool_block(state, fresh)
  local id = tool_call.id(state) or ""
  local block = self.tools[id]
  if block and not fresh then
    return block
  end
  self:_header("agent")
  local data = { state = state, notes = {}, turn = self.turn }
  local lines, hls, actions, md =
    tool_call.render(state, { notes = {}, terminals = self.chat.terminals, cwd = self.chat.cwd })
  block = self:_add("tool_call", lines, hls, { actions = actions, data = data })
  self.view:markdown_rows(block, md)
  self.tools[id] = block
  return block
end

---@param state table
---@param index? integer
---@param added? boolean the backend added a new entry for it (a new call)
function Transcript:_upsert_tool(state, index, added)
  local id = tool_call.id(state) or ""
  local block = (index and self.entries[index]) or self.tools[id]
  -- The id of a call of an ended turn, reused (the demo agent did): a new
  -- block in this turn, the old one stays as it ended.
  local fresh = added and block ~= nil and block.data.turn ~= self.turn
  if block and block.kind == "tool_call" and not fresh then
    block.data.state = state
    self:_render_tool(block)
  else
    block = self:_tool_block(state, fresh)
  end
  if index then
    self.entries[index] = block
  end
  self.tools[id] = block
  self.chat:on_tool_state(block.data.state)
end

---@param entries table[]
---@param index? integer
function Transcript:_plan(entries, index)
  local lines, hls = plan.render(entries or {})
  if self.plan_block then
    self.view:replace(self.plan_block, lines, hls)
  else
    self:_header("agent")
    self.plan_block = self:_add("plan", lines, hls)
  end
  if index then
    self.entries[index] = self.plan_block
  end
end

---@param kind string
---@param raw any
---@param index? integer
function Transcript:_unknown(kind, raw, index)
  -- The agent sent it: under the agent's header, never inside the user's
  -- message.
  self:_header("agent")
  local lines = { ("▸ Unknown update: %s"):format(kind or "?") }
  vim.list_extend(lines, util.json_lines(raw, "  "))
  local block = self:_add("unknown", lines, { { 0, 0, -1, "AcpUnknown" } }, { foldable = true })
  if index then
    self.entries[index] = block
  end
end

--- A session is being opened for the chat: its prompts are numbered once
--- the backend says from where (`number_turns`).
function Transcript:session_opening()
  self.turn_base = nil
  self.session_prompts = {}
end

--- The backend's numbering of the session's turns: its k-th prompt is turn
--- `turn_base + k`. Prompts already drawn (a loaded session's replay) are
--- numbered again with it.
---@param turn_base integer
function Transcript:number_turns(turn_base)
  self.turn_base = turn_base
  local prompts = self.session_prompts or {}
  for i, block in ipairs(prompts) do
    block.data.prompt_turn = turn_base + i
  end
  self.prompt_turn = turn_base + #prompts
end

---@param index integer
---@param entry table
function Transcript:_entry_added(index, entry)
  self:_end_thinking()
  local t = entry.type
  if t == "user_message" then
    -- A new turn: its tool calls and its plan get blocks of their own.
    self.turn = self.turn + 1
    self.plan_block = nil
    self:_header("user")
    local content = vim.deepcopy(entry.content or {})
    local block = self:_text_block("message", {}, self:_user_text(content), { markdown = true })
    block.data.user_content = content
    -- The chat's turn number, for rewind. The backend owns the numbers
    -- (`turn_base` of `session_started`: the session's k-th prompt,
    -- replayed ones included, is turn base + k); until it is known the
    -- count goes on from the chat's last turn, and is set right then.
    self.session_prompts = self.session_prompts or {}
    self.session_prompts[#self.session_prompts + 1] = block
    if self.turn_base then
      self.prompt_turn = self.turn_base + #self.session_prompts
    else
      self.prompt_turn = (self.prompt_turn or 0) + 1
    end
    block.data.prompt_turn = self.prompt_turn
    self.prompt_blocks = self.prompt_blocks or {}
    self.prompt_blocks[#self.prompt_blocks + 1] = block
    self.entries[index] = block
  elseif t == "agent_message" then
    self:_header("agent")
    self.entries[index] = self:_text_block("message", {}, content_text(entry.content), { markdown = true })
  elseif t == "thought" then
    self:_header("agent")
    local text = content_text(entry.content)
    self.entries[index] = self:_text_block("thought", { THINKING }, text, { hl_group = "AcpThought", foldable = true })
    self.thinking = self.entries[index]
  elseif t == "tool_call" then
    -- The entry is the tool call state itself, or wraps it.
    local state = entry.tool_call or entry
    self:_upsert_tool(state, index, true)
  elseif t == "plan" then
    self:_plan(entry.entries or {}, index)
  else
    self:_unknown(entry.kind or t or "entry", entry.raw or entry, index)
  end
end

local NOTICE_HL = { info = "AcpNote", warning = "WarningMsg", error = "AcpError" }

--- A notice from the agent: a note, not part of the conversation.
---@param change table {severity, title, description?}
function Transcript:_notice(change)
  local sev = change.severity or "info"
  local icon = sev == "error" and "✗" or sev == "warning" and "!" or "i"
  local lines = { ("%s %s"):format(icon, change.title or "") }
  if change.description and change.description ~= "" then
    for _, l in ipairs(util.split_lines(change.description)) do
      lines[#lines + 1] = "  " .. l
    end
  end
  local hls = {}
  for i = 0, #lines - 1 do
    hls[#hls + 1] = { i, 0, -1, NOTICE_HL[sev] or "AcpNote" }
  end
  self:_add("notice", lines, hls)
end

local COMPACTION_TITLE = {
  in_progress = "◐ Compacting the context…",
  completed = "✓ Context compacted",
  failed = "✗ Context compaction failed",
  cancelled = "✗ Context compaction cancelled",
}

--- A context compaction: one block per compaction id, replaced in place; the
--- retained summary folded under its title.
---@param change table {id, status, summary, error?}
function Transcript:_compaction(change)
  self.compactions = self.compactions or {}
  local title = COMPACTION_TITLE[change.status] or ("◐ Context compaction: " .. tostring(change.status))
  local lines = { "▸ " .. title }
  local hl = change.status == "failed" and "AcpError" or "AcpNote"
  if change.error and change.error ~= "" then
    lines[#lines + 1] = "  " .. change.error
  end
  local summary = content_text(change.summary)
  if summary ~= "" then
    for _, l in ipairs(util.split_lines(summary)) do
      lines[#lines + 1] = l
    end
  end
  local hls = { { 0, 0, -1, hl } }
  local block = self.compactions[change.id]
  if block then
    self.view:replace(block, lines, hls)
  else
    self.compactions[change.id] = self:_add("compaction", lines, hls, { foldable = true })
  end
end

--- A plan of `plan_update`: one block per plan id, replaced in place; a
--- Markdown plan is drawn as markdown.
---@param doc acp.PlanDocument
function Transcript:_plan_doc(doc)
  self.plans = self.plans or {}
  local lines, hls, actions = plan.render_document(doc)
  local known = self.plans[doc.plan_id]
  local markdown = doc.format == "markdown"
  -- A block keeps its markdown drawing: a plan that changes format gets a
  -- new block (in place of the old, which goes).
  if known and (known.block.md ~= nil) == markdown and self.view.blocks[known.block.id] then
    self.view:replace(known.block, lines, hls, actions)
    known.plan = doc
    return
  end
  if known and self.view.blocks[known.block.id] then
    local rl, rh = plan.render_removed(known.plan)
    self.view:replace(known.block, rl, rh)
  end
  self:_header("agent")
  local block = self:_add("plan", lines, hls, { markdown = markdown, actions = actions })
  self.plans[doc.plan_id] = { block = block, plan = doc }
end

--- `plan_removed`: the plan stays as one line marked removed.
---@param plan_id string
function Transcript:_plan_removed(plan_id)
  local plans = self.plans
  local known = plans and plans[plan_id]
  if not plans or not known then
    return
  end
  plans[plan_id] = nil
  if self.view.blocks[known.block.id] then
    local lines, hls = plan.render_removed(known.plan)
    self.view:replace(known.block, lines, hls)
  end
end

---@param view acp.SubagentView
function Transcript:_render_subagent(view)
  local ctx = { terminals = self.chat.terminals, cwd = self.chat.cwd, notes = {} }
  local lines, hls, actions = subagent.render(view, ctx)
  if view.block and self.view.blocks[view.block.id] then
    self.view:replace(view.block, lines, hls, actions)
  else
    self:_header("agent")
    view.block = self:_add("subagent", lines, hls, { actions = actions, data = { session_id = view.info.session_id } })
  end
  if subagent.is_idle(view.info) then
    if not view.folded then
      view.folded = true
      subagent.fold(self.view, view.block)
    end
  else
    view.folded = false
  end
end

--- The view of a child session, created on first sight.
---@param session_id string
---@return acp.SubagentView
function Transcript:_subagent_view(session_id)
  self.subagents = self.subagents or {}
  local view = self.subagents[session_id]
  if not view then
    view = { info = { session_id = session_id }, items = {}, by_index = {}, folded = false }
    self.subagents[session_id] = view
  end
  return view
end

--- A message between sessions (`session_message`) in this session: one
--- block per message, replaced in place as it streams.
---@param index integer
---@param message acp.SessionMessage
function Transcript:_session_message(index, message)
  local to = message.recipient_session_id
  local from = message.sender_session_id
  local function name(sid)
    local v = sid and (self.subagents or {})[sid]
    return v and subagent.name(v.info) or (sid and ("session " .. sid)) or "?"
  end
  ---@type string
  local label
  if to and (self.subagents or {})[to] then
    label = "⇢ to " .. name(to)
  elseif from and (self.subagents or {})[from] then
    label = "⇠ from " .. name(from)
  else
    label = "✉ message"
  end
  local lines = { label }
  vim.list_extend(lines, util.split_lines(content_text(message.content)))
  local hls = { { 0, 0, -1, "AcpNote" } }
  local block = self.entries[index]
  if block and block.kind == "session_message" then
    self.view:replace(block, lines, hls)
  else
    self:_header("agent")
    self.entries[index] = self:_add("session_message", lines, hls)
  end
end

--- A change of a child session (nested children flattened: each child has
--- its own block).
---@param change table {session_id, child_change}
function Transcript:_child(change)
  local sid, inner = change.session_id, change.child_change
  while type(inner) == "table" and inner.change == "child" do
    sid, inner = inner.session_id, inner.child_change
  end
  if type(inner) ~= "table" or type(sid) ~= "string" then
    return
  end
  if inner.change == "subagent_changed" then
    self:apply(inner)
    return
  end
  local view = self:_subagent_view(sid)
  if subagent.apply_child(view, inner) then
    self:_render_subagent(view)
  end
end

--- Apply one SessionChange (see doc/protocol.md): only the block it concerns
--- is touched.
---@param change acp.SessionChange
function Transcript:apply(change)
  local c = change.change
  if c == "entry_added" then
    -- The backend's encoder always sets the index of these changes.
    self:_entry_added(change.index --[[@as integer]], change.entry or {})
  elseif c == "text_appended" then
    local block = self.entries[change.index]
    if block and block.kind == "message" and block.data.user_content then
      self:_append_user(block, change.content or {})
    elseif block and (block.kind == "message" or block.kind == "thought") then
      self:_append_text(block, tool_call.content_text(change.content or {}))
    end
  elseif c == "message_replaced" then
    local block = self.entries[change.index]
    local entry = change.entry or {}
    if block and (block.kind == "message" or block.kind == "thought") then
      self:_replace_message(block, entry.content or {})
    end
  elseif c == "tool_call_changed" then
    local state = change.tool_call or {}
    self:_upsert_tool(state, change.index)
  elseif c == "plan_replaced" then
    self:_plan(change.entries or {})
  elseif c == "plan_updated" and change.plan then
    self:_plan_doc(change.plan)
  elseif c == "plan_removed" and change.plan_id then
    self:_plan_removed(change.plan_id)
  elseif c == "subagent_changed" then
    local info = change.subagent or {}
    if type(info.session_id) == "string" then
      local view = self:_subagent_view(info.session_id)
      local renamed = view.info.title ~= info.title
      view.info = info --[[@as acp.Subagent]] -- its session id checked above
      self:_render_subagent(view)
      -- The tool call that started it names it.
      local tool = renamed and info.tool_call_id and self.tools[info.tool_call_id]
      if tool then
        self:_render_tool(tool)
      end
    end
  elseif c == "child" then
    self:_child(change)
  elseif c == "session_message_changed" and change.message then
    self:_session_message(change.index --[[@as integer]], change.message)
  elseif c == "unknown" then
    self:_unknown(change.kind or "?", change.raw)
  elseif c == "notice" then
    self:_notice(change)
  elseif c == "compaction_changed" then
    self:_compaction(change)
  elseif c == "turn_usage" then
    local u = change.usage or {}
    local parts = { ("%d tokens: %d in, %d out"):format(u.total or 0, u.input or 0, u.output or 0) }
    if u.thought then
      parts[#parts + 1] = ("%d thinking"):format(u.thought)
    end
    if u.cached_read then
      parts[#parts + 1] = ("%d read from cache"):format(u.cached_read)
    end
    if u.cached_write then
      parts[#parts + 1] = ("%d written to cache"):format(u.cached_write)
    end
    self:note(table.concat(parts, ", "))
  end
  -- mode/config/commands/usage/info changes are chat state (winbar), handled
  -- by the chat.
end

--- Give every tool call that is still pending or running a final status
--- (the agent died, or the turn was abandoned): it will never report one.
---@param status "failed"|"cancelled"
function Transcript:end_unfinished_tools(status)
  for _, block in pairs(self.tools) do
    local s = block.data.state.status
    if s == nil or s == "pending" or s == "in_progress" then
      block.data.state = vim.tbl_extend("force", block.data.state or {}, { status = status })
      self:_render_tool(block)
    end
  end
end

--- Show a pending permission request inside its tool call block.
---@param req acp.PermissionRequest
function Transcript:permission_shown(req)
  local state = vim.deepcopy(req.tool_call or {})
  local block = self:_tool_block(state)
  -- The session's state is newer for the fields it has; the request may know
  -- more (e.g. rawInput of a call the agent never sent as a tool_call).
  block.data.state = vim.tbl_extend("keep", block.data.state or {}, state)
  block.data.permission = req
  self:_render_tool(block)
end

--- Replace a permission prompt by a one-line note.
---@param req acp.PermissionRequest
---@param note string
function Transcript:permission_settled(req, note)
  local id = require("acp.chat.view.permission").tool_call_id(req) or ""
  local block = self.tools[id]
  if not block then
    block = self:_tool_block(vim.deepcopy(req.tool_call or {}))
  end
  if block.data.permission and block.data.permission.request_id == req.request_id then
    block.data.permission = nil
  end
  table.insert(block.data.notes, note)
  self:_render_tool(block)
end

--- Re-render the tool calls that embed a terminal.
---@param terminal_id string
function Transcript:terminal_changed(terminal_id)
  for _, block in pairs(self.tools) do
    for _, item in ipairs(block.data.state.content or {}) do
      if item.type == "terminal" and item.terminal_id == terminal_id then
        self:_render_tool(block)
        break
      end
    end
  end
end

--- The pending permission request shown at a row, if any.
---@param row integer 0-based
---@return acp.PermissionRequest?
function Transcript:permission_at(row)
  local block = self.view:block_at(row)
  if block and block.kind == "tool_call" then
    return block.data.permission
  end
end

--- The action of the line at a row (diff, location, permission), if any. On a
--- tool call's header, the first diff of the call.
---@param row integer 0-based
---@return table?
function Transcript:action_at(row)
  local block, offset = self.view:block_at(row)
  if not block then
    return nil
  end
  return block.actions[offset]
end

--- The first diff action of the tool call block at a row.
---@param row integer
---@return table?
function Transcript:diff_at(row)
  local block, offset = self.view:block_at(row)
  if not block then
    return nil
  end
  local a = block.actions[offset]
  if a and a.type == "diff" then
    return a
  end
  local best
  for off, act in pairs(block.actions) do
    if act.type == "diff" and (best == nil or off < best[1]) then
      best = { off, act }
    end
  end
  return best and best[2]
end

--- Show nothing again: every block goes, with what it knew (acp.chat.tail:
--- the end of a session drawn from the transcript, which the agent's
--- replay did not confirm).
function Transcript:reset()
  self:forget_entries()
  self.thinking = nil
  self.turn = 0
  self.after_header = false
  self.prompt_turn = nil
  self.prompt_blocks = nil
  -- The replay drawn next numbers the session's prompts again.
  self.session_prompts = {}
  self.view:clear()
end

--- Forget which blocks show which entries and tool calls (the text stays):
--- a new session numbers its entries from 0 and may reuse tool call ids.
function Transcript:forget_entries()
  self.entries = {}
  self.tools = {}
  self.compactions = {}
  self.plans = {}
  self.subagents = {}
  self.plan_block = nil
  self.side = nil
end

return Transcript
