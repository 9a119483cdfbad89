# Sweeps of a network variable: the name of each experiment of the grid matches its
# resolved config, whichever spelling (model.vars.x or model_vars.x) the sweep and the
# --set flags use, and whether or not the experiment file overrides the variable with
# model_vars.
. "$(dirname "$0")/run_lib.sh"

cfg=$TMP/vars.cfg
# tiny.cfg with its first block's width as a variable, which the file overrides
sed -e 's/^model = {/model = {\n  vars = { w = 16; };/' -e 's/c = 16;/c = "$w";/' "$TINY" >"$cfg"
echo 'model_vars = { w = 8; };' >>"$cfg"
db=$TMP/vars.db
# the command line's --set comes first, the sweep's values after it: the sweep wins
"$DR" run "$cfg" $FAST --seeds 1 --set model_vars.w=20 --sweep model.vars.w=4,12 \
    --db "$db" >"$TMP/a.out" 2>&1
rc=$?
cat "$TMP/a.out"
expect_eq "$rc" 0 "exit code of the sweep"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments")" "2" "one experiment per value"
for w in 4 12; do
    expect_eq "$(q "$db" "SELECT count(*) FROM experiments WHERE name = 'e2e-tiny:model.vars.w=$w' AND config_text LIKE '%w = $w.0;%'")" \
        "1" "experiment model.vars.w=$w has w = $w"
done
# the other spelling names the same dimension and gives the same experiments
"$DR" run "$cfg" $FAST --seeds 1 --set model.vars.w=20 --sweep model_vars.w=4,12 \
    --db "$db" >"$TMP/b.out" 2>&1
expect_eq "$?" 0 "exit code of the sweep spelled model_vars"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments")" "2" "the same two experiments"
# both spellings in one sweep are one dimension: the later replaces the earlier
"$DR" run "$cfg" $FAST --seeds 1 --sweep model.vars.w=4,12 --sweep model_vars.w=12 \
    --db "$db" >"$TMP/c.out" 2>&1
expect_eq "$?" 0 "exit code of the sweep with both spellings"
expect_eq "$(q "$db" "SELECT count(*) FROM experiments")" "2" "no new experiment"
expect_grep 'e2e-tiny:model.vars.w=12' "$TMP/c.out" "the later dimension is the one run"
grep -q 'model.vars.w=4' "$TMP/c.out" && fail "the replaced dimension still names an experiment"
integrity "$db"
finish
