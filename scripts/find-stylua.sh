#!/usr/bin/env bash
# Prints the path of StyLua (the Lua formatter `make lint` checks with and
# `make fmt` runs). Uses $STYLUA or a `stylua` on PATH of the pinned version;
# otherwise installs it from the npm registry (@johnnymorganz/stylua-bin, a
# prebuilt binary in the package) into .cache/stylua of this checkout, once.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=2.5.2

pinned() { "$1" --version 2>/dev/null | grep -qx "stylua $version"; }

if [ -n "${STYLUA:-}" ] && pinned "$STYLUA"; then echo "$STYLUA"; exit 0; fi
if command -v stylua >/dev/null 2>&1 && pinned stylua; then command -v stylua; exit 0; fi
dir="$root/.cache/stylua"
bin="$dir/node_modules/.bin/stylua"
if ! pinned "$bin"; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "find-stylua: StyLua $version is needed and npm is missing: install npm (apt-get install npm) or StyLua $version and set STYLUA=/path/to/stylua" >&2
    exit 1
  fi
  echo "find-stylua: installing StyLua $version from npm into $dir" >&2
  mkdir -p "$dir"
  npm install --silent --no-audit --no-fund --prefix "$dir" "@johnnymorganz/stylua-bin@$version" >&2
fi
if ! pinned "$bin"; then
  echo "find-stylua: could not get StyLua $version; install it and set STYLUA=/path/to/stylua" >&2
  exit 1
fi
echo "$bin"
