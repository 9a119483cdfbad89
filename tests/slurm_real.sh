#!/bin/bash
# scripts/slurm-array.sh on a real single-node Slurm: starts munged, slurmctld and slurmd
# on localhost (Debian's munge and slurm-wlm, no systemd: each daemon started directly,
# its key, state, spool, logs and config in a temporary folder, stopped by PID at the
# end, also when the test fails), submits a 3-seed array with `sbatch --array`, requeues
# one task mid-run with `scontrol requeue`, waits for the array, merges the task
# databases and checks them: every seed done exactly once, the requeued task resumed from
# its checkpoint (attempt 2, "resuming after epoch" in its output), no epoch recorded
# twice. On failure the daemons' logs and the tasks' output are printed.
#
#   bash tests/slurm_real.sh DAWNRUN SOURCE_DIR
#
# Exit 77 (skipped), saying why, when it cannot run here: not root (slurmd and munged
# need it), the daemons or the client commands missing (scripts/install-deps.sh installs
# them), no $DAWNRUN_DATA, no sqlite3 shell, or daemons that do not come up.
set -u

DR=$1
SRC=$2
case $DR in /*) ;; *) DR=$(pwd)/$DR ;; esac
case $SRC in /*) ;; *) SRC=$(pwd)/$SRC ;; esac
LIMIT=${SLURM_TEST_LIMIT:-300}   # seconds for the whole test, daemons started included

skip() {
    echo "skipped: $*"
    exit 77
}

[ -x "$DR" ] || { echo "no dawnrun executable at '$DR'" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "not root (slurmd and munged are started as root here)"
for cmd in munged slurmctld slurmd sbatch scontrol squeue scancel sinfo sqlite3 runuser; do
    command -v "$cmd" >/dev/null 2>&1 ||
        skip "$cmd not found (Debian packages munge, slurm-wlm, sqlite3: scripts/install-deps.sh)"
done
[ -d "${DAWNRUN_DATA:-/nonexistent}" ] || skip "DAWNRUN_DATA not set"
id munge >/dev/null 2>&1 || skip "no 'munge' user (the munge package creates it)"

ST=$(mktemp -d "${TMPDIR:-/tmp}/dawnrun-slurm.XXXXXX") || exit 1
chmod 755 "$ST"
status=0
up=0
pids=""
JOB=""
export SLURM_CONF=$ST/slurm.conf

show_logs() {
    for f in "$ST"/munge/munged.log "$ST"/slurmctld.log "$ST"/slurmd.log "$ST"/work/*.out; do
        [ -f "$f" ] || continue
        echo "==== $f (last 60 lines)"
        tail -n 60 "$f"
    done
}

stop_daemons() {
    if [ -n "$JOB" ] && [ $up -eq 1 ]; then
        scancel "$JOB" 2>/dev/null
        i=0
        while [ -n "$(squeue -h -j "$JOB" 2>/dev/null)" ] && [ $i -lt 30 ]; do
            sleep 0.5
            i=$((i + 1))
        done
    fi
    # any dawnrun a task left behind (recorded in the task databases)
    for db in "$ST"/out/seed-*.db; do
        [ -f "$db" ] || continue
        for p in $(sqlite3 "$db" "SELECT pid FROM runs WHERE status = 'running'" 2>/dev/null); do
            [ "$(cat "/proc/$p/comm" 2>/dev/null)" = dawnrun ] && kill -9 "$p" 2>/dev/null
        done
    done
    for p in $pids; do kill -TERM "$p" 2>/dev/null; done
    if [ -f "$ST/munge/munged.pid" ]; then kill -TERM "$(cat "$ST/munge/munged.pid")" 2>/dev/null; fi
    for p in $pids; do
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.25; i=$((i + 1)); done
        kill -KILL "$p" 2>/dev/null
    done
}

cleanup() {
    rc=$?
    stop_daemons
    [ $rc -ne 0 ] && [ $rc -ne 77 ] && show_logs
    rm -rf "$ST"
    exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

fail() {
    echo "FAIL: $*" >&2
    status=1
}

expect_eq() {
    [ "$1" = "$2" ] || fail "$3: got '$1', expected '$2'"
}

deadline=$(($(date +%s) + LIMIT))
# past_deadline WHAT: true (and a failure) once the test's time is spent
past_deadline() {
    if [ "$(date +%s)" -ge $deadline ]; then
        fail "time limit of $LIMIT s reached while waiting for $1"
        return 0
    fi
    return 1
}

# ---- munge: a fresh key, pid, log and seed files in $ST/munge, the socket in $ST/munge-run
mkdir -p "$ST/munge" "$ST/munge-run" "$ST/ctld" "$ST/spool" "$ST/work" "$ST/out"
chown munge:munge "$ST/munge" "$ST/munge-run"
chmod 700 "$ST/munge"
chmod 755 "$ST/munge-run"   # the socket's folder: every client must reach it
dd if=/dev/urandom of="$ST/munge/munge.key" bs=1024 count=1 2>/dev/null
chown munge:munge "$ST/munge/munge.key"
chmod 400 "$ST/munge/munge.key"
SOCK=$ST/munge-run/munge.socket.2
runuser -u munge -- munged --key-file="$ST/munge/munge.key" --socket="$SOCK" \
    --pid-file="$ST/munge/munged.pid" --log-file="$ST/munge/munged.log" \
    --seed-file="$ST/munge/munged.seed" >"$ST/munged.out" 2>&1
i=0
while [ ! -S "$SOCK" ] && [ $i -lt 40 ]; do sleep 0.25; i=$((i + 1)); done
if [ ! -S "$SOCK" ]; then
    cat "$ST/munged.out" "$ST/munge/munged.log" 2>/dev/null
    skip "munged did not start here (its output is above)"
fi

# ---- Slurm: one node on 127.0.0.1, no accounting, no cgroups
HOST=$(hostname -s)
CPUS=$(nproc)
PORT=$((20000 + $$ % 20000))
cat >"$SLURM_CONF" <<EOF
ClusterName=dawnrun-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$SOCK,cred_expire=5
StateSaveLocation=$ST/ctld
SlurmdSpoolDir=$ST/spool
SlurmctldPidFile=$ST/slurmctld.pid
SlurmdPidFile=$ST/slurmd.pid
SlurmctldLogFile=$ST/slurmctld.log
SlurmdLogFile=$ST/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=sched_interval=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
KillWait=30
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS State=UNKNOWN
PartitionName=test Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -f "$SLURM_CONF" >"$ST/slurmctld.out" 2>&1 &
pids="$pids $!"
slurmd -D -f "$SLURM_CONF" -N "$HOST" >"$ST/slurmd.out" 2>&1 &
pids="$pids $!"
up=1
i=0
state=""
while [ $i -lt 60 ]; do
    state=$(sinfo -h -N -o '%t' 2>/dev/null)
    [ "$state" = idle ] && break
    sleep 0.5
    i=$((i + 1))
done
if [ "$state" != idle ]; then
    cat "$ST/slurmctld.out" "$ST/slurmd.out"
    show_logs
    skip "the single-node Slurm did not come up here (node state '$state'; logs above)"
fi
echo "slurm: node $HOST idle ($CPUS CPUs), controller on 127.0.0.1:$PORT"

# ---- the recipe: a 3-seed array of a tiny config, one CPU per task
EPOCHS=4
OUT=$ST/out
export DAWNRUN="$DR" DAWNRUN_OUT="$OUT"
JOB=$(sbatch --parsable --array=0-2 --cpus-per-task=1 --gres=none --time=00:10:00 \
    --chdir="$ST/work" --output="$ST/work/slurm-%A_%a.out" \
    "$SRC/scripts/slurm-array.sh" "$SRC/tests/e2e/tiny.cfg" --engine cpu --threads 1 \
    --set train.epochs=$EPOCHS --set data.train_subset=2560 --set data.test_subset=500)
rc=$?
[ $rc -eq 0 ] && [ -n "$JOB" ] || { fail "sbatch exited $rc ('$JOB')"; exit 1; }
JOB=${JOB%%;*}
echo "slurm: submitted array job $JOB"

# requeue task 1 once it has recorded an epoch and written its checkpoint, before it ends
R=1
DB=$OUT/seed-$R.db
while :; do
    past_deadline "task $R's first checkpoint" && exit 1
    n=$(sqlite3 "$DB" "SELECT count(*) FROM epochs" 2>/dev/null)
    if [ "${n:-0}" -ge 1 ] && [ -n "$(ls "$DB-checkpoints" 2>/dev/null)" ]; then break; fi
    sleep 0.2
done
if [ "$(sqlite3 "$DB" "SELECT status FROM runs")" != running ]; then
    fail "task $R finished before it could be requeued (make its run longer)"
    exit 1
fi
echo "slurm: requeueing ${JOB}_$R after $n epoch(s)"
scontrol requeue "${JOB}_$R" || { fail "scontrol requeue ${JOB}_$R failed"; exit 1; }

# wait for the whole array (the requeued task starts again after a few seconds)
while [ -n "$(squeue -h -j "$JOB" 2>/dev/null)" ]; do
    past_deadline "the array to finish" && exit 1
    sleep 1
done

# ---- merge and check
MERGED=$OUT/merged.db
bash "$SRC/scripts/slurm-array.sh" merge "$OUT" >"$ST/merge.out" 2>&1
rc=$?
cat "$ST/merge.out"
expect_eq "$rc" 0 "exit code of merge"
expect_eq "$(sqlite3 "$MERGED" "SELECT group_concat(seed || ':' || status, ' ') FROM
                                (SELECT * FROM runs ORDER BY seed)")" "0:done 1:done 2:done" \
    "every seed done, once"
expect_eq "$(sqlite3 "$MERGED" "SELECT group_concat(seed || ':' || attempt, ' ') FROM
                                (SELECT * FROM runs ORDER BY seed)")" "0:1 1:2 2:1" \
    "only the requeued task ran twice"
expect_eq "$(sqlite3 "$MERGED" "SELECT count(*) FROM epochs")" "$((3 * EPOCHS))" \
    "epochs recorded, each once"
expect_eq "$(sqlite3 "$MERGED" "SELECT count(*) FROM (SELECT DISTINCT run_id, epoch FROM epochs)")" \
    "$((3 * EPOCHS))" "no epoch recorded twice"
grep -Eq '^runs done / total +3/3$' "$ST/merge.out" ||
    fail "the report after the merge does not show 3/3 runs done"
TASK_OUT=$ST/work/slurm-${JOB}_$R.out
grep -Eq '^resuming after epoch [1-9][0-9]* from ' "$TASK_OUT" ||
    fail "the requeued task did not resume from its checkpoint (no 'resuming after epoch' in its output)"
expect_eq "$(grep -c '^slurm-array: task 1 ' "$TASK_OUT")" 2 "task $R started twice"
for s in 0 2; do
    grep -q '^resuming after' "$ST/work/slurm-${JOB}_$s.out" && fail "task $s resumed (it was never requeued)"
done
expect_eq "$(sqlite3 "$MERGED" 'PRAGMA integrity_check')" ok "integrity of the merged database"

if [ $status -eq 0 ]; then echo "ok"; else echo "FAILED" >&2; fi
exit $status
