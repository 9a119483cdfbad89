/* SHA-256 (FIPS 180-4), used to identify experiments by their resolved config text. */
#ifndef DAWNRUN_SHA256_H
#define DAWNRUN_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* Digest of len bytes at data, as 64 lower-case hex digits plus NUL in hex. */
void sha256_hex(char hex[65], const void *data, size_t len);

#endif
