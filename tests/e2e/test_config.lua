-- setup() validation, agent resolution, :Acp completion.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
local config = require("acp.config")

local function err_of(opts)
  return config.validate(opts)
end

T.test("bad options are rejected with the key named", function()
  T.contains(err_of({ layout = { position = "top" } }), "`layout.position`", "position")
  T.contains(err_of({ agents = { mine = { cmd = "mine acp" } } }), "`agents.mine.cmd`", "cmd string")
  T.contains(err_of({ agents = { mine = {} } }), "`agents.mine.cmd` is required", "cmd missing")
  T.contains(err_of({ agents = { mine = { cmd = { "x" }, envv = {} } } }), "`agents.mine.envv`", "typo in agent")
  T.contains(err_of({ permision = {} }), "`permision` is not a known option", "top-level typo")
  T.contains(err_of({ permission = { auto_allow = "read" } }), "`permission.auto_allow`", "auto_allow")
  T.contains(err_of({ keymaps = { submit = 1 } }), "`keymaps.submit`", "keymap")
  T.contains(err_of({ log_level = "loud" }), "`log_level`", "log level")
  T.contains(err_of({ default_agent = "nobody" }), "`default_agent`", "default agent")
  T.contains(err_of({ backend = { cmd = {} } }), "`backend.cmd`", "backend cmd")
  T.contains(err_of({ backend = { prestart = "yes" } }), "`backend.prestart` must be true or false", "prestart")
  T.eq(nil, err_of({ agents = { claude = { env = { A = "1" } } }, keymaps = { close = false } }), "valid options")
end)

T.test("setup with bad options applies the valid ones and names the ignored ones", function()
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m)
    msgs[#msgs + 1] = m
  end
  T.eq(true, require("acp").setup({ log_level = "debug" }), "valid setup")
  T.eq(
    false,
    require("acp").setup({
      log_level = "loud",
      agents = { mine = { cmd = { "mine", "acp" } }, broken = { cmd = "broken acp" } },
      default_agent = "mine",
      layout = { position = "top", width = 0.5 },
      keymaps = { submit = "<C-CR>" },
    }),
    "invalid setup"
  )
  vim.notify = orig
  T.eq("info", config.options.log_level, "the bad option takes its default")
  T.eq({ "mine", "acp" }, config.options.agents.mine.cmd, "the valid agent applies")
  T.eq(nil, config.options.agents.broken, "the broken agent is left out")
  T.eq("mine", config.default_agent(), "default agent applies")
  T.eq(0.5, config.options.layout.width, "the valid layout key applies")
  T.eq("right", config.options.layout.position, "the bad layout key takes its default")
  T.eq("<C-CR>", config.options.keymaps.submit, "keymaps apply")
  T.eq(1, #msgs, "one message")
  T.contains(msgs[1], "3 options ignored, the rest applies", "count")
  T.contains(msgs[1], "`log_level`", "names log_level")
  T.contains(msgs[1], "`agents.broken.cmd`", "names the agent")
  T.contains(msgs[1], "`layout.position`", "names the layout key")
end)

T.test("default agent is demo unless an agent is configured", function()
  require("acp").setup({})
  T.eq("demo", config.default_agent(), "demo by default")
  require("acp").setup({ agents = { mine = { cmd = { "mine" } } } })
  T.eq("mine", config.default_agent(), "the configured agent")
  require("acp").setup({ agents = { mine = { cmd = { "mine" } } }, default_agent = "claude" })
  T.eq("claude", config.default_agent(), "explicit default")
end)

T.test("agent quirks are validated and can be switched off", function()
  T.contains(
    err_of({ agents = { gemini = { quirks = { missing_file_read = "yes" } } } }),
    '`agents.gemini.quirks.missing_file_read` must be "empty" or "error"',
    "bad value"
  )
  T.contains(
    err_of({ agents = { gemini = { quirks = { typo = 1 } } } }),
    "`agents.gemini.quirks.typo` is not a known option",
    "typo"
  )
  require("acp").setup({ agents = { gemini = { quirks = { missing_file_read = "error" } } } })
  T.eq({ missing_file_read = "error" }, config.agent("gemini").quirks, "user wins over the preset")
end)

T.test("the editor's MCP server is on by default and can be switched off or reworded", function()
  T.contains(
    err_of({ agents = { claude = { editor_tools = "no" } } }),
    '`agents.claude.editor_tools` must be true, false or { prompt = "..." }',
    "bad value"
  )
  T.contains(
    err_of({ agents = { claude = { editor_tools = { prompt = 1 } } } }),
    "`agents.claude.editor_tools.prompt` must be a string",
    "bad prompt"
  )
  T.contains(
    err_of({ agents = { claude = { editor_tools = { promt = "x" } } } }),
    "`agents.claude.editor_tools.promt` is not a known option",
    "typo"
  )
  require("acp").setup({ agents = { claude = { editor_tools = false }, codex = { editor_tools = { prompt = "" } } } })
  T.eq(false, config.agent("claude").editor_tools, "switched off")
  T.eq(true, config.agent("codex").editor_tools, "on with a table")
  T.eq("", config.agent("codex").editor_tools_prompt, "no sentence")
  T.eq(true, config.agent("gemini").editor_tools, "on by default")
  T.eq(nil, config.agent("gemini").editor_tools_prompt, "the backend's sentence")
end)

T.test("presets resolve, can be overridden and disabled", function()
  require("acp").setup({ agents = { gemini = { env = { X = "1" } }, goose = false } })
  local g = config.agent("gemini")
  T.eq({ "gemini", "--acp" }, g.cmd, "preset cmd kept")
  T.eq({ missing_file_read = "empty" }, g.quirks, "gemini's quirk on in its preset")
  T.eq({}, config.agent("claude").quirks, "no quirk by default")
  T.eq({ X = "1" }, g.env, "env added")
  T.eq(nil, (config.agent("goose")), "disabled")
  T.eq(false, vim.tbl_contains(config.agent_names(), "goose"), "not listed")
  local demo = config.agent("demo")
  T.truthy(demo.cmd[1]:match("/target/%a+/acp%-fake%-agent$"), "demo is the bundled fake agent")
  T.eq(1, #demo.cmd, "demo runs without arguments")
  T.eq({ "claude-agent-acp" }, config.agent("claude").cmd, "claude preset")
  T.eq({ "codex-acp" }, config.agent("codex").cmd, "codex preset")
  T.eq({ "opencode", "acp" }, config.agent("opencode").cmd, "opencode preset")
end)

T.test(":Acp completes subcommands and agent names", function()
  require("acp").setup({})
  local commands = require("acp.commands")
  local subs = commands.complete("", "Acp ")
  for _, s in ipairs({ "new", "cancel", "restart", "log", "agents", "permission" }) do
    T.truthy(vim.tbl_contains(subs, s), "subcommand " .. s)
  end
  T.eq({ "reject", "restart", "review", "rewind" }, commands.complete("re", "Acp re"), "prefix")
  T.eq({ "all", "file" }, commands.complete("", "Acp accept "), "accept scopes")
  T.eq({ "claude", "codex" }, commands.complete("c", "Acp new c"), "agent names")
end)

T.test("a missing backend gives the one-line build hint", function()
  require("acp").setup({})
  local backend = require("acp.rpc.backend")
  local root = require("acp.util").plugin_root()
  if
    vim.fn.executable(root .. "/target/release/acp-nvim") == 1
    or vim.fn.executable(root .. "/target/debug/acp-nvim") == 1
  then
    require("acp").setup({ backend = { cmd = { "/nonexistent/acp-nvim" } } })
    local _, err = backend.find_cmd()
    T.contains(err, "backend.cmd", "names the bad option")
    return
  end
  local _, err = backend.find_cmd()
  T.eq(
    "the backend is not installed; run :Acp build (it downloads the backend for 0.1.0, or builds it with cargo)",
    err,
    "message"
  )
end)

T.test(":checkhealth acp runs", function()
  require("acp").setup({ agents = { mine = { cmd = { "no-such-agent-acp" } } } })
  vim.cmd("checkhealth acp")
  local text = T.text(0)
  T.contains(text, "acp.nvim", "section")
  T.contains(text, "Neovim", "version check")
  T.contains(text, "log file", "log path")
  T.not_contains(text, "WARNING claude", "no warning about presets the user never configured")
  T.contains(text, "claude: claude-agent-acp (preset, not configured)", "presets listed as info")
  T.contains(text, "mine (default): no-such-agent-acp is not found on PATH", "the configured agent is checked")
  if vim.fn.executable(T.root .. "/target/debug/acp-nvim") == 1 then
    T.contains(text, "matches the plugin", "backend handshake checked")
  end
  T.contains(text, "`backend.prestart` is on", "the prestart named")
  vim.cmd("bwipeout")
  require("acp").setup({ backend = { prestart = false } })
  vim.cmd("checkhealth acp")
  T.contains(T.text(0), "`backend.prestart` is off", "and when it is off")
end)

T.run()
