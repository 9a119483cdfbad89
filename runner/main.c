/* dawnrun command-line entry point. */
#include <stdio.h>
int main(void) { puts("dawnrun"); return 0; }
