---@mod acp.config.defaults The options acp.nvim knows: their types, the
--- defaults and the built-in agent presets (data only: checked by
--- acp.config.validate, applied by acp.config).

local M = {}

---@class acp.AgentConfig
---@field cmd string[] program and arguments
---@field env? table<string,string> extra environment (added to Neovim's own)
---@field cwd? string working directory of the agent process
---@field init_timeout? integer ms the agent may take to answer `initialize` (default 60000)
---@field mcp_servers? table[] MCP servers for this agent's sessions (added to the global `mcp_servers`)
---@field quirks? acp.AgentQuirks workarounds for one agent's bugs (see :help acp-quirks)
---@field system_prompt? string|acp.SystemPrompt instructions for the agent's system prompt (replaces the global `system_prompt`)
---@field protocol_version? 1|2 newest ACP version to offer (default 1; 2 is a preview, an agent answering 1 still works)
---@field editor_tools? boolean|acp.EditorToolsConfig offer the editor's MCP server to this agent (default true; see :help acp-editor-tools)

---@class acp.EditorToolsConfig
---@field prompt? string the sentence appended to the client system prompt about the tools ("" sends none)

---@class acp.AgentQuirks
---@field missing_file_read? "error"|"empty" `fs/read_text_file` of a missing file inside the workspace: the spec's error (default), or empty content

---@class acp.ResolvedAgent
---@field name string
---@field cmd string[]
---@field env table<string,string>
---@field cwd? string
---@field init_timeout? integer ms
---@field protocol_version? 1|2 newest ACP version to offer
---@field mcp_servers table[] ACP McpServer objects (global ones first)
---@field quirks acp.AgentQuirks
---@field system_prompt? acp.SystemPrompt the agent's or the global `system_prompt`, normalized
---@field editor_tools boolean offer the editor's MCP server
---@field editor_tools_prompt? string its system prompt sentence; the backend's default when nil

---@class acp.LayoutConfig
---@field position "right"|"left"|"float"|"tab"
---@field width number columns, or a fraction of the editor width when < 1
---@field height number float height: rows, or a fraction when < 1
---@field input_height integer rows of the prompt input window

---@class acp.KeymapConfig
---@field submit string|false prompt buffer, normal mode
---@field submit_insert string|false prompt buffer, insert mode
---@field cancel string|false both buffers, normal mode
---@field close string|false both buffers, normal mode: hide the chat windows
---@field jump string|false transcript: open the location or diff under the cursor
---@field diff string|false transcript: open the diff of the tool call under the cursor
---@field permission string|false transcript: answer a pending permission with vim.ui.select
---@field focus_prompt string|false transcript: jump to the prompt input
---@field restart string|false transcript: restart a stopped agent and continue the session
---@field open_review string|false transcript: open the file of the tool call under the cursor with its inline diff (a pending edit: preview it)
---@field yank_code string|false transcript: yank the fenced code block under the cursor
---@field open_code string|false transcript: open the fenced code block under the cursor in a split, with its language's filetype
---@field edit_prompt string|false transcript: on a prompt you sent, put its text in the prompt input to edit and send again
---@field rewind_prompt string|false transcript: on a prompt you sent, rewind to before its turn and put its text in the prompt input
---@field history_prev string|false prompt, both modes, on its first line: the previous prompt sent
---@field history_next string|false prompt, both modes, on its last line: the next prompt sent (then the draft)
---@field review_next string|false reviewed buffers: next agent hunk
---@field review_prev string|false reviewed buffers: previous agent hunk
---@field review_accept string|false reviewed buffers: accept the hunk under the cursor
---@field review_reject string|false reviewed buffers: reject the hunk under the cursor
---@field review_accept_file string|false reviewed buffers: accept every change of the file
---@field review_reject_file string|false reviewed buffers: reject every change of the file

---@class acp.PermissionConfig
---@field auto_allow string[] tool kinds answered "allow" without asking (e.g. "read")
---@field remember boolean remember "always" answers for the project (saved under stdpath("state"), kept across restarts)
---@field ask_terminal boolean ask before every command an agent runs in a terminal (terminal/create), even when the agent did not ask; off by default

---@class acp.ContextConfig
---@field hidden_files boolean `@` completion also offers hidden files (names starting with ".")
---@field max_embed_bytes integer larger files are sent as links, not embedded
---@field max_image_bytes integer larger images are not sent
---@field auto_complete boolean typing `@` or `/` at the start of a word in the prompt opens the completion menu

---@class acp.NotifyConfig
---@field turn_end boolean a turn ended while its chat is hidden or Neovim is not focused
---@field permission boolean a permission request waits (same condition)
---@field question boolean the agent asks the user a question (same condition)

---@class acp.ElicitationConfig
---@field ui "form"|"vim.ui" how an agent's question (a form) is answered: one floating form, or vim.ui.input / vim.ui.select field by field

---@class acp.Config
---@field elicitation acp.ElicitationConfig
---@field notify acp.NotifyConfig vim.notify when a chat needs you and you may not see it
---@field agents table<string, acp.AgentConfig|false>
---@field default_agent? string
---@field layout acp.LayoutConfig
---@field keymaps acp.KeymapConfig
---@field permission acp.PermissionConfig
---@field log_level "error"|"warn"|"info"|"debug"|"trace"
---@field backend { cmd?: string[]|string, release_url?: string }
---@field mcp_servers table[] MCP server descriptions passed to every new session
---@field system_prompt? string|acp.SystemPrompt instructions sent to every agent that takes a client system prompt (see :help acp-system-prompt)
---@field context acp.ContextConfig
---@field transcripts boolean keep a JSONL transcript of every session under stdpath("state")/acp/transcripts
---@field registry { url?: string, dir?: string } the ACP agent registry (`:Acp agents`): its index URL (default: the published one) and where agents are installed (default: stdpath("data")/acp/agents)

--- Built-in agents. `demo` is resolved at use time (see acp.config `agent`).
---@type table<string, acp.AgentConfig>
M.presets = {
  claude = { cmd = { "claude-agent-acp" } },
  codex = { cmd = { "codex-acp" } },
  -- `--experimental-acp` is deprecated. gemini-cli reads a file before it
  -- creates it and gives up when that read fails (its issue 9280), so it
  -- cannot create files through a client that answers the spec's error.
  gemini = { cmd = { "gemini", "--acp" }, quirks = { missing_file_read = "empty" } },
  goose = { cmd = { "goose", "acp" } },
  opencode = { cmd = { "opencode", "acp" } },
}

---@type acp.Config
M.defaults = {
  agents = {},
  default_agent = nil,
  layout = { position = "right", width = 0.4, height = 0.8, input_height = 5 },
  keymaps = {
    submit = "<CR>",
    submit_insert = "<C-s>",
    cancel = "<C-c>",
    close = "q",
    jump = "<CR>",
    diff = "d",
    permission = "p",
    focus_prompt = "i",
    restart = "R",
    open_review = "gd",
    yank_code = "yc",
    open_code = "gC",
    edit_prompt = "cc",
    rewind_prompt = "cR",
    history_prev = "<Up>",
    history_next = "<Down>",
    review_next = "]h",
    review_prev = "[h",
    review_accept = "<localleader>aa",
    review_reject = "<localleader>ar",
    review_accept_file = "<localleader>aA",
    review_reject_file = "<localleader>aR",
  },
  permission = { auto_allow = {}, remember = true, ask_terminal = false },
  log_level = "info",
  backend = { cmd = nil },
  mcp_servers = {},
  context = {
    hidden_files = false,
    max_embed_bytes = 256 * 1024,
    max_image_bytes = 5 * 1024 * 1024,
    auto_complete = true,
  },
  transcripts = true,
  registry = {},
  notify = { turn_end = true, permission = true, question = true },
  elicitation = { ui = "form" },
}

return M
