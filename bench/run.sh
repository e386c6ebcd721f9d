#!/usr/bin/env bash
# Runs every benchmark and writes doc/benchmarks.md (see bench/report.lua).
#
#   bench/run.sh            all benchmarks, full sizes (what `make bench` runs)
#   bench/run.sh --smoke    each benchmark once at a tiny size, no report:
#                           checks that the benches still work (`make bench-smoke`)
#   COMPARE=1 bench/run.sh  also runs the TUI streaming benchmark with
#                           CodeCompanion.nvim and agentic.nvim: the checkouts
#                           in $COMPARE_DIR (CodeCompanion; plenary.nvim, its
#                           dependency, in $PLENARY_DIR) and $AGENTIC_DIR, else
#                           clones in .cache/compare/ (needs network; never
#                           vendored)
#   TUI_RUNS=N              runs of each TUI measurement (default 3; the
#                           budgets take the median)
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
  run_nvim bench/fsread.lua 2000 100 10
  run_nvim bench/rss.lua 10 1000
  run_nvim bench/startup.lua
  scripts/ensure-tmux.sh
  run_nvim bench/tui.lua cheap 200
  run_nvim bench/tui.lua acp 200
  ACP_BENCH_SCRIPT=bench/tui_startup.lua run_nvim bench/tui.lua acp 0
  ACP_BENCH_SCRIPT=bench/tui_startup.lua run_nvim bench/tui.lua cheap 0
  ACP_BENCH_SCRIPT=bench/tui_long.lua ACP_BENCH_TURNS=20 run_nvim bench/tui.lua acp 0
  echo "bench-smoke: ok"
  exit 0
fi

rm -rf "$out"
mkdir -p "$out"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
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

# 2b. Streaming in a real TUI (tmux, installed when missing; the ordinary config of
# bench/tui_init.lua), the cheapest pure-Lua client in the same run; runs
# interleaved so load from elsewhere hits both.
scripts/ensure-tmux.sh || failed=1
save_tui() { save_result "$1" run_nvim bench/tui.lua "$2" "$3"; } # name client count
for n in 20000 100000; do
  for i in $(seq 1 "${TUI_RUNS:-3}"); do
    save_tui "tui_cheap_${n}_$i" cheap "$n" || failed=1
    save_tui "tui_acp_${n}_$i" acp "$n" || failed=1
  done
done

# 2c. `:Acp` typed in the TUI with the ordinary config (the demo agent), and
# loading long stored sessions there (bench/tui_startup.lua, bench/tui_long.lua).
# The cheapest possible client's start-up (bench/tui_startup.lua `cheap`) is
# measured interleaved with ours, so load from elsewhere weighs on both.
for i in $(seq 1 "${TUI_RUNS:-3}"); do
  ACP_BENCH_SCRIPT=bench/tui_startup.lua save_tui "tui_startup_cheap_$i" cheap 0 || failed=1
  ACP_BENCH_SCRIPT=bench/tui_startup.lua save_tui "tui_startup_$i" acp 0 || failed=1
  for n in 200 2000; do
    ACP_BENCH_SCRIPT=bench/tui_long.lua ACP_BENCH_TURNS=$n save_tui "tui_long_${n}_$i" acp 0 || failed=1
  done
done

# 3. Long transcripts.
save_result long run_nvim bench/long.lua 1000 200000 || failed=1

# 4. Buffer-aware reads: 50 lines at line 900,000 of 1,000,000 vs 900 of 1,000.
save_result fsread run_nvim bench/fsread.lua 1000000 1000 300 || failed=1

# 3. Backend memory in a long session.
save_result rss run_nvim bench/rss.lua 10000 1000000 || failed=1

# 6. `:Acp` with the demo agent, cold, five times (the report takes the median).
for i in 1 2 3 4 5; do
  save_result "startup_$i" run_nvim bench/startup.lua || failed=1
done

# Comparison with CodeCompanion.nvim and agentic.nvim (TUI, 20,000 x 100 B).
if [ "${COMPARE:-0}" = 1 ]; then
  # A checkout given by the caller, else a throwaway clone under .cache.
  clone() { # url dir
    [ -d "$2/.git" ] && return 0
    rm -rf "$2"
    GIT_TERMINAL_PROMPT=0 timeout 300 git clone --depth 1 --quiet "$1" "$2"
  }
  cc=${COMPARE_DIR:-}
  plenary=${PLENARY_DIR:-}
  agentic=${AGENTIC_DIR:-}
  if [ -z "$cc" ]; then
    cc=$root/.cache/compare/codecompanion.nvim
    clone https://github.com/olimorris/codecompanion.nvim "$cc" || cc=
  fi
  if [ -z "$plenary" ]; then
    plenary=$root/.cache/compare/plenary.nvim
    clone https://github.com/nvim-lua/plenary.nvim "$plenary" || plenary=
  fi
  if [ -z "$agentic" ]; then
    agentic=$root/.cache/compare/agentic.nvim
    clone https://github.com/carlos-algms/agentic.nvim "$agentic" || agentic=
  fi
  if [ -z "$cc" ] || [ -z "$plenary" ]; then
    echo "bench: COMPARE=1: could not get codecompanion.nvim and plenary.nvim (no network?);" \
      "pass checkouts with COMPARE_DIR=/path/to/codecompanion.nvim PLENARY_DIR=/path/to/plenary.nvim" >&2
    failed=1
  else
    git -C "$cc" rev-parse --short HEAD >"$out/compare_commit_codecompanion.txt" 2>/dev/null || true
    COMPARE_DIR=$cc PLENARY_DIR=$plenary save_tui tui_codecompanion_20000_1 codecompanion 20000 || failed=1
    # `:CodeCompanionChat` beside `:Acp` (bench/tui_startup.lua).
    for i in $(seq 1 "${TUI_RUNS:-3}"); do
      COMPARE_DIR=$cc PLENARY_DIR=$plenary ACP_BENCH_SCRIPT=bench/tui_startup.lua \
        save_tui "tui_startup_codecompanion_$i" codecompanion 0 || failed=1
      # The same 2,000-turn session loaded as its `/resume` does (bench/tui_long.lua).
      COMPARE_DIR=$cc PLENARY_DIR=$plenary ACP_BENCH_SCRIPT=bench/tui_long.lua ACP_BENCH_TURNS=2000 \
        save_tui "tui_long_codecompanion_2000_$i" codecompanion 0 || failed=1
    done
  fi
  if [ -z "$agentic" ]; then
    echo "bench: COMPARE=1: could not get agentic.nvim (no network?); pass AGENTIC_DIR=/path/to/agentic.nvim" >&2
    failed=1
  else
    git -C "$agentic" rev-parse --short HEAD >"$out/compare_commit_agentic.txt" 2>/dev/null || true
    AGENTIC_DIR=$agentic save_tui tui_agentic_20000_1 agentic 20000 || failed=1
  fi
fi

# One PASS/FAIL line per budget (bench/budgets.lua).
run_nvim bench/budgets.lua "$out" | tee "$out/budgets.log" || failed=1

{
  echo "nproc=$(nproc)"
  echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
  echo "mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
  echo "load=$(cut -d' ' -f1-3 /proc/loadavg)"
  echo "load_start=$load_start"
  echo "tmux=$(tmux -V 2>/dev/null || echo missing)"
  echo "date=$(date -u +%Y-%m-%dT%H:%MZ)"
  echo "commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "nvim=$("$nvim_bin" --version | head -1)"
  echo "rustc=$(rustc --version)"
} >"$out/machine.txt"

run_nvim bench/report.lua "$out" doc/benchmarks.md
echo "bench: wrote doc/benchmarks.md"
exit "$failed"
