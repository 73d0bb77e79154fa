/* contention.c: placeholder until the experiment lands. */
#include "sqbench.h"
int sb_run_c1(void)
{
    sb_heading("C1", "not implemented yet");
    return 0;
}
int sb_run_c2(void)
{
    sb_heading("C2", "not implemented yet");
    return 0;
}
