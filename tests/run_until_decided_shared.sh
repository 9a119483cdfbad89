#!/bin/sh
# Two `dawnrun run --until-decided` processes started at the same instant on one
# brand-new database with the same sweep (its two members are the batch; the first is
# the baseline) and a cap of 6 seeds in rounds of 3, on a small difference (cutout 8
# against none) that 6 seeds cannot decide: they share the batch. Every (experiment,
# seed) is run exactly once (attempt 1), there is one batch row (status cap, its sweep
# one of the recorded ones) and one look row per look, and both print the same looks
# and the same closing line.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/shared.db
gate=$TMP/gate
mkfifo "$gate" || fail "mkfifo"
pids=""
for w in 1 2; do
    sh -c 'read x <"$1"; shift; exec "$@"' sh "$gate" \
        "$DR" run "$TINY" $FAST --sweep augment.cutout=8,0 --until-decided --round 3 \
        --max-seeds 6 --db "$db" >"$TMP/w$w.out" 2>&1 &
    pids="$pids $!"
done
bg_pids="$bg_pids $pids"
sleep 0.2
: >"$gate"
for p in $pids; do
    wait "$p" || fail "process $p exited with $?"
done
for w in 1 2; do
    echo "== process $w"
    grep -E '^(batch|sweep|until|waiting|look|decided|not decided)|seed [0-9]+  attempt' "$TMP/w$w.out"
done

for s in 0 1 2 3 4 5; do
    for m in 'augment.cutout=8' 'augment.cutout=0'; do
        n=$(cat "$TMP"/w*.out | grep -c "^e2e-tiny:$m  seed $s  attempt")
        expect_eq "$n" 1 "$m seed $s runs once over both processes"
    done
done
expect_eq "$(q "$db" "SELECT count(*), sum(status = 'done'), sum(attempt), max(seed),
                            count(DISTINCT experiment_id) FROM runs")" "12|12|12|5|2" "the runs"
expect_eq "$(q "$db" "SELECT count(*), status, seeds_used, round_size, max_seeds,
                            sweep_id IN (SELECT id FROM sweeps)
                     FROM sequential_batches")" "1|cap|6|3|6|1" "one batch row, capped"
expect_eq "$(q "$db" "SELECT group_concat(e.name || ':' || coalesce(m.decision, '-'), ' ')
                     FROM sequential_members m JOIN experiments e ON e.id = m.experiment_id")" \
    "e2e-tiny:augment.cutout=8:- e2e-tiny:augment.cutout=0:undecided" "the members, in sweep order"
expect_eq "$(q "$db" "SELECT group_concat(look || ':' || n || ':' || decision, ' ')
                     FROM sequential_looks")" "1:3:undecided 2:6:undecided" "the looks, once each"
# the members are the sweep's, in its order
expect_eq "$(q "$db" "SELECT group_concat(m.experiment_id = w.experiment_id, '')
                     FROM sequential_members m JOIN sequential_batches b ON b.id = m.batch_id
                     JOIN sweep_members w ON w.sweep_id = b.sweep_id AND w.position = m.position")" \
    "11" "the batch's members are its sweep's"
l1=$(grep -E '^(look|not decided)' "$TMP/w1.out")
l2=$(grep -E '^(look|not decided)' "$TMP/w2.out")
expect_eq "$(echo "$l1" | grep -c '^look')" 2 "two looks printed"
expect_eq "$l2" "$l1" "both processes print the same looks and outcome"
expect_grep '^not decided at the cap of 6 seeds: e2e-tiny:augment.cutout=0 vs e2e-tiny:augment.cutout=8: mean difference ' \
    "$TMP/w1.out" "the closing line"
integrity "$db"
finish
