# validate, train, run and bench read one computation of the run's plan: the steps and
# epochs validate prints are those train and run perform, the batch and the image counts
# are the same in validate, train and bench (fractional epochs, and a length that
# rounds to no step, which trains one), and a config train would refuse is refused by
# validate first, with the same exit code.
. "$(dirname "$0")/run_lib.sh"

for epochs in 0.01 2.5; do
    set -- $FAST --set train.epochs=$epochs
    "$DR" validate "$TINY" "$@" >"$TMP/v.out" 2>&1
    expect_eq "$?" 0 "validate with epochs $epochs"
    # "run  25 steps x 128 images: ... x 3 epochs)"
    v=$(sed -n 's/^run  *\([0-9]*\) steps x \([0-9]*\) images.* x \([0-9]*\) epochs.*/\1 \2 \3/p' "$TMP/v.out")
    "$DR" train "$TINY" "$@" >"$TMP/t.out" 2>&1
    expect_eq "$?" 0 "train with epochs $epochs"
    # "data DIR: 1280 train, 500 test images; 10 steps/epoch of 128; 3 epochs; ..."
    per=$(sed -n 's/.*; \([0-9]*\) steps\/epoch of \([0-9]*\); \([0-9]*\) epochs.*/\1/p' "$TMP/t.out")
    t=$(sed -n 's/.*; \([0-9]*\) steps\/epoch of \([0-9]*\); \([0-9]*\) epochs.*/\2 \3/p' "$TMP/t.out")
    rows=$(grep -cE '^ +[0-9]+ ' "$TMP/t.out")
    [ -n "$v" ] || fail "validate printed no run length (epochs $epochs)"
    set -- $v
    expect_eq "$2 $3" "$t" "batch and epochs of validate and train (epochs $epochs)"
    expect_eq "$rows" "$3" "epoch rows train printed (epochs $epochs)"
    # validate's "(500 test images x 3 epochs", train's "1280 train, 500 test images", and
    # bench's "batch 128, ..." and "projected run (1280 train / 500 test images, ...": one plan
    vtest=$(sed -n 's/.*evaluation (\([0-9]*\) test images x.*/\1/p' "$TMP/v.out")
    tcounts=$(sed -n 's/^data .*: \([0-9]*\) train, \([0-9]*\) test images;.*/\1 \2/p' "$TMP/t.out")
    "$DR" bench "$TINY" --engine cpu --set train.epochs=$epochs --set data.train_subset=1280 \
        --set data.test_subset=500 --steps 1 --warmup 0 >"$TMP/b.out" 2>&1
    expect_eq "$?" 0 "bench with epochs $epochs"
    bbatch=$(sed -n 's/^batch \([0-9]*\), .*/\1/p' "$TMP/b.out")
    bcounts=$(sed -n 's/^projected run (\([0-9]*\) train \/ \([0-9]*\) test images.*/\1 \2/p' "$TMP/b.out")
    expect_eq "$bbatch" "$2" "batch of bench and validate (epochs $epochs)"
    expect_eq "$bcounts" "$tcounts" "images of bench and train (epochs $epochs)"
    expect_eq "${tcounts#* }" "$vtest" "test images of train and validate (epochs $epochs)"
    case $epochs in
    0.01) expect_eq "$1" 1 "steps of a run shorter than half a step" ;;
    2.5) expect_eq "$1" $((per * 5 / 2)) "steps of 2.5 epochs" ;;
    esac
done
# a batch larger than the subset: refused by all three, with the same exit code
for cmd in validate train run; do
    db=""
    [ $cmd = run ] && db="--db $TMP/x.db"
    "$DR" $cmd "$TINY" $FAST --set train.batch_size=2000 $db >"$TMP/$cmd.out" 2>&1
    expect_eq "$?" 3 "$cmd with a batch larger than the subset"
    expect_grep "'train.batch_size' 2000 is larger than the 1280 training images" "$TMP/$cmd.out" \
        "$cmd names the batch and the subset"
done
[ -e "$TMP/x.db" ] && fail "the refused run created the database"
finish
