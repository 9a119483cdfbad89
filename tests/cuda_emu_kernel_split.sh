#!/usr/bin/env bash
# bench/kernel-split.sh on tests/e2e/tiny.cfg at batch 32, fp32: it exits 0 only when its
# per-kernel rows add up to the step's own-kernel bytes that the bench prints; here also
# that it names the batch norm's and the optimiser's kernels. Skipped (77) without gdb or
# where gdb cannot trace a program.
#   tests/cuda_emu_kernel_split.sh BUILD_DIR
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
command -v gdb >/dev/null || { echo "skipped: no gdb"; exit 77; }
gdb -q -batch -ex run --args /bin/true >/dev/null 2>&1 ||
    { echo "skipped: gdb cannot run a program here (ptrace refused?)"; exit 77; }
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$ROOT/bench/kernel-split.sh" --build "$1" --batch 32 --precision fp32 \
    "$ROOT/tests/e2e/tiny.cfg" >"$out" 2>&1
rc=$?
cat "$out"
[ "$rc" = 0 ] || { echo "FAIL: kernel-split.sh exited $rc"; exit 1; }
for k in cuda_sgd_multi reduce_partial_act; do
    grep -q "^| $k" "$out" || { echo "FAIL: no row for $k"; exit 1; }
done
echo "the rows add up to the bench's count"
