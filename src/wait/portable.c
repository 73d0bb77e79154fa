/* portable.c: the wait seam on plain pthreads, for systems without futexes
 * and as a second implementation that the whole test suite also runs on.
 *
 * Waiters queue in the user-space futex of table.h, each thread asleep on
 * its own condition variable (sqf_table_sleep).  Event loops without
 * io_uring park their waits in the same table (loop.c), so they mix with
 * these threads in arrival order.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>

#include "table.h"

int sqf_wait_any(const struct sqf_wait_word *w, int n, sqf_deadline deadline)
{
    return sqf_table_sleep(w, n, deadline);
}

int sqf_wait(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared)
{
    struct sqf_wait_word w = {word, expected, shared};
    int r = sqf_wait_any(&w, 1, deadline);
    return r >= 0 ? SQF_WAIT_WOKEN : -r;
}

void sqf_wait_yield(void)
{
    sched_yield();
}

int sqf_wake(sqf_word *word, int n, bool shared)
{
    (void)shared;
    return sqf_table_wake(word, n);
}

int sqf_requeue(sqf_word *from, uint32_t expected, int nwake, sqf_word *to, int nmove, bool shared)
{
    (void)shared;
    return sqf_table_requeue(from, expected, nwake, to, nmove);
}

bool sqf_wait_shared_supported(void)
{
    return false;
}

/* No robust mutex here: the kernel's robust list needs the futex backend. */
_Thread_local struct sqf_thread_self sqf_self_ __attribute__((tls_model("initial-exec")));

struct sqf_thread_self *sqf_self_fill_(long futex_offset)
{
    (void)futex_offset;
    return NULL;
}
