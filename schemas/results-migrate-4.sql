-- dawnrun results store: migration from schema version 3 to version 4.
--
-- Frozen once released: never edit it (a database migrated by it must look the same as
-- one migrated by any later dawnrun). Run by results_open() inside the BEGIN IMMEDIATE
-- transaction that then sets user_version = 4. It must leave a database equivalent to
-- one created by schemas/results.sql version 4: the same columns, indexes and views
-- (tests/test_results_migrate.c compares them).
--
-- Existing experiments get their params from the runner (which can read a config_text)
-- the first time a writing command opens the database; overrides and sweeps recorded
-- before version 4 are unknown and stay empty.

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
       s.notes, p.key, p.value, p.type, p.num
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
