#!/bin/bash
# The command-line conventions of every dawnrun command, checked through the executable:
# -h and --help print the command's usage on stdout and exit 0 (and `dawnrun help CMD`
# prints the same); an unknown flag exits 2 with "dawnrun CMD: unknown flag" and the
# usage line; the flags --help lists are exactly those the parser accepts (--list-flags),
# each with the value-taking the usage shows; `--flag=value` and `--flag value` both work;
# `--` ends the flags; abbreviations are refused.
#
# usage: cli_flags.sh DAWNRUN SOURCE_DIR
dr=$1; src=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dawnrun-cli-flags.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
checked=0
cfg=$src/configs/demo.cfg
# every command of the executable: one missing from `dawnrun --help` fails below
commands="run report experiments runs show plot export merge train validate bench selfcheck
          config-doc completion help version"

bad() { echo "cli_flags.sh: $*" >&2; fail=1; }
# expect NAME CODE REGEX COMMAND...: the exit code and a line of stdout+stderr matching REGEX
expect() {
    local name=$1 code=$2 regex=$3 rc
    shift 3
    "$@" >"$tmp/out" 2>&1; rc=$?
    [ "$rc" -eq "$code" ] || bad "$name: exit $rc, expected $code: $*"
    grep -Eq -- "$regex" "$tmp/out" || { bad "$name: no line matches /$regex/:"; cat "$tmp/out" >&2; }
}

"$dr" --help >"$tmp/top" 2>&1 || bad "dawnrun --help exits non-zero"
expect "dawnrun --version" 0 "^dawnrun [0-9]" "$dr" --version
expect "no command" 2 "^usage: dawnrun COMMAND" "$dr"

for cmd in $commands; do
    grep -Eq "^  $cmd( |$)" "$tmp/top" || bad "dawnrun --help does not list '$cmd'"
    "$dr" "$cmd" --help >"$tmp/long" 2>"$tmp/err"; rc=$?
    [ "$rc" -eq 0 ] || bad "$cmd --help: exit $rc"
    [ -s "$tmp/err" ] && bad "$cmd --help wrote to stderr: $(cat "$tmp/err")"
    head -n 1 "$tmp/long" | grep -q "^usage: dawnrun $cmd" || bad "$cmd --help: no usage line"
    grep -q '^flags:$' "$tmp/long" || bad "$cmd --help: no flags section"
    "$dr" "$cmd" -h >"$tmp/short" 2>&1 || bad "$cmd -h: exit non-zero"
    cmp -s "$tmp/long" "$tmp/short" || bad "$cmd -h and --help differ"
    "$dr" help "$cmd" >"$tmp/help" 2>&1 || bad "help $cmd: exit non-zero"
    cmp -s "$tmp/long" "$tmp/help" || bad "help $cmd and $cmd --help differ"
    expect "$cmd unknown flag" 2 "^dawnrun $cmd: unknown flag '--no-such-flag'" \
        "$dr" "$cmd" --no-such-flag
    grep -q "^usage: dawnrun $cmd" "$tmp/out" || bad "$cmd unknown flag: no usage line"
    expect "$cmd unknown short flag" 2 "^dawnrun $cmd: unknown flag '-Z'" "$dr" "$cmd" -Z

    # the flags of the usage (each help line's spellings) against the parser's
    sed -n '/^flags:$/,/^$/p' "$tmp/long" | grep -E '^  -' |
        sed -E 's/^  (-[a-zA-Z]), /\1\n  /' | sed -E 's/^ *(--?[a-z][a-z-]*).*/\1/' |
        grep -E '^-' | sort >"$tmp/usage-flags"
    "$dr" "$cmd" --list-flags | sort >"$tmp/parser-flags"
    diff "$tmp/usage-flags" "$tmp/parser-flags" >"$tmp/diff" ||
        { bad "$cmd: the flags of --help (<) and of the parser (>) differ:"; cat "$tmp/diff" >&2; }
    # each flag takes a value exactly when its help line shows one
    sed -n '/^flags:$/,/^$/p' "$tmp/long" | grep -E '^  -' | grep -v -- '--help' |
        while read -r line; do
            [ "$line" ] || continue
            flag=$(printf '%s\n' "$line" | grep -oE -- '--[a-z][a-z-]*' | head -n 1)
            rest=${line#*"$flag"}
            if [ "${rest:0:1}" = " " ] && [ "${rest:1:1}" != " " ]; then
                "$dr" "$cmd" "$flag" >"$tmp/v" 2>&1
                grep -q "^dawnrun $cmd: $flag needs a value" "$tmp/v" ||
                    bad "$cmd $flag (no value): $(head -n 1 "$tmp/v")"
            else
                "$dr" "$cmd" "$flag=x" >"$tmp/v" 2>&1
                grep -q "^dawnrun $cmd: $flag takes no value" "$tmp/v" ||
                    bad "$cmd $flag=x: $(head -n 1 "$tmp/v")"
            fi
            [ "$fail" -eq 0 ] || exit 1
        done || fail=1
    checked=$((checked + $(wc -l <"$tmp/parser-flags")))
done
# the loop above saw the flags (a parse of the usage that found none would check nothing)
echo "checked $checked flags"
[ "$checked" -ge 80 ] || bad "only $checked flags seen in the usages"

# --flag=value, a representative flag of every command (and --flag value beside it)
sqlite3 "$tmp/ok.db" <"$src/schemas/results.sql" || exit 1
expect "train --seed=x" 2 "^dawnrun train: --seed: expected an integer" "$dr" train "$cfg" --seed=x
expect "train --engine=cuda" 6 "no CUDA device" "$dr" train --engine=cuda "$cfg"
expect "validate --set=" 0 "batch_size = 768" "$dr" validate --set=train.batch_size=768 "$cfg"
expect "validate --set" 0 "batch_size = 768" "$dr" validate "$cfg" --set train.batch_size=768
expect "bench --engine=cuda" 6 "no CUDA device" "$dr" bench "$cfg" --engine=cuda --steps=1
expect "bench --steps=0" 2 "^dawnrun bench: --steps: expected an integer in \[1," \
    "$dr" bench "$cfg" --steps=0
expect "run --seeds=0" 2 "^dawnrun run: --seeds: expected an integer in \[1," \
    "$dr" run "$cfg" --seeds=0 --db="$tmp/none.db"
expect "run --engine=cpu --devices=0,1" 2 "--devices needs the cuda engine" \
    "$dr" run "$cfg" --engine=cpu --devices=0,1 --db="$tmp/none.db"
[ -e "$tmp/none.db" ] && bad "run: a usage error created the database"
expect "report --format=json" 0 '"experiments"' "$dr" report --format=json --db="$tmp/ok.db"
expect "report --where=" 2 'no experiment --where train\.epochs=3' "$dr" report --where=train.epochs=3 --format json \
    --db "$tmp/ok.db"
expect "report --target=" 2 "^dawnrun report: --target: expected an accuracy" \
    "$dr" report --target=94 --db="$tmp/ok.db"
expect "experiments --db=" 1 "none\.db" "$dr" experiments --db="$tmp/none.db"
expect "runs --db=" 2 "nosuch" "$dr" runs nosuch --db="$tmp/ok.db"
expect "show --db=" 2 "no run 7 in .*ok\.db" "$dr" show --db="$tmp/ok.db" 7
expect "plot --output=" 0 "curves-eq\.svg: 0 experiments" \
    "$dr" plot --db="$tmp/ok.db" --output="$tmp/curves-eq.svg"
[ -s "$tmp/curves-eq.svg" ] || bad "plot --output=FILE wrote no file"
"$dr" export --db="$tmp/ok.db" --format=json --output="$tmp/all.json" ||
    bad "export --format=json --output=FILE: exit non-zero"
head -c 1 "$tmp/all.json" | grep -q '{' || bad "export --output=FILE: no JSON in the file"
expect "selfcheck --only=" 0 "act_backward_acc/relu_8x64x16x16" \
    "$dr" selfcheck --list --only=act --precision=fp32
expect "config-doc --keys" 0 "^train\.epochs$" "$dr" config-doc --keys
expect "merge: OUT and IN" 2 "^usage: dawnrun merge" "$dr" merge "$tmp/out.db"
expect "completion bash" 0 "^complete -F _dawnrun dawnrun$" "$dr" completion bash
expect "help run" 0 "^usage: dawnrun run" "$dr" help run
expect "help nosuch" 2 "unknown command 'nosuch'" "$dr" help nosuch

# flags before, between and after the positionals; `--` ends the flags
expect "flags first" 0 "batch_size = 768" "$dr" validate --set train.batch_size=768 -- "$cfg"
expect "-- ends the flags" 2 "unexpected argument '--set'" "$dr" config-doc -- --set
# an abbreviation is not its flag; a missing value names the flag
expect "abbreviation" 2 "^dawnrun train: unknown flag '--see'" "$dr" train "$cfg" --see 1
expect "ambiguous" 2 "^dawnrun run: unknown flag '--seed'" "$dr" run "$cfg" --seed 1
expect "missing value" 2 "^dawnrun run: --seeds needs a value" "$dr" run "$cfg" --seeds
expect "empty value" 2 "^dawnrun run: --db needs a value" "$dr" run "$cfg" --db=
expect "plot -o" 2 "^dawnrun plot: -o needs a value" "$dr" plot --db "$tmp/ok.db" -o
exit $fail
