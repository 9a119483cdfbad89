#!/bin/sh
# The test suite under AddressSanitizer, LeakSanitizer and UndefinedBehaviorSanitizer:
# builds the CPU engine, the CLI and the tests in BUILD (default build-asan) with
# -fsanitize=address,undefined -fno-sanitize-recover=all and runs ctest. Any report
# aborts the process that made it and is also written to BUILD/sanitizer-logs (whatever
# a test does with the process's stderr); the stage fails when a test fails or when any
# report was written. Leaks inside third-party libraries are suppressed only as listed,
# and explained, in tests/sanitize/lsan.supp.
# Left out: cuda_emulated_selfcheck (CUDA only, and already run under the sanitizers by
# its own script in the normal suite). Usage: scripts/test-sanitize.sh [BUILD] [JOBS]
set -eu
cd "$(dirname "$0")/.."
src=$(pwd)
build=${1:-build-asan}
jobs=${2:-$(nproc)}
# No -Werror here: gcc warns falsely on some instrumented code (-Wformat-truncation "null
# destination pointer" in runner/cli/output.c); the normal build keeps warnings as errors.
cmake -S . -B "$build" -DDAWNRUN_CUDA=OFF -DDAWNRUN_SANITIZE=address,undefined \
    -DDAWNRUN_FUZZ=OFF -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$jobs"
logs=$(cd "$build" && pwd)/sanitizer-logs
rm -rf "$logs"
mkdir -p "$logs"
# abort_on_error: a report kills the process (exit 134), so the test sees a failure even
# when it expected some non-zero exit; log_path: the report is kept even when the test
# redirects the process's stderr.
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:log_path=$logs/asan"
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
LSAN_OPTIONS="suppressions=$src/tests/sanitize/lsan.supp:print_suppressions=0"
export ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
rc=0
# SANITIZE_CTEST_ARGS: more ctest arguments (e.g. -R NAME to run a few cases)
# shellcheck disable=SC2086
(cd "$build" && ctest --output-on-failure -j "$jobs" -LE long \
    ${SANITIZE_CTEST_ARGS:-}) || rc=$?
# A log holding only "failed to allocate" warnings comes from tests/run_failed.sh, which
# makes allocations fail on purpose (allocator_may_return_null=1; elsewhere a failed
# allocation is a fatal report). Anything else is a report and fails the stage.
for f in $(find "$logs" -type f | sort); do
    if ! grep -qv 'WARNING: AddressSanitizer failed to allocate 0x[0-9a-f]* bytes' "$f"; then
        echo "sanitizers: $(basename "$f"): allocation failures asked for by a test (not a report)"
        continue
    fi
    echo "sanitizers: report in $f:"
    cat "$f"
    rc=1
done
if [ "$rc" -eq 0 ]; then echo "sanitizers: the suite passed with no report"; fi
exit "$rc"
