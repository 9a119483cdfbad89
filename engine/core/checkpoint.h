/* Checkpoints of a run in progress: everything a trainer needs to carry on after the last
 * finished epoch exactly as if it had never stopped (parameters, momentum, BN running
 * statistics, the global step), plus the run's progress (struct train_progress, train.h).
 * Tensors go through the backend's tensor_read / tensor_write in their canonical host
 * form, so one file format serves every engine. The format is described in docs/runner.md. */
#ifndef DAWNRUN_CHECKPOINT_H
#define DAWNRUN_CHECKPOINT_H

#include "train.h"

/* Writes t's state and p to `path` atomically: the bytes go to "path.tmp.PID", which is
 * fsync'd and renamed over path, and then the directory is fsync'd; a crash at any
 * instant leaves either the old file or the new one. The file records the seed, the
 * global step and the hash of t->e's resolved config. The directory must exist.
 * Returns DR_OK, DR_ERR_IO (message naming the file; the old checkpoint is left as it
 * was), DR_ERR_NOMEM or a backend error. */
int checkpoint_save(const char *path, const struct trainer *t, const struct train_progress *p);

/* Restores a checkpoint written by checkpoint_save into t (created by trainer_create for
 * the same experiment and seed) and fills p. *found = 0 (and DR_OK) when path does not
 * exist. The whole file is read and checked before anything is written into t: a file
 * that is truncated or damaged (checksum), written for another config (hash), another
 * seed or another network shape is refused with DR_ERR_DATA and a message naming the
 * file, and t is left untouched. Other results: DR_ERR_IO, DR_ERR_NOMEM, a backend error
 * (t may then be partly written). */
int checkpoint_load(struct trainer *t, struct train_progress *p, int *found, const char *path);

/* Deletes the checkpoint at path and any temporary files a killed writer left beside it
 * (path.tmp.PID). Returns DR_OK (also when there was nothing to delete) or DR_ERR_IO. */
int checkpoint_remove(const char *path);

/* Deletes only the temporary files other processes' writers left beside path (a writer
 * killed between creating path.tmp.PID and renaming it); path itself is kept. The caller
 * must own the run, so that no live writer's file is taken. Returns DR_OK or DR_ERR_IO. */
int checkpoint_remove_leftovers(const char *path);

#endif
