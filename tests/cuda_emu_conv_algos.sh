#!/usr/bin/env bash
# The convolution algorithm choice under the emulated CUDA engine (tests/cuda_emu): cuDNN
# refuses chosen executions (DAWNRUN_EMU_CUDNN_REFUSE), as real kernels sometimes do for
# configurations the heuristics listed.
#   tests/cuda_emu_conv_algos.sh BUILD_DIR fallthrough   algorithm 0 refused for 3-channel
#       half inputs, and the backward filter's algorithm 2: the engine falls through to
#       the next candidate (for the backward filter, whose only deterministic algorithm is
#       2, to the non-deterministic ones, said once per shape) and the convolution checks
#       pass (the emulated refusal also leaves a runtime error, which the engine clears
#       before its own next launch check)
#   tests/cuda_emu_conv_algos.sh BUILD_DIR none          every backward-filter algorithm of
#       the 2x2 whitening shape refused: one message names direction, shape, type, layout
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"
MODE="$2"
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")" || exit $?
LOG="$(mktemp)"
trap 'rm -f "$LOG"' EXIT
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
fail() { echo "FAIL: $*"; cat "$LOG"; exit 1; }
case "$MODE" in
fallthrough)
    DAWNRUN_EMU_CUDNN_REFUSE="algo=0,c=3,type=half;algo=2,dir=bwd_filter,c=3,type=half" \
        "$DR" selfcheck --precision fp16 --only conv >"$LOG" 2>&1
    rc=$?
    [ "$rc" = 0 ] || fail "selfcheck exit $rc, expected 0"
    grep -q "cuDNN forward algorithm 0 failed on input (n 8, c 3, h 32, w 32) -> 64 outputs.*half (fp16).*trying the next" "$LOG" ||
        fail "no note of the refused forward algorithm 0"
    # the selfcheck asks for deterministic algorithms: the backward filter's only one (2)
    # is refused, so the non-deterministic ones are tried, said once per shape
    grep -q "cuDNN backward filter algorithm 2 failed on input (n 8, c 3, h 32, w 32)" "$LOG" ||
        fail "no note of the refused backward-filter algorithm 2"
    grep -q "cuDNN backward filter algorithm 0 failed on input (n 8, c 3, h 32, w 32)" "$LOG" ||
        fail "no note of the refused backward-filter algorithm 0"
    nodet="cuDNN has no deterministic backward filter algorithm that works for input"
    [ "$(grep -c "$nodet (n 8, c 3, h 32, w 32) -> 64 outputs" "$LOG")" = 1 ] ||
        fail "the missing deterministic algorithm is not said once for the shape"
    grep -q "== precision fp16: 14 checks, 0 failed" "$LOG" || fail "not every conv check passed"
    # the runtime error a refused execution leaves is cleared, not blamed on a later launch
    ! grep -q "cudaGetLastError" "$LOG" || fail "a refused algorithm's error reached a launch check"
    ;;
none)
    DAWNRUN_EMU_CUDNN_REFUSE="dir=bwd_filter,c=3,k=2,type=half" \
        "$DR" selfcheck --precision fp16 --only conv >"$LOG" 2>&1
    rc=$?
    [ "$rc" = 1 ] || fail "selfcheck exit $rc, expected 1"
    grep -q "cuDNN: no backward filter convolution algorithm works for input (n 8, c 3, h 32, w 32) -> 24 outputs, k 2, stride 1, pad 0, data type half (fp16), layout NHWC (filters KRSC)" "$LOG" ||
        fail "no message naming the shape"
    [ "$(grep -c "no backward filter convolution algorithm works" "$LOG")" = 1 ] ||
        fail "the message is not said once"
    grep -q "conv_backward/3-24_32x32_k2s1p0_n8_bias_image .*FAIL" "$LOG" ||
        fail "the failing check is not named"
    grep -q "conv_backward/3-64_32x32_k3s1p1_n8_image .* ok" "$LOG" || fail "other shapes were affected"
    ;;
*) echo "usage: $0 BUILD_DIR fallthrough|none" >&2; exit 2 ;;
esac
echo "ok: $MODE"
