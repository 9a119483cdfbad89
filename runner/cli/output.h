/* Writers shared by the commands that print output (report, export, the queries):
 * RFC 4180 CSV fields, JSON strings and numbers, the shortest exact decimal of a double,
 * formatted text, and an output file that replaces its destination only when complete.
 * Every text writer emits valid UTF-8: invalid bytes in names or messages become U+FFFD
 * (base/utf8.h). */
#ifndef DAWNRUN_RUNNER_OUTPUT_H
#define DAWNRUN_RUNNER_OUTPUT_H

#include <stdio.h>

/* The shortest decimal that reads back as exactly v; "" for NaN and infinities. */
void output_exact(char *buf, size_t size, double v);

/* One CSV field followed by ',' (or '\n' when `last`), quoted (RFC 4180) when it holds a
 * comma, quote, line break or edge space; NULL is an empty field; invalid UTF-8 as
 * U+FFFD. */
void output_csv_text(FILE *f, const char *s, int last);
/* A number as output_exact writes it; NaN and infinities are an empty field. */
void output_csv_num(FILE *f, double v, int last);

/* A JSON string (RFC 8259 escapes, invalid UTF-8 as U+FFFD), or null for NULL. */
void output_json_string(FILE *f, const char *s);
/* `SEP"KEY": VALUE` with NaN and infinities as null. `key` is written as is: a fixed
 * identifier, never user text. */
void output_json_num(FILE *f, const char *sep, const char *key, double v);

/* printf(fmt, ...) to f with the result written as valid UTF-8 (utf8_fputs): for lines
 * that carry names or messages read from configs or the results store. */
void output_text(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A destination file written through a temporary next to it ("PATH.tmp-PID") and
 * renamed over PATH by output_file_commit, so that PATH never holds half an output. The
 * path "-" (or NULL) is stdout, written directly. */
struct output_file {
    FILE *f;             /* write here */
    const char *path;    /* the destination, NULL for stdout */
    char *tmp;           /* the temporary, NULL for stdout */
};

/* Opens the destination (creating the temporary); on failure prints a message naming the
 * file and returns DR_ERR_IO. */
int output_file_open(struct output_file *o, const char *path);
/* Flushes, syncs and closes the temporary and renames it over the destination (stdout:
 * flushes). A write error (a full disk) is reported naming the destination, the
 * temporary is removed and DR_ERR_IO returned; the destination is then untouched. */
int output_file_commit(struct output_file *o);
/* Closes and removes the temporary, leaving the destination as it was; safe to call
 * after a commit or on a zeroed struct. */
void output_file_abort(struct output_file *o);

#endif
