#!/bin/sh
# Fuzzes every parser of untrusted input with libFuzzer (clang) under AddressSanitizer and
# UndefinedBehaviorSanitizer: builds the targets of tests/fuzz in BUILD (default
# build-fuzz) and runs each for SECONDS (default 60) from its seed corpus, with a fixed
# seed, bounded input length and memory. A crash, leak, sanitizer report, timeout or
# out-of-memory fails the stage; its input is kept in BUILD/fuzz-crashes/NAME/. Once the
# bug is fixed, copy the input into tests/fuzz/regress/NAME/ so that ctest replays it.
# Usage: scripts/fuzz.sh [SECONDS] [BUILD] [TARGET...]   (see docs/testing.md)
set -eu
cd "$(dirname "$0")/.."
src=$(pwd)
seconds=${1:-60}
build=${2:-build-fuzz}
[ $# -ge 2 ] && shift 2 || shift $#
targets=${*:-config cifar checkpoint results}
CC=${FUZZ_CC:-clang} cmake -S . -B "$build" -DDAWNRUN_CUDA=OFF -DDAWNRUN_FUZZ=ON \
    -DDAWNRUN_SANITIZE=address,undefined -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)" --target fuzz

ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1"
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
LSAN_OPTIONS="suppressions=$src/tests/sanitize/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
out=$(cd "$build" && pwd)
status=0
summary=""
for t in $targets; do
    case $t in
        config)     max_len=16384; seeds="tests/fuzz/seeds/config tests/configs configs" ;;
        cifar)      max_len=12300; seeds="tests/fuzz/seeds/cifar" ;;
        checkpoint) max_len=4096;  seeds="tests/fuzz/seeds/checkpoint" ;;
        results)    max_len=8192;  seeds="tests/fuzz/seeds/results" ;;
        *) echo "fuzz: unknown target $t" >&2; exit 2 ;;
    esac
    corpus=$out/fuzz-corpus/$t      # new inputs go here, never into the committed seeds
    crashes=$out/fuzz-crashes/$t
    log=$out/fuzz-$t.log
    rm -rf "$corpus" "$crashes"
    mkdir -p "$corpus" "$crashes"
    echo "fuzz: $t for ${seconds}s"
    rc=0
    # shellcheck disable=SC2086
    "$out/fuzz_$t" -seed=1 -max_total_time="$seconds" -max_len="$max_len" \
        -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -close_fd_mask=2 \
        -print_final_stats=1 -artifact_prefix="$crashes/" "$corpus" $seeds >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
    summary="$summary$(printf '%-11s %10s execs %7s exec/s  %s  rc %s' "$t" "${execs:-?}" \
        "${rate:-?}" "$cov" "$rc")
"
    if [ "$rc" -ne 0 ]; then
        status=1
        echo "fuzz: $t FAILED (exit $rc); the end of $log:"
        tail -60 "$log"
        echo "fuzz: inputs kept in $crashes:"
        ls -l "$crashes"
    fi
done
echo "fuzz: summary (${seconds}s per target)"
printf '%s' "$summary"
exit "$status"
