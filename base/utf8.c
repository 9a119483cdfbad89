/* UTF-8 validation and U+FFFD repair (see utf8.h), after RFC 3629's well-formed byte
 * sequences: the second byte's range depends on the first. */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

int utf8_decode(uint32_t *cp, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
    if (n == 0 || c > 0xf4) return 0;
    unsigned lo = 0x80, hi = 0xbf;   /* allowed range of the second byte */
    if (c == 0xe0) lo = 0xa0;        /* no overlong 3-byte forms */
    if (c == 0xed) hi = 0x9f;        /* no surrogates */
    if (c == 0xf0) lo = 0x90;        /* no overlong 4-byte forms */
    if (c == 0xf4) hi = 0x8f;        /* nothing above U+10FFFF */
    if (s[1] < lo || s[1] > hi) return 0;
    uint32_t v = c & (0x7fu >> n);
    for (int k = 1; k < n; k++) {
        if ((s[k] & 0xc0) != 0x80) return 0;   /* also stops at the terminating NUL */
        v = (v << 6) | (s[k] & 0x3fu);
    }
    *cp = v;
    return n;
}

int utf8_valid(const char *s)
{
    uint32_t cp;
    if (!s) return 1;
    while (*s) {
        int n = utf8_decode(&cp, s);
        if (n == 0) return 0;
        s += n;
    }
    return 1;
}

void utf8_fputs(FILE *f, const char *s)
{
    uint32_t cp;
    const char *run = s ? s : "";   /* start of the valid bytes not yet written */
    for (s = run; *s;) {
        int n = utf8_decode(&cp, s);
        if (n > 0) {
            s += n;
            continue;
        }
        fwrite(run, 1, (size_t)(s - run), f);
        fputs(UTF8_REPLACEMENT, f);
        run = ++s;
    }
    fwrite(run, 1, (size_t)(s - run), f);
}

char *utf8_repair(const char *s)
{
    uint32_t cp;
    if (!s) return NULL;
    size_t len = 0;
    for (const char *p = s; *p;) {
        int n = utf8_decode(&cp, p);
        len += n > 0 ? (size_t)n : sizeof UTF8_REPLACEMENT - 1;
        p += n > 0 ? n : 1;
    }
    char *out = malloc(len + 1), *w = out;
    if (!out) return NULL;
    for (const char *p = s; *p;) {
        int n = utf8_decode(&cp, p);
        if (n > 0) {
            memcpy(w, p, (size_t)n);
            w += n;
            p += n;
        } else {
            memcpy(w, UTF8_REPLACEMENT, sizeof UTF8_REPLACEMENT - 1);
            w += sizeof UTF8_REPLACEMENT - 1;
            p++;
        }
    }
    *w = '\0';
    return out;
}
