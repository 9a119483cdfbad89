/* The command-line parser of runner/cli/cli_flags.c on a table of every kind of flag: values
 * stored by kind, `--flag=value` and `--flag value`, short flags, positionals in their
 * order wherever the flags are, `--`, the usage errors (unknown, abbreviated, missing or
 * bad value, a value given to a switch) and help; several parses in one process (the
 * parser resets getopt's state); and the table of `dawnrun diff` (runner/cli/diff_args.c). */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "runner/cli/cli_flags.h"
#include "runner/cli/diff_args.h"

struct opts {
    int on;
    const char *name, *mode;
    long count;
    int level;
    const char *calls[4];
    int n_calls;
};

static int take_call(void *dst, const char *value, const char *cmd)
{
    struct opts *o = dst;
    (void)cmd;
    if (!strcmp(value, "bad")) {
        fprintf(stderr, "dawnrun t: --call: bad\n");
        return 1;
    }
    o->calls[o->n_calls++] = value;
    return 0;
}

static const struct cli_flag flags[] = {
    {.name = "on", .kind = CLI_SWITCH, .offset = offsetof(struct opts, on), .help = "a switch"},
    {.name = "name", .short_name = 'n', .kind = CLI_STRING,
     .offset = offsetof(struct opts, name), .meta = "NAME", .help = "a string"},
    {.name = "mode", .kind = CLI_CHOICE, .offset = offsetof(struct opts, mode),
     .choices = "fast|slow", .help = "a choice"},
    {.name = "count", .kind = CLI_LONG, .offset = offsetof(struct opts, count), .meta = "N",
     .min = 1, .max = 10, .help = "a long"},
    {.name = "counter", .kind = CLI_INT, .offset = offsetof(struct opts, level), .meta = "N",
     .min = 0, .max = 3, .help = "an int whose name extends another's"},
    {.name = "call", .kind = CLI_CALL, .meta = "X", .repeat = 1, .call = take_call,
     .help = "a callback"},
};

static const struct cli_command cmd = {
    .name = "t", .args = "[ARG ...]", .summary = "a test command", .flags = flags,
    .n_flags = (int)(sizeof flags / sizeof flags[0]),
};

/* Parses the words of `line` (space-separated, at most 15) as `dawnrun t ...`; *o is
 * cleared first; argv receives the words, args[] the positionals after. */
static int parse(struct opts *o, const char *line, const char **args, int *n_args)
{
    static char buf[512];
    char *argv[16];
    int argc = 0;
    snprintf(buf, sizeof buf, "t %s", line);
    for (char *w = strtok(buf, " "); w && argc < 15; w = strtok(NULL, " ")) argv[argc++] = w;
    argv[argc] = NULL;
    memset(o, 0, sizeof *o);
    int r = cli_parse(&cmd, o, argc, argv, n_args);
    for (int i = 0; r == CLI_PARSED && i < *n_args; i++) args[i] = argv[1 + i];
    return r;
}

static void check_values(void)
{
    struct opts o;
    const char *args[16];
    int n = 0;
    CHECK(parse(&o, "a --on --name=x --mode slow b --count=3 --counter 2 c", args, &n) ==
          CLI_PARSED);
    CHECK(o.on == 1 && !strcmp(o.name, "x") && !strcmp(o.mode, "slow"));
    CHECK(o.count == 3 && o.level == 2);
    CHECK(n == 3 && !strcmp(args[0], "a") && !strcmp(args[1], "b") && !strcmp(args[2], "c"));
    CHECK(parse(&o, "-n y --call=1 --call 2 -- --on -n", args, &n) == CLI_PARSED);
    CHECK(!strcmp(o.name, "y") && o.on == 0);
    CHECK(o.n_calls == 2 && !strcmp(o.calls[0], "1") && !strcmp(o.calls[1], "2"));
    CHECK(n == 2 && !strcmp(args[0], "--on") && !strcmp(args[1], "-n"));
    /* a value that looks like a flag is a value; "-" is a positional */
    CHECK(parse(&o, "--name --on - --count 1", args, &n) == CLI_PARSED);
    CHECK(!strcmp(o.name, "--on") && o.on == 0 && n == 1 && !strcmp(args[0], "-"));
    CHECK(parse(&o, "", args, &n) == CLI_PARSED && n == 0);
}

static void check_errors(void)
{
    struct opts o;
    const char *args[16];
    int n = 0;
    CHECK(parse(&o, "--nope", args, &n) == CLI_BAD);
    CHECK(parse(&o, "-q", args, &n) == CLI_BAD);
    CHECK(parse(&o, "--nam x", args, &n) == CLI_BAD);       /* an abbreviation */
    CHECK(parse(&o, "--count", args, &n) == CLI_BAD);       /* no value */
    CHECK(parse(&o, "a -n", args, &n) == CLI_BAD);
    CHECK(parse(&o, "--name=", args, &n) == CLI_BAD);       /* an empty string */
    CHECK(parse(&o, "--count=0", args, &n) == CLI_BAD);     /* out of range */
    CHECK(parse(&o, "--count=2x", args, &n) == CLI_BAD);
    CHECK(parse(&o, "--counter=4", args, &n) == CLI_BAD);
    CHECK(parse(&o, "--mode=medium", args, &n) == CLI_BAD);
    CHECK(parse(&o, "--on=1", args, &n) == CLI_BAD);        /* a switch takes no value */
    CHECK(parse(&o, "--call bad", args, &n) == CLI_BAD);
    CHECK(parse(&o, "--help=1", args, &n) == CLI_BAD);
    /* the state getopt keeps does not leak into the next parse: an error mid-cluster,
     * then a clean line */
    CHECK(parse(&o, "-nq", args, &n) == CLI_PARSED && !strcmp(o.name, "q"));
    CHECK(parse(&o, "-hq", args, &n) == CLI_HELP);
    CHECK(parse(&o, "x --count=2", args, &n) == CLI_PARSED && o.count == 2 && n == 1);
}

static void check_help(void)
{
    struct opts o;
    const char *args[16];
    int n = 0;
    CHECK(parse(&o, "a --help --nope", args, &n) == CLI_HELP);
    CHECK(parse(&o, "-h", args, &n) == CLI_HELP);
    CHECK(parse(&o, "--list-flags", args, &n) == CLI_HELP);
    CHECK(parse(&o, "--hel", args, &n) == CLI_BAD);
    CHECK(parse(&o, "-- --help", args, &n) == CLI_PARSED && n == 1);
}

static void check_diff(void)
{
    const struct cli_command table = {.name = "diff", .args = "A B", .flags = diff_flags,
                                      .n_flags = DIFF_N_FLAGS};
    const struct cli_command *cli_diff_flags = &table;
    struct diff_args d;
    char w[6][16] = {"diff", "A", "--all", "B", "--db=x.db", ""};
    char *argv[7] = {w[0], w[1], w[2], w[3], w[4], NULL, NULL};
    CHECK(diff_args_parse(&d, cli_diff_flags, 5, argv) == CLI_PARSED);
    CHECK(!strcmp(d.a, "A") && !strcmp(d.b, "B") && !strcmp(d.db, "x.db") && d.all == 1);
    char *one[3] = {w[0], w[1], NULL};
    strcpy(w[1], "A");
    CHECK(diff_args_parse(&d, cli_diff_flags, 2, one) == CLI_BAD);
    char *three[5] = {w[0], w[1], w[3], w[5], NULL};
    strcpy(w[5], "C");
    CHECK(diff_args_parse(&d, cli_diff_flags, 4, three) == CLI_BAD);
}

int main(void)
{
    check_values();
    check_errors();
    check_help();
    check_diff();
    return check_finish("test_cli_parse");
}
