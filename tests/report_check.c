/* Strict CSV (RFC 4180) and JSON (RFC 8259) readers for the report tests. */
#include "report_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a growable byte buffer ------------------------------------------------------------- */

struct buf {
    char *p;
    size_t len, cap;
};

static int buf_put(struct buf *b, char c)
{
    if (b->len + 1 >= b->cap) {
        size_t ncap = b->cap ? 2 * b->cap : 32;
        char *p = realloc(b->p, ncap);
        if (!p) return -1;
        b->p = p;
        b->cap = ncap;
    }
    b->p[b->len++] = c;
    b->p[b->len] = '\0';
    return 0;
}

/* The buffer's string (an empty one when nothing was put), owned by the caller. */
static char *buf_take(struct buf *b)
{
    char *s = b->p ? b->p : calloc(1, 1);
    b->p = NULL;
    b->len = b->cap = 0;
    return s;
}

/* ---- CSV ----------------------------------------------------------------------------- */

static int csv_add_field(struct csv *c, struct buf *b)
{
    int r = c->n_records - 1;
    char **f = realloc(c->fields[r], sizeof *f * (size_t)(c->n_fields[r] + 1));
    if (!f) return -1;
    c->fields[r] = f;
    f[c->n_fields[r]++] = buf_take(b);
    return 0;
}

static int csv_add_record(struct csv *c)
{
    int *nf = realloc(c->n_fields, sizeof *nf * (size_t)(c->n_records + 1));
    if (!nf) return -1;
    c->n_fields = nf;
    char ***fs = realloc(c->fields, sizeof *fs * (size_t)(c->n_records + 1));
    if (!fs) return -1;
    c->fields = fs;
    c->n_fields[c->n_records] = 0;
    c->fields[c->n_records] = NULL;
    c->n_records++;
    return 0;
}

int csv_parse(struct csv *out, const char *text, const char **err)
{
    struct buf b = {0};
    const char *p = text;
    memset(out, 0, sizeof *out);
    *err = NULL;
    while (*p) {
        if (csv_add_record(out)) goto fail;
        for (;;) {   /* one field per iteration */
            if (*p == '"') {
                for (p++;; p++) {
                    if (!*p) goto fail;   /* unterminated quote */
                    if (*p == '"' && p[1] == '"') {
                        if (buf_put(&b, '"')) goto fail;
                        p++;
                    } else if (*p == '"') {
                        p++;
                        break;
                    } else if (buf_put(&b, *p)) {
                        goto fail;
                    }
                }
                if (*p && *p != ',' && *p != '\n' && !(*p == '\r' && p[1] == '\n'))
                    goto fail;   /* text after the closing quote */
            } else {
                for (; *p && *p != ',' && *p != '\n' && !(*p == '\r' && p[1] == '\n'); p++) {
                    if (*p == '"' || *p == '\r') goto fail;
                    if (buf_put(&b, *p)) goto fail;
                }
            }
            if (csv_add_field(out, &b)) goto fail;
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p == '\r') p++;
            if (*p == '\n') p++;
            break;
        }
    }
    return 0;
fail:
    *err = p;
    free(b.p);
    csv_free(out);
    return -1;
}

int csv_column(const struct csv *c, const char *name)
{
    for (int i = 0; c->n_records > 0 && i < c->n_fields[0]; i++)
        if (!strcmp(c->fields[0][i], name)) return i;
    return -1;
}

void csv_free(struct csv *c)
{
    for (int r = 0; r < c->n_records; r++) {
        for (int f = 0; f < c->n_fields[r]; f++) free(c->fields[r][f]);
        free(c->fields[r]);
    }
    free(c->fields);
    free(c->n_fields);
    memset(c, 0, sizeof *c);
}

/* ---- JSON ---------------------------------------------------------------------------- */

struct jparser {
    const char *p;
    int depth;
};

static void skip_ws(struct jparser *j)
{
    while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r') j->p++;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int hex4(const char *p, unsigned *out)
{
    *out = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        unsigned d = is_digit(c) ? (unsigned)(c - '0')
                     : (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10)
                     : (c >= 'A' && c <= 'F') ? (unsigned)(c - 'A' + 10) : 16u;
        if (d > 15) return -1;
        *out = *out * 16 + d;
    }
    return 0;
}

static int put_utf8(struct buf *b, unsigned cp)
{
    if (cp < 0x80) return buf_put(b, (char)cp);
    if (cp < 0x800)
        return buf_put(b, (char)(0xc0 | (cp >> 6))) || buf_put(b, (char)(0x80 | (cp & 0x3f)));
    if (cp < 0x10000)
        return buf_put(b, (char)(0xe0 | (cp >> 12))) ||
               buf_put(b, (char)(0x80 | ((cp >> 6) & 0x3f))) ||
               buf_put(b, (char)(0x80 | (cp & 0x3f)));
    return buf_put(b, (char)(0xf0 | (cp >> 18))) ||
           buf_put(b, (char)(0x80 | ((cp >> 12) & 0x3f))) ||
           buf_put(b, (char)(0x80 | ((cp >> 6) & 0x3f))) || buf_put(b, (char)(0x80 | (cp & 0x3f)));
}

/* A string starting at the opening quote; *out malloc'd. */
static int parse_string(struct jparser *j, char **out)
{
    struct buf b = {0};
    unsigned cp, lo;
    if (*j->p != '"') return -1;
    for (j->p++; *j->p != '"'; j->p++) {
        unsigned char c = (unsigned char)*j->p;
        if (c == '\0' || c < 0x20) goto fail;
        if (c != '\\') {
            if (buf_put(&b, (char)c)) goto fail;
            continue;
        }
        j->p++;
        switch (*j->p) {
        case '"': case '\\': case '/':
            if (buf_put(&b, *j->p)) goto fail;
            break;
        case 'b': if (buf_put(&b, '\b')) goto fail; break;
        case 'f': if (buf_put(&b, '\f')) goto fail; break;
        case 'n': if (buf_put(&b, '\n')) goto fail; break;
        case 'r': if (buf_put(&b, '\r')) goto fail; break;
        case 't': if (buf_put(&b, '\t')) goto fail; break;
        case 'u':
            if (hex4(j->p + 1, &cp)) goto fail;
            j->p += 4;
            if (cp >= 0xd800 && cp < 0xdc00) {   /* a surrogate pair */
                if (j->p[1] != '\\' || j->p[2] != 'u' || hex4(j->p + 3, &lo) || lo < 0xdc00 ||
                    lo > 0xdfff)
                    goto fail;
                cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                j->p += 6;
            } else if (cp >= 0xdc00 && cp < 0xe000) {
                goto fail;
            }
            if (put_utf8(&b, cp)) goto fail;
            break;
        default:
            goto fail;
        }
    }
    j->p++;
    *out = buf_take(&b);
    return 0;
fail:
    free(b.p);
    return -1;
}

static int parse_number(struct jparser *j, double *out)
{
    const char *s = j->p;
    if (*j->p == '-') j->p++;
    if (*j->p == '0') j->p++;
    else if (is_digit(*j->p)) while (is_digit(*j->p)) j->p++;
    else return -1;
    if (*j->p == '.') {
        j->p++;
        if (!is_digit(*j->p)) return -1;
        while (is_digit(*j->p)) j->p++;
    }
    if (*j->p == 'e' || *j->p == 'E') {
        j->p++;
        if (*j->p == '+' || *j->p == '-') j->p++;
        if (!is_digit(*j->p)) return -1;
        while (is_digit(*j->p)) j->p++;
    }
    *out = strtod(s, NULL);
    return 0;
}

static int parse_value(struct jparser *j, struct json *v);

/* An array or object starting at its bracket. */
static int parse_container(struct jparser *j, struct json *v, int object)
{
    char close = object ? '}' : ']';
    v->type = object ? JSON_OBJECT : JSON_ARRAY;
    j->p++;
    skip_ws(j);
    if (*j->p == close) {
        j->p++;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        skip_ws(j);
        if (object) {
            if (parse_string(j, &key)) return -1;
            skip_ws(j);
            if (*j->p != ':') {
                free(key);
                return -1;
            }
            j->p++;
        }
        struct json *items = realloc(v->items, sizeof *items * (size_t)(v->n + 1));
        char **keys = object ? realloc(v->keys, sizeof *keys * (size_t)(v->n + 1)) : NULL;
        if (items) v->items = items;
        if (keys) v->keys = keys;
        if (!items || (object && !keys)) {
            free(key);
            return -1;
        }
        memset(&v->items[v->n], 0, sizeof v->items[0]);
        if (object) v->keys[v->n] = key;
        v->n++;
        if (parse_value(j, &v->items[v->n - 1])) return -1;
        skip_ws(j);
        if (*j->p == ',') {
            j->p++;
            continue;
        }
        if (*j->p != close) return -1;
        j->p++;
        return 0;
    }
}

static int parse_value(struct jparser *j, struct json *v)
{
    memset(v, 0, sizeof *v);
    skip_ws(j);
    if (++j->depth > 64) return -1;
    int rc = -1;
    switch (*j->p) {
    case '{': rc = parse_container(j, v, 1); break;
    case '[': rc = parse_container(j, v, 0); break;
    case '"':
        v->type = JSON_STRING;
        rc = parse_string(j, &v->string);
        break;
    case 'n':
        if (!strncmp(j->p, "null", 4)) j->p += 4, rc = 0;
        break;
    case 't':
        if (!strncmp(j->p, "true", 4)) j->p += 4, v->type = JSON_BOOL, v->number = 1, rc = 0;
        break;
    case 'f':
        if (!strncmp(j->p, "false", 5)) j->p += 5, v->type = JSON_BOOL, rc = 0;
        break;
    default:
        v->type = JSON_NUMBER;
        rc = parse_number(j, &v->number);
    }
    j->depth--;
    return rc;
}

int json_parse(struct json *out, const char *text, const char **err)
{
    struct jparser j = {text, 0};
    *err = NULL;
    if (parse_value(&j, out) == 0) {
        skip_ws(&j);
        if (*j.p == '\0') return 0;
    }
    *err = j.p;
    json_free(out);
    return -1;
}

const struct json *json_get(const struct json *v, const char *key)
{
    for (int i = 0; v && v->type == JSON_OBJECT && i < v->n; i++)
        if (!strcmp(v->keys[i], key)) return &v->items[i];
    return NULL;
}

const struct json *json_at(const struct json *v, int i)
{
    if (!v || v->type != JSON_ARRAY || i < 0 || i >= v->n) return NULL;
    return &v->items[i];
}

double json_number(const struct json *v)
{
    return v && v->type == JSON_NUMBER ? v->number : NAN;
}

void json_free(struct json *v)
{
    for (int i = 0; i < v->n; i++) {
        json_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    free(v->string);
    memset(v, 0, sizeof *v);
}
