/* CPU convolution on oneDNN's direct convolution primitives (see conv2d_impl.h).
 * The engine's activations are (C, N, H, W): oneDNN sees them as strided (N, C, H, W)
 * memory and every primitive takes its operands in the layout it prefers (format "any"),
 * so each call reorders its inputs into a shared work buffer, runs the primitive, and
 * reorders the output back (with a sum post-op when the input gradient is accumulated).
 * Primitives are made once per (shape, bias, direction, accumulate, thread count) with
 * strict fp32 math and a user-managed scratchpad, and kept in a list freed by
 * conv2d_dnnl_release. One mutex serialises the cache and the work buffer: a process
 * runs one convolution at a time, which each primitive spreads over the OpenMP team.
 * The bias gradient is a double-precision sum (cpu_sum) as in the im2col path. */
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/status.h"
#include "conv2d_impl.h"
#include "cpu_util.h"

#define DN_ALIGN 64

/* One operand of a primitive: the caller's memory and the primitive's, with the reorder
 * between them when their layouts differ. */
struct dn_operand {
    int arg;                  /* DNNL_ARG_* of the primitive */
    int output;               /* 1: the primitive writes it, reordered back afterwards */
    dnnl_memory_t user_mem;
    dnnl_memory_t prim_mem;
    dnnl_primitive_t reorder; /* NULL when the layouts agree */
    size_t offset;            /* of the primitive's copy in the work buffer */
};

struct dn_entry {
    struct conv2d_dims d;
    int dir, bias, accumulate, threads;
    int ok;                   /* 0: oneDNN has no optimised implementation: do not use */
    dnnl_primitive_t prim;
    struct dn_operand op[3];
    dnnl_memory_t bias_mem;   /* forward with bias only */
    dnnl_memory_t scratch_mem;
    size_t scratch_offset;
    size_t work_size;
    char impl[64];
    struct dn_entry *next;
};

static pthread_mutex_t dn_lock = PTHREAD_MUTEX_INITIALIZER;
static dnnl_engine_t dn_engine;
static dnnl_stream_t dn_stream;
static struct dn_entry *dn_entries;
static float *dn_work;
static size_t dn_work_size;

/* Reports a failed oneDNN call and jumps to cleanup. */
#define DN_CHECK(call)                                                                     \
    do {                                                                                   \
        dnnl_status_t dn_st_ = (call);                                                     \
        if (dn_st_ != dnnl_success)                                                        \
            FAIL(DR_ERR_INTERNAL, "oneDNN: %s failed (status %d)", #call, (int)dn_st_);    \
    } while (0)

static size_t dn_round(size_t n)
{
    return (n + DN_ALIGN - 1) / DN_ALIGN * DN_ALIGN;
}

static int dn_same_dims(const struct conv2d_dims *a, const struct conv2d_dims *b)
{
    return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w && a->co == b->co &&
           a->k == b->k && a->stride == b->stride && a->pad == b->pad;
}

/* The (C, N, H, W) activation as a strided (N, C, H, W) descriptor. */
static dnnl_status_t dn_md_cnhw(dnnl_memory_desc_t *md, int n, int c, int h, int w)
{
    const dnnl_dims_t dims = {n, c, h, w};
    const dnnl_dims_t strides = {(dnnl_dim_t)h * w, (dnnl_dim_t)n * h * w, w, 1};
    return dnnl_memory_desc_init_by_strides(md, 4, dims, dnnl_f32, strides);
}

static dnnl_status_t dn_md_tag(dnnl_memory_desc_t *md, int a, int b, int c, int d,
                               dnnl_format_tag_t tag)
{
    const dnnl_dims_t dims = {a, b, c, d};
    return dnnl_memory_desc_init_by_tag(md, 4, dims, dnnl_f32, tag);
}

static int dn_engine_ready(void)
{
    int rc = DR_OK;
    if (dn_engine) return DR_OK;
    DN_CHECK(dnnl_engine_create(&dn_engine, dnnl_cpu, 0));
    DN_CHECK(dnnl_stream_create(&dn_stream, dn_engine, dnnl_stream_default_flags));
cleanup:
    return rc;
}

/* An attribute with strict fp32 math and a user-managed scratchpad, optionally with a
 * sum post-op (dst += result) for a reorder. */
static int dn_attr(dnnl_primitive_attr_t *attr, int sum)
{
    int rc = DR_OK;
    dnnl_post_ops_t po = NULL;
    DN_CHECK(dnnl_primitive_attr_create(attr));
    DN_CHECK(dnnl_primitive_attr_set_fpmath_mode(*attr, dnnl_fpmath_mode_strict));
    DN_CHECK(dnnl_primitive_attr_set_scratchpad_mode(*attr, dnnl_scratchpad_mode_user));
    if (sum) {
        DN_CHECK(dnnl_post_ops_create(&po));
        DN_CHECK(dnnl_post_ops_append_sum(po, 1.0f));
        DN_CHECK(dnnl_primitive_attr_set_post_ops(*attr, po));
    }
cleanup:
    if (po) dnnl_post_ops_destroy(po);
    return rc;
}

static size_t dn_scratch_size(const_dnnl_primitive_desc_t pd)
{
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    return md ? dnnl_memory_desc_get_size(md) : 0;
}

/* Sets up operand o between the caller's layout `user` and the primitive's `prim`,
 * placing the primitive's copy at *work in the work buffer when a reorder is needed.
 * *scratch grows to the reorder's scratchpad. */
static int dn_operand_init(struct dn_operand *o, int arg, int output, int sum,
                           const dnnl_memory_desc_t *user, const dnnl_memory_desc_t *prim,
                           size_t *work, size_t *scratch)
{
    int rc = DR_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t rpd = NULL;
    o->arg = arg;
    o->output = output;
    DN_CHECK(dnnl_memory_create(&o->user_mem, user, dn_engine, DNNL_MEMORY_NONE));
    DN_CHECK(dnnl_memory_create(&o->prim_mem, prim, dn_engine, DNNL_MEMORY_NONE));
    if (!sum && dnnl_memory_desc_equal(user, prim)) goto cleanup;
    TRY(dn_attr(&attr, sum));
    if (output)
        DN_CHECK(dnnl_reorder_primitive_desc_create(&rpd, prim, dn_engine, user, dn_engine, attr));
    else
        DN_CHECK(dnnl_reorder_primitive_desc_create(&rpd, user, dn_engine, prim, dn_engine, attr));
    DN_CHECK(dnnl_primitive_create(&o->reorder, rpd));
    const size_t s = dn_scratch_size(rpd);
    if (s > *scratch) *scratch = s;
    o->offset = *work;
    *work += dn_round(dnnl_memory_desc_get_size(prim));
cleanup:
    if (rpd) dnnl_primitive_desc_destroy(rpd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return rc;
}

static void dn_entry_free(struct dn_entry *e)
{
    if (!e) return;
    for (int i = 0; i < 3; i++) {
        if (e->op[i].reorder) dnnl_primitive_destroy(e->op[i].reorder);
        if (e->op[i].user_mem) dnnl_memory_destroy(e->op[i].user_mem);
        if (e->op[i].prim_mem) dnnl_memory_destroy(e->op[i].prim_mem);
    }
    if (e->prim) dnnl_primitive_destroy(e->prim);
    if (e->bias_mem) dnnl_memory_destroy(e->bias_mem);
    if (e->scratch_mem) dnnl_memory_destroy(e->scratch_mem);
    free(e);
}

/* Builds the primitive for e->dir. Returns DR_OK with e->ok = 0 when oneDNN has no
 * optimised direct implementation of the shape, an error only when oneDNN fails. */
static int dn_entry_build(struct dn_entry *e)
{
    int rc = DR_OK;
    const struct conv2d_dims *d = &e->d;
    dnnl_memory_desc_t x_user, y_user, w_user, b_md, x_any, y_any, w_any;
    dnnl_convolution_desc_t fwd_desc, cd;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_primitive_desc_t fwd_pd = NULL, pd = NULL;
    const dnnl_dims_t strides = {d->stride, d->stride};
    const dnnl_dims_t pads = {d->pad, d->pad};
    size_t work = 0, scratch = 0;
    const char *impl = "";

    DN_CHECK(dn_md_cnhw(&x_user, d->n, d->c, d->h, d->w));
    DN_CHECK(dn_md_cnhw(&y_user, d->n, d->co, d->ho, d->wo));
    DN_CHECK(dn_md_tag(&w_user, d->co, d->c, d->k, d->k, dnnl_oihw));
    DN_CHECK(dn_md_tag(&x_any, d->n, d->c, d->h, d->w, dnnl_format_tag_any));
    DN_CHECK(dn_md_tag(&y_any, d->n, d->co, d->ho, d->wo, dnnl_format_tag_any));
    DN_CHECK(dn_md_tag(&w_any, d->co, d->c, d->k, d->k, dnnl_format_tag_any));
    const dnnl_dims_t bdims = {d->co};
    DN_CHECK(dnnl_memory_desc_init_by_tag(&b_md, 1, bdims, dnnl_f32, dnnl_x));
    TRY(dn_attr(&attr, 0));

    DN_CHECK(dnnl_convolution_forward_desc_init(&fwd_desc, dnnl_forward_training,
                                                dnnl_convolution_direct, &x_any, &w_any,
                                                e->bias ? &b_md : NULL, &y_any, strides, pads,
                                                pads));
    if (dnnl_primitive_desc_create(&fwd_pd, &fwd_desc, attr, dn_engine, NULL) != dnnl_success)
        goto cleanup; /* e->ok stays 0 */
    if (e->dir == CONV2D_FWD) {
        pd = fwd_pd;
        fwd_pd = NULL;
    } else if (e->dir == CONV2D_BWD_DATA) {
        DN_CHECK(dnnl_convolution_backward_data_desc_init(&cd, dnnl_convolution_direct, &x_any,
                                                          &w_any, &y_any, strides, pads, pads));
        if (dnnl_primitive_desc_create(&pd, &cd, attr, dn_engine, fwd_pd) != dnnl_success)
            goto cleanup;
    } else {
        DN_CHECK(dnnl_convolution_backward_weights_desc_init(
            &cd, dnnl_convolution_direct, &x_any, &w_any, NULL, &y_any, strides, pads, pads));
        if (dnnl_primitive_desc_create(&pd, &cd, attr, dn_engine, fwd_pd) != dnnl_success)
            goto cleanup;
    }
    DN_CHECK(dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl));
    snprintf(e->impl, sizeof e->impl, "%s", impl ? impl : "");
    if (strncmp(e->impl, "ref", 3) == 0) goto cleanup; /* too slow to be worth it */

#define DN_MD(q) dnnl_primitive_desc_query_md(pd, (q), 0)
    if (e->dir == CONV2D_FWD) {
        TRY(dn_operand_init(&e->op[0], DNNL_ARG_SRC, 0, 0, &x_user, DN_MD(dnnl_query_src_md),
                            &work, &scratch));
        TRY(dn_operand_init(&e->op[1], DNNL_ARG_WEIGHTS, 0, 0, &w_user,
                            DN_MD(dnnl_query_weights_md), &work, &scratch));
        TRY(dn_operand_init(&e->op[2], DNNL_ARG_DST, 1, 0, &y_user, DN_MD(dnnl_query_dst_md),
                            &work, &scratch));
        if (e->bias) DN_CHECK(dnnl_memory_create(&e->bias_mem, &b_md, dn_engine, DNNL_MEMORY_NONE));
    } else if (e->dir == CONV2D_BWD_DATA) {
        TRY(dn_operand_init(&e->op[0], DNNL_ARG_DIFF_DST, 0, 0, &y_user,
                            DN_MD(dnnl_query_diff_dst_md), &work, &scratch));
        TRY(dn_operand_init(&e->op[1], DNNL_ARG_WEIGHTS, 0, 0, &w_user,
                            DN_MD(dnnl_query_weights_md), &work, &scratch));
        TRY(dn_operand_init(&e->op[2], DNNL_ARG_DIFF_SRC, 1, e->accumulate, &x_user,
                            DN_MD(dnnl_query_diff_src_md), &work, &scratch));
    } else {
        TRY(dn_operand_init(&e->op[0], DNNL_ARG_SRC, 0, 0, &x_user, DN_MD(dnnl_query_src_md),
                            &work, &scratch));
        TRY(dn_operand_init(&e->op[1], DNNL_ARG_DIFF_DST, 0, 0, &y_user,
                            DN_MD(dnnl_query_diff_dst_md), &work, &scratch));
        TRY(dn_operand_init(&e->op[2], DNNL_ARG_DIFF_WEIGHTS, 1, 0, &w_user,
                            DN_MD(dnnl_query_diff_weights_md), &work, &scratch));
    }
#undef DN_MD
    DN_CHECK(dnnl_primitive_create(&e->prim, pd));
    const size_t s = dn_scratch_size(pd);
    if (s > scratch) scratch = s;
    e->scratch_offset = work;
    if (scratch > 0) {
        const dnnl_dims_t sdims = {(dnnl_dim_t)scratch};
        dnnl_memory_desc_t smd;
        DN_CHECK(dnnl_memory_desc_init_by_tag(&smd, 1, sdims, dnnl_u8, dnnl_x));
        DN_CHECK(dnnl_memory_create(&e->scratch_mem, &smd, dn_engine, DNNL_MEMORY_NONE));
    }
    e->work_size = work + dn_round(scratch);
    e->ok = 1;
cleanup:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (fwd_pd) dnnl_primitive_desc_destroy(fwd_pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    return rc;
}

/* The cached entry for the key, made on first use. Called with dn_lock held. */
static int dn_entry_get(struct dn_entry **out, const struct conv2d_dims *d, int dir, int bias,
                        int accumulate)
{
    int rc = DR_OK;
    struct dn_entry *e = NULL;
    const int threads = omp_get_max_threads();
    *out = NULL;
    for (struct dn_entry *p = dn_entries; p; p = p->next)
        if (dn_same_dims(&p->d, d) && p->dir == dir && p->bias == bias &&
            p->accumulate == accumulate && p->threads == threads) {
            *out = p;
            return DR_OK;
        }
    TRY(dn_engine_ready());
    e = calloc(1, sizeof *e);
    CHECK_ALLOC(e, "a oneDNN convolution");
    e->d = *d;
    e->dir = dir;
    e->bias = bias;
    e->accumulate = accumulate;
    e->threads = threads;
    TRY(dn_entry_build(e));
    e->next = dn_entries;
    dn_entries = e;
    *out = e;
    e = NULL;
cleanup:
    dn_entry_free(e);
    return rc;
}

static int dn_work_reserve(size_t size)
{
    int rc = DR_OK;
    if (size <= dn_work_size) return DR_OK;
    free(dn_work);
    dn_work_size = 0;
    dn_work = aligned_alloc(DN_ALIGN, dn_round(size));
    CHECK_ALLOC(dn_work, "the oneDNN convolution work buffer");
    dn_work_size = dn_round(size);
cleanup:
    return rc;
}

static int dn_reorder(const struct dn_operand *o, dnnl_memory_t from, dnnl_memory_t to,
                      dnnl_memory_t scratch)
{
    int rc = DR_OK;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to},
                               {DNNL_ARG_SCRATCHPAD, scratch}};
    DN_CHECK(dnnl_primitive_execute(o->reorder, dn_stream, scratch ? 3 : 2, args));
cleanup:
    return rc;
}

/* Runs entry e on the caller's buffers ptr[0..2] (in e->op order) and bias. Called with
 * dn_lock held. */
static int dn_run(struct dn_entry *e, void *const ptr[3], const float *bias)
{
    int rc = DR_OK;
    dnnl_exec_arg_t args[5];
    int nargs = 0;
    TRY(dn_work_reserve(e->work_size));
    char *work = (char *)dn_work;
    if (e->scratch_mem)
        DN_CHECK(dnnl_memory_set_data_handle(e->scratch_mem, work + e->scratch_offset));
    for (int i = 0; i < 3; i++) {
        struct dn_operand *o = &e->op[i];
        DN_CHECK(dnnl_memory_set_data_handle(o->user_mem, ptr[i]));
        DN_CHECK(dnnl_memory_set_data_handle(o->prim_mem, o->reorder ? work + o->offset : ptr[i]));
        if (o->reorder && !o->output) TRY(dn_reorder(o, o->user_mem, o->prim_mem, e->scratch_mem));
        args[nargs++] = (dnnl_exec_arg_t){o->arg, o->prim_mem};
    }
    if (e->bias_mem) {
        DN_CHECK(dnnl_memory_set_data_handle(e->bias_mem, (void *)bias));
        args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, e->bias_mem};
    }
    if (e->scratch_mem) args[nargs++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, e->scratch_mem};
    DN_CHECK(dnnl_primitive_execute(e->prim, dn_stream, nargs, args));
    const struct dn_operand *out = &e->op[2];
    if (out->reorder) TRY(dn_reorder(out, out->prim_mem, out->user_mem, e->scratch_mem));
    DN_CHECK(dnnl_stream_wait(dn_stream));
cleanup:
    return rc;
}

/* Looks up (making it if needed) and runs one direction; *unsupported = 1 instead when
 * oneDNN has no optimised implementation of it. */
static int dn_direction(int *unsupported, const struct conv2d_dims *d, int dir, int bias,
                        int accumulate, void *const ptr[3], const float *b)
{
    int rc = DR_OK;
    struct dn_entry *e = NULL;
    pthread_mutex_lock(&dn_lock);
    TRY(dn_entry_get(&e, d, dir, bias, accumulate));
    *unsupported = !e->ok;
    if (e->ok) TRY(dn_run(e, ptr, b));
cleanup:
    pthread_mutex_unlock(&dn_lock);
    return rc;
}

int conv2d_dnnl_forward(float *y, const float *x, const float *w, const float *b,
                        const struct conv2d_dims *d)
{
    int rc = DR_OK, unsupported = 0;
    if (d->n <= 0) return DR_OK;
    void *const ptr[3] = {(void *)x, (void *)w, y};
    TRY(dn_direction(&unsupported, d, CONV2D_FWD, b != NULL, 0, ptr, b));
    if (unsupported) TRY(conv2d_im2col_forward(y, x, w, b, d));
cleanup:
    return rc;
}

int conv2d_dnnl_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                         const float *w, const struct conv2d_dims *d, int accumulate_dx)
{
    int rc = DR_OK, unsupported = 0;
    const size_t wsz = (size_t)d->co * (size_t)d->c * (size_t)d->k * (size_t)d->k;
    const long ldy = (long)d->n * d->ho * d->wo;
    if (d->n <= 0) {
        if (dw) memset(dw, 0, sizeof(float) * wsz);
        if (db) memset(db, 0, sizeof(float) * (size_t)d->co);
        return DR_OK;
    }
    if (dw) {
        void *const ptr[3] = {(void *)x, (void *)dy, dw};
        TRY(dn_direction(&unsupported, d, CONV2D_BWD_WEIGHTS, 0, 0, ptr, NULL));
        if (unsupported) TRY(conv2d_im2col_backward(NULL, dw, NULL, dy, x, w, d, 0));
    }
    if (dx) {
        void *const ptr[3] = {(void *)dy, (void *)w, dx};
        TRY(dn_direction(&unsupported, d, CONV2D_BWD_DATA, 0, accumulate_dx != 0, ptr, NULL));
        if (unsupported) TRY(conv2d_im2col_backward(dx, NULL, NULL, dy, x, w, d, accumulate_dx));
    }
    if (db) {
#pragma omp parallel for schedule(static)
        for (int o = 0; o < d->co; o++)
            db[o] = (float)cpu_sum(dy + (size_t)o * (size_t)ldy, (size_t)ldy);
    }
cleanup:
    return rc;
}

int conv2d_dnnl_supported(const struct conv2d_dims *d, enum conv2d_cpu_dir dir)
{
    int rc = DR_OK, ok = 0;
    struct dn_entry *e = NULL;
    if (d->n <= 0) return 0;
    pthread_mutex_lock(&dn_lock);
    TRY(dn_entry_get(&e, d, (int)dir, 0, 0));
    ok = e->ok;
cleanup:
    pthread_mutex_unlock(&dn_lock);
    return rc == DR_OK && ok;
}

const char *conv2d_dnnl_impl_info(const struct conv2d_dims *d, enum conv2d_cpu_dir dir)
{
    int rc = DR_OK;
    struct dn_entry *e = NULL;
    const char *info = "";
    if (d->n <= 0) return "";
    pthread_mutex_lock(&dn_lock);
    TRY(dn_entry_get(&e, d, (int)dir, 0, 0));
    info = e->impl;
cleanup:
    pthread_mutex_unlock(&dn_lock);
    return rc == DR_OK ? info : "";
}

const char *conv2d_dnnl_isa_name(void)
{
    switch (dnnl_get_effective_cpu_isa()) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "generic";
    }
}

int conv2d_dnnl_isa_level(void)
{
    const unsigned isa = (unsigned)dnnl_get_effective_cpu_isa();
    const unsigned avx512 = (unsigned)dnnl_cpu_isa_avx512_core;
    const unsigned avx2 = (unsigned)dnnl_cpu_isa_avx2;
    if ((isa & avx512) == avx512) return 3;
    if ((isa & avx2) == avx2) return 2;
    return isa != 0 ? 1 : 0;
}

void conv2d_dnnl_release(void)
{
    pthread_mutex_lock(&dn_lock);
    while (dn_entries) {
        struct dn_entry *e = dn_entries;
        dn_entries = e->next;
        dn_entry_free(e);
    }
    free(dn_work);
    dn_work = NULL;
    dn_work_size = 0;
    if (dn_stream) dnnl_stream_destroy(dn_stream);
    if (dn_engine) dnnl_engine_destroy(dn_engine);
    dn_stream = NULL;
    dn_engine = NULL;
    pthread_mutex_unlock(&dn_lock);
}
