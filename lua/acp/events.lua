---@mod acp.events Entry point of the backend's event batches.
---
--- The backend calls `require('acp.events').dispatch(events)` once per frame
--- with the events of that frame, in order. Each event is handled on its own
--- (one bad event never stops the rest of the batch); the transcript views
--- touched by the batch are finished once at the end (read-only again,
--- autoscroll), so a batch of 500 chunks costs one scroll.
---
--- Each event passes `acp.rpc.protocol.decode` (the one decode point) and is
--- then read by its snake_case field names. Streamed text arrives merged:
--- the backend joins the chunks of one message that queue up while a
--- frame fills (one rule, `Event::merge` in the backend), so one event is
--- one buffer edit here.
---
--- A session's history (the `session/load` replay, which arrives before
--- `session_started`) can be thousands of events: those of a chat still
--- opening are handled while the batch is within its slice of time
--- (acp.chat.replay), the rest are queued and rendered in later slices, and every
--- later event of that chat waits behind them, so order holds. The history
--- of a chat opening with nothing drawn is held until `session_started`
--- and drawn newest turn first instead (acp.chat.backlog).

local protocol = require("acp.rpc.protocol")
local replay = require("acp.chat.replay")
local backlog = require("acp.chat.backlog")
local util = require("acp.util")

local M = {}

---@param pattern string
---@return boolean
local function has_user_autocmd(pattern)
  local ok, list = pcall(vim.api.nvim_get_autocmds, { event = "User", pattern = pattern })
  return ok and #list > 0
end

---@param pattern string
---@param data table
local function fire(pattern, data)
  local ok, err = pcall(vim.api.nvim_exec_autocmds, "User", { pattern = pattern, data = data, modeline = false })
  if not ok then
    util.notify(("a %s autocmd failed: %s"):format(pattern, err), vim.log.levels.ERROR)
  end
end

---@type table<string, fun(chat: acp.Chat, ev: acp.Event, ctx: table)>
local handlers = {}

function handlers.session_started(chat, ev)
  chat:on_session_started(ev)
  if chat.prompt_ft then
    -- After the redraw that shows the chat ready: a timer (see acp.chat.replay);
    -- after a loaded history is drawn.
    chat:set_prompt_filetype_later(0)
  end
end

function handlers.open_failed(chat, ev)
  chat:on_open_failed(ev)
end

function handlers.auth_required(chat, ev)
  chat:on_auth_required(ev)
end

function handlers.session(chat, ev, ctx)
  local change = (ev --[[@as acp.ev.Session]]).change
  if not backlog.hold(chat, change) then
    chat:on_session_change(change)
  end
  if ctx.want_update then
    fire("AcpSessionUpdate", { chat_id = chat.chat_id, session_id = chat.session_id, change = change })
  end
end

function handlers.permission_request(chat, ev)
  local req, waiting = chat:on_permission_request(ev)
  if waiting then
    fire("AcpPermissionRequest", {
      request_id = req.request_id,
      session_id = chat.session_id,
      chat_id = chat.chat_id,
      tool_call = req.tool_call,
      options = req.options,
    })
  end
end

function handlers.permission_cancelled(_, ev)
  require("acp.chat.view.permission").cancelled((ev --[[@as acp.ev.PermissionCancelled]]).request_id)
end

function handlers.permission_auto(chat, ev)
  chat:on_permission_auto(ev)
end

function handlers.terminal(chat, ev)
  chat:on_terminal(ev)
end

function handlers.file_edited(chat, event)
  local ev = event --[[@as acp.ev.FileEdited]]
  local path = ev.path
  if ev.kept_unsaved and ev.waiting then
    -- The review's sync tells whether the edit had to wait.
    chat.transcript:note(
      ("! %s: written on disk; merged into your buffer unless it touches the open conflicts (then once they are resolved)"):format(
        path
      ),
      "AcpError"
    )
  elseif ev.kept_unsaved then
    util.notify(
      (
        "the agent wrote %s on disk; your buffer has unsaved changes, so the agent's edit was merged into it "
        .. "(still unsaved; `u` undoes the merge). Review it with :Acp review."
      ):format(path),
      vim.log.levels.WARN
    )
    chat.transcript:note(("! %s: written on disk and merged into your unsaved buffer"):format(path), "AcpError")
  end
  -- A write that no buffer took (none was loaded) needs no reload here:
  -- every agent write is recorded for review, and its `review_changed`
  -- brings a buffer of the file up to date with minimal edits (acp.edits.review).
  -- A `:checktime` here would check every buffer, reloading or asking about
  -- files the agent never touched.
end

function handlers.review_changed(chat, ev)
  require("acp.edits.review").on_changed(chat.chat_id, ev)
  require("acp.edits.review.changes").on_changed(chat.chat_id, ev)
end

function handlers.review_delete_pending(chat, ev)
  require("acp.edits.review").on_delete_pending(chat.chat_id, ev)
end

function handlers.turn_ended(chat, ev)
  chat:on_turn_ended(ev)
  fire("AcpTurnEnd", {
    session_id = chat.session_id,
    chat_id = chat.chat_id,
    stop_reason = (ev --[[@as acp.ev.TurnEnded]]).stop_reason,
  })
end

function handlers.prompt_failed(chat, ev)
  chat:on_prompt_failed(ev)
end

function handlers.agent_exited(chat, ev)
  chat:on_agent_exited(ev)
end

function handlers.logged_out(chat, ev)
  chat:on_logged_out(ev)
end

function handlers.rewind_turns(chat, ev)
  require("acp.edits.rewind").on_turns(chat, ev --[[@as acp.ev.RewindTurns]])
end

function handlers.rewind_preview(chat, ev)
  require("acp.edits.rewind").on_preview(chat, ev --[[@as acp.ev.RewindPreview]])
end

function handlers.rewound(chat, ev)
  require("acp.edits.rewind").on_rewound(chat, ev --[[@as acp.ev.Rewound]])
end

--- Events that concern no chat, by type.
---@type table<string, fun(ev: acp.Event)>
local global_handlers = {
  sessions_listed = function(ev)
    require("acp.agents.sessions").on_listed(ev)
  end,
  -- Elicitations may come before any session (during a login): they find
  -- their chat themselves.
  elicitation_request = function(ev)
    local e = require("acp.chat.view.elicitation").add(ev)
    local data = {
      request_id = e.request_id,
      chat_id = e.chat_id,
      session_id = e.session_id,
      mode = e.mode,
      message = e.message,
      tool_call_id = e.tool_call_id,
    }
    if e.mode == "form" then
      data.requested_schema = e.requested_schema
      data.fields = e.fields
    else
      data.url = e.url
      data.elicitation_id = e.elicitation_id
    end
    fire("AcpElicitationRequest", data)
  end,
  elicitation_cancelled = function(ev)
    require("acp.chat.view.elicitation").cancelled((ev --[[@as acp.ElicitationCancelledEvent]]).request_id)
  end,
  elicitation_completed = function(ev)
    require("acp.chat.view.elicitation").completed((ev --[[@as acp.ElicitationCompletedEvent]]).elicitation_id)
  end,
}
for _, t in ipairs({
  "agents_listed",
  "agent_install_progress",
  "agent_installed",
  "agent_install_failed",
  "agent_removed",
}) do
  global_handlers[t] = function(ev)
    require("acp.agents.registry").on_event(ev)
  end
end

---@param ev acp.Event
---@param ctx table
local function handle(ev, ctx)
  local t = ev.type
  if t == "warning" then
    util.notify((ev --[[@as acp.ev.Warning]]).message, vim.log.levels.WARN)
    return
  end
  if global_handlers[t] then
    global_handlers[t](ev)
    return
  end
  local handler = handlers[t]
  if not handler then
    -- A newer backend may send events this plugin does not know yet.
    return
  end
  local chat_id = ev.chat_id
  local chat = chat_id and require("acp.chat").get(chat_id)
  if not (chat_id and chat) then
    -- Late events of a chat closed meanwhile.
    return
  end
  if t ~= "session" and backlog.holding(chat_id) then
    -- The history is whole (`session_started`) or the open ended another
    -- way: the held history is drawn first, this event after it.
    backlog.release(chat)
    replay.push(chat_id, handle, ev, ctx)
    return
  end
  handler(chat, ev, ctx)
end

--- True when the event belongs to a chat whose history is being rendered
--- in slices, or would start to be: its chat is still opening (the replay
--- of a loaded session) and this batch used up its slice.
---@param ev acp.Event
---@param t0 integer
---@return boolean
local function later(ev, t0)
  local chat_id = ev.chat_id
  if not chat_id then
    return false
  end
  if replay.pending(chat_id) then
    return true
  end
  if not replay.over(t0) then
    return false
  end
  local chat = require("acp.chat").get(chat_id)
  return chat ~= nil and chat.status == "opening"
end

--- Handle a batch of events from the backend, in order.
---
--- This runs inside the backend's call that brought the events (its
--- `nvim_exec_lua` request): a handler must not call the backend with a
--- request (`vim.rpcrequest`). The call can come while Lua waits for an
--- answer to an earlier request of its own, and Neovim closes the channel
--- when the backend answers the earlier one first ("a response with an
--- unknown request id"; `:Acp restart` under load, a chat's new session
--- after a refused resume). Such work goes to `vim.schedule`
--- (tests/e2e/helpers.lua fails a test that breaks this).
---@param events table[]
function M.dispatch(events)
  events = events or {}
  local t0 = replay.start()
  local ctx = { want_update = has_user_autocmd("AcpSessionUpdate") }
  local first_err
  for _, raw in ipairs(events) do
    local ev, bad = protocol.decode(raw)
    local ok, err = true, bad
    if ev and later(ev, t0) then
      -- later() holds back only an event of a chat: it has a chat id.
      replay.push(ev.chat_id --[[@as string]], handle, ev, ctx)
    elseif ev then
      ok, err = xpcall(handle, debug.traceback, ev, ctx)
    end
    if (not ok or bad) and not first_err then
      first_err = err
    end
  end
  local chats = require("acp.chat")
  for _, chat in ipairs(chats.list) do
    chat.transcript.view:finish()
  end
  -- A prompt's filetype waits for a pause in the events too (acp.chat).
  chats.last_event = vim.uv.hrtime()
  if first_err then
    util.notify("an event could not be shown: " .. tostring(first_err), vim.log.levels.ERROR)
  end
  -- Only while a history arrives or is drawn: a streaming turn's batches
  -- keep the collector as it is.
  if backlog.any_held() or replay.busy() then
    replay.hold_collector()
  end
end

return M
