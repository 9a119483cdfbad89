#!/bin/bash
# The bash completion script: scripts/dawnrun-completion.bash is what `dawnrun completion
# bash` prints now (regenerate it with that command when a flag or a config key changes),
# and its function completes a command, a flag, a flag's value, a config key after --set
# (also as --set=KEY), a config file, and the commands after `help`.
#
# usage: cli_completion.sh DAWNRUN SOURCE_DIR
dr=$1; src=$2
script=$src/scripts/dawnrun-completion.bash
fail=0
bad() { echo "cli_completion.sh: $*" >&2; fail=1; }

"$dr" completion bash >"${TMPDIR:-/tmp}/dawnrun-completion.$$" || bad "dawnrun completion bash failed"
if ! cmp -s "${TMPDIR:-/tmp}/dawnrun-completion.$$" "$script"; then
    bad "$script is not what \`dawnrun completion bash\` prints; regenerate it:"
    diff "$script" "${TMPDIR:-/tmp}/dawnrun-completion.$$" | head -n 20 >&2
fi
rm -f "${TMPDIR:-/tmp}/dawnrun-completion.$$"

# shellcheck source=/dev/null
. "$script" || { bad "the script does not load"; exit 1; }
complete -p dawnrun | grep -q -- '-F _dawnrun' || bad "no completion registered for dawnrun"

# offers WANT WORDS...: completing the last of WORDS offers WANT (and maybe more)
offers() {
    local want=$1
    shift
    COMP_WORDS=("$@")
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
    COMPREPLY=()
    _dawnrun
    local w
    for w in "${COMPREPLY[@]}"; do [ "$w" = "$want" ] && return 0; done
    bad "completing '$*' offers '${COMPREPLY[*]}', not '$want'"
}
# offers_only WANT WORDS...: exactly WANT
offers_only() {
    offers "$@"
    [ "${#COMPREPLY[@]}" -eq 1 ] || bad "completing '${*:2}' offers '${COMPREPLY[*]}', not only '$1'"
}

cd "$src" || exit 1
offers run dawnrun ru                                     # a command
offers runs dawnrun ru
offers_only selfcheck dawnrun selfc
offers --seeds dawnrun run configs/demo.cfg --se            # a flag of the command
offers --seed-list dawnrun run configs/demo.cfg --se
offers_only --seed dawnrun train configs/demo.cfg --see     # train's, not run's
offers_only --output dawnrun plot --out
offers cuda dawnrun run --engine ""                         # an enum flag's value
offers_only markdown dawnrun report --format m
offers_only time dawnrun plot --x t
offers_only --precision=bf16 dawnrun selfcheck --precision=b
offers_only bf16 dawnrun selfcheck --precision = b          # '=' split off by bash
offers train.epochs= dawnrun run configs/demo.cfg --set train.ep   # a config key
offers_only augment.cutout= dawnrun validate x.cfg --set augment.cuto
offers train.batch_size= dawnrun report --where train.batch
offers train.batch_size= dawnrun run --sweep train.batch_s
offers_only --set=train.epochs= dawnrun run --set=train.epoch
offers configs/demo.cfg dawnrun validate configs/de         # a config file
offers_only plot dawnrun help pl                            # commands after help
exit $fail
