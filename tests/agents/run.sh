#!/bin/sh
# acp.nvim against PUBLISHED agents (`make agents`; not part of `make test`:
# it downloads the agents from npm).
#
#   tests/agents/run.sh [agent...]      (default: every agent of agents.json)
#
# Installs each agent of tests/agents/agents.json at its pinned version into
# .cache/agents/<name> (npm; kept between runs), builds the backend, and runs
# tests/agents/test_<name>.lua in a headless Neovim (tests/e2e/run.lua): the
# scenarios of tests/agents/scenarios.lua, with the agent's model API pointed
# at tests/agents/model_mock.py on 127.0.0.1. Then prints what the agent
# did on the wire (tests/agents/report.py). Logs: .cache/agents/logs/<name>/.
#
# Skips (exit 0, with the reason) when node, npm or python3 is missing or the
# npm registry cannot be reached and an agent is not installed yet; anything
# else that goes wrong fails (exit 1).
# ACP_AGENTS_TAP=0 runs the agents without the wire tap (to rule it out).
# Neovim: $ACP_NVIM (as printed by scripts/find-nvim.sh), else `nvim` on PATH.
set -eu
cd "$(dirname "$0")/../.."

skip() {
	echo "agents: SKIPPED: $*"
	exit 0
}
fail() {
	echo "agents: FAILED: $*" >&2
	exit 1
}

for tool in node npm python3; do
	command -v "$tool" >/dev/null 2>&1 || skip "\`$tool\` is not installed (the published agents run on node and install with npm; the mock model API and the wire tap are python3)"
done
nvim_bin=${ACP_NVIM:-nvim}
command -v "$nvim_bin" >/dev/null 2>&1 || fail "no Neovim: set ACP_NVIM (scripts/find-nvim.sh prints one)"

# name package version bin, one agent a line.
agents_json=tests/agents/agents.json
list=$(python3 -c '
import json, sys
for name, a in json.load(open(sys.argv[1])).items():
    print(name, a["package"], a["version"], a["bin"])
' "$agents_json") || fail "could not read $agents_json"

if [ $# -gt 0 ]; then
	wanted=" $* "
else
	wanted=""
fi

# npm's own chatter off: its output is for errors.
# Unreachable is told in seconds, not after npm's minute of retries.
npm_flags="--no-audit --no-fund --loglevel=error --fetch-retries=1 --fetch-timeout=30000"

selected=""
while read -r name package version bin; do
	case "$wanted" in "" | *" $name "*) ;; *) continue ;; esac
	prefix=.cache/agents/$name
	installed=$(python3 -c '
import json, sys
try:
    print(json.load(open(sys.argv[1]))["version"])
except Exception:
    pass
' "$prefix/node_modules/$package/package.json")
	if [ "$installed" != "$version" ]; then
		mkdir -p .cache/agents
		err=.cache/agents/npm-view.err
		if ! timeout 90 npm $npm_flags view "$package@$version" version >/dev/null 2>"$err"; then
			code=$(sed -n 's/^npm error code //p' "$err" | head -1)
			reason=$(grep -v '^npm error \(code\|syscall\|errno\) ' "$err" | grep -m1 '^npm error [A-Za-z0-9]' | sed 's/^npm error //')
			rm -f "$err"
			case "$code" in
			E404 | ETARGET) fail "$package@$version is not in the npm registry ($reason): fix its pin in $agents_json" ;;
			esac
			skip "the npm registry ($(npm config get registry 2>/dev/null)) cannot be reached to install $package@$version: ${reason:-no answer within 90 s}"
		fi
		rm -f "$err"
		echo "agents: installing $package@$version into $prefix"
		rm -rf "$prefix"
		mkdir -p "$prefix"
		# --prefix installs into $prefix/node_modules with a package.json of
		# its own: nothing touches the checkout's files.
		timeout 600 npm $npm_flags install --prefix "$prefix" "$package@$version" ||
			fail "npm install $package@$version failed (see above)"
	fi
	[ -x "$prefix/node_modules/.bin/$bin" ] ||
		fail "$package@$version is installed but $prefix/node_modules/.bin/$bin is missing"
	selected="$selected $name"
done <<LIST
$list
LIST
[ -n "$selected" ] || fail "no agent named $* in $agents_json"

cargo build --quiet -p acp-nvim --bins

# Nothing of this machine's agent set-up reaches the agents: a HOME of our
# own, no inherited Anthropic, Claude, OpenAI or Codex settings (the
# scenarios set what the agents need).
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT INT TERM
for v in $(env | sed -n 's/^\(\(ANTHROPIC\|CLAUDE\|OPENAI\|CODEX\)_[A-Za-z0-9_]*\)=.*/\1/p'); do
	unset "$v"
done

status=0
patterns=""
for name in $selected; do
	patterns="$patterns test_$(echo "$name" | tr '-' '_')%.lua"
done
# shellcheck disable=SC2086 # one pattern a word
HOME=$home ACP_TEST_DIR=tests/agents ACP_TEST_FILE_TIMEOUT=${ACP_TEST_FILE_TIMEOUT:-600000} \
	"$nvim_bin" --headless -u NONE -i NONE --cmd 'set rtp^=.' -l tests/e2e/run.lua $patterns || status=$?

for name in $selected; do
	python3 tests/agents/report.py "$name" ".cache/agents/logs/$name" || status=1
done
exit $status
