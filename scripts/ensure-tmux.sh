#!/bin/sh
# Install tmux with apt-get when it is missing (as root, else through sudo):
# the terminal tests (tests/tui) and the TUI benchmark (bench/) drive Neovim
# in tmux.
set -eu
command -v tmux >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq tmux >/dev/null
elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
  sudo apt-get update -qq && sudo apt-get install -y -qq tmux >/dev/null
else
  echo "tmux is missing: install it (apt-get install tmux); the terminal tests and the TUI benchmark need it" >&2
  exit 1
fi
