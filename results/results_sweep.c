/* Sweeps as records: each `dawnrun run` that expands a grid stores one sweeps row (time,
 * command line, host), its axes and its members (grid position -> experiment), read back
 * by `--sweep last|ID` and `dawnrun sweeps`, and copied by a merge. The only SQL that
 * touches the sweep tables. */
#include "results_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/grow.h"

int results_sweep_record(struct results *db, int64_t *id, const struct results_sweep *s)
{
    int rc = DR_OK, step;
    sqlite3_stmt *ins = NULL, *axis = NULL, *member = NULL, *chk = NULL;
    *id = 0;
    CHECK_HANDLE(db);
    if (!s->command || !*s->command || s->n_members < 1 || s->n_axes < 0)
        FAIL(DR_ERR_INTERNAL, "results_sweep_record: a sweep needs a command and members");
    TX_BEGIN(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &ins,
        "INSERT INTO sweeps(created_at, command, host) VALUES ("
        /* strictly after every sweep recorded here, so that two records made within the
         * clock's millisecond stay apart (merge tells sweeps apart by time, command, host) */
        "max(" RESULTS_NOW_SQL ", coalesce((SELECT max(created_at) FROM sweeps), 0) + 0.001),"
        " ?1, ?2)"));
    CHECK_SQLITE(db, results_bind_text(ins, 1, s->command));
    CHECK_SQLITE(db, results_bind_text(ins, 2, s->host));
    CHECK_SQLITE(db, sqlite3_step(ins));
    int64_t sweep_id = sqlite3_last_insert_rowid(db->db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &axis,
        "INSERT INTO sweep_axes(sweep_id, position, key, vals) VALUES (?1, ?2, ?3, ?4)"));
    for (int i = 0; i < s->n_axes; i++) {
        CHECK_SQLITE(db, sqlite3_reset(axis));
        CHECK_SQLITE(db, sqlite3_bind_int64(axis, 1, sweep_id));
        CHECK_SQLITE(db, sqlite3_bind_int(axis, 2, i));
        CHECK_SQLITE(db, results_bind_text(axis, 3, s->axes[i].key));
        CHECK_SQLITE(db, results_bind_text(axis, 4, s->axes[i].vals ? s->axes[i].vals : ""));
        CHECK_SQLITE(db, sqlite3_step(axis));
    }
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &chk, "SELECT 1 FROM experiments WHERE id = ?1"));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &member,
        "INSERT INTO sweep_members(sweep_id, position, experiment_id) VALUES (?1, ?2, ?3)"));
    for (int i = 0; i < s->n_members; i++) {
        CHECK_SQLITE(db, sqlite3_reset(chk));
        CHECK_SQLITE(db, sqlite3_bind_int64(chk, 1, s->members[i]));
        CHECK_SQLITE(db, step = sqlite3_step(chk));
        if (step != SQLITE_ROW)
            FAIL(DR_ERR_DB, "%s: a sweep member is not a registered experiment (id %lld)",
                 db->path, (long long)s->members[i]);
        CHECK_SQLITE(db, sqlite3_reset(member));
        CHECK_SQLITE(db, sqlite3_bind_int64(member, 1, sweep_id));
        CHECK_SQLITE(db, sqlite3_bind_int(member, 2, i));
        CHECK_SQLITE(db, sqlite3_bind_int64(member, 3, s->members[i]));
        CHECK_SQLITE(db, sqlite3_step(member));
    }
    TX_COMMIT(db);
    *id = sweep_id;
cleanup:
    sqlite3_finalize(ins);
    sqlite3_finalize(axis);
    sqlite3_finalize(member);
    sqlite3_finalize(chk);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

void results_sweep_clear(struct results_sweep *s)
{
    if (!s) return;
    free((void *)s->command);
    free((void *)s->host);
    for (int i = 0; s->axes && i < s->n_axes; i++) {
        free((void *)s->axes[i].key);
        free((void *)s->axes[i].vals);
    }
    free(s->axes);
    free(s->members);
    memset(s, 0, sizeof *s);
}

void results_sweeps_free(struct results_sweep *arr, int n)
{
    for (int i = 0; arr && i < n; i++) results_sweep_clear(&arr[i]);
    free(arr);
}

/* Reads the axes and members of s (s->id set). */
static int read_parts(struct results *db, struct results_sweep *s)
{
    int rc = DR_OK, step, oom = 0, cap = 0;
    sqlite3_stmt *ax = NULL, *mem = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &ax,
        "SELECT key, vals FROM sweep_axes WHERE sweep_id = ?1 ORDER BY position"));
    CHECK_SQLITE(db, sqlite3_bind_int64(ax, 1, s->id));
    while ((step = sqlite3_step(ax)) == SQLITE_ROW) {
        if (grow_reserve(&s->axes, &cap, s->n_axes + 1, 4, sizeof *s->axes) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating sweep axes");
        struct results_sweep_axis *a = &s->axes[s->n_axes++];
        a->key = results_col_text(ax, 0, &oom);
        a->vals = results_col_text(ax, 1, &oom);
        if (oom) FAIL(DR_ERR_NOMEM, "out of memory reading sweep %lld", (long long)s->id);
    }
    CHECK_SQLITE(db, step);
    cap = 0;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &mem,
        "SELECT experiment_id FROM sweep_members WHERE sweep_id = ?1 ORDER BY position"));
    CHECK_SQLITE(db, sqlite3_bind_int64(mem, 1, s->id));
    while ((step = sqlite3_step(mem)) == SQLITE_ROW) {
        if (grow_reserve(&s->members, &cap, s->n_members + 1, 8, sizeof *s->members) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating sweep members");
        s->members[s->n_members++] = sqlite3_column_int64(mem, 0);
    }
    CHECK_SQLITE(db, step);
cleanup:
    sqlite3_finalize(ax);
    sqlite3_finalize(mem);
    return rc;
}

/* Steps st (id, created_at, command, host) to the end, collecting sweeps. */
static int collect(struct results *db, sqlite3_stmt *st, struct results_sweep **out, int *n)
{
    int rc = DR_OK, step, cap = 0, count = 0, oom = 0;
    struct results_sweep *arr = NULL;
    while ((step = sqlite3_step(st)) == SQLITE_ROW) {
        if (grow_reserve(&arr, &cap, count + 1, 8, sizeof *arr) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the sweep list");
        struct results_sweep *s = &arr[count++];
        memset(s, 0, sizeof *s);
        s->id = sqlite3_column_int64(st, 0);
        s->created_at = results_col_real(st, 1);
        s->command = results_col_text(st, 2, &oom);
        s->host = results_col_text(st, 3, &oom);
        if (oom) FAIL(DR_ERR_NOMEM, "out of memory reading the sweeps of %s", db->path);
    }
    CHECK_SQLITE(db, step);
    for (int i = 0; i < count; i++) TRY(read_parts(db, &arr[i]));
    *out = arr;
    *n = count;
    arr = NULL;
cleanup:
    results_sweeps_free(arr, count);
    return rc;
}

int results_sweeps_list(struct results *db, struct results_sweep **out, int *n)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    if (db->version < 4) goto cleanup;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT id, created_at, command, host FROM sweeps ORDER BY id"));
    TRY(collect(db, st, out, n));
cleanup:
    sqlite3_finalize(st);
    return rc;
}

int results_sweep_get(struct results *db, struct results_sweep *out, int *found, int64_t id)
{
    int rc = DR_OK, n = 0;
    struct results_sweep *arr = NULL;
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    *found = 0;
    CHECK_HANDLE(db);
    if (db->version < 4) goto cleanup;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT id, created_at, command, host FROM sweeps"
        " WHERE id = (CASE WHEN ?1 = 0 THEN (SELECT max(id) FROM sweeps) ELSE ?1 END)"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, id));
    TRY(collect(db, st, &arr, &n));
    if (n > 0) {
        *out = arr[0];
        memset(&arr[0], 0, sizeof arr[0]);
        *found = 1;
    }
cleanup:
    results_sweeps_free(arr, n);
    sqlite3_finalize(st);
    return rc;
}

/* Our experiment with the config hash of src's experiment src_id: *dst 0 when none. */
static int map_member(struct results *db, struct results *src, int64_t *dst, int64_t src_id)
{
    int rc = DR_OK, found = 0, step;
    struct results_experiment e;
    sqlite3_stmt *st = NULL;
    *dst = 0;
    memset(&e, 0, sizeof e);
    TRY(results_experiment_get(src, &e, &found, src_id));
    if (!found) goto cleanup;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st, "SELECT id FROM experiments WHERE config_hash = ?1"));
    CHECK_SQLITE(db, results_bind_text(st, 1, e.config_hash));
    CHECK_SQLITE(db, step = sqlite3_step(st));
    if (step == SQLITE_ROW) *dst = sqlite3_column_int64(st, 0);
cleanup:
    sqlite3_finalize(st);
    results_experiment_clear(&e);
    return rc;
}

int results_sweeps_merge(struct results *db, struct results *src)
{
    int rc = DR_OK, n = 0, step;
    struct results_sweep *in = NULL;
    sqlite3_stmt *seen = NULL, *ins = NULL, *axis = NULL, *member = NULL;
    TRY(results_sweeps_list(src, &in, &n));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &seen,
        "SELECT 1 FROM sweeps WHERE created_at = ?1 AND command = ?2 AND host IS ?3"));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &ins,
        "INSERT INTO sweeps(created_at, command, host) VALUES (?1, ?2, ?3)"));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &axis,
        "INSERT INTO sweep_axes(sweep_id, position, key, vals) VALUES (?1, ?2, ?3, ?4)"));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &member,
        "INSERT INTO sweep_members(sweep_id, position, experiment_id) VALUES (?1, ?2, ?3)"));
    for (int i = 0; i < n; i++) {
        const struct results_sweep *s = &in[i];
        CHECK_SQLITE(db, sqlite3_reset(seen));
        CHECK_SQLITE(db, results_bind_real(seen, 1, s->created_at));
        CHECK_SQLITE(db, results_bind_text(seen, 2, s->command));
        CHECK_SQLITE(db, results_bind_text(seen, 3, s->host));
        CHECK_SQLITE(db, step = sqlite3_step(seen));
        if (step == SQLITE_ROW) continue;
        CHECK_SQLITE(db, sqlite3_reset(ins));
        CHECK_SQLITE(db, results_bind_real(ins, 1, s->created_at));
        CHECK_SQLITE(db, results_bind_text(ins, 2, s->command));
        CHECK_SQLITE(db, results_bind_text(ins, 3, s->host));
        CHECK_SQLITE(db, sqlite3_step(ins));
        int64_t id = sqlite3_last_insert_rowid(db->db);
        for (int a = 0; a < s->n_axes; a++) {
            CHECK_SQLITE(db, sqlite3_reset(axis));
            CHECK_SQLITE(db, sqlite3_bind_int64(axis, 1, id));
            CHECK_SQLITE(db, sqlite3_bind_int(axis, 2, a));
            CHECK_SQLITE(db, results_bind_text(axis, 3, s->axes[a].key));
            CHECK_SQLITE(db, results_bind_text(axis, 4, s->axes[a].vals));
            CHECK_SQLITE(db, sqlite3_step(axis));
        }
        for (int m = 0; m < s->n_members; m++) {
            int64_t dst = 0;
            TRY(map_member(db, src, &dst, s->members[m]));
            if (dst == 0)
                FAIL(DR_ERR_DB, "%s: member %d of sweep %lld of the merged input has no "
                     "experiment here; nothing was merged", db->path, m, (long long)s->id);
            CHECK_SQLITE(db, sqlite3_reset(member));
            CHECK_SQLITE(db, sqlite3_bind_int64(member, 1, id));
            CHECK_SQLITE(db, sqlite3_bind_int(member, 2, m));
            CHECK_SQLITE(db, sqlite3_bind_int64(member, 3, dst));
            CHECK_SQLITE(db, sqlite3_step(member));
        }
    }
cleanup:
    sqlite3_finalize(seen);
    sqlite3_finalize(ins);
    sqlite3_finalize(axis);
    sqlite3_finalize(member);
    results_sweeps_free(in, n);
    return rc;
}
