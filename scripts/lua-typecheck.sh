#!/usr/bin/env bash
# The Lua type check of `make lint`: emmylua_check (scripts/find-luacheck.sh,
# configured by .emmyrc.lua) over lua/ and plugin/, against the Neovim runtime
# of the Neovim the tests use (scripts/find-nvim.sh).
#
# Findings are counted per diagnostic code and compared with
# scripts/lua-typecheck-baseline.txt, the findings the code had when the
# check came in and that are not fixed yet. More of a code than the baseline
# allows fails (the new ones are printed in full); fewer fails too, with the
# lower counts to write into the baseline, so that it only ever shrinks.
# Counted per code rather than per file so that moving a module (issue 32's
# layout work) does not break the check. `--update` rewrites the baseline.
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
# Its exit code says only whether there were findings: the baseline decides.
if ! "$checker" -c .emmyrc.lua -f json --output "$out" lua plugin >"$log" 2>&1 && [ ! -s "$out" ]; then
  cat "$log" >&2
  echo "lua-typecheck: emmylua_check wrote no report" >&2
  exit 1
fi
python3 - "$out" scripts/lua-typecheck-baseline.txt "$root" "${1:-}" <<'PY'
import collections, json, os, sys
out, baseline_path, root, mode = sys.argv[1:5]
files = json.load(open(out))
counts = collections.Counter()
for f in files:
    for d in f["diagnostics"]:
        # Hints (severity 4) are suggestions such as `deprecated`; only
        # errors and warnings count.
        if d.get("severity", 1) <= 2:
            counts[d["code"]] += 1
if mode == "--update":
    with open(baseline_path, "w") as b:
        b.write("# emmylua_check findings not fixed yet, per diagnostic code (scripts/lua-typecheck.sh).\n")
        for code in sorted(counts):
            b.write(f"{code} {counts[code]}\n")
    print(f"lua-typecheck: baseline rewritten ({sum(counts.values())} findings)")
    sys.exit(0)
baseline = {}
for line in open(baseline_path):
    line = line.strip()
    if line and not line.startswith("#"):
        code, n = line.split()
        baseline[code] = int(n)
over = {c: n for c, n in counts.items() if n > baseline.get(c, 0)}
under = {c: n for c, n in baseline.items() if counts.get(c, 0) < n}
if over:
    print("lua-typecheck: new findings (more than scripts/lua-typecheck-baseline.txt allows):")
    for c in sorted(over):
        print(f"  {c}: {over[c]} (baseline {baseline.get(c, 0)})")
    print("every finding of those codes (the new ones are among them):")
    for f in files:
        for d in f["diagnostics"]:
            if d["code"] in over and d.get("severity", 1) <= 2:
                start = d["range"]["start"]
                path = os.path.relpath(f["file"], root)
                print(f"  {path}:{start['line'] + 1}:{start['character'] + 1}: {d['code']}: {d['message'].strip()}")
    sys.exit(1)
if under:
    print("lua-typecheck: fewer findings than the baseline: lower it (scripts/lua-typecheck.sh --update):")
    for c in sorted(under):
        print(f"  {c}: {counts.get(c, 0)} (baseline {under[c]})")
    sys.exit(1)
print(f"lua-typecheck: {sum(counts.values())} findings, none beyond the baseline")
PY
