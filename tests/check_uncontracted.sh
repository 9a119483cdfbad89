#!/usr/bin/env bash
# Checks that the PTX of the CUDA files whose results must equal the CPU twin's to the bit
# (cmake/cuda.cmake: DAWNRUN_CUDA_EXACT_SOURCES) holds no fused multiply-add: nvcc
# contracts a*b+c by default, also in double, unless the file is built with -fmad=false.
#   tests/check_uncontracted.sh FILE.ptx...
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 FILE.ptx..." >&2; exit 2; }
bad=0
for f in "$@"; do
    entries="$(grep -c '^\.visible \.entry\|^\.entry\|\.entry ' "$f" || true)"
    if [ "${entries:-0}" -eq 0 ]; then
        echo "$f: no kernel in the PTX (wrong file?)" >&2
        bad=1
        continue
    fi
    fmas="$(grep -c 'fma\.rn' "$f" || true)"
    if [ "${fmas:-0}" -ne 0 ]; then
        echo "$f: $fmas fused multiply-adds (compile it with -fmad=false):" >&2
        grep -m 5 'fma\.rn' "$f" >&2
        bad=1
    else
        echo "$f: $entries kernels, no fused multiply-add"
    fi
done
exit "$bad"
