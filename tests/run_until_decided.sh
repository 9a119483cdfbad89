#!/bin/sh
# `dawnrun run A.cfg B.cfg --until-decided` on a clear difference (the tiny config, three
# epochs on 2,560 images, which reaches about 40 %, against the same network with a
# learning rate of 0, which never learns: 10 %): at alpha 0.3 the first look (12 seeds
# each) decides `different` (the betting confidence sequence needs the differences' size,
# not only their agreement: at alpha 0.05 this would take about 20 seeds); the batch, its
# members and its look are recorded; the report of every format shows the decision;
# running the same command again trains nothing and prints the decision; a merge copies
# the records. A batch stopped by SIGINT resumes when run again. Then the usage errors.
# The database path starts as an empty file, as another process's open leaves it for an
# instant before it writes the schema.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/decide.db
a=$TMP/a.cfg
b=$TMP/b.cfg
sed 's/epochs = 4;/epochs = 3;/; s/cutout = 8;/cutout = 0;/;
     s/test_subset = 1000;/test_subset = 500;/' "$TINY" >"$a"
sed 's/name = "e2e-tiny"/name = "tiny-lr0"/; s/values = (0.0, 0.4, 0.0)/values = (0.0, 0.0, 0.0)/;
     s/epochs = 4;/epochs = 1;/; s/train_subset = 2560;/train_subset = 128;/;
     s/test_subset = 1000;/test_subset = 500;/' "$TINY" >"$b"
grep -q 'epochs = 3;' "$a" && grep -q 'cutout = 0;' "$a" ||
    fail "the three-epoch config was not made"
grep -q 'values = (0.0, 0.0, 0.0)' "$b" && grep -q 'train_subset = 128;' "$b" ||
    fail "the lr-0 config was not made"
: >"$db"
DECIDE="--engine cpu --threads 1 --until-decided --alpha 0.3 --round 12 --max-seeds 24"

"$DR" run "$a" "$b" $DECIDE --db "$db" >"$TMP/run.out" 2>&1
rc=$?
grep -E '^(batch|until|look|decided|not decided)' "$TMP/run.out"
expect_eq "$rc" 0 "exit code"
expect_grep '^look 1 \(12 seeds each\): tiny-lr0 vs e2e-tiny: mean difference -[0-9.]+ pp, 70 % confidence sequence -[0-9.]+\.\.-[0-9.]+ pp: different$' \
    "$TMP/run.out" "the look line"
expect_grep '^decided after 12 seeds per experiment: tiny-lr0 vs e2e-tiny: mean difference .*: different$' \
    "$TMP/run.out" "the closing line"
expect_grep '^Sequential decision \(batch 1, baseline e2e-tiny\): decided after 12 seeds' \
    "$TMP/run.out" "the report at the end of the run"
expect_eq "$(grep -c '^look ' "$TMP/run.out")" 1 "one look"

# the runs: seeds 0..11 of each, once
expect_eq "$(q "$db" "SELECT count(*), sum(status = 'done'), sum(attempt), max(seed)
                     FROM runs")" "24|24|24|11" "the runs"
expect_eq "$(q "$db" "SELECT count(DISTINCT experiment_id) FROM runs")" 2 "two experiments"
# the records
expect_eq "$(q "$db" "SELECT count(*), status, seeds_used, round_size, max_seeds, alpha, delta,
                            metric, sweep_id IS NULL, decided_at >= created_at,
                            method LIKE 'betting confidence sequence for the mean difference%',
                            command LIKE '%--until-decided --alpha 0.3 --round 12 --max-seeds 24%'
                     FROM sequential_batches")" \
    "1|decided|12|12|24|0.3|0.001|final_test_acc|1|1|1|1" "the batch row"
expect_eq "$(q "$db" "SELECT group_concat(m.position || ':' || e.name || ':' || coalesce(m.decision, '-'), ' ')
                     FROM sequential_members m JOIN experiments e ON e.id = m.experiment_id")" \
    "0:e2e-tiny:- 1:tiny-lr0:different" "the members"
# the e-value at no difference reaches 1 / alpha (log(1 / 0.3) = 1.204)
expect_eq "$(q "$db" "SELECT look, position, n, decision, cs_hi < 0, cs_lo < estimate,
                            estimate < cs_hi, log_e >= ln(1 / 0.3), cs_lo >= -1
                     FROM sequential_looks")" "1|1|12|different|1|1|1|1|1" "the look"
# the look's estimate is the mean of the paired differences of the 12 runs of each
expect_eq "$(q "$db" "SELECT printf('%.9f', (SELECT estimate FROM sequential_looks))
                      = printf('%.9f', (SELECT avg(b.final_test_acc - a.final_test_acc)
                          FROM runs a JOIN runs b ON a.seed = b.seed
                          WHERE a.experiment_id = 1 AND b.experiment_id = 2))")" 1 \
    "the estimate is the mean difference"

# the report, every format
"$DR" report --db "$db" e2e-tiny tiny-lr0 >"$TMP/report.txt" || fail "report"
expect_grep '^  tiny-lr0 vs e2e-tiny: different, mean difference -[0-9.]+ pp, 70 % confidence sequence -[0-9.]+\.\.-[0-9.]+ pp \(12 seeds\)$' \
    "$TMP/report.txt" "the table report's decision"
expect_grep '^  method: betting confidence sequence for the mean difference \(bounded in \[-1, 1\], no distributional assumption' \
    "$TMP/report.txt" "the table report's method"
expect_grep '^  alpha 0.3, delta 0.10 pp, rounds of 12 seeds, cap 24$' "$TMP/report.txt" \
    "the table report's design"
"$DR" report --db "$db" tiny-lr0 --format markdown >"$TMP/report.md" || fail "markdown"
expect_grep '^### Sequential decision$' "$TMP/report.md" "the Markdown section"
expect_grep '^- tiny-lr0 vs e2e-tiny: \*\*different\*\*, mean difference' "$TMP/report.md" \
    "the Markdown line"
"$DR" report --db "$db" e2e-tiny tiny-lr0 --format csv >"$TMP/report.csv" || fail "csv"
expect_grep '^sequential_batch,status,seeds_used,' "$TMP/report.csv" "the CSV block's header"
expect_grep '^1,decided,12,24,12,0.3,0.001,".*",1,2,different,1,12,-' "$TMP/report.csv" \
    "the CSV block's row"
"$DR" report --db "$db" e2e-tiny tiny-lr0 --format json >"$TMP/report.json" || fail "json"
expect_grep '^  "decisions": \[$' "$TMP/report.json" "the JSON decisions"
expect_grep '"name": "tiny-lr0", "decision": "different", "look": 1, "n": 12' \
    "$TMP/report.json" "the JSON comparison"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/report.json" ||
        fail "the JSON report does not parse"
fi
"$DR" report --db "$db" e2e-tiny tiny-lr0 --format html >"$TMP/report.html" || fail "html"
expect_grep '<h2>Sequential decision</h2>' "$TMP/report.html" "the HTML section"
# an experiment of no sequential batch: no section
"$DR" run "$TINY" $FAST --seeds 1 --experiment alone --db "$db" >/dev/null 2>&1 || fail "plain run"
"$DR" report --db "$db" alone >"$TMP/alone.txt" || fail "report alone"
grep -q 'Sequential decision' "$TMP/alone.txt" && fail "a decision section without a batch"

# the same command again: nothing trained, the decision printed
"$DR" run "$a" "$b" $DECIDE --db "$db" >"$TMP/again.out" 2>&1
expect_eq "$?" 0 "exit code of the rerun"
cat "$TMP/again.out"
expect_grep '^sequential batch 1 ended before \(decided' "$TMP/again.out" "the rerun says so"
expect_eq "$(grep '^decided after' "$TMP/again.out")" "$(grep '^decided after' "$TMP/run.out")" \
    "the rerun prints the same decision"
expect_eq "$(q "$db" "SELECT count(*), sum(attempt) FROM runs WHERE experiment_id <= 2")" \
    "24|24" "the rerun trained nothing"
expect_eq "$(q "$db" "SELECT count(*) FROM sequential_looks")" 1 "the rerun looked at nothing"

# a merge copies the batch, its members and its look (once)
"$DR" merge "$TMP/merged.db" "$db" >/dev/null || fail "merge"
"$DR" merge "$TMP/merged.db" "$db" >/dev/null || fail "merge again"
expect_eq "$(q "$TMP/merged.db" "SELECT (SELECT count(*) || status || seeds_used FROM sequential_batches),
                                        (SELECT count(*) FROM sequential_members),
                                        (SELECT count(*) || decision FROM sequential_looks)")" \
    "1decided12|2|1different" "the merged records"
integrity "$db"
integrity "$TMP/merged.db"

# SIGINT after the first look (rounds of 2, cap 4): exit 130, the batch still running
# with its one look; the same command resumes it: every run done once, each look once
sdb=$TMP/signal.db
"$DR" run "$a" "$b" $FAST --until-decided --round 2 --max-seeds 4 --db "$sdb" \
    >"$TMP/signal.out" 2>&1 &
pid=$!
bg_pids="$bg_pids $pid"
i=0
until grep -q '^look 1 ' "$TMP/signal.out"; do
    i=$((i + 1))
    [ $i -gt 1200 ] && break
    sleep 0.1
done
kill -INT "$pid"
wait "$pid"
expect_eq "$?" 130 "exit code after SIGINT"
expect_eq "$(q "$sdb" "SELECT status, (SELECT count(*) FROM sequential_looks)
                      FROM sequential_batches")" "running|1" "the interrupted batch"
"$DR" run "$a" "$b" $FAST --until-decided --round 2 --max-seeds 4 --db "$sdb" \
    >"$TMP/resumed.out" 2>&1
expect_eq "$?" 0 "exit code of the resumed batch"
expect_eq "$(q "$sdb" "SELECT count(*), sum(status = 'done'), count(DISTINCT experiment_id || ':' || seed)
                      FROM runs")" "8|8|8" "the resumed batch's runs"
expect_eq "$(q "$sdb" "SELECT status, seeds_used, (SELECT group_concat(look || ':' || n, ' ')
                                                   FROM sequential_looks)
                      FROM sequential_batches")" "cap|4|1:2 2:4" "the resumed batch's record"
expect_eq "$(grep '^look 1 ' "$TMP/resumed.out")" "$(grep '^look 1 ' "$TMP/signal.out")" \
    "the resumed batch recomputes the same first look"
integrity "$sdb"

# usage errors: exit 2, nothing recorded
udb=$TMP/usage.db
usage() {
    what=$1
    shift
    "$DR" run "$@" --db "$udb" >"$TMP/usage.out" 2>&1
    rc=$?
    expect_eq "$rc" 2 "exit code of $what"
    [ -e "$udb" ] && fail "$what created the database"
    sed -n 1p "$TMP/usage.out"
}
usage "one experiment" "$a" $FAST --until-decided
usage "a bad --alpha" "$a" "$b" $FAST --until-decided --alpha 1.5
usage "a zero --alpha" "$a" "$b" $FAST --until-decided --alpha 0
usage "a bad --delta" "$a" "$b" $FAST --until-decided --delta 0.1percent
usage "a negative --delta" "$a" "$b" $FAST --until-decided --delta -0.1pp
usage "a --delta of 1" "$a" "$b" $FAST --until-decided --delta 1
usage "--max-seeds below --round" "$a" "$b" $FAST --until-decided --round 5 --max-seeds 4
usage "--seeds with --until-decided" "$a" "$b" $FAST --until-decided --seeds 3
usage "--alpha without --until-decided" "$a" "$b" $FAST --alpha 0.05
finish
