-- Terminal tests: Neovim in tmux, typed into with send-keys and read with
-- capture-pane, with an ordinary config (tests/tui/init.lua).
--
--   nvim --headless -u NONE -i NONE -l tests/tui/run.lua [pattern...]
--
-- Each tests/tui/test_*.lua registers tests with helpers.test; each test
-- starts its own Neovim (and private tmux server) and stops it.
local H = dofile(vim.fn.getcwd() .. "/tests/tui/helpers.lua")
if not H.Tmux.available() then
  io.write("FAIL tui: tmux is not installed (apt-get install tmux)\n")
  os.exit(1)
end

local patterns = _G.arg or {}
local files = vim.fn.glob(H.root .. "/tests/tui/test_*.lua", false, true)
table.sort(files)
local passed, failed = 0, 0
-- A test that fails is run once more (ACP_TEST_RETRIES=0: never); a pass
-- the second time is reported at the end as FLAKY with the first failure,
-- where CI's excerpt of the output shows it.
local retries = tonumber(os.getenv("ACP_TEST_RETRIES") or "") or 1
local summary = {}
for _, file in ipairs(files) do
  local name = vim.fn.fnamemodify(file, ":t:r")
  local chosen = #patterns == 0
  for _, p in ipairs(patterns) do
    chosen = chosen or name:find(p) ~= nil
  end
  if chosen then
    H.tests = {}
    dofile(file)
    for _, t in ipairs(H.tests) do
      local first_err
      for attempt = 1, 1 + retries do
        local start = vim.uv.hrtime()
        local ok, err = xpcall(t.fn, debug.traceback)
        local ms = math.floor((vim.uv.hrtime() - start) / 1e6)
        if ok then
          passed = passed + 1
          io.write(("%s: ok - %s (%d ms)\n"):format(name, t.name, ms))
          if first_err then
            summary[#summary + 1] = ("FLAKY %s: %s (failed once, passed when run again)\n  %s"):format(
              name,
              t.name,
              (first_err:gsub("\n", "\n  "))
            )
          end
          break
        end
        io.write(("%s: FAIL - %s\n"):format(name, t.name))
        for line in tostring(err):gmatch("[^\n]+") do
          io.write("  " .. line .. "\n")
        end
        first_err = first_err or tostring(err)
        if attempt == 1 + retries then
          failed = failed + 1
          summary[#summary + 1] = ("FAILED %s: %s\n  %s"):format(name, t.name, (tostring(err):gsub("\n", "\n  ")))
        end
      end
      io.flush()
    end
  end
end
for _, s in ipairs(summary) do
  io.write("\n", s, "\n")
end
io.write(("%d passed, %d failed\n"):format(passed, failed))
io.flush()
os.exit(failed > 0 and 1 or 0)
