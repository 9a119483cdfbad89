#!/bin/sh
# `run --dry-run`: resolves configs, overrides and sweeps, lists the grid (name, hash,
# the differing values, seeds done / running / failed / to run) and trains nothing,
# writes nothing (the database's rows and bytes unchanged), creates no database; with
# several configs, --sweep and --seeds.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/dry.db
"$DR" run "$TINY" $FAST --seeds 1 --sweep train.batch_size=128,256 --db "$db" >/dev/null 2>&1 ||
    fail "the first batch"
sqlite3 "$db" 'PRAGMA wal_checkpoint(TRUNCATE)' >/dev/null
before=$(cksum <"$db")
dump=$(sqlite3 "$db" .dump)
"$DR" run "$TINY" $FAST --seeds 2 --sweep train.batch_size=128,256,512 --db "$db" --dry-run \
    >"$TMP/dry.out" 2>&1
rc=$?
cat "$TMP/dry.out"
expect_eq "$rc" 0 "exit code of the dry run"
expect_grep '^dry run: 3 experiments in .*dry.db; nothing is trained or written' "$TMP/dry.out" "the header"
hash=$(q "$db" "SELECT substr(config_hash, 1, 12) FROM experiments WHERE name = 'e2e-tiny:train.batch_size=256'")
expect_grep "^2 +e2e-tiny:train.batch_size=256 +$hash +train.batch_size=256 +2 +1 +0 +0 +1\$" \
    "$TMP/dry.out" "a member with one seed done and one to run"
expect_grep '^3 +e2e-tiny:train.batch_size=512 +[0-9a-f]{12} +train.batch_size=512 +2 +0 +0 +0 +2$' \
    "$TMP/dry.out" "a member not in the database"
expect_grep '^seeds: 2 done, 0 running elsewhere, 0 failed, 4 to run$' "$TMP/dry.out" "the totals"
grep -q 'seed 0  attempt' "$TMP/dry.out" && fail "the dry run trained"
expect_eq "$(cksum <"$db")" "$before" "the database file is unchanged, byte for byte"
expect_eq "$(sqlite3 "$db" .dump)" "$dump" "the database rows are unchanged"
[ -e "$db-checkpoints/.." ] && [ -n "$(ls "$db-checkpoints" 2>/dev/null)" ] &&
    fail "the dry run left checkpoints"

# two configs and --set, into a database that does not exist: nothing is created
cfg=$TMP/other.cfg
sed 's/^name = .*/name = "other";/' "$TINY" >"$cfg"
"$DR" run "$TINY" "$cfg" $FAST --seed-list 3,5 --set augment.cutout=4 --db "$TMP/none/x.db" \
    --dry-run >"$TMP/two.out" 2>&1
rc=$?
cat "$TMP/two.out"
expect_eq "$rc" 0 "exit code of the dry run of two configs"
expect_grep 'dry run: 2 experiments in .*x.db \(no such file yet\)' "$TMP/two.out" "two experiments, no database"
expect_grep '^2 +other +[0-9a-f]{12} +- +2 +0 +0 +0 +2$' "$TMP/two.out" "the second config, its seeds"
[ -e "$TMP/none" ] && fail "the dry run created the database directory"
# a bad config is still an error
"$DR" run "$TINY" $FAST --sweep train.batch_size=128,abc --db "$db" --dry-run >"$TMP/bad.out" 2>&1
expect_eq "$?" 3 "exit code of a dry run of a bad sweep"
finish
