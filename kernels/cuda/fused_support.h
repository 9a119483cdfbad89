/* The support table of the fused convolution graphs (docs/cudnn-graphs.md, "Support
 * table"): for every graph the CUDA engine can ask cuDNN's backend API for
 * (conv_fused_cuda.h), per data type, whether NVIDIA's documentation of cuDNN 9 on compute
 * capability 9.0 says an engine runs it (which one, under which conditions of stride and
 * channel count), or not, with the section of the documentation the verdict rests on.
 * Where the documentation is silent the verdict is "refused".
 *
 * Two readers: the engine, which asks cuDNN only for graphs this table accepts (a refused
 * one runs unfused without a single cuDNN call), and the host emulation of cuDNN
 * (tests/cuda_emu/emu_graph.cpp), which recognises a graph from its operations and serves
 * it only when this table accepts it, as the real library would. Plain C, no CUDA. */
#ifndef DAWNRUN_FUSED_SUPPORT_H
#define DAWNRUN_FUSED_SUPPORT_H

#ifdef __cplusplus
extern "C" {
#endif

/* The convolution at the graph's heart. */
enum fused_support_op {
    FUSED_SUPPORT_FWD,     /* forward, with prologue, residual add and statistics optional */
    FUSED_SUPPORT_WGRAD,   /* backward filter, with prologue optional */
    FUSED_SUPPORT_DGRAD    /* backward data + ReLU mask + batch norm's weight gradients,
                              with a residual gradient added before the mask optional */
};

/* Data types of the graph's activations (the compute type is fp32 in every graph). */
enum fused_support_dtype { FUSED_SUPPORT_F32, FUSED_SUPPORT_F16, FUSED_SUPPORT_BF16,
                           FUSED_SUPPORT_DTYPE_COUNT };

/* One graph as asked: its shape of operations and the convolution's geometry. */
struct fused_support_query {
    enum fused_support_op op;
    int pro;      /* FWD, WGRAD: a scale-bias-ReLU prologue on the convolution's input */
    int res;      /* FWD: 0 no residual, 1 a residual added as it is, 2 a residual through
                     its own scale-bias-ReLU; DGRAD: 0 or 1 (a gradient added before the
                     mask) */
    int stats;    /* FWD: the output's per-channel sum and sum of squares (GenStats) */
    enum fused_support_dtype dtype;
    int stride;   /* the convolution's stride (both dimensions) */
    int k;        /* its filter size (k x k) */
    int ci, co;   /* input and output channels */
};

/* What the documentation says of one graph in one data type. */
struct fused_support_cell {
    int accepted;             /* 1: an engine runs it (under the row's conditions) */
    int runtime_compiled;     /* accepted by a runtime-fusion engine, which compiles its
                                 kernel when the execution plan is finalized; 0 for the
                                 pre-compiled specialised engines */
    const char *verdict;      /* the engine that runs it, or why it is refused */
    const char *source;       /* the section of NVIDIA's documentation it rests on */
};

/* One row of the table: a graph, its verdict per data type (indexed by
 * enum fused_support_dtype) and the conditions of an accepted one. */
struct fused_support_row {
    const char *graph;        /* cuDNN-style name, e.g. "scale-bias-relu-conv-genstats" */
    int stride1_only;         /* accepted at stride 1 only */
    struct fused_support_cell cell[FUSED_SUPPORT_DTYPE_COUNT];
};

/* Every row, in table order; *count their number. */
const struct fused_support_row *fused_support_rows(int *count);

/* The row of q's graph (never NULL for a query of the ops above); its cell[q->dtype] is
 * q's verdict before the conditions. */
const struct fused_support_row *fused_support_row_of(const struct fused_support_query *q);

/* 1 when the table accepts q: its row accepts the graph and q meets the row's
 * conditions (stride 1 where the row says so; input and output channel rows a multiple
 * of 16 bytes, the 128-bit alignment the engines document for their operands); else 0,
 * with *why (when why is not NULL) saying which rule refuses it. */
int fused_support_accepts(const struct fused_support_query *q, const char **why);

/* The data type's name as the table prints it ("fp16"). */
const char *fused_support_dtype_name(enum fused_support_dtype dt);

#ifdef __cplusplus
}
#endif

#endif
