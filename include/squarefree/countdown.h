/* squarefree/countdown.h: an up/down counter whose waiters wake when it
 * reaches zero (aiologic's CountdownEvent, nsync's counter).
 *
 * What it is for: "wait until everything in flight has finished", when
 * nobody knows in advance how much will be in flight.  Each piece of work
 * counts itself up before it starts and down when it is done; waiters sleep
 * until the count is zero.  A latch needs the total up front; this does not.
 * - sixteen bytes, zero-initialised (count 0, which counts as "done": a wait
 *   returns at once), no destructor needed, no heap, and O(1) memory
 *   whatever the count;
 * - a wait that finds the count at zero costs one acquire load (inline);
 * - up and down are a load and one compare-and-swap each (retried only when
 *   another thread changed the word meanwhile), and make no system call,
 *   except the down that brings the count to zero while somebody sleeps:
 *   that down wakes every sleeper with ONE kernel call.  Sleepers
 *   wake straight into running code (no mutex to re-acquire), so n waiters
 *   cost O(n) in total and no woken thread waits for another.
 *
 * The mutex case of the square problem (aiologic's "Kill the square", point 5): an unknown
 * number of threads pass through a lock, and each one that is through would
 * keep running (and keep the scheduler busy) while the rest still queue for
 * the lock.  Count up before the operation, down after it, and wait: the
 * threads of a batch that are through sleep until the whole batch is, and
 * are then released together.
 *
 *     static sqf_mutex mu = SQF_MUTEX_INIT;
 *     static sqf_countdown batch = SQF_COUNTDOWN_INIT;
 *
 *     void worker(void) {                  // any number of threads
 *         sqf_countdown_up(&batch, 1);     // before the operation
 *         sqf_mutex_lock(&mu);
 *         critical_section();
 *         sqf_mutex_unlock(&mu);
 *         sqf_countdown_down(&batch);      // after it
 *         sqf_countdown_wait(&batch);      // until the batch is through
 *         carry_on();
 *     }
 *
 * The same shape drains in-flight requests before a shutdown: up when a
 * request is accepted, down when it is answered, and the shutting-down
 * thread waits.  Every up must be matched by downs of the same total, and
 * the count must not reach zero before the work it guards is counted: call
 * up before handing the work to another thread, not from inside it.
 *
 * Waits are generation-counted: a wait that began while the count was
 * non-zero returns 0 once the count has reached zero after it began, even
 * if an up follows at once, before the waiter has run ("began" = its first
 * look at the count; a wait that begins after that up waits for the next
 * time the count reaches zero).
 *
 * Errors (every function returns 0 or one of these, and a failed call
 * changes nothing: no count and no wake-up is lost):
 * - sqf_countdown_init: EINVAL for NULL, count > SQF_COUNTDOWN_MAX, or flags
 *   other than SQF_PRIVATE/SQF_SHARED; ENOTSUP for SQF_SHARED with a wait
 *   backend that cannot share (portable).
 * - sqf_countdown_destroy: EINVAL; EBUSY while threads wait (it counts the
 *   threads inside a blocking wait).
 * - sqf_countdown_up: EINVAL for NULL or n == 0; EOVERFLOW when count + n
 *   would exceed SQF_COUNTDOWN_MAX.
 * - sqf_countdown_down: EINVAL for NULL or a count already 0.
 * - sqf_countdown_down_n: EINVAL for NULL, n == 0 or n > count.
 * - sqf_countdown_wait: EINVAL.
 * - sqf_countdown_timedwait: EINVAL; ETIMEDOUT when the deadline passed
 *   before the count reached zero.  A deadline already past means "check
 *   once": 0 if the count is zero, else ETIMEDOUT at once.
 * - sqf_countdown_value: EINVAL for either pointer NULL.
 *
 * Memory ordering: down (either form) is a release operation, and a wait
 * that returns 0 is an acquire operation that synchronises with every down
 * that came before the count last reached zero (as seen by that wait): all
 * that the threads wrote before their downs is visible after the wait.  (All
 * changes to the count are read-modify-writes of one word, so each down's
 * release sequence runs through every later up and down.)  up is relaxed:
 * it publishes nothing by itself; a thread's writes before its up are
 * published by its later down.  sqf_countdown_value is an acquire load: a
 * snapshot of 0 orders as a returning wait does; any other snapshot may be
 * stale by the time it returns.  Failed calls and ETIMEDOUT order nothing.
 *
 * Fairness: reaching zero releases every waiter at once; there is no order
 * among them.  Nothing stops more ups from arriving before the count reaches
 * zero, so a waiter waits as long as the counted work keeps coming (that is
 * the contract, not starvation by the primitive).
 *
 * Wake-ups: the down that brings the count to zero wakes all sleepers with
 * one FUTEX_WAKE (portable backend: one call that signals each in turn),
 * and makes no system call when nobody sleeps.  Other ups and downs never
 * make a system call, never wake anyone, and do not disturb sleepers (they
 * sleep on the other half of the word).  Reaching zero is never slowed by
 * the number of waiters.
 *
 * Lifetime: a down touches the countdown only up to the atomic step that
 * changes the count; after that, the down that reaches zero only hands the
 * sleepers' address to the wake call, which reads nothing there.  So a woken
 * waiter (or one that saw zero at once) may destroy and free the countdown
 * as soon as its wait returns, provided no other call on it is still
 * running, except downs that have already counted down (see sem.h's
 * Lifetime for why a late wake-up on reused memory is harmless).
 *
 * Processes: with SQF_SHARED it works between processes in shared memory.
 * A process killed while it waits stays counted among the waiters (destroy
 * returns EBUSY until the countdown is initialised again, once no live
 * process uses it); reaching zero still wakes every live waiter.  A process
 * that dies between up and down leaves its count behind: the countdown
 * never reaches zero without a matching down from someone else.
 */
#ifndef SQUAREFREE_COUNTDOWN_H
#define SQUAREFREE_COUNTDOWN_H

#include <squarefree/bits/common.h>
#include <squarefree/time.h>

SQF_BEGIN_DECLS

/* The state word is 8-byte aligned in C and C++ alike (a plain uint64_t is
 * only 4-byte aligned in some 32-bit ABIs), so that both see one layout and
 * the 64-bit atomics are naturally aligned. */
#if defined(__cplusplus)
#define SQF_COUNTDOWN_ALIGN_ alignas(8)
#else
#define SQF_COUNTDOWN_ALIGN_ _Alignas(8)
#endif

/* Both words are internal; touch them only through this API. */
typedef struct sqf_countdown {
    SQF_COUNTDOWN_ALIGN_ SQF_WORD64 state;
    SQF_WORD waiters;
} sqf_countdown;

/** A statically initialised countdown: count 0, process-private (all zero). */
#define SQF_COUNTDOWN_INIT                                                                         \
    {                                                                                              \
        0, 0                                                                                       \
    }

/** The largest count a countdown may hold (the count is the state word's
 *  low 32 bits). */
#define SQF_COUNTDOWN_MAX 0xffffffffu

/** Initialise *c with the given count.  flags: SQF_PRIVATE (0) or
 *  SQF_SHARED.  Needed only for a non-zero count, SQF_SHARED or to reuse
 *  memory; zeroed memory is a valid countdown.  Must not race with any other
 *  call on *c.  Errors: EINVAL, ENOTSUP. */
SQF_API int sqf_countdown_init(sqf_countdown *c, unsigned count, unsigned flags);

/** Check that no thread waits on *c, so that its memory may be reused.
 *  The count need not be zero.  Errors: EINVAL; EBUSY while threads wait
 *  (nothing changes). */
SQF_API int sqf_countdown_destroy(sqf_countdown *c);

/** Add n to the count (relaxed; never wakes anyone).
 *  Errors: EINVAL for n == 0; EOVERFLOW if count + n > SQF_COUNTDOWN_MAX. */
SQF_API int sqf_countdown_up(sqf_countdown *c, unsigned n);

/** Take 1 from the count (a release); reaching zero wakes every waiter with
 *  one call.  Errors: EINVAL if the count is already 0. */
SQF_API int sqf_countdown_down(sqf_countdown *c);

/** Take n from the count (a release); reaching zero wakes every waiter with
 *  one call.  Errors: EINVAL for n == 0 or n > count. */
SQF_API int sqf_countdown_down_n(sqf_countdown *c, unsigned n);

/** Store a snapshot of the count in *value (an acquire load).
 *  Errors: EINVAL. */
SQF_API int sqf_countdown_value(sqf_countdown *c, unsigned *value);

/* Out-of-line half of the inline functions below; not for direct use. */
struct sqf_cancel;

/** As sqf_countdown_timedwait, and gives up with ECANCELED when `cancel`
 *  (may be NULL) or an ancestor is cancelled or past its deadline (see
 *  cancel.h); a count at zero returns 0 at once whatever the token says.
 *  Errors: EINVAL, ETIMEDOUT, ECANCELED, ENOTSUP. */
SQF_API int sqf_countdown_wait_until(sqf_countdown *c, sqf_deadline deadline,
                                     const struct sqf_cancel *cancel);

SQF_API int sqf_countdown_wait_slow_(sqf_countdown *c, sqf_deadline deadline);

#if SQF_INLINE_FAST_PATH

/* One acquire load: is the count (the low 32 bits) zero? */
static inline int sqf_countdown_zero_inline_(sqf_countdown *c)
{
    /* acquire: pairs with the REL CAS of countdown.c's sqf_countdown_down_n */
    return c != NULL && (uint32_t)atomic_load_explicit(&c->state, memory_order_acquire) == 0;
}

/** Return once the count is zero (at once if it is).  Errors: EINVAL. */
static inline int sqf_countdown_wait(sqf_countdown *c)
{
    if (SQF_LIKELY(sqf_countdown_zero_inline_(c))) return 0;
    return sqf_countdown_wait_slow_(c, SQF_FOREVER);
}

/** As sqf_countdown_wait, giving up at the deadline.
 *  Errors: EINVAL, ETIMEDOUT. */
static inline int sqf_countdown_timedwait(sqf_countdown *c, sqf_deadline deadline)
{
    if (SQF_LIKELY(sqf_countdown_zero_inline_(c))) return 0;
    return sqf_countdown_wait_slow_(c, deadline);
}

#else

SQF_API int sqf_countdown_wait(sqf_countdown *c);
SQF_API int sqf_countdown_timedwait(sqf_countdown *c, sqf_deadline deadline);

#endif

SQF_END_DECLS

#endif
