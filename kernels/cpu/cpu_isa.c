/* The choice of the CPU kernels' instruction set (cpu_isa.h) and the public kernel names,
 * each a call through the chosen variant's table. Compiled once, for the build's baseline. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "cpu_isa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/status.h"

static const char *const isa_names[CPU_ISA_COUNT] = {"generic", "avx2", "avx512"};

const char *cpu_isa_name(enum cpu_isa isa)
{
    return (unsigned)isa < CPU_ISA_COUNT ? isa_names[isa] : "?";
}

/* The variant tables the build has (CMakeLists.txt defines DAWNRUN_CPU_ISA_VARIANTS on
 * x86-64, where all three are compiled). */
static const struct cpu_isa_table *isa_table(enum cpu_isa isa)
{
    switch (isa) {
    case CPU_ISA_GENERIC: return &cpu_isa_table_generic;
#ifdef DAWNRUN_CPU_ISA_VARIANTS
    case CPU_ISA_AVX2: return &cpu_isa_table_avx2;
    case CPU_ISA_AVX512: return &cpu_isa_table_avx512;
#endif
    default: return NULL;
    }
}

#if defined(__x86_64__) && defined(__GNUC__)
/* F16C (CPUID leaf 1, ECX bit 29), read directly: clang's __builtin_cpu_supports does
 * not know the name. */
static int cpu_has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
}
#endif

int cpu_isa_supported(enum cpu_isa isa)
{
    if (!isa_table(isa)) return 0;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    switch (isa) {
    case CPU_ISA_GENERIC: return 1;
    case CPU_ISA_AVX2:   /* x86-64-v3 */
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
               __builtin_cpu_supports("bmi2") && cpu_has_f16c();
    case CPU_ISA_AVX512: /* x86-64-v4 */
        return cpu_isa_supported(CPU_ISA_AVX2) && __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    default: return 0;
    }
#else
    return isa == CPU_ISA_GENERIC;
#endif
}

static const struct cpu_isa_table *active_table;
static enum cpu_isa active_isa;

/* The best variant, or the one DAWNRUN_CPU_ISA names; an unknown or unsupported name is
 * reported once on stderr and the best variant used. */
static void isa_choose(void)
{
    enum cpu_isa best = CPU_ISA_GENERIC;
    for (int i = CPU_ISA_COUNT - 1; i > CPU_ISA_GENERIC; i--)
        if (cpu_isa_supported((enum cpu_isa)i)) {
            best = (enum cpu_isa)i;
            break;
        }
    const char *want = getenv("DAWNRUN_CPU_ISA");
    if (want && *want) {
        int found = -1;
        for (int i = 0; i < CPU_ISA_COUNT; i++)
            if (!strcmp(want, isa_names[i])) found = i;
        if (found < 0)
            fprintf(stderr, "dawnrun: DAWNRUN_CPU_ISA=%s is not generic, avx2 or avx512; "
                    "using %s\n", want, isa_names[best]);
        else if (!cpu_isa_supported((enum cpu_isa)found))
            fprintf(stderr, "dawnrun: DAWNRUN_CPU_ISA=%s: this processor lacks it; using %s\n",
                    want, isa_names[best]);
        else
            best = (enum cpu_isa)found;
    }
    active_isa = best;
    active_table = isa_table(best);
}

/* The chosen table; the choice is made once, at the first kernel call (from one thread:
 * the kernels are called outside parallel regions). */
static const struct cpu_isa_table *isa(void)
{
    if (!active_table) isa_choose();
    return active_table;
}

enum cpu_isa cpu_isa_active(void)
{
    isa();
    return active_isa;
}

int cpu_isa_use(enum cpu_isa isa_wanted)
{
    if (!cpu_isa_supported(isa_wanted)) return DR_ERR_USAGE;
    active_isa = isa_wanted;
    active_table = isa_table(isa_wanted);
    return DR_OK;
}

/* ------------------------------------------------------------------ the public names */

void batchnorm_forward_train_cpu(float *y, float *save_mean, float *save_invstd,
                                 float *running_mean, float *running_var, const float *x,
                                 const float *gamma, const float *beta, int c, int n, int hw,
                                 int splits, float eps, float momentum)
{
    isa()->batchnorm_forward_train_cpu(y, save_mean, save_invstd, running_mean, running_var, x,
                                       gamma, beta, c, n, hw, splits, eps, momentum);
}

void batchnorm_forward_eval_cpu(float *y, const float *x, const float *gamma, const float *beta,
                                const float *running_mean, const float *running_var, int c,
                                int n, int hw, float eps)
{
    isa()->batchnorm_forward_eval_cpu(y, x, gamma, beta, running_mean, running_var, c, n, hw,
                                      eps);
}

void batchnorm_backward_cpu(float *dx, float *dgamma, float *dbeta, const float *dy,
                            const float *x, const float *gamma, const float *save_mean,
                            const float *save_invstd, int c, int n, int hw, int splits,
                            int accumulate_dx)
{
    isa()->batchnorm_backward_cpu(dx, dgamma, dbeta, dy, x, gamma, save_mean, save_invstd, c, n,
                                  hw, splits, accumulate_dx);
}

void bn_train_fused_cpu(float *y, float *out, float *coef, float *save_mean, float *save_invstd,
                        float *running_mean, float *running_var, const float *x,
                        const float *res, const float *gamma, const float *beta, int res_first,
                        int c, int n, int hw, int splits, float eps, float momentum)
{
    isa()->bn_train_fused_cpu(y, out, coef, save_mean, save_invstd, running_mean, running_var, x,
                              res, gamma, beta, res_first, c, n, hw, splits, eps, momentum);
}

void bn_eval_fused_cpu(float *y, float *out, const float *x, const float *res,
                       const float *gamma, const float *beta, const float *running_mean,
                       const float *running_var, int res_first, int c, int n, int hw, float eps)
{
    isa()->bn_eval_fused_cpu(y, out, x, res, gamma, beta, running_mean, running_var, res_first, c,
                             n, hw, eps);
}

void bn_backward_fused_cpu(float *dx, float *dgamma, float *dbeta, const float *dy_act,
                           const float *coef, const float *x, const float *gamma,
                           const float *save_invstd, int c, int n, int hw, int splits,
                           int accumulate_dx)
{
    isa()->bn_backward_fused_cpu(dx, dgamma, dbeta, dy_act, coef, x, gamma, save_invstd, c, n,
                                 hw, splits, accumulate_dx);
}

int activation_forward_cpu(float *y, const float *x, enum act_kind kind, float alpha,
                           size_t count)
{
    return isa()->activation_forward_cpu(y, x, kind, alpha, count);
}

int activation_backward_cpu(float *dx, const float *dy, const float *x, enum act_kind kind,
                            float alpha, size_t count, int accumulate_dx)
{
    return isa()->activation_backward_cpu(dx, dy, x, kind, alpha, count, accumulate_dx);
}

void pool_forward_cpu(float *y, const float *x, enum pool_kind kind, const struct pool_dims *d)
{
    isa()->pool_forward_cpu(y, x, kind, d);
}

void pool_backward_cpu(float *dx, const float *dy, const float *x, const float *y,
                       enum pool_kind kind, const struct pool_dims *d, int accumulate_dx)
{
    isa()->pool_backward_cpu(dx, dy, x, y, kind, d, accumulate_dx);
}

void concat_forward_cpu(float *y, const float *const *xs, const int *cs, int count, size_t plane)
{
    isa()->concat_forward_cpu(y, xs, cs, count, plane);
}

void concat_backward_cpu(float *const *dxs, const float *dy, const int *cs, int count,
                         size_t plane, const int *accumulate)
{
    isa()->concat_backward_cpu(dxs, dy, cs, count, plane, accumulate);
}

void add_forward_cpu(float *y, const float *a, const float *b, size_t count)
{
    isa()->add_forward_cpu(y, a, b, count);
}

void scale_forward_cpu(float *y, const float *x, float s, size_t count)
{
    isa()->scale_forward_cpu(y, x, s, count);
}

void scaled_copy_cpu(float *dx, const float *dy, float s, size_t count, int accumulate_dx)
{
    isa()->scaled_copy_cpu(dx, dy, s, count, accumulate_dx);
}

void flatten_forward_cpu(float *y, const float *x, int c, int n, int hw)
{
    isa()->flatten_forward_cpu(y, x, c, n, hw);
}

void flatten_backward_cpu(float *dx, const float *dy, int c, int n, int hw, int accumulate_dx)
{
    isa()->flatten_backward_cpu(dx, dy, c, n, hw, accumulate_dx);
}

void sgd_update_cpu(float *w, float *v, float *dw, float lr, float wd, float momentum,
                    int nesterov, size_t count)
{
    isa()->sgd_update_cpu(w, v, dw, lr, wd, momentum, nesterov, count);
}

void param_lerp_cpu(float *avg, float *w, float t, int copy_back, size_t count)
{
    isa()->param_lerp_cpu(avg, w, t, copy_back, count);
}
