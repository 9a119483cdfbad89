/* The terminal progress line and its erasing before messages (see progress.h). */
#include "progress.h"

#include <math.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base/status.h"

#define PROGRESS_BAR 20
#define PROGRESS_LINE_MAX 256

static int drawn;   /* characters of the line now on the terminal, 0 = none */

/* What the line of the current run knows. */
static struct {
    int epochs, batch;
    int epoch;             /* the epoch of the latest step drawn, 0 = none yet */
    double first_step_at;  /* when that epoch's step 1 was drawn, <= 0 unknown */
    double epoch_wall;     /* seconds between the first steps of the last two epochs
                              (training, evaluation, checkpoint), 0 = not known yet */
    double loss;           /* mean train loss of epoch loss_epoch, NaN = none yet */
    int loss_epoch;
} line = {0, 0, 0, 0.0, 0.0, NAN, 0};

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* "m:ss", or "h:mm:ss" from an hour on; "-" when unknown. */
static void format_duration(char *buf, size_t cap, double seconds)
{
    if (!(seconds >= 0) || seconds > 1e8) {
        snprintf(buf, cap, "-");
        return;
    }
    long s = lround(seconds);
    if (s >= 3600)
        snprintf(buf, cap, "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
    else
        snprintf(buf, cap, "%ld:%02ld", s / 60, s % 60);
}

void progress_install(void)
{
    dr_set_message_hook(progress_clear);
}

void progress_run_begin(int epochs, int batch)
{
    line.epochs = epochs;
    line.batch = batch;
    line.epoch = 0;
    line.first_step_at = 0.0;
    line.epoch_wall = 0.0;
    line.loss = NAN;
    line.loss_epoch = 0;
}

void progress_epoch_end(int epoch, double train_loss)
{
    line.loss = train_loss;
    line.loss_epoch = epoch;
}

void progress_clear(void)
{
    if (!drawn) return;
    printf("\r%*s\r", drawn, "");
    fflush(stdout);
    drawn = 0;
}

/* The terminal's width in columns, 0 when unknown. */
static int terminal_width(void)
{
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0) return 0;
    return ws.ws_col;
}

void progress_draw(int epoch, int step, int steps)
{
    if (steps <= 0) return;
    if (step >= steps) {
        progress_clear();
        return;
    }
    double now = now_seconds();
    if (step == 1 || epoch != line.epoch) {
        if (step == 1 && line.epoch == epoch - 1 && line.first_step_at > 0)
            line.epoch_wall = now - line.first_step_at;
        line.epoch = epoch;
        line.first_step_at = step == 1 ? now : 0.0;
    }
    /* per-step time over the steps since step 1 (step 1's own time includes the epoch's
     * start-up, so it is left out) */
    double per_step = -1, rate = -1, epoch_eta = -1, run_eta = -1;
    if (line.first_step_at > 0 && step > 1) {
        per_step = (now - line.first_step_at) / (step - 1);
        if (per_step > 0) rate = line.batch / per_step;
        epoch_eta = per_step * (steps - step);
        double later = line.epochs > epoch ? line.epochs - epoch : 0;
        run_eta = epoch_eta + later * (line.epoch_wall > 0 ? line.epoch_wall : per_step * steps);
    }
    char text[PROGRESS_LINE_MAX], ips[32], eeta[32], reta[32], loss[48];
    int done = (int)((long)step * PROGRESS_BAR / steps);
    if (rate > 0) snprintf(ips, sizeof(ips), "%.0f", rate);
    else snprintf(ips, sizeof(ips), "-");
    format_duration(eeta, sizeof(eeta), epoch_eta);
    format_duration(reta, sizeof(reta), run_eta);
    if (line.loss_epoch > 0)
        snprintf(loss, sizeof(loss), "%.4f (epoch %d)", line.loss, line.loss_epoch);
    else
        snprintf(loss, sizeof(loss), "-");
    int n = snprintf(text, sizeof(text),
                     "%5d [%.*s%*s] %d/%d  %s img/s  epoch ETA %s  run ETA %s  loss %s", epoch,
                     done, "####################", PROGRESS_BAR - done, "", step, steps, ips,
                     eeta, reta, loss);
    if (n < 0) return;
    if (n >= (int)sizeof(text)) n = (int)sizeof(text) - 1;
    /* a line longer than the terminal would wrap, and \r could not erase it */
    int width = terminal_width();
    if (width > 1 && n > width - 1) n = width - 1;
    int pad = drawn > n ? drawn - n : 0;   /* cover the end of a longer previous line */
    printf("\r%.*s%*s", n, text, pad, "");
    fflush(stdout);
    if (n > drawn) drawn = n;
}
