/* The "Sequential decision" part of a report: for each batch run with `dawnrun run
 * --until-decided` that has a member among the reported experiments, its method, alpha,
 * delta, seeds used and each comparison's decision, estimate and final confidence
 * sequence, in the report's format (a section of the table, Markdown and HTML; a separate
 * block of CSV rows after a blank line; a "decisions" array in JSON). Nothing at all
 * when no reported experiment belongs to such a batch. */
#include "report_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/utf8.h"
#include "runner/cli/output.h"

/* The names of a batch's members (malloc'd array of malloc'd names; "?" when unknown). */
static int member_names(char ***out, struct results *db, const struct results_seq_batch *b)
{
    int rc = DR_OK, found = 0;
    struct results_experiment e;
    char **names = calloc((size_t)b->n_members + 1, sizeof *names);
    memset(&e, 0, sizeof e);
    CHECK_ALLOC(names, "the member names");
    for (int i = 0; i < b->n_members; i++) {
        TRY(results_experiment_get(db, &e, &found, b->members[i].experiment_id));
        names[i] = strdup(found && e.name ? e.name : "?");
        results_experiment_clear(&e);
        CHECK_ALLOC(names[i], "a member name");
    }
    *out = names;
    names = NULL;
cleanup:
    for (int i = 0; names && i < b->n_members; i++) free(names[i]);
    free(names);
    return rc;
}

static void names_free(char **names, int n)
{
    for (int i = 0; names && i < n; i++) free(names[i]);
    free(names);
}

/* The level of each comparison's confidence sequence, as a fraction (Bonferroni). */
static double level_of(const struct results_seq_batch *b)
{
    return 1.0 - b->alpha / (b->n_members > 1 ? b->n_members - 1 : 1);
}

/* "mean difference +0.84 pp, 95 % confidence sequence +0.31..+1.37 pp (10 seeds)" of a
 * member's last look. */
static void fmt_look(char *buf, size_t n, const struct results_seq_batch *b,
                     const struct results_seq_member *m)
{
    char level[32];
    snprintf(level, sizeof level, "%.4g %%", 100.0 * level_of(b));
    if (!m->has_look) snprintf(buf, n, "no look yet");
    else if (isnan(m->last.cs_lo) || isnan(m->last.cs_hi))
        snprintf(buf, n, "mean difference %+.2f pp, %s confidence sequence unbounded (%d "
                 "seeds)",
                 100.0 * m->last.estimate, level, m->last.n);
    else
        snprintf(buf, n, "mean difference %+.2f pp, %s confidence sequence %+.2f..%+.2f pp "
                 "(%d seeds)",
                 100.0 * m->last.estimate, level, 100.0 * m->last.cs_lo,
                 100.0 * m->last.cs_hi, m->last.n);
}

/* "decided after 10 seeds per experiment" / "not decided at the cap of 50 seeds" /
 * "running: 10 seeds per experiment so far". */
static void fmt_status(char *buf, size_t n, const struct results_seq_batch *b)
{
    if (!strcmp(b->status, "decided"))
        snprintf(buf, n, "decided after %d seeds per experiment", b->seeds_used);
    else if (!strcmp(b->status, "cap"))
        snprintf(buf, n, "not decided at the cap of %d seeds", b->seeds_used);
    else
        snprintf(buf, n, "running: %d seeds per experiment so far (cap %d)", b->seeds_used,
                 b->max_seeds);
}

static void html_escape(FILE *f, const char *s)
{
    for (const char *p = s ? s : ""; *p;) {
        uint32_t cp;
        int n = utf8_decode(&cp, p);
        if (n == 0 || cp < 0x20) fputs(UTF8_REPLACEMENT, f);
        else if (cp == '&') fputs("&amp;", f);
        else if (cp == '<') fputs("&lt;", f);
        else if (cp == '>') fputs("&gt;", f);
        else if (cp == '"') fputs("&quot;", f);
        else if (cp == '\'') fputs("&#39;", f);
        else fwrite(p, 1, (size_t)n, f);
        p += n > 0 ? n : 1;
    }
}

/* Markdown text: the characters that mean something escaped. */
static void md_escape(FILE *f, const char *s)
{
    for (const char *p = s ? s : ""; *p;) {
        uint32_t cp;
        int n = utf8_decode(&cp, p);
        if (n == 0) fputs(UTF8_REPLACEMENT, f);
        else if (strchr("\\`*_[]<>|#", *p)) fprintf(f, "\\%c", *p);
        else fwrite(p, 1, (size_t)n, f);
        p += n > 0 ? n : 1;
    }
}

/* One batch in a text format (table, Markdown, HTML). */
static void write_text(FILE *f, const struct results_seq_batch *b, char **names,
                       enum report_format fmt)
{
    char status[128], look[192];
    fmt_status(status, sizeof status, b);
    if (fmt == REPORT_HTML) {
        fprintf(f, "<section class=\"decision\" id=\"decision-%lld\">\n<h2>Sequential "
                "decision</h2>\n<p>Batch %lld, baseline <strong>", (long long)b->id,
                (long long)b->id);
        html_escape(f, names[0]);
        fprintf(f, "</strong>: %s. Method: ", status);
        html_escape(f, b->method);
        fprintf(f, "; alpha %g, delta %.2f pp, rounds of %d seeds.</p>\n<ul>\n", b->alpha,
                100.0 * b->delta, b->round_size);
    } else if (fmt == REPORT_MARKDOWN) {
        fprintf(f, "\n### Sequential decision\n\nBatch %lld, baseline ", (long long)b->id);
        md_escape(f, names[0]);
        fprintf(f, ": %s. Method: ", status);
        md_escape(f, b->method);
        fprintf(f, "; alpha %g, delta %.2f pp, rounds of %d seeds.\n\n", b->alpha,
                100.0 * b->delta, b->round_size);
    } else {
        output_text(f, "\nSequential decision (batch %lld, baseline %s): %s\n",
                    (long long)b->id, names[0], status);
        output_text(f, "  method: %s\n", b->method);
        fprintf(f, "  alpha %g, delta %.2f pp, rounds of %d seeds, cap %d\n", b->alpha,
                100.0 * b->delta, b->round_size, b->max_seeds);
    }
    for (int i = 1; i < b->n_members; i++) {
        const struct results_seq_member *m = &b->members[i];
        fmt_look(look, sizeof look, b, m);
        if (fmt == REPORT_HTML) {
            fputs("<li><strong>", f);
            html_escape(f, names[i]);
            fputs("</strong> vs ", f);
            html_escape(f, names[0]);
            fprintf(f, ": %s, %s</li>\n", m->decision, look);
        } else if (fmt == REPORT_MARKDOWN) {
            fputs("- ", f);
            md_escape(f, names[i]);
            fputs(" vs ", f);
            md_escape(f, names[0]);
            fprintf(f, ": **%s**, %s\n", m->decision, look);
        } else {
            output_text(f, "  %s vs %s: %s, %s\n", names[i], names[0], m->decision, look);
        }
    }
    if (fmt == REPORT_HTML) fputs("</ul>\n</section>\n", f);
}

static const char *const csv_columns[] = {
    "sequential_batch", "status", "seeds_used", "max_seeds", "round_size", "alpha", "delta",
    "method", "baseline_experiment_id", "experiment_id", "decision", "look", "n",
    "estimate", "cs_lo", "cs_hi", "log_e",
};
#define N_CSV ((int)(sizeof csv_columns / sizeof csv_columns[0]))

/* One batch's comparisons as CSV rows (after the header write_all printed). */
static void write_csv(FILE *f, const struct results_seq_batch *b)
{
    for (int i = 1; i < b->n_members; i++) {
        const struct results_seq_member *m = &b->members[i];
        fprintf(f, "%lld,", (long long)b->id);
        output_csv_text(f, b->status, 0);
        fprintf(f, "%d,%d,%d,", b->seeds_used, b->max_seeds, b->round_size);
        output_csv_num(f, b->alpha, 0);
        output_csv_num(f, b->delta, 0);
        output_csv_text(f, b->method, 0);
        fprintf(f, "%lld,%lld,", (long long)b->members[0].experiment_id,
                (long long)m->experiment_id);
        output_csv_text(f, m->decision, 0);
        if (m->has_look) fprintf(f, "%d,%d,", m->last.look, m->last.n);
        else fputs(",,", f);
        output_csv_num(f, m->has_look ? m->last.estimate : NAN, 0);
        output_csv_num(f, m->has_look ? m->last.cs_lo : NAN, 0);
        output_csv_num(f, m->has_look ? m->last.cs_hi : NAN, 0);
        output_csv_num(f, m->has_look ? m->last.log_e : NAN, 1);
    }
}

/* One batch as a JSON object. */
static void write_json(FILE *f, const struct results_seq_batch *b, char **names)
{
    fprintf(f, "    {\n      \"sequential_batch\": %lld,\n      \"status\": ", (long long)b->id);
    output_json_string(f, b->status);
    fprintf(f, ",\n      \"seeds_used\": %d,\n      \"max_seeds\": %d,\n      \"round_size\": "
            "%d", b->seeds_used, b->max_seeds, b->round_size);
    output_json_num(f, ",\n      ", "alpha", b->alpha);
    output_json_num(f, ",\n      ", "delta", b->delta);
    fputs(",\n      \"method\": ", f);
    output_json_string(f, b->method);
    fputs(",\n      \"metric\": ", f);
    output_json_string(f, b->metric);
    fprintf(f, ",\n      \"baseline\": {\"experiment_id\": %lld, \"name\": ",
            (long long)b->members[0].experiment_id);
    output_json_string(f, names[0]);
    fputs("},\n      \"comparisons\": [", f);
    for (int i = 1; i < b->n_members; i++) {
        const struct results_seq_member *m = &b->members[i];
        fprintf(f, "%s\n        {\"experiment_id\": %lld, \"name\": ", i > 1 ? "," : "",
                (long long)m->experiment_id);
        output_json_string(f, names[i]);
        fputs(", \"decision\": ", f);
        output_json_string(f, m->decision);
        if (m->has_look) fprintf(f, ", \"look\": %d, \"n\": %d", m->last.look, m->last.n);
        else fputs(", \"look\": null, \"n\": null", f);
        output_json_num(f, ", ", "estimate", m->has_look ? m->last.estimate : NAN);
        output_json_num(f, ", ", "cs_lo", m->has_look ? m->last.cs_lo : NAN);
        output_json_num(f, ", ", "cs_hi", m->has_look ? m->last.cs_hi : NAN);
        output_json_num(f, ", ", "log_e", m->has_look ? m->last.log_e : NAN);
        fputc('}', f);
    }
    fputs("\n      ]\n    }", f);
}

int report_decisions_write(FILE *f, const struct report *r, enum report_format fmt)
{
    int rc = DR_OK, n = 0;
    struct results_seq_batch *batches = NULL;
    int64_t *ids = NULL;
    char **names = NULL;
    int n_names = 0;
    if (!r->db || r->group_key || r->n == 0) return DR_OK;
    ids = malloc((size_t)r->n * sizeof *ids);
    CHECK_ALLOC(ids, "the experiment ids");
    for (int i = 0; i < r->n; i++) ids[i] = r->exps[i].x.id;
    TRY(results_seq_batches_of(r->db, &batches, &n, ids, r->n));
    if (n == 0) goto cleanup;
    if (fmt == REPORT_CSV) {
        fputc('\n', f);
        for (int c = 0; c < N_CSV; c++) output_csv_text(f, csv_columns[c], c == N_CSV - 1);
    }
    if (fmt == REPORT_JSON) fputs(",\n  \"decisions\": [\n", f);
    for (int k = 0; k < n; k++) {
        const struct results_seq_batch *b = &batches[k];
        if (b->n_members < 2) continue;
        TRY(member_names(&names, r->db, b));
        n_names = b->n_members;
        if (fmt == REPORT_CSV) write_csv(f, b);
        else if (fmt == REPORT_JSON) {
            if (k) fputs(",\n", f);
            write_json(f, b, names);
        } else write_text(f, b, names, fmt);
        names_free(names, n_names);
        names = NULL;
    }
    if (fmt == REPORT_JSON) fputs("\n  ]", f);
cleanup:
    names_free(names, n_names);
    results_seq_batches_free(batches, n);
    free(ids);
    return rc;
}
