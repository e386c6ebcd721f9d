#!/bin/sh
# Build what the terminal tests drive (backend + fake agent, debug), install
# tmux when it is missing (apt, as root), then run every tests/tui/test_*.lua.
#   tests/tui/run.sh [pattern...]
# Neovim: $ACP_NVIM (as printed by scripts/find-nvim.sh), else `nvim` on PATH.
set -eu
cd "$(dirname "$0")/../.."
scripts/ensure-tmux.sh
cargo build --quiet -p acp-nvim -p acp-testkit --bins
exec "${ACP_NVIM:-nvim}" --headless -u NONE -i NONE -l tests/tui/run.lua "$@"
