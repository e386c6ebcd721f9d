#!/bin/sh
# Builds and packages the prebuilt backend for one target, as the release
# workflow (.github/workflows/release.yml) does for each entry of its matrix:
#
#   scripts/release-build.sh [--target TRIPLE] [--out DIR] [--bin-dir DIR]
#   scripts/release-build.sh --print-version
#
# --target   a Rust target triple (default: this host's, from `rustc -vV`).
# --out      where the archive and its checksum go (default: dist).
# --bin-dir  package the acp-nvim and acp-fake-agent already built there
#            instead of running cargo (the tests package the debug build).
#
# Writes DIR/acp-nvim-v<version>-<target>.tar.gz (one directory of that name
# holding acp-nvim, acp-fake-agent and the licenses) and next to it
# <archive>.sha256 in `sha256sum` format. <version> is lua/acp/version.lua's,
# which must equal the workspace version in Cargo.toml: `:Acp build`
# downloads the archive named after the plugin's version.
set -eu
cd "$(dirname "$0")/.."

target="" out="dist" bin_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --target) target="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --print-version) print_version=1; shift ;;
    *) echo "release-build: unknown argument $1 (see the head of $0)" >&2; exit 2 ;;
  esac
done

version="$(sed -n 's/^return "\(.*\)"$/\1/p' lua/acp/version.lua)"
cargo_version="$(sed -n '/^\[workspace.package\]/,/^\[/s/^version = "\(.*\)"$/\1/p' Cargo.toml)"
if [ -z "$version" ] || [ "$version" != "$cargo_version" ]; then
  echo "release-build: lua/acp/version.lua ($version) and Cargo.toml ($cargo_version) disagree; bump both" >&2
  exit 1
fi
if [ "${print_version:-0}" = 1 ]; then
  echo "$version"
  exit 0
fi

if [ -z "$target" ]; then
  target="$(rustc -vV | sed -n 's/^host: //p')"
fi
if [ -z "$bin_dir" ]; then
  # Without the debug info [profile.release] keeps for benchmarks, and
  # stripped: the download is a fraction of the size.
  CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo build --release --locked --target "$target" -p acp-nvim -p acp-testkit \
    --bin acp-nvim --bin acp-fake-agent
  bin_dir="target/$target/release"
fi

name="acp-nvim-v$version-$target"
mkdir -p "$out"
stage="$out/$name"
rm -rf "$stage" "$out/$name.tar.gz" "$out/$name.tar.gz.sha256"
mkdir "$stage"
for bin in acp-nvim acp-fake-agent; do
  if [ ! -x "$bin_dir/$bin" ]; then
    echo "release-build: $bin_dir/$bin is missing or not executable" >&2
    exit 1
  fi
  cp "$bin_dir/$bin" "$stage/$bin"
done
cp LICENSE-MIT LICENSE-APACHE "$stage/"

# A binary for this machine must run and say its version; a cross-built one
# (another arch or OS) is only packaged.
host_os="$(uname -s)" host_arch="$(uname -m)"
[ "$host_arch" = arm64 ] && host_arch=aarch64
runs=0
case "$host_os/$target" in
  Linux/"$host_arch"-*-linux-*|Darwin/"$host_arch"-apple-darwin) runs=1 ;;
esac
if [ "$runs" = 1 ]; then
  got="$("$stage/acp-nvim" --version)"
  if [ "$got" != "acp-nvim $version" ]; then
    echo "release-build: $stage/acp-nvim --version says '$got', expected 'acp-nvim $version'" >&2
    exit 1
  fi
fi

# Fixed order, owner and mode bits: the archive depends on the binaries only.
(cd "$out" && tar -czf "$name.tar.gz" "$name/acp-nvim" "$name/acp-fake-agent" "$name/LICENSE-MIT" "$name/LICENSE-APACHE")
rm -rf "$stage"
if command -v sha256sum >/dev/null 2>&1; then
  (cd "$out" && sha256sum "$name.tar.gz" >"$name.tar.gz.sha256")
else
  (cd "$out" && shasum -a 256 "$name.tar.gz" >"$name.tar.gz.sha256")
fi
echo "$out/$name.tar.gz"
