-- Buffer-aware reads: fs/read_text_file of LIMIT lines near the end of an
-- unsaved BIG-line buffer vs the same read in a SMALL-line buffer, end to end:
-- the fake agent sends each request (`timedCalls` step) and times its round
-- trip through the release backend and `acp.edits.fs.read` in this Neovim.
--
--   nvim --headless -u NONE -i NONE --cmd 'set rtp^=.' -l bench/fsread.lua [BIG SMALL COUNT]
--
-- Reads start at line 0.9 * lines (900,000 of 1,000,000; 900 of 1,000).
-- Prints `RESULT {json}` with p50/p99 microseconds for both buffers.
-- Budget: the big buffer within 2x of the small one (reads cost O(limit)).

local lib = dofile(vim.fn.getcwd() .. "/bench/lib.lua")
local api = vim.api

local BIG = tonumber(_G.arg[1]) or 1000000
local SMALL = tonumber(_G.arg[2]) or 1000
local COUNT = tonumber(_G.arg[3]) or 300
local LIMIT = 50
local WARMUP = math.min(20, COUNT)

local dir = lib.tempdir()

--- An unsaved, modified buffer named `dir/name` with `lines` lines; the file
--- does not exist on disk, so only the buffer can answer.
local function buffer(name, lines)
  local buf = api.nvim_create_buf(true, false)
  api.nvim_buf_set_name(buf, dir .. "/" .. name)
  local t = {}
  for i = 1, lines do
    t[i] = ("line %d of the unsaved buffer %s"):format(i, name)
  end
  api.nvim_buf_set_lines(buf, 0, -1, false, t)
  assert(vim.bo[buf].modified)
  return buf
end

local function at(lines)
  return math.floor(lines * 0.9)
end

buffer("big.txt", BIG)
buffer("small.txt", SMALL)

local function timed(name, file, lines, count)
  return {
    type = "timedCalls",
    count = count,
    method = "fs/read_text_file",
    params = { path = "{{cwd}}/" .. file, line = at(lines), limit = LIMIT },
    saveAs = name,
  }
end

local function check(file, lines)
  -- The read is served by the buffer (the file is not on disk) and starts
  -- at the right line.
  return {
    type = "call",
    method = "fs/read_text_file",
    params = { path = "{{cwd}}/" .. file, line = at(lines), limit = LIMIT },
    expect = { contains = { content = ("line %d of the unsaved buffer %s\n"):format(at(lines), file) } },
  }
end

-- Warm-up rounds first; then the two measured runs interleaved in halves,
-- so a burst of load from elsewhere hits both.
local half = math.ceil(COUNT / 2)
local steps = {
  check("big.txt", BIG),
  check("small.txt", SMALL),
  timed("w1", "small.txt", SMALL, WARMUP),
  timed("w2", "big.txt", BIG, WARMUP),
  timed("s1", "small.txt", SMALL, half),
  timed("b1", "big.txt", BIG, half),
  timed("b2", "big.txt", BIG, half),
  timed("s2", "small.txt", SMALL, half),
}
local report = "FSREAD"
for _, n in ipairs({ "s1", "s2", "b1", "b2" }) do
  report = report .. (" %s {{%s.p50Us}} {{%s.p99Us}} {{%s.errors}}"):format(n, n, n, n)
end
steps[#steps + 1] = { type = "text", text = report .. "\n" }

lib.setup(lib.write_scenario(dir, { recordHistory = false, turns = { { steps = steps } } }))
lib.start_backend()
local chat = lib.open_chat(dir)
lib.run_turn(chat, "read")

local transcript = table.concat(api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n")
if transcript:find("EXPECTATION FAILED", 1, true) then
  lib.fail("a read did not return the buffer's lines: " .. transcript:match("EXPECTATION FAILED[^\n]*"))
end
local r = {}
for name, p50, p99, errors in transcript:gmatch("(%a%d) (%d+) (%d+) (%d+)") do
  r[name] = { p50 = tonumber(p50), p99 = tonumber(p99), errors = tonumber(errors) }
end
for _, n in ipairs({ "s1", "s2", "b1", "b2" }) do
  if not r[n] then
    lib.fail("no timings in the transcript: " .. transcript)
  end
  if r[n].errors > 0 then
    lib.fail(("%d reads failed in run %s"):format(r[n].errors, n))
  end
end
pcall(require("acp.rpc.backend").stop)

-- Each run's percentiles; the two halves are averaged (each half holds the
-- same number of samples).
local function mean(a, b)
  return (a + b) / 2
end
local small = { p50 = mean(r.s1.p50, r.s2.p50), p99 = mean(r.s1.p99, r.s2.p99) }
local big = { p50 = mean(r.b1.p50, r.b2.p50), p99 = mean(r.b1.p99, r.b2.p99) }
lib.out("RESULT " .. vim.json.encode({
  big_lines = BIG,
  small_lines = SMALL,
  limit = LIMIT,
  count = 2 * half,
  small_p50_us = small.p50,
  small_p99_us = small.p99,
  big_p50_us = big.p50,
  big_p99_us = big.p99,
  p50_ratio = big.p50 / small.p50,
  p99_ratio = big.p99 / small.p99,
}))
os.exit(0)
