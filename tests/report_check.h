/* Strict readers for the report's machine-readable formats, so that the tests can parse
 * what `dawnrun report` writes instead of matching text: an RFC 4180 CSV reader and a
 * JSON (RFC 8259) parser. Neither needs anything outside C. */
#ifndef DAWNRUN_TESTS_REPORT_CHECK_H
#define DAWNRUN_TESTS_REPORT_CHECK_H

/* ---- CSV ------------------------------------------------------------------------------- */

struct csv {
    int n_records;
    int *n_fields;        /* per record */
    char ***fields;       /* fields[record][field], unquoted, NUL-terminated */
};

/* Parses `text` (records ending in LF or CRLF; fields quoted with '"' when they hold a
 * comma, quote or line break, a quote doubled inside). Returns 0, or -1 for malformed
 * input (a bare quote inside an unquoted field, text after a closing quote, an
 * unterminated quote), with *err pointing at the problem. */
int csv_parse(struct csv *out, const char *text, const char **err);
/* Index of column `name` in record 0, or -1. */
int csv_column(const struct csv *c, const char *name);
void csv_free(struct csv *c);

/* ---- JSON ------------------------------------------------------------------------------ */

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

struct json {
    enum json_type type;
    double number;        /* JSON_NUMBER; JSON_BOOL: 0 or 1 */
    char *string;         /* JSON_STRING, decoded to UTF-8 */
    int n;                /* JSON_ARRAY / JSON_OBJECT: members */
    struct json *items;
    char **keys;          /* JSON_OBJECT */
};

/* Parses one JSON text (surrounding whitespace allowed). Returns 0, or -1 for anything
 * RFC 8259 does not allow (NaN, trailing commas, raw control characters in strings,
 * trailing text, ...), with *err pointing at the problem. */
int json_parse(struct json *out, const char *text, const char **err);
/* Member `key` of an object, or NULL (also when v is NULL or not an object). */
const struct json *json_get(const struct json *v, const char *key);
/* Element i of an array, or NULL. */
const struct json *json_at(const struct json *v, int i);
/* The number of v, or NaN when v is not a number (null included). */
double json_number(const struct json *v);
void json_free(struct json *v);

#endif
