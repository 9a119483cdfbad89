#!/usr/bin/env bash
# docs/cudnn-graphs.md's support table is the one the engine and the emulated cuDNN follow
# (kernels/cuda/fused_support.c): the lines between its "support-table" markers equal the
# table as tests/cuda_emu/test_cudnn_graph.cu prints it (FUSED_SUPPORT_PRINT=1).
#   tests/cuda_emu_support_table.sh BUILD_DIR
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$1"
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
FUSED_SUPPORT_PRINT=1 "$ROOT/tests/cuda_emu/run.sh" --test "$BUILD" \
    "$ROOT/tests/cuda_emu/test_cudnn_graph.cu" >"$DIR/code.md" || exit $?
sed -n '/^<!-- support-table: begin/,/^<!-- support-table: end/p' "$ROOT/docs/cudnn-graphs.md" |
    sed '1d;$d' >"$DIR/docs.md"
[ -s "$DIR/code.md" ] || { echo "FAIL: the test program printed no table"; exit 1; }
if ! diff -u "$DIR/docs.md" "$DIR/code.md"; then
    echo "FAIL: docs/cudnn-graphs.md's support table differs from kernels/cuda/fused_support.c" \
         "(the lines above: - the docs, + the code)"
    exit 1
fi
echo "ok: the support table of docs/cudnn-graphs.md is the code's" \
     "($(($(wc -l <"$DIR/code.md") - 2)) rows)"
