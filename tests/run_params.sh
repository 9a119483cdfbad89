#!/bin/sh
# Params and overrides written by `dawnrun run`: a sweep with a --set registers each
# experiment with its resolved config flattened into params and the overrides it was made
# with, in order (the --set flags, then the combination's values); running the batch again
# changes neither; an experiment whose params are missing (a database from before they
# were kept) gets them back when `run` or `merge` opens the file, the same rows as the
# others'; a version-3 database is read with its differing keys by `report` (read-only),
# then migrated and back-filled by `run`.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/params.db
batch() {
    "$DR" run "$TINY" $FAST --seeds 1 --set train.batch_size=256 --sweep augment.cutout=0,8 \
        --db "$1" >"$TMP/batch.out" 2>&1
}
batch "$db"
rc=$?
cat "$TMP/batch.out"
expect_eq "$rc" 0 "exit code of the batch"
n1=$(q "$db" "SELECT count(*) FROM params WHERE experiment_id = 1")
[ "$n1" -gt 40 ] || fail "experiment 1 has its params (got $n1 rows)"
expect_eq "$(q "$db" "SELECT count(*) FROM params WHERE experiment_id = 2")" "$n1" \
    "both experiments have the same keys"
expect_eq "$(q "$db" "SELECT value, type, num FROM params WHERE experiment_id = 2
                      AND key = 'augment.cutout'")" "8|int|8.0" "augment.cutout of #2"
expect_eq "$(q "$db" "SELECT experiment_id FROM experiment_params
                      WHERE key = 'train.batch_size' AND num = 256 AND value = '256'
                      ORDER BY 1")" "1
2" "the batch size of both, by number"
expect_eq "$(q "$db" "SELECT overrides FROM experiment_overrides WHERE experiment_id = 1")" \
    "train.epochs=1 data.train_subset=1280 data.test_subset=500 train.batch_size=256 augment.cutout=0" \
    "the overrides of #1, in the order applied"
expect_eq "$(q "$db" "SELECT position, text FROM overrides WHERE experiment_id = 2
                      ORDER BY position DESC LIMIT 1")" "4|augment.cutout=8" \
    "the last override of #2: its sweep value"

# the same batch again: nothing changes
before=$(q "$db" "SELECT count(*), sum(length(value)) FROM params")
batch "$db" || fail "the batch again"
expect_eq "$(q "$db" "SELECT count(*), sum(length(value)) FROM params")" "$before" \
    "params after the batch again"
expect_eq "$(q "$db" "SELECT count(*) FROM overrides")" "10" "overrides after the batch again"

# params missing: back-filled by run, and by merge
want=$(q "$db" "SELECT group_concat(key || '=' || value || ':' || type, ' ')
                FROM (SELECT * FROM params WHERE experiment_id = 2 ORDER BY key)")
q "$db" "DELETE FROM params WHERE experiment_id = 2"
expect_eq "$(q "$db" "SELECT count(*) FROM params WHERE experiment_id = 2")" "0" "deleted"
batch "$db" || fail "the batch after deleting params"
expect_eq "$(q "$db" "SELECT group_concat(key || '=' || value || ':' || type, ' ')
                      FROM (SELECT * FROM params WHERE experiment_id = 2 ORDER BY key)")" \
    "$want" "the params run back-filled"
cp "$db" "$TMP/in.db"
q "$TMP/in.db" "DELETE FROM params; DELETE FROM overrides" >/dev/null
"$DR" merge "$TMP/out.db" "$TMP/in.db" >/dev/null 2>&1 || fail "merge"
expect_eq "$(q "$TMP/out.db" "SELECT count(*) FROM params")" "$((2 * n1))" \
    "the params merge back-filled"
expect_eq "$(q "$TMP/out.db" "SELECT count(*) FROM overrides")" "0" \
    "no overrides are invented for an input that lost them"
"$DR" merge "$TMP/out.db" "$db" >/dev/null 2>&1 || fail "merge of the full file"
expect_eq "$(q "$TMP/out.db" "SELECT count(*) FROM overrides")" "10" \
    "the overrides merge copied to experiments that had none"

# a version-3 file: read as it is, then migrated and back-filled by run
old=$TMP/v3.db
cp "$db" "$old"
q "$old" "DROP VIEW experiment_params; DROP VIEW experiment_overrides; DROP TABLE params;
          DROP TABLE overrides; DROP TABLE sweep_members; DROP TABLE sweep_axes;
          DROP TABLE sweeps; DROP TABLE sequential_looks; DROP TABLE sequential_members;
          DROP TABLE sequential_batches; DROP VIEW experiment_summary; DROP TABLE binomial_ci;
          PRAGMA user_version = 3" >/dev/null
# ... with version 3's summary view, taken from the frozen version-3 schema
sqlite3 "$TMP/v3-schema.db" <"$SRC/tests/fixtures/schemas/results-v3.sql" >/dev/null
q "$old" "$(q "$TMP/v3-schema.db" "SELECT sql FROM sqlite_master WHERE name = 'experiment_summary'")" \
    >/dev/null
"$DR" report --db "$old" >"$TMP/old.out" 2>&1 || fail "report of a version-3 file"
cat "$TMP/old.out"
expect_grep '^augment\.cutout +0 +8' "$TMP/old.out" "the differing key of a version-3 file"
expect_eq "$(q "$old" "PRAGMA user_version")" "3" "report did not migrate"
"$DR" experiments --where augment.cutout=8 --db "$old" >"$TMP/old.out" 2>&1 ||
    fail "--where on a version-3 file"
expect_grep '^2 ' "$TMP/old.out" "--where on a version-3 file"
batch "$old" || fail "the batch on the version-3 file"
expect_eq "$(q "$old" "PRAGMA user_version")" "5" "run migrated the file"
expect_eq "$(q "$old" "SELECT count(*) FROM params")" "$((2 * n1))" "run back-filled the params"
integrity "$old"
exit $status
