/* futex_linux.c: the wait seam on Linux futexes.
 *
 * Waits use FUTEX_WAIT_BITSET with FUTEX_BITSET_MATCH_ANY, which takes an
 * absolute CLOCK_MONOTONIC deadline, so retries never drift.  Private
 * futexes (FUTEX_PRIVATE_FLAG) skip the kernel's mm lookup; shared ones are
 * keyed by the backing page and work across processes.
 *
 * Wakes and requeues serve the kernel's queue first, then the user-space
 * futex of table.h, where event loops without io_uring park their waits
 * (loop.c), and threads whose multi-word wait finds no futex_waitv; when
 * nothing is parked there, that costs one fence and a load.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "table.h"

static long futex(sqf_word *uaddr, int op, uint32_t val, const struct timespec *ts,
                  sqf_word *uaddr2, uint32_t val3, bool shared)
{
    if (!shared) op |= FUTEX_PRIVATE_FLAG;
    return syscall(SYS_futex, uaddr, op, val, ts, uaddr2, val3);
}

int sqf_wait(sqf_word *word, uint32_t expected, sqf_deadline deadline, bool shared)
{
    struct timespec ts, *tsp = NULL;
    if (deadline != SQF_FOREVER) {
        if (deadline <= sqf_now()) return ETIMEDOUT;
        ts.tv_sec = (time_t)(deadline / SQF_SEC);
        ts.tv_nsec = (long)(deadline % SQF_SEC);
        tsp = &ts;
    }
    if (futex(word, FUTEX_WAIT_BITSET, expected, tsp, NULL, FUTEX_BITSET_MATCH_ANY, shared) == 0)
        return SQF_WAIT_WOKEN;
    switch (errno) {
    case EAGAIN:
        return EAGAIN;
    case ETIMEDOUT:
        return ETIMEDOUT;
    default:
        return EINTR; /* EINTR, or anything else: the caller re-checks */
    }
}

/* Set once futex_waitv returned ENOSYS: the kernel has none (before 5.16,
 * or an emulator such as qemu-user), and multi-word waits on private words
 * sleep in the table instead (sqf_table_sleep), where every sqf_wake and
 * sqf_requeue also looks while anyone is queued.  A process-shared word
 * cannot go there (another process's wake reaches only the kernel's
 * queue): such a wait returns -ENOSYS. */
static sqf_word no_waitv;

static int wait_in_table(const struct sqf_wait_word *w, int n, sqf_deadline deadline)
{
    for (int i = 0; i < n; i++)
        if (w[i].shared) return -ENOSYS;
    return sqf_table_sleep(w, n, deadline);
}

int sqf_wait_any(const struct sqf_wait_word *w, int n, sqf_deadline deadline)
{
    if (n == 1) {
        int r = sqf_wait(w[0].word, w[0].expected, deadline, w[0].shared);
        return r == SQF_WAIT_WOKEN ? 0 : -r;
    }
    if (n < 1 || n > SQF_WAIT_MAX_WORDS) return -EINVAL;
    /* RLX: a cache of what the kernel said; any thread may find it out again */
    if (at_load(&no_waitv, RLX)) return wait_in_table(w, n, deadline);
    struct timespec ts, *tsp = NULL;
    if (deadline != SQF_FOREVER) {
        if (deadline <= sqf_now()) return -ETIMEDOUT;
        ts.tv_sec = (time_t)(deadline / SQF_SEC);
        ts.tv_nsec = (long)(deadline % SQF_SEC);
        tsp = &ts;
    }
    struct futex_waitv v[SQF_WAIT_MAX_WORDS];
    for (int i = 0; i < n; i++) {
        v[i].val = w[i].expected;
        v[i].uaddr = (uint64_t)(uintptr_t)w[i].word;
        v[i].flags = FUTEX_32 | (w[i].shared ? 0 : FUTEX_PRIVATE_FLAG);
        v[i].__reserved = 0;
    }
    /* futex_waitv takes an absolute deadline on the clock it is given. */
    long r = syscall(SYS_futex_waitv, v, (unsigned)n, 0u, tsp, CLOCK_MONOTONIC);
    if (r >= 0) return (int)r;
    switch (errno) {
    case EAGAIN:
        return -EAGAIN;
    case ETIMEDOUT:
        return -ETIMEDOUT;
    case ENOSYS:
        /* RLX: a cache, as above */
        at_store(&no_waitv, 1, RLX);
        return wait_in_table(w, n, deadline);
    default:
        return -EINTR;
    }
}

void sqf_wait_yield(void)
{
    sched_yield();
}

int sqf_wake(sqf_word *word, int n, bool shared)
{
    long r = futex(word, FUTEX_WAKE, (uint32_t)n, NULL, NULL, 0, shared);
    int woken = r > 0 ? (int)r : 0;
    if (woken < n && sqf_table_in_use()) woken += sqf_table_wake(word, n - woken);
    return woken;
}

int sqf_requeue(sqf_word *from, uint32_t expected, int nwake, sqf_word *to, int nmove, bool shared)
{
    /* FUTEX_CMP_REQUEUE passes nmove in the timeout argument's slot. */
    long r = futex(from, FUTEX_CMP_REQUEUE, (uint32_t)nwake,
                   (const struct timespec *)(uintptr_t)(uint32_t)nmove, to, expected, shared);
    if (r < 0) return -errno;
    /* The table's waiters after the kernel's (the word may have moved on
     * since: then they stay, and the change's own wake reaches them). */
    if (sqf_table_in_use()) {
        int t = sqf_table_requeue(from, expected, nwake, to, nmove);
        if (t > 0) r += t;
    }
    return (int)r;
}

bool sqf_wait_shared_supported(void)
{
    return true;
}

/* The cache behind sqf_self.  gettid is a system call, and glibc registers
 * a robust-list head for every thread when it starts (the child of a fork
 * keeps its address), with doubly linked entries on 64-bit machines; another
 * C library may lay its entries out otherwise: refuse then.  A fork's child
 * has a new thread id: the handler, registered before any cache is filled,
 * empties the forking thread's cache there (the only thread of the child). */
_Thread_local struct sqf_thread_self sqf_self_ __attribute__((tls_model("initial-exec")));
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void self_after_fork(void)
{
    sqf_self_.tid = 0;
    sqf_self_.head = NULL;
}

static void register_atfork(void)
{
    pthread_atfork(NULL, NULL, self_after_fork);
}

struct sqf_thread_self *sqf_self_fill_(long futex_offset)
{
#if defined(__GLIBC__) && UINTPTR_MAX == UINT64_MAX
    pthread_once(&atfork_once, register_atfork);
    struct sqf_robust_head *h = NULL;
    size_t len = 0;
    if (syscall(SYS_get_robust_list, 0, &h, &len) != 0 || !h || len != sizeof *h ||
        h->futex_offset != futex_offset)
        return NULL;
    sqf_self_.tid = (uint32_t)syscall(SYS_gettid);
    sqf_self_.head = h;
    return &sqf_self_;
#else
    (void)futex_offset;
    return NULL;
#endif
}
