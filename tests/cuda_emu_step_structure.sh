#!/usr/bin/env bash
# The structure of a training step on the CUDA engine (docs/gpu.md, "CUDA graphs"), as
# `dawnrun bench --engine cuda` counts it under the emulated engine (tests/cuda_emu): once
# the step's plan is captured (the first two steps are the warm-up), each step is exactly
# one graph launch of that capture (no capture again), with no kernel launch, allocation,
# free, synchronisation or host<->device copy of its own (the bench reads the counts
# before its one wait for the stream, which stops its clock). With
# DAWNRUN_CUDA_GRAPH=0 the same steps launch no graph and their kernels one by one.
# Neither way does a step copy device memory to device memory: an add's backward and a
# flatten of a 1x1 plane are aliases in the plan (kernels/plan.h), not copies. Without a
# CONFIG it also counts tests/e2e/tiny-convbn.cfg in fp16 (the batch norm inside the
# convolutions: see the last part). Everything runs in the emulation's count-only mode
# (DAWNRUN_EMU_COUNT_ONLY=1: nothing computed, so a bench takes a second instead of
# minutes); tests/cuda_emu_count_only.sh checks that it leaves these counts unchanged.
#   tests/cuda_emu_step_structure.sh BUILD_DIR [CONFIG]    CONFIG default tests/e2e/tiny.cfg
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"
CONFIG="${2:-$ROOT/tests/e2e/tiny.cfg}"
STEPS=4
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")" || exit $?
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" DAWNRUN_EMU_COUNT_ONLY=1
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
BENCH_ARGS=()
bench() {
    local log="$DIR/$1"
    shift
    if ! env "$@" "$DR" bench "$CONFIG" --engine cuda --batch 32 --steps "$STEPS" --warmup 2 \
        "${BENCH_ARGS[@]}" >"$log" 2>&1; then
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
# graph FIELD: the field's count among what the graph launches replay, per step
graph() {
    sed -En "s/.* ([0-9.e+-]+) graph $1[ ,(;].*/\1/p" <<<"$line"
}

# The batch norm inside the convolutions (half precisions only): a network whose batch
# norm sits between two convolutions, in fp16; its step is still one graph launch and
# nothing else; it replays fewer kernels, moving fewer bytes, than the same step with the
# batch norm kept out (DAWNRUN_CUDA_FUSE_CONV=0), which a cuDNN with no fused engine
# (DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1) falls back to exactly.
if [ -z "${2:-}" ]; then
    CONFIG="$ROOT/tests/e2e/tiny-convbn.cfg"
    BENCH_ARGS=(--set 'train.precision="fp16"')
    bench convbn.log
    echo "fp16, batch norm inside the convolutions: $line"
    expect "graph launches" "$STEPS"
    expect "kernel launches" 0
    expect "allocations" 0
    expect "synchronisations" 0
    expect "H2D copies" 0
    expect "graph D2D" 0
    fused_kernels="$(graph kernels)"
    fused_cudnn="$(graph "cuDNN calls")"
    bench convbn-off.log DAWNRUN_CUDA_FUSE_CONV=0
    echo "fp16, batch norm kept out:                $line"
    off_kernels="$(graph kernels)"
    off_cudnn="$(graph "cuDNN calls")"
    if [ -z "$fused_kernels" ] || [ -z "$off_kernels" ] ||
       ! awk -v a="$fused_kernels" -v b="$off_kernels" 'BEGIN { exit !(a < b) }'; then
        fail "fused step replays $fused_kernels kernels, kept out $off_kernels: expected fewer"
    fi
    [ "$fused_cudnn" = "$off_cudnn" ] ||
        fail "fused step makes $fused_cudnn cuDNN calls, kept out $off_cudnn: expected as many"
    bench convbn-refused.log DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1
    echo "fp16, cuDNN refusing the fused graphs:    $line"
    [ "$(graph kernels)" = "$off_kernels" ] ||
        fail "with the fused graphs refused: $(graph kernels) kernels, expected $off_kernels"
    grep -q "no fused engine" "$DIR/convbn-refused.log" ||
        fail "with the fused graphs refused: no line saying so"
fi
[ "$failed" = 0 ] || exit 1
echo "a replayed step is one graph launch and nothing else; DAWNRUN_CUDA_GRAPH=0 launches none;"
echo "no step copies device to device; the batch norm inside the convolutions replays fewer"
echo "kernels, and a cuDNN without fused engines falls back to the step without it"
