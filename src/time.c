/* time.c: the CLOCK_MONOTONIC deadline helpers of squarefree/time.h. */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include <squarefree/time.h>

#ifdef SQF_DSCHED
int64_t sqf_dsched_now(void);
#endif

sqf_deadline sqf_now(void)
{
#ifdef SQF_DSCHED
    return sqf_dsched_now(); /* the deterministic scheduler's simulated clock */
#endif
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (sqf_deadline)ts.tv_sec * SQF_SEC + ts.tv_nsec;
}

sqf_deadline sqf_after(int64_t ns)
{
    sqf_deadline now = sqf_now();
    if (ns > 0 && now > SQF_FOREVER - ns) return SQF_FOREVER;
    return now + ns;
}
