#!/bin/sh
# `dawnrun power` on a real database (two experiments of the tiny config, three seeds
# each): the pooled sd it prints is the one of the recorded accuracies, the seeds it asks
# for lie where the normal approximation puts them (the t-test needs a little more), fewer
# for a larger difference, the smallest detectable difference is the report's in every
# format (for the train time: that no difference is detectable with three runs a side),
# one experiment is compared with a twin, and bad flags are refused.
. "$(dirname "$0")/run_lib.sh"

db=$TMP/power.db
"$DR" run "$TINY" $FAST --seeds 3 --sweep train.batch_size=128,256 --db "$db" >"$TMP/run.out" 2>&1
expect_eq "$?" 0 "exit code of the run"
a=$(q "$db" "SELECT id FROM experiments ORDER BY id LIMIT 1")
b=$(q "$db" "SELECT id FROM experiments ORDER BY id LIMIT 1 OFFSET 1")

"$DR" power "$a" "$b" --db "$db" >"$TMP/p.txt" 2>&1
expect_eq "$?" 0 "exit code of power"
cat "$TMP/p.txt"
expect_grep '^done runs +3 +3$' "$TMP/p.txt" "done runs"
expect_grep '^compared with +\(the baseline\) +#1$' "$TMP/p.txt" "the baseline"
expect_grep '^Δ to detect: 0.10 pp in mean accuracy; .* \(5 % of #1.s median\)$' "$TMP/p.txt" \
    "the default differences"
expect_grep '^batch: [0-9]+ seeds per experiment give the comparison power 0.8' "$TMP/p.txt" \
    "the batch line"

# the pooled sd: sqrt of the mean of the two sample variances of the final accuracies
var() {
    q "$db" "SELECT (sum(final_test_acc * final_test_acc) - sum(final_test_acc) *
             sum(final_test_acc) / count(*)) / (count(*) - 1) FROM runs
             WHERE experiment_id = $1 AND status = 'done'"
}
sd_pp=$(awk -v x="$(var "$a")" -v y="$(var "$b")" 'BEGIN { printf "%.2f", 100 * sqrt((x + y) / 2) }')
expect_grep "^accuracy: pooled sd +- +$sd_pp pp$" "$TMP/p.txt" "the pooled accuracy sd"

# seeds for 0.1 pp: at least the normal approximation 2 (z(0.975) + z(0.8))^2 (sd / delta)^2,
# at most three more (the t quantiles' correction is about one seed)
seeds=$(sed -n 's/^  seeds each to detect Δ 0.10 pp *- *\([0-9]*\) (.*/\1/p' "$TMP/p.txt")
awk -v n="$seeds" -v x="$(var "$a")" -v y="$(var "$b")" 'BEGIN {
    n0 = 2 * (1.959963985 + 0.841621234)^2 * ((x + y) / 2) / 0.001^2
    exit !(n != "" && n >= n0 && n <= n0 + 3) }' ||
    fail "seeds for 0.1 pp: $seeds, expected just above the normal approximation"
"$DR" power "$a" "$b" --delta 2pp --db "$db" >"$TMP/p2.txt" 2>&1
expect_eq "$?" 0 "exit code of power --delta 2pp"
seeds2=$(sed -n 's/^  seeds each to detect Δ 2.00 pp *- *\([0-9]*\) (.*/\1/p' "$TMP/p2.txt")
[ -n "$seeds2" ] && [ -n "$seeds" ] && [ "$seeds2" -lt "$seeds" ] ||
    fail "a larger difference needs fewer seeds: $seeds2 for 2 pp, $seeds for 0.1 pp"
"$DR" power "$a" "$b" --delta 0.02 --db "$db" >"$TMP/p3.txt" 2>&1
expect_grep "^  seeds each to detect Δ 2.00 pp +- +$seeds2 " "$TMP/p3.txt" "0.02 is 2 pp"

# the train-time difference in seconds, and the Bonferroni line needs two comparisons
"$DR" power "$a" "$b" --delta-time 2s --alpha 0.1 --power 0.9 --db "$db" >"$TMP/p4.txt" 2>&1
expect_eq "$?" 0 "exit code of power --delta-time 2s"
expect_grep '^Δ to detect: 0.10 pp in mean accuracy; 2.00 s in median train time$' "$TMP/p4.txt" \
    "seconds"
expect_grep 'two-sided alpha 0.1, power 0.9$' "$TMP/p4.txt" "alpha and power"

# the detectable difference now is the report's, in every format
mde=$(sed -n 's/^  detectable now *- *\([0-9.]*\) pp (3, 3 seeds)$/\1/p' "$TMP/p.txt")
[ -n "$mde" ] || fail "no detectable accuracy difference for 3 and 3 seeds"
"$DR" report "$a" "$b" --format csv --db "$db" >"$TMP/r.csv" 2>&1
col=$(head -1 "$TMP/r.csv" | tr ',' '\n' | grep -n '^mde_acc$' | cut -d: -f1)
got=$(sed -n 3p "$TMP/r.csv" | cut -d, -f"$col")
expect_eq "$(awk -v v="$got" 'BEGIN { printf "%.2f", 100 * v }')" "$mde" "CSV mde_acc"
"$DR" report "$a" "$b" --db "$db" >"$TMP/r.txt" 2>&1
expect_grep "^  detectable \(α .05, power .8\) +- +$mde pp$" "$TMP/r.txt" "table"
"$DR" report "$a" "$b" --format markdown --db "$db" >"$TMP/r.md" 2>&1
expect_grep "^\|   detectable \(α .05, power .8\) \| - \| $mde pp \|" "$TMP/r.md" "Markdown"
"$DR" report "$a" "$b" --format json --db "$db" >"$TMP/r.json" 2>&1
expect_grep '"mde_acc": 0\.[0-9]+' "$TMP/r.json" "JSON"
# three train times a side: no outcome of the exact Mann-Whitney test the report prints
# gives p < 0.05 (its smallest is 0.1), so no detectable time difference is stated, in
# the report or in power, and both say how many runs a side it takes
expect_grep '"mde_train_time": null' "$TMP/r.json" "JSON time"
expect_grep '"mwu_min_seeds": 4' "$TMP/r.json" "JSON: the runs a side the rank test needs"
expect_grep '^  detectable \(α .05, power .8\) +- +not detectable with 3 and 3 runs \(4 a side can\)$' \
    "$TMP/r.txt" "the table's time"
expect_grep '^  detectable now +- +not detectable with 3 and 3 runs \(4 a side can\)$' \
    "$TMP/p.txt" "power's time"
expect_grep '^  p: Mann-Whitney  ' "$TMP/r.txt" "the median row's test"
expect_grep '^\(p-values compare each experiment with #1 on its own, without correction for multiplicity \(1 comparison\)\)$' \
    "$TMP/r.txt" "the multiplicity note"
"$DR" report "$a" "$b" --format html --db "$db" >"$TMP/r.html" 2>&1
expect_grep "detectable \(α .05, power .8\)</th><td>$mde pp</td>" "$TMP/r.html" "HTML"

# one experiment: against a twin of its own spread and seeds
"$DR" power "$a" --db "$db" >"$TMP/p1.txt" 2>&1
expect_eq "$?" 0 "exit code of power with one experiment"
expect_grep '^compared with +a twin: same sd, same seeds$' "$TMP/p1.txt" "the twin"
expect_grep 'seeds per experiment detect 0.10 pp in accuracy' "$TMP/p1.txt" "its sentence"

# the sequential design at the observed spread: two true differences, shares that add up
# to 1, mean seeds within the design, false "different" at Δ 0 within alpha (plus three
# standard errors of the 2000 simulated batches)
"$DR" power "$a" "$b" --round 5 --max-seeds 30 --db "$db" >"$TMP/ps.txt" 2>&1
expect_eq "$?" 0 "exit code of power --round --max-seeds"
expect_grep '^run --until-decided --round 5 --max-seeds 30 --alpha 0.05 --delta 0.001, ' \
    "$TMP/ps.txt" "the design's line"
expect_eq "$(grep -c '^    true Δ ' "$TMP/ps.txt")" 2 "two simulated differences"
grep '^    true Δ ' "$TMP/ps.txt" | awk '{
    gsub(/[,;]/, " "); n = split($0, w, " ")
    for (i = 1; i <= n; i++) {
        if (w[i] == "different") d = w[i + 1]; if (w[i] == "equivalent") e = w[i + 1]
        if (w[i] == "undecided") u = w[i + 1]; if (w[i] == "seeds") s = w[i + 1]
    }
    if (d + e + u < 0.9985 || d + e + u > 1.0015 || s < 5 || s > 30) bad = 1
    if (w[3] == "0" && d > 0.05 + 3 * sqrt(0.05 * 0.95 / 2000)) bad = 1
    rows++ } END { exit bad || rows != 2 }' ||
    fail "the simulated design's figures: $(grep '^    true' "$TMP/ps.txt")"
"$DR" power "$a" --round 5 --db "$db" >"$TMP/bad.txt" 2>&1
expect_eq "$?" 2 "exit code of --round without --max-seeds"
"$DR" power "$a" --round 5 --max-seeds 3 --db "$db" >"$TMP/bad.txt" 2>&1
expect_eq "$?" 2 "exit code of --max-seeds below one round"

# bad input
for bad in "--delta 5%" "--delta 3" "--delta-time 3x" "--alpha 0" "--power 1.2"; do
    # shellcheck disable=SC2086
    "$DR" power "$a" $bad --db "$db" >"$TMP/bad.txt" 2>&1
    expect_eq "$?" 2 "exit code of power $bad"
done
"$DR" power --db "$db" >"$TMP/bad.txt" 2>&1
expect_eq "$?" 2 "exit code of power without an experiment"
finish
