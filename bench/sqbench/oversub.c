/* oversub.c: placeholder until the experiment lands. */
#include "sqbench.h"
int sb_run_o1(void)
{
    sb_heading("O1", "not implemented yet");
    return 0;
}
