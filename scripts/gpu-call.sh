#!/usr/bin/env bash
# One call of the GPU protocol (docs/gpu.md), run on the borrowed GPU machine from the
# repository root, with the bundle of scripts/gpu-bundle.sh carried along.
#
#   scripts/gpu-call.sh 1      call 1: the machine, the bundle started (or dawnrun built
#                              there from the bundle's .debs), the GPU held initialised
#                              for the whole call, the fp16 selfcheck, dawnrun bench of
#                              ResNet-9 and DAWN_net (fp16, batch 512, 3 warm-up steps:
#                              ms/step and the first-use split), the PyTorch reference,
#                              the fp32 and bf16 selfchecks (one process per precision),
#                              compute-sanitizer memcheck and racecheck on a reduced
#                              selfcheck; a step that times out is run again with fusion
#                              and CUDA graphs off (DAWNRUN_CUDA_FUSE=0,
#                              DAWNRUN_CUDA_GRAPH=0), a selfcheck that fails reruns its
#                              failed cases with CUDA_LAUNCH_BLOCKING=1 and cuDNN's log
#   scripts/gpu-call.sh piece  a later call: keeps the CIFAR-10 piece it carried
#   scripts/gpu-call.sh batch  the last call: keeps its piece, joins and checksums the
#                              dataset, runs a multi-seed batch of the seed table's config
#                              and of airbench94, and writes the report and the curves
#
# Every step runs under its own timeout, so a call ends within its budget of wall time
# (GPU_CALL_BUDGET: 420 s for call 1, 240 s for batch): a step gets the smaller of its
# own limit and what the budget has left (less the 5 s a killed step may take to end),
# and is skipped with less than 5 s for it; time a step did not use is left to the next
# ones. The
# summary, $OUT/summary.txt, is rewritten after every step, so a killed call still leaves
# what it found. $OUT (default gpu-out/) gets at most 8 files, each under 16 MiB.
# State kept between calls on a warm machine: build-state/ (GPU_STATE).
#
# Rehearsal (GPU_REHEARSE=1, tests/gpu_rehearsal.sh): the same steps against the emulated
# CUDA engine (GPU_REHEARSE_DAWNRUN, built by tests/cuda_emu/run.sh --build); what
# needs the GPU (nvidia-smi, compute-sanitizer, PyTorch on CUDA) is marked absent there.
# Other knobs: GPU_STEP_LIMITS ("NAME=SECONDS ...": a step's limit instead of its own, e.g.
# "bench-dawn=8" to rehearse a timeout), GPU_SELFCHECK_ARGS (extra selfcheck flags for every
# precision),
# GPU_SELFCHECK_ARGS_fp16/_fp32/_bf16 (instead, for one), GPU_SANITIZER_ARGS_memcheck,
# GPU_SANITIZER_ARGS_racecheck, GPU_BENCH_ARGS (extra flags of bench), GPU_BATCH_ARGS and
# GPU_BATCH_ARGS_30ep_cutout / _airbench94 (extra flags of run), GPU_BATCH_SEEDS (default 5),
# GPU_BATCH_LIMITS (the two batch steps' limits, default "110 70"), GPU_CALL_BUDGET.
# Exit status: 0 when every step that ran passed, 1 otherwise.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 1
SELF="$ROOT/scripts/gpu-call.sh"
STAGE="${1:-}"
export OUT="${OUT:-$ROOT/gpu-out}"
export GPU_BUNDLE="${GPU_BUNDLE:-$ROOT/build-bundle}"
export GPU_STATE="${GPU_STATE:-$ROOT/build-state}"
export GPU_DATA_PIECES="${GPU_DATA_PIECES:-$ROOT/build-data}"
REHEARSE="${GPU_REHEARSE:-0}"
mkdir -p "$OUT" "$GPU_STATE"
LOG_CAP=$((15 << 20))

# ------------------------------------------------------------------ internal steps
# (run as "$SELF _name" so that `timeout` can bound them)

# The CUDA libraries of the machine: cuDNN and cuBLAS from the Python wheels, else the
# toolkit's; prints the LD_LIBRARY_PATH entries.
cuda_lib_dirs() {
    local dirs=() site d
    site="$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)"
    for d in $site; do
        [ -d "$d/nvidia" ] || continue
        while read -r f; do dirs+=("$(dirname "$f")"); done < <(
            find "$d/nvidia" \( -name 'libcudnn.so.9*' -o -name 'libcublas.so.1*' \
                 -o -name 'libcudart.so.1*' \) 2>/dev/null | sort)
    done
    dirs+=("${CUDA_HOME:-/usr/local/cuda}/lib64")
    printf '%s\n' "${dirs[@]}" | awk '!seen[$0]++' | paste -sd:
}

internal_env() {
    date -u
    uname -a
    echo "mode: $([ "$REHEARSE" = 1 ] && echo "rehearsal (emulated CUDA engine)" || echo GPU)"
    if command -v nvidia-smi >/dev/null; then
        nvidia-smi
        nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit \
            --format=csv
    else
        echo "nvidia-smi: absent"
    fi
    command -v nvcc >/dev/null && nvcc --version | tail -2
    command -v compute-sanitizer >/dev/null && compute-sanitizer --version | head -2
    echo "CUDA library folders: $(cuda_lib_dirs)"
    for d in $(cuda_lib_dirs | tr : ' '); do
        ls "$d" 2>/dev/null | grep -E '^lib(cudnn|cublas|cublasLt|cudart)\.so\.[0-9.]+$' |
            sed "s|^|  $d/|"
    done
    python3 - <<'EOF'
import importlib.metadata as m
for p in ["nvidia-cudnn-cu13", "nvidia-cublas", "nvidia-cublas-cu13", "torch"]:
    try:
        print("wheel", p, m.version(p))
    except Exception:
        pass
EOF
}

# Unpacks the bundle's libraries into GPU_STATE/libs, writes GPU_STATE/env.sh (DR and
# DR_LIBS), and checks that the binary starts.
internal_start() {
    local state="$GPU_STATE" libs
    [ -x "$GPU_BUNDLE/dawnrun" ] || { echo "no bundle at $GPU_BUNDLE"; return 1; }
    rm -rf "$state/libs"
    python3 "$ROOT/scripts/gpu_unpack.py" tar "$GPU_BUNDLE/libs.tar.xz" "$state/libs" || return 1
    libs="$state/libs/libs"
    # the compiler runtime only where the machine has none (a newer one is compatible)
    for f in "$state/libs/runtime"/*; do
        if ! ldconfig -p 2>/dev/null | grep -F "$(basename "$f")" >/dev/null; then
            echo "using the bundle's $(basename "$f")"
            libs="$libs:$state/libs/runtime"
            break
        fi
    done
    libs="$libs:$(cuda_lib_dirs)"
    printf 'DR=%q\nDR_LIBS=%q\nDR_FROM=bundle\n' "$GPU_BUNDLE/dawnrun" "$libs" >"$state/env.sh"
    echo "LD_LIBRARY_PATH for dawnrun: $libs"
    LD_LIBRARY_PATH="$libs" ldd "$GPU_BUNDLE/dawnrun"
    LD_LIBRARY_PATH="$libs" ldd "$GPU_BUNDLE/dawnrun" | grep "not found" >/dev/null && return 1
    LD_LIBRARY_PATH="$libs" "$GPU_BUNDLE/dawnrun" --version
}

# The fall-back: builds dawnrun --target dawnrun here from the bundle's .debs.
internal_build() {
    local P="$GPU_STATE/prefix" B="$GPU_STATE/build" extra=() cudnn cublas M
    compgen -G "$GPU_BUNDLE/debs/*.deb" >/dev/null || { echo "the bundle has no .debs"; return 1; }
    python3 "$ROOT/scripts/gpu_unpack.py" deb "$P" "$GPU_BUNDLE"/debs/*.deb || return 1
    M="$P/usr/lib/x86_64-linux-gnu"
    for pc in "$M"/pkgconfig/*.pc; do sed -i "s|^prefix=.*|prefix=$P/usr|" "$pc"; done
    export CMAKE_PREFIX_PATH="$P/usr" PKG_CONFIG_PATH="$M/pkgconfig"
    command -v pkg-config >/dev/null || extra+=("-DPKG_CONFIG_EXECUTABLE=$P/usr/bin/pkgconf")
    cudnn="$(python3 -c 'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)"
    [ -n "$cudnn" ] && extra+=("-DCUDNN_ROOT=$cudnn")
    if [ ! -f "${CUDA_HOME:-/usr/local/cuda}/include/cublas_v2.h" ]; then
        cublas="$(find / -name cublas_v2.h -path '*nvidia*' 2>/dev/null | head -1)"
        cublas="${cublas%/include/cublas_v2.h}"
        [ -n "$cublas" ] && extra+=("-DCUDA_cublas_LIBRARY=$(ls "$cublas"/lib/libcublas.so* | head -1)"
                                    "-DCMAKE_CUDA_FLAGS=-I$cublas/include")
    fi
    cmake -S "$ROOT" -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDAWNRUN_CUDA=ON \
        -DCMAKE_CUDA_ARCHITECTURES=90-real "${extra[@]}" || return 1
    cmake --build "$B" --target dawnrun -j "$(nproc)" || return 1
    printf 'DR=%q\nDR_LIBS=%q\nDR_FROM=build\n' "$B/dawnrun" "$M:$(cuda_lib_dirs)" >"$GPU_STATE/env.sh"
}

# The PyTorch reference on NET for 2 epochs of synthetic data of CIFAR-10's size (call 1
# has no dataset): the time per epoch only. Exit 77 without PyTorch on CUDA.
internal_torch() {
    local syn="$GPU_STATE/synthetic"
    python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
        { echo "PyTorch with CUDA: absent"; return 77; }
    if [ ! -f "$syn/test_batch.bin" ]; then
        python3 - "$syn" <<'EOF'
import os, sys
d = sys.argv[1]
os.makedirs(d, exist_ok=True)
for name in ["data_batch_%d.bin" % i for i in range(1, 6)] + ["test_batch.bin"]:
    rec = bytearray(os.urandom(10000 * 3073))
    rec[0::3073] = bytes(i % 10 for i in range(10000))
    open(os.path.join(d, name), "wb").write(rec)
EOF
    fi
    PYTHONUNBUFFERED=1 python3 "$ROOT/bench/pytorch_reference.py" --data "$syn" --net "$1" --epochs 2
}

# Holds the GPU initialised for SECONDS (a primary context of device 0 kept by this
# process), so that the driver does not tear the GPU down between the call's processes
# and each dawnrun starts on a ready device. Exit 77 without the CUDA driver.
internal_hold() {
    exec python3 - "$1" <<'PY'
import ctypes, sys, time
try:
    cu = ctypes.CDLL("libcuda.so.1")
except OSError:
    print("no CUDA driver (libcuda.so.1)", flush=True)
    sys.exit(77)
dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
if cu.cuInit(0) or cu.cuDeviceGet(ctypes.byref(dev), 0) or \
        cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev):
    print("the CUDA driver did not initialise device 0", flush=True)
    sys.exit(1)
print("holding device 0 initialised", flush=True)
time.sleep(float(sys.argv[1]))
PY
}

# Keeps the pieces this call carried (GPU_DATA_PIECES/part-K) in GPU_STATE/parts.
internal_keep() {
    local p
    mkdir -p "$GPU_STATE/parts"
    for p in "$GPU_DATA_PIECES"/part-*; do
        [ -f "$p/chunk" ] || continue
        rm -rf "$GPU_STATE/parts/$(basename "$p")"
        cp -r "$p" "$GPU_STATE/parts/" && echo "kept $(basename "$p")"
    done
    ls "$GPU_STATE/parts"
}

case "$STAGE" in
_env) internal_env; exit $? ;;
_start) internal_start; exit $? ;;
_build) internal_build; exit $? ;;
_torch) internal_torch "$2"; exit $? ;;
_keep) internal_keep; exit $? ;;
_hold) internal_hold "$2"; exit $? ;;
1 | piece | batch) ;;
*) echo "usage: $0 1|piece|batch" >&2; exit 2 ;;
esac

# ------------------------------------------------------------------ steps and summary
BUDGET="${GPU_CALL_BUDGET:-$([ "$STAGE" = 1 ] && echo 420 || echo 240)}"
T0=$(date +%s)
SUMMARY="$OUT/summary.txt"
ROWS=()
NOTES=()
FAILED=0
STEP_RC=0
STEP_NOTE=""
REHEARSAL_TEXT=""

write_summary() {
    {
        echo "dawnrun GPU protocol, call '$STAGE', $([ "$REHEARSE" = 1 ] &&
            echo "REHEARSAL against the emulated CUDA engine (no GPU figures)" || echo "on the GPU")"
        echo "machine $(uname -n), started $(date -u -d "@$T0" +%Y-%m-%dT%H:%M:%SZ), elapsed" \
             "$(($(date +%s) - T0)) s"
        echo "budget $BUDGET s of wall time; each step's limit within what was left"
        echo
        printf '%-18s %-9s %6s %7s  %s\n' step status wall_s limit_s note
        printf '%s\n' "${ROWS[@]}"
        if [ ${#NOTES[@]} -gt 0 ]; then
            echo
            echo "findings:"
            printf '  %s\n' "${NOTES[@]}"
        fi
        [ -z "$REHEARSAL_TEXT" ] || printf '\n%s\n' "$REHEARSAL_TEXT"
    } >"$SUMMARY.tmp" && mv "$SUMMARY.tmp" "$SUMMARY"
}
note() { NOTES+=("$*"); write_summary; }

# step_output LOG NAME: what the last run of step NAME appended to LOG (between its
# "==== NAME: COMMAND" and "==== NAME: STATUS after N s" lines, as step writes them)
step_output() {
    awk -v p="==== $2: " 'index($0, p) == 1 { on = $0 !~ / after [0-9]+ s$/; if (on) n = 0; next }
        on { out[n++] = $0 } END { for (i = 0; i < n; i++) print out[i] }' "$1"
}

trim_log() {   # keeps the last 15 MiB of a log
    local f="$1"
    [ -f "$f" ] && [ "$(stat -c %s "$f")" -gt "$LOG_CAP" ] || return 0
    tail -c "$LOG_CAP" "$f" >"$f.tmp" && mv "$f.tmp" "$f"
}

# step NAME LIMIT LOG COMMAND...: runs COMMAND under timeout (LIMIT or what the budget has
# left), appending its output to $OUT/LOG; sets STEP_RC; one summary row with STEP_NOTE.
# Exit 77 means "cannot run here" and is reported as absent, not as a failure.
step() {
    local name="$1" limit="$2" log="$OUT/$3" left t start wall status over
    shift 3
    for over in ${GPU_STEP_LIMITS:-}; do   # NAME=SECONDS overrides
        [ "${over%%=*}" = "$name" ] && limit="${over#*=}"
    done
    left=$((BUDGET - ($(date +%s) - T0) - 5))   # a killed step's 5 s grace kept
    t=$((limit < left ? limit : left))
    if [ "$t" -lt 5 ]; then
        ROWS+=("$(printf '%-18s %-9s %6s %7s  %s' "$name" skipped - - "the call's budget is spent")")
        write_summary
        STEP_RC=125
        return
    fi
    echo "==== $name: $* (limit $t s, $(date -u +%H:%M:%S))" >>"$log"
    start=$(date +%s)
    timeout -k 5 "$t" "$@" >>"$log" 2>&1
    STEP_RC=$?
    wall=$(($(date +%s) - start))
    case "$STEP_RC" in
    0) status=ok ;;
    77) status=absent ;;
    124 | 137) status=timeout; FAILED=1 ;;
    *) status="exit $STEP_RC"; FAILED=1 ;;
    esac
    echo "==== $name: $status after $wall s" >>"$log"
    trim_log "$log"
    ROWS+=("$(printf '%-18s %-9s %6s %7s  %s' "$name" "$status" "$wall" "$t" "$STEP_NOTE")")
    STEP_NOTE=""
    write_summary
}

# The dawnrun to run: the emulated one in a rehearsal, else what call 1 started or built.
load_dawnrun() {
    if [ "$REHEARSE" = 1 ]; then
        DR="${GPU_REHEARSE_DAWNRUN:?GPU_REHEARSE_DAWNRUN: the emulated dawnrun}"
        DR_LIBS="${LD_LIBRARY_PATH:-}"
        export ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"
        return 0
    fi
    [ -f "$GPU_STATE/env.sh" ] || return 1
    # shellcheck disable=SC1091
    . "$GPU_STATE/env.sh"
}
# after load_dawnrun: the command line that runs dawnrun (`timeout` cannot run a function)
dr_cmd() { DRC=(env LD_LIBRARY_PATH="$DR_LIBS" "$DR"); }

# ------------------------------------------------------------------ call 1

# Appends line (if any) to the summary's last row.
row_add() { [ -z "$1" ] || { ROWS[-1]="${ROWS[-1]}$1"; write_summary; }; }

# A step that timed out (STEP_RC 124 or 137).
timed_out() { [ "$STEP_RC" = 124 ] || [ "$STEP_RC" = 137 ]; }

# row_add_precision NAME P: the selfcheck step NAME's "precision P: N checks, M failed" line
# into the summary's last row.
row_add_precision() {
    row_add "$(step_output "$OUT/selfcheck.log" "$1" | grep "== precision $2:" | tail -1 |
               sed 's/^== //')"
}

# note_lines PREFIX: each line of the input as a finding, PREFIX before it. Give it its
# input by redirection (note_lines P < <(...)), not at the end of a pipeline, whose
# subshell would lose the notes.
note_lines() {
    local l
    while read -r l; do note "$1$l"; done
}

# selfcheck_step P LIMIT: the selfcheck of precision P in its own process (a sticky device
# error in one cannot fail the others); timed out, it runs again with fusion and CUDA
# graphs off; failed, its failed cases run again with CUDA_LAUNCH_BLOCKING=1 and cuDNN's
# log, whose FAIL and error lines go into the findings.
selfcheck_step() {
    local p="$1" limit="$2" var="GPU_SELFCHECK_ARGS_$1" args name cases pre=()
    args="${!var:-${GPU_SELFCHECK_ARGS:-}}"
    name="selfcheck-$p"
    # shellcheck disable=SC2086
    step "$name" "$limit" selfcheck.log "${DRC[@]}" selfcheck --engine cuda --precision "$p" $args
    row_add_precision "$name" "$p"
    if timed_out; then
        note "$name timed out: run again with fusion and CUDA graphs off"
        name="selfcheck-$p-unfused"
        pre=(DAWNRUN_CUDA_FUSE=0 DAWNRUN_CUDA_GRAPH=0)
        # shellcheck disable=SC2086
        step "$name" 45 selfcheck.log env "${pre[@]}" LD_LIBRARY_PATH="$DR_LIBS" "$DR" \
            selfcheck --engine cuda --precision "$p" $args
        row_add_precision "$name" "$p"
    fi
    case "$STEP_RC" in 0 | 77 | 125 | 124 | 137) return ;; esac
    # the cases the selfcheck named as failed (none named: it stopped before printing one,
    # the same cases again), in the configuration that failed
    cases="$(step_output "$OUT/selfcheck.log" "$name" | awk '/ FAIL$/ { print $1 }' |
             paste -sd, -)"
    [ -z "$cases" ] || args="--only $cases"
    # shellcheck disable=SC2086
    step "rerun-$p" 45 debug.log env ${pre[@]+"${pre[@]}"} CUDA_LAUNCH_BLOCKING=1 \
        CUDNN_LOGLEVEL_DBG=2 CUDNN_LOGDEST_DBG=stderr LD_LIBRARY_PATH="$DR_LIBS" "$DR" \
        selfcheck --engine cuda --precision "$p" $args
    note_lines "$p: " < <(step_output "$OUT/debug.log" "rerun-$p" |
        grep -E "FAIL|ERROR|works for|illegal|CUDNN_STATUS|rror:" |
        grep -v -e "^====" -e "trying the next" | head -6)
}

# bench_step NAME CONFIG LIMIT: dawnrun bench of CONFIG in fp16 at batch 512; the row gets
# its ms/step and the findings its first-use line (fused graphs built and refused, the
# seconds of graph building, algorithm search and steps). Timed out, the bench prints what
# it had at the signal (its warm-up, the steps done) and runs again with fusion and CUDA
# graphs off.
bench_step() {
    local name="bench-$1" config="$2" limit="$3" pre=() out pass
    for pass in fused unfused; do
        # shellcheck disable=SC2086
        step "$name" "$limit" bench.log ${pre[@]+"${pre[@]}"} "${DRC[@]}" bench "$config" \
            --engine cuda --batch 512 --warmup 3 --steps 20 --set 'train.precision="fp16"' \
            ${GPU_BENCH_ARGS:-}
        out="$(step_output "$OUT/bench.log" "$name")"
        row_add "$(grep -E "^train: .*ms/step" <<<"$out" | tail -1)"
        timed_out && row_add "$(grep -E "^(warm-up|bench stopped)" <<<"$out" | tail -1)"
        note_lines "$name: " < <(grep -E "^first use" <<<"$out" | tail -1)
        timed_out || return 0
        [ "$pass" = fused ] && note "$name timed out: run again with fusion and CUDA graphs off"
        name="bench-$1-unfused"
        limit=30
        pre=(env DAWNRUN_CUDA_FUSE=0 DAWNRUN_CUDA_GRAPH=0)
    done
}

# Holds the GPU initialised until the call ends (a process of its own, not a step; the
# device's own settings, persistence mode among them, are left as they are).
hold_gpu() {
    local waited=0
    "$SELF" _hold "$BUDGET" >"$GPU_STATE/hold.log" 2>&1 &
    HOLDER=$!
    trap 'kill "$HOLDER" 2>/dev/null' EXIT
    # its first line says whether it holds the device (cuInit may take seconds on a cold GPU)
    while [ ! -s "$GPU_STATE/hold.log" ] && [ "$waited" -lt 20 ] && kill -0 "$HOLDER" 2>/dev/null
    do
        sleep 0.5
        waited=$((waited + 1))
    done
    note "GPU held for the call: $(head -1 "$GPU_STATE/hold.log" 2>/dev/null)"
}

if [ "$STAGE" = 1 ]; then
    if [ "$REHEARSE" = 1 ]; then
        REHEARSAL_TEXT="rehearsed: bundle start (its libraries unpacked, ldd, --version), the step
  order, timeouts, budget and this summary, selfcheck per precision in separate processes,
  the rerun of a failed precision, bench with its first-use split, a timed-out step run
  again with fusion and graphs off, the reduced selfcheck of the sanitizer steps.
absent (need the GPU): nvidia-smi, the CUDA device itself (the engine runs emulated, so no
  figure here is a GPU figure), the process holding the GPU initialised, compute-sanitizer
  (the emulated build runs under ASan and UBSan instead), PyTorch on CUDA, the fall-back
  build on the device (not rehearsed)."
        write_summary
    fi
    step env 10 env.txt "$SELF" _env
    step start 15 call.log "$SELF" _start
    if [ "$STEP_RC" != 0 ] && [ "$REHEARSE" != 1 ]; then
        note "the bundle did not start (call.log): building dawnrun here from the bundle's .debs"
        step build 150 call.log "$SELF" _build
    fi
    if ! load_dawnrun; then
        note "no dawnrun to run: see call.log"
        exit 1
    fi
    dr_cmd
    note "dawnrun: $DR ($("${DRC[@]}" --version 2>&1 | head -1))"
    hold_gpu
    # most important first: the fp16 engine, its speed against PyTorch's, then the other
    # precisions and the sanitizers
    selfcheck_step fp16 60
    bench_step resnet9 configs/resnet9-24ep.cfg 45
    bench_step dawn configs/page-post3/30ep-cutout.cfg 45
    for net in resnet9 dawn; do
        step "torch-$net" 30 torch.log "$SELF" _torch "$net"
        [ "$STEP_RC" = 0 ] && row_add "$(grep -E "^total" "$OUT/torch.log" | tail -1)"
    done
    selfcheck_step fp32 45
    selfcheck_step bf16 45
    # the fused cuDNN graphs this GPU refused that the support table had promised
    refused="$(cat "$OUT/selfcheck.log" "$OUT/bench.log" 2>/dev/null |
               grep -c "no fused engine" || true)"
    note "fused cuDNN graphs refused though the support table accepts them: ${refused:-0}"
    note_lines "" < <(cat "$OUT/selfcheck.log" "$OUT/bench.log" 2>/dev/null |
        grep "no fused engine" | sort -u | head -3)
    # the fused graphs' build budget spent: those graphs ran unfused
    note_lines "" < <(cat "$OUT/selfcheck.log" "$OUT/bench.log" 2>/dev/null |
        grep "build budget of the fused" | head -3)
    # CUDA graphs: a plan whose capture failed runs without graphs (one line names its node)
    uncaptured="$(cat "$OUT/selfcheck.log" "$OUT/bench.log" 2>/dev/null |
                  grep -c "cannot be captured" || true)"
    note "plans that could not be captured into CUDA graphs (selfcheck, bench): ${uncaptured:-0}"
    note_lines "" < <(cat "$OUT/selfcheck.log" "$OUT/bench.log" 2>/dev/null |
        grep -m3 "cannot be captured")
    for tool in memcheck racecheck; do
        var="GPU_SANITIZER_ARGS_$tool"
        def="--precision fp16 --only conv,ops,augment"
        [ "$tool" = racecheck ] && def="--precision fp16 --only ops"
        if command -v compute-sanitizer >/dev/null; then
            # shellcheck disable=SC2086
            step "$tool" 40 sanitizer.log env LD_LIBRARY_PATH="$DR_LIBS" compute-sanitizer \
                --tool "$tool" --error-exitcode 9 "$DR" selfcheck --engine cuda ${!var:-$def}
        elif [ "$REHEARSE" = 1 ]; then
            STEP_NOTE="without compute-sanitizer (ASan/UBSan build)"
            # shellcheck disable=SC2086
            step "$tool" 40 sanitizer.log "${DRC[@]}" selfcheck --engine cuda ${!var:-$def}
        else
            STEP_NOTE="compute-sanitizer not found"
            step "$tool" 40 sanitizer.log sh -c 'exit 77'
        fi
    done
    nvidia-smi --query-gpu=name,temperature.gpu,clocks.sm,power.draw --format=csv \
        >>"$OUT/env.txt" 2>&1 || true
    write_summary
    exit "$FAILED"
fi

# ------------------------------------------------------------------ later calls
if [ "$REHEARSE" = 1 ]; then
    REHEARSAL_TEXT="rehearsed: keeping the carried pieces, joining and checksumming them, the
  batch into a results database, its report and curves; the engine runs emulated on a
  small subset (no figure here is a GPU figure)."
fi
step keep-pieces 10 data.log "$SELF" _keep
STEP_NOTE=""
have="$(ls "$GPU_STATE/parts" 2>/dev/null | paste -sd' ')"
of="$(sed -n 's/^pieces //p' "$GPU_STATE"/parts/part-*/MANIFEST 2>/dev/null | head -1)"
ROWS[-1]="${ROWS[-1]}here: ${have:-none} (of ${of:-?})"
write_summary
[ "$STAGE" = piece ] && exit "$FAILED"
DATA="$GPU_STATE/cifar10"
step join 30 data.log python3 "$ROOT/scripts/gpu_unpack.py" join "$GPU_STATE/parts" "$DATA"
if [ "$STEP_RC" != 0 ]; then
    note "the dataset is incomplete or differs (data.log): no batch"
    exit 1
fi
note "CIFAR-10 joined in $DATA, every file's SHA-256 as sent"
if ! load_dawnrun; then
    note "no dawnrun: call 1 has not run on this machine (it was released?); start again"
    exit 1
fi
DB="$GPU_STATE/results.db"
seeds="${GPU_BATCH_SEEDS:-5}"
read -r lim_a lim_b <<<"${GPU_BATCH_LIMITS:-110 70}"
for spec in "30ep-cutout configs/page-post3/30ep-cutout.cfg $lim_a" \
            "airbench94 configs/airbench94.cfg $lim_b"; do
    set -- $spec
    var="GPU_BATCH_ARGS_${1//-/_}"
    # shellcheck disable=SC2086
    step "batch-$1" "$3" batch.log env DAWNRUN_DATA="$DATA" LD_LIBRARY_PATH="$DR_LIBS" \
        "$DR" run "$2" --engine cuda --seeds "$seeds" --db "$DB" \
        --set 'train.precision="fp16"' ${GPU_BATCH_ARGS:-} ${!var:-}
    line="$(grep "runs reach" "$OUT/batch.log" | tail -1)"
    [ -n "$line" ] && ROWS[-1]="${ROWS[-1]}$line" && write_summary
done
step report 10 batch.log env LD_LIBRARY_PATH="$DR_LIBS" sh -c \
    '"$0" report --db "$1" --format markdown >"$2"' "$DR" "$DB" "$OUT/report.md"
step curves 10 batch.log env LD_LIBRARY_PATH="$DR_LIBS" "$DR" plot --db "$DB" -o "$OUT/curves.svg"
cp "$DB" "$OUT/results.db" 2>/dev/null && note "results database: results.db; report: report.md; curves: curves.svg"
exit "$FAILED"
