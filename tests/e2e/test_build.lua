-- `:Acp build` against a loopback HTTP server serving release layouts
-- (tests/e2e/release_server.py): the download, each way it fails (bad
-- checksum, no archive for the platform, no release for the version, no
-- network), the cargo fallback (a fake `cargo` that records its call), the
-- message without cargo, the version handshake's message; and the README's
-- lazy.nvim spec in a Neovim without cargo on PATH, through to a turn with
-- the demo agent.
local T = dofile(vim.fn.getcwd() .. "/tests/e2e/helpers.lua")
T.require_binaries()

local build = require("acp.build")
local backend = require("acp.rpc.backend")
local util = require("acp.util")
local VERSION = require("acp.version")
local TARGET = assert(build.target(), "these tests need a platform with a published archive")
local ASSET = build.asset_name(VERSION, TARGET)
local NVIM = vim.v.progpath

local dir = T.tmpdir()
local www = dir .. "/www"
-- Every directory this file makes, deleted by its last test: the README
-- test alone copies the debug build twice (hundreds of MB).
local made = { dir }
local function tmpdir()
  local d = T.tmpdir()
  made[#made + 1] = d
  return d
end

--- PATH without the directories that hold a `cargo`, plus `extra` first.
local function path_without_cargo(extra)
  local keep = extra and { extra } or {}
  for _, d in ipairs(vim.split(vim.env.PATH or "", ":", { trimempty = true })) do
    if vim.fn.executable(d .. "/cargo") ~= 1 then
      keep[#keep + 1] = d
    end
  end
  return table.concat(keep, ":")
end

local function sh(cmd)
  local res = vim.system(cmd, { text = true }):wait(120000)
  assert(res.code == 0, table.concat(cmd, " ") .. ": " .. (res.stderr or ""))
  return res.stdout
end

local function sha256_line(path)
  return (sh({ "sha256sum", path }):gsub("  .*/", "  "))
end

--- A tiny stand-in backend: answers --version like acp-nvim and otherwise
--- runs the stub backend (which answers acp.hello; STUB_HELLO_OK=0 makes
--- it another version).
local function stub_backend_script(version)
  return ([[#!/bin/sh
if [ "$1" = --version ]; then echo "acp-nvim %s"; exit 0; fi
exec "%s" --headless -u NONE -i NONE -l "%s/tests/e2e/stub_backend.lua"
]]):format(version, NVIM, T.root)
end

--- Write <www>/<layout>/v<VERSION>/<asset> (+ .sha256) for `target`, the
--- archive holding `files` (name -> text) in its top directory.
local function publish(layout, target, files)
  local rel = ("%s/%s/v%s"):format(www, layout, VERSION)
  vim.fn.mkdir(rel, "p")
  local asset = build.asset_name(VERSION, target)
  local top = asset:gsub("%.tar%.gz$", "")
  local stage = dir .. "/stage-" .. layout .. "-" .. target
  vim.fn.mkdir(stage .. "/" .. top, "p")
  for name, text in pairs(files) do
    T.write_file(stage .. "/" .. top .. "/" .. name, text)
    vim.fn.setfperm(stage .. "/" .. top .. "/" .. name, "rwxr-xr-x")
    -- Built long ago, as a release is older than a user's last cargo build.
    vim.uv.fs_utime(stage .. "/" .. top .. "/" .. name, 1577836800, 1577836800)
  end
  sh({ "tar", "-czf", rel .. "/" .. asset, "-C", stage, top })
  T.write_file(rel .. "/" .. asset .. ".sha256", sha256_line(rel .. "/" .. asset))
  local sums = rel .. "/SHA256SUMS"
  local old = vim.fn.filereadable(sums) == 1 and T.read_file(sums) or ""
  T.write_file(sums, old .. T.read_file(rel .. "/" .. asset .. ".sha256"))
  return rel .. "/" .. asset
end

local stub_files = { ["acp-nvim"] = stub_backend_script(VERSION), ["acp-fake-agent"] = "#!/bin/sh\nexit 0\n" }

-- good: this platform's archive. bad: the same with bytes appended after
-- its checksum was taken. noplat: a release with another platform only.
-- stale: an archive whose backend says another version. symlink: its
-- acp-nvim is a symlink. nover: no v<VERSION> at all.
publish("good", TARGET, stub_files)
local bad = publish("bad", TARGET, stub_files)
T.write_file(bad, T.read_file(bad) .. "tampered")
publish("noplat", "riscv64gc-unknown-linux-musl", stub_files)
publish("stale", TARGET, { ["acp-nvim"] = stub_backend_script("0.0.1"), ["acp-fake-agent"] = "#!/bin/sh\n" })
do
  local stage = dir .. "/stage-symlink/" .. ASSET:gsub("%.tar%.gz$", "")
  vim.fn.mkdir(stage, "p")
  -- It points at a file outside the archive that passes every other check.
  T.write_file(dir .. "/outside-acp-nvim", stub_backend_script(VERSION))
  vim.fn.setfperm(dir .. "/outside-acp-nvim", "rwxr-xr-x")
  vim.uv.fs_symlink(dir .. "/outside-acp-nvim", stage .. "/acp-nvim")
  T.write_file(stage .. "/acp-fake-agent", "#!/bin/sh\n")
  local rel = www .. "/symlink/v" .. VERSION
  vim.fn.mkdir(rel, "p")
  sh({ "tar", "-czf", rel .. "/" .. ASSET, "-C", dir .. "/stage-symlink", (ASSET:gsub("%.tar%.gz$", "")) })
  T.write_file(rel .. "/" .. ASSET .. ".sha256", sha256_line(rel .. "/" .. ASSET))
end
do
  -- A valid archive plus a member that climbs out of the unpack directory.
  local rel = www .. "/traversal/v" .. VERSION
  vim.fn.mkdir(rel, "p")
  local top = ASSET:gsub("%.tar%.gz$", "")
  sh({
    "python3",
    "-c",
    [[
import io, sys, tarfile
out, top, script = sys.argv[1:4]
with tarfile.open(out, "w:gz") as t:
    for name, data in [(top + "/acp-nvim", script.encode()), (top + "/acp-fake-agent", b"#!/bin/sh\n"),
                       ("../../../../escaped-by-tar", b"x")]:
        info = tarfile.TarInfo(name)
        info.size, info.mode = len(data), 0o755
        t.addfile(info, io.BytesIO(data))
]],
    rel .. "/" .. ASSET,
    top,
    stub_backend_script(VERSION),
  })
  T.write_file(rel .. "/" .. ASSET .. ".sha256", sha256_line(rel .. "/" .. ASSET))
end
vim.fn.mkdir(www .. "/nover", "p")

-- The server lives as long as this Neovim: it stops when its stdin closes.
local port
local server = vim.system({ "python3", "-u", T.root .. "/tests/e2e/release_server.py", www }, {
  stdin = true,
  stdout = function(_, data)
    port = port or (data and tonumber(data:match("(%d+)")))
  end,
})
T.wait(function()
  return port
end, "the release server's port")
local function url(layout)
  return ("http://127.0.0.1:%d/%s"):format(port, layout)
end
_G.acp_test_server = server

--- A fresh plugin directory to install into.
local function fresh_root(with_cargo_toml)
  local root = tmpdir()
  if with_cargo_toml then
    T.write_file(root .. "/Cargo.toml", "[workspace]\n")
  end
  return root
end

--- Run a build with PATH set to `path` (restored after); collects progress.
local function run_build(opts, path)
  local saved = vim.env.PATH
  vim.env.PATH = path or path_without_cargo()
  local progress = {}
  opts.on_progress = function(m)
    progress[#progress + 1] = m
  end
  local ok, res = pcall(build.run, opts)
  vim.env.PATH = saved
  assert(ok, res)
  return res, table.concat(progress, "\n")
end

local function nothing_installed(root)
  T.eq(0, vim.fn.executable(root .. "/bin/acp-nvim"), "no backend installed")
  T.eq({}, vim.fn.glob(root .. "/bin/.staging-*", true, true), "no staging left behind")
end

T.test("the archive for this platform is downloaded, checked and installed", function()
  local root = fresh_root()
  -- An older cargo build of another version is in the plugin directory.
  vim.fn.mkdir(root .. "/target/release", "p")
  T.write_file(root .. "/target/release/acp-nvim", "#!/bin/sh\n")
  vim.fn.setfperm(root .. "/target/release/acp-nvim", "rwxr-xr-x")
  local an_hour_ago = os.time() - 3600
  vim.uv.fs_utime(root .. "/target/release/acp-nvim", an_hour_ago, an_hour_ago)
  local res, progress = run_build({ root = root, base_url = url("good") })
  T.eq(true, res.ok, "ok: " .. res.message)
  T.eq("downloaded", res.source, "source")
  T.contains(progress, "downloading the acp.nvim backend " .. VERSION .. " for " .. TARGET, "progress: download")
  T.contains(progress, ("downloading %s: 100"):format(ASSET), "progress: curl's percentage")
  T.contains(progress, "checking the sha256", "progress: checksum")
  T.contains(res.message, "installed the acp.nvim backend " .. VERSION, "message")
  T.eq(stub_files["acp-nvim"], T.read_file(root .. "/bin/acp-nvim"), "backend installed")
  T.eq(1, vim.fn.executable(root .. "/bin/acp-fake-agent"), "demo agent installed")
  local marker = build.read_marker(root .. "/bin")
  T.eq(
    { "downloaded", VERSION, TARGET, url("good") .. "/v" .. VERSION .. "/" .. ASSET },
    { marker.source, marker.version, marker.target, marker.url },
    "marker"
  )
  local path, source = backend.plugin_binary("acp-nvim", root)
  T.eq(root .. "/bin/acp-nvim", path, "the backend resolution picks it over the older cargo build")
  T.eq("downloaded", source.kind, "as downloaded")
  nothing_installed(fresh_root())
  -- A hand-built backend set by $ACP_BACKEND still wins: the message says so.
  vim.env.ACP_BACKEND = "/opt/acp-nvim"
  res = run_build({ root = root, base_url = url("good") })
  vim.env.ACP_BACKEND = nil
  T.eq(true, res.ok, "reinstalled")
  T.contains(
    res.message,
    "$ACP_BACKEND (/opt/acp-nvim) still takes precedence: unset it to use this one",
    "says which runs"
  )
end)

T.test("a corrupted archive fails its checksum and leaves the installed backend alone", function()
  local root = fresh_root()
  T.eq(true, run_build({ root = root, base_url = url("good") }).ok, "first install")
  local before = T.read_file(root .. "/bin/acp-nvim")
  local res = run_build({ root = root, base_url = url("bad") })
  T.eq(false, res.ok, "refused")
  T.contains(res.message, "the checksum of " .. ASSET .. " is wrong", "names the bad checksum")
  T.contains(res.message, "nothing was installed", "says nothing changed")
  T.eq(before, T.read_file(root .. "/bin/acp-nvim"), "the old backend is untouched")
  T.eq({}, vim.fn.glob(root .. "/bin/.staging-*", true, true), "no staging left behind")
end)

T.test("a release without this platform's archive says so", function()
  local root = fresh_root()
  local res = run_build({ root = root, base_url = url("noplat") })
  T.eq(false, res.ok, "failed")
  local _, platform = build.target()
  T.contains(res.message, ("release v%s has no backend for %s (%s)"):format(VERSION, platform, TARGET), "names it")
  nothing_installed(root)
end)

T.test("no release for this version says so (a checkout between tags)", function()
  local root = fresh_root()
  local res = run_build({ root = root, base_url = url("nover") })
  T.eq(false, res.ok, "failed")
  T.contains(res.message, ("there is no release v%s at %s"):format(VERSION, url("nover")), "names it")
  nothing_installed(root)
end)

T.test("no network says so", function()
  -- Port 1 on loopback: nothing listens, the connection is refused.
  local root = fresh_root()
  local res = run_build({ root = root, base_url = "http://127.0.0.1:1/releases" })
  T.eq(false, res.ok, "failed")
  T.contains(res.message, "could not download http://127.0.0.1:1/releases/v" .. VERSION, "names the URL")
  T.contains(res.message, "no network?", "names the likely cause")
  nothing_installed(root)
end)

T.test("an archive whose backend is another version, a symlink, or a ../ member is not installed", function()
  local root = fresh_root()
  local res = run_build({ root = root, base_url = url("stale") })
  T.eq(false, res.ok, "stale refused")
  T.contains(res.message, "acp-nvim 0.0.1", "says what it got")
  nothing_installed(root)
  res = run_build({ root = root, base_url = url("symlink") })
  T.eq(false, res.ok, "symlink refused")
  T.contains(res.message, "/acp-nvim file", "names the missing file")
  nothing_installed(root)
  res = run_build({ root = root, base_url = url("traversal") })
  T.eq(false, res.ok, "traversal refused")
  T.contains(res.message, "could not unpack " .. ASSET, "names the archive")
  T.contains(res.message, "escaped-by-tar", "with tar's reason")
  nothing_installed(root)
  -- Four levels up from <root>/bin/.staging-*/unpacked is <root>'s parent.
  T.eq({}, vim.fn.glob(vim.fn.fnamemodify(root, ":h") .. "/escaped-by-tar", true, true), "nothing escaped")
  T.eq({}, vim.fn.glob(root .. "/escaped-by-tar", true, true), "nothing in the plugin directory either")
end)

T.test("a plugin directory it cannot write into says so", function()
  local root = fresh_root()
  T.write_file(root .. "/bin", "a file where bin/ should be")
  local res = run_build({ root = root, base_url = url("good") })
  T.eq(false, res.ok, "failed")
  T.contains(res.message, "cannot write into " .. root .. "/bin", "names the directory")
  T.contains(res.message, "ACP_BACKEND=/path/to/acp-nvim", "and the way out")
end)

T.test("without cargo the message says exactly what to install", function()
  local res = run_build({ root = fresh_root(true), base_url = url("nover") })
  T.eq(false, res.ok, "failed")
  T.contains(res.message, "there is no release v" .. VERSION, "the reason first")
  T.contains(res.message, "cargo is not on PATH", "why it did not build")
  T.contains(res.message, "Install Rust (https://rustup.rs) and run :Acp build again", "what to install")
  T.contains(res.message, "ACP_BACKEND=/path/to/acp-nvim", "the hand-built way")
end)

--- A fake cargo in a directory of its own: records its arguments and
--- working directory, exits with `code`.
local function fake_cargo(code)
  local bindir = tmpdir()
  local record = bindir .. "/calls"
  T.write_file(
    bindir .. "/cargo",
    ([[#!/bin/sh
echo "$PWD|$*" >> "%s"
echo "   Compiling acp-nvim v%s" >&2
[ %d = 0 ] || echo "error: linker 'cc' not found" >&2
exit %d
]]):format(record, VERSION, code, code)
  )
  vim.fn.setfperm(bindir .. "/cargo", "rwxr-xr-x")
  return bindir, record
end

T.test("when the download fails, cargo builds the backend in the plugin directory", function()
  local root = fresh_root(true)
  local bindir, record = fake_cargo(0)
  local res, progress = run_build({ root = root, base_url = url("bad") }, path_without_cargo(bindir))
  T.eq(true, res.ok, "ok: " .. res.message)
  T.eq("built", res.source, "built")
  T.contains(res.message, "the checksum of " .. ASSET .. " is wrong", "says why it did not download")
  T.contains(res.message, "built the backend with cargo into " .. root .. "/target/release", "says where")
  T.eq({ root .. "|build --release -p acp-nvim -p acp-testkit --bins" }, vim.fn.readfile(record), "one cargo call")
  T.contains(progress, "Compiling acp-nvim", "cargo's output is the progress")
  nothing_installed(root)
end)

T.test("a failing cargo build shows its error", function()
  local root = fresh_root(true)
  local bindir = fake_cargo(101)
  local res = run_build({ root = root, base_url = url("nover") }, path_without_cargo(bindir))
  T.eq(false, res.ok, "failed")
  T.contains(res.message, "there is no release v" .. VERSION, "the download's reason")
  T.contains(res.message, "`cargo build --release` in " .. root .. " failed (exit 101)", "cargo's failure")
  T.contains(res.message, "error: linker 'cc' not found", "cargo's error")
end)

local function capture_errors(fn)
  local errors = {}
  local orig = vim.notify
  vim.notify = function(m, level)
    if level == vim.log.levels.ERROR then
      errors[#errors + 1] = m
    end
  end
  local ok, err = pcall(fn)
  vim.notify = orig
  assert(ok, err)
  return errors
end

T.test("the release URL comes from the option, $ACP_RELEASE_URL, backend.release_url, the default", function()
  require("acp").setup({})
  T.eq(build.DEFAULT_BASE_URL, build.base_url(), "default")
  require("acp").setup({ backend = { release_url = "https://mirror.example/acp/" } })
  T.eq("https://mirror.example/acp", build.base_url(), "config, trailing slash dropped")
  vim.env.ACP_RELEASE_URL = "http://127.0.0.1:9/x"
  T.eq("http://127.0.0.1:9/x", build.base_url(), "env")
  T.eq("http://o/y", build.base_url("http://o/y"), "option")
  vim.env.ACP_RELEASE_URL = nil
  local errors = capture_errors(function()
    T.eq(false, require("acp").setup({ backend = { release_url = "mirror.example" } }), "refused")
  end)
  T.contains(errors[1] or "", "`backend.release_url` must be an http(s):// or file:// URL", "names the option")
  require("acp").setup({})
end)

--- Point the plugin's own backend resolution at `root` for `fn`.
local function with_plugin_root(root, fn)
  local orig = util.plugin_root
  util.plugin_root = function()
    return root
  end
  local ok, err = pcall(fn)
  util.plugin_root = orig
  assert(ok, err)
end

T.test("a stale downloaded backend is refused at start and in :checkhealth, naming :Acp build", function()
  local root = fresh_root()
  T.eq(true, run_build({ root = root, base_url = url("good") }).ok, "installed")
  backend.stop()
  require("acp").setup({ agents = { stubbed = { cmd = { "true" } } }, default_agent = "stubbed" })
  vim.env.STUB_HELLO_OK = "0" -- the stub answers as backend 9.9.9
  with_plugin_root(root, function()
    local chat
    local errors = capture_errors(function()
      chat = require("acp").open({ agent = "stubbed", cwd = dir })
    end)
    T.eq("failed", chat.status, "chat failed")
    local want = ("acp.nvim backend 9.9.9 does not match plugin %s; run :Acp build to install the backend for %s"):format(
      VERSION,
      VERSION
    )
    T.contains(errors[1] or "", want, "notified with the fix")
    T.contains(T.text(chat.bufnr), want, "in the transcript")
    T.eq(false, backend.running(), "the stale backend was stopped")
    vim.cmd("tabnew")
    vim.cmd("checkhealth acp")
    local text = T.text(0)
    T.contains(text, "downloaded by :Acp build (" .. VERSION .. " " .. TARGET, "says where it came from")
    T.contains(text, want, "the mismatch")
    vim.cmd("bwipeout!")
    -- The fix it names: :Acp build (now a matching backend), then :Acp restart.
    vim.env.STUB_HELLO_OK = nil
    local res = run_build({ root = root, base_url = url("good") })
    T.contains(res.message, "run :Acp restart to use it", "the build says how to use it")
    vim.cmd("Acp restart")
    T.wait(function()
      return chat.status == "ready"
    end, "the chat works with the matching backend")
    chat:close()
  end)
  vim.env.STUB_HELLO_OK = nil
end)

T.test("a stale ACP_BACKEND is refused, naming the setting instead of :Acp build", function()
  backend.stop()
  local script = dir .. "/hand-built-acp-nvim"
  T.write_file(script, stub_backend_script(VERSION))
  vim.fn.setfperm(script, "rwxr-xr-x")
  vim.env.ACP_BACKEND = script
  vim.env.STUB_HELLO_OK = "0"
  local chat
  local errors = capture_errors(function()
    chat = require("acp").open({ agent = "stubbed", cwd = dir })
  end)
  vim.env.STUB_HELLO_OK = nil
  T.contains(
    errors[1] or "",
    "acp.nvim backend 9.9.9 does not match plugin " .. VERSION .. " (configured by $ACP_BACKEND)",
    "names the setting"
  )
  T.not_contains(errors[1] or "", "run :Acp build", "not a fix that would not help")
  chat:close()
  -- A matching hand-built backend runs, and says where it came from.
  local ok, err = backend.start()
  vim.env.ACP_BACKEND = nil
  T.eq(true, ok, tostring(err))
  T.eq("configured", backend.source().kind, "configured")
  backend.stop()
  vim.env.ACP_BACKEND = dir .. "/missing"
  local _, ferr = backend.find_cmd()
  vim.env.ACP_BACKEND = nil
  T.contains(ferr, "ACP_BACKEND=" .. dir .. "/missing is not an executable file", "a bad ACP_BACKEND is named")
end)

T.test("the README's lazy.nvim spec, without cargo, gives a working :Acp", function()
  -- The release layout, packaged from the debug build by the script the
  -- release workflow runs.
  local rel = www .. "/real/v" .. VERSION
  sh({ T.root .. "/scripts/release-build.sh", "--target", TARGET, "--bin-dir", T.root .. "/target/debug", "--out", rel })
  sh({ "sh", "-c", ("cd %q && cat ./*.sha256 > SHA256SUMS"):format(rel) })
  T.contains(T.read_file(rel .. "/" .. ASSET .. ".sha256"), "  " .. ASSET, "sha256sum format next to the archive")
  sh({ "sh", "-c", ("cd %q && sha256sum -c %q"):format(rel, ASSET .. ".sha256") })
  local top = ASSET:gsub("%.tar%.gz$", "")
  T.eq(
    { top .. "/acp-nvim", top .. "/acp-fake-agent", top .. "/LICENSE-MIT", top .. "/LICENSE-APACHE" },
    vim.split(vim.trim(sh({ "tar", "-tzf", rel .. "/" .. ASSET })), "\n"),
    "one directory: the backend, the demo agent, the licenses"
  )

  -- The plugin as a plugin manager clones it (the Rust sources are there,
  -- cargo is not).
  local plugin = dir .. "/lazy/acp.nvim"
  vim.fn.mkdir(plugin, "p")
  for _, d in ipairs({ "lua", "plugin", "doc", "registry", "Cargo.toml" }) do
    sh({ "cp", "-R", T.root .. "/" .. d, plugin .. "/" .. d })
  end

  -- The README's spec, as written, with the two things a test must change:
  -- the checkout instead of GitHub, and the release URL of the loopback server.
  local readme = T.read_file(T.root .. "/README.md")
  local block = readme:match("### Install in your Neovim %(lazy%.nvim%).-```lua\n(.-)```")
  assert(block, "README has a lazy.nvim spec")
  local spec = assert(load("return " .. block))()
  T.eq(":Acp build", spec.build, "the spec builds with :Acp build")
  local spec_file = dir .. "/spec.lua"
  T.write_file(spec_file, "return " .. block)

  local result = dir .. "/result.json"
  local init = dir .. "/init.lua"
  T.write_file(
    init,
    ([[
-- What lazy.nvim does with the spec: the plugin on the runtimepath, its
-- plugin/ sourced, setup(opts), then the build step (":cmd" runs as a command).
local spec = dofile(%q)
local plugin = %q
vim.opt.rtp:prepend(plugin)
vim.cmd("runtime plugin/acp.lua")
spec.opts.default_agent = "demo"
-- The demo asks before its edit and its command: allowed here, no one types.
spec.opts.permission = { auto_allow = { "edit", "execute" } }
spec.opts.backend = vim.tbl_extend("force", spec.opts.backend or {}, { release_url = %q })
require("acp").setup(spec.opts)
local function finish(t)
  local f = io.open(%q, "w")
  f:write(vim.json.encode(t))
  f:close()
  vim.cmd("qa!")
end
local ok, err = pcall(vim.cmd, spec.build:sub(2))
if not ok then
  finish({ stage = "build", err = tostring(err) })
end
local ended
vim.api.nvim_create_autocmd("User", { pattern = "AcpTurnEnd", callback = function(a) ended = a.data.stop_reason end })
vim.cmd("Acp")
-- The chat is made once its windows are drawn (acp.chat.layout.frame).
vim.wait(5000, function() return package.loaded["acp.chat"] and require("acp.chat").current() ~= nil end, 5)
local chat = require("acp.chat").current()
if not chat then
  finish({ stage = "open", err = "no chat" })
end
vim.wait(30000, function() return chat.session_id ~= nil or chat.status == "failed" end, 20)
if not chat.session_id then
  finish({ stage = "session", text = table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n") })
end
chat:send({ { type = "text", text = "hello from a machine without cargo" } })
vim.wait(30000, function() return ended ~= nil end, 20)
finish({
  stage = "done",
  stop_reason = ended,
  backend = require("acp.rpc.backend").find_cmd()[1],
  source = require("acp.rpc.backend").source().kind,
  cargo = vim.fn.executable("cargo"),
  text = table.concat(vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false), "\n"),
})
]]):format(spec_file, plugin, url("real"), result)
  )
  local res = vim
    .system({ NVIM, "--headless", "-i", "NONE", "-u", init }, {
      text = true,
      env = { PATH = path_without_cargo(), ACP_BACKEND = "", ACP_RELEASE_URL = "" },
      cwd = dir,
    })
    :wait(120000)
  assert(vim.fn.filereadable(result) == 1, ("no result (exit %s):\n%s%s"):format(res.code, res.stdout, res.stderr))
  local out = vim.json.decode(T.read_file(result))
  T.eq("done", out.stage, vim.inspect(out))
  T.eq(0, out.cargo, "no cargo in that Neovim")
  T.eq("end_turn", out.stop_reason, "a turn completed; transcript:\n" .. tostring(out.text))
  T.eq(plugin .. "/bin/acp-nvim", out.backend, "the downloaded backend ran")
  T.eq("downloaded", out.source, "and says so")
  T.contains(out.text, "hello from a machine without cargo", "the prompt is in the transcript")
end)

T.test("leaves no files behind", function()
  backend.stop()
  for _, d in ipairs(made) do
    vim.fn.delete(d, "rf")
    T.eq(0, vim.fn.isdirectory(d), "deleted " .. d)
  end
end)

T.run()
