#!/usr/bin/env bash
# One run of the TUI streaming benchmark (bench/tui_stream.lua): a real
# Neovim in a 200x50 tmux pane, with the ordinary config of bench/tui_init.lua.
#
#   bench/tui.sh CLIENT COUNT [BYTES]     CLIENT: acp | cheap | codecompanion | agentic
#
# Prints the `RESULT {json}` line the run wrote (exit 1 and the pane's last
# screen on an error). codecompanion needs COMPARE_DIR and PLENARY_DIR,
# agentic AGENTIC_DIR (checkouts; see bench/run.sh). Neovim: $ACP_NVIM or
# scripts/find-nvim.sh. tmux is installed with apt-get when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
client=${1:?client}
count=${2:?count}
bytes=${3:-100}
nvim_bin=${ACP_NVIM:-$(scripts/find-nvim.sh)}

if ! command -v tmux >/dev/null 2>&1; then
  echo "bench: tmux is missing, installing it (apt-get)" >&2
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && apt-get install -y -qq tmux >&2
  else
    sudo apt-get update -qq && sudo apt-get install -y -qq tmux >&2
  fi
fi

sock=acp-bench-$$
out=$(mktemp)
# A fresh home for Neovim's cache, state and data (no shada, logs or
# plugins of the machine's user).
xdg=$(mktemp -d)
mkdir -p "$xdg/cache/nvim" "$xdg/state/nvim" "$xdg/data/nvim"
term=screen-256color
infocmp tmux-256color >/dev/null 2>&1 && term=tmux-256color
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  rm -f "$out" "${TMUX_TMPDIR:-/tmp}/tmux-$(id -u)/$sock"
  rm -rf "$xdg"
}
trap cleanup EXIT

tmux -L "$sock" -f /dev/null \
  set-option -g default-terminal "$term" \; \
  set-option -g remain-on-exit on \; \
  new-session -d -x 200 -y 50 -s bench \
  env COLORTERM=truecolor XDG_CACHE_HOME="$xdg/cache" XDG_STATE_HOME="$xdg/state" XDG_DATA_HOME="$xdg/data" ACP_BENCH_CLIENT="$client" ACP_BENCH_COUNT="$count" ACP_BENCH_BYTES="$bytes" \
  ACP_BENCH_OUT="$out" ACP_BENCH_PLUGIN="${ACP_BENCH_PLUGIN:-}" COMPARE_DIR="${COMPARE_DIR:-}" PLENARY_DIR="${PLENARY_DIR:-}" AGENTIC_DIR="${AGENTIC_DIR:-}" \
  "$nvim_bin" -u bench/tui_init.lua -i NONE -n -c "luafile bench/tui_stream.lua"

# The run quits Neovim itself; this only guards against a hang.
deadline=$((SECONDS + ${ACP_BENCH_TIMEOUT:-900}))
while [ ! -s "$out" ] && [ $SECONDS -lt $deadline ]; do
  sleep 0.2
done
if grep -q '^RESULT ' "$out" 2>/dev/null; then
  grep '^RESULT ' "$out" | tail -1
  exit 0
fi
echo "bench: tui $client $count: $(cat "$out" 2>/dev/null || echo 'no result (timed out)')" >&2
tmux -L "$sock" capture-pane -p -t bench 2>/dev/null | tail -15 >&2 || true
exit 1
