/* What the first use of an engine costs, as the one line `dawnrun bench`, `run` and
 * `train` print on the CUDA engine: the fused convolution graphs built, refused and not
 * asked for (the support table refuses them), the
 * seconds spent building them (where cuDNN compiles) and searching convolution
 * algorithms (kernels/counters.h). Every line starts with FIRST_USE_PREFIX, so that a
 * script finds it with one grep.
 *
 * Everything here is async-signal-safe (no stdio, no locale, no allocation; numbers are
 * formatted by hand), so that bench's watching thread builds its stop line with it while
 * the main thread may hold stdio's locks. Each
 * function appends to buf, a NUL-terminated string in cap bytes (cap > 0), cutting what
 * does not fit, and returns the string's new length. */
#ifndef DAWNRUN_FIRST_USE_H
#define DAWNRUN_FIRST_USE_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/backend.h"
#include "kernels/counters.h"

#define FIRST_USE_PREFIX "first use: "

/* Appends text. */
size_t first_use_cat(char *buf, size_t cap, const char *text);

/* Appends v in decimal. */
size_t first_use_cat_u64(char *buf, size_t cap, uint64_t v);

/* Appends v (0 or more; negative and non-finite values print as 0) with `decimals`
 * decimals (0 to 6), rounded half up. */
size_t first_use_cat_fixed(char *buf, size_t cap, double v, int decimals);

/* Appends the line's first part, no newline: "first use: 12 fused graphs built, 3
 * refused, 9 not asked (support table), 18.2 s building fused graphs, 4.1 s searching
 * convolution algorithms (36 searches)", from d (counts since the engine was created, or
 * the difference of two readings). Callers append what they timed themselves ("; warm-up ...") and the newline. */
size_t first_use_text(char *buf, size_t cap, const struct backend_counters *d);

/* The first two epochs a run trained (their numbers, 0 = none yet) and their train
 * times: what `run` and `train` add to the line, the first one paying for first use. */
struct first_use_epochs {
    int epoch[2];
    double train_s[2];
};

/* Notes an epoch the run trained (kept when one of the first two). */
void first_use_epoch_seen(struct first_use_epochs *e, int epoch, double train_s);

/* Appends the line of a run, no newline: first_use_text of d (the counts of the run: the
 * engine's after it less before it), then "; epoch 1 trained in 25.3 s, epoch 2 in
 * 3.1 s" for the epochs e saw. */
size_t first_use_run_text(char *buf, size_t cap, const struct backend_counters *d,
                          const struct first_use_epochs *e);

/* Fills buf with a run's line (first_use_run_text of the engine's counts now less before,
 * and the epochs e saw) and returns 1, when engine be counts its work; 0, buf empty, when
 * it does not (the CPU engine). Not for a signal handler (it calls the engine). */
int first_use_run_line(char *buf, size_t cap, const struct backend *be,
                       const struct backend_counters *before, const struct first_use_epochs *e);

#endif
