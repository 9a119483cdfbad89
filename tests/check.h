/* Minimal assertion helpers for dawnrun's test executables: each CHECK failure prints
 * file:line and the expression, and the program exits 1 at check_finish(). */
#ifndef DAWNRUN_TESTS_CHECK_H
#define DAWNRUN_TESTS_CHECK_H

extern int check_failures;
extern int check_count;

/* Records one assertion; prints the message when it fails. */
void check_record(int ok, const char *file, int line, const char *expr);
/* Prints "N passed, M failed" and returns the process exit code (0 or 1). */
int check_finish(const char *suite);
/* Returns the tests' data directory ($DAWNRUN_DATA) or NULL when unset or missing. */
const char *check_data_dir(void);

#define CHECK(cond) check_record(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_NEAR(a, b, tol)                                                              \
    check_record(fabs((double)(a) - (double)(b)) <= (tol), __FILE__, __LINE__,            \
                 #a " ~= " #b " within " #tol)

#endif
