/* The progress line of a training run on a terminal, drawn on stdout and erased before
 * anything else is printed:
 *
 *     3 [######              ] 40/97  2345 img/s  epoch ETA 0:12  run ETA 1:30  loss 1.2345 (epoch 2)
 *
 * epoch, a bar and step/steps of the epoch; images per second over the epoch's steps so
 * far; the estimated time left in the epoch's training and in the whole run; and the
 * latest known training loss. The engine sums the loss on the device and reads it once,
 * at the epoch's end (no device->host copy per step), so the loss shown is the mean train
 * loss of the latest finished epoch, named after it ("-" during the first epoch). Rates
 * and estimates are the host's clock between steps: on the CUDA engine, which queues a
 * step and returns, they count queued steps, which may run ahead of the device.
 * progress_install registers the erasing with base/status.h, so that every message
 * (dr_report, dr_eprintf) starts on a clean line. */
#ifndef DAWNRUN_RUNNER_PROGRESS_H
#define DAWNRUN_RUNNER_PROGRESS_H

/* Makes progress_clear the message hook of base/status.h. Call once, at start-up. */
void progress_install(void);

/* Starts the line's accounting for a run of `epochs` epochs of `batch` images per step
 * (a resumed run included): no loss known yet, no timings. Call before its first step. */
void progress_run_begin(int epochs, int batch);

/* Draws (replaces) the line for step `step` (1-based) of `steps` in `epoch` (1-based) on
 * stdout; the last step of an epoch erases it. The caller decides whether stdout is a
 * terminal. The rates and estimates come from the times of these calls. */
void progress_draw(int epoch, int step, int steps);

/* Records the mean train loss of the finished epoch `epoch` (1-based) for the lines
 * drawn after it. Draws nothing. */
void progress_epoch_end(int epoch, double train_loss);

/* Erases the line if one is drawn; harmless otherwise. Anything printed to stdout while
 * a line may be drawn (a table row, a status line) calls it first. */
void progress_clear(void);

#endif
