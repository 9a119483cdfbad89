/* Machine-readable output: CSV and JSON field writers and an all-or-nothing output file
 * (see output.h). */
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/status.h"
#include "base/utf8.h"

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
    uint32_t cp;
    s = s ? s : "";
    size_t n = strlen(s);
    int quote = strpbrk(s, ",\"\r\n") != NULL || (n && (s[0] == ' ' || s[n - 1] == ' '));
    if (quote) fputc('"', f);
    while (*s) {
        int len = utf8_decode(&cp, s);
        if (len == 0) {
            fputs(UTF8_REPLACEMENT, f);
            s++;
            continue;
        }
        if (*s == '"') fputc('"', f);
        fwrite(s, 1, (size_t)len, f);
        s += len;
    }
    if (quote) fputc('"', f);
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
    uint32_t cp;
    if (!s) {
        fputs("null", f);
        return;
    }
    fputc('"', f);
    while (*s) {
        int len = utf8_decode(&cp, s);
        if (len == 0) fputs(UTF8_REPLACEMENT, f);   /* RFC 8259 text is UTF-8 */
        else if (cp == '"' || cp == '\\') fprintf(f, "\\%c", (int)cp);
        else if (cp == '\n') fputs("\\n", f);
        else if (cp == '\t') fputs("\\t", f);
        else if (cp < 0x20) fprintf(f, "\\u%04x", (unsigned)cp);
        else fwrite(s, 1, (size_t)len, f);
        s += len > 0 ? len : 1;
    }
    fputc('"', f);
}

void output_json_num(FILE *f, const char *sep, const char *key, double v)
{
    char buf[40];
    output_exact(buf, sizeof buf, v);
    fprintf(f, "%s\"%s\": %s", sep, key, *buf ? buf : "null");
}

void output_text(FILE *f, const char *fmt, ...)
{
    char stack[1024], *text = stack;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(stack, sizeof stack, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof stack) {
        text = malloc((size_t)n + 1);
        if (!text) {
            utf8_fputs(f, stack);   /* out of memory: the part that fitted */
            return;
        }
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    utf8_fputs(f, text);
    if (text != stack) free(text);
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
