#!/bin/sh
# Sweeps as records: every `run` that expands a grid records one sweep (command line,
# host, axes, members in grid order), a re-launch records another with the same members;
# report, plot and export select a recorded sweep with --sweep last or --sweep ID; merge
# copies sweeps once; `dawnrun sweeps` lists them; and `report CONFIG` finds the members
# of a config's sweep that ran with other --set overrides by their names, or says how to
# select what is there.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/rec.db
"$DR" run "$TINY" $FAST --seeds 1 --sweep train.batch_size=128,256 --sweep 'augment.cutout=0, 8' \
    --db "$db" >"$TMP/a.out" 2>&1
rc=$?
cat "$TMP/a.out"
expect_eq "$rc" 0 "exit code of the sweep"
expect_grep '^sweep 1: 4 combinations recorded' "$TMP/a.out" "the run says which sweep it recorded"
expect_eq "$(q "$db" "SELECT count(*), host IS NOT NULL, created_at > 0 FROM sweeps")" "1|1|1" \
    "one sweep row with a host and a time"
expect_eq "$(q "$db" "SELECT command FROM sweeps")" \
    "dawnrun run $TINY $FAST --seeds 1 --sweep train.batch_size=128,256 --sweep 'augment.cutout=0, 8' --db $db" \
    "the command line, shell-quoted"
expect_eq "$(q "$db" "SELECT group_concat(key || '=' || vals, ' ') FROM (SELECT * FROM sweep_axes ORDER BY position)")" \
    "train.batch_size=128,256 augment.cutout=0,8" "the axes"
expect_eq "$(q "$db" "SELECT group_concat(x.name, ' ') FROM (SELECT * FROM sweep_members ORDER BY position) m
                     JOIN experiments x ON x.id = m.experiment_id")" \
    "e2e-tiny:train.batch_size=128,augment.cutout=0 e2e-tiny:train.batch_size=128,augment.cutout=8 e2e-tiny:train.batch_size=256,augment.cutout=0 e2e-tiny:train.batch_size=256,augment.cutout=8" \
    "the members in grid order"

# the same sweep again: a new record, the same experiments (nothing new to run)
"$DR" run "$TINY" $FAST --seeds 1 --sweep train.batch_size=128,256 --sweep 'augment.cutout=0, 8' \
    --db "$db" >"$TMP/b.out" 2>&1
expect_eq "$?" 0 "exit code of the re-launch"
expect_eq "$(q "$db" "SELECT count(*) FROM sweeps")" "2" "a re-launch is a new record"
expect_eq "$(q "$db" "SELECT count(*) FROM sweep_members a JOIN sweep_members b ON a.position = b.position
                     AND a.experiment_id = b.experiment_id WHERE a.sweep_id = 1 AND b.sweep_id = 2")" "4" \
    "its members are the same experiments"
# a smaller sweep is the newest one (cutout=0 at the default batch size of 128 is an
# experiment of the first grid)
"$DR" run "$TINY" $FAST --seeds 1 --sweep augment.cutout=0,4 --db "$db" >"$TMP/c.out" 2>&1
expect_eq "$?" 0 "exit code of the third sweep"
# a run without a sweep records none
"$DR" run "$TINY" $FAST --seeds 1 --db "$db" >/dev/null 2>&1 || fail "a run without a sweep"
expect_eq "$(q "$db" "SELECT count(*) FROM sweeps")" "3" "no sweep recorded without a sweep"

# --sweep last | ID selects the members
"$DR" report --sweep last --db "$db" --format csv >"$TMP/last.csv" 2>"$TMP/last.err"
expect_eq "$?" 0 "exit code of report --sweep last"
expect_eq "$(tail -n +2 "$TMP/last.csv" | cut -d, -f1 | tr '\n' ' ')" \
    "1 5 " "report --sweep last: the newest sweep's members"
"$DR" report --sweep 1 --db "$db" --format csv >"$TMP/one.csv" 2>&1
expect_eq "$?" 0 "exit code of report --sweep 1"
expect_eq "$(tail -n +2 "$TMP/one.csv" | wc -l | tr -d ' ')" "4" "report --sweep 1: four experiments"
expect_grep '^4,"e2e-tiny:train.batch_size=256,augment.cutout=8"' "$TMP/one.csv" "the last member of sweep 1"
"$DR" report --sweep=2 --db "$db" >"$TMP/two.out" 2>&1
expect_grep '^[^ ]*: 4 experiments;' "$TMP/two.out" "report --sweep=2"
"$DR" report --sweep 9 --db "$db" >"$TMP/nine.out" 2>&1
expect_eq "$?" 2 "exit code of an unknown sweep"
expect_grep 'no sweep 9 in .*dawnrun sweeps' "$TMP/nine.out" "an unknown sweep is named"
"$DR" plot --sweep last --db "$db" -o "$TMP/last.svg" >"$TMP/plot.out" 2>&1
expect_eq "$?" 0 "exit code of plot --sweep last"
expect_grep 'last.svg: 2 experiments' "$TMP/plot.out" "plot --sweep last draws its two members"
"$DR" export --sweep 1 --db "$db" --format csv --table runs -o "$TMP/runs.csv" >/dev/null 2>&1
expect_eq "$?" 0 "exit code of export --sweep 1"
expect_eq "$(tail -n +2 "$TMP/runs.csv" | wc -l | tr -d ' ')" "4" "export --sweep 1: the four members' runs"
"$DR" sweeps --db "$db" >"$TMP/list.out" 2>&1
expect_eq "$?" 0 "exit code of dawnrun sweeps"
cat "$TMP/list.out"
expect_grep '^3 .* 2 +2/2 +augment.cutout=0,4 +dawnrun run ' "$TMP/list.out" "the listing of sweep 3"

# merge copies the sweeps, their members mapped by config, once
out=$TMP/merged.db
"$DR" merge "$out" "$db" >/dev/null 2>&1 || fail "merge"
"$DR" merge "$out" "$db" >/dev/null 2>&1 || fail "merge again"
members="SELECT group_concat(s.command || '#' || m.position || '#' || x.name, '|') FROM sweeps s
         JOIN sweep_members m ON m.sweep_id = s.id JOIN experiments x ON x.id = m.experiment_id
         ORDER BY s.id, m.position"
expect_eq "$(q "$out" "SELECT count(*) FROM sweeps")" "3" "merged twice: three sweeps"
expect_eq "$(q "$out" "$members")" "$(q "$db" "$members")" "the merged sweeps have the same members"
expect_eq "$(q "$out" "SELECT group_concat(key || vals) FROM sweep_axes")" \
    "$(q "$db" "SELECT group_concat(key || vals) FROM sweep_axes")" "the merged axes"

# report CONFIG of a config whose sweep ran with other --set overrides: found by name
cfg=$TMP/r9.cfg
cp "$TINY" "$cfg"
echo 'sweep = ["train.batch_size=128,256"];' >>"$cfg"
db9=$TMP/r9.db
"$DR" run "$cfg" $FAST --seeds 1 --db "$db9" >/dev/null 2>&1 || fail "run of the config's sweep"
expect_eq "$(q "$db9" "SELECT count(*) FROM sweeps")" "1" "a config's sweep section is recorded"
"$DR" report "$cfg" --db "$db9" --format csv >"$TMP/r9.csv" 2>"$TMP/r9.err"
rc=$?
cat "$TMP/r9.err"
expect_eq "$rc" 0 "exit code of report CONFIG after a sweep with overrides"
expect_eq "$(tail -n +2 "$TMP/r9.csv" | cut -d, -f2 | tr '\n' ' ')" \
    "e2e-tiny:train.batch_size=128 e2e-tiny:train.batch_size=256 " "the members, by name"
expect_grep "taking the experiment named 'e2e-tiny:train.batch_size=128'" "$TMP/r9.err" \
    "the match by name is noted"
# none there: the message says how to select what is there, and suggests no new run
"$DR" report "$cfg" --db "$db" >"$TMP/none.out" 2>&1
expect_eq "$?" 2 "exit code of report CONFIG with no member in the database"
expect_grep 'none of its 2 sweep combinations is in .*--sweep last' "$TMP/none.out" \
    "the advice names --sweep last"
grep -q 'run them first' "$TMP/none.out" && fail "the advice suggests a new run"
integrity "$db"
integrity "$out"
finish
