#!/usr/bin/env bash
# Instructions per op of benches/host_cost.rs loops, counted by valgrind's
# callgrind: the same figure on every run, whatever else the machine is
# doing (its timings are not), so a change to the recording path can be
# judged before and after on a shared machine.
#
#   scripts/host_cost_instructions.sh BENCH_BINARY [SETTING] [LOOP...]
#
# BENCH_BINARY: the host_cost bench executable (`cargo bench --bench
# host_cost --no-run` prints its path; copy it aside to compare two builds).
# SETTING: 0 fused (default), 1 unfused, 2 one submit per op. LOOP: loop
# names as the bench prints them (default: the three single-op loops).
#
# Each figure is the difference between runs of 4096 and 2048 ops (a
# warm-up and one timed loop each), divided by the 4096 ops between them:
# start-up and shader compiles cancel out, and with batches of 1024 both
# runs compile the same fused kernels.
set -euo pipefail
if [[ $# -lt 1 ]]; then
    sed -n '2,18p' "$0"
    exit 2
fi
bench="$1"
setting="${2:-0}"
shift $(($# >= 2 ? 2 : 1))
loops=("$@")
if ((${#loops[@]} == 0)); then
    loops=("x = x + y" "x += y" "x = x + 1")
fi
collected() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$bench" --bench \
        --only "$1" --ops "$2" --runs 1 --settings "$setting" 2>&1 |
        sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
for loop in "${loops[@]}"; do
    small="$(collected "$loop" 2048)"
    large="$(collected "$loop" 4096)"
    printf '%-20s %8d instructions/op\n' "$loop" $(((large - small) / 4096))
done
