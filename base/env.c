/* The environment's on/off switches (env.h). */
#include "env.h"

#include <stdlib.h>
#include <string.h>

int env_switch_on(const char *var)
{
    const char *v = getenv(var);
    return !(v && strcmp(v, "0") == 0);
}
