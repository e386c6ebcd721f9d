#!/usr/bin/env bash
# Runs every benchmark and writes doc/benchmarks.md (see bench/report.lua).
#
#   bench/run.sh            all benchmarks, full sizes (what `make bench` runs)
#   bench/run.sh --smoke    each benchmark once at a tiny size, no report:
#                           checks that the benches still work (`make bench-smoke`)
#   COMPARE=1 bench/run.sh  asks for the comparison with another Neovim ACP
#                           client: not automated yet (see doc/benchmarks.md)
#
# Results go to target/bench-results/*.json first; the report is rendered
# from them, so a failed bench shows as "not run" instead of stale numbers.
# Neovim: $ACP_NVIM or scripts/find-nvim.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
out=target/bench-results
CARGO=${CARGO:-cargo}
smoke=0
[ "${1:-}" = "--smoke" ] && smoke=1

nvim_bin=${ACP_NVIM:-$(scripts/find-nvim.sh)}
run_nvim() { "$nvim_bin" --headless -u NONE -i NONE --cmd "set rtp^=$root" -l "$@"; }
# The last `RESULT {json}` line of a command's stdout, saved as $out/$1.json.
save_result() {
  local name=$1
  local log=$out/$name.log
  shift
  if "$@" >"$log" 2>&1 && grep -q '^RESULT ' "$log"; then
    grep '^RESULT ' "$log" | tail -1 | sed 's/^RESULT //' >"$out/$name.json"
    echo "bench: $name: $(cat "$out/$name.json")"
  else
    echo "bench: $name FAILED (log: $log)" >&2
    tail -5 "$log" >&2 || true
    return 1
  fi
}

if [ "$smoke" = 1 ]; then
  # Criterion runs each benchmark once when the binary is started without
  # `--bench` (cargo test); terminal_rss then prints 2 MB instead of 200.
  $CARGO test -p acp-client --bench transport --bench terminal_rss
  $CARGO build --release -p acp-nvim -p acp-testkit --bins
  run_nvim bench/stream.lua 200 100 lines
  run_nvim bench/long.lua 200 1000
  echo "bench-smoke: ok"
  exit 0
fi

rm -rf "$out"
mkdir -p "$out"
failed=0

# 1. Transport throughput (criterion, short measurement).
$CARGO bench -p acp-client --bench transport -- \
  --warm-up-time 1 --measurement-time 3 --sample-size 20 --noplot | tee "$out/transport.log" \
  || failed=1
mkdir -p "$out/criterion"
for g in agent_message_chunk tool_call_update; do
  for b in raw_value decode_dispatch connection; do
    est=target/criterion/$g/$b/new/estimates.json
    [ -f "$est" ] && cp "$est" "$out/criterion/$g.$b.json"
  done
done

# 5. Terminal output under a byte limit (its own process, for a clean VmHWM).
save_result terminal $CARGO bench -p acp-client --bench terminal_rss || failed=1

# 2, 6. Streaming into Neovim, start-up (release binaries).
$CARGO build --release -p acp-nvim -p acp-testkit --bins
save_result stream_20k run_nvim bench/stream.lua 20000 100 lines || failed=1
save_result stream_100k run_nvim bench/stream.lua 100000 100 lines || failed=1
# One ever-growing line (the fake agent's `burst`): kept small, see the report.
save_result stream_burst_2k run_nvim bench/stream.lua 2000 100 burst || failed=1

# 3. Long transcripts.
save_result long run_nvim bench/long.lua 1000 200000 || failed=1

if [ "${COMPARE:-0}" = 1 ]; then
  # Not automated yet: it needs a checkout of the other client, and this
  # project's machines have no network path to clone one.
  echo "bench: COMPARE=1: comparing with another client is not automated yet;" \
    "see \"Comparing with other clients\" in doc/benchmarks.md" >&2
  failed=1
fi

{
  echo "nproc=$(nproc)"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "load=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "date=$(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "nvim=$("$nvim_bin" --version | head -1)"
  echo "rustc=$(rustc --version)"
} >"$out/machine.txt"

run_nvim bench/report.lua "$out" doc/benchmarks.md
echo "bench: wrote doc/benchmarks.md"
exit "$failed"
