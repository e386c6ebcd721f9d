---@mod acp.build `:Acp build`: install the backend that matches the plugin.
---
--- Downloads the prebuilt `acp-nvim` (and the demo agent) of the plugin's
--- version (lua/acp/version.lua) for this platform from the release base
--- URL, checks its sha256, and installs it into `<plugin>/bin` with one
--- rename per file. When that cannot work (no release for this version, no
--- archive for this platform, no network, a bad checksum) it says which and
--- builds with cargo when cargo is on PATH, else names what to install.
---
--- Release layout (what .github/workflows/release.yml publishes and
--- scripts/release-build.sh builds):
---   <base>/v<version>/acp-nvim-v<version>-<target>.tar.gz
---   <base>/v<version>/acp-nvim-v<version>-<target>.tar.gz.sha256
---   <base>/v<version>/SHA256SUMS   (every archive's line: the release exists)
--- Each archive holds one directory, acp-nvim-v<version>-<target>/, with
--- acp-nvim, acp-fake-agent and the licenses.
---
--- Synchronous on purpose: lazy.nvim (`build = ":Acp build"`), packer and
--- `nvim --headless "+Lazy! sync" +qa` expect the backend to be there when
--- the build step returns. Progress is echoed while it waits; <C-c> cancels.

local util = require("acp.util")
local binary = require("acp.rpc.binary")

local M = {}

--- Where releases are published; `backend.release_url` in setup() or
--- $ACP_RELEASE_URL point elsewhere (a mirror, a test server).
M.DEFAULT_BASE_URL = "https://github.com/acp-nvim/acp.nvim/releases/download"

--- The executables an archive carries, installed side by side.
M.BINARIES = { "acp-fake-agent", "acp-nvim" }

--- The file next to the installed binaries that says what was installed.
M.MARKER = binary.MARKER

--- Longest wait for one download, ms.
local DOWNLOAD_TIMEOUT_MS = 10 * 60 * 1000
--- Longest wait for `cargo build`, ms (a first release build on a slow
--- machine takes minutes).
local CARGO_TIMEOUT_MS = 60 * 60 * 1000
--- Longest wait for tar, sha256sum and `acp-nvim --version`, ms.
local TOOL_TIMEOUT_MS = 2 * 60 * 1000

---@class acp.BuildOpts
---@field base_url? string release base URL (default: backend.release_url, $ACP_RELEASE_URL, then M.DEFAULT_BASE_URL)
---@field root? string plugin directory that gets `bin/` (default: this plugin's)
---@field version? string version to install (default: lua/acp/version.lua)
---@field cargo? boolean false: never fall back to cargo
---@field on_progress? fun(msg: string) progress lines (default: echoed)

---@class acp.BuildResult
---@field ok boolean
---@field source? "downloaded"|"built" what was installed
---@field reason? string why the download was not used (also set when cargo then built it)
---@field message string the sentence shown to the user

--- Rust target triple of the archive for this machine, or nil and a
--- description of the platform when no archive is published for it.
---@param uname? { sysname: string, machine: string } default: vim.uv.os_uname()
---@return string? target, string platform
function M.target(uname)
  uname = uname or (vim.uv or vim.loop).os_uname()
  local os_name, machine = uname.sysname, uname.machine
  local arch = ({ x86_64 = "x86_64", amd64 = "x86_64", aarch64 = "aarch64", arm64 = "aarch64" })[machine]
  local platform = ("%s/%s"):format(os_name, machine)
  if not arch then
    return nil, platform
  end
  if os_name == "Linux" then
    return arch .. "-unknown-linux-musl", platform
  elseif os_name == "Darwin" then
    return arch .. "-apple-darwin", platform
  end
  return nil, platform
end

--- The archive's file name (and its top directory, without `.tar.gz`).
---@param version string
---@param target string
---@return string
function M.asset_name(version, target)
  return ("acp-nvim-v%s-%s.tar.gz"):format(version, target)
end

--- The release base URL in effect: the option, $ACP_RELEASE_URL, setup()'s
--- `backend.release_url`, the default. No trailing slash.
---@param opt? string
---@return string
function M.base_url(opt)
  local cfg = require("acp.config").options.backend
  local url = opt
    or (vim.env.ACP_RELEASE_URL ~= "" and vim.env.ACP_RELEASE_URL or nil)
    or (cfg and cfg.release_url)
    or M.DEFAULT_BASE_URL
  return (url:gsub("/+$", ""))
end

--- Where `:Acp build` installs into.
---@param root? string plugin directory
---@return string
function M.bin_dir(root)
  return binary.bin_dir(root)
end

--- What `:Acp build` installed in `dir`, or nil (acp.rpc.binary reads it).
M.read_marker = binary.read_marker

--- Run a program to completion while Neovim keeps drawing; <C-c> kills it.
--- `on_line` gets stderr's lines as they come (where cargo and curl report
--- progress).
---@param cmd string[]
---@param opts { cwd?: string, timeout: integer, on_line?: fun(line: string) }
---@return { code: integer, stdout: string, stderr: string, interrupted?: boolean, timed_out?: boolean, spawn_error?: string }
local function exec(cmd, opts)
  local out, err = {}, {}
  -- stderr cut into lines at \r or \n (curl redraws its bar with \r); a
  -- chunk may end mid-line, so the tail waits for the next one.
  local lines, partial = {}, ""
  local result ---@type vim.SystemCompleted?
  local ok, proc = pcall(vim.system, cmd, {
    cwd = opts.cwd,
    text = true,
    stdout = function(_, data)
      out[#out + 1] = data
    end,
    stderr = function(_, data)
      if not data then
        return
      end
      err[#err + 1] = data
      if opts.on_line then
        partial = partial .. data
        local last_end = 0
        for line, stop in partial:gmatch("([^\r\n]*)[\r\n]()") do
          if line ~= "" then
            lines[#lines + 1] = line
          end
          last_end = stop --[[@as integer]] -- `()` captures a position
        end
        partial = partial:sub(last_end)
      end
    end,
  }, function(res)
    result = res
  end)
  if not ok then
    return { code = -1, stdout = "", stderr = "", spawn_error = tostring(proc) }
  end
  local shown = 0
  local function show_new()
    if not opts.on_line then
      return
    end
    if result and partial ~= "" then
      lines[#lines + 1] = partial
      partial = ""
    end
    while shown < #lines do
      shown = shown + 1
      opts.on_line(lines[shown])
    end
  end
  local done, why = vim.wait(opts.timeout, function()
    show_new()
    return result ~= nil
  end, 50)
  show_new()
  if not done then
    pcall(proc.kill, proc, "sigterm")
    pcall(proc.wait, proc, 2000)
    return {
      code = -1,
      stdout = table.concat(out),
      stderr = table.concat(err),
      interrupted = why == -2,
      timed_out = why ~= -2,
    }
  end
  -- vim.wait returned true: the exit callback set `result`.
  local res = result --[[@as vim.SystemCompleted]]
  return { code = res.code, stdout = table.concat(out), stderr = table.concat(err) }
end

---@class acp.Fetched
---@field ok boolean
---@field not_found? boolean the server answered 404 (or the file:// path is missing)
---@field error? string why it failed, as a sentence fragment

--- Download `url` into `path` with curl; `on_percent` gets curl's progress.
---@param url string
---@param path string
---@param on_percent? fun(percent: string)
---@return acp.Fetched
local function fetch(url, path, on_percent)
  local res = exec({
    "curl",
    "--fail",
    "--location",
    "--progress-bar",
    "--show-error",
    "--connect-timeout",
    "20",
    "--retry",
    "2",
    "--output",
    path,
    "--write-out",
    "%{http_code}",
    url,
  }, {
    timeout = DOWNLOAD_TIMEOUT_MS,
    on_line = on_percent and function(line)
      local pct = line:match("(%d+%.?%d*)%%%s*$")
      if pct then
        on_percent(pct)
      end
    end,
  })
  if res.code == 0 then
    return { ok = true }
  end
  if res.interrupted then
    return { ok = false, error = "interrupted" }
  end
  if res.timed_out then
    return { ok = false, error = ("the download of %s took too long"):format(url) }
  end
  local status = tonumber(vim.trim(res.stdout or ""))
  -- curl exit 22: HTTP error (--fail); 37: a file:// path that is not there.
  if status == 404 or res.code == 37 then
    return { ok = false, not_found = true }
  end
  if res.code == 22 and status then
    return { ok = false, error = ("%s answered HTTP %d"):format(url, status) }
  end
  -- The error is curl's last "curl: (N) ..." line; the rest is its progress bar.
  local msg
  for line in (res.stderr or ""):gmatch("[^\r\n]+") do
    msg = line:match("^curl: %(%d+%) (.*)") or msg
  end
  return {
    ok = false,
    error = ("could not download %s (%s): no network?"):format(
      url,
      msg or res.spawn_error or ("curl exit " .. res.code)
    ),
  }
end

--- The sha256 of a file, by sha256sum or shasum (one of them ships with
--- every Linux and macOS: a binary file cannot go through vim.fn.sha256).
---@param path string
---@return string? hex, string? err
local function sha256_of(path)
  local cmd
  if vim.fn.executable("sha256sum") == 1 then
    cmd = { "sha256sum", path }
  elseif vim.fn.executable("shasum") == 1 then
    cmd = { "shasum", "-a", "256", path }
  else
    return nil, "neither sha256sum nor shasum is on PATH to check the download; install coreutils"
  end
  local res = exec(cmd, { timeout = TOOL_TIMEOUT_MS })
  local hex = res.code == 0 and res.stdout:match("^(%x+)")
  if not hex or #hex ~= 64 then
    return nil, ("%s failed: %s"):format(cmd[1], vim.trim(res.stderr))
  end
  return hex:lower()
end

--- Parse a `.sha256` file (sha256sum format) for `name`.
---@param text string
---@param name string
---@return string? hex
local function parse_checksum(text, name)
  for line in text:gmatch("[^\r\n]+") do
    local hex, file = line:match("^(%x+)%s+%*?(%S+)%s*$")
    if hex and #hex == 64 and file == name then
      return hex:lower()
    end
  end
  return nil
end

--- Write `text` to `path` through a temporary file and a rename.
local function write_atomic(path, text)
  -- A name of its own: two Neovims may build at once.
  local tmp = ("%s.%d.tmp"):format(path, vim.fn.getpid())
  local f, err = io.open(tmp, "wb")
  if not f then
    return false, err
  end
  f:write(text)
  f:close()
  local ok, rerr = os.rename(tmp, path)
  if not ok then
    os.remove(tmp)
    return false, rerr
  end
  return true
end

---@class acp.BuildCtx
---@field version string
---@field root string
---@field base string
---@field progress fun(msg: string)

--- Download, check and install the archive. Returns nil on success, else
--- why the download could not be used (a sentence).
---@param ctx acp.BuildCtx
---@return acp.BuildResult? done, string? reason
local function download(ctx)
  local target, platform = M.target()
  if not target then
    return nil, ("no prebuilt backend is published for %s"):format(platform)
  end
  if vim.fn.executable("curl") ~= 1 then
    return nil, "curl is not on PATH to download the prebuilt backend (install curl)"
  end
  local asset = M.asset_name(ctx.version, target)
  local release = ("%s/v%s"):format(ctx.base, ctx.version)
  local url = release .. "/" .. asset
  local bin = M.bin_dir(ctx.root)
  -- The staging directory sits in bin/ so every rename stays on one file
  -- system (and is atomic); a name of its own so two builds never share it.
  local stage = ("%s/.staging-%d-%d"):format(bin, vim.fn.getpid(), (vim.uv or vim.loop).hrtime())
  local made, merr = pcall(vim.fn.mkdir, stage, "p")
  if not made then
    -- A read-only plugin directory (a system package, a Nix store).
    return nil, ("cannot write into %s (%s)"):format(bin, tostring(merr))
  end
  local function cleanup()
    vim.fn.delete(stage, "rf")
  end

  ctx.progress(("downloading the acp.nvim backend %s for %s from %s"):format(ctx.version, target, release))
  local sum_file = stage .. "/" .. asset .. ".sha256"
  local got = fetch(url .. ".sha256", sum_file)
  if not got.ok then
    if not got.not_found then
      cleanup()
      return nil, got.error
    end
    -- Missing checksum: is the whole release missing, or only this platform?
    local sums = fetch(release .. "/SHA256SUMS", stage .. "/SHA256SUMS")
    cleanup()
    if sums.ok then
      return nil, ("release v%s has no backend for %s (%s)"):format(ctx.version, platform, target)
    elseif sums.not_found then
      return nil, ("there is no release v%s at %s (a checkout between release tags?)"):format(ctx.version, ctx.base)
    end
    return nil, sums.error
  end
  local expected = parse_checksum(util.read_file(sum_file) or "", asset)
  if not expected then
    cleanup()
    return nil, ("%s.sha256 has no sha256 line for %s"):format(url, asset)
  end

  local archive = stage .. "/" .. asset
  local last_shown = -10 ---@type number
  got = fetch(url, archive, function(pct)
    -- Every 10 %: enough to see it move, not a flood of redraws.
    local n = tonumber(pct) or 0
    if n >= last_shown + 10 or n >= 100 and last_shown < 100 then
      last_shown = n
      ctx.progress(("downloading %s: %s%%"):format(asset, pct))
    end
  end)
  if not got.ok then
    cleanup()
    return nil, got.not_found and ("%s is missing though its .sha256 is there"):format(url) or got.error
  end
  ctx.progress("checking the sha256 of " .. asset)
  local actual, serr = sha256_of(archive)
  if not actual then
    cleanup()
    return nil, serr
  end
  if actual ~= expected then
    cleanup()
    return nil,
      ("the checksum of %s is wrong (expected %s, got %s): a broken or tampered download, nothing was installed"):format(
        asset,
        expected,
        actual
      )
  end

  local unpacked = stage .. "/unpacked"
  vim.fn.mkdir(unpacked, "p")
  -- -m: the files get the time of this install, not of the release build,
  -- so acp.rpc.backend (which runs the newest of the downloaded and the cargo
  -- builds) runs what the user installed last.
  local res = exec({ "tar", "-x", "-m", "-z", "-f", archive, "-C", unpacked }, { timeout = TOOL_TIMEOUT_MS })
  if res.code ~= 0 then
    cleanup()
    return nil, ("could not unpack %s: %s"):format(asset, vim.trim(res.stderr))
  end
  local top = unpacked .. "/" .. asset:gsub("%.tar%.gz$", "")
  for _, name in ipairs(M.BINARIES) do
    -- Only regular files are taken: a symlink in the archive could point
    -- anywhere.
    local st = (vim.uv or vim.loop).fs_lstat(top .. "/" .. name)
    if not st or st.type ~= "file" then
      cleanup()
      return nil, ("%s has no %s/%s file"):format(asset, asset:gsub("%.tar%.gz$", ""), name)
    end
    vim.fn.setfperm(top .. "/" .. name, "rwxr-xr-x")
  end
  -- A binary that does not run here (wrong libc, wrong arch) or is another
  -- version must not replace one that works.
  res = exec({ top .. "/acp-nvim", "--version" }, { timeout = TOOL_TIMEOUT_MS })
  local says = vim.trim(res.stdout or "")
  if res.code ~= 0 or says ~= "acp-nvim " .. ctx.version then
    cleanup()
    return nil,
      ("the downloaded backend does not run here or is not %s (`acp-nvim --version`: %s)"):format(
        ctx.version,
        says ~= "" and says or res.spawn_error or vim.trim(res.stderr) .. (" (exit %d)"):format(res.code)
      )
  end

  -- One rename per file: a running backend keeps its old inode, a new
  -- start sees either the old or the new file, never half of one. The
  -- backend goes last so a new acp-nvim is never paired with an old agent.
  for _, name in ipairs(M.BINARIES) do
    local ok, err = os.rename(top .. "/" .. name, bin .. "/" .. name)
    if not ok then
      cleanup()
      return nil, ("could not install into %s: %s"):format(bin, tostring(err))
    end
  end
  write_atomic(
    bin .. "/" .. M.MARKER,
    vim.json.encode({ source = "downloaded", version = ctx.version, target = target, url = url, sha256 = actual })
  )
  cleanup()
  return {
    ok = true,
    source = "downloaded",
    message = ("installed the acp.nvim backend %s (%s) into %s"):format(ctx.version, target, bin),
  }
end

--- `cargo build --release` of the backend and the demo agent in the plugin
--- directory. `reason` says why the download was not used.
---@param ctx acp.BuildCtx
---@param reason string
---@return acp.BuildResult
local function cargo_build(ctx, reason)
  ctx.progress(("%s; building the backend with cargo instead (a few minutes)"):format(reason))
  local res = exec(
    { "cargo", "build", "--release", "-p", "acp-nvim", "-p", "acp-testkit", "--bins" },
    { cwd = ctx.root, timeout = CARGO_TIMEOUT_MS, on_line = ctx.progress }
  )
  if res.code ~= 0 then
    local tail = vim.split(vim.trim(res.stderr or ""), "\n")
    tail = vim.list_slice(tail, math.max(1, #tail - 9))
    local why = res.interrupted and "was interrupted"
      or res.timed_out and "took too long"
      or res.spawn_error and ("could not start: " .. res.spawn_error)
      or ("failed (exit %d)"):format(res.code)
    return {
      ok = false,
      reason = reason,
      message = ("%s, and `cargo build --release` in %s %s; fix the error below and run :Acp build again\n%s"):format(
        reason,
        ctx.root,
        why,
        table.concat(tail, "\n")
      ),
    }
  end
  -- A downloaded backend of another version would shadow the fresh build
  -- when cargo had nothing to relink (acp.rpc.backend picks the newest file).
  local bin = M.bin_dir(ctx.root)
  local marker = M.read_marker(bin)
  if marker and marker.version ~= ctx.version then
    for _, name in ipairs(M.BINARIES) do
      os.remove(bin .. "/" .. name)
    end
    os.remove(bin .. "/" .. M.MARKER)
  end
  return {
    ok = true,
    source = "built",
    reason = reason,
    message = ("%s; built the backend with cargo into %s/target/release"):format(reason, ctx.root),
  }
end

local function echo_progress(msg)
  -- Lines, not notifications: a build prints many and only the last matters.
  vim.api.nvim_echo({ { "acp.nvim: " .. msg } }, false, {})
  vim.cmd("redraw")
end

--- Install the backend for this plugin version: download it, else build it
--- with cargo, else say what to install. Blocks until done (see the module
--- header). Notifies the outcome and returns it.
---@param opts? acp.BuildOpts
---@return acp.BuildResult
function M.run(opts)
  opts = opts or {}
  ---@type acp.BuildCtx
  local ctx = {
    version = opts.version or require("acp.version"),
    root = opts.root or util.plugin_root(),
    base = M.base_url(opts.base_url),
    progress = opts.on_progress or echo_progress,
  }
  local result, reason = download(ctx)
  if not result then
    reason = reason or "the download failed"
    if reason == "interrupted" then
      result = { ok = false, reason = reason, message = ":Acp build was interrupted; nothing was installed" }
    elseif
      opts.cargo ~= false
      and vim.fn.executable("cargo") == 1
      and vim.fn.filereadable(ctx.root .. "/Cargo.toml") == 1
    then
      result = cargo_build(ctx, reason)
    else
      result = {
        ok = false,
        reason = reason,
        message = ("%s, and cargo is not on PATH to build it from source. Install Rust (https://rustup.rs) and run :Acp build again, or build acp-nvim elsewhere and set ACP_BACKEND=/path/to/acp-nvim"):format(
          reason
        ),
      }
    end
  end
  if result.ok then
    local env = vim.env.ACP_BACKEND
    local cfg = require("acp.config").options.backend
    if env and env ~= "" then
      result.message = result.message
        .. ("; $ACP_BACKEND (%s) still takes precedence: unset it to use this one"):format(env)
    elseif cfg and cfg.cmd then
      result.message = result.message .. "; backend.cmd in setup() still takes precedence: remove it to use this one"
    elseif require("acp.rpc.backend").running() or #require("acp.chat").list > 0 then
      -- Open chats (a failed one after a version mismatch too) come back
      -- with the new backend on :Acp restart.
      result.message = result.message .. "; run :Acp restart to use it"
    end
  end
  util.notify(result.message, result.ok and vim.log.levels.INFO or vim.log.levels.ERROR)
  return result
end

return M
