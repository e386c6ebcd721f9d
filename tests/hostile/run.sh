#!/bin/sh
# The hostile suite (issue 25): crafted agents against the chat example and
# the Neovim plugin, one case per attack. Each case must fail on a client
# without the defence; together they run in well under two minutes.
#
#   tests/hostile/run.sh [pattern]      (pattern selects cases by name)
#
# - agent.py: a stdlib Python ACP agent, one attack per mode (p9 duplicate
#   permission option ids, p11 a flood of unread 50 MB replies, t3 40 `yes`
#   terminals, a .git hook write, LD_PRELOAD in a terminal's env, a terminal
#   under --ask-terminal; display, urls and cancelled reads for the plugin).
#   It is driven by the chat example (crates/acp-client/examples/chat/)
#   and writes a PASS/FAIL verdict; where the issue bounds memory it reads
#   its parent's (the client's) VmHWM and fails above 400 MB.
# - doc/security.md ("Hostile agents") lists each attack, its promise and
#   its case.
# - test_*.lua: the Neovim plugin against the same kind of agent, through
#   the e2e harness (tests/e2e/run.lua with ACP_TEST_DIR=tests/hostile).
# - Archive and process attacks (registry symlink chains and bombs, setsid
#   daemons, long temp names, huge sparse reads) are Rust integration tests,
#   crates/acp-client/tests/hostile_*.rs, run by `make unit`.
# Neovim: $ACP_NVIM, else `nvim` on PATH. Needs python3.
set -eu
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
PATTERN=${1:-}
cargo build --quiet -p acp-client --example chat
cargo build --quiet -p acp-nvim -p acp-testkit --bins
CHAT="$ROOT/target/debug/examples/chat"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/acp-hostile.XXXXXX")
trap 'rm -rf "$WORK"' EXIT INT TERM
passed=0
failed=0

# run_chat NAME MODE [chat options...]: one attack against the chat example.
run_chat() {
  name=$1 mode=$2
  shift 2
  case "$name" in *"$PATTERN"*) ;; *) return 0 ;; esac
  dir="$WORK/$name"
  mkdir -p "$dir/cwd"
  start=$(date +%s)
  if timeout "${HOSTILE_TIMEOUT:-60}" "$CHAT" --cwd "$dir/cwd" --prompt go "$@" -- \
      python3 "$ROOT/tests/hostile/agent.py" "$mode" "$dir/verdict" \
      >"$dir/stdout" 2>"$dir/stderr" </dev/null; then :; fi
  verdict=$(cat "$dir/verdict" 2>/dev/null || echo "FAIL no verdict (the client or the agent died); stderr: $(tail -c 400 "$dir/stderr")")
  case "$verdict" in
    PASS*) passed=$((passed + 1)); echo "ok    $name ($(( $(date +%s) - start )) s): ${verdict#PASS }" ;;
    *) failed=$((failed + 1)); echo "FAIL  $name: ${verdict#FAIL }" ;;
  esac
  # The flood cases print megabytes of terminal output: keep only what failed.
  rm -f "$dir/stdout"
}

run_chat p9_duplicate_option_ids p9 --permission reject
run_chat p11_unread_replies_flood p11 --permission reject --jsonl
run_chat t3_terminal_flood t3 --permission reject --jsonl
run_chat policy_git_write_asks gitwrite --permission reject
run_chat policy_loader_env_denied ldpreload --permission reject
run_chat policy_ask_before_terminal askterm --permission reject --ask-terminal

# The plugin's cases (display, URL elicitations, permissions through Lua).
if ls tests/hostile/test_*"$PATTERN"*.lua >/dev/null 2>&1; then
  if ACP_TEST_DIR=tests/hostile "${ACP_NVIM:-nvim}" --headless -u NONE -i NONE \
      --cmd 'set rtp^=.' -l tests/e2e/run.lua ${PATTERN:+"$PATTERN"}; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
  fi
fi

echo "hostile: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
