/* The progress line of a training run on a terminal ("    3 [#####     ] 40/97"), drawn
 * on stdout and erased before anything else is printed: progress_install registers the
 * erasing with base/status.h, so that every message (dr_report, dr_eprintf) starts on
 * a clean line. */
#ifndef DAWNRUN_RUNNER_PROGRESS_H
#define DAWNRUN_RUNNER_PROGRESS_H

/* Makes progress_clear the message hook of base/status.h. Call once, at start-up. */
void progress_install(void);

/* Draws (replaces) the line for step `step` of `steps` in `epoch` on stdout; the last
 * step of an epoch erases it. The caller decides whether stdout is a terminal. */
void progress_draw(int epoch, int step, int steps);

/* Erases the line if one is drawn; harmless otherwise. Anything printed to stdout while
 * a line may be drawn (a table row, a status line) calls it first. */
void progress_clear(void);

#endif
