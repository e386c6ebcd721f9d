#!/bin/sh
# Build what the terminal tests drive (backend + fake agent, debug), install
# tmux when it is missing (apt, as root), then run every tests/tui/test_*.lua.
#   tests/tui/run.sh [pattern...]
# Neovim: $ACP_NVIM (as printed by scripts/find-nvim.sh), else `nvim` on PATH.
set -eu
cd "$(dirname "$0")/../.."
if ! command -v tmux >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && apt-get install -y -qq tmux >/dev/null
  elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo apt-get install -y -qq tmux >/dev/null
  else
    echo "tui: the terminal tests need tmux; install it (apt-get install tmux)" >&2
    exit 1
  fi
fi
cargo build --quiet -p acp-nvim -p acp-testkit --bins
exec "${ACP_NVIM:-nvim}" --headless -u NONE -i NONE -l tests/tui/run.lua "$@"
