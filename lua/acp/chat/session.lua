---@mod acp.chat.session What the backend tells a chat of its session: started,
--- failed to open, needing a login, its changes, tool states followed,
--- terminals, the agent or the backend gone.

local util = require("acp.util")
local config = require("acp.config")

---@class (partial) acp.Chat
local Chat = {}

---@param ev acp.ev.SessionStarted
function Chat:on_session_started(ev)
  self.session_id = ev.session_id
  self.status = "ready"
  self.modes = ev.modes
  self.config_options = ev.config_options
  self.capabilities = ev.capabilities
  self.transcript_path = ev.transcript_path
  if ev.turn_base then
    self.transcript:number_turns(ev.turn_base)
  end
  self.opening = nil
  self.backend_died = nil
  self:_write_load_note()
  if self.restart_note then
    -- Said once the outcome is known: "session resumed" came before the
    -- agent answered that it no longer knew the session.
    self.transcript:note(self.restart_note)
    self.restart_note = nil
  end
  self:_flush()
  self:update_winbar()
end

---@param ev acp.ev.OpenFailed
function Chat:on_open_failed(ev)
  local opening = self.opening
  self.opening = nil
  self.status = "failed"
  self.restart_note = nil
  self.load_note = nil
  if opening and opening.fallback_new then
    -- A restart could not continue the session (the agent forgot it, e.g.
    -- a killed fake or claude-agent-acp answering -32002): carry on in a
    -- new one rather than leave the chat dead, and say so once.
    local why = tostring(ev.message or "no reason given"):gsub("\n", " ")
    -- The agent's answer, not the whole sentence around it.
    why = why:match("with (error %-?%d+[^;]*)") or why
    self.transcript:note(("— restarted: new session, the agent could not take the old one back (%s) —"):format(why))
    -- Not from inside the event's dispatch (see acp.events.dispatch).
    vim.schedule(function()
      if self.status == "failed" then
        self:start()
      end
    end)
    return
  end
  self.transcript:error(ev.message or "the session could not start", ev.stderr_tail)
  self:_unqueue()
  self:update_winbar()
end

---@param ev acp.ev.AuthRequired
function Chat:on_auth_required(ev)
  self.status = "failed"
  self.opening = nil
  self.auth_methods = ev.auth_methods or {}
  local lines = {
    ("✗ %s needs you to log in first: pick a method (:Acp login), then the chat continues."):format(self.agent.name),
  }
  for _, m in ipairs(ev.auth_methods or {}) do
    local desc = m.description
    lines[#lines + 1] = ("  - %s%s"):format(m.name or m.id or "?", desc and (": " .. desc) or "")
  end
  self.transcript:note(lines, "AcpError")
  self:update_winbar()
  if #self.auth_methods > 0 then
    -- Not inside the event batch: choosing calls the backend again.
    vim.schedule(function()
      if self.status == "failed" then
        require("acp.agents.auth").choose(self)
      end
    end)
  end
end

---@param _ev acp.ev.LoggedOut
function Chat:on_logged_out(_ev)
  self.transcript:note(("— logged out of %s —"):format(self.agent.name))
  util.notify(("logged out of %s"):format(self.agent.name))
end

---@param change acp.SessionChange
function Chat:on_session_change(change)
  local c = change.change
  if c == "mode_changed" then
    self.modes = self.modes or {}
    self.modes.current_mode_id = change.current_mode_id
    self:update_winbar()
  elseif c == "modes_changed" then
    self.modes = {
      current_mode_id = change.current_mode_id,
      available_modes = change.available_modes or {},
    }
    self:update_winbar()
  elseif c == "config_options_changed" then
    self.config_options = change.config_options or {}
    self:update_winbar()
  elseif c == "commands_changed" then
    self.commands = change.available_commands or {}
    require("acp.chat.prompt").commands_arrived(self.prompt_buf)
  elseif c == "usage_changed" then
    self.usage = change.usage
    self:update_winbar()
  elseif c == "info_changed" then
    -- The change carries the info after the change: no title = none.
    self.title = change.title
    self:update_winbar()
  else
    self:_write_load_note()
    self.transcript:apply(change)
  end
end

--- The note of a restart that loads the session, once the load is under
--- way (its first replayed entry, or the session back without one).
function Chat:_write_load_note()
  local note = self.load_note
  if note then
    self.load_note = nil
    self.transcript.view:batch(function()
      self.transcript:note(note)
    end)
  end
end

--- A tool call's state changed (called by the transcript).
---@param state table
function Chat:on_tool_state(state)
  if not self.following or type(state) ~= "table" then
    return
  end
  if state.status == "failed" or state.status == "cancelled" then
    return
  end
  local loc = require("acp.chat.view.tool_call").location(state)
  if not loc then
    return
  end
  local key = loc.path .. ":" .. tostring(loc.line)
  if key == self.followed then
    return
  end
  self.followed = key
  -- Not inside the event batch: opening a file runs the user's autocmds.
  vim.schedule(function()
    if self.following and self.followed == key and vim.fn.filereadable(loc.path) == 1 then
      require("acp.chat.view.tool_call").show(loc, self:transcript_wins()[1])
    end
  end)
end

--- Most bytes of terminal output kept per terminal.
local MAX_TERMINAL_BYTES = 64 * 1024

---@param ev acp.ev.Terminal
function Chat:on_terminal(ev)
  local id = ev.terminal_id
  if not id then
    return
  end
  local term = self.terminals[id] or { output = "", released = false, truncated = false }
  self.terminals[id] = term
  local kind = ev.kind
  if kind == "started" then
    term.command = ev.command
  elseif kind == "output" then
    local data = ev.data or ""
    if ev.truncated then
      term.truncated = true
    end
    term.output = term.output .. data
    if #term.output > MAX_TERMINAL_BYTES then
      term.output = term.output:sub(-MAX_TERMINAL_BYTES)
      term.truncated = true
    end
  elseif kind == "exited" then
    term.exit_status = ev.exit_status or {}
  elseif kind == "released" then
    term.released = true
  end
  self.transcript:terminal_changed(id)
end

---@param ev acp.ev.AgentExited
function Chat:on_agent_exited(ev)
  self.status = "dead"
  self.backend_died = nil
  self:_unqueue()
  self:_close_permissions("the agent exited")
  self:update_permission_keys()
  self.transcript:end_unfinished_tools("failed")
  local status = ev.status
  local key = config.options.keymaps.restart
  local msg = ("The agent %s exited%s. %s to restart it and continue this session (:Acp continue)."):format(
    self.agent.name,
    status ~= nil and (" (" .. tostring(status) .. ")") or "",
    key and ("Press " .. key) or "Run :Acp continue"
  )
  self.transcript:error(msg, ev.stderr_tail)
  self:update_winbar()
end

--- The backend died: nothing of this chat runs any more.
---@param log_file string
function Chat:on_backend_died(log_file)
  if self.status == "closed" then
    return
  end
  self.status = "dead"
  self.backend_died = true
  self:_unqueue()
  self:_close_permissions("the backend stopped")
  self:update_permission_keys()
  self.transcript.view:batch(function()
    self.transcript:end_unfinished_tools("failed")
    self.transcript:error(("The acp.nvim backend stopped (log: %s). Run :Acp restart to continue."):format(log_file))
  end)
  self:update_winbar()
end

return Chat
