-- dawnrun results store: migration from schema version 2 to version 3.
--
-- Frozen once released: never edit it (a database migrated by it must look the same as
-- one migrated by any later dawnrun). Run by results_open() inside the BEGIN IMMEDIATE
-- transaction that then sets user_version = 3. It must leave a database equivalent to
-- one created by schemas/results.sql version 3: the same columns, indexes and views
-- (tests/test_results_migrate.c compares them).
--
-- Version 3: the progress of a run, so that an attempt whose process vanished counts
-- against max_attempts only when it made no progress: runs.checkpoint_epoch (epochs in
-- the newest recorded checkpoint), runs.claim_progress (the progress point at the latest
-- claim), runs.stalls (attempts in a row that vanished without progress) and
-- runs.at_epoch / runs.at_step (where the latest attempt was last seen). An existing run
-- starts with no recorded checkpoint and no stalls.

ALTER TABLE runs ADD COLUMN checkpoint_epoch INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN claim_progress INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN stalls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN at_epoch INTEGER;
ALTER TABLE runs ADD COLUMN at_step INTEGER;
