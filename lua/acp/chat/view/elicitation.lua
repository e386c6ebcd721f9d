---@mod acp.chat.view.elicitation The agent asks the user: forms and URLs, shown inline
--- in the chat like a permission prompt.
---
--- The backend sends `elicitation_request` and waits for
--- `acp.elicitation_respond` (a request: a form answer that does not fit the
--- form is refused with the problems, and the elicitation stays open with
--- the values typed so far). `elicitation_cancelled` (turn cancelled, agent
--- withdrew it) closes it; `elicitation_completed` ends the wait of a URL the
--- user opened.
---
--- Keys in the transcript while an elicitation is pending (on the one under
--- the cursor, else the oldest of the chat): `a` answers (opens the form,
--- acp.chat.view.form, or with `elicitation.ui = "vim.ui"` fills it field by field
--- with vim.ui.input / vim.ui.select; opens a URL with vim.ui.open), `D`
--- declines, `X` cancels (capitals: `d` is the diff key, and both would edit
--- text in an ordinary buffer). `<CR>` answers too. `y` copies a URL whole
--- (it is shown shortened and made safe; only plain http(s) links are ever
--- opened, see acp.sanitize).

local sanitize = require("acp.sanitize")
local util = require("acp.util")

local M = {}

---@class acp.ElicitationChoice
---@field value any an enum's value (as the agent sent it); a boolean's true/false; vim.NIL for "no value"
---@field title string

---@class acp.ElicitationField
---@field name string
---@field label string
---@field description? string
---@field required boolean
---@field default? any
---@field type "string"|"enum"|"integer"|"number"|"boolean"|"multi_select"|"unknown"
---@field choices? acp.ElicitationChoice[]
---@field min_length? integer
---@field max_length? integer
---@field format? string email|uri|date|date-time
---@field minimum? number
---@field maximum? number
---@field min_items? integer
---@field max_items? integer
---@field wire_type? string the agent's type, for `unknown`

---@class acp.Elicitation
---@field request_id integer
---@field chat_id? string
---@field session_id? string
---@field mode "form"|"url"
---@field message string
---@field requested_schema? table
---@field fields? acp.ElicitationField[]
---@field url? string
---@field elicitation_id? string
---@field tool_call_id? string
---@field tool_title? string
---@field values table<string, any> the user's values so far
---@field error? string why the last answer was refused
---@field waiting boolean a URL the user accepted: waiting for the agent
---@field block? acp.Block the inline prompt in the chat

---@type table<integer, acp.Elicitation>
M.pending = {}

--- Buffers whose answer keys are mapped.
---@type table<integer, boolean>
local mapped = {}

local FORMAT_HINT = {
  email = "email",
  uri = "URI",
  date = "YYYY-MM-DD",
  ["date-time"] = "YYYY-MM-DDThh:mm:ssZ",
}

---@param v any
---@param f? acp.ElicitationField labels of choices are shown for their values
---@return string
local function show_value(v, f)
  if f and f.choices then
    local title = {}
    for _, c in ipairs(f.choices) do
      title[c.value] = c.title
    end
    if type(v) == "table" then
      return table.concat(
        vim.tbl_map(function(x)
          return title[x] or tostring(x)
        end, v),
        ", "
      )
    elseif title[v] then
      return title[v]
    end
  end
  if v == nil then
    return ""
  elseif type(v) == "table" then
    return table.concat(vim.tbl_map(tostring, v), ", ")
  elseif type(v) == "boolean" then
    return v and "yes" or "no"
  end
  return tostring(v)
end

--- A short description of what a field takes.
---@param f acp.ElicitationField
---@return string
function M.describe_field(f)
  local t = f.type
  local parts = {}
  if t == "enum" or t == "multi_select" then
    local names = vim.tbl_map(function(c)
      return c.title
    end, f.choices or {})
    parts[#parts + 1] = (t == "enum" and "one of: " or "any of: ") .. table.concat(names, ", ")
  elseif t == "unknown" then
    parts[#parts + 1] = ("type `%s`: cannot be filled here"):format(f.wire_type or "?")
  else
    parts[#parts + 1] = t == "string" and (FORMAT_HINT[f.format] or "text") or t
  end
  if f.min_length or f.max_length then
    parts[#parts + 1] = ("%s-%s chars"):format(f.min_length or 0, f.max_length or "")
  end
  if f.minimum or f.maximum then
    parts[#parts + 1] = ("%s..%s"):format(
      f.minimum and show_value(f.minimum) or "",
      f.maximum and show_value(f.maximum) or ""
    )
  end
  return table.concat(parts, ", ")
end

--- Lines (and highlights and actions) of the inline prompt.
---@param e acp.Elicitation
---@return string[] lines, acp.Highlight[] hls, table<integer, table> actions
function M.render(e)
  local lines, hls, actions = {}, {}, {}
  -- Every line holds agent text (message, labels, choices, the URL).
  local function add(line, hl)
    lines[#lines + 1] = sanitize.line(line, 1000)
    actions[#lines - 1] = { type = "elicitation", request_id = e.request_id }
    if hl then
      hls[#hls + 1] = { #lines - 1, 0, -1, hl }
    end
  end
  local head = e.mode == "url" and "? The agent asks you to open a page: " or "? The agent asks: "
  local message = sanitize.lines(e.message ~= "" and e.message or "(no message)")
  add(head .. message[1], "AcpPermissionTitle")
  -- Marked as the agent's text, so a line of it cannot pass for a key line.
  for i = 2, #message do
    add("  │ " .. message[i], "AcpPermissionTitle")
  end
  if e.tool_title or e.tool_call_id then
    add("  for tool call: " .. (e.tool_title or e.tool_call_id), "AcpNote")
  end
  if e.mode == "url" then
    add("  " .. sanitize.url(e.url or "?"), "Underlined")
    local openable, why = sanitize.openable(e.url)
    if e.waiting then
      add("  … opened; waiting for the agent to finish (X stops waiting)", "AcpNote")
    elseif openable then
      add("  a open it in the browser   y copy the link   D decline   X cancel", "AcpPermissionKey")
    else
      add("  ✗ not opened: " .. why, "AcpError")
      add("  y copy the link   D decline   X cancel", "AcpPermissionKey")
    end
  else
    for _, f in ipairs(e.fields or {}) do
      local value = e.values[f.name]
      if value == nil then
        value = f.default
      end
      local line = ("  %s%s (%s)"):format(f.label, f.required and "*" or "", M.describe_field(f))
      if value ~= nil then
        line = line .. " = " .. show_value(value, f)
      end
      add(line)
      if f.description and f.description ~= "" then
        add("      " .. f.description, "AcpNote")
      end
    end
    if e.error then
      add("  ✗ " .. e.error, "AcpError")
    end
    add("  a fill in and send   D decline   X cancel   (* = required)", "AcpPermissionKey")
  end
  return lines, hls, actions
end

---@param e acp.Elicitation
---@return acp.Chat?
local function chat_of(e)
  return e.chat_id and require("acp.chat.index").get(e.chat_id) or nil
end

---@param e acp.Elicitation
local function redraw(e)
  local chat = chat_of(e)
  if not (chat and e.block) then
    return
  end
  local lines, hls, actions = M.render(e)
  chat.transcript.view:batch(function()
    chat.transcript.view:replace(e.block, lines, hls, actions)
  end)
end

--- Replace the inline prompt by a note (a line, or the question then the
--- answer).
---@param e acp.Elicitation
---@param note string|string[]
local function settle(e, note)
  M.pending[e.request_id] = nil
  if package.loaded["acp.chat.view.form"] then
    require("acp.chat.view.form").closed(e.request_id)
  end
  local chat = chat_of(e)
  if chat and e.block then
    -- Notes quote the agent's message or URL.
    local lines = type(note) == "table" and note or { note }
    local hls = {}
    for i = 1, #lines do
      lines[i] = sanitize.line(lines[i], 300)
      hls[i] = { i - 1, 0, -1, "AcpPermissionAnswer" }
    end
    chat.transcript.view:batch(function()
      chat.transcript.view:replace(e.block, lines, hls, {})
    end)
  end
  if chat then
    M.update_keys(chat)
  end
end

--- Pending elicitations of a chat (nil = those without a chat), oldest first.
---@param chat_id? string
---@return acp.Elicitation[]
function M.for_chat(chat_id)
  return util.requests_of(M.pending, chat_id)
end

--- The elicitation the keys of `chat` act on: the one under the cursor, else
--- the oldest.
---@param chat acp.Chat
---@return acp.Elicitation?
local function target(chat)
  local api = vim.api
  if api.nvim_get_current_buf() == chat.bufnr then
    local a = chat.transcript:action_at(api.nvim_win_get_cursor(0)[1] - 1)
    if a and a.type == "elicitation" and M.pending[a.request_id] then
      return M.pending[a.request_id]
    end
  end
  return M.for_chat(chat.chat_id)[1]
end

--- Map `a`/`D`/`X` in the chat's transcript while it has a pending
--- elicitation, and only then.
---@param chat acp.Chat
function M.update_keys(chat)
  local buf = chat.bufnr
  if not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local want = #M.for_chat(chat.chat_id) > 0
  if want == (mapped[buf] or false) then
    return
  end
  mapped[buf] = want or nil
  local keys = {
    a = { M.activate, "answer the agent's question" },
    y = { M.copy_url, "copy the link the agent asks you to open" },
    D = {
      function(id)
        M.respond(id, { action = "decline" })
      end,
      "decline the agent's question",
    },
    X = {
      function(id)
        M.respond(id, { action = "cancel" })
      end,
      "cancel the agent's question",
    },
  }
  for lhs, spec in pairs(keys) do
    if want then
      vim.keymap.set("n", lhs, function()
        local e = target(chat)
        if e then
          spec[1](e.request_id)
        end
      end, { buffer = buf, nowait = true, silent = true, desc = "acp.nvim: " .. spec[2] })
    else
      pcall(vim.keymap.del, "n", lhs, { buffer = buf })
    end
  end
end

--- Register an `elicitation_request` event: shown inline in its chat (a
--- notification when the chat is hidden or there is none).
---@param ev table
---@return acp.Elicitation
function M.add(ev)
  ---@type acp.Elicitation
  local e = {
    request_id = ev.request_id,
    chat_id = ev.chat_id and tostring(ev.chat_id) or nil,
    session_id = ev.session_id,
    mode = ev.mode,
    message = ev.message or "",
    requested_schema = ev.requested_schema,
    fields = ev.fields,
    url = ev.url,
    elicitation_id = ev.elicitation_id,
    tool_call_id = ev.tool_call_id,
    tool_title = ev.tool_title,
    values = {},
    waiting = false,
  }
  M.pending[e.request_id] = e
  local chat = chat_of(e)
  if chat then
    local lines, hls, actions = M.render(e)
    e.block = chat.transcript:_add("elicitation", lines, hls, { actions = actions })
    M.update_keys(chat)
  end
  local msg = ("is waiting for your answer: %s (:Acp elicitation to answer)"):format(sanitize.line(e.message, 300))
  if chat then
    -- The `notify.question` option decides, like permissions and turn ends.
    chat:attention("question", msg, vim.log.levels.WARN)
  else
    util.notify("the agent " .. msg, vim.log.levels.WARN)
  end
  return e
end

--- Answer an elicitation. `response` is `{ action = "accept", content = {...} }`
--- (no content for a URL), `{ action = "decline" }` or `{ action = "cancel" }`.
--- A form answer that does not fit the form is refused: the problems are
--- returned (and shown in the chat) and the elicitation stays open.
---@param request_id integer
---@param response {action: "accept"|"decline"|"cancel", content?: table}
---@return boolean ok, string? err
function M.respond(request_id, response)
  local e = M.pending[request_id]
  if not e then
    return false, ("elicitation %s is not waiting for an answer"):format(tostring(request_id))
  end
  if type(response) ~= "table" or type(response.action) ~= "string" then
    return false, 'the answer must be a table like { action = "accept", content = { ... } }'
  end
  if e.waiting then
    -- The backend's part ended with the accept; a cancel now only stops
    -- waiting for the agent.
    settle(e, "✗ stopped waiting for " .. (e.url or "the page"))
    return true
  end
  local content = response.content
  if response.action == "accept" and e.mode == "form" then
    content = (content and next(content) ~= nil) and content or vim.empty_dict()
  else
    content = nil
  end
  local _, err = require("acp.rpc.backend").request(
    "acp.elicitation_respond",
    { request_id = request_id, action = response.action, content = content }
  )
  if err then
    if response.action == "accept" and e.mode == "form" then
      e.values = vim.deepcopy(response.content or {})
    end
    e.error = err
    redraw(e)
    return false, err
  end
  if response.action == "accept" and e.mode == "url" then
    e.waiting = true
    e.error = nil
    redraw(e)
    return true
  end
  local note
  if response.action == "accept" then
    local shown = {}
    for _, f in ipairs(e.fields or {}) do
      local v = (response.content or {})[f.name]
      if v ~= nil then
        shown[#shown + 1] = f.label .. " = " .. show_value(v, f)
      end
    end
    -- The question stays with its answer (it was gone, leaving
    -- "answered: Greeting = ..." without what was asked).
    note = {
      "✓ The agent asked: " .. (e.message ~= "" and e.message or "(no message)"),
      "  answered: " .. (#shown > 0 and table.concat(shown, ", ") or "(nothing)"),
    }
  elseif response.action == "decline" then
    note = "✗ declined: " .. e.message
  else
    note = "✗ cancelled: " .. e.message
  end
  settle(e, note)
  return true
end

--- Ask for one field with vim.ui; `done(ok, value)`: ok false when the user
--- dismissed the prompt, value nil for "no value".
---@param f acp.ElicitationField
---@param current any
---@param done fun(ok: boolean, value: any)
function M.ask_field(f, current, done)
  local label = f.label .. (f.required and "*" or "")
  local prompt = ("%s (%s)"):format(label, M.describe_field(f))
  local NONE = "(no value)"
  if f.type == "enum" or f.type == "boolean" then
    local items = f.type == "enum" and vim.deepcopy(f.choices or {})
      or { { value = true, title = "yes" }, { value = false, title = "no" } }
    if not f.required then
      items[#items + 1] = { value = vim.NIL, title = NONE }
    end
    vim.ui.select(items, {
      prompt = prompt,
      kind = "acp.elicitation",
      format_item = function(item)
        return item.title .. ((current ~= nil and item.value == current) and " (current)" or "")
      end,
    }, function(choice)
      if not choice then
        return done(false)
      end
      if choice.value == vim.NIL then
        return done(true, nil)
      end
      done(true, choice.value)
    end)
  elseif f.type == "multi_select" then
    local picked = {}
    for _, v in ipairs(type(current) == "table" and current or {}) do
      picked[v] = true
    end
    local function loop()
      local items = { { done = true, title = "✓ done" } }
      for _, c in ipairs(f.choices or {}) do
        items[#items + 1] = c
      end
      vim.ui.select(items, {
        prompt = prompt .. ": toggle, then done",
        kind = "acp.elicitation",
        format_item = function(item)
          if item.done then
            return item.title
          end
          return (picked[item.value] and "[x] " or "[ ] ") .. item.title
        end,
      }, function(choice)
        if not choice then
          return done(false)
        end
        if choice.done then
          local list = {}
          for _, c in ipairs(f.choices or {}) do
            if picked[c.value] then
              list[#list + 1] = c.value
            end
          end
          return done(true, list)
        end
        picked[choice.value] = not picked[choice.value] or nil
        loop()
      end)
    end
    loop()
  else
    vim.ui.input({ prompt = prompt .. ": ", default = current ~= nil and show_value(current) or "" }, function(text)
      if text == nil then
        return done(false)
      end
      if text == "" then
        return done(true, nil)
      end
      if f.type == "integer" or f.type == "number" then
        -- Left as text when it is no number: the backend names the problem.
        return done(true, tonumber(text) or text)
      end
      done(true, text)
    end)
  end
end

--- Fill in a form field by field, then send it. Dismissing a prompt stops
--- (the values so far are kept for the next try).
---@param e acp.Elicitation
function M.fill(e)
  local values = vim.deepcopy(e.values)
  local fields = vim.tbl_filter(function(f)
    return f.type ~= "unknown"
  end, e.fields or {})
  local i = 0
  local function step()
    i = i + 1
    local f = fields[i]
    if not f then
      local ok, err = M.respond(e.request_id, { action = "accept", content = values })
      if not ok and err then
        util.notify("the answer was not sent: " .. err, vim.log.levels.ERROR)
      end
      return
    end
    local current = values[f.name]
    if current == nil then
      current = f.default
    end
    M.ask_field(f, current, function(ok, value)
      if not ok then
        e.values = values
        redraw(e)
        return
      end
      values[f.name] = value
      step()
    end)
  end
  step()
end

--- Answer an elicitation the user way: fill the form, or open the URL (and
--- accept: the agent then waits for the page, and so does the chat).
---@param request_id integer
function M.activate(request_id)
  local e = M.pending[request_id]
  if not e then
    return
  end
  if e.mode == "form" then
    -- One floating form (acp.chat.view.form); the prompts of vim.ui field by field
    -- when the user configured them.
    if (require("acp.config").options.elicitation or {}).ui == "vim.ui" then
      M.fill(e)
    else
      require("acp.chat.view.form").open(e, { respond = M.respond, refresh = M.refresh })
    end
  elseif not e.waiting then
    local openable, why = sanitize.openable(e.url)
    if not openable then
      util.notify(
        ("the link was not opened: %s. Press `y` to copy it if you want to look at it, `D` to decline"):format(why),
        vim.log.levels.WARN
      )
      return
    end
    -- openable() took only a string.
    local ok, cmd, err = pcall(vim.ui.open, e.url --[[@as string]])
    if not ok or not cmd then
      util.notify(
        ("could not open %s (%s); open it yourself, then press `a` again"):format(
          sanitize.url(e.url),
          sanitize.line(tostring(err or cmd), 200)
        ),
        vim.log.levels.ERROR
      )
      return
    end
    M.respond(e.request_id, { action = "accept" })
  end
end

--- Copy a URL elicitation's link, whole and as the agent sent it, to the
--- unnamed register (and the clipboard when there is one): the transcript
--- shows it shortened and made safe.
---@param request_id integer
function M.copy_url(request_id)
  local e = M.pending[request_id]
  if not (e and e.mode == "url" and e.url) then
    return
  end
  vim.fn.setreg('"', e.url)
  if vim.fn.has("clipboard") == 1 then
    pcall(vim.fn.setreg, "+", e.url)
  end
  util.notify(("copied the link (%d bytes)"):format(#e.url))
end

--- `:Acp elicitation`: answer the oldest pending elicitation of `chat_id`
--- (else any).
---@param chat_id? string
function M.pick(chat_id)
  local e = chat_id and M.for_chat(chat_id)[1]
  if not e then
    local ids = vim.tbl_keys(M.pending)
    table.sort(ids)
    for _, id in ipairs(ids) do
      if not M.pending[id].waiting then
        e = M.pending[id]
        break
      end
    end
  end
  if not e then
    util.notify("no question from an agent is waiting")
    return
  end
  M.activate(e.request_id)
end

--- Draw an elicitation's inline prompt again (its values changed in the
--- form, acp.chat.view.form).
---@param request_id integer
function M.refresh(request_id)
  local e = M.pending[request_id]
  if e then
    redraw(e)
  end
end

--- The backend withdrew an elicitation.
---@param request_id integer
function M.cancelled(request_id)
  local e = M.pending[request_id]
  if e then
    settle(e, "✗ question withdrawn: " .. e.message)
  end
end

--- The agent finished a URL elicitation.
---@param elicitation_id string
function M.completed(elicitation_id)
  for _, e in pairs(M.pending) do
    if e.elicitation_id == elicitation_id then
      settle(e, "✓ done: " .. (e.url or e.message))
      return
    end
  end
end

--- The chat closed or its agent stopped: nobody waits for these answers.
---@param chat_id string
---@param why string
function M.close_chat(chat_id, why)
  for _, e in ipairs(M.for_chat(chat_id)) do
    settle(e, "✗ question closed: " .. why)
  end
end

return M
