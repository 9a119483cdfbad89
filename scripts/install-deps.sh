#!/bin/sh
# Installs the Debian packages of the named groups of scripts/packages.txt (build, test,
# fuzz) that are not installed yet. As root it runs apt-get; otherwise it prints the
# command to run and fails if any is missing. Offline with everything installed, it does
# nothing.
#
#   scripts/install-deps.sh GROUP...          install what is missing
#   scripts/install-deps.sh --list GROUP...   print the groups' packages, one line
set -eu
LIST="$(dirname "$0")/packages.txt"
list_only=0
if [ "${1:-}" = "--list" ]; then
    list_only=1
    shift
fi
[ $# -ge 1 ] || { echo "usage: $0 [--list] GROUP... (groups in $LIST)" >&2; exit 2; }
packages=""
for g in "$@"; do
    found=$(awk -v g="$g" '$1 == g { for (i = 2; i <= NF; i++) printf " %s", $i }' "$LIST")
    [ -n "$found" ] || { echo "dawnrun: no package group '$g' in $LIST" >&2; exit 2; }
    packages="$packages$found"
done
if [ $list_only -eq 1 ]; then
    echo $packages
    exit 0
fi
missing=""
for p in $packages; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
echo "dawnrun: missing Debian packages:$missing"
if [ "$(id -u)" -ne 0 ]; then
    echo "dawnrun: run: sudo apt-get install -y$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || echo "dawnrun: apt-get update failed (offline?); trying the install anyway" >&2
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing
