/* Shared pieces of the libFuzzer targets in tests/fuzz: the libFuzzer entry points every
 * target defines, a private temporary directory per process, and whole-file writes.
 * The same target sources build two ways: with clang and -fsanitize=fuzzer (DAWNRUN_FUZZ,
 * the fuzzing binaries fuzz_NAME) and, in every build, linked with replay.c into
 * fuzz_NAME_replay, which runs the committed inputs (tests/fuzz/regress/NAME and the seed
 * corpora) through the same function under ctest. */
#ifndef DAWNRUN_TESTS_FUZZ_H
#define DAWNRUN_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Called once before the first input (argc/argv are the process's). Returns 0. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
/* Runs one input; returns 0. A problem the target detects itself (a broken invariant of
 * an accepted input) aborts, like a sanitizer report. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The process's scratch directory (created on first use, removed at exit with all it
 * holds); aborts when it cannot be made. `tag` names it: dawnrun-fuzz-TAG-XXXXXX in
 * /dev/shm when writable, else in /tmp. */
const char *fuzz_dir(const char *tag);

/* dir/name in buf (aborts when it does not fit). */
void fuzz_path(char *buf, size_t n, const char *dir, const char *name);

/* Writes n bytes to path, replacing it (a symbolic link there is replaced, not
 * followed); aborts on failure. */
void fuzz_write(const char *path, const void *data, size_t n);

/* Reads the whole of path into a malloc'd buffer; NULL when it cannot. */
unsigned char *fuzz_read(const char *path, size_t *n);

/* Aborts with a message when cond is false: an invariant the code under test promises. */
#define FUZZ_ASSERT(cond) fuzz_assert((cond), #cond, __FILE__, __LINE__)
void fuzz_assert(int cond, const char *what, const char *file, int line);

#endif
