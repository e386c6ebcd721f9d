#!/usr/bin/env bash
# Prints the path of emmylua_check (the Lua type checker `make lint` runs over
# the LuaCATS annotations, configured by .emmyrc.lua). Uses $EMMYLUA_CHECK or
# an `emmylua_check` on PATH of the pinned version; otherwise builds it from
# crates.io with cargo into .cache/emmylua of this checkout, once (a few
# minutes on two cores: it is a Rust crate with no prebuilt binary in a
# registry we reach).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=0.25.1

pinned() { "$1" --version 2>/dev/null | grep -qx "emmylua_check $version"; }

if [ -n "${EMMYLUA_CHECK:-}" ] && pinned "$EMMYLUA_CHECK"; then echo "$EMMYLUA_CHECK"; exit 0; fi
if command -v emmylua_check >/dev/null 2>&1 && pinned emmylua_check; then command -v emmylua_check; exit 0; fi
dir="$root/.cache/emmylua"
bin="$dir/bin/emmylua_check"
if ! pinned "$bin"; then
  if ! command -v cargo >/dev/null 2>&1; then
    echo "find-luacheck: emmylua_check $version is needed and cargo is missing: install Rust or emmylua_check $version and set EMMYLUA_CHECK=/path/to/emmylua_check" >&2
    exit 1
  fi
  echo "find-luacheck: building emmylua_check $version from crates.io into $dir" >&2
  # --locked: the crate's own Cargo.lock, so a new release of a dependency
  # cannot change what we build. Its build directory is a temporary one that
  # cargo removes afterwards; only the binary stays.
  cargo install --quiet --locked --version "$version" --root "$dir" emmylua_check >&2
fi
if ! pinned "$bin"; then
  echo "find-luacheck: could not get emmylua_check $version; install it and set EMMYLUA_CHECK=/path/to/emmylua_check" >&2
  exit 1
fi
echo "$bin"
