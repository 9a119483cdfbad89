#!/usr/bin/env bash
# The emulation's count-only mode (DAWNRUN_EMU_COUNT_ONLY, tests/cuda_emu/emu.h) leaves the
# CUDA engine's counts unchanged: `dawnrun bench --engine cuda` on the same configuration
# prints the same per-step and per-eval-batch counter lines with the mode on and off (the
# engine counts in its own code, whatever the kernels compute). The mode says once on
# stderr that results are meaningless; without it nothing is said. Without a CONFIG it
# also compares tests/e2e/tiny-convbn.cfg in fp16 at batch 8 after two warm-up steps (a
# replayed graph with the batch norm inside the convolutions), which is what
# tests/cuda_emu_step_structure.sh counts in count-only mode.
#   tests/cuda_emu_count_only.sh BUILD_DIR [CONFIG]    CONFIG default tests/e2e/tiny.cfg
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"
CONFIG="${2:-$ROOT/tests/e2e/tiny.cfg}"
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")" || exit $?
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
fail() { echo "FAIL: $*"; for f in "$DIR"/*.out "$DIR"/*.err; do echo "== $f"; cat "$f"; done; exit 1; }
BENCH_ARGS=(--batch 32 --steps 1 --warmup 0)
bench() {   # bench NAME [env assignments]: the bench's stdout in NAME.out, stderr in NAME.err
    local name="$1"
    shift
    env "$@" "$DR" bench "$CONFIG" --engine cuda "${BENCH_ARGS[@]}" \
        >"$DIR/$name.out" 2>"$DIR/$name.err" || fail "bench ($name) exited $?"
    grep -E '^per (training step|eval batch): ' "$DIR/$name.out" >"$DIR/$name.counts"
}
# same_counts NAME WHAT: the bench as NAME_computed and NAME_count_only, whose counter lines
# (a training step's and an eval batch's) must be there and the same
same_counts() {
    bench "$1_computed" -u DAWNRUN_EMU_COUNT_ONLY
    bench "$1_count_only" DAWNRUN_EMU_COUNT_ONLY=1
    for what in "per training step" "per eval batch"; do
        grep -q "^$what: " "$DIR/$1_computed.counts" || fail "$2: no '$what' counts line"
    done
    cmp -s "$DIR/$1_computed.counts" "$DIR/$1_count_only.counts" ||
        fail "$2: the counts differ with DAWNRUN_EMU_COUNT_ONLY: $(diff \
            "$DIR/$1_computed.counts" "$DIR/$1_count_only.counts")"
    cat "$DIR/$1_count_only.counts"
}
same_counts tiny "$(basename "$CONFIG")"
notices="$(grep -c 'DAWNRUN_EMU_COUNT_ONLY' "$DIR/tiny_count_only.err")"
[ "$notices" = 1 ] || fail "count-only mode said so $notices times on stderr, not once"
if grep -q 'DAWNRUN_EMU_COUNT_ONLY' "$DIR/tiny_computed.err"; then
    fail "without DAWNRUN_EMU_COUNT_ONLY the emulation still announced count-only mode"
fi
if [ -z "${2:-}" ]; then
    CONFIG="$ROOT/tests/e2e/tiny-convbn.cfg"
    BENCH_ARGS=(--batch 8 --steps 1 --warmup 2 --set 'train.precision="fp16"')
    same_counts convbn "$(basename "$CONFIG"), fp16"
fi
echo "the counts are identical with and without count-only mode"
