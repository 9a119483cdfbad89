#!/usr/bin/env bash
# The airbench94_muon recipe side by side: dawnrun (configs/airbench94-muon.cfg on the CPU
# engine) and the independent PyTorch implementation bench/airbench94_muon.py, both on the
# same scaled-down recipe (narrower widths, a training subset, fewer epochs, a smaller
# batch, the same per-step learning rates), the same data and the same number of seeds,
# one thread each, one after the other. Prints each run's test accuracy and both medians.
#
#   bench/airbench94_muon_compare.sh [--build DIR] [--python PY] [--seeds N]
#       [--widths A,B,C] [--epochs E] [--batch B] [--train N] [--test N]
# Defaults: build, python3, 5 seeds, widths 32,64,64, 4 epochs, batch 500, the first 5000
# training and 2000 test images of $DAWNRUN_DATA. PY must import torch (CPU is enough).
# The dawnrun runs go to a scratch database, removed at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build" PY=python3 SEEDS=5 WIDTHS=32,64,64 EPOCHS=4 BATCH=500 TRAIN=5000 TEST=2000
while [ $# -gt 0 ]; do
    case "$1" in
        --build) BUILD="$2"; shift 2 ;;
        --python) PY="$2"; shift 2 ;;
        --seeds) SEEDS="$2"; shift 2 ;;
        --widths) WIDTHS="$2"; shift 2 ;;
        --epochs) EPOCHS="$2"; shift 2 ;;
        --batch) BATCH="$2"; shift 2 ;;
        --train) TRAIN="$2"; shift 2 ;;
        --test) TEST="$2"; shift 2 ;;
        *) echo "usage: $0 [--build DIR] [--python PY] [--seeds N] [--widths A,B,C]" \
                "[--epochs E] [--batch B] [--train N] [--test N]" >&2; exit 2 ;;
    esac
done
: "${DAWNRUN_DATA:?set DAWNRUN_DATA to the directory of the CIFAR-10 binary batches}"
IFS=, read -r W1 W2 W3 <<<"$WIDTHS"
DB="$(mktemp -d)/compare.db"
trap 'rm -rf "$(dirname "$DB")"' EXIT

echo "== dawnrun (CPU engine, 1 thread): widths $WIDTHS, $EPOCHS epochs, batch $BATCH," \
     "$TRAIN training and $TEST test images, $SEEDS seeds"
# The schedules' peaks follow the batch (an SGD group's lr is value / batch times its
# lr_scale, so a peak of B gives the published per-step rates) and their ends the run.
"$BUILD/dawnrun" run "$ROOT/configs/airbench94-muon.cfg" --engine cpu --threads 1 \
    --seeds "$SEEDS" --db "$DB" \
    --set data.train_subset="$TRAIN" --set data.test_subset="$TEST" \
    --set model.vars.width1="$W1" --set model.vars.width2="$W2" \
    --set model.vars.width3="$W3" \
    --set train.batch_size="$BATCH" --set eval.batch_size="$BATCH" \
    --set train.epochs="$EPOCHS" \
    --set "train.lr_schedule.knots=[0.0, $EPOCHS.0]" \
    --set "train.lr_schedule.values=($BATCH.0, 0.0)" \
    --set "train.groups.conv_weight.lr_schedule.knots=[0.0, $EPOCHS.0]" \
    --set "train.groups.whiten_bias.lr_schedule.values=($BATCH.0, 0.0)" >/dev/null
sqlite3 "$DB" "SELECT printf('seed %d: test accuracy %.2f %%', seed, 100 * final_test_acc)
               FROM runs WHERE status = 'done' ORDER BY seed"
"$BUILD/dawnrun" report --db "$DB" | grep -E 'median|min, max' || true

echo "== PyTorch (bench/airbench94_muon.py, 1 thread), the same recipe"
"$PY" "$ROOT/bench/airbench94_muon.py" --data "$DAWNRUN_DATA" --widths "$WIDTHS" \
    --epochs "$EPOCHS" --batch "$BATCH" --train-subset "$TRAIN" --test-subset "$TEST" \
    --seeds "$SEEDS" --threads 1 2>&1 | grep -E '^(seed|median)'
