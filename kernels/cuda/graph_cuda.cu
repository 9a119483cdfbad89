/* CUDA graphs for replayable plans (kernels/plan.h): a plan that is run again unchanged is
 * run once eagerly (the warm-up: algorithm choices, scratch growth and one-time uploads
 * happen there), captured into a graph on its next run, and from then on replayed with one
 * cudaGraphLaunch per run, for as long as its signature and the scratch buffers its kernels
 * address are unchanged. Each plan keeps a few graphs, one per signature it ran with (a
 * shorter last evaluation batch, swapped weight-averaging handles), the least recently used
 * one recaptured in place (cudaGraphExecUpdate where the topology allows); a freed plan's
 * graphs are dropped (cuda_graph_forget). The counts a
 * captured run made are taken out of the host counts and added to the graph_* counts at
 * each launch (kernels/counters.h). A plan whose capture fails (an operation capture
 * refuses, work a step must not do, an exec that cannot be made) is said once on stderr,
 * naming the node that cannot be captured, runs that step eagerly, and runs without graphs
 * from then on. DAWNRUN_CUDA_GRAPH=0, read when a context first runs a plan, turns graphs
 * off: every plan then runs eagerly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "../../base/env.h"
#include "../../base/grow.h"

#define GRAPH_SLOTS 4   /* graphs kept per plan, one per signature */

/* One signature's graph of a plan. */
struct graph_slot {
    uint64_t signature;
    int used;                            /* 1: signature is this slot's */
    int warmed;                          /* the plan ran eagerly with this signature */
    int captured;                        /* exec replays this signature's run */
    unsigned long long last_use;
    cudaGraphExec_t exec;                /* may be an older signature's: updated in place */
    void *scratch[SLOT_COUNT];           /* the scratch buffers at capture */
    struct backend_counters counted;     /* what the captured run counted */
};

struct graph_entry {
    const struct plan *plan;
    int eager;                           /* a capture failed: runs without graphs for good */
    struct graph_slot slots[GRAPH_SLOTS];
};

struct graph_cache {
    int enabled;
    unsigned long long clock;
    struct graph_entry *entries;
    int count, cap;
};

static const char *const phase_names[PLAN_PHASE_COUNT] = {"batch", "forward", "loss",
                                                          "backward", "optimizer"};

/* The context's cache, created on first use (which reads DAWNRUN_CUDA_GRAPH). */
static int graph_cache_get(struct cuda_ctx *c, struct graph_cache **out)
{
    int rc = DR_OK;
    struct graph_cache *g = (struct graph_cache *)c->graphs;
    if (!g) {
        g = (struct graph_cache *)calloc(1, sizeof(*g));
        CHECK_ALLOC(g, "the CUDA graph cache");
        g->enabled = env_switch_on("DAWNRUN_CUDA_GRAPH");
        c->graphs = g;
    }
    *out = g;
cleanup:
    return rc;
}

/* The entry of plan p, added (all slots empty) when p is new. */
static int graph_entry_get(struct graph_cache *g, const struct plan *p, struct graph_entry **out)
{
    int rc = DR_OK;
    for (int i = 0; i < g->count; i++)
        if (g->entries[i].plan == p) {
            *out = &g->entries[i];
            return DR_OK;
        }
    if (grow_reserve(&g->entries, &g->cap, g->count + 1, 8, sizeof(*g->entries)) != DR_OK)
        FAIL(DR_ERR_NOMEM, "out of memory allocating the CUDA graph cache");
    *out = &g->entries[g->count++];
    memset(*out, 0, sizeof(**out));
    (*out)->plan = p;
cleanup:
    return rc;
}

/* The slot of signature sig: its own, else an unused one, else the least recently used
 * one, taken over (its exec kept, to be updated by the next capture). */
static struct graph_slot *graph_slot_get(struct graph_entry *e, uint64_t sig)
{
    struct graph_slot *pick = NULL;
    for (int i = 0; i < GRAPH_SLOTS; i++)
        if (e->slots[i].used && e->slots[i].signature == sig) return &e->slots[i];
    for (int i = 0; i < GRAPH_SLOTS && !pick; i++)
        if (!e->slots[i].used) pick = &e->slots[i];
    if (!pick) {
        pick = &e->slots[0];
        for (int i = 1; i < GRAPH_SLOTS; i++)
            if (e->slots[i].last_use < pick->last_use) pick = &e->slots[i];
    }
    pick->used = 1;
    pick->signature = sig;
    pick->warmed = 0;
    pick->captured = 0;
    return pick;
}

/* 1 when the scratch buffers are those the slot's graph was captured with. */
static int graph_scratch_same(const struct cuda_ctx *c, const struct graph_slot *s)
{
    for (int k = 0; k < SLOT_COUNT; k++)
        if (c->scratch[k].ptr != s->scratch[k]) return 0;
    return 1;
}

/* After a failed capture of p: finds the first node that cannot be captured on its own
 * (each node run through plan_run_node, as a plan of one node would run, captured
 * into a graph that is thrown away; nothing runs) and says which in why (len bytes).
 * Leaves the counts and the stream as they were, and no state of the runner's behind. */
static void graph_blame(struct cuda_ctx *c, const struct plan *p, char *why, size_t len)
{
    const struct backend_counters saved = c->counts;
    const struct backend b = {c->ops, c};
    int bad = -1;
    for (int i = 0; i < p->count && bad < 0; i++) {
        cudaGraph_t scrap = NULL;
        if (cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeGlobal) != cudaSuccess) break;
        const int node_rc = plan_run_node(&b, &p->nodes[i]);
        const cudaError_t end = cudaStreamEndCapture(c->stream, &scrap);
        if (scrap) cudaGraphDestroy(scrap);
        if (node_rc != DR_OK || end != cudaSuccess) bad = i;
    }
    cuda_clear_library_error();
    c->counts = saved;
    if (bad < 0) {
        snprintf(why, len,
                 "a plan of %d nodes cannot be captured into a CUDA graph, though each node "
                 "can on its own (a fused kernel synchronises, allocates or copies between "
                 "host and device)", p->count);
        return;
    }
    const struct plan_node *n = &p->nodes[bad];
    snprintf(why, len,
             "plan node %d of %d (%s, %s, layer %d) cannot be captured into a CUDA graph: it "
             "synchronises, allocates or copies between host and device during a step",
             bad, p->count, plan_op_name(n->op),
             (unsigned)n->phase < PLAN_PHASE_COUNT ? phase_names[n->phase] : "?", n->layer);
}

/* Captures one run of p (through run) on the stream into s->exec, updating the exec s
 * already holds when the topology allows, else instantiating a new one; 1 when it did.
 * The capture runs nothing, so the counts it made are moved into s->counted. When the
 * capture fails (an operation capture refuses, graph_blame naming its node; work a step
 * must not do; an exec that cannot be made), the capture is ended (the stream usable
 * again, its error cleared), why (len bytes) says why, s is left uncaptured and 0 is
 * returned: nothing has run. */
static int graph_capture(struct cuda_ctx *c, const struct plan *p, cuda_plan_runner run,
                         struct graph_slot *s, char *why, size_t len)
{
    int run_rc = DR_OK, ok = 0;
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaSuccess;
    const struct backend_counters before = c->counts;
    struct backend_counters rec;
    s->captured = 0;
    e = cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeGlobal);
    if (e != cudaSuccess) {
        snprintf(why, len, "cudaStreamBeginCapture: %s", cudaGetErrorString(e));
        goto cleanup;
    }
    run_rc = run(c, p);
    e = cudaStreamEndCapture(c->stream, &graph);   /* always: the stream stops capturing */
    backend_counters_diff(&rec, &c->counts, &before);
    c->counts = before;
    if (run_rc != DR_OK || e != cudaSuccess) {
        cuda_clear_library_error();
        graph_blame(c, p, why, len);
        goto cleanup;
    }
    /* what real capture would accept but a step must not do (a pinned copy, say) */
    if (rec.syncs || rec.allocs || rec.frees || rec.h2d_copies || rec.d2h_copies) {
        snprintf(why, len,
                 "a plan of %d nodes, captured into a CUDA graph, counted %llu "
                 "synchronisations, %llu allocations, %llu frees and %llu host<->device "
                 "copies: a step must do none", p->count, (unsigned long long)rec.syncs,
                 (unsigned long long)rec.allocs, (unsigned long long)rec.frees,
                 (unsigned long long)(rec.h2d_copies + rec.d2h_copies));
        goto cleanup;
    }
    if (s->exec) {
        cudaGraphExecUpdateResultInfo info;
        if (cudaGraphExecUpdate(s->exec, graph, &info) != cudaSuccess) {
            cuda_clear_library_error();   /* another topology: a new exec below */
            cudaGraphExecDestroy(s->exec);
            s->exec = NULL;
        }
    }
    if (!s->exec) {
        e = cudaGraphInstantiate(&s->exec, graph, 0);
        if (e != cudaSuccess) {
            s->exec = NULL;
            cuda_clear_library_error();
            snprintf(why, len, "a plan of %d nodes, captured, cannot be made an executable "
                     "CUDA graph (cudaGraphInstantiate: %s)", p->count, cudaGetErrorString(e));
            goto cleanup;
        }
    }
    for (int k = 0; k < SLOT_COUNT; k++) s->scratch[k] = c->scratch[k].ptr;
    s->counted = rec;
    s->captured = 1;
    c->counts.graph_captures++;
    ok = 1;
cleanup:
    if (graph) cudaGraphDestroy(graph);
    return ok;
}

/* Destroys entry e's executable graphs and empties its slots (an exec still running is
 * freed when it completes: cudaGraphExecDestroy). */
static void graph_entry_drop(struct graph_entry *e)
{
    for (int k = 0; k < GRAPH_SLOTS; k++)
        if (e->slots[k].exec) cudaGraphExecDestroy(e->slots[k].exec);
    memset(e->slots, 0, sizeof(e->slots));
}

/* After a failed capture of entry e's plan: its graphs go, and it runs eagerly for good. */
static void graph_entry_eager(struct graph_entry *e)
{
    graph_entry_drop(e);
    e->eager = 1;
}

int cuda_graph_run(struct cuda_ctx *c, const struct plan *p, cuda_plan_runner run)
{
    int rc = DR_OK;
    struct graph_cache *g = NULL;
    struct graph_entry *e = NULL;
    struct graph_slot *s = NULL;
    if (!p->replayable) return run(c, p);
    TRY(graph_cache_get(c, &g));
    if (!g->enabled) return run(c, p);
    TRY(cuda_enter(c));
    TRY(graph_entry_get(g, p, &e));
    if (e->eager) return run(c, p);
    s = graph_slot_get(e, plan_signature(p));
    s->last_use = ++g->clock;
    if (s->captured && !graph_scratch_same(c, s)) s->captured = 0;   /* a scratch regrew */
    if (!s->warmed) {
        TRY(run(c, p));
        s->warmed = 1;
        goto cleanup;
    }
    if (!s->captured) {
        char why[512];
        if (!graph_capture(c, p, run, s, why, sizeof(why))) {
            dr_eprintf("dawnrun: %s; this plan runs without CUDA graphs from now on\n", why);
            graph_entry_eager(e);
            return run(c, p);   /* this step, eagerly: nothing ran in the capture */
        }
    }
    CHECK_CUDA(cuda_counted_graph_launch(c, s->exec, &s->counted));
cleanup:
    return rc;
}

void cuda_graph_forget(struct cuda_ctx *c, const struct plan *p)
{
    struct graph_cache *g = (struct graph_cache *)c->graphs;
    for (int i = 0; g && i < g->count; i++)
        if (g->entries[i].plan == p) {
            graph_entry_drop(&g->entries[i]);
            g->entries[i] = g->entries[--g->count];
            return;
        }
}

void cuda_graph_release(struct cuda_ctx *c)
{
    struct graph_cache *g = (struct graph_cache *)c->graphs;
    if (!g) return;
    for (int i = 0; i < g->count; i++) graph_entry_drop(&g->entries[i]);
    free(g->entries);
    free(g);
    c->graphs = NULL;
}
