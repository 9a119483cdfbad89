/* The selfcheck's cases: what one is, and the tools its code uses.
 *
 * A case is one row of a table (struct sc_case): a name, the group --only knows it by, a
 * build function, a run function, the outputs compared, a metric and its tolerance per
 * precision. The harness (engine/selfcheck/selfcheck.c) runs a case as:
 *   1. build(env, case): allocate tensors in numbered slots (enum sc_slot) on both
 *      engines and give them identical inputs (sc_tensor, sc_random, sc_write...);
 *   2. run(side, case), once with the reference engine (the CPU) and once with the engine
 *      under test, each with its own backend and tensors (the same slots);
 *   3. compare each slot of case->outputs, the tested engine's values against the
 *      reference's, by case->metric (engine/selfcheck/selfcheck.h); the worst output's
 *      error must be at most case->tol[precision].
 * The rows are generated from small parameter lists by the selfcheck_cases_*.c files
 * (one per op family), each appending to the table with sc_table_add.
 *
 * Identical inputs: values go to the tested engine first and what it stores (rounded to
 * its precision) is read back and given to the reference, so both compute on the same
 * numbers. Each case draws its inputs from its own stream, keyed by its name, so that a
 * case gets the same inputs whether it runs alone (--only) or with all the others. */
#ifndef DAWNRUN_SELFCHECK_CASE_H
#define DAWNRUN_SELFCHECK_CASE_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/graph.h"
#include "kernels/plan.h"

#define SC_NAME_MAX 64
#define SC_OUTPUTS 6
#define SC_RNG_STREAM 77        /* the inputs' stream of kernels/rng.h, not used by training */
#define SC_PRECISIONS 3         /* fp32, fp16, bf16: the index of case->tol */

/* Tolerances by precision (fp32, fp16, bf16).
 * SC_TOL_OP, with SC_MAX_REL: both engines compute in fp32 but sum in different orders
 * (and cuDNN may pick Winograd or FFT algorithms), a few 1e-6 in practice; fp16 / bf16:
 * the output is rounded once to the half type (2^-11 / 2^-8 relative) and cuDNN's half
 * kernels may round intermediates. An indexing mistake gives errors of order 1.
 * SC_TOL_OP2: an op reading weights the tested engine holds rounded to its type while
 * the reference holds them in fp32 (after an update in fp32).
 * SC_TOL_EXACT, with SC_EXACT_BITS: fp32 in every precision, in the CPU twin's rounding
 * order and compiled without FMA contraction (cmake/cuda.cmake). */
#define SC_TOL_OP {5e-4, 1e-2, 5e-2}
#define SC_TOL_OP2 {1e-3, 2e-2, 1e-1}
#define SC_TOL_EXACT {0.0, 0.0, 0.0}

/* How an output of the tested engine is compared with the reference's (sc_error). An
 * integer output (I32, U8 tensors) must be equal whatever the metric (else infinite). */
enum sc_metric {
    SC_MAX_REL,     /* max |test - ref| / max(max |ref|, 1e-6): the largest error relative
                       to the output's scale */
    SC_ELEM_REL,    /* max over the values of |test - ref| / max(|ref|, 1e-6), 0 where
                       they are equal: every value within a relative rounding */
    SC_EXACT_BITS,  /* the number of values whose bit patterns differ */
    SC_METRIC_COUNT
};

/* The metric's short name ("maxrel", "elemrel", "bits"). */
const char *sc_metric_name(enum sc_metric m);

/* The error of test against ref by metric m: >= 0; under SC_MAX_REL and SC_ELEM_REL
 * infinite where either side has a NaN. */
double sc_error(enum sc_metric m, const float *test /* (count) */, const float *ref /* (count) */,
                size_t count);

/* Slots of a case's tensors. Every family uses the names that fit it; the name printed
 * for a slot is the one given at allocation. */
enum sc_slot {
    SC_X, SC_X2,                /* inputs (a second one: concat, add) */
    SC_W, SC_B,                 /* weights and biases (BN's gamma and beta), averages */
    SC_Y, SC_Y2,                /* outputs */
    SC_DY, SC_DX, SC_DX2, SC_DW, SC_DB,
    SC_S0, SC_S1, SC_S2, SC_S3, /* the family's own: statistics, labels, rows, losses */
    SC_S4, SC_S5, SC_S6, SC_S7, SC_S8,   /* more of the family's own (the fused batch
                                            norm's) */
    SC_SLOTS
};

/* One engine's view of a case. */
struct sc_side {
    struct backend *be;
    int precision;                      /* enum precision of the run */
    struct tensor t[SC_SLOTS];          /* data NULL: not allocated */
    float *host[SC_SLOTS];              /* host outputs (sc_host), host_n[] values each */
    size_t host_n[SC_SLOTS];
};

/* A case being run: both sides and the case's input stream. */
struct sc_env {
    struct sc_side side[2];             /* 0: the reference engine, 1: the tested one */
    const char *slot_name[SC_SLOTS];
    int precision;
    uint32_t key;                       /* from the case's name */
    uint32_t draws;                     /* counter of the input stream */
};

struct sc_case;
typedef int (*sc_build_fn)(struct sc_env *e, const struct sc_case *c);
typedef int (*sc_run_fn)(struct sc_side *s, const struct sc_case *c);

struct sc_case {
    char name[SC_NAME_MAX];     /* "op/variant": unique, no spaces or commas */
    const char *group;          /* "conv", "ops", "augment", "train" or "toolbox" */
    sc_build_fn build;
    sc_run_fn run;
    int outputs[SC_OUTPUTS];    /* the slots compared */
    int n_outputs;
    enum sc_metric metric;
    double tol[SC_PRECISIONS];
    int show;                   /* 1: print each value of the host outputs (training) */
    const void *attr;           /* the family's parameters (a row of its list) */
    int arg;                    /* the family's choice: activation kind, nesterov, ... */
    int acc;                    /* the accumulate flag of the backward op run */
};

/* The list of cases. */
struct sc_table {
    struct sc_case *cases;
    int count, cap;
};

/* Appends a copy of c. DR_OK or DR_ERR_NOMEM. */
int sc_table_add(struct sc_table *t, const struct sc_case *c);

/* Sets c->name to "op/variant", the variant formatted like printf. */
void sc_name(struct sc_case *c, const char *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The families' rows, appended in this order by selfcheck_table_build. */
int sc_cases_conv(struct sc_table *t);     /* convolutions (group conv), linear layers */
int sc_cases_ops(struct sc_table *t);      /* batch norm, activations, pools, concat,
                                              add/scale/flatten, the loss */
int sc_cases_optim(struct sc_table *t);    /* sgd_update, param_lerp */
int sc_cases_muon(struct sc_table *t);     /* muon_multi */
int sc_cases_train(struct sc_table *t);    /* the augmentation, the training runs */
int sc_cases_plan(struct sc_table *t);     /* small steps as plans, run whole and node by node */

/* ------------------------------------------------------------------ tools of build */

/* Allocates slot as (n, c, h, w) of kind on both engines, named name (a literal). */
int sc_tensor(struct sc_env *e, int slot, const char *name, enum tensor_kind kind, int n, int c,
              int h, int w);

/* Sets the logical batch of slot below what was allocated (a partial batch). */
void sc_set_n(struct sc_env *e, int slot, int n);

/* count values uniform in [lo, hi) from the case's input stream. */
void sc_uniform(struct sc_env *e, float *x /* (count) */, size_t count, float lo, float hi);

/* Gives both engines the fp32 values host (the canonical form of kernels/tensor.h) as the
 * tested engine stores them: ACT tensors make a round trip through it, PARAM tensors are
 * rounded here to the precision's type (its compute copy); host ends up holding what
 * both engines see. */
int sc_write(struct sc_env *e, int slot, float *host /* (count of slot) */);

/* Random contents of slot, uniform in [lo, hi), through sc_write. */
int sc_random(struct sc_env *e, int slot, float lo, float hi);

/* The same raw contents on both engines (I32 labels and rows, U8 images, F32 as is). */
int sc_write_raw(struct sc_env *e, int slot, const void *host);

/* A host output of count floats per side in slot (what run writes: a loss per step). */
int sc_host(struct sc_env *e, int slot, const char *name, size_t count);

/* Frees every slot of both sides and clears e's slots (the harness, after a case). */
void sc_env_clear(struct sc_env *e);

/* Appends a layer named name of type to spec, in1 and in2 naming its inputs ("" = the
 * previous layer; in2 "" = none): the networks of the training and plan cases. NULL when
 * out of memory. */
struct layer_spec *sc_layer(struct net_spec *spec, const char *name, enum layer_type type,
                            const char *in1, const char *in2);

/* The tensor of slot on a side. */
#define SC_T(s, slot) (&(s)->t[(slot)])

#endif
