#!/usr/bin/env bash
# Runs `dawnrun selfcheck` (or, with --build, builds the whole dawnrun) with the CUDA engine
# compiled for the host, on a machine without a GPU: the engine's .cu files (and the headers
# that launch kernels), with their kernel launches rewritten (rewrite_launches.py),
# run on the CPU (emu_runtime.cpp: a block scheduler on coroutines, device memory = host
# memory, fresh allocations filled with NaN), and cuDNN's convolutions and cublasGemmEx are
# naive reference loops that check their descriptors, workspace and leading dimensions
# (emu_libs.cpp); cuDNN's backend graph API serves the three fused convolution graphs the
# engine builds, checking descriptors, graphs and variant packs as cuDNN does and
# computing them on the host (emu_graph.cpp). The CUDA sources are built with
# AddressSanitizer and UBSan.
#
# It checks the engine's own logic against the CPU engine: index arithmetic, layouts and
# their conversions, descriptor and GEMM arguments, accumulate flags, scratch buffers, the
# augmentation's bits, the training loop. It does not check cuDNN or cuBLAS themselves,
# concurrency between GPU threads, or speed. The fp32 pass takes about a minute and a half
# on 2 cores: the reference convolutions read each operand once into plain arrays and sum
# with the channels innermost, and the emulated threads' stacks are small (emu_runtime.cpp).
#
#   tests/cuda_emu/run.sh BUILD_DIR [selfcheck flags, e.g. --precision fp16]
#   tests/cuda_emu/run.sh --build BUILD_DIR    only builds; prints the emulated dawnrun's
#                                                path (every command: bench, run, report...)
#   tests/cuda_emu/run.sh --test BUILD_DIR FILE.cu   builds the CUDA test program FILE.cu
#                                                against the emulated runtime and cuDNN /
#                                                cuBLAS stand-ins alone, and runs it
# BUILD_DIR is any CMake build of dawnrun (its libdawnrun_core.a is linked in); the
# emulation is built in BUILD_DIR/cuda-emu, recompiling only what changed, one build at a
# time (a lock). DAWNRUN_EMU_CUDNN_REFUSE makes chosen cuDNN executions fail (emu_libs.cpp);
# DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1 makes cuDNN's heuristics list no engine for any fused
# graph, so the engine runs those convolutions unfused (emu_graph.cpp);
# DAWNRUN_EMU_CUDNN_FUSED_ENGINES=N lists N engines per fused graph instead of three, only
# the last one's plan finalizing. DAWNRUN_EMU_CUDNN_FINALIZE_MS=N makes every execution-plan
# finalize of a fused graph sleep N ms (default 0), as real cuDNN spends compiling there,
# to rehearse the engine's time limits; at exit a stderr line counts the finalizes.
# The selfcheck runs with DAWNRUN_CUDA_FUSED_BUILD_S=1000000 unless it is set: the fused
# graphs' trial runs compute on the CPU, far slower than the GPU the engine's build budget
# is sized for (docs/gpu.md), and a spent budget would leave graphs unchecked.
# The emulated cuDNN reports each algorithm's (and fused engine's) determinism as cuDNN
# documents it, and a non-deterministic one's results vary in their last bits from run to
# run (emu_libs.cpp, emu_graph.cpp): a test comparing bits asks the engine for
# determinism (backend_ops.set_deterministic; DAWNRUN_CUDA_DETERMINISTIC=1 for dawnrun).
# The emulated cudaMalloc hands out freed addresses again, as the real one does
# (emu_runtime.cpp); DAWNRUN_EMU_NO_REUSE=1 makes every allocation new memory.
# DAWNRUN_EMU_COUNT_ONLY=1 runs the emulated dawnrun without computing kernels, cuDNN or
# cuBLAS (emu.h): for `dawnrun bench`'s counts at real batch sizes (bench/count-structure.sh)
# only, never for checking results; the selfcheck and --test modes refuse it.
# Needs the CUDA headers (CUDA_HOME, default /usr/local/cuda), g++ and python3.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BUILD_ONLY=0
TEST_SRC=
if [ "${1:-}" = "--build" ]; then BUILD_ONLY=1; shift; fi
if [ "${1:-}" = "--test" ]; then
    [ $# -eq 3 ] || { echo "usage: $0 --test BUILD_DIR FILE.cu" >&2; exit 2; }
    TEST_SRC="$(cd "$(dirname "$3")" && pwd)/$(basename "$3")"
    set -- "$2"
fi
[ $# -ge 1 ] || { echo "usage: $0 [--build] BUILD_DIR [selfcheck flags]" >&2; exit 2; }
# count-only mode computes nothing (emu.h): a check run under it would check nothing
if [ "$BUILD_ONLY" = 0 ] && [ -n "${DAWNRUN_EMU_COUNT_ONLY:-}" ] && [ "$DAWNRUN_EMU_COUNT_ONLY" != 0 ]; then
    echo "$0: DAWNRUN_EMU_COUNT_ONLY is set: results would be meaningless; unset it to check" >&2
    exit 2
fi
for tool in python3 g++; do
    command -v "$tool" >/dev/null || { echo "$tool not found: the emulated selfcheck is skipped"; exit 77; }
done
BUILD="$(cd "$1" && pwd)"
shift
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
CORE="$BUILD/libdawnrun_core.a"
[ -n "$TEST_SRC" ] || [ -f "$CORE" ] ||
    { echo "$CORE: not found (build the project in $BUILD first)" >&2; exit 2; }
WORK="$BUILD/cuda-emu"
mkdir -p "$WORK/src" "$WORK/obj"

# shellcheck disable=SC2054  # the comma belongs to the flag
SAN=(-fsanitize=address,undefined -fno-omit-frame-pointer)
CXXFLAGS=(-std=c++17 -g -O1 -ffp-contract=off "${SAN[@]}" -include "$HERE/emu.h"
          -I"$HERE/include" -I"$CUDA_HOME/include" -I"$ROOT/kernels/cuda" -I"$ROOT"
          -Wall -Wextra -Wno-unused-parameter)
CFLAGS=(-std=c11 -g -O1 -D_POSIX_C_SOURCE=200809L -I"$ROOT" -I"$ROOT/runner" -Wall -Wextra)

# the version and source revision the CMake build recorded (the scheduler stores them)
FLAGS="$BUILD/CMakeFiles/dawnrun.dir/flags.make"
ver="$(sed -n 's/.*-DDAWNRUN_VERSION=\\"\([^\\]*\)\\".*/\1/p' "$FLAGS" 2>/dev/null || true)"
rev="$(sed -n 's/.*-DDAWNRUN_GIT_REV=\\"\([^\\]*\)\\".*/\1/p' "$FLAGS" 2>/dev/null || true)"
CFLAGS+=("-DDAWNRUN_VERSION=\"${ver:-unknown}\"" "-DDAWNRUN_GIT_REV=\"${rev:-unknown}-emu\"")
exec 9>"$WORK/.lock"
flock 9
# an object is rebuilt when it is older than its source or than any header it may include
newest_header="$(find "$ROOT/base" "$ROOT/kernels" "$ROOT/engine" "$ROOT/runner" "$ROOT/results" "$HERE" \
                 -name '*.h' -newer "$WORK/.built" 2>/dev/null | head -1 || true)"
[ -f "$WORK/.built" ] || newest_header=all
stale() {   # stale SOURCE OBJECT: 0 when OBJECT must be rebuilt
    [ -n "$newest_header" ] || [ ! -f "$2" ] || [ "$1" -nt "$2" ]
}
pids=()
compile() {   # compile LANG SOURCE OBJECT, in the background when stale
    local lang="$1" src="$2" obj="$3"
    stale "$src" "$obj" || return 0
    if [ "$lang" = c++ ]; then g++ "${CXXFLAGS[@]}" -c "$src" -o "$obj" &
    else gcc "${CFLAGS[@]}" -c "$src" -o "$obj" &
    fi
    pids+=($!)
}
if [ -n "$TEST_SRC" ]; then
    # a test program: the emulated runtime and libraries, and the test, nothing else
    name="test_$(basename "$TEST_SRC" .cu)"
    for f in "$HERE/emu_runtime.cpp" "$HERE/emu_libs.cpp" "$HERE/emu_graph.cpp"; do
        compile c++ "$f" "$WORK/obj/$(basename "$f" .cpp).o"
    done
    for f in "$ROOT"/kernels/cuda/*.c; do   # plain C of the engine (the support table)
        compile c "$f" "$WORK/obj/cuda_$(basename "$f" .c).o"
    done
    mkdir -p "$WORK/test"
    out="$WORK/test/$name.cpp"
    python3 "$HERE/rewrite_launches.py" "$TEST_SRC" >"$out.tmp" && mv "$out.tmp" "$out"
    g++ "${CXXFLAGS[@]}" -c "$out" -o "$WORK/test/$name.o" &
    pids+=($!)
    failed=0
    for p in "${pids[@]}"; do wait "$p" || failed=1; done
    [ "$failed" = 0 ] || { echo "emulated test build failed" >&2; exit 2; }
    g++ "${SAN[@]}" "$WORK/test/$name.o" "$WORK/obj/emu_runtime.o" "$WORK/obj/emu_libs.o" \
        "$WORK/obj/emu_graph.o" "$WORK"/obj/cuda_*.o -o "$WORK/test/$name" -lm -lpthread
    flock -u 9
    ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" exec "$WORK/test/$name"
fi
# the engine's headers that launch kernels too (bn_kernels_cuda.h): a .cu file's quoted
# includes are found first beside its rewritten copy in $WORK/src, the others in kernels/cuda
for f in $(grep -l '<<<' "$ROOT"/kernels/cuda/*.h); do
    out="$WORK/src/$(basename "$f")"
    if [ ! -f "$out" ] || [ "$f" -nt "$out" ] || [ "$HERE/rewrite_launches.py" -nt "$out" ]; then
        python3 "$HERE/rewrite_launches.py" "$f" >"$out.tmp" && mv "$out.tmp" "$out"
    fi
done
for f in "$ROOT"/kernels/cuda/*.cu; do
    out="$WORK/src/$(basename "$f" .cu).cpp"
    if stale "$f" "$out" || stale "$HERE/rewrite_launches.py" "$out"; then
        python3 "$HERE/rewrite_launches.py" "$f" >"$out.tmp" && mv "$out.tmp" "$out"
    fi
    compile c++ "$out" "$WORK/obj/$(basename "$f" .cu).o"
done
for f in "$HERE/emu_runtime.cpp" "$HERE/emu_libs.cpp" "$HERE/emu_graph.cpp"; do
    compile c++ "$f" "$WORK/obj/$(basename "$f" .cpp).o"
done
for f in "$ROOT"/kernels/cuda/*.c; do
    compile c "$f" "$WORK/obj/cuda_$(basename "$f" .c).o"
done
for f in "$ROOT"/runner/*/*.c; do
    compile c "$f" "$WORK/obj/runner_$(basename "$f" .c).o"
done
failed=0
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" = 0 ] || { echo "emulated build failed" >&2; exit 2; }
# (an object may also have been rebuilt by a --test run, which links no dawnrun)
if [ ! -x "$WORK/dawnrun" ] || [ "${#pids[@]}" -gt 0 ] || [ "$CORE" -nt "$WORK/dawnrun" ] ||
   [ -n "$(find "$WORK/obj" -name '*.o' -newer "$WORK/dawnrun" | head -1)" ]; then
    rm -f "$WORK"/obj/main.o "$WORK"/obj/cli.o "$WORK"/obj/cmd_selfcheck.o   # older layout
    g++ "${SAN[@]}" -fopenmp "$WORK"/obj/*.o "$CORE" -o "$WORK/dawnrun" -ldnnl -lconfig \
        -lsqlite3 -lm -lpthread
fi
touch "$WORK/.built"
flock -u 9
if [ "$BUILD_ONLY" = 1 ]; then
    echo "$WORK/dawnrun"
    exit 0
fi
echo "built $WORK/dawnrun; running its selfcheck" >&2
# no build budget for the fused graphs unless one is asked for: their trial runs compute on
# the CPU here, far slower than on the GPU the engine's default budget is sized for
export DAWNRUN_CUDA_FUSED_BUILD_S="${DAWNRUN_CUDA_FUSED_BUILD_S:-1000000}"
ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" exec "$WORK/dawnrun" selfcheck "$@"
