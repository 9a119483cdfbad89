#!/usr/bin/env python3
"""The house rules of the source tree, checked on every quoted #include:

1. Floors point one way. From top to bottom: runner/ (cli/, report/, sched/); results/
   and engine/ (config/, core/, selfcheck/), two rooms on one floor that do not see each
   other; kernels/ (the backend contract at its root, and the two engine twins
   kernels/cpu/ and kernels/cuda/); base/ (status codes and messages, allocation, test
   crash points, UTF-8, SHA-256), the lowest. A file's floor and room are its top
   directory however deep it lies (engine/core/train.c is in engine), so the folders of
   one room see each other. A file may include its own floor or any floor below it,
   never one above.
2. The twins do not see each other, and the contract at kernels/ does not see either.
3. No loops among modules. A module is a source file with its headers (name.c, name.cu,
   name.h and name_internal.h in one directory). Module A depends on module B when a file
   of A includes a header of B, and, given the build's object files, when A's object
   calls a function or uses a variable that B's object defines (so that a loop hidden
   behind one shared header is found too). Neither graph may have a cycle.
4. Every quoted include names a file of the tree.

usage: check_floors.py SOURCE_DIR [OBJECT_DIR...]
       prints each violation; exit 1 if any. OBJECT_DIRs are searched for the *.o files
       of the tree's sources (a CMake build directory), read with nm(1).
"""
import os
import re
import subprocess
import sys

ROOMS = ["base", "kernels", "engine", "results", "runner"]
FLOOR = {"base": 0, "kernels": 1, "engine": 2, "results": 2, "runner": 3}
EXTS = (".c", ".h", ".cu", ".cpp")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def room(path):
    """'kernels/cpu', 'kernels/cuda', 'kernels' (the contract) or a top directory (the
    room of every file below it, in any folder)."""
    parts = path.split("/")
    if parts[0] == "kernels" and len(parts) > 2:
        return "kernels/" + parts[1]
    return parts[0]


def module(path):
    name = os.path.splitext(path)[0]
    return name[: -len("_internal")] if name.endswith("_internal") else name


def object_modules(root, dirs):
    """{module: object path} for the objects of tree sources under dirs (CMake names an
    object SRC.o under a directory mirroring the source path)."""
    found = {}
    for d in dirs:
        for dirpath, _, names in os.walk(d):
            for name in names:
                if not name.endswith(".o"):
                    continue
                full = os.path.join(dirpath, name)
                for top in ROOMS:
                    marker = "/" + top + "/"
                    i = full.rfind(marker)
                    if i < 0:
                        continue
                    src = full[i + 1 : -2]
                    if src.endswith(EXTS) and os.path.isfile(os.path.join(root, src)):
                        found.setdefault(module(src), full)
                    break
    return found


def link_graph(objects):
    """Module dependencies through symbols: A -> B when A's object uses what B's defines."""
    defined, used = {}, {}
    for mod, obj in sorted(objects.items()):
        out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[1] in "TDBRC":
                defined.setdefault(f[2], mod)
            elif len(f) == 2 and f[0] == "U":
                used.setdefault(mod, set()).add(f[1])
    graph = {}
    for mod, syms in used.items():
        for sym in syms:
            other = defined.get(sym)
            if other and other != mod:
                graph.setdefault(mod, set()).add(other)
    return graph


def sources(root):
    for top in ROOMS:
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if name.endswith(EXTS):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def resolve(root, src, target):
    """The tree path an include names: relative to the including file, then to the root."""
    for base in (os.path.dirname(src), ""):
        p = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(os.path.join(root, p)):
            return p
    return None


def check_edge(src, dst):
    a, b = room(src), room(dst)
    ta, tb = a.split("/")[0], b.split("/")[0]
    if tb not in FLOOR:
        return "includes %s, outside the floors" % dst
    if FLOOR[tb] > FLOOR[ta]:
        return "points up: %s (floor %s) includes %s (floor %s)" % (src, ta, dst, tb)
    if ta != tb and FLOOR[ta] == FLOOR[tb]:
        return "crosses rooms: %s includes %s (%s and %s do not see each other)" % (
            src, dst, ta, tb)
    if ta == "kernels" and tb == "kernels" and a != b and b != "kernels":
        if a == "kernels":
            return "the backend contract %s includes the twin file %s" % (src, dst)
        return "crosses the engine twins: %s includes %s" % (src, dst)
    return None


def find_cycle(graph):
    """One cycle of the graph as a list of nodes, or None."""
    state, stack = {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def main():
    if len(sys.argv) < 2:
        print("usage: check_floors.py SOURCE_DIR [OBJECT_DIR...]", file=sys.stderr)
        return 2
    root = sys.argv[1]
    problems, deps = [], {}
    for src in sources(root):
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                dst = resolve(root, src, m.group(1))
                where = "%s:%d" % (src, lineno)
                if dst is None:
                    problems.append('%s: "%s" is not a file of the tree' % (where, m.group(1)))
                    continue
                why = check_edge(src, dst)
                if why:
                    problems.append("%s: %s" % (where, why))
                a, b = module(src), module(dst)
                if a != b:
                    deps.setdefault(a, set()).add(b)
    cycle = find_cycle(deps)
    if cycle:
        problems.append("modules include each other in a loop: " + " -> ".join(cycle))
    objects = object_modules(root, sys.argv[2:])
    if len(sys.argv) > 2 and not objects:
        problems.append("no object files of the tree under " + " ".join(sys.argv[2:]))
    cycle = find_cycle(link_graph(objects)) if objects else None
    if cycle:
        problems.append("modules call each other in a loop: " + " -> ".join(cycle))
    for p in problems:
        print("check_floors: " + p)
    if not problems:
        n = sum(1 for _ in sources(root))
        print("check_floors: %d files, %d objects: every include points down or within its "
              "room, no loops" % (n, len(objects)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
