/* Reading an experiment file into a libconfig tree: the file must be there and regular,
 * its @includes are relative to its directory and must name regular files, and a parse
 * error is reported as "file:line: message" with the file named as the user can open it.
 * Layer 1 of config handling (config_tree.h). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_tree.h"
#include "base/status.h"

/* The quoted name of the @include on line `line` of file, into buf ("" when not found). */
static void include_name(const char *file, int line, char *buf, size_t n)
{
    char text[1024];
    FILE *f = fopen(file, "r");
    buf[0] = '\0';
    if (!f) return;
    for (int i = 1; fgets(text, sizeof(text), f); i++) {
        if (i < line) continue;
        const char *p = strstr(text, "@include");
        const char *q = p ? strchr(p, '"') : NULL;
        const char *end = q ? strchr(q + 1, '"') : NULL;
        if (end) snprintf(buf, n, " \"%.*s\"", (int)(end - q - 1), q + 1);
        break;
    }
    fclose(f);
}

/* libconfig reads an @include (or the main file) that names a directory with fopen, which
 * succeeds, and then its scanner calls exit() on the read error. So before parsing, every
 * @include line of `file` (shown as `shown`), and of the files it includes (up to
 * libconfig's depth limit), must name a regular file when it names anything: an
 * @include of a directory is reported "shown:line: ..." and gives DR_ERR_CONFIG. Missing
 * files are left to libconfig, which reports them. `dir` is the include directory (NULL:
 * the current one). */
static int check_includes(const char *file, const char *shown, const char *dir, int depth)
{
    int rc = DR_OK, line_no = 0;
    char *line = NULL;
    size_t cap = 0;
    FILE *f = depth <= 10 ? fopen(file, "r") : NULL;
    if (!f) return DR_OK;
    while (rc == DR_OK && getline(&line, &cap, f) >= 0) {
        line_no++;
        const char *p = line + strspn(line, " \t");
        if (strncmp(p, "@include", 8) != 0) continue;
        p += 8;
        p += strspn(p, " \t");
        if (*p != '"') continue;
        const char *end = strchr(p + 1, '"');
        size_t n = end ? (size_t)(end - p - 1) : strcspn(p + 1, "\r\n");
        char name[1024], full[2048];
        snprintf(name, sizeof(name), "%.*s", (int)n, p + 1);
        if (dir && name[0] != '/') snprintf(full, sizeof(full), "%s/%s", dir, name);
        else snprintf(full, sizeof(full), "%s", name);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (!S_ISREG(st.st_mode)) {
            dr_eprintf("%s:%d: cannot include \"%s\": not a regular file\n", shown,
                       line_no, name);
            rc = DR_ERR_CONFIG;
        } else {
            rc = check_includes(full, full, dir, depth + 1);
        }
    }
    free(line);
    fclose(f);
    return rc;
}

/* Prints a libconfig parse error as "file:line: message". */
static void report_parse_error(const config_t *cfg, struct cfg_diag *d)
{
    const char *text = config_error_text(cfg);
    const char *hint = "";
    char name[600];
    if (text && strstr(text, "mismatched element type"))
        hint = " (an array holds one type: write 0.0 rather than 0, or use a list ( ... ))";
    if (text && strstr(text, "cannot open include file")) {
        include_name(cfg_diag_file_name(d, config_error_file(cfg)), config_error_line(cfg), name,
                     sizeof(name));
        hint = name;
    }
    dr_eprintf("%s:%d: %s%s\n", cfg_diag_file_name(d, config_error_file(cfg)),
               config_error_line(cfg), text ? text : "parse error", hint);
}

int cfg_read_file(config_t *cfg, struct cfg_diag *d, const char *path)
{
    int rc = DR_OK;
    char *dir_buf = NULL;
    d->main_file = path;
    FILE *probe = fopen(path, "r");
    if (!probe) { /* a config error for the user: the file named is not there */
        dr_eprintf("%s: cannot open the config: %s\n", path, strerror(errno));
        rc = DR_ERR_CONFIG;
        goto cleanup;
    }
    fclose(probe);
    dir_buf = strdup(path);
    CHECK_ALLOC(dir_buf, "the config path");
    const char *dir = dirname(dir_buf);
    if (strcmp(dir, ".") != 0) {
        d->include_dir = strdup(dir);
        CHECK_ALLOC(d->include_dir, "the config path");
        config_set_include_dir(cfg, d->include_dir);
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        dr_eprintf("%s: cannot read the config: not a regular file\n", path);
        rc = DR_ERR_CONFIG;
        goto cleanup;
    }
    TRY(check_includes(path, path, d->include_dir, 1));
    if (!config_read_file(cfg, path)) {
        report_parse_error(cfg, d);
        rc = config_error_type(cfg) == CONFIG_ERR_FILE_IO ? DR_ERR_IO : DR_ERR_CONFIG;
        goto cleanup;
    }
cleanup:
    free(dir_buf);
    return rc;
}
