-- End to end: the bundled demo agent plays its whole tour (fs read through
-- the editor, an edit with permission, a live terminal, plan, usage, title).
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")

local dir = T.tmpdir()

if not T.have_binaries() then
  T.test("binaries are built", function()
    error("build them first: cargo build -p acp-nvim -p acp-testkit")
  end)
  T.run()
end

T.test("the demo tour runs to end_turn and renders every part", function()
  assert(require("acp").setup({ backend = { cmd = { T.backend_bin() } } }))
  T.eq(T.fake_agent(), require("acp.config").agent("demo").cmd[1], "demo falls back to the debug build")
  T.write_file(dir .. "/README.md", "# Saved title\n")
  vim.cmd("edit " .. dir .. "/README.md")
  vim.api.nvim_buf_set_lines(0, 0, -1, false, { "# Unsaved title" })
  vim.api.nvim_create_autocmd("User", {
    pattern = "AcpPermissionRequest",
    callback = function(a)
      for _, o in ipairs(a.data.options) do
        if o.kind == "allow_once" then
          require("acp").permission_respond(a.data.request_id, o.optionId)
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
  T.truthy(T.find_line(buf, "± " .. dir .. "/acp-demo.txt +4 -0 (new file)"), "diff summary")
  T.truthy(T.find_line(buf, "(exited 0)"), "terminal exited")
  T.truthy(T.find_line(buf, "│ ") , "terminal output shown")
  T.contains(T.read_file(dir .. "/acp-demo.txt"), "Hello from acp.nvim!", "file written after allow")
  local bar = vim.wo[vim.fn.win_findbuf(buf)[1]].winbar
  T.contains(bar, "mode: Code", "mode")
  T.contains(bar, "model: Fake Swift", "model")
  T.contains(bar, "Tour of the fake agent", "title")
  T.contains(bar, "ctx 18.2k/200.0k", "usage")
end)

T.run()
