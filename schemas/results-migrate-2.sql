-- dawnrun results store: migration from schema version 1 to version 2.
--
-- Frozen once released: never edit it (a database migrated by it must look the same as
-- one migrated by any later dawnrun). Run by results_open() inside the BEGIN IMMEDIATE
-- transaction that then sets user_version = 2. It must leave a database equivalent to
-- one created by schemas/results.sql version 2: the same columns, indexes and views
-- (tests/test_results_migrate.c compares them).
--
-- Version 2: experiments.notes, the user's own words about an experiment; and
-- experiment_summary gains `finished` (done + diverged: hits out of finished is the
-- report's "4/5"), `median_time_to_target` and `notes`.

ALTER TABLE experiments ADD COLUMN notes TEXT;

DROP VIEW IF EXISTS experiment_summary;

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
)
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
FROM experiments e;
