/* The expression language of numeric layer attributes and block arguments: numbers,
 * $variables, unary + -, binary + - * / and parentheses, evaluated in double precision.
 * Layer 3 of config handling, validation (config_schema.h); calls nothing else of config.
 *
 *   expr    = term { ("+" | "-") term }
 *   term    = unary { ("*" | "/") unary }
 *   unary   = ("+" | "-") unary | primary
 *   primary = number | "$" identifier | "(" expr ")"
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_schema.h"

#define EXPR_MAX_DEPTH 64

struct parser {
    const char *text, *p;
    cfg_expr_lookup lookup;
    void *ctx;
    int check_only;
    int depth;
    int status;
    struct cfg_expr_error *err;
};

static void skip_space(struct parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\t') ps->p++;
}

/* Records a syntax error at the current position (first error wins). */
static double syntax_error(struct parser *ps, const char *what)
{
    if (ps->status != EXPR_OK) return 0.0;
    ps->status = EXPR_SYNTAX;
    if (*ps->p == '\0')
        snprintf(ps->err->msg, sizeof(ps->err->msg), "%s at the end", what);
    else
        snprintf(ps->err->msg, sizeof(ps->err->msg), "%s at column %d, found '%c'", what,
                 (int)(ps->p - ps->text) + 1, *ps->p);
    return 0.0;
}

static double parse_expr(struct parser *ps);

static double parse_number(struct parser *ps)
{
    const char *start = ps->p;
    while (isdigit((unsigned char)*ps->p)) ps->p++;
    if (*ps->p == '.') {
        ps->p++;
        while (isdigit((unsigned char)*ps->p)) ps->p++;
    }
    if (ps->p == start + 1 && *start == '.') {
        ps->p = start;
        return syntax_error(ps, "expected a number");
    }
    if (*ps->p == 'e' || *ps->p == 'E') {
        const char *q = ps->p + 1;
        if (*q == '+' || *q == '-') q++;
        if (isdigit((unsigned char)*q)) {
            while (isdigit((unsigned char)*q)) q++;
            ps->p = q;
        }
    }
    char buf[64];
    size_t n = (size_t)(ps->p - start);
    if (n >= sizeof(buf)) {
        ps->p = start;
        return syntax_error(ps, "number too long");
    }
    memcpy(buf, start, n);
    buf[n] = '\0';
    return strtod(buf, NULL);
}

static double parse_variable(struct parser *ps)
{
    ps->p++; /* '$' */
    const char *start = ps->p;
    if (!(isalpha((unsigned char)*ps->p) || *ps->p == '_'))
        return syntax_error(ps, "expected a variable name after '$'");
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
    char name[64];
    size_t n = (size_t)(ps->p - start);
    if (n >= sizeof(name)) {
        ps->p = start;
        return syntax_error(ps, "variable name too long");
    }
    memcpy(name, start, n);
    name[n] = '\0';
    double v = 1.0;
    if (!ps->lookup || !ps->lookup(ps->ctx, name, &v)) {
        if (ps->status == EXPR_OK) {
            ps->status = EXPR_UNKNOWN_VAR;
            snprintf(ps->err->name, sizeof(ps->err->name), "%s", name);
        }
        return 0.0;
    }
    return ps->check_only ? 1.0 : v;
}

static double parse_primary(struct parser *ps)
{
    skip_space(ps);
    char c = *ps->p;
    if (isdigit((unsigned char)c) || c == '.') return parse_number(ps);
    if (c == '$') return parse_variable(ps);
    if (c == '(') {
        ps->p++;
        double v = parse_expr(ps);
        skip_space(ps);
        if (*ps->p != ')') return syntax_error(ps, "expected ')'");
        ps->p++;
        return v;
    }
    return syntax_error(ps, "expected a number, a $variable or '('");
}

static double parse_unary(struct parser *ps)
{
    skip_space(ps);
    if (*ps->p == '-' || *ps->p == '+') {
        int neg = *ps->p == '-';
        ps->p++;
        if (++ps->depth > EXPR_MAX_DEPTH) return syntax_error(ps, "expression too deep");
        double v = parse_unary(ps);
        ps->depth--;
        return neg ? -v : v;
    }
    return parse_primary(ps);
}

static double parse_term(struct parser *ps)
{
    double v = parse_unary(ps);
    for (;;) {
        skip_space(ps);
        char op = *ps->p;
        if (op != '*' && op != '/') return v;
        ps->p++;
        double r = parse_unary(ps);
        if (op == '*') {
            v *= r;
        } else if (r == 0.0 && !ps->check_only) {
            if (ps->status == EXPR_OK) ps->status = EXPR_DIV_ZERO;
            v = 0.0;
        } else {
            v = r == 0.0 ? 0.0 : v / r;
        }
    }
}

static double parse_expr(struct parser *ps)
{
    if (++ps->depth > EXPR_MAX_DEPTH) return syntax_error(ps, "expression too deep");
    double v = parse_term(ps);
    for (;;) {
        skip_space(ps);
        char op = *ps->p;
        if (op != '+' && op != '-') break;
        ps->p++;
        double r = parse_term(ps);
        v = op == '+' ? v + r : v - r;
    }
    ps->depth--;
    return v;
}

int cfg_expr_eval(double *out, const char *text, cfg_expr_lookup lookup, void *ctx,
                  int check_only, struct cfg_expr_error *err)
{
    struct cfg_expr_error scratch;
    if (!err) err = &scratch;
    memset(err, 0, sizeof(*err));
    struct parser ps = {text, text, lookup, ctx, check_only, 0, EXPR_OK, err};
    double v = parse_expr(&ps);
    skip_space(&ps);
    if (ps.status == EXPR_OK && *ps.p != '\0')
        syntax_error(&ps, *ps.p == ')' ? "unbalanced ')'" : "expected an operator");
    if (ps.status == EXPR_OK && !check_only && !isfinite(v)) {
        ps.status = EXPR_RANGE;
        snprintf(err->msg, sizeof(err->msg), "the value is not finite");
    }
    if (ps.status == EXPR_OK && out) *out = v;
    return ps.status;
}
