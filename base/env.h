/* The environment's on/off switches (DAWNRUN_CUDA_FUSE, DAWNRUN_CPU_FUSE, DAWNRUN_CUDA_GRAPH,
 * ...): one rule for all of them, stated here once. */
#ifndef DAWNRUN_ENV_H
#define DAWNRUN_ENV_H

#ifdef __cplusplus
extern "C" {
#endif

/* Whether the switch named var is on: 0 when the variable is set to "0", else 1 (unset,
 * empty and any other value included). Read at each call. */
int env_switch_on(const char *var);

#ifdef __cplusplus
}
#endif

#endif
