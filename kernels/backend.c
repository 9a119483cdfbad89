/* Backend lifetime helpers shared by every engine. */
#include "backend.h"

#include <string.h>

void backend_destroy(struct backend *b)
{
    if (b && b->ops && b->ops->destroy) b->ops->destroy(b->ctx);
    if (b) memset(b, 0, sizeof(*b));
}
