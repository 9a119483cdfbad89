#!/usr/bin/env bash
# Counts the CUDA engine's work per training step and per evaluation batch for the shipped
# configs at a real batch size, on a machine without a GPU, and projects a time from the
# counts. The counts come from `dawnrun bench --engine cuda` built against the host
# emulation (tests/cuda_emu/run.sh) in its count-only mode (DAWNRUN_EMU_COUNT_ONLY=1: no
# kernel, convolution or matrix product is computed, so a batch-512 step takes a second);
# the engine counts in its own code, so the counts are those a GPU run prints. The FLOPs
# come from the engine as well, from `dawnrun validate` with the same settings: "train
# FLOPs/image" (graph_train_flops, engine/core/graph.h: every layer, the convolutions and linear
# layers being nearly all of it) and "forward FLOPs/image" (convolutions and linear layers),
# with the run's steps, epochs, test images and test-time views, and a step's "optimiser
# FLOPs/step" where validate prints one (Muon's Newton-Schulz products).
#
# The projection is a model, not a measurement:
#   step ms = (own-kernel bytes + 2 x device-to-device copy bytes) / BANDWIDTH, both
#             whether launched from the host or replayed by a graph launch
#           + FLOPs / CONV_RATE
#           + (host kernel launches + cuDNN calls + cuBLAS calls + copies + memsets made
#              from the host) x LAUNCH_US
#           + graph launches x GRAPH_US
# summed as if nothing overlapped; an evaluation batch likewise, with FLOPs = forward FLOPs
# x images x test-time views. A run is the config's steps (at BATCH) plus one evaluation of
# the test set per epoch (its bytes and FLOPs pro rata to the images, its calls per batch).
# Not modelled: start-up, per-epoch host work, the GPU's gap between kernels, transfers
# over PCIe (a step's are a few kB).
#
#   bench/count-structure.sh [options] [CONFIG...]
#     --build DIR          CMake build directory (default build; configured and its core
#                          library built when missing)
#     --batch N            training (and, where the config leaves it 0, eval) batch (512)
#     --precision P        fp16, bf16 or fp32 (fp16)
#     --steps N            counted steps, after the warm-up (10: a multiple of every
#                          averaging period of the shipped configs)
#     --warmup N           warm-up steps (2)
#     --bandwidth TBS      device memory traffic, TB/s read+written (4.3)
#     --conv-tflops R      convolution and matrix-product rate, TFLOP/s (400)
#     --launch-us U        host cost of one launch or library call, microseconds (3)
#     --graph-us G         host cost of one graph launch, microseconds (5)
#   CONFIG default: configs/resnet9-24ep.cfg configs/page-post3/30ep-cutout.cfg
#                   configs/airbench94.cfg
# Prints a Markdown table of the counts and one of the projection. Needs what
# tests/cuda_emu/run.sh needs (g++, python3, the CUDA headers).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build"
BATCH=512
PRECISION=fp16
STEPS=10
WARMUP=2
BANDWIDTH=4.3
CONV_TFLOPS=400
LAUNCH_US=3
GRAPH_US=5
usage() { sed -n '/^#   bench\/count-structure.sh/,/^# Prints/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
CONFIGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --build) BUILD="$2"; shift 2 ;;
        --batch) BATCH="$2"; shift 2 ;;
        --precision) PRECISION="$2"; shift 2 ;;
        --steps) STEPS="$2"; shift 2 ;;
        --warmup) WARMUP="$2"; shift 2 ;;
        --bandwidth) BANDWIDTH="$2"; shift 2 ;;
        --conv-tflops) CONV_TFLOPS="$2"; shift 2 ;;
        --launch-us) LAUNCH_US="$2"; shift 2 ;;
        --graph-us) GRAPH_US="$2"; shift 2 ;;
        -h|--help) usage ;;
        -*) echo "count-structure.sh: unknown option $1" >&2; usage ;;
        *) CONFIGS+=("$1"); shift ;;
    esac
done
[ ${#CONFIGS[@]} -gt 0 ] || CONFIGS=("$ROOT/configs/resnet9-24ep.cfg"
                                      "$ROOT/configs/page-post3/30ep-cutout.cfg"
                                      "$ROOT/configs/airbench94.cfg")
for v in "$BATCH" "$STEPS" "$WARMUP"; do
    [[ "$v" =~ ^[0-9]+$ ]] || { echo "count-structure.sh: '$v' is not a whole number" >&2; exit 2; }
done
for v in "$BANDWIDTH" "$CONV_TFLOPS" "$LAUNCH_US" "$GRAPH_US"; do
    [[ "$v" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "count-structure.sh: '$v' is not a number" >&2; exit 2; }
done

for k in "${!CONFIGS[@]}"; do   # relative to the caller's directory, before the cd
    [ -f "${CONFIGS[$k]}" ] || { echo "count-structure.sh: ${CONFIGS[$k]}: no such file" >&2; exit 2; }
    CONFIGS[k]="$(cd "$(dirname "${CONFIGS[$k]}")" && pwd)/$(basename "${CONFIGS[$k]}")"
done
case "$BUILD" in /*) ;; *) BUILD="$PWD/$BUILD" ;; esac
cd "$ROOT"
if [ ! -f "$BUILD/CMakeCache.txt" ]; then
    cmake -S "$ROOT" -B "$BUILD" >&2
fi
cmake --build "$BUILD" --target dawnrun_core -j "$(nproc)" >&2
DR="$(tests/cuda_emu/run.sh --build "$BUILD")"
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
SETS=(--set "train.batch_size=$BATCH" --set "train.precision=\"$PRECISION\"")
i=0
for cfg in "${CONFIGS[@]}"; do
    i=$((i + 1))
    echo "counting ${cfg#"$ROOT"/} (batch $BATCH, $PRECISION)" >&2
    "$DR" validate "$cfg" "${SETS[@]}" >"$DIR/$i.validate" 2>"$DIR/$i.validate.err" ||
        { cat "$DIR/$i.validate.err" >&2; echo "count-structure.sh: validate $cfg failed" >&2; exit 1; }
    DAWNRUN_EMU_COUNT_ONLY=1 "$DR" bench "$cfg" --engine cuda --steps "$STEPS" --warmup "$WARMUP" \
        "${SETS[@]}" >"$DIR/$i.bench" 2>"$DIR/$i.bench.err" ||
        { cat "$DIR/$i.bench.err" >&2; echo "count-structure.sh: bench $cfg failed" >&2; exit 1; }
    echo "${cfg#"$ROOT"/}" >"$DIR/$i.name"
done

rev="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
git -C "$ROOT" diff --quiet HEAD 2>/dev/null || rev="$rev (with uncommitted changes)"
echo "Counted $(date -u '+%Y-%m-%d %H:%M UTC') at revision $rev on $(uname -n) (host emulation," \
     "count-only mode; the counts do not depend on the machine):"
echo
echo "    bench/count-structure.sh --batch $BATCH --precision $PRECISION --steps $STEPS --warmup $WARMUP" \
     "--bandwidth $BANDWIDTH --conv-tflops $CONV_TFLOPS --launch-us $LAUNCH_US --graph-us $GRAPH_US"
echo
python3 - "$DIR" "$i" "$BATCH" "$PRECISION" "$BANDWIDTH" "$CONV_TFLOPS" "$LAUNCH_US" "$GRAPH_US" <<'EOF'
import math
import re
import sys

folder, n, batch, precision = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
bandwidth = float(sys.argv[5]) * 1e12
conv_rate = float(sys.argv[6]) * 1e12
launch_s, graph_s = float(sys.argv[7]) * 1e-6, float(sys.argv[8]) * 1e-6
UNITS = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
NUM = r"([0-9.]+(?:e[+-]?[0-9]+)?)"
SIZE = r"([0-9.]+ [kMGT]?B)"
COUNTS = re.compile(
    r"^per (training step|eval batch): " + NUM + r" kernel launches, " + NUM +
    r" graph launches, " + NUM + r" cuDNN calls, " + NUM + r" cuBLAS calls, own kernels " +
    SIZE + r" read\+written, " + NUM + r" H2D copies \(" + SIZE + r"\), " + NUM + r" D2H \(" +
    SIZE + r"\), " + NUM + r" D2D \(" + SIZE + r"\), " + NUM + r" memsets, " + NUM +
    r" synchronisations, " + NUM + r" allocations, " + NUM + r" frees" +
    r"(?:; replayed by the graph launches: " + NUM + r" graph kernels \(" + SIZE +
    r" read\+written\), " + NUM + r" graph cuDNN calls, " + NUM + r" graph cuBLAS calls, " +
    NUM + r" graph memsets, " + NUM + r" graph D2D \(" + SIZE + r"\); " + NUM +
    r" graph captures)?$", re.M)
FIELDS = ["launches", "graphs", "cudnn", "cublas", "rw", "h2d", "h2d_b", "d2h", "d2h_b", "d2d",
          "d2d_b", "memsets", "syncs", "allocs", "frees", "g_kernels", "g_rw", "g_cudnn",
          "g_cublas", "g_memsets", "g_d2d", "g_d2d_b", "g_captures"]
SIZES = ("rw", "h2d_b", "d2h_b", "d2d_b", "g_rw", "g_d2d_b")


def size(text):
    value, unit = text.split()
    return float(value) * UNITS[unit]


def must(pattern, text, what):
    m = re.search(pattern, text, re.M)
    if not m:
        sys.exit("count-structure.sh: no %s in the output of dawnrun" % what)
    return m


def fmt_bytes(b):
    for unit in ("TB", "GB", "MB", "kB"):
        if b >= UNITS[unit]:
            return "%.2f %s" % (b / UNITS[unit], unit)
    return "%.0f B" % b


def g(x):
    return "%.4g" % x


def seconds(c, flops):
    """(memory, compute, host) seconds of one step or batch with counts c."""
    memory = (c["rw"] + c["g_rw"] + 2 * (c["d2d_b"] + c["g_d2d_b"])) / bandwidth
    host = (c["launches"] + c["cudnn"] + c["cublas"] + c["h2d"] + c["d2h"] + c["d2d"] +
            c["memsets"]) * launch_s + c["graphs"] * graph_s
    return memory, flops / conv_rate, host


rows = []
for i in range(1, n + 1):
    name = open("%s/%d.name" % (folder, i)).read().strip()
    bench = open("%s/%d.bench" % (folder, i)).read()
    validate = open("%s/%d.validate" % (folder, i)).read()
    counts = {}
    for m in COUNTS.finditer(bench):
        c = dict(zip(FIELDS, m.groups()[1:]))
        for k in c:
            if c[k] is None:   # an older bench, or no graph: nothing replayed
                c[k] = 0.0
            else:
                c[k] = size(c[k]) if k in SIZES else float(c[k])
        counts[m.group(1)] = c
    if set(counts) != {"training step", "eval batch"}:
        sys.exit("count-structure.sh: %s: bench printed no counts (not the CUDA engine?)" % name)
    train_gflop = float(must(r"^train FLOPs/image +([0-9.]+) GFLOP", validate,
                             "train FLOPs in validate").group(1))
    eval_gflop = float(must(r"^forward FLOPs/image +([0-9.]+) GFLOP", validate,
                            "forward FLOPs in validate").group(1))
    m = re.search(r"^optimiser FLOPs/step +([0-9.]+) GFLOP", validate, re.M)
    opt_gflop = float(m.group(1)) if m else 0.0   # Muon's Newton-Schulz products
    eb = int(must(r"^eval: .* per ([0-9]+) images", bench, "eval line").group(1))
    m = must(r"^run +([0-9]+) steps x ([0-9]+) images: .*\(([0-9]+) test images x ([0-9]+) epochs",
             validate, "run line in validate")
    steps, vbatch, test, epochs = (int(x) for x in m.groups())
    if vbatch != batch:
        sys.exit("count-structure.sh: %s: validate planned batch %d, not %d" % (name, vbatch, batch))
    m = re.search(r"x ([0-9]+) test-time views", validate)
    views = int(m.group(1)) if m else 1
    for what, c in counts.items():
        if c["graphs"] and not c["rw"] and not c["g_rw"]:
            print("count-structure.sh: %s: %s: graph launches but no own-kernel bytes: does the "
                  "engine count the kernels of a replayed graph? Its memory time is missing" %
                  (name, what), file=sys.stderr)
    rows.append(dict(name=name, counts=counts, train_flops=train_gflop * 1e9 * batch + opt_gflop * 1e9,
                     eval_flops=eval_gflop * 1e9 * eb * views, eb=eb, steps=steps,
                     test=test, epochs=epochs, views=views))

print("| config | per | host launches | graph launches (kernels in them) | cuDNN calls | "
      "cuBLAS calls | own kernels read+written | H2D | D2H | D2D | memsets | syncs | "
      "allocations |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    for what, label in (("training step", "%s, batch %d" % (precision, batch)),
                        ("eval batch", "%d images x %d view%s" % (r["eb"], r["views"],
                                                                  "s" if r["views"] > 1 else ""))):
        c = r["counts"][what]
        copies = lambda k: g(c[k]) if not c[k] else "%s (%s)" % (g(c[k]), fmt_bytes(c[k + "_b"]))
        # host calls, plus those a graph launch replays (the device's work is the sum)
        both = lambda k: g(c[k] + c["g_" + k])
        n_d2d, b_d2d = c["d2d"] + c["g_d2d"], c["d2d_b"] + c["g_d2d_b"]
        d2d = lambda: g(n_d2d) if not n_d2d else "%s (%s)" % (g(n_d2d), fmt_bytes(b_d2d))
        print("| %s | %s, %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"] if what == "training step" else "", what, label, g(c["launches"]),
            "%s (%s)" % (g(c["graphs"]), g(c["g_kernels"])) if c["graphs"] else "0",
            both("cudnn"), both("cublas"), fmt_bytes(c["rw"] + c["g_rw"]), copies("h2d"),
            copies("d2h"), d2d(), both("memsets"), g(c["syncs"]), g(c["allocs"])))
print()
print("Projection (not a measurement): memory traffic at %g TB/s, convolutions and matrix "
      "products at %g TFLOP/s, %g us per host launch or library call, %g us per graph "
      "launch, summed without overlap." % (bandwidth / 1e12, conv_rate / 1e12,
                                           launch_s * 1e6, graph_s * 1e6))
print()
print("| config | per | GFLOP | memory ms | compute ms | host ms | projected ms | per run |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for r in rows:
    tm, tc, th = seconds(r["counts"]["training step"], r["train_flops"])
    em, ec, eh = seconds(r["counts"]["eval batch"], r["eval_flops"])
    full_batches = r["epochs"] * r["test"] / r["eb"]        # bytes and FLOPs: pro rata
    batches = r["epochs"] * math.ceil(r["test"] / r["eb"])  # calls: every batch
    train_run = r["steps"] * (tm + tc + th)
    eval_run = full_batches * (em + ec) + batches * eh
    print("| %s | training step | %.1f | %.3f | %.3f | %.3f | %.3f | %d steps: %.2f s |" % (
        r["name"], r["train_flops"] / 1e9, tm * 1e3, tc * 1e3, th * 1e3, (tm + tc + th) * 1e3,
        r["steps"], train_run))
    print("| | eval batch | %.1f | %.3f | %.3f | %.3f | %.3f | %d batches: %.2f s |" % (
        r["eval_flops"] / 1e9, em * 1e3, ec * 1e3, eh * 1e3, (em + ec + eh) * 1e3, batches,
        eval_run))
    print("| | run | | | | | | **%.2f s** |" % (train_run + eval_run))
EOF
