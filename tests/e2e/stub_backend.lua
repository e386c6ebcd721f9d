-- A stand-in for the acp-nvim backend, run as `nvim --headless -l` and
-- speaking msgpack-RPC on stdio, to test the plugin's side of the protocol
-- (handshake, parameter encoding, death, restart) without the Rust build.
--
-- Env: STUB_RECORD  file that gets one JSON line per received message, plus a
--                   line {"raw_env_is_map": bool} for acp.open.
--      STUB_HELLO_OK "0" -> acp.hello answers ok=false.
--      STUB_HELLO_NOTIFY "0" -> an acp.hello notification is not answered
--                   (a backend older than the notification form).
-- On acp.open it sends session_started; on acp.prompt an agent message
-- echoing the prompt and turn_ended.

local record = os.getenv("STUB_RECORD")
local hello_ok = os.getenv("STUB_HELLO_OK") ~= "0"
local hello_notify = os.getenv("STUB_HELLO_NOTIFY") ~= "0"
local chan
local next_id = 1000

local function log(obj)
  if record then
    local f = io.open(record, "a")
    if f then
      f:write(vim.json.encode(obj) .. "\n")
      f:close()
    end
  end
end

local function send(msg)
  vim.fn.chansend(chan, vim.mpack.encode(msg))
end

local function dispatch(events)
  next_id = next_id + 1
  send({ 0, next_id, "nvim_exec_lua", { "require('acp.events').dispatch(...)", { events } } })
end

local handlers = {}

function handlers.acp_hello(p)
  if hello_ok then
    return { backend_version = "0.1.0", ok = true, log_file = "stub.log" }
  end
  return {
    backend_version = "9.9.9",
    ok = false,
    message = "acp.nvim backend 9.9.9 does not match plugin " .. tostring(p.plugin_version) .. ": rebuild it",
    log_file = "stub.log",
  }
end

function handlers.acp_open(p)
  vim.schedule(function()
    dispatch({
      {
        type = "session_started",
        chat_id = p.chat_id,
        session_id = "stub-" .. p.chat_id,
        agent_name = p.agent.name,
        capabilities = vim.empty_dict(),
      },
    })
  end)
  return true
end

function handlers.acp_prompt(p)
  local text = p.blocks[1] and p.blocks[1].text or ""
  dispatch({
    {
      type = "session",
      chat_id = p.chat_id,
      change = {
        change = "entry_added",
        index = 0,
        entry = { type = "agent_message", content = { { type = "text", text = "echo: " .. text } } },
      },
    },
    { type = "turn_ended", chat_id = p.chat_id, stop_reason = "end_turn" },
  })
end

function handlers.acp_shutdown()
  vim.schedule(function()
    os.exit(0)
  end)
  return true
end

function handlers.acp_close()
  return true
end

local unpacker = vim.mpack.Unpacker()

local function on_message(msg, raw)
  local kind = msg[1]
  if kind == 0 then
    local id, method, args = msg[2], msg[3], msg[4]
    local params = args[1]
    log({ method = method, params = params })
    if method == "acp.open" then
      log({ raw_env_is_map = raw:find("\163env\128", 1, true) ~= nil or raw:find("\163env\129", 1, true) ~= nil })
    end
    local h = handlers[method:gsub("%.", "_")]
    local result = h and h(params) or vim.NIL
    send({ 1, id, vim.NIL, result })
  elseif kind == 2 then
    log({ method = msg[2], params = msg[3][1], notification = true })
    if msg[2] == "acp.hello" then
      -- Answered by calling the plugin back, as acp-nvim does.
      if hello_notify then
        next_id = next_id + 1
        send({
          0,
          next_id,
          "nvim_exec_lua",
          { "require('acp.rpc.backend').on_hello(...)", { handlers.acp_hello(msg[3][1]) } },
        })
      end
      return
    end
    local h = handlers[msg[2]:gsub("%.", "_")]
    if h then
      h(msg[3][1])
    end
  end
end

local pending = ""
chan = vim.fn.stdioopen({
  on_stdin = function(_, data)
    -- Channel data is a list of lines with NUL bytes written as "\n".
    local parts = {}
    for i, item in ipairs(data) do
      parts[i] = item:gsub("\n", "\0")
    end
    local chunk = table.concat(parts, "\n")
    if chunk == "" and #data == 1 then
      os.exit(0) -- EOF
    end
    pending = pending .. chunk
    local pos = 1
    while pos <= #pending do
      local obj, newpos = unpacker(pending, pos)
      if obj == nil then
        -- Incomplete: the unpacker keeps what it consumed.
        pos = newpos
        break
      end
      on_message(obj, pending:sub(pos, newpos - 1))
      pos = newpos
    end
    pending = pending:sub(pos)
  end,
})

-- Keep running until stdin closes or acp.shutdown.
while true do
  vim.wait(1000000, function()
    return false
  end)
end
