/* Sequential batches as records: the design of each `dawnrun run --until-decided` batch
 * (found by its key, so that every process of one command shares one row), its members,
 * every look and the decision; read back by the report and copied by a merge. The only
 * SQL that touches the sequential tables. */
#include "results_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/grow.h"

/* Copies a decision or status text into a fixed field ("" for NULL). */
static void copy_word(char *dst, size_t size, const unsigned char *src)
{
    snprintf(dst, size, "%s", src ? (const char *)src : "");
}

/* Binds a confidence bound: an infinite or NaN bound is unknown (NULL). */
static int bind_bound(sqlite3_stmt *st, int i, double v)
{
    return results_bind_real(st, i, isfinite(v) ? v : NAN);
}

int results_seq_batch_open(struct results *db, int64_t *id, const struct results_seq_design *d)
{
    int rc = DR_OK, step;
    sqlite3_stmt *find = NULL, *ins = NULL, *chk = NULL, *member = NULL;
    *id = 0;
    CHECK_HANDLE(db);
    if (!d->key || !d->command || !d->method || !d->metric || d->n_members < 2)
        FAIL(DR_ERR_INTERNAL, "results_seq_batch_open: a batch needs a key and two members");
    TX_BEGIN(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &find, "SELECT id FROM sequential_batches WHERE key = ?1"));
    CHECK_SQLITE(db, results_bind_text(find, 1, d->key));
    CHECK_SQLITE(db, step = sqlite3_step(find));
    if (step == SQLITE_ROW) {
        *id = sqlite3_column_int64(find, 0);
        TX_COMMIT(db);
        goto cleanup;
    }
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &ins,
        "INSERT INTO sequential_batches(key, created_at, command, host, sweep_id, method,"
        " metric, alpha, delta, round_size, max_seeds) VALUES (?1, " RESULTS_NOW_SQL ","
        " ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"));
    CHECK_SQLITE(db, results_bind_text(ins, 1, d->key));
    CHECK_SQLITE(db, results_bind_text(ins, 2, d->command));
    CHECK_SQLITE(db, results_bind_text(ins, 3, d->host));
    if (d->sweep_id > 0) CHECK_SQLITE(db, sqlite3_bind_int64(ins, 4, d->sweep_id));
    CHECK_SQLITE(db, results_bind_text(ins, 5, d->method));
    CHECK_SQLITE(db, results_bind_text(ins, 6, d->metric));
    CHECK_SQLITE(db, results_bind_real(ins, 7, d->alpha));
    CHECK_SQLITE(db, results_bind_real(ins, 8, d->delta));
    CHECK_SQLITE(db, sqlite3_bind_int(ins, 9, d->round_size));
    CHECK_SQLITE(db, sqlite3_bind_int(ins, 10, d->max_seeds));
    CHECK_SQLITE(db, sqlite3_step(ins));
    int64_t batch = sqlite3_last_insert_rowid(db->db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &chk, "SELECT 1 FROM experiments WHERE id = ?1"));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &member,
        "INSERT INTO sequential_members(batch_id, position, experiment_id, decision)"
        " VALUES (?1, ?2, ?3, CASE WHEN ?2 = 0 THEN NULL ELSE 'undecided' END)"));
    for (int i = 0; i < d->n_members; i++) {
        CHECK_SQLITE(db, sqlite3_reset(chk));
        CHECK_SQLITE(db, sqlite3_bind_int64(chk, 1, d->members[i]));
        CHECK_SQLITE(db, step = sqlite3_step(chk));
        if (step != SQLITE_ROW)
            FAIL(DR_ERR_DB, "%s: a member of the sequential batch is not a registered "
                 "experiment (id %lld)", db->path, (long long)d->members[i]);
        CHECK_SQLITE(db, sqlite3_reset(member));
        CHECK_SQLITE(db, sqlite3_bind_int64(member, 1, batch));
        CHECK_SQLITE(db, sqlite3_bind_int(member, 2, i));
        CHECK_SQLITE(db, sqlite3_bind_int64(member, 3, d->members[i]));
        CHECK_SQLITE(db, sqlite3_step(member));
    }
    TX_COMMIT(db);
    *id = batch;
cleanup:
    sqlite3_finalize(find);
    sqlite3_finalize(ins);
    sqlite3_finalize(chk);
    sqlite3_finalize(member);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

/* Inserts one look unless (batch, look, position) is there, inside the caller's
 * transaction; st is the prepared statement of looks_record / the merge. */
static int insert_look(struct results *db, sqlite3_stmt *st, int64_t batch_id,
                       const struct results_seq_look *l, double at)
{
    int rc = DR_OK;
    CHECK_SQLITE(db, sqlite3_reset(st));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, batch_id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, l->look));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 3, l->position));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 4, l->n));
    CHECK_SQLITE(db, results_bind_real(st, 5, l->estimate));
    CHECK_SQLITE(db, bind_bound(st, 6, l->cs_lo));
    CHECK_SQLITE(db, bind_bound(st, 7, l->cs_hi));
    CHECK_SQLITE(db, bind_bound(st, 8, l->log_e));
    CHECK_SQLITE(db, results_bind_text(st, 9, l->decision));
    CHECK_SQLITE(db, results_bind_real(st, 10, at));
    CHECK_SQLITE(db, sqlite3_step(st));
cleanup:
    return rc;
}

#define LOOK_INSERT_SQL                                                                    \
    "INSERT OR IGNORE INTO sequential_looks(batch_id, look, position, n, estimate, cs_lo,"  \
    " cs_hi, log_e, decision, at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,"              \
    " coalesce(?10, " RESULTS_NOW_SQL "))"

int results_seq_looks_record(struct results *db, int64_t batch_id,
                             const struct results_seq_look *looks, int n_looks, int seeds_used)
{
    int rc = DR_OK;
    sqlite3_stmt *ins = NULL, *dec = NULL, *used = NULL;
    CHECK_HANDLE(db);
    TX_BEGIN(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &ins, LOOK_INSERT_SQL));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &dec,
        "UPDATE sequential_members SET decision = ?3 WHERE batch_id = ?1 AND position = ?2"
        " AND decision = 'undecided'"));
    for (int i = 0; i < n_looks; i++) {
        const struct results_seq_look *l = &looks[i];
        TRY(insert_look(db, ins, batch_id, l, NAN));
        if (!strcmp(l->decision, "undecided")) continue;
        CHECK_SQLITE(db, sqlite3_reset(dec));
        CHECK_SQLITE(db, sqlite3_bind_int64(dec, 1, batch_id));
        CHECK_SQLITE(db, sqlite3_bind_int(dec, 2, l->position));
        CHECK_SQLITE(db, results_bind_text(dec, 3, l->decision));
        CHECK_SQLITE(db, sqlite3_step(dec));
    }
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &used,
        "UPDATE sequential_batches SET seeds_used = max(coalesce(seeds_used, 0), ?2)"
        " WHERE id = ?1 AND status = 'running'"));
    CHECK_SQLITE(db, sqlite3_bind_int64(used, 1, batch_id));
    CHECK_SQLITE(db, sqlite3_bind_int(used, 2, seeds_used));
    CHECK_SQLITE(db, sqlite3_step(used));
    TX_COMMIT(db);
cleanup:
    sqlite3_finalize(ins);
    sqlite3_finalize(dec);
    sqlite3_finalize(used);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

int results_seq_batch_end(struct results *db, int64_t batch_id, const char *status,
                          int seeds_used)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_HANDLE(db);
    if (!status || (strcmp(status, "decided") && strcmp(status, "cap")))
        FAIL(DR_ERR_INTERNAL, "results_seq_batch_end: status '%s'", status ? status : "");
    TX_BEGIN(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE sequential_batches SET status = ?2, seeds_used = ?3,"
        " decided_at = " RESULTS_NOW_SQL " WHERE id = ?1 AND status = 'running'"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, batch_id));
    CHECK_SQLITE(db, results_bind_text(st, 2, status));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 3, seeds_used));
    CHECK_SQLITE(db, sqlite3_step(st));
    TX_COMMIT(db);
cleanup:
    sqlite3_finalize(st);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

/* ---- reading --------------------------------------------------------------------------- */

void results_seq_batch_clear(struct results_seq_batch *b)
{
    if (!b) return;
    free(b->key);
    free(b->command);
    free(b->host);
    free(b->method);
    free(b->metric);
    free(b->members);
    memset(b, 0, sizeof *b);
}

void results_seq_batches_free(struct results_seq_batch *arr, int n)
{
    for (int i = 0; arr && i < n; i++) results_seq_batch_clear(&arr[i]);
    free(arr);
}

#define LOOK_COLUMNS "look, position, n, estimate, cs_lo, cs_hi, log_e, decision, at"

/* Reads one look row (LOOK_COLUMNS). */
static void read_look(struct results_seq_look *l, sqlite3_stmt *st)
{
    memset(l, 0, sizeof *l);
    l->look = sqlite3_column_int(st, 0);
    l->position = sqlite3_column_int(st, 1);
    l->n = sqlite3_column_int(st, 2);
    l->estimate = results_col_real(st, 3);
    l->cs_lo = results_col_real(st, 4);
    l->cs_hi = results_col_real(st, 5);
    l->log_e = results_col_real(st, 6);
    copy_word(l->decision, sizeof l->decision, sqlite3_column_text(st, 7));
    l->at = results_col_real(st, 8);
}

/* Reads the members of b (b->id set), each with its latest look, and b->looks. */
static int read_members(struct results *db, struct results_seq_batch *b)
{
    int rc = DR_OK, step, cap = 0;
    sqlite3_stmt *mem = NULL, *last = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &mem,
        "SELECT position, experiment_id, decision FROM sequential_members"
        " WHERE batch_id = ?1 ORDER BY position"));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &last,
        "SELECT " LOOK_COLUMNS " FROM sequential_looks WHERE batch_id = ?1 AND position = ?2"
        " ORDER BY look DESC LIMIT 1"));
    CHECK_SQLITE(db, sqlite3_bind_int64(mem, 1, b->id));
    while ((step = sqlite3_step(mem)) == SQLITE_ROW) {
        if (grow_reserve(&b->members, &cap, b->n_members + 1, 4, sizeof *b->members) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the members of a sequential batch");
        struct results_seq_member *m = &b->members[b->n_members++];
        memset(m, 0, sizeof *m);
        m->position = sqlite3_column_int(mem, 0);
        m->experiment_id = sqlite3_column_int64(mem, 1);
        copy_word(m->decision, sizeof m->decision, sqlite3_column_text(mem, 2));
        CHECK_SQLITE(db, sqlite3_reset(last));
        CHECK_SQLITE(db, sqlite3_bind_int64(last, 1, b->id));
        CHECK_SQLITE(db, sqlite3_bind_int(last, 2, m->position));
        CHECK_SQLITE(db, step = sqlite3_step(last));
        if (step == SQLITE_ROW) {
            m->has_look = 1;
            read_look(&m->last, last);
            if (m->last.look > b->looks) b->looks = m->last.look;
        }
    }
    CHECK_SQLITE(db, step);
cleanup:
    sqlite3_finalize(mem);
    sqlite3_finalize(last);
    return rc;
}

#define BATCH_COLUMNS                                                                      \
    "id, created_at, key, command, host, sweep_id, method, metric, alpha, delta,"          \
    " round_size, max_seeds, status, seeds_used, decided_at"

/* Steps st (BATCH_COLUMNS) to the end, collecting batches with their members. */
static int collect(struct results *db, sqlite3_stmt *st, struct results_seq_batch **out, int *n)
{
    int rc = DR_OK, step, cap = 0, count = 0, oom = 0;
    struct results_seq_batch *arr = NULL;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow_reserve(&arr, &cap, count + 1, 4, sizeof *arr) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the sequential batches");
        struct results_seq_batch *b = &arr[count++];
        memset(b, 0, sizeof *b);
        b->id = sqlite3_column_int64(st, 0);
        b->created_at = results_col_real(st, 1);
        b->key = results_col_text(st, 2, &oom);
        b->command = results_col_text(st, 3, &oom);
        b->host = results_col_text(st, 4, &oom);
        b->sweep_id = sqlite3_column_int64(st, 5);
        b->method = results_col_text(st, 6, &oom);
        b->metric = results_col_text(st, 7, &oom);
        b->alpha = results_col_real(st, 8);
        b->delta = results_col_real(st, 9);
        b->round_size = sqlite3_column_int(st, 10);
        b->max_seeds = sqlite3_column_int(st, 11);
        copy_word(b->status, sizeof b->status, sqlite3_column_text(st, 12));
        b->seeds_used = sqlite3_column_int(st, 13);
        b->decided_at = results_col_real(st, 14);
        if (oom) FAIL(DR_ERR_NOMEM, "out of memory reading the sequential batches of %s", db->path);
    }
    CHECK_SQLITE(db, step);
    for (int i = 0; i < count; i++) TRY(read_members(db, &arr[i]));
    *out = arr;
    *n = count;
    arr = NULL;
cleanup:
    results_seq_batches_free(arr, count);
    return rc;
}

int results_seq_batch_find(struct results *db, struct results_seq_batch *out, int *found,
                           const char *key)
{
    int rc = DR_OK, n = 0;
    struct results_seq_batch *arr = NULL;
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    *found = 0;
    CHECK_HANDLE(db);
    if (db->version < 5) goto cleanup;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT " BATCH_COLUMNS " FROM sequential_batches WHERE key = ?1"));
    CHECK_SQLITE(db, results_bind_text(st, 1, key));
    TRY(collect(db, st, &arr, &n));
    if (n > 0) {
        *out = arr[0];
        memset(&arr[0], 0, sizeof arr[0]);
        *found = 1;
    }
cleanup:
    results_seq_batches_free(arr, n);
    sqlite3_finalize(st);
    return rc;
}

int results_seq_batches_of(struct results *db, struct results_seq_batch **out, int *n_out,
                           const int64_t *ids, int n)
{
    int rc = DR_OK, step, count = 0;
    struct results_seq_batch *all = NULL;
    sqlite3_stmt *st = NULL, *has = NULL;
    *out = NULL;
    *n_out = 0;
    CHECK_HANDLE(db);
    if (db->version < 5) goto cleanup;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT " BATCH_COLUMNS " FROM sequential_batches ORDER BY id"));
    TRY(collect(db, st, &all, &count));
    if (n == 0) {
        *out = all;
        *n_out = count;
        all = NULL;
        goto cleanup;
    }
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &has,
        "SELECT 1 FROM sequential_members WHERE batch_id = ?1 AND experiment_id = ?2"));
    int kept = 0;
    for (int i = 0; i < count; i++) {
        int member = 0;
        for (int k = 0; k < n && !member; k++) {
            CHECK_SQLITE(db, sqlite3_reset(has));
            CHECK_SQLITE(db, sqlite3_bind_int64(has, 1, all[i].id));
            CHECK_SQLITE(db, sqlite3_bind_int64(has, 2, ids[k]));
            CHECK_SQLITE(db, step = sqlite3_step(has));
            member = step == SQLITE_ROW;
        }
        if (member) {
            struct results_seq_batch keep = all[i];
            all[i] = all[kept];
            all[kept++] = keep;
        }
    }
    *out = all;
    *n_out = kept;
    for (int i = kept; i < count; i++) results_seq_batch_clear(&all[i]);
    all = NULL;
cleanup:
    results_seq_batches_free(all, count);
    sqlite3_finalize(st);
    sqlite3_finalize(has);
    return rc;
}

int results_seq_looks_list(struct results *db, struct results_seq_look **out, int *n,
                           int64_t batch_id)
{
    int rc = DR_OK, step, cap = 0, count = 0;
    struct results_seq_look *arr = NULL;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    if (db->version < 5) goto cleanup;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT " LOOK_COLUMNS " FROM sequential_looks WHERE batch_id = ?1"
        " ORDER BY look, position"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, batch_id));
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow_reserve(&arr, &cap, count + 1, 8, sizeof *arr) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the looks of a sequential batch");
        read_look(&arr[count++], st);
    }
    CHECK_SQLITE(db, step);
    *out = arr;
    *n = count;
    arr = NULL;
cleanup:
    free(arr);
    sqlite3_finalize(st);
    return rc;
}

/* ---- merging --------------------------------------------------------------------------- */

/* Our id for src's experiment src_id (by config hash) or sweep (by time, command and
 * host): *dst 0 when none. */
static int map_id(struct results *db, struct results *src, int64_t *dst, int64_t src_id,
                  int sweep)
{
    int rc = DR_OK, step;
    sqlite3_stmt *in = NULL, *ours = NULL;
    *dst = 0;
    CHECK_SQLITE(src, RESULTS_PREPARE(src, &in, sweep
        ? "SELECT created_at, command, host FROM sweeps WHERE id = ?1"
        : "SELECT config_hash FROM experiments WHERE id = ?1"));
    CHECK_SQLITE(src, sqlite3_bind_int64(in, 1, src_id));
    CHECK_SQLITE(src, step = sqlite3_step(in));
    if (step != SQLITE_ROW) goto cleanup;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &ours, sweep
        ? "SELECT id FROM sweeps WHERE created_at = ?1 AND command = ?2 AND host IS ?3"
        : "SELECT id FROM experiments WHERE config_hash = ?1"));
    for (int c = 0; c < (sweep ? 3 : 1); c++)
        CHECK_SQLITE(db, sqlite3_bind_value(ours, c + 1, sqlite3_column_value(in, c)));
    CHECK_SQLITE(db, step = sqlite3_step(ours));
    if (step == SQLITE_ROW) *dst = sqlite3_column_int64(ours, 0);
cleanup:
    sqlite3_finalize(in);
    sqlite3_finalize(ours);
    return rc;
}

int results_sequential_merge(struct results *db, struct results *src)
{
    int rc = DR_OK, n = 0, n_looks = 0, step;
    struct results_seq_batch *in = NULL;
    struct results_seq_look *looks = NULL;
    sqlite3_stmt *seen = NULL, *ins = NULL, *member = NULL, *look = NULL;
    TRY(results_seq_batches_of(src, &in, &n, NULL, 0));
    if (n == 0) goto cleanup;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &seen, "SELECT 1 FROM sequential_batches WHERE key = ?1"));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &ins,
        "INSERT INTO sequential_batches(key, created_at, command, host, sweep_id, method,"
        " metric, alpha, delta, round_size, max_seeds, status, seeds_used, decided_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &member,
        "INSERT INTO sequential_members(batch_id, position, experiment_id, decision)"
        " VALUES (?1, ?2, ?3, ?4)"));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &look, LOOK_INSERT_SQL));
    for (int i = 0; i < n; i++) {
        const struct results_seq_batch *b = &in[i];
        int64_t sweep = 0;
        CHECK_SQLITE(db, sqlite3_reset(seen));
        CHECK_SQLITE(db, results_bind_text(seen, 1, b->key));
        CHECK_SQLITE(db, step = sqlite3_step(seen));
        if (step == SQLITE_ROW) continue;      /* ours (the same design and members) */
        if (b->sweep_id) TRY(map_id(db, src, &sweep, b->sweep_id, 1));
        CHECK_SQLITE(db, sqlite3_reset(ins));
        CHECK_SQLITE(db, results_bind_text(ins, 1, b->key));
        CHECK_SQLITE(db, results_bind_real(ins, 2, b->created_at));
        CHECK_SQLITE(db, results_bind_text(ins, 3, b->command));
        CHECK_SQLITE(db, results_bind_text(ins, 4, b->host));
        if (sweep) CHECK_SQLITE(db, sqlite3_bind_int64(ins, 5, sweep));
        else CHECK_SQLITE(db, sqlite3_bind_null(ins, 5));
        CHECK_SQLITE(db, results_bind_text(ins, 6, b->method));
        CHECK_SQLITE(db, results_bind_text(ins, 7, b->metric));
        CHECK_SQLITE(db, results_bind_real(ins, 8, b->alpha));
        CHECK_SQLITE(db, results_bind_real(ins, 9, b->delta));
        CHECK_SQLITE(db, sqlite3_bind_int(ins, 10, b->round_size));
        CHECK_SQLITE(db, sqlite3_bind_int(ins, 11, b->max_seeds));
        CHECK_SQLITE(db, results_bind_text(ins, 12, b->status));
        if (b->seeds_used > 0) CHECK_SQLITE(db, sqlite3_bind_int(ins, 13, b->seeds_used));
        else CHECK_SQLITE(db, sqlite3_bind_null(ins, 13));
        CHECK_SQLITE(db, results_bind_real(ins, 14, b->decided_at));
        CHECK_SQLITE(db, sqlite3_step(ins));
        int64_t id = sqlite3_last_insert_rowid(db->db);
        for (int m = 0; m < b->n_members; m++) {
            int64_t dst = 0;
            TRY(map_id(db, src, &dst, b->members[m].experiment_id, 0));
            if (dst == 0)
                FAIL(DR_ERR_DB, "%s: member %d of sequential batch %lld of the merged input "
                     "has no experiment here; nothing was merged", db->path, m,
                     (long long)b->id);
            CHECK_SQLITE(db, sqlite3_reset(member));
            CHECK_SQLITE(db, sqlite3_bind_int64(member, 1, id));
            CHECK_SQLITE(db, sqlite3_bind_int(member, 2, b->members[m].position));
            CHECK_SQLITE(db, sqlite3_bind_int64(member, 3, dst));
            CHECK_SQLITE(db, results_bind_text(member, 4, b->members[m].decision[0]
                                                             ? b->members[m].decision : NULL));
            CHECK_SQLITE(db, sqlite3_step(member));
        }
        free(looks);
        looks = NULL;
        TRY(results_seq_looks_list(src, &looks, &n_looks, b->id));
        for (int k = 0; k < n_looks; k++) TRY(insert_look(db, look, id, &looks[k], looks[k].at));
    }
cleanup:
    free(looks);
    sqlite3_finalize(seen);
    sqlite3_finalize(ins);
    sqlite3_finalize(member);
    sqlite3_finalize(look);
    results_seq_batches_free(in, n);
    return rc;
}
