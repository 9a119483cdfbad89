/* The flag parser of every dawnrun command: a command's table (struct cli_command,
 * cli_flags.h) turned into getopt_long's options, each value checked and stored by its
 * kind, the messages ours ("dawnrun CMD: ..."), never getopt's; and the command's usage
 * line and --help, printed from the same table. */
#define _GNU_SOURCE
#include "cli_flags.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

#define SYNOPSIS_WIDTH 88

/* getopt_long's value of the flag at index i of a table; -h and --list-flags after. */
#define VAL_FLAG(i) (256 + (i))
#define VAL_HELP 'h'
#define VAL_LIST 255

int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    dr_eprintf("dawnrun %s: %s\n", cmd->name, msg);
    cli_print_synopsis(stderr, cmd);
    return CLI_EXIT_USAGE;
}

/* How a flag's value is shown: its choices ("cpu|cuda|auto") when it has them, else
 * its placeholder; NULL for a switch. */
const char *cli_flag_value_text(const struct cli_flag *f)
{
    if (f->kind == CLI_SWITCH) return NULL;
    if (f->choices) return f->choices;
    return f->meta ? f->meta : "VALUE";
}

/* "--seeds N", "-o, --output PATH" as the flags list shows it. */
void cli_flag_label(char *buf, size_t size, const struct cli_flag *f)
{
    const char *v = cli_flag_value_text(f);
    int n = f->short_name ? snprintf(buf, size, "-%c, --%s", f->short_name, f->name)
                          : snprintf(buf, size, "--%s", f->name);
    if (v && n >= 0 && (size_t)n < size) snprintf(buf + n, size - (size_t)n, " %s", v);
}

void cli_print_synopsis(FILE *f, const struct cli_command *cmd)
{
    char item[128];
    int indent = fprintf(f, "usage: dawnrun %s", cmd->name);
    int col = indent;
    if (cmd->args && cmd->args[0]) col += fprintf(f, " %s", cmd->args);
    for (int k = 0; k < cmd->n_flags; k++) {
        const struct cli_flag *fl = &cmd->flags[k];
        const char *v = cli_flag_value_text(fl);
        if (fl->short_name && v) snprintf(item, sizeof item, "[-%c %s]", fl->short_name, v);
        else if (fl->short_name) snprintf(item, sizeof item, "[-%c]", fl->short_name);
        else if (v) snprintf(item, sizeof item, "[--%s %s]", fl->name, v);
        else snprintf(item, sizeof item, "[--%s]", fl->name);
        if (fl->repeat) strncat(item, "...", sizeof item - strlen(item) - 1);
        int len = (int)strlen(item);
        if (col + 1 + len > SYNOPSIS_WIDTH) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        }
        col += fprintf(f, " %s", item);
    }
    fputc('\n', f);
}

void cli_print_usage(FILE *f, const struct cli_command *cmd)
{
    char label[128];
    int width = (int)strlen("-h, --help");
    for (int k = 0; k < cmd->n_flags; k++) {
        cli_flag_label(label, sizeof label, &cmd->flags[k]);
        int n = (int)strlen(label);
        if (n > width && n <= 24) width = n;
    }
    cli_print_synopsis(f, cmd);
    fprintf(f, "\n%s\n", cmd->summary);
    fputs("\nflags:\n", f);
    for (int k = 0; k < cmd->n_flags; k++) {
        cli_flag_label(label, sizeof label, &cmd->flags[k]);
        if ((int)strlen(label) > width)
            fprintf(f, "  %s\n  %-*s  %s\n", label, width, "", cmd->flags[k].help);
        else
            fprintf(f, "  %-*s  %s\n", width, label, cmd->flags[k].help);
    }
    fprintf(f, "  %-*s  %s\n", width, "-h, --help", "print this help and exit");
    if (cmd->notes) fprintf(f, "\n%s", cmd->notes);
}

/* "--name" or "-o" as the user would write flag f. */
static void flag_spelling(char *buf, size_t size, const struct cli_flag *f, int as_short)
{
    if (as_short) snprintf(buf, size, "-%c", f->short_name);
    else snprintf(buf, size, "--%s", f->name);
}

/* 1 when `choices` ("a|b|c") holds v. */
static int choice_ok(const char *choices, const char *v)
{
    size_t n = strlen(v);
    for (const char *p = choices; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return 1;
        p = bar ? bar + 1 : p + len;
    }
    return 0;
}

/* Checks and stores one value of flag f (spelled `as` by the user) into opts. */
static int take(const struct cli_command *cmd, const struct cli_flag *f, const char *as,
                void *opts, const char *v)
{
    void *dst = (char *)opts + f->offset;
    char *end = NULL;
    long n;
    switch (f->kind) {
    case CLI_SWITCH:
        *(int *)dst = 1;
        return DR_OK;
    case CLI_STRING:
        if (!*v) {
            cli_usage_error(cmd, "%s needs a value", as);
            return DR_ERR_USAGE;
        }
        *(const char **)dst = v;
        return DR_OK;
    case CLI_LONG:
    case CLI_INT:
        errno = 0;
        n = strtol(v, &end, 10);
        if (errno || end == v || *end || n < f->min || n > f->max) {
            cli_usage_error(cmd, "%s: expected an integer in [%ld, %ld], got '%s'", as,
                            f->min, f->max, v);
            return DR_ERR_USAGE;
        }
        if (f->kind == CLI_LONG) *(long *)dst = n;
        else *(int *)dst = (int)n;
        return DR_OK;
    case CLI_CHOICE:
        if (!choice_ok(f->choices, v)) {
            char list[256];
            size_t o = 0;
            /* "a, b or c" from "a|b|c" */
            for (const char *p = f->choices; *p && o + 8 < sizeof list; p++) {
                if (*p != '|') {
                    list[o++] = *p;
                    continue;
                }
                const char *sep = strchr(p + 1, '|') ? ", " : " or ";
                memcpy(list + o, sep, strlen(sep));
                o += strlen(sep);
            }
            list[o] = '\0';
            cli_usage_error(cmd, "%s: expected %s, got '%s'", as, list, v);
            return DR_ERR_USAGE;
        }
        *(const char **)dst = v;
        return DR_OK;
    case CLI_CALL:
        if (f->call(dst, v, cmd->name) != DR_OK) {
            cli_print_synopsis(stderr, cmd);
            return DR_ERR_USAGE;
        }
        return DR_OK;
    }
    return DR_ERR_INTERNAL;
}

/* --list-flags: every spelling the parser accepts, from the options it was given. */
static void list_flags(const struct option *longs, const char *shorts)
{
    for (const char *p = shorts; *p; p++)
        if (*p != '-' && *p != ':') printf("-%c\n", *p);
    for (const struct option *o = longs; o->name; o++)
        if (o->val != VAL_LIST) printf("--%s\n", o->name);
}

/* The table's flag that getopt_long's value val stands for (VAL_FLAG(k) of a long flag,
 * or a short name; *as_short says which), or NULL. */
static const struct cli_flag *flag_of(const struct cli_command *cmd, int val, int *as_short)
{
    *as_short = 0;
    if (val >= VAL_FLAG(0) && val < VAL_FLAG(cmd->n_flags))
        return &cmd->flags[val - VAL_FLAG(0)];
    for (int k = 0; k < cmd->n_flags; k++)
        if (val > 0 && cmd->flags[k].short_name == val) {
            *as_short = 1;
            return &cmd->flags[k];
        }
    return NULL;
}

/* The word argv[at] names the long flag `name` exactly ("--name" or "--name=..."):
 * getopt_long would take an abbreviation, dawnrun does not. */
static int spelled_in_full(const char *word, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(word, "--", 2) && !strncmp(word + 2, name, n) &&
           (word[2 + n] == '\0' || word[2 + n] == '=');
}

/* The flag in word (for a message): "--x" of "--x=1", or the word itself. */
static void word_flag(char *buf, size_t size, const char *word)
{
    const char *eq = strchr(word, '=');
    size_t n = eq && !strncmp(word, "--", 2) ? (size_t)(eq - word) : strlen(word);
    if (n >= size) n = size - 1;
    memcpy(buf, word, n);
    buf[n] = '\0';
}

int cli_parse(const struct cli_command *cmd, void *opts, int argc, char **argv, int *n_args)
{
    int result = CLI_BAD, n = 0;
    struct option *longs = calloc((size_t)cmd->n_flags + 3, sizeof *longs);
    char *shorts = calloc((size_t)cmd->n_flags * 2 + 8, 1);
    const char **args = calloc((size_t)argc + 1, sizeof *args);
    *n_args = 0;
    if (!longs || !shorts || !args) {
        dr_eprintf("dawnrun %s: out of memory parsing the command line\n", cmd->name);
        goto done;
    }
    /* '-': positionals come back in order (as 1), whatever POSIXLY_CORRECT says;
     * ':': a missing value is ':', and getopt prints nothing (opterr off too) */
    char *s = shorts;
    *s++ = '-';
    *s++ = ':';
    *s++ = 'h';
    int k = 0;
    for (; k < cmd->n_flags; k++) {
        const struct cli_flag *f = &cmd->flags[k];
        longs[k].name = f->name;
        longs[k].has_arg = f->kind == CLI_SWITCH ? no_argument : required_argument;
        longs[k].val = VAL_FLAG(k);
        if (f->short_name) {
            *s++ = f->short_name;
            if (f->kind != CLI_SWITCH) *s++ = ':';
        }
    }
    longs[k++] = (struct option){"help", no_argument, NULL, VAL_HELP};
    longs[k++] = (struct option){"list-flags", no_argument, NULL, VAL_LIST};
    opterr = 0;
    optind = 0;   /* a fresh scan: getopt keeps state between calls */
    for (;;) {
        int at = optind ? optind : 1;   /* the word being read (a long flag's own word) */
        int c = getopt_long(argc, argv, shorts, longs, NULL);
        if (c == -1) break;
        int as_short = 0;
        char as[80];
        const struct cli_flag *f;
        if (c == 1) {
            args[n++] = optarg;
            continue;
        }
        if (c == VAL_HELP || c == VAL_LIST) {
            int is_long = !strncmp(argv[at], "--", 2);
            if (!is_long || spelled_in_full(argv[at], c == VAL_HELP ? "help" : "list-flags")) {
                if (c == VAL_HELP) cli_print_usage(stdout, cmd);
                else list_flags(longs, shorts + 2);
                result = CLI_HELP;
                goto done;
            }
            word_flag(as, sizeof as, argv[at]);
            cli_usage_error(cmd, "unknown flag '%s'", as);
            goto done;
        }
        if (c == '?' || c == ':') {
            f = flag_of(cmd, optopt, &as_short);
            if (!f && (optopt == VAL_HELP || optopt == VAL_LIST)) {
                /* --help=x, --list-flags=x */
                word_flag(as, sizeof as, argv[at]);
                cli_usage_error(cmd, "%s takes no value", as);
                goto done;
            }
            if (!f) {
                if (optopt > 0 && optopt < 256) snprintf(as, sizeof as, "-%c", optopt);
                else word_flag(as, sizeof as, argv[at]);
                cli_usage_error(cmd, "unknown flag '%s'", as);
            } else if (!as_short && !spelled_in_full(argv[at], f->name)) {
                word_flag(as, sizeof as, argv[at]);
                cli_usage_error(cmd, "unknown flag '%s'", as);
            } else {
                flag_spelling(as, sizeof as, f, as_short);
                if (c == ':') cli_usage_error(cmd, "%s needs a value", as);
                else cli_usage_error(cmd, "%s takes no value", as);
            }
            goto done;
        }
        f = flag_of(cmd, c, &as_short);
        if (!f) {
            cli_usage_error(cmd, "unknown flag '%s'", argv[at]);
            goto done;
        }
        if (!as_short && !spelled_in_full(argv[at], f->name)) {
            word_flag(as, sizeof as, argv[at]);
            cli_usage_error(cmd, "unknown flag '%s'", as);
            goto done;
        }
        flag_spelling(as, sizeof as, f, as_short);
        if (take(cmd, f, as, opts, f->kind == CLI_SWITCH ? "" : optarg) != DR_OK) goto done;
    }
    for (int i = optind; i < argc; i++) args[n++] = argv[i];   /* after "--" */
    for (int i = 0; i < n; i++) argv[1 + i] = (char *)args[i];
    if (1 + n < argc) argv[1 + n] = NULL;
    *n_args = n;
    result = CLI_PARSED;
done:
    free(longs);
    free(shorts);
    free(args);
    return result;
}
