/* The CPU engine's backend table: lifetime, memory, and the nodes (its runner table,
 * nodes_cpu.c, with its fused ops in plan_cpu.c; a plan runs node by node). Activations
 * (TENSOR_ACT) live in host memory as fp32 (C, N, H, W) using the tensor's current n, so
 * an activation (n, f, 1, 1) is exactly the features-major (f, n) matrix the linear and
 * loss kernels take. Parameters and vectors are stored in their canonical form. Threads:
 * one OpenMP team size for every node, set when the backend is created. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/alloc.h"
#include "../../base/status.h"
#include "../backend.h"
#include "conv2d_impl.h"
#include "cpu_isa.h"
#include "plan_cpu.h"

#define CPU_ALIGN 64

struct cpu_ctx {
    int threads;
    char name[192];
};

/* Makes every node run on the backend's team size, even when another caller changed it. */
static void cpu_enter(void *ctx)
{
    const struct cpu_ctx *c = ctx;
    if (omp_get_max_threads() != c->threads) omp_set_num_threads(c->threads);
}

static size_t cpu_elem_size(enum tensor_kind kind)
{
    return kind == TENSOR_U8 ? 1 : 4;
}

/* ------------------------------------------------------------------ lifetime, memory */

static void cpu_destroy(void *ctx)
{
    conv2d_dnnl_release(); /* the cached convolution primitives and their work buffer */
    free(ctx);
}

static const char *cpu_device_name(void *ctx)
{
    return ((struct cpu_ctx *)ctx)->name;
}

static int cpu_tensor_alloc(void *ctx, struct tensor *t)
{
    int rc = DR_OK;
    (void)ctx;
    EXPECT(t->n >= 0 && t->c >= 0 && t->h >= 0 && t->w >= 0,
           "negative tensor shape (%d, %d, %d, %d)", t->n, t->c, t->h, t->w);
    size_t bytes = tensor_count(t) * cpu_elem_size(t->kind);
    bytes = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (bytes == 0) bytes = CPU_ALIGN;
    t->data = dr_aligned_alloc(CPU_ALIGN, bytes);
    if (!t->data)
        FAIL(DR_ERR_NOMEM, "out of memory allocating a tensor (%d, %d, %d, %d), %zu bytes",
             t->n, t->c, t->h, t->w, bytes);
    memset(t->data, 0, bytes);
cleanup:
    return rc;
}

static void cpu_tensor_free(void *ctx, struct tensor *t)
{
    (void)ctx;
    if (!t) return;
    free(t->data);
    t->data = NULL;
}

static int cpu_tensor_zero(void *ctx, struct tensor *t)
{
    (void)ctx;
    if (t->data) memset(t->data, 0, tensor_count(t) * cpu_elem_size(t->kind));
    return DR_OK;
}

static int cpu_tensor_write(void *ctx, struct tensor *t, const void *host)
{
    (void)ctx;
    if (t->kind != TENSOR_ACT) {
        memcpy(t->data, host, tensor_count(t) * cpu_elem_size(t->kind));
        return DR_OK;
    }
    /* NCHW -> CNHW */
    const size_t hw = (size_t)t->h * t->w;
    const float *src = host;
    float *dst = t->data;
    for (int i = 0; i < t->n; i++)
        for (int c = 0; c < t->c; c++)
            memcpy(dst + ((size_t)c * t->n + i) * hw, src + ((size_t)i * t->c + c) * hw,
                   sizeof(float) * hw);
    return DR_OK;
}

static int cpu_tensor_read(void *ctx, void *host, const struct tensor *t)
{
    (void)ctx;
    if (t->kind != TENSOR_ACT) {
        memcpy(host, t->data, tensor_count(t) * cpu_elem_size(t->kind));
        return DR_OK;
    }
    /* CNHW -> NCHW */
    const size_t hw = (size_t)t->h * t->w;
    const float *src = t->data;
    float *dst = host;
    for (int i = 0; i < t->n; i++)
        for (int c = 0; c < t->c; c++)
            memcpy(dst + ((size_t)i * t->c + c) * hw, src + ((size_t)c * t->n + i) * hw,
                   sizeof(float) * hw);
    return DR_OK;
}

static int cpu_synchronize(void *ctx)
{
    (void)ctx;
    return DR_OK;
}

/* ------------------------------------------------------------------ nodes */

/* backend_ops.supports: every plain op in fp32, whatever the shapes the op table allows,
 * and the fused ops cpu_fused_supported takes. */
static int cpu_supports(void *ctx, const struct plan_node *n)
{
    (void)ctx;
    return cpu_node_supported(n);
}

/* backend_ops.run_node: the op's runner (nodes_cpu.c) on the backend's threads. */
static int cpu_run_node(void *ctx, const struct plan_node *n)
{
    cpu_enter(ctx);
    return cpu_node_run(n);
}

/* ------------------------------------------------------------------ the table */

static const struct backend_ops cpu_ops = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .device_name = cpu_device_name,
    .tensor_alloc = cpu_tensor_alloc,
    .tensor_free = cpu_tensor_free,
    .tensor_zero = cpu_tensor_zero,
    .tensor_write = cpu_tensor_write,
    .tensor_read = cpu_tensor_read,
    .synchronize = cpu_synchronize,
    .supports = cpu_supports,
    .run_node = cpu_run_node,
    .plan_compute = NULL,   /* node by node: the builder fused what the engine runs fused */
    .plan_forget = NULL,
    .counters = NULL,   /* the CPU engine counts nothing */
    .counters_reset = NULL,
};

/* Processor model from /proc/cpuinfo ("model name"), or "" when it cannot be read. */
static void cpu_model_name(char *out, size_t size)
{
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    out[0] = '\0';
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, size, "%s", colon);
        break;
    }
    fclose(f);
}

int backend_cpu_create(struct backend *b, int threads)
{
    int rc = DR_OK;
    struct cpu_ctx *c = NULL;
    char model[128];
    b->ops = NULL;
    b->ctx = NULL;
    if (threads < 0) FAIL(DR_ERR_USAGE, "threads must be 0 (all cores) or more, not %d", threads);
    c = calloc(1, sizeof *c);
    CHECK_ALLOC(c, "the CPU backend");
    c->threads = threads > 0 ? threads : omp_get_max_threads();
    omp_set_num_threads(c->threads);
    (void)cpu_isa_active();   /* the kernels' instruction set, chosen now from one thread */
    cpu_model_name(model, sizeof model);
#if defined(__x86_64__)
    const char *arch = "x86-64 CPU";
#elif defined(__aarch64__)
    const char *arch = "AArch64 CPU";
#else
    const char *arch = "CPU";
#endif
    if (model[0])
        snprintf(c->name, sizeof c->name, "%s (%s), %d thread%s", arch, model, c->threads,
                 c->threads == 1 ? "" : "s");
    else
        snprintf(c->name, sizeof c->name, "%s, %d thread%s", arch, c->threads,
                 c->threads == 1 ? "" : "s");
    b->ops = &cpu_ops;
    b->ctx = c;
    c = NULL;
cleanup:
    free(c);
    return rc;
}
