#!/usr/bin/env bash
# Splits the CUDA engine's own-kernel traffic of one training step by kernel, on a machine
# without a GPU: runs `dawnrun bench --engine cuda` built against the host emulation
# (tests/cuda_emu/run.sh --build) in its count-only mode, one step, graphs off
# (DAWNRUN_CUDA_GRAPH=0, so that every kernel of the step is launched from the host),
# under gdb with hardware watchpoints on the engine's byte counters (kernels/counters.h:
# kernel_bytes_read, kernel_bytes_written). Each time a counter moves, the function that
# moved it (the one holding the CHECK_LAUNCH of kernels/cuda/check_cuda.h) and its first
# caller of the engine are recorded; the training step is the first run of a plan
# (cuda_plan_execute). Prints one row per kernel and caller, largest first, and checks that
# the rows add up to what the bench prints for the step.
#
#   bench/kernel-split.sh [--build DIR] [--batch N] [--precision P] [CONFIG]
#     --build DIR      CMake build directory (default build)
#     --batch N        training batch (512)
#     --precision P    fp16, bf16 or fp32 (fp16)
#   CONFIG default configs/page-post3/30ep-cutout.cfg
# Needs gdb and python3, and what tests/cuda_emu/run.sh needs (nvcc and cuDNN's headers).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD=build
BATCH=512
PRECISION=fp16
CONFIG="$ROOT/configs/page-post3/30ep-cutout.cfg"
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD="$2"; shift 2 ;;
    --batch) BATCH="$2"; shift 2 ;;
    --precision) PRECISION="$2"; shift 2 ;;
    -h | --help) sed -n '2,19p' "$0"; exit 0 ;;
    -*) echo "kernel-split.sh: unknown option $1" >&2; exit 2 ;;
    *) CONFIG="$1"; shift ;;
    esac
done
command -v gdb >/dev/null || { echo "kernel-split.sh: needs gdb (apt-get install gdb)" >&2; exit 2; }
DR="$("$ROOT/tests/cuda_emu/run.sh" --build "$BUILD")"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cat >"$T/split.gdb" <<'EOF'
set pagination off
set confirm off
break cuda_plan_execute
run
set $w = &c->counts.kernel_bytes_written
set $r = &c->counts.kernel_bytes_read
printf "PLAN %lu %lu\n", *$r, *$w
commands 1
silent
printf "PLAN %lu %lu\n", *$r, *$w
continue
end
watch *$r
commands 2
silent
printf "MOVED %lu %lu\n", *$r, *$w
bt 6
continue
end
watch *$w
commands 3
silent
printf "MOVED %lu %lu\n", *$r, *$w
bt 6
continue
end
continue
EOF
export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}" DAWNRUN_EMU_COUNT_ONLY=1 DAWNRUN_CUDA_GRAPH=0
# a software watchpoint (no debug registers) would single-step for hours: 600 s at most
timeout 600 gdb -q -batch -x "$T/split.gdb" --args "$DR" bench "$CONFIG" --engine cuda \
    --batch "$BATCH" --warmup 0 --steps 1 --set "train.precision=\"$PRECISION\"" \
    >"$T/gdb.txt" 2>&1 || true
# the bench's own error (a bad config, no data) comes before its first step
# (gdb names the thread in a process with several: "Thread 1 "dawnrun" hit Breakpoint 1, ...")
grep -qE '^(Thread .* hit )?Breakpoint 1, cuda_plan_execute' "$T/gdb.txt" ||
    { echo "kernel-split.sh: the bench stopped before its first step:" >&2
      grep -v -e '^\[' -e '^Breakpoint 1 at' -e 'libthread_db' -e '^/.*split.gdb:' \
          -e '^No symbol' "$T/gdb.txt" >&2; exit 1; }
grep -q '^Hardware watchpoint 2' "$T/gdb.txt" ||
    { echo "kernel-split.sh: gdb set no hardware watchpoint:" >&2; tail -20 "$T/gdb.txt" >&2; exit 1; }
grep -q '^per training step: ' "$T/gdb.txt" ||
    { echo "kernel-split.sh: the bench printed no counts:" >&2; tail -20 "$T/gdb.txt" >&2; exit 1; }
echo "# $(basename "$CONFIG"), training step, $PRECISION, batch $BATCH (count-only emulation, graphs off)"
python3 - "$T/gdb.txt" <<'PY'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
frame = re.compile(r"#(\d+)\s+(?:0x[0-9a-f]+ in )?([A-Za-z_][A-Za-z0-9_:]*)")
plan, last, rows, order = -1, (0, 0), {}, []
i = 0
while i < len(lines):
    l = lines[i]
    if l.startswith("PLAN "):
        plan += 1
        _, r, w = l.split()
        last = (int(r), int(w))
    elif l.startswith("MOVED ") and plan == 0:
        _, r, w = l.split()
        r, w = int(r), int(w)
        names = []
        j = i + 1
        while j < len(lines) and lines[j].startswith("#"):
            m = frame.match(lines[j])
            if m:
                names.append(m.group(2))
            j += 1
        kernel = names[0] if names else "?"
        base = re.sub(r"_(launch|width)$", "", kernel)
        caller = next((n for n in names[1:] if (n.startswith("cuda_") or n.startswith("run_"))
                       and not n.startswith(base)), "")
        key = (kernel, caller)
        if key not in rows:
            rows[key] = [0, 0, 0]
            order.append(key)
        rows[key][1] += r - last[0]
        rows[key][2] += w - last[1]
        last = (r, w)
    i += 1
total = sum(v[1] + v[2] for v in rows.values())
print("| kernel (caller) | read MB | written MB | read+written MB | share |")
print("| --- | --- | --- | --- | --- |")
for key in sorted(order, key=lambda k: -(rows[k][1] + rows[k][2])):
    v = rows[key]
    if v[1] + v[2] == 0:
        continue
    name = key[0] + (" (" + key[1] + ")" if key[1] else "")
    print("| %s | %.1f | %.1f | %.1f | %.1f %% |" % (name, v[1] / 1e6, v[2] / 1e6,
          (v[1] + v[2]) / 1e6, 100.0 * (v[1] + v[2]) / total if total else 0))
print("| all | | | %.1f | |" % (total / 1e6))
counted = [l for l in lines if l.startswith("per training step: ")][0]
m = re.search(r"own kernels ([0-9.]+) ([kMG]?B) read\+written", counted)
scale = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9}[m.group(2)]
bench = float(m.group(1)) * scale
print("\nthe bench's count for the step: %s %s (rows: %.2f %s)" % (m.group(1), m.group(2),
      total / scale, m.group(2)))
if abs(bench - total) > 0.01 * bench + scale * 0.01:
    print("kernel-split.sh: the rows do not add up to the bench's count", file=sys.stderr)
    sys.exit(1)
PY
