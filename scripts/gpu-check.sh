#!/usr/bin/env bash
# The GPU check in one command, for a machine with an NVIDIA GPU (offline is fine): records
# the machine (nvidia-smi, driver, CUDA, cuDNN, PyTorch), builds dawnrun with the CUDA
# engine, runs `dawnrun selfcheck`, benchmarks DAWN_net (page-post3/30ep-cutout) and
# ResNet-9 (resnet9-24ep) and the speed recipes (page-final-10ep, airbench94) in fp16,
# runs the speed recipes for a few seeds, times one full fp16 training run of 30ep-cutout, runs
# bench/pytorch_reference.py for a side-by-side, then benches again with cuDNN's timed
# algorithm choice, bf16 and fp32. Most important first: a run cut short by a time limit
# still leaves the earlier logs. See docs/gpu.md.
#
#   scripts/gpu-check.sh                run on the GPU machine, from anywhere in the repo
#   scripts/gpu-check.sh --fetch-debs   run where apt works (Debian/Ubuntu amd64): downloads
#                                       the libconfig, SQLite, oneDNN and pkgconf .debs (9 MB)
#                                       into .deps/debs (git-ignored), for a GPU machine that
#                                       lacks them: carry .deps/debs there, and this script
#                                       unpacks them into .deps/prefix with dpkg -x
#
# Environment:
#   OUT                 folder for the logs (default gpu-check-out/); at most 8 files are
#                       written, so that all of them come back from a lent machine
#   DAWNRUN_DATA        CIFAR-10 binary batches; without them the full run and the PyTorch
#                       reference train on synthetic data of the same size (time only)
#   CUDNN_ROOT          cuDNN prefix (include/, lib/); default: the toolkit's, else the
#                       nvidia-cudnn Python wheel's
#   DAWNRUN_GPU_BUILD   build folder (default build-gpu); GPU_CHECK_ARCH CUDA architectures
#                       (default 90-real: the H100/H200 only, the quickest build)
#   GPU_CHECK_QUICK=1   selfcheck and benches only
# Exit status: 0 when the build and the selfcheck passed, 1 otherwise.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
PREFIX="$ROOT/.deps/prefix"

# ------------------------------------------------------------------ --fetch-debs
if [ "${1:-}" = "--fetch-debs" ]; then
    set -e
    pkgs=(libconfig-dev libconfig9 libsqlite3-dev libsqlite3-0 libdnnl-dev libdnnl2 pkgconf
          pkgconf-bin libpkgconf3)
    mkdir -p .deps/debs
    (cd .deps/debs && apt-get download "${pkgs[@]}")
    echo "downloaded into .deps/debs ($(du -sh .deps/debs | cut -f1)); carry .deps/debs"
    exit 0
fi

OUT="${OUT:-$ROOT/gpu-check-out}"
mkdir -p "$OUT"
BUILD="${DAWNRUN_GPU_BUILD:-$ROOT/build-gpu}"
ARCH="${GPU_CHECK_ARCH:-90-real}"
JOBS="$(nproc 2>/dev/null || echo 4)"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
exec > >(tee "$OUT/gpu-check.log") 2>&1

note() { echo "$*" | tee -a "$SUMMARY"; }
section() { printf '\n==== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }

# ------------------------------------------------------------------ the machine
section "machine"
{
    date -u
    uname -a
    nvidia-smi || echo "nvidia-smi failed"
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv
    command -v nvcc && nvcc --version
    cmake --version | head -1
    gcc --version | head -1
    python3 - <<'EOF'
try:
    import torch
    print("torch", torch.__version__, "cuda", torch.version.cuda,
          "cudnn", torch.backends.cudnn.version(),
          "device", torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none")
except Exception as e:  # the check goes on without PyTorch
    print("torch unavailable:", e)
EOF
} 2>&1 | tee "$OUT/env.txt"

# ------------------------------------------------------------------ libraries
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"
if [ -z "${CUDNN_ROOT:-}" ] && [ ! -f "$CUDA_HOME/include/cudnn.h" ]; then
    CUDNN_ROOT="$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' \
                  2>/dev/null || true)"
fi
if [ -n "${CUDNN_ROOT:-}" ]; then
    export CUDNN_ROOT
    export LD_LIBRARY_PATH="$CUDNN_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
CUDNN_H="${CUDNN_ROOT:-$CUDA_HOME}/include/cudnn_version.h"
if [ -f "$CUDNN_H" ]; then
    v="$(grep -E '#define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ' "$CUDNN_H" | awk '{print $3}' |
         paste -sd.)"
    note "cuDNN headers: $v in ${CUDNN_ROOT:-$CUDA_HOME}"
fi
CMAKE_EXTRA=()
if [ ! -f "$CUDA_HOME/include/cublas_v2.h" ]; then
    CUBLAS_ROOT="$(python3 -c 'import nvidia.cublas as m; print(list(m.__path__)[0])' \
                   2>/dev/null || true)"
    if [ -n "$CUBLAS_ROOT" ]; then
        note "cuBLAS from the Python wheel: $CUBLAS_ROOT"
        libs=("$CUBLAS_ROOT"/lib/libcublas.so*)
        CMAKE_EXTRA+=("-DCUDA_cublas_LIBRARY=${libs[0]}"
                      "-DCMAKE_CUDA_FLAGS=-I$CUBLAS_ROOT/include")
        export LD_LIBRARY_PATH="$CUBLAS_ROOT/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    fi
fi
if [ ! -d "$PREFIX/usr" ] && compgen -G ".deps/debs/*.deb" >/dev/null; then
    for f in .deps/debs/*.deb; do dpkg -x "$f" "$PREFIX"; done
fi
if [ -d "$PREFIX/usr" ]; then
    note "dependencies from $PREFIX"
    MULTI="$PREFIX/usr/lib/x86_64-linux-gnu"
    for pc in "$MULTI"/pkgconfig/*.pc; do sed -i "s|^prefix=.*|prefix=$PREFIX/usr|" "$pc"; done
    export CMAKE_PREFIX_PATH="$PREFIX/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export PKG_CONFIG_PATH="$MULTI/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export LD_LIBRARY_PATH="$MULTI${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    if ! command -v pkg-config >/dev/null; then
        CMAKE_EXTRA+=("-DPKG_CONFIG_EXECUTABLE=$PREFIX/usr/bin/pkgconf")
    fi
fi

# ------------------------------------------------------------------ build
section "build ($BUILD, CUDA architectures $ARCH)"
if ! { cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DDAWNRUN_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCH" ${CUDNN_ROOT:+-DCUDNN_ROOT="$CUDNN_ROOT"} \
        "${CMAKE_EXTRA[@]}" && cmake --build "$BUILD" -j "$JOBS"; } >"$OUT/build.log" 2>&1; then
    tail -40 "$OUT/build.log"
    note "BUILD FAILED (see build.log)"
    exit 1
fi
note "build: ok"
DR="$BUILD/dawnrun"

# ------------------------------------------------------------------ selfcheck
section "selfcheck"
timeout 600 "$DR" selfcheck --engine cuda 2>&1 | tee "$OUT/selfcheck.log"
SC=${PIPESTATUS[0]}
note "selfcheck: exit $SC ($(tail -1 "$OUT/selfcheck.log"))"
grep -E "FAIL|ERROR" "$OUT/selfcheck.log" | head -20 | tee -a "$SUMMARY"

# ------------------------------------------------------------------ benches
section "benches: fp16"
bench() {   # config precision [VAR=value...]: one `dawnrun bench`, appended to bench.log
    local cfg="$1" prec="$2"
    shift 2
    echo "---- bench $cfg $prec $*"
    env "$@" timeout 120 "$DR" bench "$cfg" --engine cuda --set "train.precision=\"$prec\"" 2>&1
    echo "---- exit $?"
}
: >"$OUT/bench.log"
for cfg in configs/page-post3/30ep-cutout.cfg configs/resnet9-24ep.cfg \
           configs/page-final-10ep.cfg configs/airbench94.cfg; do
    bench "$cfg" fp16 | tee -a "$OUT/bench.log"
done
grep -E "^---- bench|ms/step|projected" "$OUT/bench.log" | tee -a "$SUMMARY"

if [ "${GPU_CHECK_QUICK:-0}" = "1" ]; then
    section "done (quick)"
    cat "$SUMMARY"
    exit $((SC != 0))
fi

# ------------------------------------------------------------------ data for the runs
section "data"
DATA="${DAWNRUN_DATA:-}"
KIND="CIFAR-10"
if [ -z "$DATA" ] || [ ! -f "$DATA/test_batch.bin" ]; then
    DATA="/tmp/dawnrun-synthetic-cifar"
    KIND="synthetic data (time only, accuracy meaningless)"
    python3 - "$DATA" <<'EOF'
import os, sys
import numpy as np
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
rng = np.random.default_rng(0)
for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
    rec = rng.integers(0, 256, size=(10000, 3073), dtype=np.uint8)
    rec[:, 0] = np.arange(10000) % 10
    rec.tofile(os.path.join(d, name))
EOF
fi
note "full run data: $KIND ($DATA)"
: >"$OUT/run.log"

# ------------------------------------------------------------------ the speed recipes
section "speed recipes: airbench94 (5 seeds) and page-final-10ep (3 seeds), fp16"
for spec in "configs/airbench94.cfg 5" "configs/page-final-10ep.cfg 3"; do
    set -- $spec
    DAWNRUN_DATA="$DATA" timeout 150 "$DR" run "$1" --engine cuda --seeds "$2" \
        --db /tmp/dawnrun-recipes.db --set 'train.precision="fp16"' 2>&1 | tee -a "$OUT/run.log"
    note "recipe $1: exit ${PIPESTATUS[0]}"
done
grep -E "runs reach" "$OUT/run.log" | tee -a "$SUMMARY"

# ------------------------------------------------------------------ a full run
section "full run: 30ep-cutout, fp16, seed 0"
DAWNRUN_DATA="$DATA" timeout 300 "$DR" train configs/page-post3/30ep-cutout.cfg --engine cuda \
    --seed 0 --set 'train.precision="fp16"' 2>&1 | tee -a "$OUT/run.log"
note "full run: exit ${PIPESTATUS[0]}"
tail -3 "$OUT/run.log" | tee -a "$SUMMARY"

# ------------------------------------------------------------------ PyTorch reference
section "PyTorch reference"
EPOCHS_ARGS=()
[ "$KIND" = "CIFAR-10" ] || EPOCHS_ARGS=(--epochs 4)
{
    for net in dawn resnet9; do
        PYTHONUNBUFFERED=1 timeout 200 python3 bench/pytorch_reference.py --data "$DATA" \
            --net "$net" "${EPOCHS_ARGS[@]}" 2>&1
        echo "---- exit $?"
    done
} | tee "$OUT/torch.log"
grep -E "^(net|total|epoch +[0-9]+ .*)" "$OUT/torch.log" | tail -12 | tee -a "$SUMMARY"

# ------------------------------------------------------------------ more benches
section "benches: cuDNN algorithms by timing (DAWNRUN_CUDNN_FIND=1), bf16, fp32"
for cfg in configs/page-post3/30ep-cutout.cfg configs/resnet9-24ep.cfg; do
    bench "$cfg" fp16 DAWNRUN_CUDNN_FIND=1 | tee -a "$OUT/bench.log"
    bench "$cfg" bf16 | tee -a "$OUT/bench.log"
    bench "$cfg" fp32 | tee -a "$OUT/bench.log"
done
grep -E "^---- bench .*(FIND|bf16|fp32)" -A40 "$OUT/bench.log" | grep -E "^---- bench|ms/step" |
    tee -a "$SUMMARY"

section "summary"
nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm,power.draw --format=csv 2>&1 |
    tee -a "$SUMMARY"
cat "$SUMMARY"
exit $((SC != 0))
