#!/usr/bin/env python3
"""Checks that the CUDA engine counts all its work (kernels/counters.h): in every .cu and .h
file of the directory given (kernels/cuda), each kernel launch `<<<...>>>(...)` is followed,
within a few lines and before any other launch, by CHECK_LAUNCH(c, bytes_read,
bytes_written); and no copy, memset, synchronisation, allocation, free or graph launch
calls the CUDA runtime directly instead of through the counted helpers of
cuda_internal.h (cuda_counted_copy, cuda_counted_sync, ...), which alone may. Prints each offence as
file:line and exits 1 when there is one.

    tests/check_launch_counted.py kernels/cuda
    tests/check_launch_counted.py --self-test kernels/cuda   checks that the check fails on
        a copy of each file with one launch's CHECK_LAUNCH removed, and on a direct
        cudaStreamSynchronize"""
import os
import re
import sys
import tempfile

WITHIN_LINES = 16   # a launch's CHECK_LAUNCH must start this close to its `<<<`
HELPERS = "cuda_internal.h"   # where the counted helpers make the runtime calls
RAW_CALLS = re.compile(r"\b(cudaMemcpy\w*|cudaMemset\w*|cudaStreamSynchronize|"
                       r"cudaDeviceSynchronize|cudaEventSynchronize|cudaMalloc\w*|"
                       r"cudaFree\w*|cudaHostAlloc|cudaGraphLaunch)\s*\(")


def strip_comments(text):
    """Blanks comments, keeping line breaks so that line numbers stay right."""
    def blank(m):
        return re.sub(r"[^\n]", " ", m.group(0))
    return re.sub(r"/\*.*?\*/|//[^\n]*", blank, text, flags=re.S)


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def check_file(path):
    errors = []
    text = strip_comments(open(path, encoding="utf-8").read())
    name = os.path.basename(path)
    marks = sorted([(m.start(), "launch") for m in re.finditer(r"<<<", text)] +
                   [(m.start(), "count") for m in re.finditer(r"\bCHECK_LAUNCH\s*\(", text)])
    for i, (pos, kind) in enumerate(marks):
        if kind != "launch":
            continue
        nxt = marks[i + 1] if i + 1 < len(marks) else None
        ln = line_of(text, pos)
        if nxt is None or nxt[1] != "count":
            errors.append(f"{name}:{ln}: kernel launch not followed by CHECK_LAUNCH(c, read, written)")
        elif line_of(text, nxt[0]) - ln > WITHIN_LINES:
            errors.append(f"{name}:{ln}: kernel launch's CHECK_LAUNCH is more than "
                          f"{WITHIN_LINES} lines after it")
    for m in RAW_CALLS.finditer(text if name != HELPERS else ""):
        errors.append(f"{name}:{line_of(text, m.start())}: {m.group(1)} called directly "
                      "(use the counted helper of cuda_internal.h)")
    return errors


def self_test(folder, files):
    """Each file with a launch, its first CHECK_LAUNCH disabled, must be reported; so must
    a direct synchronisation. Returns 0 when every broken copy was caught."""
    missed = 0
    broken = [("CHECK_LAUNCH(", "(void)(")]
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            src = open(os.path.join(folder, f), encoding="utf-8").read()
            cases = []
            if "CHECK_LAUNCH(" in src and "<<<" in src:
                cases.append(("launch", src.replace(*broken[0], 1)))
            if f != HELPERS:
                cases.append(("sync", src + "\nstatic void f_(cudaStream_t s) "
                              "{ cudaStreamSynchronize(s); }\n"))
            for what, text in cases:
                path = os.path.join(tmp, f)
                with open(path, "w", encoding="utf-8") as out:
                    out.write(text)
                if not check_file(path):
                    print(f"{f}: an uncounted {what} was not noticed")
                    missed += 1
                os.remove(path)
    if missed:
        return 1
    print(f"every uncounted launch and synchronisation noticed in {len(files)} files")
    return 0


def main():
    args = sys.argv[1:]
    test = args[:1] == ["--self-test"]
    if test:
        args = args[1:]
    if len(args) != 1:
        sys.exit("usage: check_launch_counted.py [--self-test] KERNELS_CUDA_DIR")
    folder = args[0]
    files = sorted(f for f in os.listdir(folder) if f.endswith((".cu", ".h")))
    if not files:
        sys.exit(f"{folder}: no .cu files")
    if test:
        return self_test(folder, files)
    errors, launches = [], 0
    for f in files:
        path = os.path.join(folder, f)
        launches += strip_comments(open(path, encoding="utf-8").read()).count("<<<")
        errors += check_file(path)
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"{launches} kernel launches in {len(files)} files, each counted")
    return 0


if __name__ == "__main__":
    sys.exit(main())
