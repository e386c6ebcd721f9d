#!/usr/bin/env bash
# The Lua type check of `make lint`: emmylua_check (scripts/find-luacheck.sh,
# configured by .emmyrc.lua) over lua/ and plugin/, against the Neovim runtime
# of the Neovim the tests use (scripts/find-nvim.sh).
#
# Any error or warning fails (hints, such as `deprecated`, do not count);
# each is printed as path:line:col: code: message.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
checker=$(scripts/find-luacheck.sh)
nvim=$(scripts/find-nvim.sh)
VIMRUNTIME=$("$nvim" --clean --headless +'lua io.stdout:write(vim.env.VIMRUNTIME)' +q </dev/null 2>/dev/null)
export VIMRUNTIME
if [ ! -d "$VIMRUNTIME/lua/vim" ]; then
  echo "lua-typecheck: no Neovim runtime found (got '$VIMRUNTIME' from $nvim)" >&2
  exit 1
fi
out=$(mktemp)
log=$(mktemp)
trap 'rm -f "$out" "$log"' EXIT
# Its exit code says only whether there were findings: the report decides.
if ! "$checker" -c .emmyrc.lua -f json --output "$out" lua plugin >"$log" 2>&1 && [ ! -s "$out" ]; then
  cat "$log" >&2
  echo "lua-typecheck: emmylua_check wrote no report" >&2
  exit 1
fi
python3 - "$out" "$root" <<'PY'
import json, os, sys
out, root = sys.argv[1:3]
found = []
for f in json.load(open(out)):
    for d in f["diagnostics"]:
        # Hints (severity 4) are suggestions such as `deprecated`; only
        # errors and warnings count.
        if d.get("severity", 1) <= 2:
            start = d["range"]["start"]
            path = os.path.relpath(f["file"], root)
            found.append(f"  {path}:{start['line'] + 1}:{start['character'] + 1}: {d['code']}: {d['message'].strip()}")
if found:
    print(f"lua-typecheck: {len(found)} finding(s) against the LuaCATS annotations:")
    print("\n".join(sorted(found)))
    sys.exit(1)
print("lua-typecheck: no findings")
PY
