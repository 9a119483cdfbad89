/* The backend interface: a table of services plus a context, as a ggml backend is. An
 * engine (the CPU reference, kernels/cpu; the CUDA engine, kernels/cuda) fills a struct
 * backend_ops; the rest of dawnrun holds a struct backend and never knows whether memory
 * is host or device, fp32 or fp16, CNHW or NHWC.
 *
 * The table has no op of its own: every computation is a node of kernels/plan.h (an op
 * code, its dst and src tensors, its parameters). An engine says which nodes it runs
 * (supports), runs one (run_node, through plan_run_node, which checks the node against
 * the op table first) and runs a whole plan, fusing what it can (plan_compute). An eager
 * call is a plan of one node (plan_run_op). What stays here is what is not a node:
 * memory (allocation and the conversions to and from the canonical host form of
 * kernels/tensor.h), waiting for the device, the device's name, the counters, the choice
 * of deterministic algorithms, and forgetting a freed plan. */
#ifndef DAWNRUN_BACKEND_H
#define DAWNRUN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "counters.h"
#include "tensor.h"

struct plan;
struct plan_node;

struct backend_ops {
    const char *name;                                 /* "cpu", "cuda" */
    void (*destroy)(void *ctx);
    /* device description for records ("2-core x86-64 CPU", "NVIDIA H200, driver ...") */
    const char *(*device_name)(void *ctx);

    /* memory: tensor_alloc reads kind and shape, sets data, zero-fills */
    int (*tensor_alloc)(void *ctx, struct tensor *t);
    void (*tensor_free)(void *ctx, struct tensor *t);
    int (*tensor_zero)(void *ctx, struct tensor *t);
    /* host is the canonical form of kernels/tensor.h */
    int (*tensor_write)(void *ctx, struct tensor *t, const void *host);
    int (*tensor_read)(void *ctx, void *host, const struct tensor *t);
    int (*synchronize)(void *ctx);

    /* Whether this engine runs node n (kernels/plan.h) as it stands: 1 or 0. A node made
     * by plan_node_init without tensors asks about its op alone. */
    int (*supports)(void *ctx, const struct plan_node *n);
    /* Runs node n, which plan_node_check passed and supports accepted: the op its kind
     * names, on its slots and parameters (plan_run_node is the caller). */
    int (*run_node)(void *ctx, const struct plan_node *n);
    /* Optional (NULL: the engine runs plan_run_each): runs a whole plan, with whatever
     * fusion and replay the backend supports, with plan_run_each's results. Called through
     * kernels/plan.h's plan_compute, which records the backend in the plan. */
    int (*plan_compute)(void *ctx, const struct plan *p);
    /* Optional (NULL: the engine keeps nothing per plan): drops whatever the engine keeps
     * about plan p (captured graphs), keyed by p's address,
     * because p is being freed and a later plan may sit at that address. plan_free calls
     * it for the backend plan_compute last ran p on. */
    void (*plan_forget)(void *ctx, const struct plan *p);

    /* Optional (NULL when the engine counts nothing, as the CPU engine): the counts since
     * the context was created or last reset (kernels/counters.h); reading them does not
     * wait for the device. A plain copy: `dawnrun bench`'s watching thread reads them
     * while the engine runs (a count may then be a step behind). */
    int (*counters)(void *ctx, struct backend_counters *out);
    void (*counters_reset)(void *ctx);

    /* Optional (NULL when the engine gives the same bits for the same inputs every run
     * anyway, as the CPU engine): on = 1 asks that every op do so (the CUDA engine then
     * takes only the cuDNN algorithms and fused engines documented deterministic), 0 lets
     * the engine take the fastest whatever their determinism (the CUDA engine's default,
     * unless DAWNRUN_CUDA_DETERMINISTIC=1). For callers comparing runs bit for bit (the
     * selfcheck). Call it before the first op: once the engine has chosen algorithms under
     * the other setting it fails with DR_ERR_INTERNAL. */
    int (*set_deterministic)(void *ctx, int on);
};

struct backend {
    const struct backend_ops *ops;
    void *ctx;
};

/* Creates the CPU reference engine (fp32, CNHW, OpenMP over `threads`; 0 = all cores). */
int backend_cpu_create(struct backend *b, int threads);

/* Says whether the CUDA engine can run on `device` here, without printing: DR_OK, or
 * DR_ERR_NODEVICE with the reason in why (e.g. the driver's error string). */
int backend_cuda_probe(int device, char *why, size_t whylen);

/* Creates the CUDA engine on `device`, computing activations in `precision` (an enum
 * precision of kernels/precision.h: fp32, fp16 or bf16; parameters, optimiser state and
 * BN statistics stay fp32). Returns DR_ERR_NODEVICE when no usable GPU (driver missing,
 * no device, cuDNN cannot initialise) or when built without CUDA. */
int backend_cuda_create(struct backend *b, int device, int precision);

/* Releases the backend. Safe on a zeroed struct. */
void backend_destroy(struct backend *b);

#endif
