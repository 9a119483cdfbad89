/* Host emulation (see run.sh): the entry point of the emulated `dawnrun selfcheck`. */
#include "runner/cli.h"

int main(int argc, char **argv)
{
    return cmd_selfcheck(argc, argv);
}
