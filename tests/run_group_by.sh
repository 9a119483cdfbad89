#!/bin/sh
# `report --group-by KEY`: one row per value of KEY, the runs of every selected experiment
# with that value pooled over the other swept key, each row saying how many experiments
# and runs went into it, in every format; a key the selection does not have is an error.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/group.db
"$DR" run "$TINY" $FAST --seeds 2 --sweep train.batch_size=128,256 --sweep augment.cutout=0,8 \
    --db "$db" >"$TMP/run.out" 2>&1
expect_eq "$?" 0 "exit code of the sweep"
"$DR" report --sweep last --group-by augment.cutout --format csv --db "$db" >"$TMP/g.csv" 2>&1
rc=$?
cat "$TMP/g.csv"
expect_eq "$rc" 0 "exit code of report --group-by"
expect_eq "$(head -1 "$TMP/g.csv" | cut -d, -f1-5)" "group_key,group_value,experiments,experiment_id,name" \
    "the grouped CSV's first columns"
expect_eq "$(tail -n +2 "$TMP/g.csv" | wc -l | tr -d ' ')" "2" "one row per value"
# column 12 (runs) and 13 (done) of the grouped CSV: 2 experiments x 2 seeds per row
for v in 0 8; do
    row=$(grep "^augment.cutout,$v," "$TMP/g.csv")
    expect_eq "$(echo "$row" | cut -d, -f3,5,9,10)" "2,augment.cutout=$v,4,4" \
        "cutout=$v: experiments, name, runs, done"
    # the pooled median: of the four final accuracies of the experiments with cutout = v
    want=$(q "$db" "SELECT avg(a) FROM (SELECT r.final_test_acc a FROM runs r JOIN experiments x
                    ON x.id = r.experiment_id WHERE x.name LIKE '%augment.cutout=$v'
                    ORDER BY a LIMIT 2 OFFSET 1)")
    col=$(head -1 "$TMP/g.csv" | tr ',' '\n' | grep -n '^acc_median$' | cut -d: -f1)
    got=$(echo "$row" | cut -d, -f"$col")
    awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; exit !(d < 1e-12 && d > -1e-12) }' ||
        fail "cutout=$v: pooled median $got, expected $want"
done
# the table says it too
"$DR" report --sweep last --group-by train.batch_size --db "$db" >"$TMP/g.txt" 2>&1
expect_eq "$?" 0 "exit code of the grouped table"
cat "$TMP/g.txt"
expect_grep ': 4 experiments in 2 groups by train.batch_size;' "$TMP/g.txt" "the table's header"
expect_grep '^experiments pooled +2 +2$' "$TMP/g.txt" "experiments per group"
expect_grep '^runs done / total +4/4 +4/4$' "$TMP/g.txt" "runs per group"
expect_grep '^train.batch_size=256: ' "$TMP/g.txt" "a group's sentence"
"$DR" report --sweep last --group-by train.batch_size --format json --db "$db" >"$TMP/g.json" 2>&1
expect_eq "$?" 0 "exit code of the grouped JSON"
expect_grep '"group_by": "train.batch_size"' "$TMP/g.json" "the JSON names the key"
expect_eq "$(grep -c '"experiments": 2' "$TMP/g.json")" "2" "the JSON's experiments per group"
"$DR" report --sweep last --group-by train.batch_size --format markdown --db "$db" >"$TMP/g.md" 2>&1
expect_grep '4 experiments in 2 groups by `train.batch_size`' "$TMP/g.md" "the Markdown says it"
# an unknown key
"$DR" report --sweep last --group-by augment.cutoff --db "$db" >"$TMP/bad.out" 2>&1
expect_eq "$?" 2 "exit code of an unknown --group-by key"
expect_grep 'group-by augment.cutoff: not a params key of the 4 selected experiments; the keys that differ between them: train.batch_size augment.cutout' \
    "$TMP/bad.out" "the unknown key is named, the differing ones suggested"
finish
