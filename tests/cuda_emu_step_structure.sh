#!/usr/bin/env bash
# The structure of a training step on the CUDA engine (docs/gpu.md, "CUDA graphs"), as
# `dawnrun bench --engine cuda` counts it under the emulated engine (tests/cuda_emu): once
# the step's plan is captured (the first two steps are the warm-up), each step is exactly
# one graph launch of that capture (no capture again), with no kernel launch, allocation,
# free, synchronisation or host<->device copy of its own (the bench reads the counts
# before its one wait for the stream, which stops its clock). With
# DAWNRUN_CUDA_GRAPH=0 the same steps launch no graph and their kernels one by one.
# Neither way does a step copy device memory to device memory: an add's backward and a
# flatten of a 1x1 plane are aliases in the plan (kernels/plan.h), not copies.
#   tests/cuda_emu_step_structure.sh BUILD_DIR [CONFIG]    CONFIG default tests/e2e/tiny.cfg
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"
CONFIG="${2:-$ROOT/tests/e2e/tiny.cfg}"
STEPS=4
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")" || exit $?
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# total FIELD: the field's count in the counts line, over the timed steps (per step x STEPS)
total() {
    local per
    per="$(sed -En "s/.*[:,;] ([0-9.e+-]+) $1([ ,(;].*)?\$/\1/p" <<<"$line")"
    [ -n "$per" ] || { echo "?"; return; }
    awk -v x="$per" -v n="$STEPS" 'BEGIN { printf "%.0f\n", x * n }'
}

# bench LOG [ENV...]: runs the bench; line = its per-training-step counts
bench() {
    local log="$DIR/$1"
    shift
    if ! env "$@" "$DR" bench "$CONFIG" --engine cuda --batch 32 --steps "$STEPS" --warmup 2 \
        >"$log" 2>&1; then
        echo "FAIL: bench ($*) exited with an error"
        cat "$log"
        exit 1
    fi
    line="$(grep -m1 '^per training step: ' "$log")" ||
        { echo "FAIL: bench ($*) printed no per-step counts"; cat "$log"; exit 1; }
}

expect() {   # expect FIELD WANTED
    local got
    got="$(total "$1")"
    [ "$got" = "$2" ] || fail "$1: $got over $STEPS steps, expected $2"
}

bench graphs.log
echo "graphs on:  $line"
expect "graph launches" "$STEPS"
expect "kernel launches" 0
expect "H2D copies" 0
expect "D2H" 0
expect "allocations" 0
expect "frees" 0
expect "synchronisations" 0
expect "graph captures" 0
expect "D2D" 0
expect "graph D2D" 0

bench eager.log DAWNRUN_CUDA_GRAPH=0
echo "graphs off: $line"
expect "graph launches" 0
expect "D2D" 0
launches="$(total "kernel launches")"
if [ "$launches" = "?" ] || [ "$launches" -le 0 ]; then
    fail "DAWNRUN_CUDA_GRAPH=0: $launches kernel launches over $STEPS steps, expected some"
fi
[ "$failed" = 0 ] || exit 1
echo "a replayed step is one graph launch and nothing else; DAWNRUN_CUDA_GRAPH=0 launches none;"
echo "no step copies device to device"
