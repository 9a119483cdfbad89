#!/bin/sh
# Times an fp32 CPU training step of ResNet-9 and DAWN_net, dawnrun against a current
# PyTorch in both memory formats (NCHW and channels_last; the faster is the peer), taking
# turns in the same minutes (dawnrun, torch NCHW, torch channels_last, dawnrun, ...) so
# that all three see the same machine state. Prints each round, the medians and the
# ratio dawnrun / peer. The figures belong in docs/benchmarks.md with this header line.
#
# PyTorch comes from a virtual environment: PYTHON=/path/to/python, or --venv DIR (made
# with `python3 -m venv DIR && DIR/bin/pip install torch` when DIR has no python yet);
# the default DIR is bench/.venv (ignored by git). Not a test: nothing else needs PyTorch.
set -eu

usage() {
    cat <<'USAGE'
usage: bench/cpu-compare.sh [options]
  --build DIR      dawnrun's build directory (default build)
  --net LIST       nets, comma-separated: resnet9, dawn_net (default both)
  --batch LIST     batch sizes, comma-separated (default 128,512)
  --rounds N       rounds of turns per net and batch (default 3)
  --steps N        timed steps per program call, after one warm-up step (default 3)
  --threads N      threads of both programs (default 2)
  --isa ISA        cap the instruction set of both programs: avx2 (DNNL_MAX_CPU_ISA=AVX2
                   and DAWNRUN_CPU_ISA=avx2 for dawnrun, DNNL_MAX_CPU_ISA=AVX2 and
                   ATEN_CPU_CAPABILITY=avx2 for PyTorch) or avx512; default: no cap
  --venv DIR       PyTorch's virtual environment (default bench/.venv; made if missing)
  -h, --help       this text
environment: PYTHON=/path/to/python uses that interpreter (with torch) instead of a venv
USAGE
}

build=build nets=resnet9,dawn_net batches=128,512 rounds=3 steps=3 threads=2 isa= venv=
while [ $# -gt 0 ]; do
    case $1 in
        --build) build=$2; shift ;;
        --net) nets=$2; shift ;;
        --batch) batches=$2; shift ;;
        --rounds) rounds=$2; shift ;;
        --steps) steps=$2; shift ;;
        --threads) threads=$2; shift ;;
        --isa) isa=$2; shift ;;
        --venv) venv=$2; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "cpu-compare.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case $isa in
    '') ;;
    avx2) export DNNL_MAX_CPU_ISA=AVX2 DAWNRUN_CPU_ISA=avx2 ATEN_CPU_CAPABILITY=avx2 ;;
    avx512) export DNNL_MAX_CPU_ISA=AVX512_CORE DAWNRUN_CPU_ISA=avx512 ATEN_CPU_CAPABILITY=avx512 ;;
    *) echo "cpu-compare.sh: --isa takes avx2 or avx512, not '$isa'" >&2; exit 2 ;;
esac
here=$(dirname "$0")
if [ -n "${PYTHON:-}" ]; then
    py=$PYTHON
else
    venv=${venv:-$here/.venv}
    if [ ! -x "$venv/bin/python" ]; then
        echo "# making $venv with PyTorch (python3 -m venv, pip install torch)" >&2
        python3 -m venv "$venv"
        "$venv/bin/pip" install --quiet torch
    fi
    py=$venv/bin/python
fi
dr=$build/dawnrun
[ -x "$dr" ] || { echo "cpu-compare.sh: no $dr (build dawnrun first, or --build DIR)" >&2; exit 2; }
export OMP_NUM_THREADS=$threads

flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
        grep -E '^(sse4_2|avx|avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16|amx_tile|amx_bf16)$' |
        tr '\n' ' ' | sed 's/ $//')
model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
torch_v=$("$py" -c 'import torch; print(torch.__version__, torch.backends.cpu.get_cpu_capability())')
echo "# $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) cores, $model; flags: $flags"
echo "# $threads threads; oneDNN ISA cap: ${DNNL_MAX_CPU_ISA:-none}; dawnrun kernels: ${DAWNRUN_CPU_ISA:-by the CPU}; torch $torch_v (ATEN_CPU_CAPABILITY ${ATEN_CPU_CAPABILITY:-unset}); load: $(cut -d' ' -f1-3 /proc/loadavg)"

# median of the numbers on stdin
median() {
    sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cpu-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
summary=$tmp/summary
: >"$summary"
for net in $(echo "$nets" | tr ',' ' '); do
    case $net in
        resnet9) cfg=configs/resnet9-24ep.cfg ;;
        dawn_net) cfg=configs/page-post3/30ep-cutout.cfg ;;
        *) echo "cpu-compare.sh: --net takes resnet9 and dawn_net, not '$net'" >&2; exit 2 ;;
    esac
    for batch in $(echo "$batches" | tr ',' ' '); do
        : >"$tmp/d"; : >"$tmp/n"; : >"$tmp/c"
        r=1
        while [ "$r" -le "$rounds" ]; do
            d=$("$dr" bench "$cfg" --engine cpu --threads "$threads" --batch "$batch" \
                    --steps "$steps" 2>&1 | sed -n 's/^train: .*, \([0-9.]*\) images\/s.*/\1/p')
            n=$("$py" "$here/pytorch_cpu_reference.py" --net "$net" --batch "$batch" \
                    --threads "$threads" --steps "$steps" --memory-format nchw |
                sed -n 's/.* \([0-9.]*\) images\/s$/\1/p')
            c=$("$py" "$here/pytorch_cpu_reference.py" --net "$net" --batch "$batch" \
                    --threads "$threads" --steps "$steps" --memory-format channels_last |
                sed -n 's/.* \([0-9.]*\) images\/s$/\1/p')
            echo "$net batch $batch round $r: dawnrun ${d:-?}, torch nchw ${n:-?}, torch channels_last ${c:-?} images/s"
            [ -n "$d" ] && echo "$d" >>"$tmp/d"
            [ -n "$n" ] && echo "$n" >>"$tmp/n"
            [ -n "$c" ] && echo "$c" >>"$tmp/c"
            r=$((r + 1))
        done
        md=$(median <"$tmp/d"); mn=$(median <"$tmp/n"); mc=$(median <"$tmp/c")
        echo "$net $batch $md $mn $mc" | awk '{
            peer = $4 > $5 ? $4 : $5; name = $4 > $5 ? "nchw" : "channels_last";
            ratio = peer > 0 ? sprintf("%.2f", $3 / peer) : "-";
            printf "| %s | %s | %s | %s | %s | %s (%s) |\n", $1, $2, $3, $4, $5, ratio, name }' >>"$summary"
    done
done
echo
echo "medians over $rounds rounds, images/s (ratio: dawnrun / the faster PyTorch format)"
echo "| net | batch | dawnrun | torch NCHW | torch channels_last | ratio (peer) |"
echo "|---|---|---|---|---|---|"
cat "$summary"
