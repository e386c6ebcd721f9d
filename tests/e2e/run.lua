-- Test runner: one fresh Neovim per tests/e2e/test_*.lua file.
--
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=.' -l tests/e2e/run.lua [pattern...]
--
-- Patterns (Lua patterns) select files by name. Prints one line per test and
-- `N passed, N failed`; exits 1 when anything failed. ACP_TEST_DIR (relative
-- to the checkout) runs another directory's test_*.lua the same way
-- (tests/agents/run.sh: the published agents).

local uv = vim.uv or vim.loop
local root = vim.fn.getcwd()
local test_dir = os.getenv("ACP_TEST_DIR") or "tests/e2e"
local files = vim.fn.glob(root .. "/" .. test_dir .. "/test_*.lua", false, true)
table.sort(files)

local patterns = {}
for _, a in ipairs(_G.arg or {}) do
  patterns[#patterns + 1] = a
end
local function selected(file)
  if #patterns == 0 then
    return true
  end
  for _, p in ipairs(patterns) do
    if file:find(p) then
      return true
    end
  end
  return false
end

local FILE_TIMEOUT_MS = tonumber(os.getenv("ACP_TEST_FILE_TIMEOUT") or "") or 180000
local passed, failed = 0, 0

for _, file in ipairs(files) do
  if selected(file) then
    local name = vim.fn.fnamemodify(file, ":t:r")
    local home = vim.fn.tempname()
    vim.fn.mkdir(home, "p")
    local env = {
      XDG_STATE_HOME = home .. "/state",
      XDG_DATA_HOME = home .. "/data",
      XDG_CONFIG_HOME = home .. "/config",
      XDG_CACHE_HOME = home .. "/cache",
      ACP_TEST_ROOT = root,
    }
    local proc = vim.system({
      vim.v.progpath,
      "--headless",
      "-u",
      "NONE",
      "-i",
      "NONE",
      "--cmd",
      "set rtp^=" .. vim.fn.fnameescape(root),
      "-l",
      file,
    }, { text = true, env = env, cwd = root })
    local res = proc:wait(FILE_TIMEOUT_MS)
    local file_passed, file_failed, summary = 0, 0, false
    for line in ((res.stdout or "") .. (res.stderr or "")):gmatch("[^\n]+") do
      local p, f = line:match("^# passed (%d+) failed (%d+)$")
      if p then
        summary = true
        file_passed, file_failed = tonumber(p), tonumber(f)
      elseif line:match("^ok ") or line:match("^FAIL ") then
        io.write(("%s: %s\n"):format(name, line))
      elseif line:match("^  ") then
        io.write(line .. "\n")
      end
    end
    if not summary then
      -- Crashed or timed out: everything it printed is context.
      file_failed = file_failed + 1
      io.write(
        ("FAIL %s: no result (exit code %s, signal %s)\n"):format(name, tostring(res.code), tostring(res.signal))
      )
      for line in ((res.stdout or "") .. (res.stderr or "")):gmatch("[^\n]+") do
        io.write("  | " .. line .. "\n")
      end
    end
    passed = passed + file_passed
    failed = failed + file_failed
    vim.fn.delete(home, "rf")
  end
end

io.write(("%d passed, %d failed\n"):format(passed, failed))
io.flush()
_ = uv
os.exit(failed > 0 and 1 or 0)
