/* wake.c: placeholder until the experiment lands. */
#include "sqbench.h"
int sb_run_w1(void)
{
    sb_heading("W1", "not implemented yet");
    return 0;
}
