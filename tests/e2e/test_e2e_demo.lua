-- End to end: the bundled demo agent plays its whole tour (fs read through
-- the editor, an edit with permission, a live terminal, plan, usage, title).
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
-- Wide enough for the whole winbar (it drops parts to fit narrow windows).
vim.o.columns = 300

local dir = T.tmpdir()

T.require_binaries()

T.test("the demo tour runs to end_turn and renders every part", function()
  assert(require("acp").setup({ backend = { cmd = { T.backend_bin() } } }))
  -- The preset prefers target/release (what lazy.nvim's build step makes) and
  -- falls back to target/debug; either way it is this checkout's fake agent.
  local demo_cmd = require("acp.config").agent("demo").cmd[1]
  assert(
    demo_cmd:match("/target/release/acp%-fake%-agent$") or demo_cmd:match("/target/debug/acp%-fake%-agent$"),
    "unexpected demo agent " .. demo_cmd
  )
  assert(vim.fn.executable(demo_cmd) == 1, demo_cmd .. " is not executable")
  -- Run the debug build `make e2e` just made: a release build left from an
  -- earlier `make demo` may be older than this checkout's scenario steps.
  local cmd = vim.list_extend({ T.fake_agent() }, vim.list_slice(require("acp.config").agent("demo").cmd, 2))
  assert(require("acp").setup({ backend = { cmd = { T.backend_bin() } }, agents = { demo = { cmd = cmd } } }))
  -- The demo project's hello.lua (scripts/demo.lua), open in a buffer: the
  -- agent edits it on disk and the review shows the change there.
  T.write_file(
    dir .. "/hello.lua",
    'local function greet(name)\n  return "Hello, " .. name\nend\n\nprint(greet("world"))\n'
  )
  vim.cmd("edit " .. dir .. "/hello.lua")
  local hello = vim.api.nvim_get_current_buf()
  T.write_file(dir .. "/README.md", "# Saved title\n")
  vim.cmd("edit " .. dir .. "/README.md")
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "# Unsaved title" })
  vim.api.nvim_create_autocmd("User", {
    pattern = "AcpPermissionRequest",
    callback = function(a)
      for _, o in ipairs(a.data.options) do
        if o.kind == "allow_once" then
          require("acp").permission_respond(a.data.request_id, o.option_id)
          return
        end
      end
    end,
  })
  local chat = T.open_chat("demo", dir)
  T.eq("end_turn", T.turn(chat, "show me", 30000), "stop reason")
  local buf = chat.bufnr
  local text = T.text(buf)
  T.contains(text, "# Unsaved title", "README read from the unsaved buffer")
  T.contains(text, "Plan (4/4 done)", "plan completed")
  T.eq(1, T.count_lines(buf, "Plan ("), "one plan block")
  T.truthy(T.find_line(buf, "✓ edit · Create acp-demo.txt"), "edit done")
  T.truthy(T.find_line(buf, "  ± acp-demo.txt +4 -0 (new file)"), "diff summary, the path relative to the workspace")
  T.eq(nil, T.find_line(buf, dir), "no absolute path of the workspace")
  T.truthy(T.find_line(buf, "  $ ls -la (exited 0)"), "the terminal names its command")
  T.truthy(T.find_line(buf, "│ "), "terminal output shown")
  T.contains(T.read_file(dir .. "/acp-demo.txt"), "Hello from acp.nvim!", "file written after allow")
  -- The on-disk edit: reloaded into the buffer and drawn as review hunks.
  T.truthy(T.find_line(buf, "✓ edit · Edit hello.lua"), "disk edit done")
  T.contains(text, ":Acp review", "the tour names :Acp review")
  T.contains(text, "<localleader>ar", "and the keys")
  T.wait(function()
    return T.lines(hello)[3] == '  return ("Hello, %s!"):format(name)'
  end, "hello.lua reloaded with the agent's edit")
  local added = {}
  T.wait(function()
    added = {}
    for _, m in ipairs(vim.api.nvim_buf_get_extmarks(hello, require("acp.edits.review").ns, 0, -1, { details = true })) do
      if m[4].line_hl_group == "AcpReviewAdd" then
        added[#added + 1] = m[2]
      end
    end
    table.sort(added)
    return #added == 2
  end, "two review hunks drawn in hello.lua")
  T.eq({ 0, 2 }, added, "the doc line and the changed return line")
  T.eq(false, vim.bo[hello].modified, "reloaded, not modified")
  local bar = vim.wo[vim.fn.win_findbuf(buf)[1]].winbar
  T.contains(bar, "mode: Code", "mode")
  T.contains(bar, "model: Fake Swift", "model")
  T.contains(bar, "Tour of the fake agent", "title")
  T.contains(bar, "ctx 18.2k/200.0k", "usage")
end)

T.run()
