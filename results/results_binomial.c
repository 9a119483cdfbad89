/* The binomial_ci table: the Clopper-Pearson 95 % intervals that experiment_summary joins
 * for its hit rate. Rows for every k = 0..n of every experiment's finished count (done +
 * diverged runs) are added by the writers that change such a count, inside their
 * transaction; a row is only ever inserted, never changed. */
#include "results_internal.h"

#include <stdlib.h>

#include "../base/grow.h"
#include "stats.h"

#define BINOMIAL_LEVEL 0.95

/* The finished counts n >= 1 of some experiment for which binomial_ci lacks a row
 * (k = 0..n: complete means n + 1 rows), smallest first. */
#define MISSING_COUNTS_SQL                                                                 \
    "SELECT f.n FROM (SELECT DISTINCT count(*) AS n FROM runs"                             \
    "                 WHERE status IN ('done', 'diverged') GROUP BY experiment_id) f"      \
    " WHERE (SELECT count(*) FROM binomial_ci c WHERE c.n = f.n) < f.n + 1 ORDER BY f.n"

/* Inserts the rows of n that are missing (k = 0..n), inside the caller's transaction. */
static int fill_count(struct results *db, int n)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "INSERT INTO binomial_ci(n, k, lo, hi) VALUES (?1, ?2, ?3, ?4)"
        " ON CONFLICT(n, k) DO NOTHING"));
    for (int k = 0; k <= n; k++) {
        double lo, hi;
        if (stats_binomial_ci(&lo, &hi, k, n, BINOMIAL_LEVEL) != DR_OK)
            FAIL(DR_ERR_INTERNAL, "results: no binomial interval for %d of %d", k, n);
        CHECK_SQLITE(db, sqlite3_reset(st));
        CHECK_SQLITE(db, sqlite3_bind_int(st, 1, n));
        CHECK_SQLITE(db, sqlite3_bind_int(st, 2, k));
        CHECK_SQLITE(db, sqlite3_bind_double(st, 3, lo));
        CHECK_SQLITE(db, sqlite3_bind_double(st, 4, hi));
        CHECK_SQLITE(db, sqlite3_step(st));
    }
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* *counts (malloc'd, *n of them; NULL when none) = the finished counts lacking rows. */
static int missing_counts(struct results *db, int **counts, int *n)
{
    int rc = DR_OK;
    int step, cap = 0, count = 0;
    int *arr = NULL;
    sqlite3_stmt *st = NULL;
    *counts = NULL;
    *n = 0;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st, MISSING_COUNTS_SQL));
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        if (grow_reserve(&arr, &cap, count + 1, 8, sizeof *arr) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating binomial interval counts");
        arr[count++] = sqlite3_column_int(st, 0);
    }
    *counts = arr;
    *n = count;
    arr = NULL;
cleanup:
    sqlite3_finalize(st);
    free(arr);
    return rc;
}

int results_binomial_fill(struct results *db)
{
    int rc = DR_OK;
    int n = 0;
    int *counts = NULL;
    TRY(missing_counts(db, &counts, &n));
    for (int i = 0; i < n; i++) TRY(fill_count(db, counts[i]));
cleanup:
    free(counts);
    return rc;
}

int results_binomial_ensure(struct results *db)
{
    int rc = DR_OK;
    int step;
    sqlite3_stmt *st = NULL;
    CHECK_HANDLE(db);
    /* a read first, so that the common case (nothing missing) takes no write lock */
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st, MISSING_COUNTS_SQL " LIMIT 1"));
    CHECK_SQLITE(db, step = sqlite3_step(st));
    sqlite3_finalize(st);
    st = NULL;
    if (step != SQLITE_ROW) return DR_OK;
    TX_BEGIN(db);
    TRY(results_binomial_fill(db));
    TX_COMMIT(db);
cleanup:
    sqlite3_finalize(st);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}
