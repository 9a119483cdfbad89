#!/bin/sh
# The shipped speed-training recipes end to end on the CPU, shrunk to a small subset and
# narrow widths: configs/page-final-10ep.cfg (whitening, ghost batch norm, CELU, EMA,
# flip TTA, parameter groups) and configs/airbench94.cfg (2x2 whitening with a bias
# trained for its first epoch here, dirac init, Lookahead, alternating flips, 6-view TTA),
# each recorded in the database and reported; then a trick switched on and off in one
# batch (--sweep train.average.kind), two experiments side by side.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/recipes.db
SMALL="--engine cpu --threads 1 --set data.train_subset=2048 --set data.test_subset=500"

"$DR" run "$SRC/configs/page-final-10ep.cfg" $SMALL --seeds 1 --db "$db" \
    --set model.vars.width=16 --set model.vars.bn_splits=4 --set train.batch_size=128 \
    --set train.epochs=2 --set 'train.lr_schedule.knots=[0.0, 0.5, 1.5]' \
    --set train.average.momentum=0.9 \
    >"$TMP/page.out" 2>&1
rc=$?
cat "$TMP/page.out"
expect_eq "$rc" 0 "exit code of the Page recipe"
expect_grep '^ +2 +0\.[0-9]+ ' "$TMP/page.out" "second epoch row of the Page recipe"

"$DR" run "$SRC/configs/airbench94.cfg" $SMALL --seeds 1 --db "$db" \
    --set model.vars.width1=32 --set model.vars.width2=32 --set model.vars.width3=32 \
    --set train.batch_size=128 --set train.epochs=1.9 \
    --set 'train.lr_schedule.knots=[0.0, 0.44, 1.9]' \
    >"$TMP/air.out" 2>&1
rc=$?
cat "$TMP/air.out"
expect_eq "$rc" 0 "exit code of the airbench recipe"
# 1.9 epochs of 16 steps: 30 steps, the second epoch is 14 of them
expect_grep '^ +2 +0\.[0-9]+ ' "$TMP/air.out" "second (partial) epoch row of airbench"
expect_grep "^dawnrun: note: layer 'whiten' computes its whitening from the 2048 training images there are \\(images = 5000\\)" \
    "$TMP/air.out" "the run says that the whitening uses fewer images than configured"

expect_eq "$(q "$db" "SELECT count(*), sum(status = 'done') FROM runs")" "2|2" "both runs done"
expect_eq "$(q "$db" "SELECT count(*) FROM runs WHERE final_test_acc > 0.2")" "2" \
    "both recipes learn (chance is 0.1)"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments WHERE config_text LIKE '%lookahead%'
                     AND config_text LIKE '%flip_translate%' AND config_text LIKE '%whiten%'")" \
    "1" "the airbench experiment's resolved config names its options"

# a trick on and off: two experiments of one seed each, compared in one report
"$DR" run "$SRC/configs/page-final-10ep.cfg" $SMALL --seeds 1 --db "$TMP/sweep.db" \
    --set model.vars.width=8 --set model.vars.bn_splits=2 --set train.batch_size=128 \
    --set train.epochs=1 --sweep 'train.average.kind="none","ema"' >"$TMP/sweep.out" 2>&1
rc=$?
cat "$TMP/sweep.out"
expect_eq "$rc" 0 "exit code of the on/off sweep"
expect_eq "$(q "$TMP/sweep.db" "SELECT group_concat(name, ' ') FROM (SELECT name FROM experiments ORDER BY id)")" \
    'page-final-10ep:train.average.kind="none" page-final-10ep:train.average.kind="ema"' \
    "the two experiments of the sweep"
expect_eq "$(q "$TMP/sweep.db" "SELECT count(DISTINCT test_loss) FROM epochs")" "2" \
    "averaging changes the evaluated model"
exit $status
