-- Test runner: one fresh Neovim per tests/e2e/test_*.lua file.
--
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=.' -l tests/e2e/run.lua [pattern...]
--
-- Patterns (Lua patterns) select files by name. Prints one line per test and
-- `N passed, N failed`; exits 1 when anything failed. A file that fails is
-- run once more (ACP_TEST_RETRIES, default 1); the failures, the tail of the
-- backend's log and any FLAKY file are printed again at the very end, where
-- CI's excerpt of the output can show them. ACP_TEST_DIR (relative
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
local passed, failed, flaky = 0, 0, 0
-- ACP_TEST_RETRIES=0 turns the second run off (a flake hunt wants it off).
local RETRIES = tonumber(os.getenv("ACP_TEST_RETRIES") or "") or 1
local LOG_TAIL = 12

--- Run one test file in a fresh Neovim with its own XDG dirs.
---@param file string
---@return integer passed, integer failed, string[] report lines, string[] log tail
local function run_file(file)
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
  local report = {}
  for line in ((res.stdout or "") .. (res.stderr or "")):gmatch("[^\n]+") do
    local p, f = line:match("^# passed (%d+) failed (%d+)$")
    if p then
      summary = true
      file_passed, file_failed = tonumber(p), tonumber(f)
    elseif line:match("^ok ") or line:match("^FAIL ") then
      report[#report + 1] = ("%s: %s"):format(name, line)
    elseif line:match("^  ") then
      report[#report + 1] = line
    end
  end
  if not summary then
    -- Crashed or timed out: everything it printed is context.
    file_failed = file_failed + 1
    report[#report + 1] = ("FAIL %s: no result (exit code %s, signal %s)"):format(
      name,
      tostring(res.code),
      tostring(res.signal)
    )
    for line in ((res.stdout or "") .. (res.stderr or "")):gmatch("[^\n]+") do
      report[#report + 1] = "  | " .. line
    end
  end
  -- The backend's log of a failed file is the only trace CI keeps of a
  -- race: its tail goes into the summary.
  local log_tail = {}
  if file_failed > 0 then
    local log = home .. "/state/nvim/acp.log"
    if vim.fn.filereadable(log) == 1 then
      local lines = vim.fn.readfile(log)
      log_tail = vim.list_slice(lines, math.max(1, #lines - LOG_TAIL + 1))
    end
  end
  vim.fn.delete(home, "rf")
  return file_passed, file_failed, report, log_tail
end

--- The failed tests of a report and the lines under them.
---@param report string[]
---@return string[]
local function failures_of(report)
  local out, in_failure = {}, false
  for _, line in ipairs(report) do
    if line:match("^%S+: ok ") then
      in_failure = false
    elseif line:match("FAIL ") and not line:match("^  ") then
      in_failure = true
    end
    if in_failure then
      out[#out + 1] = line
    end
  end
  return out
end

local summaries = {}
for _, file in ipairs(files) do
  if selected(file) then
    local name = vim.fn.fnamemodify(file, ":t:r")
    local file_passed, file_failed, report, log_tail = run_file(file)
    io.write(table.concat(report, "\n"), #report > 0 and "\n" or "")
    if file_failed > 0 and RETRIES > 0 then
      -- A file that fails once is run again: a second failure fails the
      -- suite; a pass is reported at the end as FLAKY with the first run's
      -- failure and log, so a race is seen and chased, not hidden.
      local first = failures_of(report)
      local p2, f2, report2, log_tail2 = run_file(file)
      io.write(("%s: run again after %d failure(s)\n"):format(name, file_failed))
      io.write(table.concat(report2, "\n"), #report2 > 0 and "\n" or "")
      if f2 == 0 then
        flaky = flaky + 1
        summaries[#summaries + 1] = { ("FLAKY %s (failed once, passed when run again):"):format(name), first, log_tail }
        file_passed, file_failed = p2, 0
      else
        summaries[#summaries + 1] = { ("FAILED %s (twice):"):format(name), failures_of(report2), log_tail2 }
        file_passed, file_failed = p2, f2
      end
    elseif file_failed > 0 then
      summaries[#summaries + 1] = { ("FAILED %s:"):format(name), failures_of(report), log_tail }
    end
    passed = passed + file_passed
    failed = failed + file_failed
  end
end

-- CI shows the tail of the output: what failed goes last, with the log.
for _, s in ipairs(summaries) do
  io.write("\n", s[1], "\n")
  if #s[3] > 0 then
    io.write("  -- last lines of its acp.log:\n")
    for _, line in ipairs(s[3]) do
      io.write("  > ", line:sub(1, 240), "\n")
    end
  end
  for _, line in ipairs(s[2]) do
    io.write("  ", line, "\n")
  end
end
if flaky > 0 then
  io.write(("%d file(s) FLAKY: they failed once and passed when run again (see above)\n"):format(flaky))
end
io.write(("%d passed, %d failed\n"):format(passed, failed))
io.flush()
_ = uv
os.exit(failed > 0 and 1 or 0)
