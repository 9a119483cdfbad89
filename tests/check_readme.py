#!/usr/bin/env python3
"""What the README tells a user on a fresh machine, checked against the tree:

1. The "Not root?" install lines quote scripts/packages.txt: one line
   `sudo apt-get install PACKAGES   # GROUP: ...` per group of the file, with exactly
   that group's packages, in the file's order (the packages a script would install are
   the ones the README names).
2. Every ctest case the README's Tests section names (a backquoted lowercase name with an
   underscore, `*` matching any text) is a case of this build: cases that cannot run on
   a machine are registered there anyway and report skipped (exit 77).

usage: check_readme.py SOURCE_DIR BUILD_DIR
       prints each mismatch, with the expected line; exit 1 if any.
"""
import fnmatch
import os
import re
import subprocess
import sys


def package_groups(path):
    """{group: [packages]} in file order (several lines of a group add up)."""
    groups = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                groups.setdefault(words[0], []).extend(words[1:])
    return groups


def readme_install_lines(text):
    """{group: [packages]} from the README's `sudo apt-get install ... # GROUP:` lines."""
    found = {}
    for m in re.finditer(r"^sudo apt-get install ([^#\n]*?)\s*# (\w+):", text, re.M):
        found.setdefault(m.group(2), []).append(m.group(1).split())
    return found


def section(text, title):
    m = re.search(r"^## " + re.escape(title) + r"\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m.group(1) if m else ""


def ctest_names(build):
    out = subprocess.run(["ctest", "-N"], cwd=build, capture_output=True, text=True,
                         check=True).stdout
    return re.findall(r"^\s*Test\s+#\d+: (\S+)", out, re.M)


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().split("usage: ")[1], file=sys.stderr)
        return 2
    src, build = argv[1], argv[2]
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    problems = []

    groups = package_groups(os.path.join(src, "scripts", "packages.txt"))
    quoted = readme_install_lines(readme)
    for g, pkgs in groups.items():
        want = "sudo apt-get install " + " ".join(pkgs) + "   # " + g + ": ..."
        lines = quoted.get(g, [])
        if len(lines) != 1:
            problems.append(f"README: {len(lines)} install lines for group '{g}' "
                            f"(want one: {want})")
        elif lines[0] != pkgs:
            problems.append(f"README: the install line of group '{g}' names "
                            f"{' '.join(lines[0])}\n  scripts/packages.txt says: {want}")
    for g in quoted:
        if g not in groups:
            problems.append(f"README: an install line for group '{g}', "
                            "which scripts/packages.txt does not have")

    names = ctest_names(build)
    tests = section(readme, "Tests")
    if not tests:
        problems.append("README: no '## Tests' section")
    for name in sorted(set(re.findall(r"`([a-z][a-z0-9]*_[a-z0-9_*]*)`", tests))):
        if not fnmatch.filter(names, name):
            problems.append(f"README: the Tests section names `{name}`, "
                            "which is no ctest case of this build")

    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
