/* Opening and closing the results database: connection settings, race-free schema
 * creation on a brand-new file, forward migrations, refusal of files that are not ours
 * or are newer than this build, reading from a directory we may not write, and the
 * integrity check. */
#include "results_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* schemas/results.sql and the migrations schemas/results-migrate-N.sql, embedded by the
 * build (cmake/embed.cmake). */
extern const char schema_results_sql[];
extern const unsigned long schema_results_sql_len;
extern const char schema_results_migrate_2_sql[];
extern const char schema_results_migrate_3_sql[];
extern const char schema_results_migrate_4_sql[];
extern const char schema_results_migrate_5_sql[];

#define RESULTS_APPLICATION_ID 0x44524e52   /* "DRNR", set by schemas/results.sql */

/* migrations[v] turns schema version v into v + 1 (v >= 1; version 0 -> current is the
 * schema file itself). Append one entry per new version; never edit an old one. Each
 * runs inside the transaction that then sets user_version, so a failure changes nothing. */
static const char *const migrations[RESULTS_SCHEMA_VERSION] = {
    NULL,                           /* 0 -> 1: schemas/results.sql */
    schema_results_migrate_2_sql,   /* 1 -> 2: experiments.notes, experiment_summary v2 */
    schema_results_migrate_3_sql,   /* 2 -> 3: runs' progress point and stall count */
    schema_results_migrate_4_sql,   /* 3 -> 4: params, overrides, sweeps */
    schema_results_migrate_5_sql,   /* 4 -> 5: binomial intervals, sequential batches */
};

/* Reads an integer PRAGMA of the main database into *out. */
static int pragma_int(struct results *r, const char *sql, int *out)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_SQLITE(r, RESULTS_PREPARE(r, &st, sql));
    CHECK_SQLITE(r, sqlite3_step(st));
    *out = sqlite3_column_int(st, 0);
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* sqlite3_step that retries SQLITE_BUSY for up to the busy timeout. For the first
 * statements on a connection only: switching to WAL needs an exclusive lock, and a
 * connection's first read can meet another process's WAL recovery or last-close
 * cleanup; in those cases SQLite may answer SQLITE_BUSY at once, without calling the
 * busy handler. */
static int step_patiently(struct results *r, sqlite3_stmt *st)
{
    int step, waited = 0;
    while ((step = sqlite3_step(st)) != SQLITE_ROW && (step & 0xff) == SQLITE_BUSY &&
           waited < r->busy_ms) {
        sqlite3_reset(st);
        int slept = sqlite3_sleep(5);
        waited += slept > 0 ? slept : 5;
    }
    return step;
}

struct identity {
    int version;    /* PRAGMA user_version */
    int app_id;     /* PRAGMA application_id */
    int objects;    /* tables, indexes, views, triggers */
};

/* Reads the three in one statement, hence from one snapshot: separate reads could
 * straddle another process's schema creation and see version 0 with tables. */
static int read_identity(struct results *r, struct identity *id)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_SQLITE(r, RESULTS_PREPARE(r, &st,
        "SELECT (SELECT user_version FROM pragma_user_version),"
        " (SELECT application_id FROM pragma_application_id),"
        " (SELECT count(*) FROM sqlite_schema)"));
    CHECK_SQLITE(r, step_patiently(r, st));
    id->version = sqlite3_column_int(st, 0);
    id->app_id = sqlite3_column_int(st, 1);
    id->objects = sqlite3_column_int(st, 2);
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* Refuses a database that is newer than this build or not ours (a negative schema
 * version included); one without a schema version must be empty to become ours. */
static int check_identity(struct results *r, const struct identity *id)
{
    int rc = DR_OK;
    if (id->version > RESULTS_SCHEMA_VERSION)
        FAIL(DR_ERR_DB,
             "%s: written by a newer dawnrun (results schema version %d; this dawnrun "
             "reads up to version %d): upgrade dawnrun to use it; the file was left untouched",
             r->path, id->version, RESULTS_SCHEMA_VERSION);
    if (id->version < 0)
        FAIL(DR_ERR_DB,
             "%s: results schema version %d is not one dawnrun writes: not a dawnrun "
             "results database; the file was left untouched", r->path, id->version);
    if (id->version > 0 && id->app_id != RESULTS_APPLICATION_ID)
        FAIL(DR_ERR_DB,
             "%s: an SQLite database of another application (application_id %d, "
             "user_version %d), not a dawnrun results database; the file was left untouched",
             r->path, id->app_id, id->version);
    if (id->version == 0 && (id->objects > 0 || id->app_id != 0))
        FAIL(DR_ERR_DB,
             "%s: an SQLite database with %d tables/indexes/views and no dawnrun schema "
             "version: not a dawnrun results database; the file was left untouched",
             r->path, id->objects);
cleanup:
    return rc;
}

/* Creates or migrates the schema while holding the write lock, re-reading the version
 * under the lock, so concurrent openers of one new file create it exactly once. */
static int ensure_schema(struct results *r)
{
    int rc = DR_OK;
    int version = 0;
    struct identity id;
    char sql[64];

    TRY(read_identity(r, &id));
    TRY(check_identity(r, &id));
    if (id.version == RESULTS_SCHEMA_VERSION) return DR_OK;

    TX_BEGIN(r);
    TRY(read_identity(r, &id));
    TRY(check_identity(r, &id));
    if (id.version == 0) {
        CHECK_SQLITE(r, sqlite3_exec(r->db, schema_results_sql, NULL, NULL, NULL));
        TRY(pragma_int(r, "PRAGMA user_version", &version));
        if (version != RESULTS_SCHEMA_VERSION)
            FAIL(DR_ERR_INTERNAL, "schemas/results.sql sets user_version %d, expected %d",
                 version, RESULTS_SCHEMA_VERSION);
    } else {
        for (int v = id.version; v < RESULTS_SCHEMA_VERSION; v++) {
            if (!migrations[v])
                FAIL(DR_ERR_INTERNAL, "no migration from results schema version %d", v);
            int sql_rc = sqlite3_exec(r->db, migrations[v], NULL, NULL, NULL);
            if (sql_rc != SQLITE_OK) {
                results_sql_fail(r, sql_rc, __FILE__, __LINE__);
                FAIL(DR_ERR_DB, "%s: migrating the results schema from version %d to %d "
                     "failed; the file was left at version %d", r->path, v, v + 1, id.version);
            }
        }
        TRY(results_binomial_fill(r));   /* the finished counts already recorded */
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d", RESULTS_SCHEMA_VERSION);
        CHECK_SQLITE(r, sqlite3_exec(r->db, sql, NULL, NULL, NULL));
    }
    TX_COMMIT(r);
cleanup:
    if (rc != DR_OK) results_tx_rollback(r);
    return rc;
}

/* Switches the file to WAL (persistent; a no-op once done). */
static int set_wal(struct results *r)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_SQLITE(r, RESULTS_PREPARE(r, &st, "PRAGMA journal_mode=WAL"));
    CHECK_SQLITE(r, step_patiently(r, st));
    const unsigned char *mode = sqlite3_column_text(st, 0);
    if (!mode || strcmp((const char *)mode, "wal") != 0)
        dr_eprintf("dawnrun: warning: %s: journal mode is %s, not WAL (file system "
                   "without shared memory?); concurrent workers will wait on each other\n",
                   r->path, mode ? (const char *)mode : "unknown");
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* A WAL database needs its -shm and -wal files next to it even to be read, and SQLite
 * creates them when missing; in a directory this process may not write (a read-only
 * mount, another user's results) that fails. When neither file exists there, no process
 * has the database open for writing (a writer creates both), so a reader may open it as
 * immutable: no locks, no -shm. Returns the "file:" URI for that case, malloc'd, or NULL
 * when the ordinary open is the right one (or memory ran out: *oom). */
static char *readonly_uri(const char *path, int *oom)
{
    struct stat sb;
    size_t len = strlen(path);
    char *side = malloc(len + 8), *dir = NULL, *uri = NULL;
    if (!side) goto nomem;
    snprintf(side, len + 8, "%s-wal", path);
    int has_wal = stat(side, &sb) == 0;
    snprintf(side, len + 8, "%s-shm", path);
    int has_shm = stat(side, &sb) == 0;
    free(side);
    if (has_wal || has_shm) return NULL;
    const char *slash = strrchr(path, '/');
    dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
    if (!dir) goto nomem;
    int writable = access(dir, W_OK) == 0;
    free(dir);
    if (writable) return NULL;
    uri = malloc(3 * len + 32);   /* every character escaped, at worst */
    if (!uri) goto nomem;
    char *u = uri + sprintf(uri, path[0] == '/' ? "file://" : "file:");
    for (const char *c = path; *c; c++) {
        if (*c == '%' || *c == '?' || *c == '#') u += sprintf(u, "%%%02x", (unsigned char)*c);
        else *u++ = *c;
    }
    strcpy(u, "?immutable=1");
    return uri;
nomem:
    *oom = 1;
    return NULL;
}

static int open_common(struct results **out, const char *path, int readonly)
{
    int rc = DR_OK;
    struct identity id;
    struct stat sb;
    struct results *r = NULL;
    char *uri = NULL;

    *out = NULL;
    if (!path || !*path) FAIL(DR_ERR_USAGE, "results: empty database path");
    if (readonly && stat(path, &sb) != 0)
        FAIL(DR_ERR_DB, "%s: no such results database", path);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        FAIL(DR_ERR_DB, "%s: is a directory, not a results database", path);

    r = calloc(1, sizeof *r);
    CHECK_ALLOC(r, "results handle");
    r->path = strdup(path);
    CHECK_ALLOC(r->path, "results path");
    r->owner = getpid();
    r->busy_ms = RESULTS_DEFAULT_BUSY_MS;
    r->readonly = readonly;

    int flags = SQLITE_OPEN_FULLMUTEX |
                (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
    int oom = 0;
    uri = readonly ? readonly_uri(path, &oom) : NULL;
    if (oom) FAIL(DR_ERR_NOMEM, "out of memory opening %s", path);
    CHECK_SQLITE(r, sqlite3_open_v2(uri ? uri : path, &r->db, flags | (uri ? SQLITE_OPEN_URI : 0),
                                    NULL));
    CHECK_SQLITE(r, sqlite3_busy_timeout(r->db, r->busy_ms));
    CHECK_SQLITE(r, sqlite3_exec(r->db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL));
    TRY(read_identity(r, &id));
    TRY(check_identity(r, &id));
    if (readonly) {
        /* an older version is read as it is: the queries read what it lacks as NULL */
        if (id.version < 1)
            FAIL(DR_ERR_DB, "%s: an empty database, not a dawnrun results database (yet)",
                 path);
        r->version = id.version;
    } else {
        /* foreign files were refused above, before the first write (WAL is a write) */
        TRY(set_wal(r));
        CHECK_SQLITE(r, sqlite3_exec(r->db, "PRAGMA synchronous = FULL", NULL, NULL, NULL));
        TRY(ensure_schema(r));
        r->version = RESULTS_SCHEMA_VERSION;
        TRY(results_binomial_ensure(r));
    }
    *out = r;
    r = NULL;
cleanup:
    free(uri);
    if (r) {
        sqlite3_close(r->db);
        free(r->path);
        free(r);
    }
    return rc;
}

int results_open(struct results **out, const char *path)
{
    return open_common(out, path, 0);
}

int results_open_readonly(struct results **out, const char *path)
{
    return open_common(out, path, 1);
}

void results_close(struct results *db)
{
    if (!db) return;
    /* After fork() the child must not close the parent's connection: SQLite could
     * checkpoint or remove the parent's WAL. Leak SQLite's state in that case. */
    if (db->owner == getpid()) sqlite3_close(db->db);
    free(db->path);
    free(db);
}

int results_set_busy_timeout(struct results *db, int ms)
{
    int rc = DR_OK;
    CHECK_HANDLE(db);
    CHECK_SQLITE(db, sqlite3_busy_timeout(db->db, ms));
    db->busy_ms = ms;
cleanup:
    return rc;
}

const char *results_path(const struct results *db)
{
    return db ? db->path : NULL;
}

int results_check_integrity(struct results *db)
{
    int rc = DR_OK;
    int step;
    sqlite3_stmt *st = NULL;
    CHECK_HANDLE(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st, "PRAGMA integrity_check"));
    CHECK_SQLITE(db, step = sqlite3_step(st));
    const unsigned char *first = step == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
    if (!first || strcmp((const char *)first, "ok") != 0)
        FAIL(DR_ERR_DB, "%s: integrity check failed: %s", db->path,
             first ? (const char *)first : "no answer");
    sqlite3_finalize(st);
    st = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st, "PRAGMA foreign_key_check"));
    CHECK_SQLITE(db, step = sqlite3_step(st));
    if (step == SQLITE_ROW)
        FAIL(DR_ERR_DB, "%s: foreign key check failed: table %s row %lld", db->path,
             (const char *)sqlite3_column_text(st, 0), (long long)sqlite3_column_int64(st, 1));
cleanup:
    sqlite3_finalize(st);
    return rc;
}
