#!/usr/bin/env bash
# What first use costs, as `dawnrun bench --engine cuda` says it (docs/gpu.md, "First use"):
# the emulated engine (tests/cuda_emu, count-only: nothing computed) benches a narrow
# DAWN_net in fp16, whose step takes cuDNN's fused convolution graphs, with every
# execution-plan finalize sleeping 200 ms as real cuDNN compiles there
# (DAWNRUN_EMU_CUDNN_FINALIZE_MS). Checked, from the lines and counts the bench prints:
#  - with a budget that is not spent (DAWNRUN_CUDA_FUSED_BUILD_S=1000): two first-use lines
#    (after the warm-up and at the end), fused graphs built, time spent building them,
#    convolution algorithm searches;
#  - cuDNN refusing every fused graph (DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1): none built, some
#    refused, no execution plan finalized, the bench completes;
#  - DAWNRUN_CUDA_FUSED_BUILD_S=0: none built, every graph refused (as many as above), no
#    execution plan finalized, one line saying the build budget is spent and none saying
#    cuDNN refused, the bench completes;
#  - DAWNRUN_CUDA_FUSED_BUILD_S=1: the budget runs out on the way (the graphs take 0.4 s
#    each at least): graphs refused, one line saying so, the bench completes;
#  - ten engine configurations listed per graph, only the last one's plan finalizing
#    (DAWNRUN_EMU_CUDNN_FUSED_ENGINES=10): the engine tries four per heuristics mode, so it
#    builds none, finalizes at most 16 plans per graph (4 per mode, 2 modes, a WGRAD graph
#    described twice) and says how many it tried of how many were listed.
# Nothing here measures speed: the counts are structural, and the times are only checked
# to be there.
#   tests/cuda_emu_first_use.sh BUILD_DIR
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"
CONFIG="$ROOT/configs/page-post3/30ep-cutout.cfg"
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")" || exit $?
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" DAWNRUN_EMU_COUNT_ONLY=1
unset DAWNRUN_CUDA_FUSE DAWNRUN_CUDA_FUSE_CONV DAWNRUN_CUDA_GRAPH DAWNRUN_CUDA_FUSED_BUILD_S \
    DAWNRUN_EMU_CUDNN_FUSED_REFUSE DAWNRUN_EMU_CUDNN_FUSED_ENGINES
failed=0
fail() { echo "FAIL: $*"; failed=1; }
LINE='^first use: \([0-9]*\) fused graphs built, \([0-9]*\) refused, \([0-9]*\) not asked '
LINE+='(support table), \([0-9.]*\) s building fused graphs, \([0-9.]*\) s searching '
LINE+='convolution algorithms (\([0-9]*\) searches);'

# bench NAME [ENV...]: runs the bench with ENV; sets built, refused, build_s, searches (from
# the last first-use line) and finalizes (the emulator's count at exit)
bench() {
    local name="$1"
    shift
    built='' refused='' unasked='' build_s='' searches='' finalizes=''
    if ! env DAWNRUN_EMU_CUDNN_FINALIZE_MS="${FINALIZE_MS:-200}" "$@" "$DR" bench "$CONFIG" \
        --engine cuda --batch 16 --warmup 1 --steps 1 --set 'train.precision="fp16"' \
        --set model_vars.width=8 --set eval.batch_size=16 >"$DIR/$name.out" 2>"$DIR/$name.err"
    then
        fail "$name: the bench did not complete"
        cat "$DIR/$name.out" "$DIR/$name.err"
        return
    fi
    grep '^first use: ' "$DIR/$name.out" >"$DIR/$name.first"
    [ "$(wc -l <"$DIR/$name.first")" = 2 ] ||
        fail "$name: $(wc -l <"$DIR/$name.first") first-use lines, expected 2" \
             "(after the warm-up, at the end)"
    sed -n 1p "$DIR/$name.first" | grep -q '; warm-up 1 steps [0-9.]* s$' ||
        fail "$name: the first first-use line does not end with the warm-up"
    sed -n 2p "$DIR/$name.first" |
        grep -q '; warm-up 1 steps [0-9.]* s; timed 1 steps [0-9.]* s$' ||
        fail "$name: the last first-use line does not end with the warm-up and the timed steps"
    grep -q '^warm-up: 1 steps in [0-9.]* s ([0-9.]* ms/step)$' "$DIR/$name.out" ||
        fail "$name: no warm-up line"
    read -r built refused unasked build_s _ searches <<<"$(tail -1 "$DIR/$name.first" |
        sed -n "s/$LINE.*/\1 \2 \3 \4 \5 \6/p")"
    [ -n "$searches" ] ||
        fail "$name: the first-use line is not as expected: $(tail -1 "$DIR/$name.first")"
    finalizes="$(sed -n 's/^emu cuDNN backend: \([0-9]*\) execution-plan finalizes.*/\1/p' \
        "$DIR/$name.err")"
    [ -n "$finalizes" ] || fail "$name: the emulator did not count its plan finalizes"
    echo "$name: $(tail -1 "$DIR/$name.first"); $finalizes plan finalizes"
}
budget_lines() { grep -c 'build budget of the fused convolution graphs is spent' "$DIR/$1.err"; }

bench taken DAWNRUN_CUDA_FUSED_BUILD_S=1000
[ "${built:-0}" -gt 0 ] || fail "taken: no fused graph built"
# DAWN_net in fp16 asks for graphs the support table refuses (a stride-2 data gradient,
# statistics of an add's sum): counted apart, never asked for
[ "${unasked:-0}" -gt 0 ] || fail "taken: no graph counted as refused by the support table"
[ "${searches:-0}" -gt 0 ] || fail "taken: no convolution algorithm search counted"
awk -v s="${build_s:-0}" 'BEGIN { exit !(s > 0) }' || fail "taken: no time spent building counted"
[ "${finalizes:-0}" -ge "$((2 * ${built:-0}))" ] ||
    fail "taken: $finalizes plan finalizes for $built graphs built (two engines each)"

bench refused DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1
all_refused="$refused"   # fewer than taken: a graph refused changes what the next one is
[ "$built" = 0 ] || fail "refused: $built fused graphs built by a cuDNN that lists no engine"
[ "${refused:-0}" -gt 0 ] || fail "refused: no fused graph counted as refused"
[ "$finalizes" = 0 ] || fail "refused: $finalizes plans finalized"
grep -q 'no fused engine' "$DIR/refused.err" || fail "refused: the refusals were not said"

bench none DAWNRUN_CUDA_FUSED_BUILD_S=0
[ "$built" = 0 ] || fail "budget 0: $built fused graphs built"
[ "${refused:-0}" -gt 0 ] || fail "budget 0: no fused graph counted as refused"
[ "$refused" = "$all_refused" ] ||
    fail "budget 0: $refused refused, not every graph" \
         "(as many as cuDNN refusing them all: $all_refused)"
[ "$finalizes" = 0 ] || fail "budget 0: $finalizes plans finalized"
[ "$(budget_lines none)" = 1 ] ||
    fail "budget 0: $(budget_lines none) lines saying the budget is spent"
grep -q 'no fused engine' "$DIR/none.err" && fail "budget 0: a refusal said as cuDNN's"

bench short DAWNRUN_CUDA_FUSED_BUILD_S=1
[ "${refused:-0}" -gt 0 ] || fail "budget 1 s: no fused graph refused once it was spent"
[ "$(budget_lines short)" = 1 ] ||
    fail "budget 1 s: $(budget_lines short) lines saying the budget is spent"

FINALIZE_MS=0 bench capped DAWNRUN_EMU_CUDNN_FUSED_ENGINES=10
[ "$built" = 0 ] || fail "10 engines: $built fused graphs built (the engine tried past 4 per mode)"
[ "${refused:-0}" -gt 0 ] || fail "10 engines: no fused graph counted as refused"
[ "${finalizes:-0}" -gt 0 ] && [ "$finalizes" -le "$((16 * ${refused:-0}))" ] ||
    fail "10 engines: $finalizes plan finalizes for $refused graphs"
grep -q 'the first 8 of 20 configurations listed tried' "$DIR/capped.err" ||
    fail "10 engines: no refusal says how many configurations were tried"
exit "$failed"
