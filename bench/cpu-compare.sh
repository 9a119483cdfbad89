#!/bin/sh
# Times a CPU training step of ResNet-9 and DAWN_net, dawnrun against PyTorch, taking
# turns (dawnrun, PyTorch, dawnrun, ...) so that both see the same machine state.
# usage: bench/cpu-compare.sh [BUILD_DIR] [ROUNDS] [BATCH]
# Needs python3 with torch (Debian: apt-get install python3-torch).
set -eu
build=${1:-build}
rounds=${2:-3}
batch=${3:-128}
py=${PYTHON:-python3}
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
for net in resnet9 dawn_net; do
    case $net in
        resnet9) cfg=configs/resnet9-24ep.cfg ;;
        dawn_net) cfg=configs/page-post3/30ep-cutout.cfg ;;
    esac
    r=1
    while [ "$r" -le "$rounds" ]; do
        d=$("$build/dawnrun" bench "$cfg" --engine cpu --threads 2 --batch "$batch" --steps 5 2>&1 |
            sed -n 's/^train: .*, \([0-9.]*\) images\/s.*/\1/p')
        p=$("$py" bench/pytorch_cpu_reference.py --net "$net" --batch "$batch" --threads 2 --steps 5 |
            sed -n 's/.* \([0-9.]*\) images\/s$/\1/p')
        echo "$net batch $batch round $r: dawnrun $d images/s, pytorch $p images/s"
        r=$((r + 1))
    done
done
