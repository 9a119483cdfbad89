/* The support table of the fused convolution graphs (fused_support.h): one row per graph
 * the engine can ask for, its verdict per data type as NVIDIA's cuDNN 9 documentation
 * gives it for compute capability 9.0 (the cuDNN developer guide's Graph API chapter,
 * sections "Specialized Pre-Compiled Engines" and "Generic Runtime Fusion Engines"), and
 * the conditions under which an accepted graph runs. docs/cudnn-graphs.md prints the same
 * table (ctest cuda_emulated_support_table checks that they agree). */
#include "fused_support.h"

#include <stddef.h>
#include <string.h>

#include "../precision.h"

/* The sections the verdicts rest on. */
#define S_SINGLE "Pre-Compiled Single Operation Engines (ConvolutionFwd, ConvolutionBwFilter)"
#define S_CBNF                                                                             \
    "Specialized Pre-Compiled Engines, ConvBNfprop: on compute capability 9.0 only the "    \
    "full pattern (scale + bias + ReLU + Conv + GenStats) and the partial one (Conv + "     \
    "GenStats); X, W, scale, bias FP16"
#define S_CBNW                                                                             \
    "Specialized Pre-Compiled Engines, ConvBNwgrad: on compute capability 9.0 only the "    \
    "full pattern (scale + bias + ReLU + wgrad); X, scale, bias, dy FP16"
#define S_DDBN                                                                             \
    "Specialized Pre-Compiled Engines, DgradDreluBNBwdWeight: dy, W, X FP16, statistics "   \
    "and outputs FP32; Support Surface 90: strided ConvolutionBwdData fusions are not "    \
    "supported (the specialised engine's own text names no stride)"
#define S_SS90_G1                                                                          \
    "Generic Runtime Fusion Engines, Support Surface 90: ConvolutionFwd mainloop fusion "  \
    "(g1: pointwise operations on X, [1, C, 1, 1] operands, inputs 128-bit aligned)"
#define S_SS90_G2                                                                          \
    "Generic Runtime Fusion Engines, Support Surface 90: ConvolutionFwd epilogue fusion "  \
    "(g2: pointwise operations, Y the first input of each)"
#define S_SS90_G12 S_SS90_G1 "; " S_SS90_G2
#define S_SS70_GS                                                                          \
    "Generic Runtime Fusion Engines, Support Surface 70 (compute capability 9.0 listed): "  \
    "GenStats in g2; Operation Specific Constraints, GenStats: X HALF or FLOAT"
#define S_GS_TYPE                                                                          \
    "Operation Specific Constraints, GenStats: X HALF or FLOAT; ConvBNfprop: FP16 only; "   \
    "Support Surfaces 90 and 80: no GenStats in g2"
#define S_GS_ADD                                                                           \
    "Support Surfaces 90 and 80: g2 holds pointwise operations and at most one reduction, " \
    "no GenStats; Support Surface 70: every g2 operation takes Y as its first input (this " \
    "GenStats reads the sum); ConvBNfprop: no add in either pattern"
#define S_RES_SBR                                                                          \
    "Support Surfaces 90, 80, 70: every ConvolutionFwd g2 operation takes Y as its first "  \
    "input (the residual's scale, bias and ReLU do not); no specialised pattern"
#define S_SBR_GS                                                                           \
    "ConvBNfprop: FP16 only; Support Surface 70: the g1 chain in HALF only; Support "       \
    "Surfaces 90 and 80: no GenStats in g2"
#define S_WG_G1                                                                            \
    "ConvBNwgrad: FP16 only; Support Surface 90: ConvolutionBwdFilter, fusion operation in " \
    "g1 is not supported; Support Surface 80: no ConvolutionBwdFilter fusions; Support "   \
    "Surface 70: the g1 chain in HALF only"
#define S_DG_TYPE                                                                          \
    "DgradDreluBNBwdWeight: FP16 only; BnBwdWeight is no operation of the generic engines"
#define S_SILENT                                                                           \
    "no engine's documented pattern adds a gradient between the data gradient and the "    \
    "ReLU's backward: not documented, so refused"

/* Cells: accepted by a pre-compiled engine, by a runtime-compiled one, or refused. */
#define PRE(v, s) {1, 0, v, s}
#define RTC(v, s) {1, 1, v, s}
#define NO(v, s) {0, 0, v, s}

#define SINGLE PRE("pre-compiled single-operation engine", S_SINGLE)
#define NO_GS_ADD NO("refused: GenStats after an add", S_GS_ADD)
#define NO_RES_SBR NO("refused: operations on the residual before the add", S_RES_SBR)

/* Rows in the order of the graphs' names; cells in enum fused_support_dtype order (fp32,
 * fp16, bf16). */
static const struct fused_support_row rows[] = {
    {"conv", 0, {SINGLE, SINGLE, SINGLE}},
    {"conv-genstats", 0,
     {RTC("runtime fusion, support surface 70", S_SS70_GS),
      PRE("ConvBNfprop, partial pattern", S_CBNF),
      NO("refused: GenStats of a BFLOAT16 tensor", S_GS_TYPE)}},
    {"conv-add", 0,
     {RTC("runtime fusion, support surface 90", S_SS90_G2),
      RTC("runtime fusion, support surface 90", S_SS90_G2),
      RTC("runtime fusion, support surface 90", S_SS90_G2)}},
    {"conv-add-genstats", 0, {NO_GS_ADD, NO_GS_ADD, NO_GS_ADD}},
    {"conv-scale-bias-relu-add", 0, {NO_RES_SBR, NO_RES_SBR, NO_RES_SBR}},
    {"conv-scale-bias-relu-add-genstats", 0, {NO_RES_SBR, NO_RES_SBR, NO_RES_SBR}},
    {"scale-bias-relu-conv", 0,
     {RTC("runtime fusion, support surface 90", S_SS90_G1),
      RTC("runtime fusion, support surface 90", S_SS90_G1),
      RTC("runtime fusion, support surface 90", S_SS90_G1)}},
    {"scale-bias-relu-conv-genstats", 0,
     {NO("refused: prologue and GenStats outside FP16", S_SBR_GS),
      PRE("ConvBNfprop, full pattern", S_CBNF),
      NO("refused: prologue and GenStats outside FP16", S_SBR_GS)}},
    {"scale-bias-relu-conv-add", 0,
     {RTC("runtime fusion, support surface 90", S_SS90_G12),
      RTC("runtime fusion, support surface 90", S_SS90_G12),
      RTC("runtime fusion, support surface 90", S_SS90_G12)}},
    {"scale-bias-relu-conv-add-genstats", 0, {NO_GS_ADD, NO_GS_ADD, NO_GS_ADD}},
    {"scale-bias-relu-conv-scale-bias-relu-add", 0, {NO_RES_SBR, NO_RES_SBR, NO_RES_SBR}},
    {"scale-bias-relu-conv-scale-bias-relu-add-genstats", 0,
     {NO_RES_SBR, NO_RES_SBR, NO_RES_SBR}},
    {"wgrad", 0, {SINGLE, SINGLE, SINGLE}},
    {"scale-bias-relu-wgrad", 0,
     {NO("refused: a prologue on the weight gradient outside FP16", S_WG_G1),
      PRE("ConvBNwgrad", S_CBNW),
      NO("refused: a prologue on the weight gradient outside FP16", S_WG_G1)}},
    {"dgrad-drelu-dbn-weight", 1,
     {NO("refused: outside FP16", S_DG_TYPE), PRE("DgradDreluBNBwdWeight", S_DDBN),
      NO("refused: outside FP16", S_DG_TYPE)}},
    {"dgrad-add-drelu-dbn-weight", 1,
     {NO("refused: not documented", S_SILENT), NO("refused: not documented", S_SILENT),
      NO("refused: not documented", S_SILENT)}},
};

const struct fused_support_row *fused_support_rows(int *count)
{
    *count = (int)(sizeof(rows) / sizeof(rows[0]));
    return rows;
}

/* q's graph name: [scale-bias-relu-]conv[-add | -scale-bias-relu-add][-genstats],
 * [scale-bias-relu-]wgrad, dgrad[-add]-drelu-dbn-weight. */
static void fused_support_name(char *buf, size_t len, const struct fused_support_query *q)
{
    const char *pro = q->pro ? "scale-bias-relu-" : "";
    buf[0] = '\0';
    if (len < 64) return;
    if (q->op == FUSED_SUPPORT_DGRAD) {
        strcpy(buf, q->res ? "dgrad-add-drelu-dbn-weight" : "dgrad-drelu-dbn-weight");
    } else if (q->op == FUSED_SUPPORT_WGRAD) {
        strcpy(buf, pro);
        strcat(buf, "wgrad");
    } else {
        strcpy(buf, pro);
        strcat(buf, "conv");
        if (q->res == 1) strcat(buf, "-add");
        if (q->res == 2) strcat(buf, "-scale-bias-relu-add");
        if (q->stats) strcat(buf, "-genstats");
    }
}

const struct fused_support_row *fused_support_row_of(const struct fused_support_query *q)
{
    char name[96];
    fused_support_name(name, sizeof(name), q);
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
        if (!strcmp(rows[i].graph, name)) return &rows[i];
    return NULL;
}

int fused_support_accepts(const struct fused_support_query *q, const char **why)
{
    const struct fused_support_row *row = fused_support_row_of(q);
    const char *no = NULL;
    const int es = q->dtype == FUSED_SUPPORT_F32 ? 4 : 2;
    if (!row || (unsigned)q->dtype >= FUSED_SUPPORT_DTYPE_COUNT)
        no = "not a graph of the support table";
    else if (!row->cell[q->dtype].accepted)
        no = row->cell[q->dtype].verdict;
    else if (row->stride1_only && q->stride != 1)
        no = "refused: strided backward-data fusion";
    else if ((q->ci * es) % 16 || (q->co * es) % 16)
        no = "refused: channel rows not a multiple of 16 bytes";
    if (why) *why = no;
    return no == NULL;
}

const char *fused_support_dtype_name(enum fused_support_dtype dt)
{
    return precision_name(dt == FUSED_SUPPORT_F16    ? PRECISION_FP16
                          : dt == FUSED_SUPPORT_BF16 ? PRECISION_BF16
                                                     : PRECISION_FP32);
}
