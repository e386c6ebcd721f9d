---@mod acp.agents.sessions `:Acp sessions`: a picker over the agent's stored
--- sessions (`session/list`, every page, newest first) and the client's own
--- transcripts of sessions the agent cannot list or open again.
---
--- Choosing a session of the agent opens a chat that loads it (the history
--- is replayed) or, when the agent can resume but not load, resumes it.
--- Choosing a transcript reopens it read-only.

local util = require("acp.util")
local config = require("acp.config")

local M = {}

---@type table<string, fun(ev: table)> request_id -> callback
local pending = {}
local counter = 0

---@class acp.SessionItem
---@field action "load"|"resume"|"readonly"
---@field session_id string
---@field agent_name string
---@field title? string
---@field cwd? string
---@field updated_at? string ISO 8601
---@field path? string the transcript file (read-only items)

--- Ask the backend for the agent's sessions; `cb` gets the `sessions_listed`
--- event.
---@param agent_name string
---@param opts {cwd: string, all?: boolean, delete?: string} `delete`: a session to delete first
---@param cb fun(ev: table)
---@return boolean ok, string? err
function M.list(agent_name, opts, cb)
  local agent, err = config.agent(agent_name)
  if not agent then
    return false, err
  end
  local backend = require("acp.rpc.backend")
  local ok, berr = backend.ensure()
  if not ok then
    return false, berr
  end
  counter = counter + 1
  local id = "list-" .. counter
  pending[id] = cb
  local res, rerr = backend.request("acp.list_sessions", {
    request_id = id,
    agent = {
      name = agent.name,
      cmd = agent.cmd,
      env = next(agent.env or {}) and agent.env or vim.empty_dict(),
      cwd = agent.cwd,
    },
    cwd = opts.cwd,
    all = opts.all or false,
    delete = opts.delete,
  })
  if res == nil then
    pending[id] = nil
    return false, rerr
  end
  return true
end

--- The `sessions_listed` event.
---@param ev acp.ev.SessionsListed
function M.on_listed(ev)
  local id = ev.request_id
  local cb = id and pending[tostring(id)]
  if cb then
    pending[tostring(id)] = nil
    -- Not inside the event batch: opening a session calls the backend.
    vim.schedule(function()
      cb(ev)
    end)
  end
end

--- The picker's items: the agent's sessions it can open again, then the
--- transcripts of the others, newest first.
---@param ev acp.ev.SessionsListed
---@param transcripts acp.TranscriptInfo[]
---@return acp.SessionItem[]
function M.items(ev, transcripts)
  local caps = ev.capabilities or {}
  local session_caps = caps.session_capabilities or {}
  local action
  if caps.load_session == true then
    action = "load"
  elseif session_caps.resume ~= nil then
    action = "resume"
  end
  local name = tostring(ev.agent_name or "?")
  local items, listed = {}, {}
  if action then
    for _, s in ipairs(ev.sessions or {}) do
      local id = s.session_id
      if type(id) == "string" then
        listed[id] = true
        local title = s.title
        local updated = s.updated_at
        -- The chat on this session shows the same name in `:Acp chats`.
        local open = type(title) == "string" and require("acp.chat.index").of_session(name, id)
        if open then
          open.listed_title = title
        end
        items[#items + 1] = {
          action = action,
          session_id = id,
          agent_name = name,
          title = type(title) == "string" and title or nil,
          cwd = s.cwd,
          updated_at = type(updated) == "string" and updated or nil,
        }
      end
    end
  end
  for _, t in ipairs(transcripts) do
    if not listed[t.session_id] then
      items[#items + 1] = {
        action = "readonly",
        session_id = t.session_id,
        agent_name = t.agent_name,
        title = t.title,
        cwd = t.cwd,
        updated_at = t.updated_at,
        path = t.path,
      }
    end
  end
  table.sort(items, function(a, b)
    -- ISO 8601 UTC strings sort by time; sessions without a time go last.
    return (a.updated_at or "") > (b.updated_at or "")
  end)
  return items
end

local ACTIONS = { load = "load", resume = "resume", readonly = "read-only" }

--- One line of the picker.
---@param item acp.SessionItem
---@return string
function M.format(item)
  local when = item.updated_at and item.updated_at:gsub("T", " "):gsub("%..*$", ""):gsub("Z$", "") or "?"
  return ("%s  %s  %s  [%s]"):format(
    when,
    item.title or item.session_id,
    item.cwd and vim.fn.fnamemodify(item.cwd, ":~") or "",
    ACTIONS[item.action]
  )
end

--- Open what the user chose.
---@param item acp.SessionItem
---@param cwd string fallback directory
---@param open fun(opts: acp.OpenOpts): acp.Chat?, string? opens a chat on the session (`require("acp").open`: the sessions are below the chats and do not require them)
---@return acp.Chat? chat, string? err
function M.open(item, cwd, open)
  local open_chat = require("acp.chat.index").of_session(item.agent_name, item.session_id)
  if open_chat then
    -- Also for a transcript: the live chat is the better copy.
    open_chat:show()
    util.notify(("this session is open in chat %d already: showing it"):format(open_chat.n))
    return open_chat
  end
  if item.action == "readonly" then
    -- A read-only item is a transcript file: it has a path.
    local chat, err = require("acp.chat.readonly").open(item.path --[[@as string]])
    if not chat then
      util.notify(tostring(err), vim.log.levels.ERROR)
    end
    return chat, err
  end
  local dir = item.cwd
  if type(dir) ~= "string" or vim.fn.isdirectory(dir) ~= 1 then
    dir = cwd
  end
  return open({
    agent = item.agent_name,
    cwd = dir,
    -- The open goes as a notification (its outcome arrives as events):
    -- the command returns once the end of the session is drawn, instead
    -- of waiting for the backend to start the agent (issue #30).
    background = true,
    load_session_id = item.action == "load" and item.session_id or nil,
    resume_session_id = item.action == "resume" and item.session_id or nil,
  })
end

--- `:Acp sessions [agent] [--all] --delete`: list, pick one of the agent's
--- sessions, confirm, delete it (`session/delete`).
---@param opts {agent?: string, all?: boolean, cwd?: string, on_done?: fun(deleted: string?)}
---@return boolean ok, string? err
function M.pick_delete(opts)
  local name = opts.agent or config.default_agent()
  local cwd = opts.cwd or vim.fn.getcwd()
  local done = opts.on_done or function() end
  local ok, err = M.list(name, { cwd = cwd, all = opts.all }, function(ev)
    local caps = ev.capabilities or {}
    if (caps.session_capabilities or {}).delete == nil then
      util.notify(
        ("%s cannot delete its sessions (it does not advertise session/delete)"):format(name),
        vim.log.levels.WARN
      )
      return done(nil)
    end
    local items = vim.tbl_filter(function(item)
      return item.action ~= "readonly"
    end, M.items(ev, {}))
    if #items == 0 then
      util.notify(ev.message or ("no sessions of %s to delete"):format(name))
      return done(nil)
    end
    vim.ui.select(
      items,
      { prompt = ("acp.nvim: delete a session of %s"):format(name), format_item = M.format },
      function(item)
        if not item then
          return done(nil)
        end
        local open_chat = require("acp.chat.index").of_session(item.agent_name, item.session_id)
        if open_chat then
          util.notify(
            ("this session is open in chat %d: close it first (:Acp close)"):format(open_chat.n),
            vim.log.levels.WARN
          )
          return done(nil)
        end
        local label = item.title or item.session_id
        vim.ui.select({ "Delete", "Keep" }, {
          prompt = ("acp.nvim: delete %q for good? The agent forgets it."):format(label),
        }, function(answer)
          if answer ~= "Delete" then
            return done(nil)
          end
          local sent, serr = M.list(name, { cwd = cwd, all = opts.all, delete = item.session_id }, function(res)
            if res.deleted then
              util.notify(("deleted session %q of %s"):format(label, name))
            else
              util.notify(tostring(res.message or "the session was not deleted"), vim.log.levels.ERROR)
            end
            done(res.deleted)
          end)
          if not sent then
            util.notify(tostring(serr), vim.log.levels.ERROR)
          end
        end)
      end
    )
  end)
  if not ok then
    util.notify(tostring(err), vim.log.levels.ERROR)
  end
  return ok, err
end

--- `:Acp sessions [agent] [--all]`: list, pick, open.
---@param opts {agent?: string, all?: boolean, cwd?: string, on_open?: fun(chat: acp.Chat?), open: fun(opts: acp.OpenOpts): acp.Chat?, string?}
---@return boolean ok, string? err
function M.pick(opts)
  local name = opts.agent or config.default_agent()
  local cwd = opts.cwd or vim.fn.getcwd()
  local ok, err = M.list(name, { cwd = cwd, all = opts.all }, function(ev)
    local message = ev.message
    if message then
      util.notify(tostring(message) .. "; showing acp.nvim's own transcripts", vim.log.levels.WARN)
    end
    local transcripts = config.options.transcripts
        and require("acp.agents.history").list(name, not opts.all and cwd or nil)
      or {}
    local items = M.items(ev, transcripts)
    if #items == 0 then
      util.notify(("no sessions of %s%s"):format(name, opts.all and "" or (" in " .. cwd)))
      return
    end
    vim.ui.select(items, { prompt = ("acp.nvim: sessions of %s"):format(name), format_item = M.format }, function(item)
      if item then
        local chat = M.open(item, cwd, opts.open)
        if opts.on_open then
          opts.on_open(chat)
        end
      end
    end)
  end)
  if not ok then
    util.notify(tostring(err), vim.log.levels.ERROR)
  end
  return ok, err
end

return M
