#!/usr/bin/env python3
"""Host emulation (see run.sh): copies a CUDA source to stdout with every kernel launch
    kernel<T, ...><<<grid, block, shared, stream>>>(args)
rewritten as
    emu_launch(dim3(grid), dim3(block), (cudaStream_t)(stream),
               [=, emu_a0 = (arg0), emu_a1 = (arg1), ...]() { kernel<T, ...>(emu_a0, ...); })
so that a host C++ compiler accepts it (stream 0 when the launch names none). Each
argument expression is evaluated at the launch and its value kept in the lambda, as CUDA
evaluates and copies kernel parameters at the launch, so that a launch recorded by stream
capture (emu_runtime.cpp) replays with the values it was given, even when what an
argument expression reads (a field behind a pointer, a tensor handle's data) has changed
or been freed since. Launches may span lines; the kernel name may carry template
arguments; comments inside the argument list are dropped."""
import re
import sys


def split_top(text):
    """Splits text at the commas outside brackets."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts]


def rewrite(src):
    while True:
        i = src.find("<<<")
        if i < 0:
            return src
        j = src.find(">>>", i)
        config = split_top(src[i + 3:j])
        k = i - 1
        while src[k].isspace():
            k -= 1
        end = k + 1
        if src[k] == ">":  # template arguments
            depth = 0
            while True:
                if src[k] == ">":
                    depth += 1
                elif src[k] == "<":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            k -= 1
        while src[k].isalnum() or src[k] == "_":
            k -= 1
        start = k + 1
        p = j + 3
        if src[p] != "(":
            sys.exit("rewrite_launches.py: no argument list after >>> near: " + src[i:p + 40])
        depth, q = 0, p
        while True:
            if src[q] == "(":
                depth += 1
            elif src[q] == ")":
                depth -= 1
                if depth == 0:
                    break
            q += 1
        stream = config[3] if len(config) >= 4 else "0"
        text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", src[p + 1:q], flags=re.S)
        # a bare NULL would be kept as an integer: nullptr converts to the pointer parameter
        args = ["nullptr" if a == "NULL" else a for a in split_top(text)] if text.strip() else []
        inits = "".join(", emu_a%d = (%s)" % (n, a) for n, a in enumerate(args))
        names = ", ".join("emu_a%d" % n for n in range(len(args)))
        call = "emu_launch(dim3(%s), dim3(%s), (cudaStream_t)(%s), [=%s]() { %s(%s); })" % (
            config[0], config[1], stream, inits, src[start:end], names)
        # keep the line count, so that compiler messages point at the source's lines
        call += "\n" * (src[start:q + 1].count("\n") - call.count("\n"))
        src = src[:start] + call + src[q + 1:]


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        sys.stdout.write(rewrite(f.read()))
