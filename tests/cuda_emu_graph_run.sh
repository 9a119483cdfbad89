#!/usr/bin/env bash
# The CUDA engine's graph capture and replay of plans (kernels/cuda/graph_cuda.cu) under
# the host emulation: builds the emulated engine (tests/cuda_emu/run.sh --build), compiles
# the test program tests/cuda_emu/test_graph_run.cu with the same flags, links it with the
# engine's objects and libdawnrun_core.a, and runs it.
#   tests/cuda_emu_graph_run.sh BUILD_DIR
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
EMU="$ROOT/tests/cuda_emu"
[ $# -eq 1 ] || { echo "usage: $0 BUILD_DIR" >&2; exit 2; }
"$EMU/run.sh" --build "$1" >/dev/null || exit $?
BUILD="$(cd "$1" && pwd)"
WORK="$BUILD/cuda-emu"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
# shellcheck disable=SC2054  # the comma belongs to the flag
SAN=(-fsanitize=address,undefined -fno-omit-frame-pointer)
mkdir -p "$WORK/test"
SRC="$EMU/test_graph_run.cu"
OUT="$WORK/test/test_graph_run"
python3 "$EMU/rewrite_launches.py" "$SRC" >"$OUT.cpp.tmp" && mv "$OUT.cpp.tmp" "$OUT.cpp"
# the engine's objects (kernels/cuda and the emulation), not the runner's (main)
objs=()
for o in "$WORK"/obj/*.o; do
    case "$(basename "$o")" in runner_*) ;; *) objs+=("$o") ;; esac
done
g++ -std=c++17 -g -O1 -ffp-contract=off "${SAN[@]}" -include "$EMU/emu.h" -I"$EMU/include" \
    -I"$CUDA_HOME/include" -I"$ROOT/kernels/cuda" -I"$ROOT" -Wall -Wextra \
    -Wno-unused-parameter -c "$OUT.cpp" -o "$OUT.o"
g++ "${SAN[@]}" -fopenmp "$OUT.o" "${objs[@]}" "$BUILD/libdawnrun_core.a" -o "$OUT" -ldnnl \
    -lconfig -lsqlite3 -lm -lpthread
ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" exec "$OUT"
