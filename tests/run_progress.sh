#!/bin/sh
# The progress line of `dawnrun train` and `dawnrun run` on a pseudo-terminal, erased
# before every other output, and absent when stdout is not a terminal
# (tests/progress_tty.py).
. "$(dirname "$0")/run_lib.sh"
command -v python3 >/dev/null 2>&1 || { echo "python3 not found: skipped"; exit 77; }
python3 "$SRC/tests/progress_tty.py" "$DR" "$SRC" "$TMP" || status=1
finish
