#!/bin/sh
# Sweeps and experiment identity: two --sweep flags make a grid of four experiments, each
# named after its combination and each with the same seeds, compared side by side in the
# report; a config with the same grid in its `sweep` section means the same four
# experiments (nothing new runs); an edited config is a new experiment, unless
# --experiment NAME makes the name its identity.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/sweep.db
"$DR" run "$TINY" $FAST --seeds 1 --sweep train.batch_size=128,256 --sweep augment.cutout=0,8 \
    --db "$db" >"$TMP/sweep.out" 2>&1
rc=$?
cat "$TMP/sweep.out"
expect_eq "$rc" 0 "exit code of the sweep"
expect_eq "$(q "$db" "SELECT group_concat(name, ' ') FROM (SELECT name FROM experiments ORDER BY id)")" \
    "e2e-tiny:train.batch_size=128,augment.cutout=0 e2e-tiny:train.batch_size=128,augment.cutout=8 e2e-tiny:train.batch_size=256,augment.cutout=0 e2e-tiny:train.batch_size=256,augment.cutout=8" \
    "the four experiments of the grid"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments WHERE config_text LIKE '%batch_size = 256;%'
                     AND config_text LIKE '%cutout = 8;%'")" "1" "a combination's values in its config"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments WHERE config_text LIKE '%sweep%'")" "0" \
    "no sweep in an experiment's config"
expect_eq "$(q "$db" "SELECT count(*), sum(status = 'done'), count(DISTINCT seed) FROM runs")" \
    "4|4|1" "one run per experiment, all with seed 0"
expect_grep '#4 e2e-tiny:train.batch_size=256,augment.cutout=8' "$TMP/sweep.out" \
    "the report shows the four side by side"

# the same grid from the config's own sweep section: the same experiments
cfg=$TMP/sweep.cfg
cp "$TINY" "$cfg"
echo 'sweep = ["train.batch_size=128,256", "augment.cutout = 0, 8"];' >>"$cfg"
"$DR" validate "$cfg" >/dev/null 2>&1 || fail "validate accepts a config with a sweep section"
"$DR" run "$cfg" $FAST --seeds 1 --db "$db" >"$TMP/section.out" 2>&1
rc=$?
cat "$TMP/section.out"
expect_eq "$rc" 0 "exit code of the config's sweep"
expect_grep '4 experiments, 4 runs in .*: 4 finished, 0 failed, 0 to run' "$TMP/section.out" \
    "the config's sweep is the same grid"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments")" "4" "experiments after the config's sweep"
# a --sweep of the same key replaces the section's values: one new experiment per cutout
"$DR" run "$cfg" $FAST --seeds 1 --db "$db" --sweep train.batch_size=64 >"$TMP/over.out" 2>&1
expect_eq "$?" 0 "exit code of the overridden sweep"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments WHERE name LIKE '%batch_size=64,%'")" "2" \
    "--sweep overrides the section's dimension"

# bad sweeps are usage or config errors, and register nothing
"$DR" run "$TINY" $FAST --sweep train.batch_size --db "$TMP/bad.db" >"$TMP/bad1.out" 2>&1
expect_eq "$?" 2 "exit code of --sweep without values"
"$DR" run "$TINY" $FAST --sweep 'train.lr_schedule.knots=[0,1' --db "$TMP/bad.db" >"$TMP/bad2.out" 2>&1
expect_eq "$?" 2 "exit code of unbalanced brackets"
"$DR" run "$TINY" $FAST --sweep train.batch_size=128,abc --db "$TMP/bad.db" >"$TMP/bad3.out" 2>&1
expect_eq "$?" 3 "exit code of a bad value"
expect_grep 'sweep combination train.batch_size=abc' "$TMP/bad3.out" "the bad combination is named"
[ -e "$TMP/bad.db" ] && fail "a bad sweep created the database"

# identity: an edited config is a new experiment...
db=$TMP/ident.db
"$DR" run "$TINY" $FAST --seeds 1 --db "$db" >/dev/null 2>&1 || fail "first run"
"$DR" run "$TINY" $FAST --seeds 1 --db "$db" --set target_accuracy=0.5 >/dev/null 2>&1 ||
    fail "edited run"
expect_eq "$(q "$db" "SELECT count(*), count(DISTINCT config_hash) FROM experiments")" "2|2" \
    "an edited config is a new experiment"
# ...unless --experiment NAME keeps the name as the identity (and says the config changed)
"$DR" run "$TINY" $FAST --seeds 1 --db "$db" --experiment base >"$TMP/n1.out" 2>&1 ||
    fail "named run"
"$DR" run "$TINY" $FAST --seeds 2 --db "$db" --experiment base --set target_accuracy=0.5 \
    >"$TMP/n2.out" 2>&1
rc=$?
cat "$TMP/n2.out"
expect_eq "$rc" 0 "exit code of the edited named run"
expect_grep "warning: experiment 'base' was registered with another config" "$TMP/n2.out" \
    "the edit is reported"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments WHERE name = 'base'")" "1" \
    "one experiment named base"
expect_eq "$(q "$db" "SELECT group_concat(r.seed || ':' || r.status || ':' || r.attempt, ' ')
                     FROM runs r JOIN experiments x ON x.id = r.experiment_id
                     WHERE x.name = 'base'")" "0:done:1 1:done:1" \
    "the named experiment keeps its done run and gains the new seed"
"$DR" run "$TINY" "$TINY" --experiment base --db "$db" >/dev/null 2>&1
expect_eq "$?" 2 "--experiment with two configs"
# the same experiment on another engine is refused
"$DR" run "$TINY" $FAST --seeds 1 --db "$db" --experiment base --engine cuda >"$TMP/eng.out" 2>&1
rc=$?
if [ "$rc" -ne 6 ]; then   # a machine with a GPU: the engine check must refuse it
    expect_eq "$rc" 2 "exit code for an experiment of another engine"
    expect_grep 'registered for the cpu engine' "$TMP/eng.out" "the engine mix is refused"
fi
integrity "$db"
finish
