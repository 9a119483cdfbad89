#!/usr/bin/env bash
# Prepares, on a build machine (Debian 12 amd64 with nvcc and cuDNN), what travels to a
# borrowed GPU machine for the protocol of docs/gpu.md, and prints the exact `carry` lists
# and command lines of its calls.
#
#   scripts/gpu-bundle.sh [--from BUILD_DIR] [--no-debs]
#       builds a Release dawnrun for sm_90 (H100/H200) in build-sm90/ (or takes
#       BUILD_DIR/dawnrun), and gathers into build-bundle/ (git-ignored, under 40 MiB):
#         dawnrun            the binary
#         libs.tar.xz        the shared libraries it needs beyond glibc and CUDA, as ldd
#                            names them (libconfig, SQLite, oneDNN, libOpenCL; libstdc++,
#                            libgcc_s and libgomp apart, used only where the machine lacks
#                            them), xz-packed (oneDNN alone is 40 MB unpacked); call 1
#                            unpacks it with python3's tarfile
#         debs/              the .deb files for building on the device instead
#                            (libconfig, SQLite, oneDNN with ocl-icd-libopencl1, pkgconf),
#                            the fall-back when the binary does not start there; skipped
#                            with --no-debs or when apt-get download fails (offline)
#         MANIFEST           source revision, build, ldd, SHA-256 of every file, sizes
#       cuDNN and cuBLAS are not bundled: the device's own wheels serve at run time.
#   scripts/gpu-bundle.sh --data [SRC_DIR]
#       cuts the CIFAR-10 batches (SRC_DIR, default $DAWNRUN_DATA) into pieces of at most
#       60 MiB: build-data/part-K/{chunk,MANIFEST}, one piece per later call.
# Environment: GPU_BUNDLE (default build-bundle), GPU_DATA_PIECES (default build-data),
# GPU_PIECE_MIB (default 60), GPU_BUNDLE_ARCH (default 90-real).
# Exit status: 0 done, 1 a step failed or the bundle is 40 MiB or more.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
BUNDLE="${GPU_BUNDLE:-$ROOT/build-bundle}"
PIECES="${GPU_DATA_PIECES:-$ROOT/build-data}"
LIMIT_MIB=40
rel() { realpath --relative-to="$ROOT" "$1"; }

# ------------------------------------------------------------------ the data pieces
if [ "${1:-}" = "--data" ]; then
    SRC="${2:-${DAWNRUN_DATA:-}}"
    [ -n "$SRC" ] && [ -f "$SRC/test_batch.bin" ] ||
        { echo "gpu-bundle: --data: no CIFAR-10 batches in '${SRC}'" >&2; exit 1; }
    python3 "$ROOT/scripts/gpu_unpack.py" split "$SRC" "$PIECES" "${GPU_PIECE_MIB:-60}" \
        data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin \
        test_batch.bin
    parts=("$PIECES"/part-*)
    n=${#parts[@]}
    echo
    echo "Calls 2 to $((n + 1)), each started within 30 s of the previous one:"
    for ((k = 1; k <= n; k++)); do
        cmd="scripts/gpu-call.sh piece"
        [ "$k" = "$n" ] && cmd="scripts/gpu-call.sh batch"
        printf '  call %d: carry ["%s"], command "%s"\n' $((k + 1)) "$(rel "$PIECES/part-$k")" "$cmd"
    done
    exit 0
fi

FROM=""
DEBS=1
while [ $# -gt 0 ]; do
    case "$1" in
    --from) FROM="$2"; shift 2 ;;
    --no-debs) DEBS=0; shift ;;
    *) echo "usage: $0 [--from BUILD_DIR] [--no-debs] | --data [SRC_DIR]" >&2; exit 2 ;;
    esac
done

# ------------------------------------------------------------------ the binary
if [ -n "$FROM" ]; then
    BIN="$FROM/dawnrun"
    ARCHS="$(grep -o 'code=\[[a-z_0-9]*\]' "$FROM/CMakeFiles/dawnrun_cuda.dir/flags.make" \
             2>/dev/null | tr -d '[]' | sed 's/code=//' | paste -sd, || true)"
else
    ARCHS="${GPU_BUNDLE_ARCH:-90-real}"
    B="$ROOT/build-sm90"
    cmake -S "$ROOT" -B "$B" -DCMAKE_BUILD_TYPE=Release -DDAWNRUN_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES="$ARCHS" >/dev/null
    cmake --build "$B" --target dawnrun -j "$(nproc)"
    BIN="$B/dawnrun"
fi
[ -x "$BIN" ] || { echo "gpu-bundle: $BIN: not built" >&2; exit 1; }
ldd "$BIN" | grep libcudnn >/dev/null ||
    { echo "gpu-bundle: $BIN is not linked with cuDNN (a build without the CUDA engine?)" >&2; exit 1; }

rm -rf "$BUNDLE"
mkdir -p "$BUNDLE/stage/libs" "$BUNDLE/stage/runtime"
cp "$BIN" "$BUNDLE/dawnrun"
strip --strip-debug "$BUNDLE/dawnrun"

# ------------------------------------------------------------------ its libraries
# ldd lists the whole closure (libOpenCL comes in through oneDNN). glibc and the CUDA
# libraries stay the device's own; the compiler's runtime goes apart.
glibc='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
cuda='^(libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnvrtc|libnvJitLink)\.so'
runtime='^(libstdc\+\+|libgcc_s|libgomp)\.so'
ldd "$BIN" >"$BUNDLE/stage/ldd.txt"
if grep "not found" "$BUNDLE/stage/ldd.txt" >/dev/null; then
    cat "$BUNDLE/stage/ldd.txt" >&2
    echo "gpu-bundle: a library of $BIN is missing here" >&2
    exit 1
fi
while read -r name _ path _; do
    [ -n "${path:-}" ] && [ -f "$path" ] || continue
    if [[ "$name" =~ $glibc ]] || [[ "$name" =~ $cuda ]]; then continue; fi
    if [[ "$name" =~ $runtime ]]; then dir=runtime; else dir=libs; fi
    cp -L "$path" "$BUNDLE/stage/$dir/$name"
done <"$BUNDLE/stage/ldd.txt"
for need in libconfig.so.9 libsqlite3.so.0 libdnnl.so.2 libOpenCL.so.1; do
    [ -f "$BUNDLE/stage/libs/$need" ] ||
        { echo "gpu-bundle: $need not among the binary's libraries" >&2; exit 1; }
done
python3 "$ROOT/scripts/gpu_unpack.py" pack "$BUNDLE/stage" "$BUNDLE/libs.tar.xz" libs runtime

# ------------------------------------------------------------------ the fall-back .debs
if [ "$DEBS" = 1 ]; then
    mkdir -p "$BUNDLE/debs"
    if ! (cd "$BUNDLE/debs" && apt-get download libconfig-dev libconfig9 libsqlite3-dev \
            libsqlite3-0 libdnnl-dev libdnnl2 ocl-icd-libopencl1 pkgconf pkgconf-bin \
            libpkgconf3 >/dev/null 2>&1); then
        echo "gpu-bundle: apt-get download failed: the bundle has no fall-back .debs" >&2
        rm -rf "$BUNDLE/debs"
    fi
fi

# ------------------------------------------------------------------ the manifest
{
    echo "dawnrun GPU bundle"
    echo "source $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
        git -C "$ROOT" diff-index --quiet HEAD -- 2>/dev/null || echo -dirty)"
    echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n), CUDA architectures ${ARCHS:-?}"
    echo "binary $("$BUNDLE/dawnrun" --version 2>&1 | head -1)"
    echo "libraries (libs/):" $(ls "$BUNDLE/stage/libs")
    echo "compiler runtime (runtime/, used where the device lacks it):" $(ls "$BUNDLE/stage/runtime")
    echo "unpacked libraries: $(du -sb "$BUNDLE/stage" | cut -f1) bytes"
    echo "ldd here:"
    sed 's/^/  /' "$BUNDLE/stage/ldd.txt"
    echo "sha256:"
    (cd "$BUNDLE" && find . -path ./stage -prune -o -type f ! -name MANIFEST -print | sort |
        xargs sha256sum | sed 's/^/  /')
} >"$BUNDLE/MANIFEST"
rm -rf "$BUNDLE/stage"

bytes="$(du -sb "$BUNDLE" | cut -f1)"
mib="$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1048576 }')"
echo "bundle size: $bytes bytes" >>"$BUNDLE/MANIFEST"
echo "gpu-bundle: $(rel "$BUNDLE"): $mib MiB ($bytes bytes; limit $LIMIT_MIB MiB):"
(cd "$BUNDLE" && du -ab . | sort -k2 | sed 's/^/  /')
if [ "$bytes" -ge $((LIMIT_MIB << 20)) ]; then
    echo "gpu-bundle: the bundle is over $LIMIT_MIB MiB" >&2
    exit 1
fi
echo
echo "Call 1 (at most 420 s of steps; give it timeout_s 450):"
echo "  carry [\"$(rel "$BUNDLE")\"], command \"scripts/gpu-call.sh 1\""
echo "Then, for the dataset and the batch: scripts/gpu-bundle.sh --data"
