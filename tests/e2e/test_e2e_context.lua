-- End to end: slash command and @ completion in the prompt, context blocks
-- (embedded resources with unsaved text, links, ranges, images) as the fake
-- agent received them.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

local save_turns = {
  {
    match = "more commands",
    steps = {
      { type = "commands", availableCommands = { { name = "review", description = "Review the diff" } } },
    },
  },
  { steps = { { type = "savePrompt", path = "prompt.json" }, { type = "text", text = "saved" } } },
}

T.setup_fake({
  -- The fake agent advertises image and embeddedContext by default.
  full = {
    sessionStart = {
      {
        type = "commands",
        availableCommands = {
          { name = "plan", description = "Make a plan", input = { hint = "what to plan" } },
          { name = "test", description = "Run the tests" },
        },
      },
    },
    turns = save_turns,
  },
  links = {
    initialize = { agentCapabilities = { promptCapabilities = { embeddedContext = false, image = false } } },
    turns = save_turns,
  },
}, dir)

T.require_binaries()

local PNG = "\137PNG\r\n\26\n\0\0\0\rIHDR fake image bytes"

--- Put `text` in the chat's prompt, send it, wait for the turn, and return
--- the content blocks the agent received.
local function send(chat, text)
  local saved = dir .. "/prompt.json"
  os.remove(saved)
  vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, vim.split(text, "\n"))
  local before = #(T.turns[chat.chat_id] or {})
  chat:submit()
  T.wait(function()
    return #(T.turns[chat.chat_id] or {}) > before
  end, "turn end; transcript:\n" .. T.text(chat.bufnr))
  T.eq("end_turn", T.turns[chat.chat_id][before + 1], "stop reason")
  return vim.json.decode(T.read_file(saved))
end

--- Words of the completion items for `base`, with the cursor at the end of
--- `line` in the prompt.
local function complete(chat, line)
  if not vim.fn.win_findbuf(chat.prompt_buf)[1] then
    chat:show()
  end
  vim.api.nvim_set_current_win(vim.fn.win_findbuf(chat.prompt_buf)[1])
  -- Normal mode keeps the cursor on a character: a trailing space puts it
  -- where insert mode would be, right after `line`.
  vim.api.nvim_buf_set_lines(chat.prompt_buf, 0, -1, false, { line .. " " })
  vim.api.nvim_win_set_cursor(0, { 1, #line })
  local omni = require("acp.chat.prompt").omnifunc
  local start = omni(1, "")
  T.truthy(start >= 0, "completion starts in " .. line)
  return omni(0, line:sub(start + 1)), start
end

local function words(items)
  local out = {}
  for _, it in ipairs(items) do
    out[#out + 1] = it.word
  end
  return out
end

local function file_uri(name)
  return vim.uri_from_fname(dir .. "/" .. name)
end

T.test("slash commands complete with descriptions and input hints, updated by the agent", function()
  local chat = T.open_chat("full", dir)
  chat:show()
  T.wait(function()
    return #chat.commands == 2
  end, "the agent's commands")
  local items, start = complete(chat, "/p")
  T.eq(0, start, "completion starts at the slash")
  T.eq({ "/plan" }, words(items), "matching command")
  T.eq("Make a plan <what to plan>", items[1].menu, "description and hint in the menu")
  T.eq("Make a plan\n\nInput: what to plan", items[1].info, "description and hint in the info")
  T.eq({ "/plan", "/test" }, words((complete(chat, "/"))), "every command")
  T.eq("Run the tests", complete(chat, "/t")[1].menu, "a command without hint")
  T.turn(chat, "more commands")
  T.eq({ "/review" }, words((complete(chat, "/"))), "the list follows available_commands_update")
end)

T.test("typing @ or / at the start of a word opens the menu; mid-word it does not", function()
  local prompt = require("acp.chat.prompt")
  T.truthy(prompt.starts_completion("", "/"), "/ at the start")
  T.truthy(prompt.starts_completion("look at ", "@"), "@ after a space")
  T.truthy(not prompt.starts_completion("me", "@"), "an e-mail address")
  T.truthy(not prompt.starts_completion("src", "/"), "a path")
  T.truthy(not prompt.starts_completion("", "x"), "other characters")
  local chat = T.open_chat("full", dir)
  chat:show()
  local acs = vim.api.nvim_get_autocmds({ event = "InsertCharPre", buffer = chat.prompt_buf })
  T.eq(1, #acs, "the prompt triggers completion while typing")
  T.contains(
    require("acp.config").validate({ context = { auto_complete = "yes" } }),
    "`context.auto_complete`",
    "boolean"
  )
end)

T.test("@ completion offers files minus .gitignore, buffers, and new files", function()
  T.write_file(dir .. "/.gitignore", "ignored.txt\nbuild/\nprompt.json\n")
  vim.fn.mkdir(dir .. "/src", "p")
  vim.fn.mkdir(dir .. "/build", "p")
  T.write_file(dir .. "/src/main.rs", "fn main() {}\n")
  T.write_file(dir .. "/ignored.txt", "x\n")
  T.write_file(dir .. "/build/out.rs", "x\n")
  local chat = T.open_chat("full", dir)
  chat:show()
  local all = words((complete(chat, "see @")))
  T.truthy(vim.tbl_contains(all, "@src/main.rs"), "a workspace file: " .. vim.inspect(all))
  T.truthy(not vim.tbl_contains(all, "@ignored.txt"), "ignored file left out: " .. vim.inspect(all))
  T.truthy(not vim.tbl_contains(all, "@build/out.rs"), "ignored directory left out: " .. vim.inspect(all))
  T.eq({ "@src/main.rs" }, words((complete(chat, "@main"))), "a query narrows the list")

  T.write_file(dir .. "/src/fresh.rs", "// new\n")
  T.wait(function()
    return vim.tbl_contains(words((complete(chat, "@fresh"))), "@src/fresh.rs")
  end, "the new file in the completion")

  vim.cmd("edit " .. dir .. "/notes-buffer.md")
  local items = complete(chat, "@notes")
  T.eq("@notes-buffer.md", items[1].word, "an open buffer that is not on disk yet")
  T.eq("[buffer]", items[1].menu, "marked as a buffer")
end)

T.test("a mention is sent as an embedded resource holding the unsaved buffer text", function()
  T.write_file(dir .. "/a.txt", "on disk\n")
  vim.cmd("edit " .. dir .. "/a.txt")
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "unsaved line", "second" })
  local chat = T.open_chat("full", dir)
  local blocks = send(chat, "look at @a.txt, please")
  T.eq({ type = "text", text = "look at @a.txt, please" }, blocks[1], "the text comes first")
  T.eq(
    { type = "resource", resource = { uri = file_uri("a.txt"), text = "unsaved line\nsecond\n" } },
    blocks[2],
    "embedded"
  )
  T.eq(2, #blocks, "one block per mention")
  T.wait_text(chat, "↳ embedded a.txt")
  T.not_contains(T.text(chat.bufnr), "unsaved line", "the transcript names the file, it does not dump it")
end)

T.test("without embeddedContext the mention is a resource_link", function()
  T.write_file(dir .. "/a.txt", "on disk\n")
  local chat = T.open_chat("links", dir)
  local blocks = send(chat, "@a.txt and @nobody")
  T.eq({ type = "resource_link", uri = file_uri("a.txt"), name = "a.txt" }, blocks[2], "a link")
  T.eq(2, #blocks, "no block for @nobody (no such file)")
end)

T.test(":'<,'>Acp add sends exactly that range, @selection the last selection", function()
  T.write_file(dir .. "/b.txt", "one\ntwo\nthree\nfour\nfive\n")
  local chat = T.open_chat("full", dir)
  vim.cmd("edit " .. dir .. "/b.txt")
  vim.cmd("2,4Acp add")
  T.eq({ "@b.txt#L2-4", "" }, T.lines(chat.prompt_buf), "the mention line in the prompt")
  vim.api.nvim_buf_set_lines(0, 2, 3, false, { "THREE (unsaved)" })
  local blocks = send(chat, T.text(chat.prompt_buf))
  T.eq(
    { type = "resource", resource = { uri = file_uri("b.txt") .. "#L2-4", text = "two\nTHREE (unsaved)\nfour\n" } },
    blocks[2],
    "exactly lines 2-4, as in the buffer"
  )
  T.wait_text(chat, "↳ embedded b.txt#L2-4")

  vim.cmd("Acp add")
  T.eq({ "@b.txt", "" }, T.lines(chat.prompt_buf), "no range: the whole buffer")

  vim.api.nvim_set_current_buf(vim.fn.bufnr(dir .. "/b.txt"))
  vim.api.nvim_win_set_cursor(0, { 4, 0 })
  vim.cmd("normal! Vj\27")
  local sel = complete(chat, "@sel")
  T.eq("@selection", sel[1].word, "@selection is offered")
  T.eq("b.txt#L4-5", sel[1].info, "and says what it holds")
  blocks = send(chat, "explain @selection")
  T.eq(file_uri("b.txt") .. "#L4-5", blocks[2].resource.uri, "the selected lines")
  T.eq("four\nfive\n", blocks[2].resource.text, "their text")
end)

T.test("images are sent only when the agent accepts them, and the user is told", function()
  T.write_file(dir .. "/shot.png", PNG)
  local links = T.open_chat("links", dir)
  local blocks = send(links, "what is in @shot.png")
  T.eq(1, #blocks, "the image was not sent")
  T.wait_text(links, "@shot.png: not sent, links does not accept images")

  local full = T.open_chat("full", dir)
  blocks = send(full, "what is in @shot.png")
  T.eq("image", blocks[2].type, "an image block")
  T.eq("image/png", blocks[2].mimeType, "its type")
  T.eq(vim.base64.encode(PNG), blocks[2].data, "its bytes")
end)

T.test(":Acp paste-image saves the clipboard image, or says why it cannot", function()
  local path, display, wayland = vim.env.PATH, vim.env.DISPLAY, vim.env.WAYLAND_DISPLAY
  local bin = T.tmpdir()
  local msgs = {}
  local orig = vim.notify
  vim.notify = function(m, ...)
    msgs[#msgs + 1] = m
    return orig(m, ...)
  end
  local ok, err = pcall(function()
    vim.env.WAYLAND_DISPLAY = nil
    vim.env.DISPLAY = ":99"
    vim.env.PATH = bin
    local links = T.open_chat("links", dir)
    vim.cmd("Acp paste-image")
    T.contains(msgs[#msgs], "links does not accept images", "refused without the capability")
    T.eq({ "" }, T.lines(links.prompt_buf), "nothing inserted")

    local full = T.open_chat("full", dir)
    vim.cmd("Acp paste-image")
    T.contains(msgs[#msgs], "no clipboard image tool found", "no tool on PATH")

    T.write_file(bin .. "/xclip", "#!/bin/sh\nprintf '\\211PNG fake clipboard'\n")
    vim.fn.setfperm(bin .. "/xclip", "rwx------")
    vim.cmd("Acp paste-image")
    local line = T.lines(full.prompt_buf)[1]
    T.truthy(line:match("^@/.*/paste%-.*%.png$"), "an image mention: " .. line)
    vim.env.PATH = path
    local blocks = send(full, T.text(full.prompt_buf))
    T.eq("image", blocks[2].type, "the pasted image was sent")
    T.eq(vim.base64.encode("\137PNG fake clipboard"), blocks[2].data, "with the clipboard's bytes")
  end)
  vim.notify = orig
  vim.env.PATH, vim.env.DISPLAY, vim.env.WAYLAND_DISPLAY = path, display, wayland
  if not ok then
    error(err, 0)
  end
end)

T.test("mentions are parsed from words; e-mail addresses and punctuation are not paths", function()
  local parse = require("acp.chat.context").parse
  T.eq({
    { raw = "@src/a.rs", path = "src/a.rs" },
    { raw = "@b.rs#L3-9", path = "b.rs", l1 = 3, l2 = 9 },
    { raw = '@"my dir/c.rs#L4"', path = "my dir/c.rs", l1 = 4, l2 = 4 },
    { raw = "@selection", selection = true },
  }, parse('see @src/a.rs, me@example.com (@b.rs#L3-9) @"my dir/c.rs#L4" and @selection. @src/a.rs'), "mentions")
  T.eq('@"my dir/c.rs#L2-3"', require("acp.chat.context").mention("/w/my dir/c.rs", "/w", 2, 3), "quoted when needed")
end)

T.test("context options: validated, hidden files on request, big files as links", function()
  local config = require("acp.config")
  T.contains(config.validate({ context = { hidden = true } }), "`context.hidden`", "typo named")
  T.contains(config.validate({ context = { max_embed_bytes = "1k" } }), "`context.max_embed_bytes`", "bytes")
  T.contains(config.validate({ context = { hidden_files = 1 } }), "`context.hidden_files`", "boolean")
  local base = vim.deepcopy(config.options)
  T.write_file(dir .. "/.hidden.txt", "x\n")
  T.write_file(dir .. "/big.txt", string.rep("x", 100) .. "\n")
  local ok, err = pcall(function()
    local chat = T.open_chat("full", dir)
    T.eq({}, words((complete(chat, "@.hidden"))), "hidden files are not offered by default")
    assert(require("acp").setup(vim.tbl_deep_extend("force", base, {
      context = { hidden_files = true, max_embed_bytes = 50 },
    })))
    T.eq({ "@.hidden.txt" }, words((complete(chat, "@.hidden"))), "offered with hidden_files")
    local blocks = send(chat, "@big.txt")
    T.eq({ type = "resource_link", uri = file_uri("big.txt"), name = "big.txt" }, blocks[2], "too big to embed")
    T.wait_text(chat, "@big.txt: sent as a link, not its text (larger than context.max_embed_bytes (50 bytes))")
  end)
  assert(require("acp").setup(base))
  if not ok then
    error(err, 0)
  end
end)

T.run()
