-- dawnrun results store, schema version 5.
--
-- Embedded at build time and executed by results_open() inside one BEGIN IMMEDIATE
-- transaction when a database has user_version 0 and no tables; an older database is
-- brought to this version by schemas/results-migrate-N.sql (run by results_open; versions
-- 1 to 4 are kept as tests/fixtures/schemas/results-v1.sql ... results-v4.sql).
-- Every timestamp is Unix seconds (REAL) read from the database's clock:
--     (julianday('now') - 2440587.5) * 86400.0
-- and every unknown number (not measured, not reached, NaN) is NULL.
-- docs/results.md describes the tables, the claiming protocol and example queries.

PRAGMA application_id = 1146244690;  -- 0x44524e52, "DRNR": a dawnrun results database

-- One row per distinct experiment: a fully resolved config (plus the engine and anything
-- else the caller folds into config_hash). Registering the same hash again is a no-op.
CREATE TABLE experiments (
    id              INTEGER PRIMARY KEY,
    name            TEXT NOT NULL,
    config_hash     TEXT NOT NULL UNIQUE,
    config_text     TEXT NOT NULL,
    dawnrun_version TEXT NOT NULL,
    git_rev         TEXT,
    engine          TEXT NOT NULL,
    device          TEXT,            -- device name at registration
    platform        TEXT,            -- driver / CUDA / cuDNN / library versions, free text
    host            TEXT,            -- host that registered it
    target_accuracy REAL,            -- the config's target (e.g. 0.94), NULL if none
    created_at      REAL NOT NULL,
    notes           TEXT             -- the user's own words about it (version 2), NULL if none
);
CREATE INDEX experiments_by_name ON experiments(name);

-- One row per (experiment, seed). The table is the work queue: a worker claims a row in
-- a BEGIN IMMEDIATE transaction, and every later write of that worker is fenced by
-- (status = 'running' AND attempt = the attempt it claimed).
CREATE TABLE runs (
    id              INTEGER PRIMARY KEY,
    experiment_id   INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    seed            INTEGER NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'running', 'done', 'failed',
                                      'diverged', 'interrupted')),
    attempt         INTEGER NOT NULL DEFAULT 0,   -- claims so far: the fencing token
    max_attempts    INTEGER NOT NULL DEFAULT 3 CHECK (max_attempts >= 1), -- stalls that fail it
    host            TEXT,            -- owner of the latest claim
    pid             INTEGER,
    device          TEXT,
    lease_expires   REAL,            -- owner's lease end (database clock); NULL = no lease
    heartbeat_at    REAL,
    created_at      REAL NOT NULL,
    started_at      REAL,            -- start of the latest attempt
    ended_at        REAL,
    final_test_acc  REAL,
    train_time      REAL,            -- seconds of training, evaluation excluded
    total_time      REAL,            -- wall seconds of the run, evaluation included
    target_time     REAL,            -- cumulative train time when the target was first reached
    target_epoch    INTEGER,         -- epoch at which it was first reached
    error           TEXT,            -- why the latest attempt failed / diverged / stopped
    -- Progress (version 3). The progress point of a run is the number of its latest
    -- recorded epoch plus checkpoint_epoch: it grows with every epoch committed and every
    -- checkpoint recorded. An attempt whose owner vanished counts as a stall only when the
    -- point did not grow between its claim and its reclaim; max_attempts stalls in a row
    -- fail the run.
    checkpoint_epoch INTEGER NOT NULL DEFAULT 0,  -- epochs in the newest recorded checkpoint
    claim_progress  INTEGER NOT NULL DEFAULT 0,   -- the progress point at the latest claim
    stalls          INTEGER NOT NULL DEFAULT 0,   -- attempts in a row that vanished without progress
    at_epoch        INTEGER,         -- where the latest attempt was last seen: epoch (1-based)
    at_step         INTEGER,         -- and step within it, from its heartbeats
    UNIQUE (experiment_id, seed)
);
CREATE INDEX runs_by_status ON runs(status, seed);

-- One row per finished epoch of a run, committed as the epoch ends. `attempt` is the
-- claim that wrote it; a row can only be replaced by the same or a newer attempt.
CREATE TABLE epochs (
    run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    epoch           INTEGER NOT NULL,
    attempt         INTEGER NOT NULL,
    lr              REAL,
    train_loss      REAL,
    train_acc       REAL,
    test_loss       REAL,
    test_acc        REAL,
    train_time      REAL,            -- seconds of training in this epoch
    test_time       REAL,            -- seconds of evaluation in this epoch
    total_time      REAL,            -- cumulative train + eval seconds since the run began
    recorded_at     REAL NOT NULL,
    PRIMARY KEY (run_id, epoch)
) WITHOUT ROWID;

-- Runs with their experiment's name and readable UTC timestamps.
CREATE VIEW run_summary AS
SELECT r.id AS run_id, e.id AS experiment_id, e.name AS experiment, r.seed, r.status,
       r.attempt, r.final_test_acc,
       CASE WHEN e.target_accuracy IS NULL OR r.final_test_acc IS NULL THEN NULL
            ELSE r.final_test_acc >= e.target_accuracy END AS hit,
       r.train_time, r.total_time, r.target_epoch, r.target_time,
       r.host, r.pid, r.device,
       datetime(r.started_at, 'unixepoch') AS started,
       datetime(r.ended_at, 'unixepoch') AS ended,
       r.error
FROM runs r JOIN experiments e ON e.id = r.experiment_id;

-- One line per experiment: how many runs, how many done, how many finished (done or
-- diverged: the runs with an outcome), how many done runs reached the target, the median
-- final accuracy, median train time and median time to the target of the done runs (the
-- median of an even count is the mean of the two middle values), and the notes. `hits`
-- out of `finished` is the report's "4/5 runs reach 94 %".
CREATE VIEW experiment_summary AS
WITH done AS (
    SELECT experiment_id, final_test_acc AS acc, train_time, target_time
    FROM runs WHERE status = 'done' AND final_test_acc IS NOT NULL
), acc_ranked AS (
    SELECT experiment_id, acc,
           row_number() OVER (PARTITION BY experiment_id ORDER BY acc) AS i,
           count(*) OVER (PARTITION BY experiment_id) AS n
    FROM done
), time_ranked AS (
    SELECT experiment_id, train_time,
           row_number() OVER (PARTITION BY experiment_id ORDER BY train_time) AS i,
           count(*) OVER (PARTITION BY experiment_id) AS n
    FROM done WHERE train_time IS NOT NULL
), ttt_ranked AS (
    SELECT experiment_id, target_time,
           row_number() OVER (PARTITION BY experiment_id ORDER BY target_time) AS i,
           count(*) OVER (PARTITION BY experiment_id) AS n
    FROM done WHERE target_time IS NOT NULL
), base AS (
    SELECT e.id AS experiment_id, e.name, substr(e.config_hash, 1, 12) AS hash, e.engine,
           e.target_accuracy AS target,
           (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id) AS runs,
           (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id
                                        AND r.status = 'done') AS done,
           (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id
                                        AND r.status IN ('done', 'diverged')) AS finished,
           (SELECT count(*) FROM runs r WHERE r.experiment_id = e.id AND r.status = 'done'
                                        AND r.final_test_acc >= e.target_accuracy) AS hits,
           (SELECT avg(acc) FROM acc_ranked a WHERE a.experiment_id = e.id
                          AND a.i IN ((a.n + 1) / 2, (a.n + 2) / 2)) AS median_acc,
           (SELECT avg(train_time) FROM time_ranked t WHERE t.experiment_id = e.id
                          AND t.i IN ((t.n + 1) / 2, (t.n + 2) / 2)) AS median_train_time,
           (SELECT avg(target_time) FROM ttt_ranked t WHERE t.experiment_id = e.id
                          AND t.i IN ((t.n + 1) / 2, (t.n + 2) / 2)) AS median_time_to_target,
           datetime(e.created_at, 'unixepoch') AS created,
           e.notes
    FROM experiments e
)
SELECT b.experiment_id, b.name, b.hash, b.engine, b.target, b.runs, b.done, b.finished,
       b.hits, b.median_acc, b.median_train_time, b.median_time_to_target, b.created,
       b.notes,
       CASE WHEN b.target IS NULL OR b.finished = 0 THEN NULL
            ELSE 1.0 * b.hits / b.finished END AS hit_rate,
       c.lo AS hit_ci_lo, c.hi AS hit_ci_hi
FROM base b LEFT JOIN binomial_ci c
     ON b.target IS NOT NULL AND c.n = b.finished AND c.k = b.hits;

-- Version 4: hyperparameters as data, and sweeps as records.
--
-- One row per leaf setting of an experiment's resolved config (config_text flattened by
-- the engine: dotted keys, a layer by its name, "model.layers.prep.out"; lists as one
-- value), written when the experiment is registered.
CREATE TABLE params (
    experiment_id   INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    key             TEXT NOT NULL,
    position        INTEGER NOT NULL,  -- the key's place in the resolved config (0, 1, ...)
    value           TEXT NOT NULL,   -- text: 0.2, true, reflect (strings bare), [0, 8, 30]
    type            TEXT NOT NULL CHECK (type IN ('int', 'float', 'bool', 'string', 'list')),
    num             REAL,            -- int, float and bool (0/1) as a number, else NULL
    PRIMARY KEY (experiment_id, key)
) WITHOUT ROWID;
CREATE INDEX params_by_key ON params(key, num, value);

-- The command-line overrides that produced an experiment when it was first registered
-- (every --set, then a sweep member's values), in the order applied.
CREATE TABLE overrides (
    experiment_id   INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,  -- 0, 1, ...
    text            TEXT NOT NULL,     -- "key.path=value" as given
    PRIMARY KEY (experiment_id, position)
) WITHOUT ROWID;

-- One row per `dawnrun run` that expanded a sweep (--sweep flags or a config's sweep
-- section).
CREATE TABLE sweeps (
    id              INTEGER PRIMARY KEY,
    created_at      REAL NOT NULL,
    command         TEXT NOT NULL,     -- the whole command line, shell-quoted
    host            TEXT
);

-- The axes of a sweep: one row per swept key with its values as given.
CREATE TABLE sweep_axes (
    sweep_id        INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    key             TEXT NOT NULL,     -- "train.lr"
    vals            TEXT NOT NULL,     -- "0.2,0.4" as given
    PRIMARY KEY (sweep_id, position)
) WITHOUT ROWID;

-- The grid of a sweep: one row per combination, the experiment it resolved to.
CREATE TABLE sweep_members (
    sweep_id        INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,  -- order of the grid
    experiment_id   INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    PRIMARY KEY (sweep_id, position)
) WITHOUT ROWID;
CREATE INDEX sweep_members_by_experiment ON sweep_members(experiment_id);

-- Experiments with their settings: one row per (experiment, param), the columns of
-- experiment_summary followed by the param's key, value, type and num, so that SQL can
-- select experiments by what they were run with:
--     SELECT name, hash, median_acc FROM experiment_params
--     WHERE key = 'train.lr_schedule.values' AND value = '(0.0, 0.4, 0.0)';
--     SELECT name, hash, done, median_acc FROM experiment_params
--     WHERE key = 'train.epochs' AND num = 2;
CREATE VIEW experiment_params AS
SELECT s.experiment_id, s.name, s.hash, s.engine, s.target, s.runs, s.done, s.finished,
       s.hits, s.median_acc, s.median_train_time, s.median_time_to_target, s.created,
       s.notes, s.hit_rate, s.hit_ci_lo, s.hit_ci_hi, p.key, p.value, p.type, p.num
FROM experiment_summary s JOIN params p ON p.experiment_id = s.experiment_id;

-- One row per experiment: its command-line overrides as one text, in the order applied,
-- separated by single spaces ("train.epochs=1 augment.cutout=0"); NULL when none were
-- recorded (none given, or registered before version 4).
CREATE VIEW experiment_overrides AS
SELECT e.id AS experiment_id, e.name, substr(e.config_hash, 1, 12) AS hash,
       (SELECT count(*) FROM overrides o WHERE o.experiment_id = e.id) AS n_overrides,
       (SELECT group_concat(text, ' ')
        FROM (SELECT text FROM overrides o WHERE o.experiment_id = e.id
              ORDER BY position)) AS overrides
FROM experiments e;

-- Version 5: hit rates with intervals, and batches run until a comparison is decided.
--
-- The exact (Clopper-Pearson) two-sided 95 % interval of a binomial proportion with k
-- successes in n trials, computed by results/stats.c (stats_binomial_ci). The writers fill
-- it for every n that a summary can show (every experiment's finished count) in the
-- transaction that changes that count, so experiment_summary can join it; a row is never
-- changed once written.
CREATE TABLE binomial_ci (
    n               INTEGER NOT NULL CHECK (n >= 1),
    k               INTEGER NOT NULL CHECK (k >= 0 AND k <= n),
    lo              REAL NOT NULL,
    hi              REAL NOT NULL,
    PRIMARY KEY (n, k)
) WITHOUT ROWID;

-- One row per batch run with `dawnrun run --until-decided`: the design and, once known,
-- the decision. Every run process of one command (same experiments in the same order,
-- same design) finds the same row by key.
CREATE TABLE sequential_batches (
    id              INTEGER PRIMARY KEY,
    key             TEXT NOT NULL UNIQUE,  -- sha256 of the design and the members' config hashes
    created_at      REAL NOT NULL,
    command         TEXT NOT NULL,         -- the first process's command line, shell-quoted
    host            TEXT,
    sweep_id        INTEGER REFERENCES sweeps(id) ON DELETE SET NULL,
    method          TEXT NOT NULL,         -- the sequential method, named in full
    metric          TEXT NOT NULL,         -- what is compared: 'final_test_acc'
    alpha           REAL NOT NULL,         -- error level of the whole batch
    delta           REAL NOT NULL,         -- equivalence margin, as an accuracy (0.001 = 0.1 pp)
    round_size      INTEGER NOT NULL,      -- seeds added to every experiment per round
    max_seeds       INTEGER NOT NULL,      -- cap on the seeds of each experiment
    status          TEXT NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running', 'decided', 'cap')),
    seeds_used      INTEGER,               -- seeds per experiment at the last look
    decided_at      REAL                   -- when status left 'running'
);

-- The experiments of a sequential batch; position 0 is the baseline, every other member
-- is compared with it. decision: the member's outcome so far (NULL for the baseline).
CREATE TABLE sequential_members (
    batch_id        INTEGER NOT NULL REFERENCES sequential_batches(id) ON DELETE CASCADE,
    position        INTEGER NOT NULL,
    experiment_id   INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
    decision        TEXT CHECK (decision IN ('different', 'equivalent', 'undecided')),
    PRIMARY KEY (batch_id, position)
) WITHOUT ROWID;
CREATE INDEX sequential_members_by_experiment ON sequential_members(experiment_id);

-- Every look of a sequential batch: after each round, one row per compared member.
CREATE TABLE sequential_looks (
    batch_id        INTEGER NOT NULL REFERENCES sequential_batches(id) ON DELETE CASCADE,
    look            INTEGER NOT NULL,      -- 1, 2, ...
    position        INTEGER NOT NULL,      -- the member compared with the baseline (>= 1)
    n               INTEGER NOT NULL,      -- seeds per experiment used by this look
    estimate        REAL,                  -- mean accuracy of the member minus the baseline's
    cs_lo           REAL,                  -- the confidence sequence for that difference
    cs_hi           REAL,                  --   at this look (NULL: not yet bounded)
    log_e           REAL,                  -- log of the e-value against "no difference"
    decision        TEXT NOT NULL CHECK (decision IN ('different', 'equivalent', 'undecided')),
    at              REAL NOT NULL,
    PRIMARY KEY (batch_id, look, position)
) WITHOUT ROWID;

PRAGMA user_version = 5;
