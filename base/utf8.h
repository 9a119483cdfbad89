/* UTF-8 checking and repair for every text dawnrun writes (JSON, CSV, SVG, Markdown,
 * tables): names and errors come from configs and the results store, where any bytes may
 * hide, and a reader such as Python's json module refuses invalid UTF-8. One rule for
 * all writers: a byte that does not start a valid sequence becomes U+FFFD (the
 * replacement character) and the next byte is read afresh. */
#ifndef DAWNRUN_UTF8_H
#define DAWNRUN_UTF8_H

#include <stdint.h>
#include <stdio.h>

#define UTF8_REPLACEMENT "\xef\xbf\xbd"   /* U+FFFD */

/* Length (1 to 4) of the valid UTF-8 sequence at s, setting *cp to its code point, or 0
 * when s[0] starts none: a stray continuation byte, an overlong form, a surrogate, a
 * value past U+10FFFF or a sequence cut short (by the end of s too). s[0] == 0 is the
 * one-byte sequence U+0000. */
int utf8_decode(uint32_t *cp, const char *s);

/* 1 when all of the NUL-terminated s is valid UTF-8 (NULL counts as valid). */
int utf8_valid(const char *s);

/* Writes s (NULL as "") to f as valid UTF-8: every byte utf8_decode rejects as
 * UTF8_REPLACEMENT, everything else unchanged. */
void utf8_fputs(FILE *f, const char *s);

/* A malloc'd copy of s repaired as utf8_fputs writes it; NULL when out of memory (or s
 * is NULL). */
char *utf8_repair(const char *s);

#endif
