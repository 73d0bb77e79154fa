/* uncontended.c: placeholder until the experiment lands. */
#include "sqbench.h"
int sb_run_u1(void)
{
    sb_heading("U1", "not implemented yet");
    return 0;
}
int sb_u1_inner(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 1;
}
