---@mod acp.rpc.protocol The one decode point of what the backend sends.
---
--- Every event of `require('acp.events').dispatch` passes `decode` first;
--- past it the plugin reads each field by its one snake_case name (the
--- backend encodes every key in snake_case, ACP's camelCase included, and
--- leaves out fields that have no value, so no field is ever `vim.NIL`). The
--- classes below are the contract of doc/protocol.md; the golden fixtures in
--- tests/fixtures/events.json (written by the backend's tests) are rendered
--- by tests/e2e/test_render.lua, so a change on either side fails a test.
---
--- Opaque agent data (`raw_input`, `raw_output`, `raw`, `_meta`, an auth
--- method's `env`) is passed as the agent sent it and may hold `vim.NIL`.

local M = {}

-- Parts of events --------------------------------------------------------------

---@class acp.ContentBlock An ACP content block, keys in snake_case.
---@field type "text"|"image"|"audio"|"resource_link"|"resource"|string
---@field text? string text
---@field mime_type? string image, audio, resource_link
---@field data? string image, audio (base64)
---@field uri? string image, resource_link
---@field name? string resource_link
---@field resource? {uri: string, text?: string, blob?: string, mime_type?: string} resource

---@class acp.ToolCallLocation
---@field path string
---@field line? integer

---@class acp.ToolCallContent One item of a tool call's content.
---@field type "content"|"diff"|"terminal"|"unknown"
---@field content? acp.ContentBlock content
---@field path? string diff
---@field old_text? string diff (absent for a new file)
---@field new_text? string diff
---@field terminal_id? string terminal
---@field raw? any unknown

---@class acp.ToolCall The complete state of a tool call (session model).
---@field id string
---@field title string
---@field name? string
---@field kind string read|edit|delete|move|search|execute|think|fetch|switch_mode|other|...
---@field status string pending|in_progress|completed|failed|cancelled|...
---@field content acp.ToolCallContent[]
---@field locations acp.ToolCallLocation[]
---@field raw_input? any
---@field raw_output? any
---@field agent_terminal? acp.AgentTerminal the terminal the agent runs itself for this call, from `_meta`

---@class acp.AgentTerminal
---@field terminal_id string the terminal_id of the tool call's content
---@field output string the newest output (a tail)
---@field truncated boolean older output was dropped
---@field exit? {exit_code?: integer, signal?: string} how it ended, once it did
---@field command? string the command line, when the agent reported it

---@class acp.ToolCallFields A tool call as a permission request carries it.
---@field tool_call_id string
---@field title? string
---@field name? string
---@field kind? string
---@field status? string
---@field content? acp.ToolCallContent[]
---@field locations? acp.ToolCallLocation[]
---@field raw_input? any
---@field raw_output? any

---@class acp.Entry An entry of the session's transcript.
---@field type "user_message"|"agent_message"|"thought"|"tool_call"|"unknown"
---@field message_id? string messages
---@field content? acp.ContentBlock[]|acp.ToolCallContent[] messages; tool calls
---@field id? string tool_call (and every field of acp.ToolCall)
---@field kind? string unknown: the update's kind; tool_call: the tool kind
---@field raw? any unknown

---@class acp.PlanEntry
---@field content string
---@field priority string high|medium|low (unknown values kept)
---@field status string pending|in_progress|completed (unknown values kept)

---@class acp.SessionMode
---@field id string
---@field name string
---@field description? string

---@class acp.Modes
---@field current_mode_id? string absent until the agent names one
---@field available_modes? acp.SessionMode[] absent when a mode change came before the list

---@class acp.ConfigOption A session config option (select or boolean).
---@field id string
---@field name string
---@field type "select"|"boolean"|string
---@field category? string
---@field current_value any
---@field options? table[] select: `{value, name}` or groups `{name, options}`

---@class acp.Command A slash command of the agent.
---@field name string
---@field description string
---@field input? {hint: string}

---@class acp.Usage
---@field used integer
---@field size integer
---@field cost? {amount: number, currency: string}

---@class acp.AuthMethod
---@field id string
---@field name string
---@field description? string
---@field type? string
---@field args? string[]
---@field env? table<string, string>

---@class acp.PermissionOption
---@field option_id string
---@field name string
---@field kind string allow_once|allow_always|reject_once|reject_always|...

---@class acp.ReviewSummary
---@field path string
---@field status "created"|"modified"|"deleted"
---@field hunks integer 0 when nothing is left to review
---@field added integer
---@field removed integer
---@field first_line? integer 0-based

---@class acp.SessionInfo One session of `session/list`.
---@field session_id string
---@field cwd string
---@field title? string
---@field updated_at? string

---@alias acp.Capabilities table the agent's `initialize` capabilities, snake_case (`load_session`, `prompt_capabilities.embedded_context`, `session_capabilities.resume`, `auth.logout`...)

-- Session changes ---------------------------------------------------------------

---@class acp.SessionChange
---@field change "entry_added"|"text_appended"|"message_replaced"|"tool_call_changed"|"plan_replaced"|"plan_updated"|"plan_removed"|"subagent_changed"|"child"|"session_message_changed"|"mode_changed"|"modes_changed"|"config_options_changed"|"commands_changed"|"usage_changed"|"notice"|"compaction_changed"|"turn_usage"|"info_changed"|"unknown"
---@field index? integer entry_added, text_appended, message_replaced, tool_call_changed, session_message_changed: the entry
---@field entry? acp.Entry entry_added, message_replaced (the whole message now)
---@field content? acp.ContentBlock text_appended
---@field message_id? string text_appended
---@field tool_call? acp.ToolCall tool_call_changed
---@field entries? acp.PlanEntry[] plan_replaced
---@field current_mode_id? string mode_changed, modes_changed
---@field available_modes? acp.SessionMode[] modes_changed
---@field config_options? acp.ConfigOption[] config_options_changed
---@field available_commands? acp.Command[] commands_changed
---@field usage? acp.Usage|acp.TurnUsage usage_changed (context window); turn_usage (tokens of the turn)
---@field plan? acp.PlanDocument plan_updated
---@field plan_id? string plan_removed
---@field subagent? acp.Subagent subagent_changed
---@field session_id? string child: the subagent's session
---@field child_change? acp.SessionChange child: the change in that session
---@field message? acp.SessionMessage session_message_changed
---@field severity? string notice
---@field title? string info_changed; notice
---@field description? string notice
---@field id? string compaction_changed
---@field status? string compaction_changed
---@field summary? acp.ContentBlock[] compaction_changed
---@field error? string compaction_changed
---@field updated_at? string info_changed
---@field kind? string unknown: the update's kind
---@field raw? any unknown: the update as the agent sent it

---@class acp.TurnUsage Tokens one turn used (`turn_usage`).
---@field total integer
---@field input integer
---@field output integer
---@field thought? integer
---@field cached_read? integer
---@field cached_write? integer

---@class acp.SessionMessage A message between two sessions (`session_message_changed`).
---@field message_id string
---@field sender_session_id? string
---@field recipient_session_id? string
---@field content acp.ContentBlock[]

-- Events ---------------------------------------------------------------------------

---@class acp.Event
---@field type string
---@field chat_id? string every event of a chat

---@class acp.ev.SessionStarted: acp.Event
---@field session_id string
---@field agent_name string
---@field modes? acp.Modes
---@field config_options? acp.ConfigOption[]
---@field capabilities acp.Capabilities
---@field auth_methods? acp.AuthMethod[]
---@field transcript_path? string
---@field turn_base? integer the chat's turns before this session's first prompt (the backend numbers turns)

---@class acp.ev.OpenFailed: acp.Event
---@field message string
---@field stderr_tail? string

---@class acp.ev.AuthRequired: acp.Event
---@field auth_methods acp.AuthMethod[]

---@class acp.ev.Session: acp.Event
---@field change acp.SessionChange

---@class acp.ev.PermissionRequest: acp.Event
---@field request_id integer
---@field tool_call acp.ToolCallFields
---@field options acp.PermissionOption[]

---@class acp.ev.PermissionCancelled: acp.Event
---@field request_id integer

---@class acp.ev.PermissionAuto: acp.Event
---@field tool_call acp.ToolCallFields
---@field option? acp.PermissionOption

---@class acp.ev.Terminal: acp.Event
---@field kind "started"|"output"|"exited"|"released"
---@field session_id string
---@field terminal_id string
---@field command? string started: the command line
---@field data? string output
---@field truncated? boolean output
---@field exit_status? {exit_code?: integer, signal?: string} exited

---@class acp.ev.FileEdited: acp.Event
---@field path string
---@field buffer_updated boolean
---@field kept_unsaved boolean
---@field waiting boolean with kept_unsaved: the buffer has open conflicts, the edit waits for them

---@class acp.ev.TurnEnded: acp.Event
---@field stop_reason string

---@class acp.ev.PromptFailed: acp.Event
---@field message string

---@class acp.ev.AgentExited: acp.Event
---@field status string
---@field stderr_tail string

---@class acp.ev.Warning: acp.Event
---@field message string

---@class acp.ev.SessionsListed: acp.Event
---@field request_id string
---@field agent_name string
---@field capabilities? acp.Capabilities
---@field sessions? acp.SessionInfo[]
---@field message? string

---@class acp.ev.LoggedOut: acp.Event

---@class acp.ev.ReviewChanged: acp.Event
---@field path string
---@field summary acp.ReviewSummary
---@field review? acp.ReviewFile the file's whole review now (nil: nothing left to review)
---@field revision integer grows with every `review_changed` of the backend: an older one than the review kept is dropped

---@class acp.ev.ReviewDeletePending: acp.Event
---@field path string

---@class acp.RegistryListing One agent of the registry (`agents_listed`).
---@field id string
---@field name string
---@field version string
---@field description string
---@field homepage? string
---@field kinds ("binary"|"npx"|"uvx")[] installable here, best first; empty when none is
---@field installed_version? string
---@field update boolean the registry's version is newer than the installed one
---@field installing boolean

---@class acp.InstalledListing
---@field id string
---@field name string
---@field version string
---@field kind "binary"|"npx"|"uvx"

---@class acp.ev.AgentsListed: acp.Event
---@field request_id string
---@field agents? acp.RegistryListing[] absent when the registry could not be loaded
---@field installed acp.InstalledListing[]
---@field origin? "network"|"cache"|"bundled"
---@field fetched_at? integer unix seconds
---@field message? string

---@class acp.ev.AgentInstallProgress: acp.Event
---@field id string
---@field message string
---@field done? integer bytes downloaded
---@field total? integer bytes to download

---@class acp.ev.AgentInstalled: acp.Event
---@field id string
---@field name string
---@field version string

---@class acp.ev.AgentInstallFailed: acp.Event
---@field id string
---@field message string
---@field cancelled boolean
---@field unverified boolean refused only for want of the binary's SHA-256: ask, then install with allow_unverified

---@class acp.ev.AgentRemoved: acp.Event
---@field id string
---@field removed boolean
---@field message? string

-- Calls into Lua and replies ---------------------------------------------------------

-- `acp.edits.fs.read_for_agent` (acp.FsReadArgs -> acp.FsReadReply or nil) and
-- `acp.edits.fs.apply` (acp.FsApplyArgs -> acp.FsApplyReply) are annotated in
-- lua/acp/edits/fs.lua.

---@class acp.FileSavedArgs `acp.file_saved` (notification): the user saved a buffer.
---@field path string absolute, symlinks resolved

---@class acp.HelloReply The backend's answer to `acp.hello`.
---@field backend_version string
---@field ok boolean
---@field log_file? string
---@field message? string

---@class acp.ReviewHunk
---@field id integer
---@field old_start integer 0-based
---@field old_lines string[]
---@field new_start integer 0-based
---@field new_lines string[]

---@class acp.ReviewFile A file's whole review, as `review_changed` carries it.
---@field path string
---@field status "created"|"modified"|"deleted"
---@field baseline? string
---@field current? string
---@field hunks acp.ReviewHunk[]

---@class acp.ElicitationRequestEvent The agent asks the user (lua/acp/chat/view/elicitation.lua).
---@field type "elicitation_request"
---@field chat_id? string absent when no chat is known for it
---@field request_id integer
---@field session_id? string absent for request-scoped ones (during a login)
---@field mode "form"|"url"
---@field message string
---@field requested_schema? table form: the JSON Schema as the agent sent it (opaque)
---@field fields? acp.ElicitationField[] form: the fields in the agent's order
---@field url? string url
---@field elicitation_id? string url
---@field tool_call_id? string
---@field tool_title? string

---@class acp.ElicitationCancelledEvent
---@field type "elicitation_cancelled"
---@field chat_id? string
---@field request_id integer

---@class acp.ElicitationCompletedEvent
---@field type "elicitation_completed"
---@field chat_id? string
---@field elicitation_id string

--- The fields each event type cannot do without (doc/protocol.md).
---@type table<string, string[]>
M.REQUIRED = {
  session_started = { "chat_id", "session_id", "agent_name", "capabilities" },
  open_failed = { "chat_id", "message" },
  auth_required = { "chat_id", "auth_methods" },
  session = { "chat_id", "change" },
  permission_request = { "chat_id", "request_id", "tool_call", "options" },
  permission_cancelled = { "chat_id", "request_id" },
  permission_auto = { "chat_id", "tool_call" },
  elicitation_request = { "request_id", "mode", "message" },
  elicitation_cancelled = { "request_id" },
  elicitation_completed = { "elicitation_id" },
  terminal = { "chat_id", "kind", "terminal_id" },
  file_edited = { "chat_id", "path", "buffer_updated", "kept_unsaved", "waiting" },
  turn_ended = { "chat_id", "stop_reason" },
  prompt_failed = { "chat_id", "message" },
  agent_exited = { "chat_id", "status", "stderr_tail" },
  warning = { "message" },
  sessions_listed = { "request_id", "agent_name" },
  logged_out = { "chat_id" },
  rewind_turns = { "chat_id", "turns" },
  rewind_preview = { "chat_id", "turn", "files" },
  rewound = { "chat_id", "turn", "ok", "restored", "removed", "failed" },
  review_changed = { "chat_id", "path", "summary" },
  review_delete_pending = { "chat_id", "path" },
  agents_listed = { "request_id", "installed" },
  agent_install_progress = { "id", "message" },
  agent_installed = { "id", "name", "version" },
  agent_install_failed = { "id", "message", "cancelled" },
  agent_removed = { "id", "removed" },
}

--- Checks one event from the backend against the contract. Types this
--- plugin does not know pass (a newer backend may send them; the
--- dispatcher ignores them).
---@param ev any
---@return acp.Event? ev, string? err why the event cannot be used
function M.decode(ev)
  if type(ev) ~= "table" or type(ev.type) ~= "string" then
    return nil, ("an event without a type: %s"):format(vim.inspect(ev))
  end
  local required = M.REQUIRED[ev.type]
  if required then
    for _, field in ipairs(required) do
      if ev[field] == nil then
        return nil, ("a %s event without `%s`; update the acp.nvim plugin and backend together"):format(ev.type, field)
      end
    end
  end
  if ev.type == "session" and type(ev.change) == "table" and type(ev.change.change) ~= "string" then
    return nil, "a session event whose change has no kind"
  end
  return ev
end

-- Transcripts -------------------------------------------------------------------

--- The record format the backend writes (the header's `version`): each
--- record is an event as `decode` gets it, without `chat_id`.
M.TRANSCRIPT_VERSION = 2

--- The `session` changes that are chat state (mode, commands, usage, title),
--- not conversation: a replay applies them at once and a transcript player
--- skips them (Chat:on_session_change draws them).
---@type table<string, true>
M.CHAT_STATE_CHANGES = {
  mode_changed = true,
  modes_changed = true,
  config_options_changed = true,
  commands_changed = true,
  usage_changed = true,
  info_changed = true,
}

--- Whether a session change is part of the conversation an agent's replay
--- draws again: not chat state, nor a turn's usage note (which only the
--- live chat showed).
---@param change acp.SessionChange
---@return boolean
function M.is_conversation(change)
  return not M.CHAT_STATE_CHANGES[change.change] and change.change ~= "turn_usage"
end

--- Keys whose values are the agent's own data (as the backend's encoder).
local OPAQUE = { raw = true, raw_input = true, raw_output = true, _meta = true, meta = true, env = true }

---@param key string
---@return string
local function snake_key(key)
  return (key:gsub("([%l%d])(%u)", function(a, b)
    return a .. "_" .. b:lower()
  end))
end

---@param v any
---@return any
local function snake_keys(v)
  if type(v) ~= "table" then
    return v
  end
  local out = {}
  for k, x in pairs(v) do
    if type(k) == "string" then
      local key = snake_key(k)
      out[key] = OPAQUE[key] and x or snake_keys(x)
    else
      out[k] = snake_keys(x)
    end
  end
  return out
end

--- One record of a transcript file written with format `version`. Records
--- of version 1 (before the protocol was snake_case throughout) carried
--- acp-client's camelCase keys: they are renamed here, once, so replaying
--- an old transcript reads the same fields as a live chat.
---@param record table
---@param version integer
---@return table
function M.decode_record(record, version)
  if (tonumber(version) or 1) < 2 then
    return snake_keys(record)
  end
  return record
end

return M
