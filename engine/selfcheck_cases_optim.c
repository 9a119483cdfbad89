/* The selfcheck's cases of the optimiser's ops (group ops): sgd_update and param_lerp,
 * which are fp32 in every precision in the CPU twin's rounding order and so must equal
 * it to the bit; and a linear forward after each, through which the tested engine's
 * compute copy of the weights (in its type) must have followed the fp32 master. The
 * steps are large next to the weights, so that a stale copy would miss by far more than
 * the tolerance. */
#include <stdio.h>

#include "../base/status.h"
#include "selfcheck_case.h"

#define OPT_OUT 10
#define OPT_IN 512
#define OPT_BATCH 16

/* ------------------------------------------------------------------ sgd_update */

/* w SC_W, v SC_B, dw SC_DW; the linear forward's x SC_X, y SC_Y */
static int sgd_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    (void)c;
    TRY(sc_tensor(e, SC_W, "w", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
    TRY(sc_tensor(e, SC_B, "v", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
    TRY(sc_tensor(e, SC_DW, "dw", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, OPT_BATCH, OPT_IN, 1, 1));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, OPT_BATCH, OPT_OUT, 1, 1));
    TRY(sc_random(e, SC_W, -0.1f, 0.1f));
    TRY(sc_random(e, SC_B, -0.01f, 0.01f));
    TRY(sc_random(e, SC_DW, -1.0f, 1.0f));
    TRY(sc_random(e, SC_X, -1.0f, 1.0f));
cleanup:
    return rc;
}

static int sgd_run(struct sc_side *t, const struct sc_case *c)
{
    return t->be->ops->sgd_update(t->be->ctx, SC_T(t, SC_W), SC_T(t, SC_B), SC_T(t, SC_DW), 0.05f,
                                  5e-4f * 512.0f, 0.9f, c->arg);
}

static int sgd_linear_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    TRY(sgd_run(t, c));
    TRY(t->be->ops->linear_forward(t->be->ctx, SC_T(t, SC_Y), SC_T(t, SC_X), SC_T(t, SC_W), NULL));
cleanup:
    return rc;
}

static int add_sgd(struct sc_table *t, int nesterov)
{
    int rc = DR_OK;
    const char *v = nesterov ? "_nesterov" : "";
    struct sc_case c = {.group = "ops", .build = sgd_build, .run = sgd_run,
                        .metric = SC_EXACT_BITS, .tol = SC_TOL_EXACT, .arg = nesterov,
                        .n_outputs = 3, .outputs = {SC_W, SC_B, SC_DW}};
    sc_name(&c, "sgd_update", "%dx%d%s", OPT_OUT, OPT_IN, v);
    TRY(sc_table_add(t, &c));
    /* the tested engine computes with w rounded to its type, the reference with fp32 */
    c = (struct sc_case){.group = "ops", .build = sgd_build, .run = sgd_linear_run,
                         .metric = SC_MAX_REL, .tol = SC_TOL_OP2, .arg = nesterov,
                         .n_outputs = 1, .outputs = {SC_Y}};
    sc_name(&c, "sgd_linear", "%dx%d%s", OPT_OUT, OPT_IN, v);
    TRY(sc_table_add(t, &c));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ param_lerp */

/* avg SC_B, w SC_W (PARAM (10, 512) or F32 (256): c->arg); x SC_X, y(avg) SC_Y, y(w) SC_Y2 */
static int lerp_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    if (c->arg == TENSOR_PARAM) {
        TRY(sc_tensor(e, SC_B, "avg", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
        TRY(sc_tensor(e, SC_W, "w", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
        TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, OPT_BATCH, OPT_IN, 1, 1));
        TRY(sc_tensor(e, SC_Y, "y(avg)", TENSOR_ACT, OPT_BATCH, OPT_OUT, 1, 1));
        TRY(sc_tensor(e, SC_Y2, "y(w)", TENSOR_ACT, OPT_BATCH, OPT_OUT, 1, 1));
        TRY(sc_random(e, SC_X, -1.0f, 1.0f));
    } else {
        TRY(sc_tensor(e, SC_B, "avg", TENSOR_F32, 256, 1, 1, 1));
        TRY(sc_tensor(e, SC_W, "w", TENSOR_F32, 256, 1, 1, 1));
    }
    TRY(sc_random(e, SC_B, -0.1f, 0.1f));
    TRY(sc_random(e, SC_W, -0.5f, 0.5f));
cleanup:
    return rc;
}

static int lerp_run(struct sc_side *t, const struct sc_case *c)
{
    return t->be->ops->param_lerp(t->be->ctx, SC_T(t, SC_B), SC_T(t, SC_W), 0.25f, c->acc);
}

/* the average, then a linear forward with it and (copied back) with the weight */
static int lerp_linear_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    TRY(lerp_run(t, c));
    TRY(t->be->ops->linear_forward(t->be->ctx, SC_T(t, SC_Y), SC_T(t, SC_X), SC_T(t, SC_B), NULL));
    if (c->acc)
        TRY(t->be->ops->linear_forward(t->be->ctx, SC_T(t, SC_Y2), SC_T(t, SC_X), SC_T(t, SC_W),
                                       NULL));
cleanup:
    return rc;
}

/* copy_back travels in c->acc */
static int add_lerp(struct sc_table *t, enum tensor_kind kind, int copy_back)
{
    int rc = DR_OK;
    char v[32];
    snprintf(v, sizeof(v), "%s%s", kind == TENSOR_PARAM ? "param_10x512" : "f32_256",
             copy_back ? "_copyback" : "");
    struct sc_case c = {.group = "ops", .build = lerp_build, .run = lerp_run,
                        .metric = SC_EXACT_BITS, .tol = SC_TOL_EXACT, .arg = (int)kind,
                        .acc = copy_back, .n_outputs = 2, .outputs = {SC_B, SC_W}};
    sc_name(&c, "param_lerp", "%s", v);
    TRY(sc_table_add(t, &c));
    if (kind == TENSOR_PARAM) {
        /* the tested engine computes with the weights rounded to its type */
        c = (struct sc_case){.group = "ops", .build = lerp_build, .run = lerp_linear_run,
                             .metric = SC_MAX_REL, .tol = SC_TOL_OP2, .arg = (int)kind,
                             .acc = copy_back, .n_outputs = copy_back ? 2 : 1,
                             .outputs = {SC_Y, SC_Y2}};
        sc_name(&c, "lerp_linear", "%s", v);
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

int sc_cases_optim(struct sc_table *t)
{
    int rc = DR_OK;
    TRY(add_sgd(t, 1));
    TRY(add_sgd(t, 0));
    TRY(add_lerp(t, TENSOR_PARAM, 0));
    TRY(add_lerp(t, TENSOR_PARAM, 1));
    TRY(add_lerp(t, TENSOR_F32, 1));
cleanup:
    return rc;
}
