#!/usr/bin/env bash
# Rehearses the GPU protocol of docs/gpu.md end to end on a machine without a GPU, against
# the emulated CUDA engine (tests/cuda_emu): scripts/gpu-bundle.sh makes a bundle of
# BUILD_DIR's dawnrun (its size, libraries and carry line checked; no .debs: offline),
# cuts a small synthetic CIFAR-10 into three pieces, then runs call 1 (bf16 made to fail
# through refused cuDNN algorithms, so that its rerun with CUDA_LAUNCH_BLOCKING runs, on
# the failed cases only) and the piece, piece and batch calls, each with only its own
# piece "carried", and checks the summaries, the timeouts' sum, the files that come back
# and the batch report. Call 1 runs with the emulated cuDNN serving the support table's
# graphs only and compiling each execution plan for 1.5 s (DAWNRUN_EMU_CUDNN_FINALIZE_MS),
# the benches at a width where graphs are built (ResNet-9's given time for its emulated
# steps, which a GPU runs in milliseconds), and DAWN_net's bench given too little time, so
# that its timeout, what it prints when stopped and its rerun with fusion and graphs off
# are exercised; the call must still end within its 420 s.
# Selfchecks, bench and batch are reduced so that it takes minutes under emulation.
#   tests/gpu_rehearsal.sh BUILD_DIR
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$(cd "$1" && pwd)"
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")" || exit $?
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
errors=0
check() {   # check DESCRIPTION COMMAND...
    local what="$1"
    shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; errors=$((errors + 1)); fi
}
has() { grep -E -q -- "$2" "$1"; }
row() { grep -E "^$2 +$3" "$1" >/dev/null; }   # row SUMMARY STEP STATUS

# ---------------------------------------------------------------- the bundle
GPU_BUNDLE="$T/bundle" "$ROOT/scripts/gpu-bundle.sh" --from "$BUILD" --no-debs >"$T/bundle.txt" 2>&1
check "gpu-bundle.sh exits 0" test $? = 0
bytes="$(sed -n 's/^bundle size: \([0-9]*\) bytes$/\1/p' "$T/bundle/MANIFEST")"
echo "bundle: ${bytes:-?} bytes"
check "bundle under 40 MiB" test "${bytes:-999999999}" -lt $((40 << 20))
for lib in libconfig.so.9 libsqlite3.so.0 libdnnl.so.2 libOpenCL.so.1; do
    check "bundle holds $lib" has "$T/bundle/MANIFEST" "^libraries.*$lib"
done
check "bundle prints call 1's carry and command" \
    has "$T/bundle.txt" 'carry \[".*bundle"\], command "scripts/gpu-call.sh 1"'

# ---------------------------------------------------------------- the data pieces
python3 - "$T/cifar" <<'PY'
import os, sys
d = sys.argv[1]
os.makedirs(d)
for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
    rec = bytearray(os.urandom(1000 * 3073))
    rec[0::3073] = bytes(i % 10 for i in range(1000))
    open(os.path.join(d, name), "wb").write(rec)
PY
GPU_DATA_PIECES="$T/pieces" GPU_PIECE_MIB=7 "$ROOT/scripts/gpu-bundle.sh" --data "$T/cifar" \
    >"$T/pieces.txt" 2>&1
check "the data is cut into 3 pieces" test "$(ls -d "$T"/pieces/part-* | wc -l)" = 3
check "the pieces' calls are printed" has "$T/pieces.txt" 'call 4: carry \[.*part-3"\], command "scripts/gpu-call.sh batch"'

# ---------------------------------------------------------------- call 1
export GPU_REHEARSE=1 GPU_REHEARSE_DAWNRUN="$DR" GPU_BUNDLE="$T/bundle" GPU_STATE="$T/state"
export ASAN_OPTIONS="detect_leaks=0"
small="--set model_vars.width=8 --set eval.batch_size=4"
OUT="$T/out1" GPU_SELFCHECK_ARGS="--only augment" GPU_SELFCHECK_ARGS_bf16="--only conv" \
    DAWNRUN_EMU_CUDNN_REFUSE="dir=fwd,type=bfloat16" DAWNRUN_EMU_CUDNN_FINALIZE_MS=1500 \
    GPU_STEP_LIMITS="bench-dawn=10 bench-resnet9=90" \
    GPU_SANITIZER_ARGS_memcheck="--precision fp16 --only augment" \
    GPU_SANITIZER_ARGS_racecheck="--precision fp16 --only augment" \
    GPU_BENCH_ARGS="--batch 4 --warmup 0 --steps 1 $small" \
    "$ROOT/scripts/gpu-call.sh" 1 >"$T/call1.txt" 2>&1
check "call 1 exits 1 (bf16 failed, DAWN_net's bench timed out)" test $? = 1
S="$T/out1/summary.txt"
cat "$S"
for s in env start selfcheck-fp16 selfcheck-fp32 bench-resnet9 bench-dawn-unfused memcheck \
         racecheck; do
    check "call 1: $s ok" row "$S" "$s" ok
done
check "call 1: ResNet-9's bench built fused graphs, with 1.5 s per plan finalize" \
    has "$S" "bench-resnet9: first use: [1-9][0-9]* fused graphs built, .* s building fused graphs"
check "call 1: DAWN_net's bench timed out" row "$S" bench-dawn timeout
check "call 1: the stopped bench said what it had" \
    has "$T/out1/bench.log" "^bench stopped by SIGTERM"
check "call 1: DAWN_net's bench ran again with fusion and graphs off" \
    has "$T/out1/bench.log" "==== bench-dawn-unfused: env DAWNRUN_CUDA_FUSE=0 DAWNRUN_CUDA_GRAPH=0"
check "call 1: the rerun's ms/step in the summary" has "$S" "bench-dawn-unfused .*ms/step"
check "call 1: the GPU holder said why it held nothing" \
    has "$S" "GPU held for the call: no CUDA driver"
check "call 1: selfcheck-bf16 failed" row "$S" selfcheck-bf16 "exit 1"
check "call 1: bf16 rerun" row "$S" rerun-bf16 "exit 1"
check "call 1: the rerun ran with CUDA_LAUNCH_BLOCKING and cuDNN's log" \
    has "$T/out1/debug.log" "CUDA_LAUNCH_BLOCKING=1 CUDNN_LOGLEVEL_DBG=2"
rerun_counts="$(sed -n 's/^== precision bf16: \([0-9]*\) checks, \([0-9]*\) failed$/\1 \2/p' \
    "$T/out1/debug.log" | tail -1)"
echo "rerun: ${rerun_counts:-?} (checks, failed)"
check "call 1: the rerun ran only the failed cases" \
    awk -v c="$rerun_counts" 'BEGIN { split(c, a, " "); exit !(a[1] > 0 && a[1] == a[2]) }'
check "call 1: the summary names the failing call and shape" \
    has "$S" "bf16: .*no forward convolution algorithm works for input \(n 8, c 3, h 32, w 32\).*bfloat16"
check "call 1: PyTorch absent, not failed" row "$S" torch-resnet9 absent
check "call 1: bench figures in the summary" has "$S" "bench-resnet9 .*ms/step"
# the script gives each step at most what is left of the 420 s: the call ends within them
# (and the moments between steps)
total="$(sed -n 's/^machine .*, elapsed \([0-9]*\) s$/\1/p' "$S")"
check "call 1: ends within its 420 s (${total:-?} s)" test "${total:-999}" -le 440
check "call 1: the summary says what was rehearsed" has "$S" "^absent \(need the GPU\)"
check "call 1: at most 8 files come back" test "$(ls "$T/out1" | wc -l)" -le 8

# ---------------------------------------------------------------- calls 2 to 4
# the emulated engine is far slower than the GPU: the batch call gets more time here
export GPU_BATCH_SEEDS=2 GPU_BATCH_LIMITS="400 400" GPU_CALL_BUDGET=900
export GPU_BATCH_ARGS="--set data.train_subset=32 --set data.test_subset=16 --set train.epochs=1 --set train.batch_size=16 --set eval.batch_size=16"
export GPU_BATCH_ARGS_30ep_cutout="--set model_vars.width=4"
export GPU_BATCH_ARGS_airbench94="--set model_vars.width1=24 --set model_vars.width2=24 --set model_vars.width3=24"
for k in 1 2 3; do
    stage=piece
    [ "$k" = 3 ] && stage=batch
    rm -rf "$T/carry" && mkdir "$T/carry" && cp -r "$T/pieces/part-$k" "$T/carry/"
    OUT="$T/out$((k + 1))" GPU_DATA_PIECES="$T/carry" "$ROOT/scripts/gpu-call.sh" "$stage" \
        >"$T/call$((k + 1)).txt" 2>&1
    check "call $((k + 1)) ($stage) exits 0" test $? = 0
done
check "call 3 holds two of three pieces" has "$T/out3/summary.txt" "here: part-1 part-2 \(of 3\)"
S="$T/out4/summary.txt"
cat "$S"
check "call 4: joined and checksummed" row "$S" join ok
check "call 4: every file's sum as sent" test "$(grep -c ' ok$' "$T/out4/data.log")" = 6
check "call 4: batch of 30ep-cutout" row "$S" batch-30ep-cutout ok
check "call 4: batch of airbench94" row "$S" batch-airbench94 ok
check "call 4: the report names both experiments" \
    sh -c "grep -q page-post3-30ep-cutout '$T/out4/report.md' && grep -q airbench94 '$T/out4/report.md'"
check "call 4: the curves come back" has "$T/out4/curves.svg" "<svg"
check "call 4: the database comes back" test -s "$T/out4/results.db"
if [ "$errors" != 0 ]; then
    for f in "$T"/call*.txt "$T"/out1/*.log "$T"/out4/*.log; do echo "---- $f"; tail -30 "$f"; done
fi
echo "$errors failed"
[ "$errors" = 0 ]
