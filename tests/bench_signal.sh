#!/usr/bin/env bash
# `dawnrun bench` stopped by a signal during its timed steps says what it has before it
# exits (docs/gpu.md, "Stopped by a signal"): the bench runs with its stdout in a file
# (block-buffered by default, line-buffered by dawnrun), far more timed steps than it can
# finish, and gets the signal once its warm-up line is in the file; the file then holds
# the warm-up line and, after it, the stop line with the warm-up's and the timed steps'
# counts, and the exit code is 128 + the signal.
#   tests/bench_signal.sh cpu DAWNRUN       SIGINT, the CPU engine: no first-use line (it
#                                           counts nothing)
#   tests/bench_signal.sh cuda BUILD_DIR    SIGTERM, the emulated CUDA engine in fp16
#                                           (tests/cuda_emu): the first-use line so far too
# No time is asserted: the waits are generous and only bound a bench that never says its
# warm-up or never ends after the signal (a non-interactive shell starts background jobs
# with SIGINT ignored: a bench without its own handler would run on).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODE="$1"
STEPS=100000
ARGS=(bench "$ROOT/tests/e2e/tiny.cfg" --batch 32 --warmup 2 --steps "$STEPS")
if [ "$MODE" = cuda ]; then
    DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$2")" || exit $?
    SIG=TERM CODE=143
    ARGS+=(--engine cuda --set 'train.precision="fp16"')
    export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
    unset DAWNRUN_EMU_COUNT_ONLY DAWNRUN_EMU_CUDNN_FINALIZE_MS
else
    DR="$2"
    SIG=INT CODE=130
    ARGS+=(--engine cpu --threads 1)
fi
DIR="$(mktemp -d)"
pid=
trap '[ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; rm -rf "$DIR"' EXIT
# running PID: the process is there and not a zombie (Linux /proc)
running() { local st; st="$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" && [ "$st" != Z ]; }
fail() {
    echo "FAIL: $*"
    echo "== stdout"; cat "$DIR/out"; echo "== stderr"; tail -20 "$DIR/err"
    exit 1
}
"$DR" "${ARGS[@]}" >"$DIR/out" 2>"$DIR/err" &
pid=$!
# up to 15 minutes for the warm-up (a loaded machine, the emulated engine)
for _ in $(seq 1800); do
    grep -q '^warm-up: ' "$DIR/out" && break
    running "$pid" || break
    sleep 0.5
done
grep -q '^warm-up: ' "$DIR/out" || fail "no warm-up line in the bench's output file"
kill -s "$SIG" "$pid" || fail "the bench ended before the signal"
for _ in $(seq 600); do running "$pid" || break; sleep 0.5; done
running "$pid" && fail "the bench still runs 5 minutes after SIG$SIG"
wait "$pid"
rc=$?
pid=
[ "$rc" = "$CODE" ] || fail "exit code $rc after SIG$SIG, expected $CODE"
warm="$(grep -n '^warm-up: 2 steps in [0-9.]* s ([0-9.]* ms/step)$' "$DIR/out" | cut -d: -f1)"
[ -n "$warm" ] || fail "no warm-up line with its ms/step"
STOP="^bench stopped by SIG$SIG during the timed steps: warm-up 2 of 2 steps in [0-9.]* s "
STOP+="([0-9.]* ms/step); timed [0-9]* of $STEPS steps issued in [0-9.]* s"
stop="$(grep -n "$STOP" "$DIR/out" | cut -d: -f1)"
[ -n "$stop" ] || fail "no stop line with the steps done"
[ "$stop" -gt "$warm" ] || fail "the stop line comes before the warm-up line"
first="$(grep -n '^first use: .* so far$' "$DIR/out" | cut -d: -f1)"
if [ "$MODE" = cuda ]; then
    [ "$first" = "$((stop + 1))" ] || fail "no first-use line (so far) after the stop line"
else
    [ -z "$first" ] || fail "a first-use line from the CPU engine, which counts nothing"
fi
sed -n "${stop}p" "$DIR/out"
[ -n "$first" ] && sed -n "${first}p" "$DIR/out"
echo "SIG$SIG: exit $rc, the warm-up and the steps done said"
