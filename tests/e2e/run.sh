#!/bin/sh
# Build what the end-to-end tests drive (backend + fake agent, debug), then run
# every tests/e2e/test_*.lua in its own headless Neovim.
#   tests/e2e/run.sh [pattern...]
set -eu
cd "$(dirname "$0")/../.."
cargo build --quiet -p acp-nvim -p acp-testkit --bins
exec nvim --headless -u NONE -i NONE --cmd 'set rtp^=.' -l tests/e2e/run.lua "$@"
