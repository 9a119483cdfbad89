#!/usr/bin/env bash
# The CUDA engine asks cuDNN only for the fused graphs the support table accepts
# (docs/cudnn-graphs.md, "Support table"; kernels/cuda/fused_support.h): `dawnrun bench
# --engine cuda` of DAWN_net, ResNet-9 and airbench94 in fp16 and in bf16, under the
# emulated cuDNN that serves exactly the table's graphs (count-only emulation,
# tests/cuda_emu/emu.h), with no build budget spent, says no "cuDNN has no fused engine"
# line and counts 0 refused graphs on its first-use line: every graph it asked for was
# served. With the emulated cuDNN refusing every fused graph the line does appear (the
# check can see a refusal).
#   tests/cuda_emu_support_asked.sh BUILD_DIR
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")" || exit $?
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
export DAWNRUN_EMU_COUNT_ONLY=1
unset DAWNRUN_CUDA_FUSE DAWNRUN_CUDA_FUSE_CONV DAWNRUN_EMU_CUDNN_FUSED_REFUSE DAWNRUN_CUDA_GRAPH \
    DAWNRUN_CUDA_FUSED_BUILD_S DAWNRUN_EMU_CUDNN_FINALIZE_MS DAWNRUN_EMU_CUDNN_FUSED_ENGINES
errors=0
bench() {   # bench NAME CONFIG PRECISION [env assignments]
    local name="$1" config="$2" precision="$3"
    shift 3
    env "$@" "$DR" bench "$ROOT/$config" --engine cuda --batch 64 --steps 1 --warmup 2 \
        --set "train.precision=\"$precision\"" >"$DIR/$name.out" 2>"$DIR/$name.err"
    local rc=$?
    if [ "$rc" != 0 ]; then
        echo "FAIL: bench $name exited $rc"
        tail -20 "$DIR/$name.err"
        errors=$((errors + 1))
    fi
}
for precision in fp16 bf16; do
    for config in configs/page-post3/30ep-cutout.cfg configs/resnet9-24ep.cfg \
                  configs/airbench94.cfg; do
        name="$(basename "$config" .cfg)-$precision"
        bench "$name" "$config" "$precision"
        # the last first-use line: "first use: B fused graphs built, R refused, ..."
        line="$(grep '^first use: ' "$DIR/$name.out" | tail -1)"
        if grep 'no fused engine\|build budget' "$DIR/$name.err"; then
            echo "FAIL: $name: a fused graph asked for was refused"
            errors=$((errors + 1))
        elif ! grep -q '^first use: [0-9]* fused graphs built, 0 refused, ' <<<"$line"; then
            echo "FAIL: $name: the first-use line counts refusals: $line"
            errors=$((errors + 1))
        else
            echo "ok: $name: every fused graph asked for was served: $line"
        fi
    done
done
bench refused configs/page-post3/30ep-cutout.cfg fp16 DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1
if grep -q 'no fused engine' "$DIR/refused.err"; then
    echo "ok: a cuDNN refusing every fused graph is said"
else
    echo "FAIL: with every fused graph refused, no refusal was said"
    errors=$((errors + 1))
fi
echo "$errors failed"
[ "$errors" = 0 ]
