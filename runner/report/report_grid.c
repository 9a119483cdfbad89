/* A table of text cells for the report and the query commands: filled cell by cell,
 * printed with aligned columns or as a GitHub (Markdown) table. */
#include "report_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/utf8.h"

int report_grid_init(struct report_grid *g, int rows, int cols)
{
    int rc = DR_OK;
    g->rows = rows;
    g->cols = cols;
    g->cells = calloc((size_t)rows * (size_t)cols + 1, sizeof *g->cells);
    CHECK_ALLOC(g->cells, "table cells");
cleanup:
    return rc;
}

int report_grid_set(struct report_grid *g, int row, int col, const char *fmt, ...)
{
    int rc = DR_OK;
    va_list ap;
    if (row < 0 || row >= g->rows || col < 0 || col >= g->cols)
        FAIL(DR_ERR_INTERNAL, "table cell (%d, %d) outside %d x %d", row, col, g->rows, g->cols);
    va_start(ap, fmt);
    int len = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = len >= 0 ? malloc((size_t)len + 1) : NULL;
    CHECK_ALLOC(s, "table cell");
    va_start(ap, fmt);
    vsnprintf(s, (size_t)len + 1, fmt, ap);
    va_end(ap);
    if (!utf8_valid(s)) {   /* a name with invalid bytes: the cell holds it repaired */
        char *fixed = utf8_repair(s);
        free(s);
        s = fixed;
        CHECK_ALLOC(s, "table cell");
    }
    free(g->cells[row * g->cols + col]);
    g->cells[row * g->cols + col] = s;
cleanup:
    return rc;
}

static const char *cell(const struct report_grid *g, int row, int col)
{
    const char *s = g->cells[row * g->cols + col];
    return s ? s : "";
}

/* Characters (not bytes) of a UTF-8 string: "±" is one column wide. */
static int width_of(const char *s)
{
    int w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xc0) != 0x80) w++;
    return w;
}

void report_grid_print(FILE *f, const struct report_grid *g, int rule)
{
    int total = 0;
    int *widths = calloc((size_t)g->cols + 1, sizeof *widths);
    if (!widths) return;
    for (int c = 0; c < g->cols; c++) {
        for (int r = 0; r < g->rows; r++) {
            int w = width_of(cell(g, r, c));
            if (w > widths[c]) widths[c] = w;
        }
        total += widths[c] + (c ? 2 : 0);
    }
    for (int r = 0; r < g->rows; r++) {
        int pending = 0;   /* spaces owed before the next non-empty cell */
        for (int c = 0; c < g->cols; c++) {
            const char *s = cell(g, r, c);
            if (*s) {
                fprintf(f, "%*s%s", pending, "", s);
                pending = 0;
            }
            pending += widths[c] - width_of(s) + (c + 1 < g->cols ? 2 : 0);
        }
        fputc('\n', f);
        if (r == 0 && rule) {
            for (int i = 0; i < total; i++) fputc('-', f);
            fputc('\n', f);
        }
    }
    free(widths);
}

/* A cell in a GitHub table: '|' escaped, newlines as spaces. */
static void markdown_cell(FILE *f, const char *s)
{
    fputc(' ', f);
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", f);
        else if (*s == '\n' || *s == '\r') fputc(' ', f);
        else fputc(*s, f);
    }
    fputs(" |", f);
}

void report_grid_print_markdown(FILE *f, const struct report_grid *g)
{
    for (int r = 0; r < g->rows; r++) {
        fputc('|', f);
        for (int c = 0; c < g->cols; c++) markdown_cell(f, cell(g, r, c));
        fputc('\n', f);
        if (r == 0) {
            fputc('|', f);
            for (int c = 0; c < g->cols; c++) fputs(c ? "---:|" : "---|", f);
            fputc('\n', f);
        }
    }
}

void report_grid_free(struct report_grid *g)
{
    for (int i = 0; g->cells && i < g->rows * g->cols; i++) free(g->cells[i]);
    free(g->cells);
    memset(g, 0, sizeof *g);
}
