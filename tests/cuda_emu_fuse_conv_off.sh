#!/usr/bin/env bash
# DAWNRUN_CUDA_FUSE_CONV=0 keeps the batch norm and the residual adds out of cuDNN's fused
# convolution graphs (docs/gpu.md, "Fused paths"): `dawnrun bench --engine cuda` on DAWN_net
# in fp16 (count-only emulation, tests/cuda_emu/emu.h) prints the same per-step and
# per-eval-batch counts with the switch at 0 as with the emulated cuDNN refusing every
# fused graph (DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1, which the engine says on stderr), and
# more of our own kernels and bytes than with both unset, where the graphs are taken.
#   tests/cuda_emu_fuse_conv_off.sh BUILD_DIR
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"
CONFIG="$ROOT/configs/page-post3/30ep-cutout.cfg"
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")" || exit $?
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
export DAWNRUN_EMU_COUNT_ONLY=1
unset DAWNRUN_CUDA_FUSE DAWNRUN_CUDA_FUSE_CONV DAWNRUN_EMU_CUDNN_FUSED_REFUSE DAWNRUN_CUDA_GRAPH
fail() {
    echo "FAIL: $*"
    for f in "$DIR"/*.counts "$DIR"/*.err; do echo "== $f"; cat "$f"; done
    exit 1
}
bench() {   # bench NAME [env assignments]: the counter lines in NAME.counts
    local name="$1"
    shift
    env "$@" "$DR" bench "$CONFIG" --engine cuda --batch 64 --steps 1 --warmup 2 \
        --set 'train.precision="fp16"' >"$DIR/$name.out" 2>"$DIR/$name.err" ||
        fail "bench ($name) exited $?"
    grep -E '^per (training step|eval batch): ' "$DIR/$name.out" >"$DIR/$name.counts"
    [ "$(wc -l <"$DIR/$name.counts")" = 2 ] || fail "bench ($name): no counter lines"
}
# the kernels a step's graph replays and their bytes: "133 792.59 MB"
KERNELS='s/^per training step: .*by the graph launches: \([0-9]*\) graph kernels'
KERNELS+=' (\([^)]*\) read+written).*/\1 \2/p'
kernels() { sed -n "$KERNELS" "$DIR/$1.counts"; }
bench off DAWNRUN_CUDA_FUSE_CONV=0
bench refused DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1
bench on
grep -q 'no fused engine' "$DIR/refused.err" || fail "the refused graphs were not said"
if grep -q 'no fused engine' "$DIR/off.err"; then
    fail "with DAWNRUN_CUDA_FUSE_CONV=0 the engine still asked cuDNN for fused graphs"
fi
cmp -s "$DIR/off.counts" "$DIR/refused.counts" ||
    fail "DAWNRUN_CUDA_FUSE_CONV=0 counts differ from a cuDNN refusing every fused graph:" \
        "$(diff "$DIR/off.counts" "$DIR/refused.counts")"
read -r k_off b_off u_off <<<"$(kernels off)"
read -r k_on b_on u_on <<<"$(kernels on)"
[ -n "$k_off" ] && [ -n "$k_on" ] || fail "no graph kernel counts"
[ "$k_on" -lt "$k_off" ] ||
    fail "the fused graphs did not take kernels out of the step ($k_on vs $k_off)"
echo "DAWNRUN_CUDA_FUSE_CONV=0: $k_off kernels ($b_off $u_off), as with every fused graph" \
    "refused; fused: $k_on kernels ($b_on $u_on)"
