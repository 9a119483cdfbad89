/* Shared test support (see support.h): the test's temporary directory, file reading,
 * stderr capture, running the dawnrun command, raw SQL and random test inputs. */
#include "support.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the test's directory and files ---------------------------------------------------- */

static char tmpdir[256];

int support_tmpdir_make(const char *pattern)
{
    snprintf(tmpdir, sizeof tmpdir, "%s", pattern);
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    return 0;
}

const char *support_tmpdir(void)
{
    return tmpdir;
}

const char *support_path(const char *name)
{
    static char bufs[64][512];
    static int used;
    char b[512];
    snprintf(b, sizeof b, "%s/%s", tmpdir, name);
    for (int i = 0; i < used; i++)
        if (!strcmp(bufs[i], b)) return bufs[i];
    if (used == 64) return "/nonexistent/too-many-test-paths";
    memcpy(bufs[used], b, sizeof b);
    return bufs[used++];
}

int support_tmpdir_finish(int rc)
{
    if (rc == 0) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    } else {
        fprintf(stderr, "test files kept in %s\n", tmpdir);
    }
    return rc;
}

char *support_read_file(const char *path, long *len)
{
    long size = -1;
    char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (f) {
        if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
            buf = malloc((size_t)size + 1);
            if (buf && fread(buf, 1, (size_t)size, f) != (size_t)size) {
                free(buf);
                buf = NULL;
            }
            if (buf) buf[size] = '\0';
        }
        fclose(f);
    }
    if (len) *len = size;
    return buf;
}

int support_file_unchanged(const char *path, const char *before, long len)
{
    long n = 0;
    char *now = support_read_file(path, &n);
    int same = before && now && n == len && memcmp(before, now, (size_t)len) == 0;
    free(now);
    return same;
}

int support_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* ---- captured output ------------------------------------------------------------------- */

static int saved_stderr = -1;

void support_capture_begin(void)
{
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(support_path("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
}

const char *support_capture_end(void)
{
    static char buf[4096];
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    FILE *f = fopen(support_path("stderr.txt"), "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    buf[n] = '\0';
    if (f) fclose(f);
    fprintf(stderr, "  (captured) %s", buf);
    return buf;
}

static const char *run_program;
static int run_echo_stdout;
static char run_out[1 << 16], run_err[1 << 14];

void support_run_program(const char *path, int echo_stdout)
{
    run_program = path;
    run_echo_stdout = echo_stdout;
}

int support_run(const char *fmt, ...)
{
    char args[4096], cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    int len = snprintf(cmd, sizeof cmd, "%s %s >%s 2>%s", run_program, args,
                       support_path("out.txt"), support_path("err.txt"));
    if (len < 0 || len >= (int)sizeof cmd) {
        fprintf(stderr, "command too long: %s\n", args);
        return -1;
    }
    int status = system(cmd);
    char *o = support_read_file(support_path("out.txt"), NULL);
    char *e = support_read_file(support_path("err.txt"), NULL);
    snprintf(run_out, sizeof run_out, "%s", o ? o : "");
    snprintf(run_err, sizeof run_err, "%s", e ? e : "");
    free(o);
    free(e);
    printf("$ dawnrun %s\n%s%s", args, run_echo_stdout ? run_out : "", run_err);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

const char *support_run_out(void)
{
    return run_out;
}

const char *support_run_err(void)
{
    return run_err;
}

/* ---- raw SQL --------------------------------------------------------------------------- */

/* support_sql_int with the database opened with SQLite's open `flags`. */
static long long sql_int(const char *db_path, int flags, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_open_v2(db_path, &db, flags, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

long long support_sql_int(const char *db_path, const char *sql)
{
    return sql_int(db_path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, sql);
}

long long support_sql_int_readonly(const char *db_path, const char *sql)
{
    return sql_int(db_path, SQLITE_OPEN_READONLY, sql);
}

int support_sql_exec(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open(db_path, &db);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK) fprintf(stderr, "  sql: %s\n", sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc;
}

/* ---- reproducible random inputs -------------------------------------------------------- */

float support_urand(struct support_rng *rng, float lo, float hi)
{
    rng->state ^= rng->state << 13;
    rng->state ^= rng->state >> 7;
    rng->state ^= rng->state << 17;
    return lo + (hi - lo) * (float)((rng->state >> 40) * (1.0 / 16777216.0));
}

void support_rand_fill(float *p /* (n) */, struct support_rng *rng, float lo, float hi,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = support_urand(rng, lo, hi);
}

float *support_rand_buf(struct support_rng *rng, float lo, float hi, size_t n)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    if (p) support_rand_fill(p, rng, lo, hi, n);
    return p;
}
