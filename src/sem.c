/* sem.c: sqf_sem's slow paths: sleeping, timing out, waking.
 * The state words are documented as invariants in include/squarefree/sem.h;
 * the comments here say why each step is safe.
 *
 * The one hazard of a semaphore built on a waiter count is a lost wake-up:
 * a permit published while a thread sleeps, with nobody ever waking that
 * thread.  Two rules exclude it.
 *
 * 1. The Dekker pair.  A blocking acquirer increments `waiters` (seq_cst)
 *    and only then reads `value` (seq_cst) before it sleeps; a releaser adds
 *    to `value` (a seq_cst read-modify-write) and only then reads `waiters`
 *    (seq_cst).  In the single total order of seq_cst operations one of the
 *    two reads comes second and sees the other side's write: either the
 *    acquirer sees the permits (and takes one instead of sleeping), or the
 *    releaser sees the acquirer counted (and wakes).  The futex contract
 *    (src/wait.h) closes the rest: sqf_wait sleeps only if `value` is still
 *    0 when the thread is queued, so a wake sent after the add cannot miss
 *    it.  A release wakes min(n, waiters) threads.  `waiters` is never less
 *    than the number of threads queued on the futex, so this wakes every
 *    sleeper or n of them, whichever is fewer; counting a thread that is
 *    not asleep only makes a wake-up find nobody.
 *
 * 2. Nobody leaves with a wake-up that a permit needs.  FUTEX_WAKE dequeues
 *    exactly the threads it counts, and a dequeued thread's sqf_wait
 *    reports SQF_WAIT_WOKEN even if its deadline passed meanwhile (both
 *    backends).  A release that woke k threads for its n permits counts on
 *    each of those k to look at `value` again.  If one of them instead gave
 *    up because its deadline had passed, the permit meant for it would stay
 *    in `value` while the remaining sleepers slept on: stranded until some
 *    later release.  So every sqf_wait is followed by another attempt to
 *    take a permit, and acquire returns ETIMEDOUT only after it has seen
 *    `value` at 0 after its last wait.  At that moment no permit exists for
 *    it to strand; any permit published later comes with its own release,
 *    which (rule 1) counts us and wakes min(n, waiters) of the queued
 *    threads.  As a safety net for the window between that last look and
 *    leaving the count (and for any backend that might report a wake-up to
 *    a thread it did not count), a thread that consumed a wake-up during
 *    this call and leaves without a permit passes one wake-up on if it
 *    sees permits and other waiters.  That costs at most one futile
 *    FUTEX_WAKE per timed-out call, and only after a wake-up and a time-out
 *    coincided.
 */
#include <squarefree/sem.h>

#include "atomic.h"
#include "wait.h"

#define SEM_SHARED (1u << 31)

static inline sqf_word *sem_value(sqf_sem *s)
{
    return (sqf_word *)&s->value;
}
static inline sqf_word *sem_waiters(sqf_sem *s)
{
    return (sqf_word *)&s->waiters;
}
static inline sqf_word *sem_max(sqf_sem *s)
{
    return (sqf_word *)&s->max;
}

/* The bound encoded in a `max` word: its low 31 bits, 0 meaning the largest. */
static inline uint32_t sem_bound(uint32_t maxword)
{
    uint32_t b = maxword & SQF_SEM_VALUE_MAX;
    return b ? b : SQF_SEM_VALUE_MAX;
}

/* Take one permit if there is one.  Retries while the value is non-zero, so
 * false means `value` was seen at 0 (by the last load or failed CAS).
 * `first` orders the first load: SC where it is half of the Dekker pair. */
static bool take(sqf_word *val, memory_order first)
{
    uint32_t v = at_load(val, first);
    while (v != 0)
        if (at_cas(val, &v, v - 1, ACQ)) return true;
    return false;
}

int sqf_sem_init(sqf_sem *s, unsigned value, unsigned max, unsigned flags)
{
    if (!s || (flags & ~SQF_SHARED) || max > SQF_SEM_VALUE_MAX || value > sem_bound(max))
        return EINVAL;
    if ((flags & SQF_SHARED) && !sqf_wait_shared_supported()) return ENOTSUP;
    at_store(sem_value(s), value, RLX);
    at_store(sem_waiters(s), 0, RLX);
    at_store(sem_max(s), max | ((flags & SQF_SHARED) ? SEM_SHARED : 0), REL);
    return 0;
}

int sqf_sem_destroy(sqf_sem *s)
{
    if (!s) return EINVAL;
    /* ACQ pairs with the leaving waiters' REL decrement: once we see 0,
     * their last accesses to *s happen-before our return. */
    return at_load(sem_waiters(s), ACQ) ? EBUSY : 0;
}

int sqf_sem_getvalue(sqf_sem *s, unsigned *value)
{
    if (!s || !value) return EINVAL;
    *value = at_load(sem_value(s), RLX);
    return 0;
}

int sqf_sem_tryacquire_slow_(sqf_sem *s)
{
    if (!s) return EINVAL;
    return take(sem_value(s), RLX) ? 0 : EBUSY;
}

int sqf_sem_acquire_slow_(sqf_sem *s, sqf_deadline deadline)
{
    if (!s) return EINVAL;
    sqf_word *val = sem_value(s);
    if (take(val, RLX)) return 0;
    /* A deadline already past: that was the one try.  Return before
     * counting ourselves, so that no release pays for a futile wake. */
    if (deadline != SQF_FOREVER && deadline <= sqf_now()) return ETIMEDOUT;

    bool shared = at_load(sem_max(s), RLX) & SEM_SHARED;
    sqf_word *waiters = sem_waiters(s);
    at_add(waiters, 1, SC); /* Dekker, rule 1: count ourselves in ... */
    int result, r = 0;
    bool woken = false;
    for (;;) {
        /* ... then look at the value (SC).  After every sqf_wait, whatever
         * it returned, we get here again: a thread woken at its deadline
         * still takes the permit it was woken for (rule 2). */
        if (take(val, SC)) {
            result = 0;
            break;
        }
        if (r == ETIMEDOUT) {
            /* The deadline has passed and, since our last wait, `value` was
             * seen at 0: there is no permit we could strand. */
            result = ETIMEDOUT;
            break;
        }
        /* EAGAIN (the value changed before we were queued), EINTR or a
         * wake-up: loop and look again.  ETIMEDOUT: one last look. */
        r = sqf_wait(val, 0, deadline, shared);
        if (r == SQF_WAIT_WOKEN) woken = true;
    }
    /* The safety net of rule 2, while we are still counted (so that a
     * concurrent destroy cannot succeed under us). */
    if (result == ETIMEDOUT && woken && at_load(val, SC) != 0 && at_load(waiters, SC) > 1)
        sqf_wake(val, 1, shared);
    /* REL: pairs with destroy's ACQ load of `waiters`. */
    at_sub(waiters, 1, REL);
    return result;
}

void sqf_sem_wake_(sqf_sem *s, unsigned nwake, int shared)
{
    sqf_wake(sem_value(s), (int)nwake, shared != 0);
}

int sqf_sem_release_slow_(sqf_sem *s, unsigned n)
{
    if (!s || n == 0 || n > SQF_SEM_VALUE_MAX) return EINVAL;
    /* Read `max` before publishing the permits: afterwards the semaphore
     * may be taken, destroyed and its memory reused (see "Lifetime"). */
    uint32_t m = at_load(sem_max(s), RLX);
    uint32_t bound = sem_bound(m);
    sqf_word *val = sem_value(s);
    uint32_t v = at_load(val, RLX);
    do {
        /* v > bound cannot happen (invariant); checked so that even a
         * corrupted word cannot make bound - v wrap. */
        if (v > bound || n > bound - v) return EOVERFLOW;
    } while (!at_cas(val, &v, v + n, SC)); /* SC: Dekker, rule 1; also the release */
    uint32_t w = at_load(sem_waiters(s), SC);
    if (w != 0) sqf_wake(val, (int)(n < w ? n : w), (m & SEM_SHARED) != 0);
    return 0;
}

/* The out-of-line forms of the header's inline fast paths (used from C++,
 * with SQF_NO_INLINE, and by the library itself).  The slow paths begin
 * with the same attempt the inline paths make, so these simply call them. */
int sqf_sem_acquire(sqf_sem *s)
{
    return sqf_sem_acquire_slow_(s, SQF_FOREVER);
}

int sqf_sem_tryacquire(sqf_sem *s)
{
    return sqf_sem_tryacquire_slow_(s);
}

int sqf_sem_timedacquire(sqf_sem *s, sqf_deadline deadline)
{
    return sqf_sem_acquire_slow_(s, deadline);
}

int sqf_sem_release(sqf_sem *s, unsigned n)
{
    return sqf_sem_release_slow_(s, n);
}
