#!/bin/sh
# Installs the Debian packages named on the command line that are not installed yet.
# As root it runs apt-get; otherwise it prints the command to run and fails if any is
# missing. Offline with everything installed, it does nothing.
set -eu
missing=""
for p in "$@"; do
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
