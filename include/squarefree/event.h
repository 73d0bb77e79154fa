/* squarefree/event.h: an event that threads wait for, set once or reused.
 *
 * What it is for: "wait until X has happened" for any number of threads
 * (start signals, shutdown flags, a result being ready), where a condition
 * variable would need a mutex, a predicate and a loop.
 * - eight bytes, zero-initialised (unset), no destructor needed, no heap;
 * - checking an event that is set costs one acquire load (inline), and so
 *   does setting one that is already set;
 * - set wakes every sleeper with ONE kernel call; sleepers wake straight
 *   into running code (there is no mutex to re-acquire), so n waiters cost
 *   O(n) in total and no woken thread waits for another (the cure for
 *   the square problem).
 *
 *     static sqf_event ready = SQF_EVENT_INIT;
 *
 *     // many threads                       // one thread
 *     sqf_event_wait(&ready);               publish(result);
 *     use(result);                          sqf_event_set(&ready);
 *
 * One-shot use never calls sqf_event_clear.  Reusable use calls it to arm the
 * event again.  Waits are generation-counted: a wait that began before a set
 * returns 0 even if sqf_event_clear follows at once, before the waiter has
 * run ("began" = its call started before the set's; a wait that starts after
 * the clear waits for the next set).
 *
 * Errors (0 or one of these; a failed call changes nothing):
 * - EINVAL: NULL; flags other than SQF_PRIVATE/SQF_SHARED.
 * - ENOTSUP: SQF_SHARED with the portable wait backend.
 * - ETIMEDOUT: timedwait's deadline passed before a set.  A deadline already
 *   past means "check once": 0 if set, else ETIMEDOUT at once.
 * - EBUSY: destroy while threads wait (it counts them exactly).
 *
 * Memory ordering: set and clear are release operations; a wait that returns
 * 0, and an is_set that returns 1, is an acquire operation synchronising
 * with the set it saw.  So everything written before sqf_event_set is visible
 * after the wait returns.  ETIMEDOUT orders nothing.
 *
 * Fairness: set releases every waiter at once; there is no order among them.
 *
 * Wake-ups: set wakes all sleepers with one FUTEX_WAKE (portable backend: one
 * call that signals each in turn), and makes no system call when nobody
 * sleeps.  Setting is never slowed by the number of waiters, and after the
 * wake-up the setter never touches the event again: once sqf_event_destroy
 * returns 0 (every waiter has left), the memory may be freed, even while
 * the setter is still returning from its call.
 *
 * Processes: with SQF_SHARED it works between processes in shared memory;
 * set wakes every waiting process with one call.  A process killed while it
 * waits stays counted in `waiters` (destroy returns EBUSY until the event is
 * initialised again, once no live process uses it); set still wakes every
 * live waiter.
 */
#ifndef SQUAREFREE_EVENT_H
#define SQUAREFREE_EVENT_H

#include <squarefree/bits/common.h>
#include <squarefree/bits/fastpath.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

typedef struct sqf_event {
    SQF_WORD word;
    SQF_WORD waiters;
} sqf_event;

/** A statically initialised, unset, process-private event (all zero). */
#define SQF_EVENT_INIT                                                                             \
    {                                                                                              \
        0, 0                                                                                       \
    }

/** Initialise *e unset.  flags: SQF_PRIVATE (0) or SQF_SHARED.
 *  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_event_init(sqf_event *e, unsigned flags);

/** Check that nobody waits on *e.  Errors: EINVAL; EBUSY while threads wait. */
SQF_API int sqf_event_destroy(sqf_event *e);

/** Set *e and wake every waiter.  Setting a set event changes nothing.
 *  Errors: EINVAL. */
SQF_API int sqf_event_set(sqf_event *e);

/** Make *e unset again (reusable use).  Clearing an unset event changes
 *  nothing.  Waits that began before the last set still return 0.
 *  Errors: EINVAL. */
SQF_API int sqf_event_clear(sqf_event *e);

struct sqf_cancel;

/** As sqf_event_timedwait, and gives up with ECANCELED when `cancel` (may be
 *  NULL) or an ancestor is cancelled or past its deadline (cancel.h); a set
 *  event returns 0 at once whatever the token says.
 *  Errors: EINVAL, ETIMEDOUT, ECANCELED, ENOTSUP (see cancel.h). */
SQF_API int sqf_event_wait_until(sqf_event *e, sqf_deadline deadline,
                                 const struct sqf_cancel *cancel);

/* Out-of-line half of the inline functions below; not for direct use. */
SQF_API int sqf_event_wait_slow_(sqf_event *e, sqf_deadline deadline);

#if SQF_INLINE_FAST_PATH

/** 1 if *e is set (an acquire load), 0 if not or if e is NULL. */
static inline int sqf_event_is_set(sqf_event *e)
{
    /* acquire: pairs with the AR CAS in event.c's sqf_event_set */
    return e != NULL &&
           (atomic_load_explicit(&e->word, memory_order_acquire) & SQF_EVENT_SET_) != 0;
}

/** Return once *e is set (at once if it is).  Errors: EINVAL. */
static inline int sqf_event_wait(sqf_event *e)
{
    if (SQF_LIKELY(sqf_event_is_set(e))) return 0;
    return sqf_event_wait_slow_(e, SQF_FOREVER);
}

/** As sqf_event_wait, giving up at the deadline.  Errors: EINVAL, ETIMEDOUT. */
static inline int sqf_event_timedwait(sqf_event *e, sqf_deadline deadline)
{
    if (SQF_LIKELY(sqf_event_is_set(e))) return 0;
    return sqf_event_wait_slow_(e, deadline);
}

#else

SQF_API int sqf_event_is_set(sqf_event *e);
SQF_API int sqf_event_wait(sqf_event *e);
SQF_API int sqf_event_timedwait(sqf_event *e, sqf_deadline deadline);

#endif

SQF_END_DECLS

#endif
