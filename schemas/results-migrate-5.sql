-- dawnrun results store: migration from schema version 4 to version 5.
--
-- Frozen once released: never edit it (a database migrated by it must look the same as
-- one migrated by any later dawnrun). Run by results_open() inside the BEGIN IMMEDIATE
-- transaction that then sets user_version = 5. It must leave a database equivalent to
-- one created by schemas/results.sql version 5: the same columns, indexes and views
-- (tests/test_results_migrate.c compares them).
--
-- binomial_ci starts empty; results_open fills it for the finished counts already
-- recorded the first time a writing command opens the database.
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

DROP VIEW experiment_params;
DROP VIEW experiment_summary;

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

CREATE VIEW experiment_params AS
SELECT s.experiment_id, s.name, s.hash, s.engine, s.target, s.runs, s.done, s.finished,
       s.hits, s.median_acc, s.median_train_time, s.median_time_to_target, s.created,
       s.notes, s.hit_rate, s.hit_ci_lo, s.hit_ci_hi, p.key, p.value, p.type, p.num
FROM experiment_summary s JOIN params p ON p.experiment_id = s.experiment_id;
