/* An experiment's identity: the hash of its resolved config text. */
#include <string.h>

#include "experiment.h"
#include "base/sha256.h"

void experiment_hash(const struct experiment *e, char hex[65])
{
    const char *text = e->resolved ? e->resolved : "";
    sha256_hex(hex, text, strlen(text));
}
