/* The terminal progress line and its erasing before messages (see progress.h). */
#include "progress.h"

#include <stdio.h>

#include "base/status.h"

#define PROGRESS_WIDTH 30

static int drawn;   /* characters of the line now on the terminal, 0 = none */

void progress_install(void)
{
    dr_set_message_hook(progress_clear);
}

void progress_clear(void)
{
    if (!drawn) return;
    printf("\r%*s\r", drawn, "");
    fflush(stdout);
    drawn = 0;
}

void progress_draw(int epoch, int step, int steps)
{
    if (steps <= 0) return;
    if (step >= steps) {
        progress_clear();
        return;
    }
    int done = (int)((long)step * PROGRESS_WIDTH / steps);
    int n = printf("\r%5d [%.*s%*s] %d/%d", epoch, done, "##############################",
                   PROGRESS_WIDTH - done, "", step, steps);
    fflush(stdout);
    if (n > 1 && n - 1 > drawn) drawn = n - 1;
}
