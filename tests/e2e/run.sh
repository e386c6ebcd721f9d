#!/bin/sh
# Build what the end-to-end tests drive (backend + fake agent, debug), then run
# every tests/e2e/test_*.lua in its own headless Neovim.
#   tests/e2e/run.sh [pattern...]
# Neovim: $ACP_NVIM (as printed by scripts/find-nvim.sh), else `nvim` on PATH.
set -eu
cd "$(dirname "$0")/../.."
cargo build --quiet -p acp-nvim -p acp-testkit --bins
exec "${ACP_NVIM:-nvim}" --headless -u NONE -i NONE --cmd 'set rtp^=.' -l tests/e2e/run.lua "$@"
