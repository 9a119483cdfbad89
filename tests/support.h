/* What several test executables need besides assertions (check.h): a temporary
 * directory and the paths of files in it, whole files read back, stderr captured into a
 * string, the dawnrun command run with its output captured, one-line SQL against a
 * database file, and reproducible random test inputs. */
#ifndef DAWNRUN_TESTS_SUPPORT_H
#define DAWNRUN_TESTS_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

/* ---- the test's directory and files ---------------------------------------------------- */

/* Makes a fresh directory from `pattern` (a path ending in XXXXXX, e.g.
 * "/tmp/dawnrun-test-plot-XXXXXX"), for support_path and support_tmpdir. Call once, first.
 * Returns 0, or 1 (an exit code for main) after printing why it could not. */
int support_tmpdir_make(const char *pattern);
/* The directory support_tmpdir_make made. */
const char *support_tmpdir(void);
/* "<directory>/<name>" in a buffer of its own that lives as long as the test: the same
 * name always gives the same pointer. Up to 64 distinct names; past that it returns a
 * path under /nonexistent, on which every use fails. */
const char *support_path(const char *name);
/* Ends a test: with rc 0 removes the directory and all in it, otherwise prints where its
 * files were kept. Returns rc, for main to return. */
int support_tmpdir_finish(int rc);

/* The whole file at `path`, malloc'd and NUL-terminated; NULL when it cannot be read.
 * When len is not NULL, *len is its size in bytes (-1 when it could not be opened). */
char *support_read_file(const char *path, long *len);
/* Whether the file at `path` still holds exactly before[0..len): 0 when before is NULL
 * or the file cannot be read. */
int support_file_unchanged(const char *path, const char *before, long len);
/* Whether anything (file or directory) exists at `path`. */
int support_exists(const char *path);

/* ---- captured output ------------------------------------------------------------------- */

/* Sends this process's stderr to support_path("stderr.txt") until support_capture_end
 * (needs support_tmpdir_make; captures do not nest). */
void support_capture_begin(void);
/* Restores stderr and returns what was written to it since support_capture_begin (its
 * first 4095 bytes, in a static buffer that the next capture overwrites), after echoing
 * it on stderr after "  (captured) ". */
const char *support_capture_end(void);

/* Sets the dawnrun executable that support_run runs (argv[1] of the command tests) and
 * whether support_run echoes the command's stdout too (its stderr always). */
void support_run_program(const char *path, int echo_stdout);
/* Runs "<program> ARGS" through the shell, ARGS formatted from fmt (a shell fragment:
 * quote what needs it), with stdout to support_path("out.txt") and stderr to
 * support_path("err.txt"); keeps their first 64 KiB and 16 KiB for support_run_out and
 * support_run_err and echoes "$ dawnrun ARGS" and them on stdout. Returns the command's
 * exit code, or -1 when it did not exit normally or the command line passes 8 KiB. */
int support_run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What the last support_run wrote on stdout ("" before the first): one buffer for the
 * whole test, so the pointer may be kept while each support_run rewrites its text. */
const char *support_run_out(void);
/* The same for what it wrote on stderr. */
const char *support_run_err(void);

/* ---- raw SQL, for setting up faults and looking where the API does not ----------------- */

/* The first column of the first row of `sql` on the database file at db_path, opened
 * read-write (created when missing, as sqlite3_open does); -1 when it cannot be opened,
 * the statement fails or gives no row. */
long long support_sql_int(const char *db_path, const char *sql);
/* The same with the database opened read-only: nothing is created or checkpointed. */
long long support_sql_int_readonly(const char *db_path, const char *sql);
/* Runs `sql` (one or more statements) on the database file at db_path, opened read-write.
 * Returns the SQLite result code; on failure prints SQLite's message on stderr. */
int support_sql_exec(const char *db_path, const char *sql);

/* ---- reproducible random inputs -------------------------------------------------------- */

/* An xorshift64 generator: a test starts it from a nonzero constant of its own, so the
 * same test always draws the same values. */
struct support_rng {
    uint64_t state;
};

/* The next value of rng, uniform in [lo, hi) with 24 random bits. */
float support_urand(struct support_rng *rng, float lo, float hi);
/* Fills p with n successive values support_urand(rng, lo, hi). */
void support_rand_fill(float *p /* (n) */, struct support_rng *rng, float lo, float hi,
                       size_t n);
/* A malloc'd buffer (at least one element) filled by support_rand_fill; NULL when out of
 * memory. */
float *support_rand_buf(struct support_rng *rng, float lo, float hi, size_t n);

#endif
