#!/bin/sh
# configs/airbench94-muon.cfg end to end on the CPU, shrunk to a subset and narrow widths:
# Muon on the convolution filters and Nesterov SGD on the whitening bias (its own
# schedule, over the 3 epochs it trains), the batch-norm shifts and the head, in one
# run recorded in the database. The schedules' peaks follow the batch (the SGD groups' lr
# is value / batch times lr_scale) and their ends the shortened run.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/muon.db
"$DR" run "$SRC/configs/airbench94-muon.cfg" --engine cpu --threads 1 --seeds 1 --db "$db" \
    --set data.train_subset=1000 --set data.test_subset=200 \
    --set model.vars.width1=24 --set model.vars.width2=32 --set model.vars.width3=32 \
    --set train.batch_size=100 --set eval.batch_size=100 --set train.epochs=3 \
    --set 'train.lr_schedule.knots=[0.0, 3.0]' --set 'train.lr_schedule.values=(100.0, 0.0)' \
    --set 'train.groups.conv_weight.lr_schedule.knots=[0.0, 3.0]' \
    --set 'train.groups.whiten_bias.lr_schedule.values=(100.0, 0.0)' \
    >"$TMP/muon.out" 2>&1
rc=$?
cat "$TMP/muon.out"
expect_eq "$rc" 0 "exit code of the airbench94_muon recipe"
expect_grep '^ +3 +[0-9.]+ +[0-9.]+ ' "$TMP/muon.out" "third epoch row"
expect_eq "$(q "$db" "SELECT count(*) FROM runs WHERE status = 'done' AND final_test_acc > 0.25")" \
    "1" "the recipe learns (chance is 0.1)"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments WHERE config_text LIKE '%\"muon\"%'
                     AND config_text LIKE '%ns_steps = 3%'")" \
    "1" "the experiment's resolved config names Muon and its settings"
exit $status
