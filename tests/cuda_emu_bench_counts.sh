#!/usr/bin/env bash
# The CUDA engine's counts (kernels/counters.h) as `dawnrun bench --engine cuda` prints
# them, under the emulated engine (tests/cuda_emu): the per-step and per-eval-batch lines
# are printed, count kernel launches, cuDNN calls and bytes, and two runs of the same
# configuration print the same counts (the structure is deterministic).
#   tests/cuda_emu_bench_counts.sh BUILD_DIR [CONFIG]    CONFIG default tests/e2e/tiny.cfg
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"
CONFIG="${2:-$ROOT/tests/e2e/tiny.cfg}"
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")" || exit $?
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
fail() { echo "FAIL: $*"; cat "$DIR"/run*.log; exit 1; }
for run in 1 2; do
    "$DR" bench "$CONFIG" --engine cuda --batch 32 --steps 2 --warmup 1 >"$DIR/run$run.log" 2>&1 ||
        fail "bench run $run exited $?"
    grep -E '^per (training step|eval batch): ' "$DIR/run$run.log" >"$DIR/counts$run" || true
done
for what in "per training step" "per eval batch"; do
    line="$(grep "^$what: " "$DIR/counts1")" || fail "no '$what' counts line"
    # work run from the host plus the work graph launches replayed (kernels/counters.h);
    # only whether each is above 0 matters, so the byte numbers are added whatever the unit
    launches="$(sed -n 's/.*: \([0-9.]*\) kernel launches,.*/\1/p' <<<"$line")"
    cudnn="$(sed -n 's/.*, \([0-9.]*\) cuDNN calls,.*/\1/p' <<<"$line")"
    bytes="$(sed -n 's/.*own kernels \([0-9.]*\) [kMGT]*B read+written.*/\1/p' <<<"$line")"
    g_launches="$(sed -n 's/.* \([0-9.]*\) graph kernels (.*/\1/p' <<<"$line")"
    g_cudnn="$(sed -n 's/.* \([0-9.]*\) graph cuDNN calls,.*/\1/p' <<<"$line")"
    g_bytes="$(sed -n 's/.* graph kernels (\([0-9.]*\) [kMGT]*B read+written.*/\1/p' <<<"$line")"
    launches="$(awk -v a="$launches" -v b="${g_launches:-0}" 'BEGIN { print (a == "" ? "" : a + b) }')"
    cudnn="$(awk -v a="$cudnn" -v b="${g_cudnn:-0}" 'BEGIN { print (a == "" ? "" : a + b) }')"
    bytes="$(awk -v a="$bytes" -v b="${g_bytes:-0}" 'BEGIN { print (a == "" ? "" : a + b) }')"
    for v in "launches:$launches" "cuDNN calls:$cudnn" "bytes:$bytes"; do
        awk -v x="${v#*:}" 'BEGIN { exit !(x != "" && x + 0 > 0) }' ||
            fail "$what: ${v%%:*} not above 0 in: $line"
    done
    echo "$line"
done
cmp -s "$DIR/counts1" "$DIR/counts2" ||
    fail "two runs of the same configuration counted differently: $(diff "$DIR/counts1" "$DIR/counts2")"
echo "the counts of two runs are identical"
