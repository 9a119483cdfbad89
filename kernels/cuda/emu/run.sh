#!/usr/bin/env bash
# Runs `dawnrun selfcheck` with the CUDA engine compiled for the host, on a machine without
# a GPU: the engine's .cu files, with their kernel launches rewritten (rewrite_launches.py),
# run on the CPU (emu_runtime.cpp: a block scheduler on coroutines, device memory = host
# memory, fresh allocations filled with NaN), and cuDNN's convolutions and cublasGemmEx are
# naive reference loops that check their descriptors, workspace and leading dimensions
# (emu_libs.cpp). The CUDA sources are built with AddressSanitizer and UBSan.
#
# It checks the engine's own logic against the CPU engine: index arithmetic, layouts and
# their conversions, descriptor and GEMM arguments, accumulate flags, scratch buffers, the
# augmentation's bits, the training loop. It does not check cuDNN or cuBLAS themselves,
# concurrency between GPU threads, or speed. About 2-3 minutes per precision on 2 cores.
#
#   kernels/cuda/emu/run.sh BUILD_DIR [selfcheck flags, e.g. --precision fp16]
# BUILD_DIR is any CMake build of dawnrun (its libdawnrun_core.a is linked in); the
# emulation is built in BUILD_DIR/cuda-emu. Needs the CUDA headers (CUDA_HOME, default
# /usr/local/cuda), g++ and python3.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [selfcheck flags]" >&2; exit 2; }
for tool in python3 g++; do
    command -v "$tool" >/dev/null || { echo "$tool not found: the emulated selfcheck is skipped"; exit 77; }
done
BUILD="$(cd "$1" && pwd)"
shift
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
CORE="$BUILD/libdawnrun_core.a"
[ -f "$CORE" ] || { echo "$CORE: not found (build the project in $BUILD first)" >&2; exit 2; }
WORK="$BUILD/cuda-emu"
mkdir -p "$WORK/src" "$WORK/obj"

# shellcheck disable=SC2054  # the comma belongs to the flag
SAN=(-fsanitize=address,undefined -fno-omit-frame-pointer)
CXXFLAGS=(-std=c++17 -g -O1 -ffp-contract=off "${SAN[@]}" -include "$HERE/emu.h"
          -I"$HERE/include" -I"$CUDA_HOME/include" -I"$ROOT/kernels/cuda" -I"$ROOT"
          -Wall -Wextra -Wno-unused-parameter)
CFLAGS=(-std=c11 -g -O1 -D_POSIX_C_SOURCE=200809L -I"$ROOT" -I"$ROOT/runner" -Wall -Wextra)

sources=()
for f in "$ROOT"/kernels/cuda/*.cu; do
    out="$WORK/src/$(basename "$f" .cu).cpp"
    python3 "$HERE/rewrite_launches.py" "$f" >"$out"
    sources+=("$out")
done
sources+=("$HERE/emu_runtime.cpp" "$HERE/emu_libs.cpp")
pids=()
for src in "${sources[@]}"; do
    g++ "${CXXFLAGS[@]}" -c "$src" -o "$WORK/obj/$(basename "$src" .cpp).o" &
    pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
gcc "${CFLAGS[@]}" -c "$ROOT/runner/cli.c" -o "$WORK/obj/cli.o"
gcc "${CFLAGS[@]}" -c "$ROOT/runner/cmd_selfcheck.c" -o "$WORK/obj/cmd_selfcheck.o"
gcc "${CFLAGS[@]}" -c "$HERE/main.c" -o "$WORK/obj/main.o"
g++ "${SAN[@]}" -fopenmp "$WORK"/obj/*.o "$CORE" -o "$WORK/selfcheck" -ldnnl -lconfig -lsqlite3 -lm
echo "built $WORK/selfcheck; running it" >&2
ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" exec "$WORK/selfcheck" "$@"
