#!/bin/sh
# The man page: docs/dawnrun.1 is what `dawnrun --man` prints now (regenerate it with that
# command when a command or a flag changes), it has a section for every command that
# `dawnrun --help` lists and an entry for every flag each command's parser accepts, and
# groff (when installed) formats it without a warning.
#
# usage: cli_man.sh DAWNRUN SOURCE_DIR
dr=$1; src=$2
page=$src/docs/dawnrun.1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dawnrun-man.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "cli_man.sh: $*" >&2; fail=1; }

"$dr" --man >"$tmp/page" || bad "dawnrun --man failed"
if ! cmp -s "$tmp/page" "$page"; then
    bad "$page is not what \`dawnrun --man\` prints; regenerate it:"
    diff "$page" "$tmp/page" | head -n 20 >&2
fi
"$dr" --help | sed -n '/^commands:$/,/^$/p' | grep -E '^  [a-z]' | awk '{print $1}' >"$tmp/commands"
[ "$(wc -l <"$tmp/commands")" -ge 10 ] || bad "dawnrun --help lists too few commands"
while read -r cmd; do
    name=$(printf '%s' "$cmd" | sed 's/-/\\\\-/g')   # config-doc: config\-doc
    grep -q "^\.SS \"$name[ \"]" "$page" || { bad "no section for '$cmd'"; continue; }
    # the command's section: from its .SS to the next .SS or .SH
    sed -n "/^\.SS \"$name[ \"]/,/^\.S[SH] /p" "$page" | sed '$d' >"$tmp/section"
    "$dr" "$cmd" --list-flags | grep -v -e '^-h$' -e '^--help$' | while read -r flag; do
        roff=$(printf '%s' "$flag" | sed 's/-/\\\\-/g')
        grep -q "fB$roff\\\\fR" "$tmp/section" || { echo "cli_man.sh: $cmd: no entry for $flag" >&2; exit 1; }
    done || fail=1
done <"$tmp/commands"
if command -v groff >/dev/null; then
    groff -man -ww -z "$page" 2>"$tmp/warn"
    [ -s "$tmp/warn" ] && { bad "groff warns:"; cat "$tmp/warn" >&2; }
fi
exit $fail
