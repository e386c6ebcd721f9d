-- `:Acp` loads only what the first screen needs (issue #30: the command's
-- time was mostly module loading): its windows are drawn before the chat's
-- modules load. Run in a fresh Neovim, as a user's first
-- `:Acp` is: the modules loaded when the command returns.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

--- The acp modules loaded in a fresh Neovim once `:Acp` returned.
---@return table<string, boolean>
local function loaded_by_acp()
  local out = dir .. "/loaded.json"
  local script = dir .. "/probe.lua"
  T.write_file(
    script,
    ([[
vim.opt.rtp:prepend(%q)
dofile(%q)
local wins = #vim.api.nvim_list_wins()
vim.cmd("Acp")
local names = {}
for name in pairs(package.loaded) do
  if name:match("^acp") then
    names[#names + 1] = name
  end
end
local after = { wins = #vim.api.nvim_list_wins() - wins, winbars = {} }
for _, w in ipairs(vim.api.nvim_list_wins()) do
  after.winbars[#after.winbars + 1] = vim.wo[w].winbar
end
local prompt_buf = vim.api.nvim_get_current_buf()
vim.wait(5000, function()
  return package.loaded["acp.chat"] and require("acp.chat").current() ~= nil
end, 5)
local chat = require("acp.chat").current()
after.chat = chat ~= nil and chat.prompt_buf == prompt_buf
names = { names = names, after = after }
vim.fn.writefile({ vim.json.encode(names) }, %q)
vim.cmd("qall!")
]]):format(T.root, T.root .. "/plugin/acp.lua", out)
  )
  local res = vim
    .system({ vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", script }, {
      text = true,
      cwd = dir,
    })
    :wait(60000)
  T.eq(0, res.code, "the probe ran: " .. tostring(res.stderr))
  local got = vim.json.decode(T.read_file(out))
  local set = {}
  for _, name in ipairs(got.names) do
    set[name] = true
  end
  return set, got.after
end

T.test(
  ":Acp draws the chat's windows at once and loads the chat after the redraw; no module of tool calls, plans, the review or the backend",
  function()
    local loaded, after = loaded_by_acp()
    T.eq(2, after.wins, "the transcript and prompt windows are there when the command returns")
    T.contains(table.concat(after.winbars, "|"), "starting…", "saying the agent is starting")
    for _, name in ipairs({
      "acp.chat",
      "acp.chat.transcript",
      "acp.chat.blocks",
      "acp.chat.view.markdown",
      "acp.highlights",
      "acp.edits.review",
    }) do
      T.truthy(not loaded[name], name .. " loads after the first redraw")
    end
    T.truthy(after.chat, "then the chat takes the windows' buffers")
    for _, name in ipairs({
      "acp.chat.view.tool_call",
      "acp.chat.view.plan",
      "acp.chat.subagent",
      "acp.chat.context",
      "acp.edits.review.render",
      "acp.edits.review.actions",
      "acp.chat.backlog",
      "acp.rpc.backend",
      "acp.build",
    }) do
      T.truthy(not loaded[name], name .. " waits for its first use")
    end
  end
)

--- Runs `:Acp` in a fresh Neovim (env added to the editor's) after
--- `config` (Lua, as a user's config), and waits for the chat's session or
--- its failure: what the backend was sent (each method, and whether the
--- chat's modules were loaded then), error messages, what the user sees,
--- and the `got` fields `config` set.
---@param name string the probe's file name
---@param config string
---@param env? table<string, string>
---@return table
local function probe(name, config, env)
  local out = dir .. "/" .. name .. ".json"
  vim.fn.delete(out)
  local script = dir .. "/" .. name .. ".lua"
  T.write_file(
    script,
    ([[
vim.opt.rtp:prepend(%q)
dofile(%q)
got = { sent = {}, errors = {} }
vim.notify = function(msg, level)
  if level == vim.log.levels.ERROR then
    got.errors[#got.errors + 1] = msg
  end
end
%s
local notify = vim.rpcnotify
vim.rpcnotify = function(ch, method, ...)
  got.sent[#got.sent + 1] = { method = method, chat_loaded = package.loaded["acp.chat"] ~= nil }
  return notify(ch, method, ...)
end
vim.cmd("Acp")
vim.wait(20000, function()
  local chat = package.loaded["acp.chat"] and require("acp.chat").current()
  return chat ~= nil and (chat.session_id ~= nil or chat.status == "failed")
end, 5)
local chat = require("acp.chat").current()
got.status = chat and chat.status
got.session = chat and chat.session_id ~= nil
got.text = chat and table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n") or ""
pcall(require("acp.rpc.backend").stop)
vim.fn.writefile({ vim.json.encode(got) }, %q)
vim.cmd("qall!")
]]):format(T.root, T.root .. "/plugin/acp.lua", config, out)
  )
  local res = vim
    .system({ vim.v.progpath, "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", script }, {
      text = true,
      cwd = dir,
      env = env,
    })
    :wait(60000)
  T.eq(0, res.code, "the probe ran: " .. tostring(res.stderr))
  return vim.json.decode(T.read_file(out))
end

--- `:Acp` in a fresh Neovim whose config does not call setup().
---@param env? table<string, string>
---@return table
local function acp_until_ready(env)
  return probe("ready", "", env)
end

---@param got table a probe's result
---@return string[] the methods it sent, in order
local function methods_of(got)
  return vim.tbl_map(function(s)
    return s.method
  end, got.sent)
end

T.test("the chat's open goes to the backend behind the greeting, before the chat's modules load", function()
  local got = acp_until_ready()
  T.eq("ready", got.status, "the session started: " .. got.text)
  T.truthy(got.session, "with a session id")
  local methods = methods_of(got)
  T.eq("acp.hello", methods[1], "the greeting first: " .. table.concat(methods, ", "))
  T.eq("acp.open", methods[2], "the open right behind it, not after its answer")
  T.eq(false, got.sent[2].chat_loaded, "sent while the chat's modules were still to load")
end)

T.test("a backend that cannot start fails the chat :Acp drew, with a sentence", function()
  local got = acp_until_ready({ ACP_BACKEND = dir .. "/missing-acp-nvim" })
  T.eq("failed", got.status, "the chat failed")
  local missing = "ACP_BACKEND=" .. dir .. "/missing-acp-nvim is not an executable file"
  T.contains(got.text, missing, "the transcript says why")
  T.contains(table.concat(got.errors, "\n"), missing, "and so does a message")
  -- A backend that exits at once: the greeting's failure names it.
  local dead = dir .. "/dead-acp-nvim"
  T.write_file(dead, "#!/bin/sh\necho 'no config here' >&2\nexit 3\n")
  vim.fn.setfperm(dead, "rwxr-xr-x")
  got = acp_until_ready({ ACP_BACKEND = dead })
  T.eq("failed", got.status, "the chat failed")
  T.contains(got.text, "did not answer the handshake (it exited with code 3)", "the transcript says why")
  T.contains(got.text, "no config here", "with the backend's last words")
end)

--- A fresh Neovim whose config calls setup(`opts`) (env added): whether
--- the backend runs and is greeted before any command, what `:Acp` then
--- sends, and how its chat starts.
---@param opts table
---@param env? table<string, string>
---@return table
local function setup_then_acp(opts, env)
  local config = ([[
require("acp").setup(vim.json.decode(%q))
-- Idle for a while, as after a user's Neovim started (until the backend is
-- greeted and the chat's modules loaded, or two seconds).
vim.wait(2000, function()
  local b = package.loaded["acp.rpc.backend"]
  return b ~= nil and b.info() ~= nil and package.loaded["acp.events"] ~= nil
end, 5)
local backend = require("acp.rpc.backend")
got.running_before = backend.running()
got.greeted_before = backend.info() ~= nil
got.errors_before = #got.errors
got.chat_loaded_before = package.loaded["acp.chat"] ~= nil and package.loaded["acp.events"] ~= nil
]]):format(vim.json.encode(opts))
  return probe("prestart", config, env)
end

T.test("setup() starts the backend once Neovim is idle; :Acp then only opens the chat", function()
  local got = setup_then_acp({})
  T.eq(true, got.greeted_before, "running and greeted before any command")
  T.eq(true, got.chat_loaded_before, "and the chat's modules loaded")
  T.eq("ready", got.status, "the session started: " .. got.text)
  T.eq({ "acp.open" }, methods_of(got), "no second start, no second greeting")
  -- Switched off: nothing runs until the first command.
  got = setup_then_acp({ backend = { prestart = false } })
  T.eq(false, got.running_before, "no backend before the first command")
  T.eq(false, got.chat_loaded_before, "nor the chat's modules")
  T.eq("ready", got.status, "the command starts it: " .. got.text)
  T.eq("acp.hello", methods_of(got)[1], "greeted by the command")
  -- A backend that cannot start says nothing until a command needs it.
  got = setup_then_acp({}, { ACP_BACKEND = dir .. "/missing-acp-nvim" })
  T.eq(false, got.running_before, "nothing runs")
  T.eq(0, got.errors_before, "and nothing was said at start")
  T.eq("failed", got.status, "the command fails")
  T.contains(got.text, "is not an executable file", "saying why")
end)

T.run()
