/* square.c: placeholder */
#include "sqbench.h"
int sb_run_s1(void)
{
    sb_heading("S1", "not implemented yet");
    return 0;
}
int sb_run_s2(void)
{
    sb_heading("S2", "not implemented yet");
    return 0;
}
int sb_run_s3(void)
{
    sb_heading("S3", "not implemented yet");
    return 0;
}
int sb_run_s4(void)
{
    sb_heading("S4", "not implemented yet");
    return 0;
}
int sb_run_s5(void)
{
    sb_heading("S5", "not implemented yet");
    return 0;
}
