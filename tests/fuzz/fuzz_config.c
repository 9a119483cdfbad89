/* Fuzz target: the config loader, through the entry points `dawnrun run` uses. The input
 * is the experiment file's text, optionally followed by sections, each opened by a line
 * of its own:
 *   #@@ include   the rest, up to the next section, is the file nets/tiny.cfg next to
 *                 the experiment (otherwise nets/ holds the shipped and golden networks,
 *                 also reachable as ../nets/, so every shipped config is a valid input)
 *   #@@ set       each line is one --set KEY=VALUE
 *   #@@ sweep     each line is one --sweep KEY=V1,V2
 * It loads the experiment and builds its graph (runner_load), adds the config's own
 * sweep and the --sweep lines, and loads the first combinations as `run` would. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "base/status.h"
#include "runner/cli/load.h"
#include "runner/sched/sweep.h"
#include "fuzz.h"

#define MAX_SETS 16
#define MAX_SWEEPS 4
#define MAX_COMBOS 4      /* combinations loaded per input */

static char exp_dir[512], exp_path[600], inc_path[600], inc_link[1200];

/* Links every *.cfg of src into dst. */
static void link_all(const char *dst, const char *src)
{
    DIR *d = opendir(src);
    if (!d) return;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t n = strlen(ent->d_name);
        if (n < 5 || strcmp(ent->d_name + n - 4, ".cfg") != 0) continue;
        char from[1200], to[1200];
        fuzz_path(from, sizeof(from), src, ent->d_name);
        fuzz_path(to, sizeof(to), dst, ent->d_name);
        if (symlink(from, to) != 0 && strcmp(ent->d_name, "tiny.cfg") != 0) perror(to);
    }
    closedir(d);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = fuzz_dir("config");
    char nets[600], top_nets[600], src[1200];
    fuzz_path(exp_dir, sizeof(exp_dir), dir, "x");
    fuzz_path(nets, sizeof(nets), exp_dir, "nets");
    fuzz_path(top_nets, sizeof(top_nets), dir, "nets");
    if (mkdir(exp_dir, 0700) != 0 || mkdir(nets, 0700) != 0 || symlink(nets, top_nets) != 0) {
        perror("fuzz_config: scratch layout");
        abort();
    }
    fuzz_path(src, sizeof(src), DAWNRUN_FUZZ_SOURCE_DIR, "tests/configs/nets");
    link_all(nets, src);
    fuzz_path(src, sizeof(src), DAWNRUN_FUZZ_SOURCE_DIR, "configs/nets");
    link_all(nets, src);
    fuzz_path(exp_path, sizeof(exp_path), exp_dir, "exp.cfg");
    fuzz_path(inc_path, sizeof(inc_path), nets, "tiny.cfg");
    fuzz_path(inc_link, sizeof(inc_link), DAWNRUN_FUZZ_SOURCE_DIR, "tests/configs/nets/tiny.cfg");
    return 0;
}

/* Loads the experiment with sets[0..n_sets) and checks what a successful load promises. */
static int load(struct experiment *e, struct graph *g, const char *const *sets, int n_sets)
{
    int rc = runner_load(e, g, exp_path, sets, n_sets);
    if (rc != DR_OK) {
        FUZZ_ASSERT(rc == DR_ERR_CONFIG || rc == DR_ERR_IO || rc == DR_ERR_NOMEM);
        return rc;
    }
    char hex[65];
    experiment_hash(e, hex);
    FUZZ_ASSERT(strlen(hex) == 64);
    FUZZ_ASSERT(e->resolved != NULL);
    FUZZ_ASSERT(e->train.batch_size > 0);
    return DR_OK;
}

static void run_input(char *text, size_t size)
{
    const char *sets[MAX_SETS + SWEEP_MAX_DIMS];
    const char *sweeps[MAX_SWEEPS];
    int n_sets = 0, n_sweeps = 0;
    char *include = NULL;
    size_t main_len = size;

    /* split into sections at the marker lines */
    enum { MAIN, INCLUDE, SET, SWEEP } section = MAIN;
    char *line = text, *end = text + size;
    while (line < end) {
        char *nl = memchr(line, '\n', (size_t)(end - line));
        char *next = nl ? nl + 1 : end;
        size_t len = (size_t)((nl ? nl : end) - line);
        int marker = len >= 4 && memcmp(line, "#@@ ", 4) == 0;
        if (marker) {
            if (section == MAIN) main_len = (size_t)(line - text);
            *line = '\0';        /* ends the previous section's text */
            if (len == 11 && memcmp(line + 4, "include", 7) == 0) {
                section = INCLUDE;
                include = next;
            } else if (len == 7 && memcmp(line + 4, "set", 3) == 0) {
                section = SET;
            } else if (len == 9 && memcmp(line + 4, "sweep", 5) == 0) {
                section = SWEEP;
            }
        } else if (section == SET || section == SWEEP) {
            if (nl) *nl = '\0';
            if (section == SET && n_sets < MAX_SETS) sets[n_sets++] = line;
            if (section == SWEEP && n_sweeps < MAX_SWEEPS) sweeps[n_sweeps++] = line;
        }
        line = next;
    }
    fuzz_write(exp_path, text, main_len);
    if (include) fuzz_write(inc_path, include, strlen(include));

    struct experiment e;
    struct graph g;
    struct sweep s = {0};
    if (load(&e, &g, sets, n_sets) == DR_OK) {
        int rc = sweep_add_from_resolved(&s, e.resolved, exp_path);
        for (int d = 0; rc == DR_OK && d < n_sweeps; d++)
            rc = sweep_add(&s, sweeps[d], "--sweep", DR_ERR_USAGE);
        sweep_strip_resolved(e.resolved);
        graph_free(&g);
        experiment_free(&e);
        if (rc == DR_OK) {
            int count = sweep_count(&s);
            FUZZ_ASSERT(count >= 1 && count <= SWEEP_MAX_COMBINATIONS);
            for (int i = 0; i < count && i < MAX_COMBOS; i++) {
                char **combo = NULL, *label = NULL;
                if (sweep_combination(&s, i, &combo, &label) != DR_OK) break;
                int n = n_sets;
                for (int d = 0; d < s.n_dims; d++) sets[n++] = combo[d];
                if (load(&e, &g, sets, n) == DR_OK) {
                    graph_free(&g);
                    experiment_free(&e);
                }
                sweep_combination_free(&s, combo, label);
            }
        }
        sweep_free(&s);
    } else {
        /* the --sweep strings are parsed before the config at the command line too */
        for (int d = 0; d < n_sweeps; d++) sweep_add(&s, sweeps[d], "--sweep", DR_ERR_USAGE);
        sweep_free(&s);
    }
    if (include) {
        unlink(inc_path);
        if (symlink(inc_link, inc_path) != 0) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    run_input(text, size);
    free(text);
    return 0;
}
