/* Machine-readable output: CSV and JSON field writers and an all-or-nothing output file
 * (see output.h). */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/status.h"

void output_exact(char *buf, size_t size, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, size, "%s", "");
        return;
    }
    for (int digits = 15; digits <= 17; digits++) {
        snprintf(buf, size, "%.*g", digits, v);
        if (strtod(buf, NULL) == v) return;
    }
}

void output_csv_text(FILE *f, const char *s, int last)
{
    s = s ? s : "";
    size_t n = strlen(s);
    int quote = strpbrk(s, ",\"\r\n") != NULL || (n && (s[0] == ' ' || s[n - 1] == ' '));
    if (quote) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"') fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

void output_csv_num(FILE *f, double v, int last)
{
    char buf[40];
    output_exact(buf, sizeof buf, v);
    output_csv_text(f, buf, last);
}

void output_json_string(FILE *f, const char *s)
{
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
        else if (ch == '\n') fputs("\\n", f);
        else if (ch == '\t') fputs("\\t", f);
        else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
        else fputc(ch, f);
    }
    fputc('"', f);
}

void output_json_num(FILE *f, const char *sep, const char *key, double v)
{
    char buf[40];
    output_exact(buf, sizeof buf, v);
    fprintf(f, "%s\"%s\": %s", sep, key, *buf ? buf : "null");
}

int output_file_open(struct output_file *o, const char *path)
{
    int rc = DR_OK;
    int fd = -1;
    memset(o, 0, sizeof *o);
    if (!path || !strcmp(path, "-")) {
        o->f = stdout;
        return DR_OK;
    }
    size_t len = strlen(path) + 32;
    o->tmp = malloc(len);
    CHECK_ALLOC(o->tmp, "output file name");
    snprintf(o->tmp, len, "%s.tmp-%ld", path, (long)getpid());
    o->path = path;
    fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        FAIL(DR_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    o->f = fdopen(fd, "w");
    if (!o->f) FAIL(DR_ERR_IO, "%s: cannot write: %s", path, strerror(errno));
    fd = -1;
cleanup:
    if (fd >= 0) close(fd);
    if (rc != DR_OK) output_file_abort(o);
    return rc;
}

int output_file_commit(struct output_file *o)
{
    int rc = DR_OK;
    if (!o->tmp) {
        if (fflush(o->f) != 0 || ferror(o->f))
            FAIL(DR_ERR_IO, "standard output: write failed: %s", strerror(errno));
        return DR_OK;
    }
    int failed = fflush(o->f) != 0 || ferror(o->f) || fsync(fileno(o->f)) != 0;
    int saved = errno;
    failed |= fclose(o->f) != 0;
    o->f = NULL;
    if (failed) FAIL(DR_ERR_IO, "%s: write failed: %s", o->path, strerror(saved ? saved : errno));
    if (rename(o->tmp, o->path) != 0)
        FAIL(DR_ERR_IO, "%s: cannot replace it: %s", o->path, strerror(errno));
    free(o->tmp);
    o->tmp = NULL;
cleanup:
    if (rc != DR_OK) output_file_abort(o);
    return rc;
}

void output_file_abort(struct output_file *o)
{
    if (o->f && o->f != stdout) fclose(o->f);
    o->f = NULL;
    if (o->tmp) {
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
}
